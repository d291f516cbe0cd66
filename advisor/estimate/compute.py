"""FLOPs, wall time, training throughput and the inference roofline.

Sources: Kaplan et al. 2020 / Chinchilla for ``C = 6*P*D``; Korthikanti et al. 2022 for the extra forward
of full recomputation; docs/method.md for the decode roofline and prefill.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

SECONDS_PER_HOUR = 3600.0


def training_flops(active_params: float, tokens: float, workload: str = "pretrain") -> float:
    """Model FLOPs of a training budget: ``6 * P_act * D`` (forward 2, backward 4).

    LoRA and QLoRA skip the weight gradients of the frozen base: forward 2 plus activation gradients 2,
    ``4 * P_act * D`` (adapter FLOPs are negligible).
    """
    per_token = 4.0 if workload in ("lora", "qlora") else 6.0
    return per_token * active_params * tokens


def flops_per_token(active_params: float, workload: str) -> float:
    """Model FLOPs per trained token (see ``training_flops``); ``2 * P_act`` per generated token for inference."""
    if workload == "inference":
        return 2.0 * active_params
    return training_flops(active_params, 1.0, workload)


def attention_flops_per_token(layers: int, seq_len: int, hidden: int) -> float:
    """Attention score and value FLOPs per token for causal models, about ``6*L*s*h`` (docs/method.md), ``L`` the
    layers that attend (``model.attention_layers``: a hybrid's linear layers score no pairs).
    Not included in ``training_flops``; reported beside it."""
    return 6.0 * layers * seq_len * hidden


def recompute_factor(checkpointing: str, workload: str = "pretrain") -> float:
    """Hardware FLOPs over model FLOPs: full recomputation adds one forward, ``2 * P`` a token, to the ``f * P`` of
    a step: ``(f + 2) / f``, 8/6 for full training (8PD instead of 6PD) and 6/4 for LoRA and QLoRA, whose step is
    ``4 * P`` (no weight gradients of the frozen base) but whose forward is as long."""
    if checkpointing != "full":
        return 1.0
    f = flops_per_token(1.0, workload)
    return (f + 2.0) / f


def training_seconds(flops: float, devices: int, peak_flops: float, mfu: float, checkpointing: str = "selective",
                     ) -> float:
    """Wall time ``T = C / (N * peak * MFU)``, longer by the recomputation factor for full checkpointing."""
    return flops * recompute_factor(checkpointing) / (devices * peak_flops * mfu)


def training_tokens_per_s(active_params: float, devices: int, peak_flops: float, mfu: float, workload: str,
                          checkpointing: str = "selective") -> float:
    """Training tokens per second: ``N * peak * MFU / (6 * P_act)`` (4 for LoRA/QLoRA)."""
    return devices * peak_flops * mfu / (flops_per_token(active_params, workload)
                                         * recompute_factor(checkpointing, workload))


# The share of the peak memory bandwidth a streaming element-wise kernel (an optimizer step) reaches: an
# assumption, as STREAM-like copies reach 80 to 90 % on NVIDIA datacenter GPUs (docs/method.md).
OPTIMIZER_BANDWIDTH_ETA = 0.8


def host_seconds(*, micro_batches: float, layers: int, host_s_per_layer: float, passes: int) -> float:
    """Host time of issuing the kernels: ``micro_batches * layers * passes * host`` (``layers`` on one device)."""
    return micro_batches * layers * passes * host_s_per_layer


def optimizer_seconds(*, optimizer_steps: float, optimizer_bytes: float, mem_bandwidth_bps: float) -> float:
    """``optimizer_steps * bytes / (BW * OPTIMIZER_BANDWIDTH_ETA)``: each optimizer step streams the device's shard
    of the trained parameters' weights, gradients and moments through memory (``software.optimizer_step_bytes``)."""
    return optimizer_steps * optimizer_bytes / (mem_bandwidth_bps * OPTIMIZER_BANDWIDTH_ETA)


def exposed_host_seconds(host_s: float, compute_s: float) -> float:
    """The part of the host time the GPU waits for: ``H^2 / (H + C)``, so that ``C + H^2/(H + C)`` is a smooth
    maximum of the compute ``C`` and the host time ``H`` (docs/method.md, "Training speed"): the host hides behind
    long kernels (``C >> H``: ``C``), the GPU waits on a slow host (``H >> C``: ``H``), and half the host time
    shows when the two are equal, as short launches and kernels alternate."""
    if host_s <= 0.0:
        return 0.0
    return host_s * host_s / (host_s + max(0.0, compute_s))


@dataclass(frozen=True)
class DecodeEstimate:
    """Roofline estimate of one decode step and of prefill for a batch."""

    step_s: float
    tokens_per_s: float  # generated tokens per second for the whole batch
    prefill_s: float  # the batch's prompts arriving together
    bound: str  # "memory" or "compute"
    request_s: float  # one batch of requests: prefill + output tokens
    requests_per_s: float
    overhead_s: float = 0.0  # the per-step launch overhead inside ``step_s``


# Sustained int8 tensor operations per joule of board power: a part runs its int8 units at the lesser of its
# datasheet peak and this times its TDP. From llama.cpp's int8 (MMQ) prompt rates on the RTX 6000 Ada (300 W) and
# the RTX 4090 (450 W), the same AD102 die: Llama 3 8B Q4_K_M pp512 5,792 and 7,139 tokens/s
# (XiongjieDai/GPU-Benchmarks-on-LLM-Inference, May 2024), 0.74 of the 4090's rate per datasheet operation, so the
# 6000 Ada sustains about 0.74 x 728.5 TOPS = 540 TOPS on 300 W (docs/method.md, "Inference speed").
INT8_OPS_PER_JOULE = 1.8e12
# The same for fp16 tensor work with fp16 accumulation (llama.cpp's cuBLAS path, which reaches 0.5 of its peak where
# power does not bind: RTX 4090 and 3090 F16 pp512, 0.46 and 0.50). llama-bench pp512 of the F16 and dequantised
# Q4_K_M prompts (XiongjieDai/GPU-Benchmarks-on-LLM-Inference, May 2024) put the 300 W RTX 6000 Ada at 0.71 of the
# 450 W RTX 4090, the same die (122 TFLOP/s at F16, so a sustained peak near 250) and the 350 W H100 PCIe at
# 0.23-0.31 of its 756 TFLOP/s peak: about 0.85e12 FLOP per joule, half the int8 figure.
FP16ACC_FLOPS_PER_JOULE = 0.85e12
_PER_JOULE = {"int8": INT8_OPS_PER_JOULE, "fp16acc": FP16ACC_FLOPS_PER_JOULE}


def power_capped_flops(peak_flops: float, tdp_w: float | None, kernel: str) -> float:
    """The sustained rate of a kernel type: ``min(peak, ops per joule * TDP)`` for int8 and for fp16 with fp16
    accumulation, else the peak.

    A board that cannot feed its tensor units at the datasheet clock within its power limit lowers the clock;
    the bf16 and fp16 paths with fp32 accumulation and the fp8 path keep their datasheet peak (no figure in the
    calibration set bounds them).
    """
    per_joule = _PER_JOULE.get(kernel)
    if per_joule is None or not tdp_w or tdp_w <= 0:
        return peak_flops
    return min(peak_flops, per_joule * tdp_w)


# A board run below its rated power: the tensor units clock down, and the rate falls less than the power
# (dynamic power ~ f*V^2, and the voltage drops with the clock). ``rate = peak * (limit / TDP) ** a``, with ``a``
# from the same AD102 pair as ``INT8_OPS_PER_JOULE``: at the RTX 4090's power per operation (450 W for 660.6
# dense int8 TOPS) the RTX 6000 Ada's 728.5 TOPS would need 496 W; on its 300 W (0.605 of that) it sustains
# 0.736 of its datasheet rate, so ``a = ln 0.736 / ln 0.605 = 0.61``. An H100 SXM at a 500 W limit (Meta's
# Grand Teton default, torchtitan benchmarks/llama3_h100_202412_torchtitan.md, 2024-12) gets (500/700)^0.61 = 0.81.
POWER_CLOCK_EXPONENT = 0.61


def power_limited_fraction(limit_w: float | None, tdp_w: float | None) -> float:
    """The share of its datasheet tensor rate a board sustains at a power limit ``limit_w`` below its ``tdp_w``:
    ``(limit / TDP) ** POWER_CLOCK_EXPONENT`` (1 without a limit, a TDP, or a limit at or above the TDP)."""
    if not limit_w or not tdp_w or tdp_w <= 0 or limit_w >= tdp_w:
        return 1.0
    return (limit_w / tdp_w) ** POWER_CLOCK_EXPONENT


def prefill_flops(active_params: float, prompt_tokens: int, layers: int, attention_dim: float) -> tuple[float, float]:
    """``(matmul FLOPs, attention FLOPs)`` of one causal prompt of ``P`` tokens.

    Matrix multiplies: ``2 * P_act * P`` (Kaplan et al. 2020, table 1: 2N per token forward). Attention: the
    token at position ``i`` scores ``i`` keys (``2 * i * d`` FLOPs, ``d`` = heads x head size) and sums ``i``
    values (``2 * i * d``) in each layer; summed over ``i = 1..P`` that is ``2 * L * d * P * (P + 1)``, the
    causal half of Kaplan's non-causal ``4 * L * d * P`` per token (docs/method.md, "Inference speed").
    """
    p = float(prompt_tokens)
    return 2.0 * active_params * p, 2.0 * layers * attention_dim * p * (p + 1.0)


def pipeline_share(prompt_tokens: float, devices: int, chunk: int) -> float:
    """The share of a prompt's one-device compute time it takes flowing through ``devices`` that hold whole layers
    in chunks of ``chunk`` tokens (llama.cpp's pipeline): ``n`` chunks take ``(n + D - 1) / D`` chunk-times of
    the whole model, so one chunk gains nothing and a long prompt nearly ``D`` times; 1 on one device."""
    if devices <= 1:
        return 1.0
    chunks = max(1, math.ceil(prompt_tokens / chunk))
    return (chunks + devices - 1) / (devices * chunks)


def prompt_pass_s(compute_s: float, weight_read_s: float) -> float:
    """A prefill pass's arithmetic (``compute_s``) and its one read of the weights (``weight_read_s``) in series:
    their sum, not their ``max`` (docs/method.md, "Inference speed", the prefill pass). A prompt's products have as
    many rows as it has tokens; at a few hundred tokens that is one or two rows of the kernels' output tiles
    (cuBLAS and CUTLASS tile 64-256 rows), each tile streams its panel of the weights once, and the reads are not
    hidden behind other tiles' arithmetic, so near the ridge the two add (LMDeploy's A100 runs: 128 prompt tokens
    add 11 ms to a 7B model's first token, its arithmetic alone is 9 ms). Far from the ridge the shorter one is a
    small part of the sum (a 2,048-token prompt on an A100: the weights' read is 6 % of a 7B pass)."""
    return compute_s + weight_read_s


def prompt_seconds(*, matmul_flops: float, attention_flops: float, matmul_rate: float, attention_rate: float,
                   weight_read_s: float, share: float = 1.0, overhead_s: float = 0.0) -> float:
    """The one formula of a prompt's time, for the plan and the serving model alike
    (docs/method.md, "Inference speed"): its matrix multiplies and attention at their rates (FLOP/s of every device
    working on them), times the pipeline's ``share``, in series with one read of the weights (``prompt_pass_s``),
    plus the step's fixed cost."""
    t = (matmul_flops / matmul_rate + attention_flops / attention_rate) * share
    return prompt_pass_s(t, weight_read_s) + overhead_s


def decode_estimate(*, weight_bytes_read: float, kv_bytes_read: float, active_params: float, batch: int,
                    devices: int, mem_bandwidth_bps: float, peak_flops: float, prompt_tokens: int,
                    output_tokens: int, eta_mem: float, eta_compute: float, overhead_s: float = 0.0,
                    eta_kv: float | None = None, attention_flops: float = 0.0,
                    prefill_s: float | None = None) -> DecodeEstimate:
    """Decode and prefill speed from the roofline (docs/method.md, "Inference speed").

    ``t = max(W / (BW*eta_mem), (2*P_act*B + A) / (peak*eta_c)) + KV / (BW*eta_kv) + overhead`` per step, with
    the weights and KV cache split over ``devices`` read in parallel; ``KV`` is the batch's caches at their mean
    length over the output, ``A`` their attention FLOPs, ``overhead`` the runtime's per-step launch cost;
    tokens/s = B/t. No estimate exceeds ``B * BW / (W + KV)`` because ``eta_mem, eta_kv <= 1`` and the
    overhead is not negative.
    ``prefill_s``: the prompt's time (``prompt_seconds``); without it ``2 * P_act * s_in * B / (peak * eta_c)``.
    """
    bw = mem_bandwidth_bps * eta_mem * devices
    bw_kv = mem_bandwidth_bps * (eta_mem if eta_kv is None else eta_kv) * devices
    compute = peak_flops * eta_compute * devices
    t_mem = weight_bytes_read / bw
    t_compute = (2.0 * active_params * batch + attention_flops) / compute
    step = max(t_mem, t_compute) + kv_bytes_read / bw_kv + overhead_s
    prefill = 2.0 * active_params * prompt_tokens * batch / compute if prefill_s is None else prefill_s
    request = prefill + output_tokens * step
    return DecodeEstimate(step_s=step, tokens_per_s=batch / step, prefill_s=prefill,
                          bound="memory" if t_mem >= t_compute else "compute", request_s=request,
                          requests_per_s=batch / request, overhead_s=overhead_s)
