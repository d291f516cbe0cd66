"""The job a run record measured, as plan inputs: what ``advisor runs`` plans to compare with the measurement,
and what the learner plans forward to solve for the efficiency the run reached (``planner.timing``).

One place says what job a record was, so the prediction of a run and the efficiency learned from it are the
same job: the record's model (its parameters and architecture where the file gave them, else the planner's
generic shape of that size), its accelerator and device count, precision, lengths, batch and software.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from advisor.estimate.model import ModelArch, param_count
from advisor.estimate.run_record import RunRecord
from advisor.job.schema import RUNTIMES
from advisor.planner.request import Lengths, PlanInputError, PlanRequest, lengths, resolve_job_model


def request_values(rec: RunRecord) -> dict | None:
    """The plan inputs of a record's job, or None when the record lacks what a plan needs.

    A serving record's lengths are its test's: a llama-bench generation test decodes from an empty cache (one
    token of prompt), a prompt test generates one token after its prompt.
    """
    if not rec.accelerator_id or not rec.params:
        return None
    # owned, so that a part without a price (a card no longer sold) is still planned
    own = [] if rec.accelerator_id == "cpu" else [f"{rec.devices}x{rec.accelerator_id}"]
    v: dict = {"params": rec.params, "workload": rec.workload, "accelerator": [rec.accelerator_id],
               "gpus": rec.devices, "own": own, "owned_options": True}
    for name in ("layers", "hidden", "heads", "vocab"):
        if getattr(rec, name):
            v[name] = getattr(rec, name)
    shape = None if any(getattr(rec, n) for n in ("layers", "hidden", "heads", "vocab")) else preset_of(rec.params)
    if shape is not None:
        v["model"] = shape
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
        if rec.software:
            v["framework"] = rec.software
    else:
        if rec.quant:
            v["quant"] = rec.quant
        v["batch"] = rec.batch or 1
        v["prompt_tokens"] = rec.prompt_tokens or 1
        v["output_tokens"] = rec.output_tokens or 1
        if rec.software in RUNTIMES:  # a runtime the planner has no profile of plans with the part's default
            v["runtime"] = rec.software
    return v


@lru_cache(maxsize=64)
def preset_of(params: int) -> str | None:
    """The bundled model whose exact parameter count a record states without its shape (llama-bench's
    ``model_n_params``, 8,030,261,248: Llama 3 8B), where every preset of that count has one architecture; else
    None (the planner's generic shape of that size). A prompt's products leave out the embedding and the head
    (``estimate.model.prompt_param_count``), so a run's prefill is learned on its model's own shape, the shape the
    plan of that model applies it to."""
    found = {}
    for mid, arch in _presets().models.items():
        if param_count(arch) == params:
            found.setdefault(tuple(getattr(arch, f) for f in SHAPE_FIELDS), mid)
    return next(iter(found.values())) if len(found) == 1 else None


@lru_cache(maxsize=1)
def _presets():
    """The bundled catalog, whose models a record's exact parameter count is matched against (``preset_of``)."""
    from advisor.catalog.load import bundled_catalog

    return bundled_catalog()


# what a preset's architecture is, for ``preset_of``: the fields the counts and a step's reads follow
SHAPE_FIELDS = ("layers", "hidden", "heads", "kv_heads", "d_head", "ffn", "vocab", "tied", "experts",
                "experts_per_token")


@dataclass(frozen=True)
class RecordJob:
    """A record's job resolved as the planner resolves a request: the request, the model and the lengths."""

    request: PlanRequest
    arch: ModelArch
    params: int
    active: int
    lens: Lengths | None
    weight_bytes: int | None


def record_job(rec: RunRecord) -> RecordJob | None:
    """The record's job resolved (None when it cannot be planned: no model, a value the planner refuses)."""
    values = request_values(rec)
    if values is None:
        return None
    try:
        req = PlanRequest.from_mapping(values)
        m = resolve_job_model(req, _presets() if req.model else None)
    except (PlanInputError, ValueError, TypeError):
        values.pop("framework", None)  # a framework the planner has no profile of: its default
        try:
            req = PlanRequest.from_mapping(values)
            m = resolve_job_model(req, _presets() if req.model else None)
        except (PlanInputError, ValueError, TypeError):
            return None
    lens = lengths(req, m.arch.max_context or 1 << 30) if req.workload == "inference" else None
    return RecordJob(req, m.arch, m.params, m.active_params, lens, rec.weight_bytes)
