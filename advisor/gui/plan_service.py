"""Qt-free planning helpers for the Planner and Compare pages (run in a worker thread).

A :class:`PlanBundle` is the plan itself plus the memory per device at a few device counts, which the
Planner's chart draws as one stacked bar per count against each candidate accelerator's capacity.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from advisor.planner import PlanInputError, PlanRequest, PlanResult, plan

# Accelerators whose capacity the memory chart always draws (besides the ones in this machine):
# one per common memory size, from a gaming card to the largest training parts.
CAPACITY_CANDIDATES = ("rtx-4090", "rtx-5090", "l40s", "h100-sxm", "h200", "b200")
DEFAULT_INPUTS: dict[str, Any] = {"model": "llama-3-8b", "workload": "lora"}
WORKLOAD_WORDS = (("pretrain", "Pretrain"), ("finetune", "Fine-tune"), ("lora", "LoRA fine-tune"),
                  ("qlora", "QLoRA fine-tune"), ("inference", "Serve"))


@dataclass(frozen=True)
class PlanBundle:
    """A plan and the memory breakdown per device for several device counts.

    Attributes:
        request: the request planned.
        result: the full plan over every accelerator.
        memory_by_devices: ``(devices, MemoryBreakdown)`` pairs, ascending.
        elapsed_s: wall time of the whole bundle.
    """

    request: PlanRequest
    result: PlanResult
    memory_by_devices: tuple
    elapsed_s: float


def device_counts(request: PlanRequest) -> tuple[int, ...]:
    """The device counts to chart: the requested one with its neighbours, or 1, 2, 4, 8 when automatic."""
    unit = (request.tp or 1) * request.pp
    if request.gpus:
        base = request.gpus
        counts = {base // 2, base, base * 2, base * 4}
    else:
        counts = {1, 2, 4, 8}
    return tuple(sorted(c for c in counts if c >= unit and c % unit == 0 and c <= 16384))


def plan_bundle(request: PlanRequest, catalog, calibration=None) -> PlanBundle:
    """Plan a request, with the memory per device at :func:`device_counts` read from the same plan.

    Raises:
        PlanInputError: the request does not fit the catalog (unknown preset or accelerator).
    """
    t0 = time.perf_counter()
    result = plan(request, catalog, calibration)
    memory = [(n, m) for n in device_counts(request) if (m := result.memory_at(n)) is not None]
    return PlanBundle(request, result, tuple(memory), time.perf_counter() - t0)


def per_accelerator(result: PlanResult) -> list[dict]:
    """One row per accelerator for the Planner table: fit, devices, time, tokens/s and the cheapest option.

    Returns:
        Dicts with ``accelerator``, ``name``, ``capacity_bytes``, ``fits``, ``devices``, ``hours``,
        ``tokens_per_s``, ``mfu``, ``memory_per_device_bytes``, ``cost_usd`` and ``where`` (the cheapest option's id).
    """
    rows: dict[str, dict] = {}
    for o in result.ranked:  # options that can run as laid out
        row = rows.get(o.accelerator)
        if row is None or (o.fits and not row["fits"]) or (o.fits == row["fits"] and o.cost_usd < row["cost_usd"]):
            rows[o.accelerator] = {
                "accelerator": o.accelerator, "name": o.accelerator_name, "capacity_bytes": o.capacity_bytes,
                "fits": o.fits, "devices": o.devices, "hours": o.hours, "tokens_per_s": o.tokens_per_s,
                "mfu": o.mfu, "mfu_origin": o.mfu_origin, "memory_per_device_bytes": o.memory_per_device_bytes,
                "cost_usd": o.cost_usd, "where": o.id, "kind": o.kind,
            }
    return sorted(rows.values(), key=lambda r: (not r["fits"], r["hours"], r["accelerator"]))


FIT_WORKLOADS = (("inference", "serve (bf16)"), ("qlora", "QLoRA fine-tune"), ("lora", "LoRA fine-tune"),
                 ("finetune", "full fine-tune"))


def what_fits(accelerator_id: str, devices: int, catalog, calibration=None) -> list[dict]:
    """The largest preset that fits this machine's GPUs for each workload (runs in a worker, ~70 small plans).

    Returns:
        Dicts with ``workload`` (label), ``model`` (preset id or None when none fits), ``params``,
        ``hours`` (default budget) and ``tokens_per_s``.
    """
    from advisor.estimate.model import param_count

    models = sorted(catalog.models.values(), key=param_count, reverse=True)
    out = []
    for workload, label in FIT_WORKLOADS:
        found = {"workload": label, "model": None, "params": None, "hours": None, "tokens_per_s": None}
        for m in models:
            try:
                req = PlanRequest.from_mapping({"model": m.id, "workload": workload, "gpus": devices,
                                                "accelerator": [accelerator_id]})
                result = plan(req, catalog, calibration)
            except PlanInputError:
                continue
            option = next((o for o in result.ranked if o.fits), None)
            if option is not None:
                found.update(model=m.id, params=result.params, hours=option.hours, tokens_per_s=option.tokens_per_s)
                break
        out.append(found)
    return out
