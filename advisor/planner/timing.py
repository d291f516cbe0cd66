"""How fast one option runs the job: training from the fitted utilisation and the communication model, serving
from the decode roofline with the bandwidth efficiency of the weight format and runtime.

Training (docs/method.md, "Utilisation fitted on documented runs" and "Communication model"): datacenter
and TPU parts take the utilisation fitted on documented runs; consumer and workstation cards, fp8, MoE and
QLoRA keep their stated priors (the calibration set has no run of them), and the option's note says so.
A training-step calibration of this very accelerator, or the user's ``--mfu``, replaces either. The link
slowdown of the option's node and fabric against the fitted clusters' scales the time, and the step's
split (compute, communication, bubble) is what the plan shows.

Serving (docs/method.md, "Decode by format and runtime"): ``advisor.estimate.decode`` gives the bandwidth
efficiency of the weight format on the runtime, capped at 1, so no decode exceeds the bandwidth bound.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

from advisor.catalog import Accelerator
from advisor.catalog.training_runs import bundled_utilisation_model
from advisor.estimate import comms, compute, decode, memory
from advisor.estimate import utilisation as U
from advisor.estimate.model import ModelArch
from advisor.estimate.priors import ETA_COMPUTE_PRIOR, mfu_prior
from advisor.estimate.software import MFU_CEILING
from advisor.planner.layouts import Parallelism
from advisor.planner.placement import Placement
from advisor.planner.request import PlanRequest, compute_precision, training_software

# Tokens per optimizer step, for the communication split: 4M for pretraining (LLaMA-1, Touvron et al. 2023,
# table 2), 128 sequences of 2,048 tokens for fine-tuning (an assumption: a common fine-tuning batch).
GLOBAL_BATCH_TOKENS = {"pretrain": 2**22}
FINETUNE_BATCH_TOKENS = 2**18
# Serving: the documented range of the bandwidth efficiency, 0.55 to 0.8 around the published point
# (docs/method.md, "Inference speed"), as a geometric half-width.
DECODE_WIDTH_LOG = math.log(0.80 / 0.55) / 2.0
FITTED_KINDS = ("datacenter", "tpu")
_generation = functools.lru_cache(maxsize=None)(U.generation_of)


@functools.lru_cache(maxsize=1024)
def _fitted(generation: int, active_params: float, seq_len: int) -> U.UtilisationEstimate:
    """The fitted utilisation of a run (``utilisation.predict_utilisation``), once per plan's model and part."""
    return U.predict_utilisation(bundled_utilisation_model(), generation=generation, active_params=active_params,
                                 seq_len=seq_len)


@dataclass(frozen=True)
class Timing:
    """Speed of one option.

    Attributes:
        tokens_per_s: training tokens/s, or generated tokens/s of the batch.
        mfu, mfu_origin: the utilisation used (training) or achieved (serving), and where it comes from.
        source: ``fitted``, ``prior``, ``calibrated`` or ``user`` (training); ``decode`` (serving).
        width_log: half-width of the 80 % interval in log space (time, throughput and cost alike).
        high_cap: the largest tokens/s the interval may reach (the bandwidth bound for a decode), or None.
        shares: the step's split ``{"compute", "communication", "bubble"}`` (fractions), None for serving or
            where the links cannot carry the layout.
        note: what the reader should know (a prior kept, a rate fallback).
        decode: the roofline of a serving option; eta_mem and eta_origin its bandwidth efficiency.
    """

    tokens_per_s: float
    mfu: float
    mfu_origin: str
    source: str
    width_log: float
    high_cap: float | None = None
    shares: dict[str, float] | None = None
    note: str = ""
    decode: compute.DecodeEstimate | None = None
    eta_mem: float | None = None
    eta_origin: str = ""

    def interval(self, value: float, *, inverse: bool = False) -> tuple[float, float]:
        """The 80 % interval of a figure that scales with the speed (``inverse``: with 1/speed, like hours)."""
        f = math.exp(self.width_log)
        low, high = value / f, value * f
        if self.high_cap is not None and self.tokens_per_s > 0:
            cap = self.high_cap / self.tokens_per_s  # the most the speed may grow
            if inverse:
                low = max(low, value / cap)
            else:
                high = min(high, value * cap)
        return low, high


def _fitted_reason(req: PlanRequest, acc: Accelerator, arch: ModelArch, precision: str) -> str:
    """Why the fitted model does not apply ("" when it does)."""
    if acc.kind not in FITTED_KINDS or _generation(acc.id) is None:
        return f"{acc.kind} parts"
    if precision == "fp8":
        return "fp8 training"
    if arch.is_moe:
        return "mixture-of-experts models"
    if req.workload == "qlora":
        return "QLoRA"
    return ""


def _utilisation(req, acc, arch, precision, calib, model) -> tuple[float | None, str, str, str]:
    """``(mfu or None for the fitted one, origin, source, note)`` of a training option.

    Every figure then goes through ``utilisation.training_time`` as its utilisation, so all paths count the
    same FLOPs; the interval width follows the source (``Timing.width_log``)."""
    if req.mfu is not None:
        return req.mfu, "set by the user (--mfu)", "user", ""
    if calib is not None and calib.mfu and calib.applies_to(acc.id):
        return (calib.mfu, f"measured on this machine ({calib.source}, {calib.measured_at[:10]})", "calibrated", "")
    why = _fitted_reason(req, acc, arch, precision)
    if why:
        prior = mfu_prior(acc.id, acc.kind, precision, moe=arch.is_moe, workload=req.workload)
        note = (f"utilisation: prior kept, the documented runs have none of {why}; "
                "its range is at least the fitted model's")
        return prior.mfu, f"prior: {prior.origin}", "prior", note
    return None, "", "fitted", ""


def step_layout(req: PlanRequest, layout: Parallelism, arch: ModelArch, params: int, seq_len: int) -> dict:
    """The keyword arguments of ``comms.training_step_split`` for one layout (one optimizer step)."""
    target = GLOBAL_BATCH_TOKENS.get(req.workload, FINETUNE_BATCH_TOKENS)
    dp = layout.dp
    microbatches = max(1, math.ceil(target / (dp * req.micro_batch * seq_len)))
    moe_layers = arch.layers - arch.dense_layers if arch.is_moe else 0
    ep = max(1, min(arch.experts, dp)) if arch.is_moe else 1
    lora = req.workload in ("lora", "qlora")
    return dict(params=params, layers=arch.layers, hidden=arch.hidden, seq_len=seq_len, micro_batch=req.micro_batch,
                microbatches=microbatches, tp=layout.tp, pp=layout.pp, dp=dp, sharded=layout.zero == 3,
                # LoRA all-reduces only the adapters' gradients (about rank/hidden of the weights; negligible)
                grad_bytes_per_param=0.0 if lora else 2.0,
                moe_layers=moe_layers, top_k=arch.experts_per_token, ep=ep)


@dataclass(frozen=True)
class TrainingStep:
    """What a training layout costs on one accelerator before its links are known (``training_step``)."""

    step: U.TrainingTime  # one optimizer step at the utilisation, no link slowdown
    shape: dict | None  # the ``comms.training_step_split`` arguments; None on one device
    source: str
    origin: str
    note: str
    width_log: float
    references: dict = field(default_factory=dict, compare=False)  # reference links -> reference step time, s


def training_step(req: PlanRequest, acc: Accelerator, arch: ModelArch, params: int, active: int, seq_len: int,
                  layout: Parallelism, calib) -> TrainingStep:
    """The utilisation (fitted, prior, calibrated or the user's) and one optimizer step of a layout.

    ``T = tokens * f * (P_act + L*s*h) * r / (N * peak * u)`` (``utilisation.training_time``); every source goes
    through it, so all count the same FLOPs.
    """
    precision = compute_precision(req)
    model = bundled_utilisation_model()
    mfu, origin, source, note = _utilisation(req, acc, arch, precision, calib, model)
    if source == "fitted":
        est = _fitted(_generation(acc.id), active, seq_len)
        mfu, origin = est.mfu, est.origin
    software = training_software(req)
    mfu, origin = framework_utilisation(mfu, origin, source, software)
    base = dict(generation=_generation(acc.id) or 2020, active_params=active, layers=arch.layers,
                hidden=arch.hidden, seq_len=seq_len, devices=layout.devices, peak_flops=acc.peak_flops(precision),
                workload=req.workload, recompute=software.behaviours.checkpointing, calibrated_mfu=mfu)
    shape = None
    if layout.devices == 1:
        step = U.training_time(model, **base, tokens=1e6)
    else:
        shape = step_layout(req, layout, arch, params, seq_len)
        step = U.training_time(model, **base, tokens=shape["micro_batch"] * seq_len * shape["microbatches"] * layout.dp)
    rate = acc.peak_precision(precision)
    if rate != precision:
        note = "; ".join(filter(None, [f"no {precision} units on {acc.name}: timed at the {rate} rate "
                                       f"(train in {rate})", note]))
    width = model.half_width_calibrated_log if source == "calibrated" else model.half_width_log
    return TrainingStep(step, shape, source, origin, note, width)


def framework_utilisation(mfu: float, origin: str, source: str, software) -> tuple[float, str]:
    """The utilisation with the framework's kernel efficiency applied (docs/method.md, "The training framework").

    The priors and the fitted model describe plain PyTorch or Megatron kernels (factor 1.0); a framework with
    faster kernels (Unsloth, Liger-Kernel) multiplies them, capped at ``MFU_CEILING``. A utilisation the user
    gave (``--mfu``) is taken as it is.
    """
    factor = software.behaviours.kernel_efficiency
    if source == "user" or factor == 1.0:
        return mfu, origin
    scaled = min(MFU_CEILING, mfu * factor)
    capped = " (capped at the dense-matmul ceiling)" if scaled < mfu * factor else ""
    return scaled, f"{origin}; x{factor:g} for {software.profile.name}'s kernels{capped}"


def training_timing(ts: TrainingStep, place: Placement) -> Timing:
    """The speed of a training step on one node: slowed by ``comms.link_split`` where the node's links are
    slower than the fitted clusters' (docs/method.md, "Options that can run")."""
    step = ts.step
    if ts.shape is None:  # nothing to communicate: the whole step computes
        slowdown, shares = 1.0, {"compute": 1.0, "communication": 0.0, "bubble": 0.0}
    else:
        compute_s = step.hours * 3600.0
        links = comms.Links(place.intra_node_bps, place.inter_node_bps, place.devices_per_node)
        try:
            mine = comms.training_step_split(compute_s, links=links, **ts.shape)
        except ValueError:  # the layout leaves the node without a fabric: infeasible, timed on the reference links
            slowdown, shares = 1.0, None
        else:
            ref = comms.reference_links(links)
            ref_s = ts.references.get(ref)
            if ref_s is None:
                ref_s = ts.references[ref] = comms.training_step_split(compute_s, links=ref, **ts.shape).step_s
            # Links faster than the fitted clusters' never lift the utilisation above the fitted figure: those
            # runs are the good case, and the exposed-traffic model is too coarse to extrapolate upwards.
            slowdown, shares = max(1.0, mine.step_s / ref_s), mine.shares
    return Timing(tokens_per_s=step.tokens_per_s / slowdown, mfu=step.mfu, mfu_origin=ts.origin, source=ts.source,
                  width_log=ts.width_log, shares=shares, note=ts.note)


def default_runtime(acc: Accelerator) -> str:
    """The runtime a serving plan assumes when none is given: llama.cpp on consumer and workstation cards,
    vLLM on datacenter parts."""
    return "llama.cpp" if acc.kind in ("consumer", "workstation") else "vllm"


def serving_timing(req: PlanRequest, acc: Accelerator, arch: ModelArch, params: int, active: int, context: int,
                   devices: int, calib, weight_bytes: int | None = None) -> Timing:
    """The speed of a serving option from the decode roofline (``compute.decode_estimate``).

    ``weight_bytes``: the exact bytes of stored weights (a model file), else parameters x bits of the format.

    The bandwidth efficiency is that of the weight format on the runtime (``decode.decode_efficiency``);
    this machine's measured efficiency replaces the F16 figure for its accelerator.
    """
    peak = acc.peak_flops(req.precision)
    runtime = req.runtime or default_runtime(acc)
    measured = calib.eta_mem if calib is not None and calib.eta_mem and calib.applies_to(acc.id) else None
    eff = decode.decode_efficiency(decode.format_key(req.precision, req.quant), runtime, measured_eta_mem=measured)
    bits = memory.weight_bits(req.precision, req.quant)
    touched = 1.0
    if active < params:  # MoE: the experts a batch touches, 1 - (1 - k/E)^B
        touched = 1.0 - (1.0 - active / params) ** req.batch
    weight_read = (weight_bytes or params * bits / 8) * touched
    kv_read = memory.kv_cache_bytes(arch, context, req.batch, 1.0 if req.precision == "fp8" else 2.0)
    est = compute.decode_estimate(
        weight_bytes_read=weight_read, kv_bytes_read=kv_read, active_params=active, batch=req.batch, devices=devices,
        mem_bandwidth_bps=acc.mem_bandwidth_bps, peak_flops=peak, prompt_tokens=context,
        output_tokens=req.output_tokens, eta_mem=eff.eta_mem,
        eta_compute=req.mfu if req.mfu is not None else ETA_COMPUTE_PRIOR)
    tps = est.tokens_per_s
    mfu = 2.0 * active * tps / (peak * devices)
    origin = (f"achieved by the decode: 2 x active params x tokens/s over the peak; bandwidth efficiency "
              f"{eff.eta_mem:.2f} for {runtime} ({eff.origin})")
    width = bundled_utilisation_model().half_width_calibrated_log if measured else DECODE_WIDTH_LOG
    bound = req.batch * acc.mem_bandwidth_bps * devices / (weight_read + kv_read)  # eta = 1
    return Timing(tokens_per_s=tps, mfu=mfu, mfu_origin=origin, source="decode", width_log=width,
                  high_cap=max(bound, tps), decode=est, eta_mem=eff.eta_mem, eta_origin=eff.origin)
