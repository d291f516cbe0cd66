"""FLOPs, wall time, training throughput and the inference roofline.

Sources: Kaplan et al. 2020 / Chinchilla for ``C = 6*P*D``; Korthikanti et al. 2022 for the extra forward
of full recomputation; docs/method.md for the decode roofline and prefill.
"""

from __future__ import annotations

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
    """Attention score and value FLOPs per token for causal models, about ``6*L*s*h`` (docs/method.md).
    Not included in ``training_flops``; reported beside it."""
    return 6.0 * layers * seq_len * hidden


def recompute_factor(checkpointing: str) -> float:
    """Hardware FLOPs over model FLOPs: full recomputation adds one forward (8PD instead of 6PD)."""
    return 8.0 / 6.0 if checkpointing == "full" else 1.0


def training_seconds(flops: float, devices: int, peak_flops: float, mfu: float, checkpointing: str = "selective",
                     ) -> float:
    """Wall time ``T = C / (N * peak * MFU)``, longer by the recomputation factor for full checkpointing."""
    return flops * recompute_factor(checkpointing) / (devices * peak_flops * mfu)


def training_tokens_per_s(active_params: float, devices: int, peak_flops: float, mfu: float, workload: str,
                          checkpointing: str = "selective") -> float:
    """Training tokens per second: ``N * peak * MFU / (6 * P_act)`` (4 for LoRA/QLoRA)."""
    return devices * peak_flops * mfu / (flops_per_token(active_params, workload) * recompute_factor(checkpointing))


@dataclass(frozen=True)
class DecodeEstimate:
    """Roofline estimate of one decode step and of prefill for a batch."""

    step_s: float
    tokens_per_s: float  # generated tokens per second for the whole batch
    prefill_s: float
    bound: str  # "memory" or "compute"
    request_s: float  # one batch of requests: prefill + output tokens
    requests_per_s: float


def decode_estimate(*, weight_bytes_read: float, kv_bytes_read: float, active_params: float, batch: int,
                    devices: int, mem_bandwidth_bps: float, peak_flops: float, prompt_tokens: int,
                    output_tokens: int, eta_mem: float, eta_compute: float) -> DecodeEstimate:
    """Decode and prefill speed from the roofline (docs/method.md, "Inference speed").

    ``t = max(W / (BW*eta_mem), 2*P_act*B / (peak*eta_c)) + KV / (BW*eta_mem)`` per step, with the weights
    and KV cache split over ``devices`` read in parallel; tokens/s = B/t. At batch 1 the bound is
    ``BW / weight_bytes``: no estimate exceeds it because ``eta_mem <= 1``.
    Prefill is compute-bound: ``2 * P_act * s_in * B / (peak * eta_c)``.
    """
    bw = mem_bandwidth_bps * eta_mem * devices
    compute = peak_flops * eta_compute * devices
    t_mem = weight_bytes_read / bw
    t_compute = 2.0 * active_params * batch / compute
    step = max(t_mem, t_compute) + kv_bytes_read / bw
    prefill = 2.0 * active_params * prompt_tokens * batch / compute
    request = prefill + output_tokens * step
    return DecodeEstimate(step_s=step, tokens_per_s=batch / step, prefill_s=prefill,
                          bound="memory" if t_mem >= t_compute else "compute", request_s=request,
                          requests_per_s=batch / request)
