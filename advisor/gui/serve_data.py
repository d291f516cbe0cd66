"""Qt-free work of the Serve page (run in a worker thread): size the serving job, work out what to change on
the owned GPUs, and the throughput-against-latency curve (the knee) of the options the chart draws."""

from __future__ import annotations

import time
from dataclasses import dataclass

from advisor.catalog.defaults import defaults
from advisor.estimate.serving_queue import ServePoint
from advisor.job.serve import ServeJob
from advisor.planner.serve import ServeOption, ServeResult, knee_curves, serve_plan
from advisor.planner.serve_advice import changes_of

# The Serve form's fields, in order (their widgets, ranges and help come from advisor.job.serve.SERVE_FIELDS).
FORM_FIELDS = ("model", "quant", "runtime", "kv_cache_bits", "users", "requests_per_s", "prompt_tokens",
               "output_tokens", "lengths", "ttft_p95_s", "tokens_per_s_per_user")
DEFAULT_VALUES = {"model": defaults().model, "users": 8, "prompt_tokens": 1000, "output_tokens": 300,
                  "ttft_p95_s": 2.0}


@dataclass(frozen=True)
class ServeBundle:
    """A sized serving job with the curves the chart draws.

    Attributes:
        result: every option.
        changes: owned option id -> what to change (``planner.serve_advice.ServeChange`` list).
        curves: ``(option, points)`` for the charted options, one replica each, load rising.
        elapsed_s: wall time.
    """

    result: ServeResult
    changes: dict
    curves: tuple[tuple[ServeOption, tuple[ServePoint, ...]], ...]
    elapsed_s: float


def serve_bundle(values: dict, catalog, owned=(), calibration=None) -> ServeBundle:
    """Validate and size a serving job (``values`` as the form gives them, with the app's settings).

    Raises:
        JobInputError, PlanInputError: bad input (one line each).
    """
    t0 = time.perf_counter()
    job = ServeJob.from_mapping(values)
    result = serve_plan(job, catalog, owned=tuple(owned), calibration=calibration)
    return ServeBundle(result, changes_of(result), knee_curves(result), time.perf_counter() - t0)
