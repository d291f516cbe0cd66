"""What the advisor predicts for a recorded run: the run's own job planned on its accelerator (plan against actual).

The record itself is left out of what the planner learns from, so the prediction is what the advisor would
have said without it. The compared figure is the one the run measured (``compared_figure``): training tokens/s,
the decode tokens/s of a generation test, the prompt tokens/s of a prompt-processing test, the generated
tokens/s of a serving run at its load (its throughput, first token and time per output token at the run's
shape besides: ``runs.load``; for a run of users at once its generated tokens/s is its load's, one computation).
``error_factor`` is predicted / measured (above 1: the plan was too
optimistic); ``held`` whether the measured figure lies inside the plan's 80 % interval. ``advisor runs`` and
the app's Runs page both take their rows from ``advisor.runs.listing``, which calls ``predict`` here.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from advisor.estimate.run_record import RunRecord
from advisor.planner.record_job import request_values
from advisor.runs.vllm_startup import KIND as ENGINE_READING  # an engine's reading of its cache, not a speed

__all__ = ["Prediction", "compare", "compared_figure", "figure_label", "predict", "request_values", "teaches"]


@dataclass(frozen=True)
class Prediction:
    """The planner's figure for a run (``figure``: which one, a ``Measured`` field name), its 80 % interval and
    where the efficiency came from. ``tokens_per_s`` holds the predicted figure (tokens/s whichever it is).
    ``load``: a serving benchmark's throughput, first token and time per output token at the run's own load
    (its users, prompts or rate), as a published served row of that shape is planned."""

    tokens_per_s: float
    low: float
    high: float
    source: str
    origin: str
    figure: str = "tokens_per_s"
    load: dict | None = None  # a serving benchmark's run at its load, planned (``runs.load.served_load``)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def compared_figure(rec: RunRecord) -> str:
    """The ``Measured`` field a run is compared on: its tokens/s, else its prompt tokens/s (a prompt test)."""
    m = rec.measured
    if rec.kind == ENGINE_READING:  # an engine's start-up reading: its concurrency, else its cache tokens
        return "max_concurrency" if m.max_concurrency is not None else "kv_cache_tokens"
    if m.tokens_per_s is None and m.prefill_tokens_per_s is not None:
        return "prefill_tokens_per_s"
    return "tokens_per_s"


def figure_label(rec: RunRecord) -> str:
    """The compared figure in words: ``training``, ``prompt`` (a prompt test), ``decode`` (one request),
    ``served at N`` (a serving benchmark's N users, or N requests at once) or ``served at R/s`` (an offered rate)."""
    if rec.training:
        return "training"
    if rec.kind == ENGINE_READING:
        return "concurrency" if compared_figure(rec) == "max_concurrency" else "KV tokens"
    if compared_figure(rec) == "prefill_tokens_per_s":
        return "prompt"
    from advisor.runs.load import at_load

    if at_load(rec) and rec.request_rate is not None:
        return f"served at {rec.request_rate:g}/s"
    return f"served at {rec.batch}" if at_load(rec) or (rec.batch or 1) > 1 else "decode"


def teaches(rec: RunRecord, catalog) -> bool | None:
    """Whether the planner learns from ``rec``: some efficiency gives its measured figure back on the plan of its
    own job (``estimate.learned.taught_value``); None where that cannot be told (the CPU, planned on this
    machine's host figures; an accelerator not in the catalog)."""
    from advisor.estimate.learned import taught_value
    from advisor.runs.load import record_forward

    acc = catalog.accelerators.get(rec.accelerator_id or "")
    if acc is None or rec.accelerator_id == "cpu" or rec.kind == ENGINE_READING:  # a reading teaches no speed
        return None
    if rec.simulated:
        return False
    if rec.training:
        what, figure = "training", "tokens_per_s"
    elif compared_figure(rec) == "prefill_tokens_per_s":
        what, figure = "prefill", "prefill_tokens_per_s"
    else:
        what, figure = "decode", "decode_tokens_per_s"
    return taught_value(rec, figure, lambda r: record_forward(r, acc, what, catalog), key=acc.id) is not None


_INDEX: dict[int, tuple[tuple, dict]] = {}  # id(runs) -> (runs, {accelerator id: records}), the last few


def _by_accelerator(runs: tuple) -> dict[str, tuple[RunRecord, ...]]:
    """The records by accelerator id, worked out once per tuple of records (a listing predicts every record
    against the same tuple)."""
    hit = _INDEX.get(id(runs))
    if hit is not None and hit[0] is runs:
        return hit[1]
    index: dict[str, list] = {}
    for r in runs:
        index.setdefault(r.accelerator_id, []).append(r)
    if len(_INDEX) > 8:
        _INDEX.clear()
    _INDEX[id(runs)] = (runs, {k: tuple(v) for k, v in index.items()})
    return _INDEX[id(runs)][1]


def predict(rec: RunRecord, *, catalog, calibration, host=None, leave_out: bool = True) -> Prediction | None:
    """The planner's prediction for ``rec`` (None when it cannot be planned: unknown accelerator, no model).

    Args:
        calibration: the planner's calibration with the user's runs (``store.calibration.load_planner_calibration``);
            ``rec`` is taken out of it first.
        host: this machine's host figures (``--accelerator cpu`` plans on them).
        leave_out: take ``rec`` out of what the planner learns (plan against actual); False plans with it (the
            round trip: a run imported, its own job planned again gives its measured figure).
    """
    from advisor.planner import PlanInputError, PlanRequest, plan

    if rec.kind == ENGINE_READING:  # the cache vLLM reported, sized by the advisor for the same memory
        from advisor.runs.vllm_startup import engine_reading

        reading = engine_reading(rec)
        figure = compared_figure(rec)
        if reading is None or reading[figure][1] is None:
            return None
        ours = float(reading[figure][1])
        return Prediction(ours, ours, ours, "engine", "vLLM's rule on the log's KV cache memory and max_model_len "
                          "(estimate.memory.max_concurrency)", figure)
    values = request_values(rec)
    if values is None:
        return None
    if calibration is not None and getattr(calibration, "runs", ()):
        # the plan is of the record's accelerator only: the records of other accelerators never match it
        same = _by_accelerator(calibration.runs).get(rec.accelerator_id, ())
        # one tuple for every record of the accelerator (what they teach is summed once), the record left out by
        # its hash (plan against actual)
        calibration = dataclasses.replace(calibration, runs=same,
                                          left_out=rec.content_sha256 if leave_out else None)
    result = None
    for _ in range(2):
        try:
            result = plan(PlanRequest.from_mapping(values), catalog, calibration, host=host, advise=False)
            break
        except (PlanInputError, ValueError, TypeError):
            if "framework" not in values:  # a framework the planner has no profile of plans with its default
                return None
            values = {k: v for k, v in values.items() if k != "framework"}
    if result is None:
        return None
    options = [o for o in result.options if o.accelerator == rec.accelerator_id and o.devices == rec.devices
               and o.feasible]
    if not options:
        return None
    o = min(options, key=lambda o: (o.kind not in ("owned", "home"), o.id))
    figure = compared_figure(rec)
    if figure == "prefill_tokens_per_s":
        s = o.serving
        if s is None or not s.prefill_tokens_per_s:
            return None
        low, high = s.prefill_tokens_per_s_interval or (s.prefill_tokens_per_s, s.prefill_tokens_per_s)
        return Prediction(s.prefill_tokens_per_s, low, high, o.mfu_source, o.mfu_origin, figure)
    low, high = o.tokens_per_s_interval or (o.tokens_per_s, o.tokens_per_s)
    from advisor.runs.load import at_load, plan_format, served_load

    # the load is planned as the same job, in the format the learner plans it in (runs.load.record_forward)
    fmt = plan_format(rec, catalog.accelerators.get(rec.accelerator_id))  # the plan's own (tests/runs/test_round_trip)
    load = served_load(rec, catalog, calibration, fmt)
    tps = o.tokens_per_s
    if load is not None and at_load(rec):  # a run of users at once: its load's plan is its figure (one computation)
        f = load["figures"]["tokens_per_s"]
        tps, low, high = f["predicted"], f["low"], f["high"]
    return Prediction(tps, low, high, o.mfu_source, o.mfu_origin, figure, load)


def compare(rec: RunRecord, pred: dict | None) -> tuple[float | None, bool | None]:
    """``(error_factor, held)`` of a prediction (a ``Prediction.to_dict``) against the record's measured figure."""
    if not pred:
        return None, None
    measured = getattr(rec.measured, pred.get("figure") or "tokens_per_s", None)
    if not measured:
        return None, None
    if rec.kind == ENGINE_READING:  # a computed figure, no range
        return pred["tokens_per_s"] / measured, None
    return pred["tokens_per_s"] / measured, pred["low"] <= measured <= pred["high"]
