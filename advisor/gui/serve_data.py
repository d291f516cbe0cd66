"""Qt-free work of the Serve page (run in a worker thread): size the serving job, work out what to change on
the owned GPUs, the throughput-against-latency curve (the knee) of the options the chart draws, and the user's
imported serving runs of the same job (model, and a charted option's accelerator, devices and runtime) with their
figures at their own load, measured and planned, as ``advisor runs`` lists them."""

from __future__ import annotations

import time
from dataclasses import dataclass

from advisor.catalog.defaults import defaults
from advisor.estimate.serving_queue import ServePoint
from advisor.job.schema import request_window
from advisor.job.serve import ServeJob
from advisor.planner.serve import ServeOption, ServeResult, charted, knee_curves, serve_plan
from advisor.planner.serve_advice import changes_of

# The Serve form's fields, in order (their widgets, ranges and help come from advisor.job.serve.SERVE_FIELDS).
FORM_FIELDS = ("model", "quant", "runtime", "kv_cache_bits", "users", "requests_per_s", "prompt_tokens",
               "output_tokens", "lengths", "ttft_p95_s", "tokens_per_s_per_user")
# The lengths are the plan's request (job.schema.request_window), shown as numbers; the load and target the
# default serving job's (resources/defaults.toml [serve], as advisor serve takes it when given no load).
_PROMPT, _OUTPUT, _ = request_window(None, ServeJob.model_fields["output_tokens"].default, None)
DEFAULT_VALUES = {"model": defaults().model, "users": defaults().serve.users, "prompt_tokens": _PROMPT,
                  "output_tokens": _OUTPUT, "ttft_p95_s": defaults().serve.ttft_p95_s}


@dataclass(frozen=True)
class ServeBundle:
    """A sized serving job with the curves the chart draws.

    Attributes:
        result: every option.
        changes: owned option id -> what to change (``planner.serve_advice.ServeChange`` list).
        curves: ``(option, points)`` for the charted options, one replica each, load rising.
        elapsed_s: wall time.
        runs: ``(option, row)``: an imported serving run of this job on a charted option (``matching_runs``).
    """

    result: ServeResult
    changes: dict
    curves: tuple[tuple[ServeOption, tuple[ServePoint, ...]], ...]
    elapsed_s: float
    runs: tuple[tuple[ServeOption, dict], ...] = ()


def serve_bundle(values: dict, catalog, owned=(), calibration=None) -> ServeBundle:
    """Validate and size a serving job (``values`` as the form gives them, with the app's settings).

    Raises:
        JobInputError, PlanInputError: bad input (one line each).
    """
    t0 = time.perf_counter()
    job = ServeJob.from_mapping(values)
    result = serve_plan(job, catalog, owned=tuple(owned), calibration=calibration)
    shown = charted(result)  # the chart's options: its curves and the runs beside them
    return ServeBundle(result, changes_of(result), knee_curves(result, shown), time.perf_counter() - t0,
                       matching_runs(result, catalog, options=shown))


def matching_runs(result: ServeResult, catalog, host=None, options: list[ServeOption] | None = None
                  ) -> tuple[tuple[ServeOption, dict], ...]:
    """The imported serving runs of the sized job: its model (``runs.load.model_spec``), on a charted option's
    accelerator and devices per replica, with its runtime (``runs.load.run_runtime``), each with its charted option
    and its ``advisor runs`` row (``runs.listing``: its figures at its own load, measured and planned); those whose
    load is not planned are left out. A store that cannot be read gives none (the Runs page says why).
    ``options``: ``charted(result)`` where found already."""
    from advisor.estimate.learned import SERVING_RUN_KINDS
    from advisor.runs.listing import run_entries_of
    from advisor.runs.load import model_spec, run_runtime
    from advisor.store.runs import RunStoreError

    options = {(o.accelerator, o.devices_per_replica, o.runtime): o
               for o in (charted(result) if options is None else options)}
    if not options or not result.request.model:
        return ()

    def key(rec) -> tuple:
        return rec.accelerator_id, rec.devices, run_runtime(rec)

    def ours(rec) -> bool:
        return (rec.kind in SERVING_RUN_KINDS and rec.accelerator_id in {a for a, _, _ in options}
                and model_spec(rec) == result.request.model and key(rec) in options)

    try:
        found = run_entries_of(catalog, host, ours)
    except RunStoreError:
        return ()
    return tuple((options[key(rec)], row) for rec, row in found if (row.get("load") or {}).get("figures"))
