"""What the advisor predicts for a recorded run: the run's own job planned on its accelerator (plan against actual).

The record itself is left out of what the planner learns from, so the prediction is what the advisor would
have said without it. Compared figure: tokens/s (training tokens/s, generated tokens/s of a serving run).
``error_factor`` is predicted / measured (above 1: the plan was too optimistic); ``held`` whether the measured
figure lies inside the plan's 80 % interval.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from advisor.estimate.run_record import RunRecord


@dataclass(frozen=True)
class Prediction:
    """The planner's tokens/s for a run, its 80 % interval and where the efficiency came from."""

    tokens_per_s: float
    low: float
    high: float
    source: str
    origin: str

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def request_values(rec: RunRecord) -> dict | None:
    """The plan inputs of a record's job, or None when the record lacks what a plan needs."""
    if not rec.accelerator_id or not rec.params:
        return None
    # owned, so that a part without a price (a card no longer sold) is still planned
    own = [] if rec.accelerator_id == "cpu" else [f"{rec.devices}x{rec.accelerator_id}"]
    v: dict = {"params": rec.params, "workload": rec.workload, "accelerator": [rec.accelerator_id],
               "gpus": rec.devices, "own": own, "owned_options": True}
    for name in ("layers", "hidden", "heads", "vocab"):
        if getattr(rec, name):
            v[name] = getattr(rec, name)
    if rec.precision:
        v["precision"] = rec.precision if rec.training else ("bf16" if rec.precision in ("fp16", "fp32") else
                                                             rec.precision)
    if rec.training:
        if not rec.seq_len or not rec.tokens:
            return None
        v.update(seq_len=rec.seq_len, tokens=rec.tokens)
        if rec.batch:
            v["micro_batch"] = rec.batch
        if rec.recompute == "full":
            v["checkpointing"] = "full"
    else:
        if rec.quant:
            v["quant"] = rec.quant
        v["batch"] = rec.batch or 1
        v["output_tokens"] = rec.output_tokens or 128
        v["context"] = max(1, (rec.prompt_tokens or 0) + (rec.output_tokens or 128))
        if rec.software in ("llama.cpp", "vllm", "exllama", "mlc"):
            v["runtime"] = rec.software
    return v


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


def predict(rec: RunRecord, *, catalog, calibration, host=None) -> Prediction | None:
    """The planner's prediction for ``rec`` (None when it cannot be planned: unknown accelerator, no model).

    Args:
        calibration: the planner's calibration with the user's runs (``store.calibration.load_planner_calibration``);
            ``rec`` is taken out of it first.
        host: this machine's host figures (``--accelerator cpu`` plans on them).
    """
    from advisor.planner import PlanInputError, PlanRequest, plan

    values = request_values(rec)
    if values is None:
        return None
    if calibration is not None and getattr(calibration, "runs", ()):
        # the plan is of the record's accelerator only: the records of other accelerators never match it
        same = _by_accelerator(calibration.runs).get(rec.accelerator_id, ())
        others = tuple(r for r in same if r.content_sha256 != rec.content_sha256)
        calibration = dataclasses.replace(calibration, runs=others)
    try:
        req = PlanRequest.from_mapping(values)
        result = plan(req, catalog, calibration, host=host, advise=False)
    except (PlanInputError, ValueError, TypeError):
        return None
    options = [o for o in result.options if o.accelerator == rec.accelerator_id and o.devices == rec.devices
               and o.feasible]
    if not options:
        return None
    o = min(options, key=lambda o: (o.kind not in ("owned", "home"), o.id))
    low, high = o.tokens_per_s_interval or (o.tokens_per_s, o.tokens_per_s)
    return Prediction(o.tokens_per_s, low, high, o.mfu_source, o.mfu_origin)


def compare(rec: RunRecord, pred: dict | None) -> tuple[float | None, bool | None]:
    """``(error_factor, held)`` of a prediction (a ``Prediction.to_dict``) against the record's tokens/s."""
    measured = rec.measured.tokens_per_s
    if not pred or not measured:
        return None, None
    return pred["tokens_per_s"] / measured, pred["low"] <= measured <= pred["high"]
