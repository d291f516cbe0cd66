"""Qt-free planning helpers for the Planner and Compare pages (run in a worker thread).

A :class:`PlanBundle` is the plan itself plus the memory per device at a few device counts, which the
Planner's chart draws as one stacked bar per count against each candidate accelerator's capacity.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from advisor.catalog.defaults import defaults
from advisor.planner import PlanInputError, PlanRequest, PlanResult, plan

# Accelerators whose capacity the memory chart always draws (besides the ones in this machine):
# one per common memory size, from a gaming card to the largest training parts.
CAPACITY_CANDIDATES = ("rtx-4090", "rtx-5090", "l40s", "h100-sxm", "h200", "b200")
DEFAULT_INPUTS: dict[str, Any] = {"model": defaults().model, "workload": "lora"}  # resources/defaults.toml
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


def plan_bundle(request: PlanRequest, catalog, calibration=None, owned=(), host=None) -> PlanBundle:
    """Plan a request, with the memory per device at :func:`device_counts` read from the same plan.

    Args:
        owned: this machine's GPUs as ``planner.owned.OwnedHardware`` (``AppContext.owned_hardware``).
        host: this machine's ``HostFigures`` (the CPU target, offload, host RAM for fit advice).
    Raises:
        PlanInputError: the request does not fit the catalog (unknown preset or accelerator).
    """
    t0 = time.perf_counter()
    result = plan(request, catalog, calibration, owned=owned, host=host)
    memory = [(n, m) for n in device_counts(request) if (m := result.memory_at(n)) is not None]
    return PlanBundle(request, result, tuple(memory), time.perf_counter() - t0)


def per_accelerator(result: PlanResult) -> list[dict]:
    """One row per accelerator for the Planner table: fit, devices, time, tokens/s and the cheapest option.

    Returns:
        Dicts with ``accelerator``, ``name``, ``capacity_bytes``, ``fits``, ``devices``, ``hours``,
        ``tokens_per_s``, ``mfu``, ``memory_per_device_bytes``, ``cost_usd``, ``where`` (the cheapest option's id),
        ``stack_ok`` / ``stack_reason`` (whether the part runs the job's software stack), ``price_stale`` /
        ``price_date`` of the cheapest option (a cloud price over a year old) and, for serving,
        ``usd_per_million_tokens`` / ``usd_per_million_requests`` (None for training), and the 80 % intervals
        ``hours_interval``, ``tokens_per_s_interval``, ``cost_usd_interval``.
    """
    global _ROWS
    held, rows_of = _ROWS
    if held is result:  # the Planner and the Machine page read the same plan: its rows once (copies of the list)
        return list(rows_of)
    rows: dict[str, dict] = {}
    for o in result.ranked:  # options that can run as laid out
        key = o.id if o.kind == "owned" else o.accelerator  # owned hardware keeps a row of its own
        row = rows.get(key)
        if row is None or (o.fits and not row["fits"]) or (o.fits == row["fits"] and o.cost_usd < row["cost_usd"]):
            name = o.accelerator_name
            if o.kind == "owned":
                name = ("This machine: " if o.this_machine else "Owned: ") + name
            rows[key] = {
                "accelerator": o.accelerator, "name": name, "capacity_bytes": o.capacity_bytes,
                "fits": o.fits, "devices": o.devices, "hours": o.hours, "tokens_per_s": o.tokens_per_s,
                "mfu": o.mfu, "mfu_origin": o.mfu_origin, "memory_per_device_bytes": o.memory_per_device_bytes,
                "cost_usd": o.cost_usd, "where": o.id, "kind": o.kind, "this_machine": o.this_machine,
                "price_stale": o.price_stale, "price_date": o.price_date,
                "stack_ok": o.stack_ok, "stack_reason": o.stack_reason,
                "usd_per_million_tokens": o.usd_per_million_tokens,
                "usd_per_million_requests": o.usd_per_million_requests,
                "hours_interval": o.hours_interval, "tokens_per_s_interval": o.tokens_per_s_interval,
                "cost_usd_interval": o.cost_usd_interval,
            }
    # This machine's row first whatever its rank, then other owned hardware, then by fit and time.
    # Parts off the job's software stack (``stack_ok`` false) after the fitting ones on it.
    out = sorted(rows.values(), key=lambda r: (not r["this_machine"], r["kind"] != "owned", not r["fits"],
                                               not r["stack_ok"], r["hours"], r["accelerator"]))
    _ROWS = (result, tuple(out))
    return out


_ROWS: tuple = (None, ())  # (the last plan, its rows): a plan is frozen, so are the rows read from it


FIT_WORKLOADS = (("inference", "serve"), ("qlora", "QLoRA fine-tune"), ("lora", "LoRA fine-tune"),
                 ("finetune", "full fine-tune"))
# Bytes per parameter a workload needs at the least (the weights alone at its smallest form): presets above
# the capacity at this rate are skipped without planning. Inference: q4_0 (4.5 bits); QLoRA: nf4 (about 4.1
# bits); LoRA: the bf16 base; full fine-tuning: bf16 weights and 8-bit AdamW states at the least.
# Changes that make it another job than the one the row names (another workload, layers on the CPU).
OTHER_JOB = {"workload", "gpu_layers"}
MIN_BYTES_PER_PARAM = {"inference": 4.5 / 8, "qlora": 0.5, "lora": 2.0, "finetune": 4.0}


def what_fits(owned, catalog, calibration=None, host=None) -> list[dict]:
    """The largest preset that fits this machine's GPUs for each workload, and at what setting: as asked,
    or with the cheapest change in time that makes it fit (the plan's fit advice, other than another workload
    or layers on the CPU). Runs in a worker.

    Args:
        owned: this machine's owned hardware (``planner.owned.OwnedHardware``, catalog or derived), planned
            together as the plan plans them: unequal GPUs as one pool where the job can split its layers over
            them (``planner.owned.pool_unequal``), the plan's own option for this machine (else the first's).
    Returns:
        Dicts with ``workload`` (label), ``values`` (the plan inputs to open in the planner, or None when no
        preset fits), ``model``, ``params``, ``change`` (the ``{flag: value}`` applied, {} when none),
        ``hours`` (default budget), ``tokens_per_s`` and ``cost_usd``.
    """
    from advisor.estimate.model import param_count

    hw = owned[0]
    capacity = sum(h.accelerator.usable_memory_bytes * h.count for h in owned)  # at most what a pool of them holds

    def machine_option(result):
        return result.this_machine() or result.option(hw.id)
    models = sorted(catalog.models.values(), key=param_count, reverse=True)
    out = []
    for workload, label in FIT_WORKLOADS:
        found = {"workload": label, "workload_id": workload, "values": None, "model": None, "params": None,
                 "change": {}, "hours": None, "tokens_per_s": None, "cost_usd": None}
        for m in models:
            if param_count(m) * MIN_BYTES_PER_PARAM[workload] > capacity:
                continue
            values = {"model": m.id, "workload": workload}
            try:
                result = plan(PlanRequest.from_mapping(values), catalog, calibration, owned=list(owned), host=host,
                              only_owned=True)
            except PlanInputError:
                continue
            option = machine_option(result)
            change = {}
            if option is not None and not option.fits:
                advice = next((a for a in result.fit_advice if a.fits and not set(a.change) & OTHER_JOB), None)
                if advice is None:
                    continue
                change = dict(advice.change)
                option = machine_option(plan(PlanRequest.from_mapping({**values, **change}), catalog, calibration,
                                             owned=list(owned), host=host, only_owned=True, advise=False))
            if option is not None and option.fits:
                found.update(values={**values, **change}, model=m.id, params=result.params, change=change,
                             hours=option.hours, tokens_per_s=option.tokens_per_s, cost_usd=option.cost_usd)
                break
        out.append(found)
    return out
