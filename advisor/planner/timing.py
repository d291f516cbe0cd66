"""How fast one option runs the job: training from the fitted utilisation and the communication model, serving
from the decode roofline with the bandwidth efficiency of the weight format and runtime.

Training (docs/method.md, "Utilisation fitted on documented runs" and "Communication model"): datacenter
and TPU parts take the utilisation fitted on documented runs, fp8 as Amdahl's split (the blocks' linear layers at
the fp8 peak, the rest at the 16-bit peak, ``fp8_split``); consumer and workstation cards, MoE and QLoRA keep
their stated priors (the documented runs have none of them), and the option's note says so. A power limit below
the board's rated power lowers the peak (``compute.power_limited_fraction``).
The user's own runs on this accelerator (``estimate.learned``), else a training-step calibration of it, or the
user's ``--mfu``, replaces either. The link
slowdown of the option's node and fabric against the fitted clusters' scales the time, and the step's
split (compute, communication, bubble) is what the plan shows.

Serving (docs/method.md, "Runtimes, weight formats and backends"): the runtime profile on the accelerator's
backend gives the bandwidth efficiency of the weight format (at most 1), the per-step overhead (not negative)
and the prefill kernels, so no decode exceeds the bandwidth bound.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

from advisor.catalog import Accelerator
from advisor.catalog.runtimes import RuntimeChoice, runtime_data
from advisor.catalog.training_runs import bundled_utilisation_model
from advisor.estimate import comms, compute, decode, learned, memory
from advisor.estimate import utilisation as U
from advisor.estimate.model import (
    ModelArch,
    attention_layers,
    attention_width,
    embedding_params,
    prompt_share,
    routed_expert_active_params,
)
from advisor.estimate.priors import mfu_prior
from advisor.estimate.reach import Reach
from advisor.estimate.software import MFU_CEILING, host_passes, optimizer_step_bytes
from advisor.planner.layouts import MemoryModel, Parallelism
from advisor.planner.placement import Placement, intra_node_bps
from advisor.planner.record_job import record_job
from advisor.planner.request import Lengths, PlanRequest, compute_precision, runtime_choice, training_software
from advisor.planner.serve_spec import prefill_kernel, prefill_matmul_eta, prefill_overhead_s, step_overhead_s

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
def _fitted(model: U.UtilisationModel, generation: int, active_params: float, seq_len: int
            ) -> U.UtilisationEstimate:
    """The fitted utilisation of a run (``utilisation.predict_utilisation``), once per utilisation model (the
    stored one, or one in force: ``catalog.training_runs.utilisation_model_in_force``), plan's model and part."""
    return U.predict_utilisation(model, generation=generation, active_params=active_params, seq_len=seq_len)


@dataclass(frozen=True)
class Timing:
    """Speed of one option.

    Attributes:
        tokens_per_s: training tokens/s, or generated tokens/s of the batch.
        mfu, mfu_origin: the utilisation used (training) or achieved (serving), and where it comes from.
        source: ``fitted``, ``prior``, ``calibrated``, ``learned`` (the user's runs) or ``user`` (training);
            ``decode`` (serving).
        width_log: half-width of the 80 % interval in log space (time, throughput and cost alike).
        high_cap: the largest tokens/s the interval may reach (the bandwidth bound for a decode), or None.
        shares: the step's split ``{"compute", "communication", "bubble"}`` (fractions), None for serving or
            where the links cannot carry the layout.
        note: what the reader should know (a prior kept, a rate fallback).
        decode: the roofline of a serving option; eta_mem and eta_origin its bandwidth efficiency.
        ttft_width_log, prefill_width_log: 80 % half-widths of the first token and the prefill rate where the
            calibration set has them (``planner.calibrated``).
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
    ttft_width_log: float | None = None
    measured: bool = False  # the decode efficiency was measured here (the user's runs, the probe): kept as it is
    prefill_measured: bool = False  # the prefill was taught by the user's prompt-processing runs: kept as it is
    prefill_width_log: float | None = None
    software: RuntimeChoice | None = None  # the runtime profile a serving option assumes
    ttft_one_s: float | None = None  # time to first token of one request alone (serving)
    prompt_tokens: int = 0  # per request (serving)
    batch: int = 1  # requests decoding together (serving)
    speed: decode.ServingSpeed | None = None  # the runtime's numbers for this model and devices (serving)
    output_tokens: int = 0  # per request (serving)
    mean_cache: float = 0.0  # the mean cached tokens a decode step reads per request (serving)
    kv_capacity_tokens: int | None = None  # tokens of KV cache the devices hold after weights and reserve (serving)
    reach: Reach | None = None  # training: where the option lies against the calibrated runs (planner.calibrated)
    wall_high_log: float = 0.0  # training: how far above the clean time the wall time's range reaches (restarts)

    def with_(self, **changes) -> Timing:
        """A copy with ``changes``: ``dataclasses.replace`` without its per-field init (a plan makes a hundred
        of these, and ``replace`` was a tenth of its time). The names are checked against the fields."""
        unknown = changes.keys() - self.__dict__.keys()
        if unknown:
            raise TypeError(f"Timing.with_: unknown fields {sorted(unknown)}")
        out = object.__new__(Timing)
        out.__dict__.update(self.__dict__)
        out.__dict__.update(changes)
        return out

    def interval(self, value: float, *, inverse: bool = False) -> tuple[float, float]:
        """The 80 % interval of a figure that scales with the speed (``inverse``: with 1/speed, like hours)."""
        f = math.exp(self.width_log)
        low, high = value / f, value * f
        if inverse and self.wall_high_log > 0:  # a time's upper side: published totals ran this much longer
            high = max(high, value * math.exp(self.wall_high_log))
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
    if arch.is_moe:
        return "mixture-of-experts models"
    if req.workload == "qlora":
        return "QLoRA"
    return ""


def _utilisation(req, acc, arch, precision, calib, model, active, seq_len
                 ) -> tuple[float | None, str, str, str, float | None]:
    """``(mfu or None for the fitted one, origin, source, note, width or None)`` of a training option.

    Every figure then goes through ``utilisation.training_time`` as its utilisation, so all paths count the
    same FLOPs; the interval width follows the source (``Timing.width_log``). What was measured (the user's
    run records, else the training-step probe) comes from ``learned.training_utilisation``."""
    if req.mfu is not None:
        return req.mfu, "set by the user (--mfu)", "user", "", None
    found = learned.training_utilisation(calib, acc=acc, workload=req.workload, precision=precision,
                                         software=getattr(req, "framework", None), active_params=active,
                                         seq_len=seq_len, model=model,
                                         forward=lambda rec: forward_of(calib)(rec, acc, "training"))
    if found is not None:
        return found.value, found.origin, found.source, "", found.width_log
    why = _fitted_reason(req, acc, arch, precision)
    if why:
        # fp8 is timed as Amdahl's split over the 16-bit peak (``fp8_split``): the 16-bit utilisation applies
        split = precision == "fp8" and acc.peak_precision("fp8") == "fp8"
        prior = mfu_prior(acc.id, acc.kind, "bf16" if split else precision, moe=arch.is_moe, workload=req.workload)
        note = (f"utilisation: prior kept, the documented runs have none of {why}; "
                "its range is at least the fitted model's")
        return prior.mfu, f"prior: {prior.origin}", "prior", note, None
    return None, "", "fitted", "", None


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
    mfu, origin, source, note, width = _utilisation(req, acc, arch, precision, calib, model, active, seq_len)
    if source == "fitted":
        est = _fitted(model, _generation(acc.id), active, seq_len)
        mfu, origin = est.mfu, est.origin
    software = training_software(req)
    mfu, origin = framework_utilisation(mfu, origin, source, software)
    split = fp8_split(acc, arch, active, precision)
    clock = compute.power_limited_fraction(req.power_limit_w, acc.tdp_w)
    split["peak_flops"] *= clock  # a board below its rated power clocks its tensor units down
    base = dict(generation=_generation(acc.id) or 2020, active_params=active, layers=arch.layers,
                hidden=arch.hidden, seq_len=seq_len, devices=layout.devices, workload=req.workload,
                recompute=software.behaviours.checkpointing, calibrated_mfu=mfu, **split)
    shape = None
    if layout.devices == 1:
        tokens = 1e6
    else:
        shape = step_layout(req, layout, arch, params, seq_len)
        tokens = shape["micro_batch"] * seq_len * shape["microbatches"] * layout.dp
    # a measured or given utilisation (--mfu, the probe, the user's runs) is an effective one: it holds these already
    fixed = step_overhead(req, acc, arch, params, seq_len, layout, software, precision, tokens) \
        if source in ("fitted", "prior") else {}
    step = U.training_time(model, **base, tokens=tokens, **fixed)
    rate = acc.peak_precision(precision)
    if rate != precision:
        note = "; ".join(filter(None, [f"no {precision} units on {acc.name}: timed at the {rate} rate "
                                       f"(train in {rate})", note]))
    if clock < 1.0:
        limited = f"power limit {req.power_limit_w:g} W of {acc.tdp_w:g} W: tensor rate x{clock:.2f}"
        note = "; ".join(filter(None, [note, limited + ' (docs/method.md, "Power limit")']))
    if width is None:
        width = model.half_width_calibrated_log if source == "calibrated" else model.half_width_log
    return TrainingStep(step, shape, source, origin, note, width)


def fp8_split(acc: Accelerator, arch: ModelArch, active: int, precision: str) -> dict:
    """``peak_flops``, ``fp8_params`` and ``gemm_speedup`` of ``utilisation.training_time`` for a precision.

    fp8 training on a part with fp8 units runs the transformer blocks' linear layers (every active parameter but
    the embedding and output layer) at the fp8 peak and the rest at the 16-bit peak (Transformer Engine and
    torchao Float8 keep attention, norms, embedding and output layer in bf16); elsewhere one peak times it all.
    A mixture of experts' routed experts are counted at the 16-bit rate: their grouped products over a few
    hundred tokens each, with the dispatched tokens quantised on the way, gain little from fp8 (Megatron-Bridge's
    25.11 DeepSeek-V3 on 256 GB300s, one layout: 3,848 tokens/s per GPU in bf16, 4,357 in MXFP8, 1.13x;
    docs/method.md, "fp8 training").
    """
    if precision != "fp8" or acc.peak_precision("fp8") != "fp8":
        return dict(peak_flops=acc.peak_flops(precision), fp8_params=0.0, gemm_speedup=1.0)
    bf16 = acc.peak_flops("bf16")
    fp8 = active - embedding_params(arch) - routed_expert_active_params(arch)
    return dict(peak_flops=bf16, fp8_params=max(0.0, fp8), gemm_speedup=acc.peak_flops("fp8") / bf16)


def step_overhead(req: PlanRequest, acc: Accelerator, arch: ModelArch, params: int, seq_len: int,
                  layout: Parallelism, software, precision: str, tokens: float) -> dict[str, float]:
    """``{"host_s", "optimizer_s"}`` of ``tokens`` of training (``utilisation.training_time``): the framework's host
    time per layer over each device's micro-batches (``compute.host_seconds``), and an optimizer step every
    ``grad_accum`` micro-batches (the job's; 1, the frameworks' default; pretraining at least
    ``GLOBAL_BATCH_TOKENS``) over the device's shard of the trained parameters (``compute.optimizer_seconds``).
    The communication split keeps its own assumed global batch (``step_layout``)."""
    b = software.behaviours
    micro = tokens / (req.micro_batch * seq_len * layout.dp)
    trained = memory.lora_trainable_params(arch, req.lora_rank, req.lora_targets) if req.workload in ("lora", "qlora") else params
    shard = trained / (layout.tp * layout.pp) / (layout.dp if layout.zero >= 1 else 1)
    per_param = optimizer_step_bytes(req.optimizer, precision, arch.hidden, b)
    # pretraining batches are millions of tokens (GLOBAL_BATCH_TOKENS) whatever the job's accumulation
    floor = GLOBAL_BATCH_TOKENS.get(req.workload, 0) / (req.micro_batch * seq_len * layout.dp)
    accumulation = max(1.0, float(req.grad_accum), floor)
    host = compute.host_seconds(micro_batches=micro, layers=math.ceil(arch.layers / layout.pp),
                                host_s_per_layer=b.host_us_per_layer * 1e-6, passes=host_passes(b.checkpointing))
    opt = compute.optimizer_seconds(optimizer_steps=micro / accumulation, optimizer_bytes=shard * per_param,
                                    mem_bandwidth_bps=acc.mem_bandwidth_bps)
    return {"host_s": host, "optimizer_s": opt}


def framework_utilisation(mfu: float, origin: str, source: str, software) -> tuple[float, str]:
    """The utilisation with the framework's kernel efficiency applied (docs/method.md, "The training framework").

    The priors and the fitted model describe plain PyTorch or Megatron kernels (factor 1.0); a framework with
    faster kernels (Unsloth, Liger-Kernel) multiplies them, capped at ``MFU_CEILING``. A utilisation the user
    gave (``--mfu``) or one learned from the user's runs (made with the same framework) is taken as it is.
    """
    factor = software.behaviours.kernel_efficiency
    # a utilisation the user gave or learned from the user's runs with this framework holds its kernels already
    if source in ("user", "learned") or factor == 1.0:
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


def serving_timing(req: PlanRequest, acc: Accelerator, arch: ModelArch, params: int, active: int, lens: Lengths,
                   devices: int, calib, weight_bytes: int | None = None, *, decode_scale: float = 1.0,
                   prefill_scale: float = 1.0, projector_bytes: int = 0) -> Timing:
    """The speed of a serving option (docs/method.md, "Runtimes, weight formats and backends").

    The runtime's profile on the accelerator's backend (``request.runtime_choice``) gives the bandwidth
    efficiency of the weight format's class, the per-layer overhead of a step and the prefill kernels. A decode
    step at batch B reads the weights (the experts the batch touches, for MoE) and B caches at their mean length
    over the output, ``prompt + (output - 1) / 2`` (``compute.decode_estimate``); prefill runs the prompt's
    matrix multiplies at the runtime's kernel peak and counts its attention (``compute.prompt_seconds``).
    This machine's measured bandwidth efficiency replaces the backend's 16-bit figure for its accelerator.

    ``weight_bytes``: the exact bytes of the stored weights (a model file, or parameters x the format's bits).
    ``projector_bytes``: of them, a multimodal projector's, which a step does not read (``memory.unread_weight_bytes``).
    ``decode_scale``, ``prefill_scale``: factors on the runtime's published decode step (its bandwidth
    efficiencies, each capped at 1, and its launch time divided) and on its prefill kernels' efficiencies: the
    forward model the learner inverts (``record_forward``; ``calib`` None); the user's runs on this accelerator and
    runtime set them (``estimate.learned.serving_scale``).
    """
    choice = runtime_choice(req, acc)
    prof, fmt = choice.profile, choice.weight_format
    formats = runtime_data().formats

    def format_eta(fid: str) -> float:
        f = formats.get(fid)
        return prof.eta_for(f.cls) if f is not None and f.cls in dict(prof.decode_eta) else prof.eta_for("f16")

    # the user's decode benchmarks on this accelerator and runtime, else the device-bandwidth probe
    # (estimate.learned), else the runtime's published efficiency for the format's class
    base_width = bundled_utilisation_model().half_width_calibrated_log
    found = learned_speed(calib, acc, choice.runtime.id)
    if found is not None:
        decode_scale = found.value
    probe = None if found is not None else learned.decode_bandwidth_efficiency(
        calib, acc=acc, weight_format=fmt.id, format_eta=format_eta, base_width_log=base_width)
    scaled = (prof.eta_for(fmt.cls) if probe is None else probe.value) * decode_scale
    eta = min(1.0, scaled)
    found = found or probe
    eta_note = "" if found is None else found.origin
    # the KV cache is read as 16-bit data: at the 16-bit efficiency, moved by what was learned for the format
    eta_kv = min(1.0, prof.eta_for("f16") * scaled / prof.eta_for(fmt.cls))
    kv_value = memory.kv_value_bytes(req.kv_cache_bits, req.precision)
    # The matrix multiplies run at the quantised kernel's peak (llama.cpp's int8 MMQ on NVIDIA; the format's own
    # type for fp8 and W8A8; fp4 for NVFP4 on FP4 units, serve_spec.fp4_products) or at the 16-bit peak; the
    # attention at the fp16 peak.
    kernel = prefill_kernel(choice, compute_precision(req), acc)
    # a board held below its rated power (the job's power limit; rented instances have none) clocks its tensor
    # units down: the prompt's products slow as a training step's do; the decode reads memory and keeps its speed
    clock = compute.power_limited_fraction(req.power_limit_w, acc.tdp_w)
    mm_peak = (acc.peak_flops(kernel) or acc.peak_flops(req.precision)) * clock
    # the kernel's share of its peak, less the vector-unit work it does in series (BackendProfile.prefill_matmul_flops)
    chunk = min(decode.PIPELINE_CHUNK, lens.prompt * req.batch)
    mm_eta = prefill_matmul_eta(choice, kernel, mm_peak, acc, chunk, arch.is_moe) if mm_peak else prof.prefill_eta
    # the user's prompt-processing runs on this accelerator and runtime scale the prefill kernels (estimate.learned)
    pre = learned_speed(calib, acc, choice.runtime.id, "prefill")
    if pre is not None:
        prefill_scale = pre.value
    mm_eta = min(1.0, mm_eta * prefill_scale)
    if req.mfu is not None:
        mm_eta = req.mfu
    overhead = step_overhead_s(arch, choice, acc, devices) / decode_scale
    loaded = weight_bytes or memory.format_weight_bytes(arch, params, fmt.id)
    speed = decode.ServingSpeed(
        weight_bytes=loaded, unread_bytes=memory.unread_weight_bytes(arch, loaded, projector_bytes if weight_bytes else 0),
        active_fraction=active / params,
        kv_bytes_per_token=memory.kv_token_bytes(arch, kv_value), active_params=active,
        prompt_params=active * prompt_share(arch), layers=attention_layers(arch),
        attention_dim=attention_width(arch), devices=devices, bandwidth_bps=acc.mem_bandwidth_bps, eta_mem=eta,
        eta_kv=eta_kv, overhead_s=overhead, prefill_overhead_s=prefill_overhead_s(arch, choice, acc, devices),
        matmul_peak_flops=mm_peak, matmul_eta=mm_eta,
        attention_peak_flops=acc.peak_flops("fp16") * clock or mm_peak,
        attention_eta=min(1.0, prof.attention_eta * prefill_scale),
        layer_split=choice.runtime.multi_device == "layer",
        # a head is not split: with fewer KV heads than GPUs (MLA's latent: one) each GPU reads a whole copy
        kv_replicas=devices / memory.kv_shards(arch, devices, "llama.cpp" if choice.runtime.multi_device == "layer"
                                               else "exact"),
        # the prefill's factor moves its weight read too (a short prompt is held at it)
        prefill_eta_mem=None if prefill_scale == 1.0 else min(1.0, eta * prefill_scale))
    est = speed.decode(req.batch, lens.mean_cache, lens.prompt, lens.output)
    prefill_one = speed.prefill_s(lens.prompt, 1)
    tps = est.tokens_per_s
    # the utilisation is over the peak the products run at: fp4's where they run in fp4, else the request's
    peak = acc.peak_flops("fp4" if kernel == "fp4" else req.precision)
    mfu = 2.0 * active * tps / (peak * devices)
    rt = choice.runtime
    origin = "; ".join(filter(None, [
        f"achieved by the decode: 2 x active params x tokens/s over the peak; {rt.name} on {choice.backend} reads "
        f"{fmt.id} weights at {eta:.2f} of the bandwidth with {overhead * 1e3:.2f} ms a step of launch overhead",
        eta_note, "" if pre is None else pre.origin, f"({prof.source})"]))
    note = "" if choice.backend_supported else (f"{rt.name} has no {choice.backend} backend: timed with its "
                                                f"{prof.backend} figures")
    if kernel == "fp4":
        note = "; ".join(filter(None, [note, f"products in fp4: {fmt.id} weights and activations on {acc.name}'s FP4 "
                                             f"tensor units, {acc.peak_flops('fp4') / 1e12:,.0f} TFLOP/s dense "
                                             '(docs/method.md, "FP4 products")']))
    width = DECODE_WIDTH_LOG if found is None else found.width_log
    bound = speed.bound_tokens_per_s(req.batch, lens.mean_cache)  # eta = 1, no overhead
    return Timing(tokens_per_s=tps, mfu=mfu, mfu_origin=origin, source="decode", width_log=width,
                  high_cap=max(bound, tps), note=note, decode=est, eta_mem=eta, eta_origin=prof.source,
                  software=choice, ttft_one_s=prefill_one, prompt_tokens=lens.prompt, batch=req.batch,
                  speed=speed, measured=found is not None, prefill_measured=pre is not None,
                  prefill_width_log=None if pre is None else pre.width_log, output_tokens=lens.output,
                  mean_cache=lens.mean_cache)


def learned_timing(req: PlanRequest, acc: Accelerator, arch, params: int, active: int, lens: Lengths, devices: int,
                   weight_bytes: int | None, kept: str | tuple[str, ...], projector_bytes: int = 0, **fixed) -> Timing:
    """The plan's serving timing with parts at values the learner sets (``fixed``: ``decode_scale``,
    ``prefill_scale``) and nothing learned from the user's runs (``calib`` None): the timing, then the published
    fits for a part not being learned, the learned parts kept as measured (``kept``: ``measured``,
    ``prefill_measured`` or both), as ``calibrate_serving`` keeps them once learned. The forward model of
    ``record_forward`` and of a serving run's load (``one_request.request_speed``'s scales)."""
    from advisor.planner.calibrated import calibrate_serving  # it imports this module

    t = serving_timing(req, acc, arch, params, active, lens, devices, None, weight_bytes,
                       projector_bytes=projector_bytes, **fixed)
    return calibrate_serving(t.with_(**{k: True for k in ((kept,) if isinstance(kept, str) else kept)}), req, acc,
                             arch.is_moe)


def learned_speed(calib, acc: Accelerator, runtime_id: str, part: str = "decode") -> learned.Learned | None:
    """What the user's runs on ``acc`` with a runtime teach of one part of its speed (``part``: ``decode`` or
    ``prefill``; ``estimate.learned.serving_scale``: the factor on its published speed, with where it came from), or
    None: the one figure ``serving_timing`` plans with and ``advisor serve`` names ("Speed on ...: from your run")."""
    return learned.serving_scale(
        calib, acc=acc, runtime=runtime_id, figure=f"{part}_tokens_per_s", width_log=DECODE_WIDTH_LOG,
        base_width_log=bundled_utilisation_model().half_width_calibrated_log,
        forward=lambda rec: forward_of(calib)(rec, acc, part))


def forward_of(calib):
    """How the learner plans one of the user's runs (a record -> its forward model at an accelerator): the
    calibration's own rule where it has one (``store.calibration.Calibration.record_forward``: a serving benchmark's
    run through its load's plan), else the plan of the record's own job (``record_forward``)."""
    return getattr(calib, "record_forward", None) or record_forward


@functools.lru_cache(maxsize=256)
def _record_job(rec):
    return record_job(rec)


def record_forward(rec, acc: Accelerator, what: str):
    """The plan's figure for a run record's own job (``planner.record_job``) as a function of one efficiency,
    for the learner to invert (``estimate.learned.solve_increasing``), or None when the job cannot be planned.

    ``what``: ``decode`` (generated tokens/s at a factor on the runtime's decode step),
    ``prefill`` (prompt tokens/s at a factor on the prefill kernels' efficiencies) or ``training`` (training
    tokens/s at a utilisation, on the record's devices in one machine with their links).
    Each is the planner's own function with nothing learned in it (``calib`` None). A serving benchmark's run at
    its load teaches through that load's plan instead (``runs.load.record_forward``).
    """
    job = _record_job(rec)
    if job is None:
        return None
    req = job.request
    if what in ("decode", "prefill"):
        if job.lens is None:
            return None

        def served(kept: str, **fixed) -> Timing:
            return learned_timing(req, acc, job.arch, job.params, job.active, job.lens, rec.devices, job.weight_bytes,
                                  kept, **fixed)

        if what == "decode":
            return lambda k: served("measured", decode_scale=k).tokens_per_s
        return lambda k: job.lens.prompt * req.batch / served("prefill_measured", prefill_scale=k).decode.prefill_s
    if job.lens is not None:
        return None
    # laid out and placed as the planner lays out owned hardware of this count (``options.owned_options_for``):
    # the fewest devices that fit, at most the record's, on one machine's links
    seq_len = req.seq_len or rec.seq_len
    mem_model = MemoryModel(req, job.arch, job.params, seq_len, req.context or seq_len)
    layout, _, _ = mem_model.fewest_devices(acc.usable_memory_bytes, rec.devices, rec.devices)
    place = Placement(rec.devices, intra_node_bps(acc), None)

    def trained(u: float) -> float:
        ts = training_step(req.model_copy(update={"mfu": u}), acc, job.arch, job.params, job.active, seq_len,
                           layout, None)
        return training_timing(ts, place).tokens_per_s
    return trained
