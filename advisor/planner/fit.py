"""What to change so a job fits the hardware asked for or owned, and inference the way people ask it
(docs/method.md, "What to change to fit").

Fit advice comes from ``estimate.fit.fit_advice`` with an ``evaluate`` that *re-plans* the job with each
change on the target hardware alone, so every offered ``{flag: value}`` is checked by the same planner that
will show it. The inference summary gives time to first token, prefill and decode tokens/s, the largest
context that fits, and a context-length sweep (each point a re-plan on the target).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from advisor.catalog.quant_quality import next_smaller, quality
from advisor.estimate.fit import FitAdvice, Outcome, fit_advice
from advisor.estimate.local import HostFigures, usable_host_bytes
from advisor.job import JobInputError
from advisor.planner.layouts import MemoryModel, Parallelism
from advisor.planner.request import PlanRequest, names_format, training_software

NOT_A_JOB_BYTES = 1 << 62  # a change the schema refuses never fits
SWEEP_START = 512
MAX_SWEEP_POINTS = 12

Replan = Callable[[PlanRequest, Sequence[str]], object]


def fit_target(result):
    """The option fit advice is for, when it does not fit: this machine's, else owned hardware when none of
    it fits, else the accelerators asked for (``--accelerator``) when none of them fits; None otherwise."""
    options = result.options
    mine = next((o for o in options if o.this_machine), None)
    if mine is not None:
        return None if mine.fits else mine
    owned = [o for o in options if o.kind == "owned"]
    if owned and not any(o.fits for o in owned):
        return owned[0]
    wanted = result.request.accelerator
    if not wanted:  # the whole catalog: no accelerator asked for
        return None
    asked = [o for o in options if o.kind != "owned" and o.accelerator in wanted]
    if asked and not any(o.fits for o in asked):
        return asked[0]
    return None


def target_key(option) -> str:
    """What a re-plan keeps of a target: the owned option's id, or the accelerator id."""
    return option.id if option.kind == "owned" else option.accelerator


def _same(result, target):
    return next((o for o in result.options if (o.id == target.id if target.kind == "owned"
                                                else o.accelerator == target.accelerator)), None)


def job_values(result, target) -> dict:
    """The job's values by flag name with the planner's choices filled in (sequence, context, ZeRO)."""
    values = result.request.model_dump(exclude_unset=True)  # what was not given stays a default
    values.update(seq_len=result.seq_len, context=result.context)
    if result.request.prompt_tokens is not None:  # the window follows the prompt the advice may shorten
        values["context"] = result.request.context
    if result.request.workload == "inference" and result.request.quant is None and target.serving is not None \
            and target.serving.software is not None and not names_format(result.request):
        values["quant"] = target.serving.software.weight_format.id  # the runtime's usual file, as planned
    if result.request.workload != "inference":
        values["zero"] = target.parallelism.zero
        values["checkpointing"] = training_software(result.request).behaviours.checkpointing
    return values


def advise_fit(result, replan: Replan, host: HostFigures | None) -> tuple[FitAdvice, ...]:
    """Fit advice for the plan's target (``fit_target``), cheapest first in time lost; () when it fits.

    Args:
        result: the plan (a ``PlanResult``).
        replan: ``replan(request, [target_key])`` -> a ``PlanResult`` on that target alone.
        host: this machine's host figures (host RAM checked for optimizer offload and CPU layers).
    """
    target = fit_target(result)
    if target is None:
        return ()
    values = job_values(result, target)
    key = target_key(target)

    def evaluate(change) -> Outcome:
        if not change:
            return Outcome(target.memory_per_device_bytes, target.hours, target.host_bytes, target.cost_usd)
        try:
            changed = PlanRequest.from_mapping({**values, **change})
        except JobInputError:
            return Outcome(NOT_A_JOB_BYTES, None)
        found = _same(replan(changed, [key]), target)
        if found is None:  # the target cannot run the changed job (a workload it does not train)
            return Outcome(NOT_A_JOB_BYTES, None)
        return Outcome(found.memory_per_device_bytes, found.hours, found.host_bytes, found.cost_usd)

    layers = result.arch.layers if result.request.workload == "inference" and target.accelerator != "cpu" else None
    return tuple(fit_advice(values, target.capacity_bytes, evaluate,
                            host_ram_bytes=usable_host_bytes(host) if host else None, devices=target.devices,
                            layers=layers, limit=12))


# ------------------------------------------------------------------------------------------ inference
@dataclass(frozen=True)
class ContextPoint:
    """One context length on the target: memory per device, whether it fits, time to first token, decode."""

    context: int
    memory_total_bytes: int
    fits: bool
    ttft_s: float | None
    decode_tokens_per_s: float

    def to_json(self) -> dict:
        return {"context": self.context, "memory_total_bytes": self.memory_total_bytes, "fits": self.fits,
                "ttft_s": self.ttft_s, "decode_tokens_per_s": self.decode_tokens_per_s}


def inference_target(result):
    """The option the inference summary describes: this machine's, else the GPUs the user owns (whether the job
    fits them or not: the summary never moves to hardware the user did not name), else the cheapest that fits,
    else the first."""
    owned = next((o for o in result.options if o.kind == "owned"), None)
    return result.this_machine() or owned or result.best() or (result.options[0] if result.options else None)


def largest_context(result, option) -> int:
    """The longest context (tokens) whose memory fits ``option``'s devices, up to the model's maximum
    (binary search over the memory model; 0 when not even one token fits)."""
    req, arch = result.request, result.arch
    top = arch.max_context or 1 << 20
    s = option.serving
    if s is not None and s.kv_capacity_tokens is not None:  # the cache the runtime leaves (serve's rule)
        return min(top, s.kv_capacity_tokens // max(1, req.batch))
    layout = Parallelism(option.devices, option.devices, 1, 0)
    weight_bytes = getattr(result.memory_model, "weight_bytes", None)  # a model file's exact weight bytes

    def fits(ctx: int) -> bool:
        mem = MemoryModel(req, arch, result.params, result.seq_len, ctx, weight_bytes,
                          projector_bytes=getattr(result.memory_model, "projector_bytes", 0)).at(layout)
        return mem.total_bytes <= option.capacity_bytes

    if not fits(1):
        return 0
    if fits(top):
        return top
    lo, hi = 1, top
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
    return lo


def context_sweep(result, replan: Replan, option) -> list[ContextPoint]:
    """Memory, time to first token and decode tokens/s on ``option`` at context lengths from 512 doubling
    to the model's maximum (and the plan's own context), each a re-plan on the option's own layout (its devices
    and tensor/pipeline degrees held fixed, so the points differ by the context alone)."""
    top = result.arch.max_context or 1 << 17
    contexts = []
    c = SWEEP_START
    while c < top and len(contexts) < MAX_SWEEP_POINTS - 1:
        contexts.append(c)
        c *= 2
    contexts = sorted({*contexts, min(top, c), result.context})
    out_tokens = result.lengths.output if result.lengths else 0
    contexts = [ctx for ctx in contexts if ctx > out_tokens] or [result.context]  # a window holds some prompt
    values = result.request.model_dump(exclude_unset=True)  # what was not given stays a default
    par = option.parallelism
    fixed = {"gpus": option.devices, "tp": par.tp, "pp": par.pp}
    key = target_key(option)
    out = []
    for ctx in contexts:
        try:
            # the window varies; the prompt is what the output leaves of it
            changed = PlanRequest.from_mapping({**values, **fixed, "context": ctx, "prompt_tokens": None})
        except JobInputError:
            continue
        found = _same(replan(changed, [key]), option)
        if found is None:
            continue
        ttft = found.serving.ttft_s if found.serving and found.fits else None
        out.append(ContextPoint(ctx, found.memory_per_device_bytes, found.fits, ttft,
                                found.tokens_per_s if found.fits else 0.0))
    return out


def _quality(fmt: str) -> dict | None:
    """What the file costs in quality and what the next smaller one would (``catalog.quant_quality``), None
    where nothing is published for it."""
    here = quality(fmt)
    if here is None:
        return None
    nxt = next_smaller(fmt)
    there = quality(nxt) if nxt else None
    return {"format": fmt, "ppl_delta": here.ppl_delta, "model": here.model, "source": here.source,
            "next": nxt, "next_ppl_delta": there.ppl_delta if there else None}


def _pair(pair) -> list[float] | None:
    return None if pair is None else [pair[0], pair[1]]


def inference_summary(result, replan: Replan | None) -> dict | None:
    """The ``inference`` block of a plan's JSON: on the target option (the user's GPUs when there are any), time
    to first token for one request alone and for the batch arriving together, prefill, decode tokens/s in all
    and per request, the largest context that fits, and the context sweep on the option's own layout. A target
    the job does not fit gives no speed (``fits`` false): only what would fit it."""
    if result.request.workload != "inference":
        return None
    option = inference_target(result)
    if option is None or option.serving is None:
        return None
    s = option.serving
    lens = result.lengths
    batch = result.request.batch
    ok = option.fits and option.feasible
    return {"option": option.id, "owned": option.kind == "owned", "this_machine": option.this_machine,
            "fits": option.fits, "devices": option.devices, "accelerator_name": option.accelerator_name,
            "batch": batch, "context": result.context, "prompt_tokens": lens.prompt if lens else None,
            "output_tokens": lens.output if lens else None,
            "ttft_s": s.ttft_s if ok else None, "ttft_batch_arriving_together_s": s.ttft_s if ok else None,
            "ttft_single_request_s": s.ttft_single_request_s if ok else None,
            "software": s.software.to_json() if s.software is not None else None,
            "prefill_tokens_per_s": s.prefill_tokens_per_s if ok else None,
            "decode_tokens_per_s": option.tokens_per_s if ok else None,
            "decode_tokens_per_s_per_request": option.tokens_per_s / batch if ok else None,
            "ttft_s_interval": _pair(s.ttft_s_interval) if ok else None,
            "prefill_tokens_per_s_interval": _pair(s.prefill_tokens_per_s_interval) if ok else None,
            "decode_tokens_per_s_interval": _pair(option.tokens_per_s_interval) if ok else None,
            "largest_context": largest_context(result, option),
            "quality": _quality(s.software.weight_format.id) if s.software is not None else None,
            "context_sweep": [p.to_json() for p in context_sweep(result, replan, option)] if replan else []}
