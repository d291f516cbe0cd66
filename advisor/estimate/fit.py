"""What to change so a job fits: candidate changes as ``{flag: value}``, each with the memory and time it
gives, cheapest first in time lost (docs/method.md, "What to change to fit").

The generator is independent of the planner: it takes the job's parameters and an ``evaluate(change)``
that returns the memory (and hours) of the job with that change applied. ``job_evaluator`` builds one
from the estimate functions; the planner may pass its own (a re-plan with the changed request).

Changes, by workload: training - full checkpointing, micro-batch 1 with gradient accumulation, a shorter
sequence, a leaner framework than plain Hugging Face (torchtune, Unsloth), LoRA or QLoRA instead of full
fine-tuning, an 8-bit optimizer, ZeRO-3/FSDP over several GPUs,
optimizer offload to host RAM (host RAM checked); inference - a smaller quantisation, a shorter context,
a quantised KV cache, layers offloaded to the CPU.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from advisor.catalog.quant_quality import LADDER
from advisor.catalog.runtimes import runtime_data
from advisor.estimate import compute, memory
from advisor.estimate.local import CPU_ETA_MEM, layer_sizes, offload_plan
from advisor.estimate.model import ModelArch, active_param_count, embedding_params
from advisor.estimate.priors import ETA_MEM_PRIOR

QUANT_LADDER = LADDER  # the usual files, smaller and smaller (catalog.quant_quality.LADDER)
MIN_SEQ = 256
MIN_CONTEXT = 512
# Time factors that the compute model does not carry (assumptions, docs/method.md):
ZERO3_TIME_FACTOR = 1.10  # extra all-gathers of the weights, over PCIe between consumer cards
OFFLOAD_TIME_FACTOR = 1.30  # the optimizer step on the CPU and the PCIe copies of ZeRO-Offload
MICRO_BATCH_ONE_TIME_FACTOR = 1.05  # smaller matrix products use the GPU a little less well
# A framework that holds less than plain Hugging Face training, by workload (resources/frameworks.toml).
FRAMEWORK_FOR_FIT = {
    "finetune": ("torchtune", "torchtune's single-device recipe: bf16 weights, paged 8-bit AdamW stepped in the backward"),
    "lora": ("unsloth", "Unsloth: fused cross-entropy, checkpointed activations offloaded to host RAM"),
    "qlora": ("unsloth", "Unsloth: fused cross-entropy, checkpointed activations offloaded to host RAM"),
}


@dataclass(frozen=True)
class Outcome:
    """What a job needs and takes: device memory, host memory (offload) and hours (None: not known)."""

    memory_total_bytes: int
    hours: float | None = None
    host_bytes: int = 0
    cost_usd: float | None = None  # the job's total cost with the change (None: not known)


@dataclass(frozen=True)
class FitAdvice:
    """One change (``{flag: value}``, flags of the job schema) and what the job becomes with it."""

    change: dict[str, Any]
    why: str
    memory_total_bytes: int
    fits: bool
    hours: float | None
    hours_lost: float | None
    host_ram_bytes: int = 0
    host_fits: bool = True
    cost_usd: float | None = None  # the job's total cost with the change
    cost_added_usd: float | None = None  # over the job as given (negative: cheaper)

    def to_json(self) -> dict:
        return {"change": dict(self.change), "why": self.why, "memory_total_bytes": self.memory_total_bytes,
                "fits": self.fits, "hours": self.hours, "hours_lost": self.hours_lost,
                "host_ram_bytes": self.host_ram_bytes, "host_fits": self.host_fits, "cost_usd": self.cost_usd,
                "cost_added_usd": self.cost_added_usd}


@dataclass(frozen=True)
class _Candidate:
    change: dict[str, Any]
    why: str
    ladder: tuple[dict[str, Any], ...] = field(default=())  # alternatives, least change first


def _halvings(value: int, floor: int) -> list[int]:
    out, v = [], value // 2
    while v >= floor:
        out.append(v)
        v //= 2
    return out


def candidate_changes(job: Mapping[str, Any], *, devices: int = 1, layers: int | None = None) -> list[_Candidate]:
    """The changes that can reduce memory for this job, in a fixed order (cheapest in time first)."""
    wl = job.get("workload", "pretrain")
    out: list[_Candidate] = []
    if wl == "inference":
        runtime = runtime_data().runtimes.get(job.get("runtime") or "")
        bits = memory.weight_bits(job.get("precision", "bf16"), job.get("quant"))
        if runtime is None:  # no runtime named: llama.cpp's ladder (the default on the parts fit advice is for)
            quants = [q for q in QUANT_LADDER if memory.QUANT_BITS[q] < bits]
        else:  # what --precision int8 and int4 mean on the runtime
            quants = [q for q in dict.fromkeys((runtime.format_for("int8"), runtime.format_for("int4")))
                      if memory.QUANT_BITS[q] < bits]
        if quants:
            out.append(_Candidate({"quant": quants[0]}, "a smaller quantisation of the weights",
                                  tuple({"quant": q} for q in quants)))
        kv8 = "q8_0" if runtime is None else runtime.kv_format(8)
        if job.get("kv_cache_bits", 16) > 8 and kv8:
            out.append(_Candidate({"kv_cache_bits": 8}, f"an 8-bit KV cache ({kv8})"))
        prompt = job.get("prompt_tokens")
        if prompt:  # prompt and output given apart: the prompt is what can be shorter
            shorter = _halvings(int(prompt), MIN_CONTEXT // 2)
            if shorter:
                out.append(_Candidate({"prompt_tokens": shorter[0]}, "a shorter prompt",
                                      tuple({"prompt_tokens": p} for p in shorter)))
        else:
            ctx = int(job.get("context") or 2048)
            shorter = _halvings(ctx, MIN_CONTEXT)
            if shorter:
                out.append(_Candidate({"context": shorter[0]}, "a shorter context",
                                      tuple({"context": c} for c in shorter)))
        if layers and (runtime is None or runtime.offloads_layers):  # llama.cpp's -ngl
            ladder = tuple({"gpu_layers": n} for n in range(layers - 1, -1, -1))
            out.append(_Candidate(ladder[0], "some layers on the CPU (llama.cpp -ngl N)", ladder))
        return out
    if job.get("checkpointing", "selective") != "full":
        out.append(_Candidate({"checkpointing": "full"}, "full activation checkpointing (recompute the forward)"))
    mb = int(job.get("micro_batch", 1))
    if mb > 1:
        out.append(_Candidate({"micro_batch": 1, "grad_accum": mb * int(job.get("grad_accum", 1))},
                              "micro-batch 1 with gradient accumulation (same effective batch)"))
    if wl in ("pretrain", "finetune") and job.get("optimizer", "adamw") == "adamw":
        out.append(_Candidate({"optimizer": "adamw-8bit"}, "an 8-bit optimizer (bitsandbytes AdamW8bit)"))
    # both are single-GPU recipes (Unsloth's open-source release trains on one GPU; torchtune's
    # full_finetune_single_device): offered only for a one-device target
    if devices == 1 and job.get("framework") in (None, "transformers") and wl in FRAMEWORK_FOR_FIT:
        name, why = FRAMEWORK_FOR_FIT[wl]
        out.append(_Candidate({"framework": name}, why))
    if wl == "finetune":
        out.append(_Candidate({"workload": "lora"}, "LoRA instead of full fine-tuning"))
        out.append(_Candidate({"workload": "qlora"}, "QLoRA (4-bit base) instead of full fine-tuning"))
    elif wl == "lora":
        out.append(_Candidate({"workload": "qlora"}, "QLoRA (4-bit base) instead of LoRA"))
    if devices > 1 and int(job.get("zero", 0)) < 3:
        out.append(_Candidate({"zero": 3}, f"ZeRO-3/FSDP: shard the model states over the {devices} GPUs"))
    if wl in ("pretrain", "finetune") and not job.get("optimizer_offload"):
        out.append(_Candidate({"optimizer_offload": True}, "optimizer states offloaded to host RAM (ZeRO-Offload)"))
    seq = int(job.get("seq_len", 2048))
    shorter = _halvings(seq, MIN_SEQ)
    if shorter:
        out.append(_Candidate({"seq_len": shorter[0]}, "a shorter training sequence", tuple({"seq_len": s} for s in shorter)))
    return out


def fit_advice(job: Mapping[str, Any], capacity_bytes: int, evaluate: Callable[[Mapping[str, Any]], Outcome], *,
               host_ram_bytes: int | None = None, devices: int = 1, layers: int | None = None,
               limit: int = 8) -> list[FitAdvice]:
    """The changes that make a job fit ``capacity_bytes`` per device, cheapest first in time lost.

    Each single change is evaluated (for a ladder such as shorter sequences, the least change that fits);
    when no single change fits, changes are stacked in order of memory saved until the job fits, and that
    combination is offered too. Advice that does not fit is kept at the end (it shows how close it gets).

    Args:
        job: the job's parameters by flag name (workload, precision, quant, optimizer, zero, seq_len,
            micro_batch, grad_accum, checkpointing, context, kv_cache_bits, optimizer_offload, gpu_layers).
        capacity_bytes: usable memory per device.
        evaluate: the job with a change applied -> ``Outcome`` (``{}`` is the job as given).
        host_ram_bytes: host RAM for offload; a change needing more does not fit.
        devices: GPUs the job may use (ZeRO-3 needs more than one).
        layers: the model's layer count (inference: offers layers on the CPU).
        limit: most advice returned.
    Returns:
        ``FitAdvice`` items; empty when the job already fits.
    """
    base = evaluate({})
    if base.memory_total_bytes <= capacity_bytes and _host_ok(base, host_ram_bytes):
        return []
    advice: list[FitAdvice] = []
    singles: list[tuple[_Candidate, dict, Outcome]] = []
    for cand in candidate_changes(job, devices=devices, layers=layers):
        change, outcome = _least_that_fits(cand, evaluate, capacity_bytes, host_ram_bytes)
        singles.append((cand, change, outcome))
        advice.append(_advice(change, cand.why, outcome, base, capacity_bytes, host_ram_bytes))
    if not any(a.fits for a in advice) and singles:
        combo = _stack(singles, evaluate, capacity_bytes, host_ram_bytes, base)
        if combo is not None:
            change, whys, out = combo
            advice.append(_advice(change, "; ".join(whys), out, base, capacity_bytes, host_ram_bytes))
    advice.sort(key=lambda a: (not a.fits, a.hours_lost if a.hours_lost is not None else float("inf"),
                               a.memory_total_bytes))
    return advice[:limit]


def _stack(singles, evaluate, capacity: int, host_ram: int | None, base: Outcome):
    """Changes stacked until the job fits: single-step changes first, least time lost first, then the
    ladders (shorter sequence or context, smaller quantisation, fewer GPU layers), each at the least step
    that makes the stack fit. None when even the whole stack does not fit."""
    def lost(t):
        o = t[2]
        return float("inf") if o.hours is None or base.hours is None else o.hours - base.hours

    combined: dict[str, Any] = {}
    whys: list[str] = []
    ordered = sorted((t for t in singles if not t[0].ladder), key=lost) + [t for t in singles if t[0].ladder]
    for cand, _change, _out in ordered:
        if "workload" in cand.change and "workload" in combined:
            continue
        for step in cand.ladder or (cand.change,):
            trial = {**combined, **step}
            out = evaluate(trial)
            if out.memory_total_bytes <= capacity and _host_ok(out, host_ram):
                return trial, [*whys, cand.why], out
        combined.update((cand.ladder or (cand.change,))[-1])
        whys.append(cand.why)
    return None


def _host_ok(o: Outcome, host_ram_bytes: int | None) -> bool:
    return host_ram_bytes is None or o.host_bytes <= host_ram_bytes


def _least_that_fits(cand: _Candidate, evaluate, capacity: int, host_ram: int | None) -> tuple[dict, Outcome]:
    ladder = cand.ladder or (cand.change,)
    last = None
    for step in ladder:
        out = evaluate(step)
        last = (dict(step), out)
        if out.memory_total_bytes <= capacity and _host_ok(out, host_ram):
            return last
    return last


def _advice(change: dict, why: str, o: Outcome, base: Outcome, capacity: int, host_ram: int | None) -> FitAdvice:
    lost = None if o.hours is None or base.hours is None else o.hours - base.hours
    added = None if o.cost_usd is None or base.cost_usd is None else o.cost_usd - base.cost_usd
    return FitAdvice(change=change, why=why, memory_total_bytes=o.memory_total_bytes,
                     fits=o.memory_total_bytes <= capacity and _host_ok(o, host_ram), hours=o.hours,
                     hours_lost=lost, host_ram_bytes=o.host_bytes, host_fits=_host_ok(o, host_ram),
                     cost_usd=o.cost_usd, cost_added_usd=added)


# ---------------------------------------------------------------------------- an evaluator from the estimates
def job_memory(arch: ModelArch, params: float, job: Mapping[str, Any], devices: int = 1) -> tuple[int, int]:
    """Device memory per device and host RAM of a job described by flags (the estimate functions).

    Training: ``memory.training_memory``; ``optimizer_offload`` moves the optimizer states (fp32 master
    and moments) to host RAM. Inference: weights and KV cache (``kv_cache_bits`` 8 halves the cache);
    ``gpu_layers`` below the layer count keeps the rest in host RAM (``local.offload_plan``).
    Returns:
        (device bytes, host bytes).
    """
    wl = job.get("workload", "pretrain")
    if wl == "inference":
        kv_value = job.get("kv_cache_bits", 16) / 8
        sizes = layer_sizes(arch, params, precision=job.get("precision", "bf16"), quant=job.get("quant"),
                            context=int(job.get("context", 2048)), batch=int(job.get("batch", 1)),
                            kv_bytes_per_value=kv_value)
        n = job.get("gpu_layers")
        if n is None or n >= arch.layers:
            other = sizes.total_bytes
            return int(other + memory.overhead_bytes(other)), 0
        plan = offload_plan(sizes, int(n), gpu_bandwidth_bps=1.0, cpu_bandwidth_bps=1.0, gpu_capacity_bytes=0,
                            host_capacity_bytes=0)
        gpu_other = plan.gpu_bytes - (memory.CUDA_CONTEXT_BYTES if n else 0)
        return int(gpu_other + memory.overhead_bytes(gpu_other)), plan.host_bytes
    mem = memory.training_memory(
        arch, params, workload=wl, precision=job.get("precision", "bf16"), optimizer=job.get("optimizer", "adamw"),
        zero=int(job.get("zero", 0)), devices=devices, tp=1, pp=1, seq_len=int(job.get("seq_len", 2048)),
        micro_batch=int(job.get("micro_batch", 1)), checkpointing=job.get("checkpointing", "selective"),
        lora_rank=int(job.get("lora_rank", 16)), embedding_params=embedding_params(arch))
    host = 0
    total = mem.total_bytes
    if job.get("optimizer_offload"):
        host = mem.optimizer_bytes
        total -= mem.optimizer_bytes
    return int(total), int(host)


def job_evaluator(arch: ModelArch, params: float, job: Mapping[str, Any], *, devices: int, peak_flops: float,
                  mfu: float, tokens: float, gpu_bandwidth_bps: float | None = None,
                  cpu_bandwidth_bps: float | None = None) -> Callable[[Mapping[str, Any]], Outcome]:
    """``evaluate(change)`` for ``fit_advice`` from the estimate functions.

    Training hours: ``compute.training_seconds`` (full checkpointing adds a forward; LoRA/QLoRA 4PD;
    QLoRA's MFU x0.7 as in ``priors.mfu_prior``), times the ZeRO-3, offload and micro-batch factors above.
    Inference hours: ``tokens`` decoded at batch 1 at the memory-bound rate of the GPU (and the CPU for
    offloaded layers).
    """
    active = active_param_count(arch)

    def evaluate(change: Mapping[str, Any]) -> Outcome:
        j = {**job, **change}
        dev_bytes, host_bytes = job_memory(arch, params, j, devices)
        wl = j.get("workload", "pretrain")
        if wl == "inference":
            hours = None
            if gpu_bandwidth_bps:
                sizes = layer_sizes(arch, params, precision=j.get("precision", "bf16"), quant=j.get("quant"),
                                    context=int(j.get("context", 2048)), batch=1,
                                    kv_bytes_per_value=j.get("kv_cache_bits", 16) / 8)
                n = j.get("gpu_layers")
                n = arch.layers if n is None else int(n)
                plan = offload_plan(sizes, n, gpu_bandwidth_bps=gpu_bandwidth_bps,
                                    cpu_bandwidth_bps=cpu_bandwidth_bps or gpu_bandwidth_bps,
                                    gpu_capacity_bytes=0, host_capacity_bytes=0, eta_gpu=ETA_MEM_PRIOR,
                                    eta_cpu=CPU_ETA_MEM)
                hours = tokens / plan.tokens_per_s / compute.SECONDS_PER_HOUR
            return Outcome(dev_bytes, hours, host_bytes)
        u = mfu * (0.7 if wl == "qlora" and job.get("workload") != "qlora" else 1.0)
        seconds = compute.training_seconds(compute.training_flops(active, tokens, wl), devices, peak_flops, u,
                                           j.get("checkpointing", "selective"))
        if int(j.get("zero", 0)) >= 3 and int(job.get("zero", 0)) < 3:
            seconds *= ZERO3_TIME_FACTOR
        if j.get("optimizer_offload") and not job.get("optimizer_offload"):
            seconds *= OFFLOAD_TIME_FACTOR
        if int(j.get("micro_batch", 1)) < int(job.get("micro_batch", 1)):
            seconds *= MICRO_BATCH_ONE_TIME_FACTOR
        return Outcome(dev_bytes, seconds / compute.SECONDS_PER_HOUR, host_bytes)

    return evaluate
