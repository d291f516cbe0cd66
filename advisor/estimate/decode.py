"""Decode speed from a runtime's behaviours, and the published decode speeds its priors were set on.

A decode step on one device reads the weights and the KV cache and pays a per-layer overhead:
``t = W / (BW * eta) + KV / (BW * eta_kv) + layers * c`` (``compute.decode_estimate``), with ``eta`` the
backend's bandwidth efficiency for the weight format's class and ``c`` the per-layer launch and host
overhead (docs/method.md, "Runtimes, weight formats and backends"). Two model sizes decoded on one device
separate the two: ``t = a * (W / BW) + c * layers`` is linear in ``a = 1/eta`` and ``c``
(:func:`fit_decode`). The efficiencies in ``resources/runtimes.toml`` were set that way from the points in
``PUBLISHED``; the test suite checks that the file still reproduces them.

Every efficiency is at most 1 and every overhead at least 0, so no decode exceeds ``BW / bytes read``
(:func:`decode_bound_tokens_per_s`). This module reads numbers, never a runtime's name: the runtime and
backend of a point are labels of where it was measured.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from advisor.estimate import compute

GIB = 2**30
# llama.cpp's default physical micro-batch (n_ubatch, common/common.h): a prompt is processed in chunks of it,
# which pipeline parallelism (llama.cpp PR #6017) passes from device to device.
PIPELINE_CHUNK = 512


@dataclass(frozen=True)
class DecodePoint:
    """One published single-stream decode speed and what it was measured on.

    ``weight_bytes`` are the bytes of the model file (what a step reads); ``layers`` its transformer layers.
    """

    runtime: str
    backend: str
    weight_format: str
    model: str
    layers: int
    weight_bytes: float
    bandwidth_bps: float
    tokens_per_s: float
    source: str

    @property
    def step_s(self) -> float:
        return 1.0 / self.tokens_per_s

    @property
    def read_s(self) -> float:
        """The time to read the weights at the full bandwidth."""
        return self.weight_bytes / self.bandwidth_bps

    @property
    def eta_mem(self) -> float:
        """Achieved over peak bandwidth with no overhead: ``tokens/s * weight bytes / peak bandwidth``."""
        return self.tokens_per_s * self.weight_bytes / self.bandwidth_bps


_XD = "XiongjieDai/GPU-Benchmarks-on-LLM-Inference README (llama-bench, May 2024, tg512)"
_XD23 = "XiongjieDai/GPU-Benchmarks-on-LLM-Inference README (Dec 2023, mean TG)"
_EXL = "turboderp/exllamav2 README, Performance table (RTX 4090)"
# Bandwidths: RTX 4090 1008 GB/s, RTX 3090 936 GB/s (NVIDIA Ampere and Ada whitepapers); M2 Ultra 800 GB/s and
# M3 Max 400 GB/s (Apple press releases, June and October 2023). Llama 3 8B file sizes are the sources' own
# (Q4_K_M 4.58 GiB, F16 14.96 GiB); 70B Q4_K_M 39.59 GiB, F16 131.42 GiB. Two GPUs with llama.cpp's default
# layer split run one after the other, so a step reads the whole model at one GPU's bandwidth.
PUBLISHED: tuple[DecodePoint, ...] = (
    DecodePoint("llama.cpp", "cuda", "q4_k_m", "llama-3-8b", 32, 4.58 * GIB, 1008e9, 130.58, _XD + ", RTX 4090 8B Q4_K_M"),
    DecodePoint("llama.cpp", "cuda", "q4_k_m", "llama-3-70b", 80, 39.59 * GIB, 1008e9, 19.22,
                _XD + ", 2x RTX 4090 70B Q4_K_M (layer split: one GPU at a time)"),
    DecodePoint("llama.cpp", "cuda", "q4_k_m", "llama-3-8b", 32, 4.58 * GIB, 936e9, 115.42, _XD + ", RTX 3090 8B Q4_K_M"),
    DecodePoint("llama.cpp", "cuda", "q4_k_m", "llama-3-70b", 80, 39.59 * GIB, 936e9, 16.57,
                _XD + ", 2x RTX 3090 70B Q4_K_M (layer split)"),
    DecodePoint("llama.cpp", "cuda", "f16", "llama-3-8b", 32, 14.96 * GIB, 1008e9, 54.84, _XD + ", RTX 4090 8B F16"),
    DecodePoint("llama.cpp", "cuda", "f16", "llama-3-8b", 32, 14.96 * GIB, 936e9, 47.40, _XD + ", RTX 3090 8B F16"),
    DecodePoint("llama.cpp", "cuda", "q4_0", "llama-2-7b", 32, 3.56 * GIB, 1008e9, 149.41, _XD23 + ", RTX 4090 7B Q4_0"),
    DecodePoint("llama.cpp", "metal", "q4_k_m", "llama-3-8b", 32, 4.58 * GIB, 800e9, 78.81,
                _XD + ", M2 Ultra 76-core 8B Q4_K_M"),
    DecodePoint("llama.cpp", "metal", "q4_k_m", "llama-3-70b", 80, 39.59 * GIB, 800e9, 12.48,
                _XD + ", M2 Ultra 76-core 70B Q4_K_M"),
    DecodePoint("llama.cpp", "metal", "f16", "llama-3-8b", 32, 14.96 * GIB, 800e9, 36.90, _XD + ", M2 Ultra 8B F16"),
    DecodePoint("llama.cpp", "metal", "f16", "llama-3-70b", 80, 131.42 * GIB, 800e9, 4.76, _XD + ", M2 Ultra 70B F16"),
    DecodePoint("llama.cpp", "metal", "q4_k_m", "llama-3-8b", 32, 4.58 * GIB, 400e9, 48.97,
                _XD + ", M3 Max 40-core 8B Q4_K_M"),
    DecodePoint("llama.cpp", "metal", "f16", "llama-2-7b", 32, 12.55 * GIB, 800e9, 41.35,
                "llama.cpp PR #2891 (2023-09-01), M2 Ultra, llama2 7B F16 12.55 GiB, tg 64"),
    DecodePoint("llama.cpp", "metal", "q8_0", "llama-2-7b", 32, 6.67 * GIB, 800e9, 61.53,
                "llama.cpp PR #2891 (2023-09-01), M2 Ultra, llama2 7B Q8_0 6.67 GiB, tg 64"),
    DecodePoint("llama.cpp", "metal", "q6_k", "llama-2-7b", 32, 5.15 * GIB, 800e9, 67.42,
                "llama.cpp PR #2891 (2023-09-01), M2 Ultra, llama2 7B Q6_K 5.15 GiB, tg 64"),
    DecodePoint("llama.cpp", "metal", "q4_0", "llama-2-7b", 32, 3.56 * GIB, 800e9, 88.54,
                "llama.cpp PR #2917 (2023-08-30), M2 Ultra, LLaMA 7B Q4_0 3.56 GiB, tg 128"),
    DecodePoint("exllamav2", "cuda", "exl2-3.0", "llama-2-7b", 32, 6.74e9 * 3.0 / 8, 1008e9, 245.0, _EXL + ", Llama2 7B 3.0 bpw"),
    DecodePoint("exllamav2", "cuda", "exl2", "llama-2-7b", 32, 6.74e9 * 4.0 / 8, 1008e9, 207.0, _EXL + ", Llama2 7B 4.0 bpw"),
    DecodePoint("exllamav2", "cuda", "exl2-5.0", "llama-2-7b", 32, 6.74e9 * 5.0 / 8, 1008e9, 170.0, _EXL + ", Llama2 7B 5.0 bpw"),
    DecodePoint("exllamav2", "cuda", "exl2", "tinyllama-1.1b", 22, 1.1e9 * 4.0 / 8, 1008e9, 643.0,
                _EXL + ", TinyLlama 1.1B 4.0 bpw"),
    DecodePoint("exllamav2", "cuda", "exl2", "llama-2-70b", 80, 69e9 * 2.5 / 8, 1008e9, 37.0, _EXL + ", Llama2 70B 2.5 bpw"),
    DecodePoint("mlc", "metal", "q4f16_1", "llama-2-7b", 32, 6.74e9 * 4.5 / 8, 800e9, 89.0,
                "apache/tvm PR #15985 (2023-10-26), MLC on M2 Ultra, Llama2 7B q4f16_1: 89 tok/s"),
    DecodePoint("transformers", "cuda", "bf16", "llama-2-7b", 32, 6.74e9 * 2, 2039e9, 25.5,
                "PyTorch blog, Accelerating Generative AI with PyTorch II: GPT, Fast (2023-11-30): LLaMA-7B in eager "
                "PyTorch on an A100-80GB, 25.5 tok/s"),
)


def points(runtime: str, backend: str, formats: tuple[str, ...] | None = None) -> tuple[DecodePoint, ...]:
    """The published points of one runtime and backend (optionally of some formats)."""
    return tuple(p for p in PUBLISHED if p.runtime == runtime and p.backend == backend
                 and (formats is None or p.weight_format in formats))


def fit_decode(pts: tuple[DecodePoint, ...]) -> tuple[float, float]:
    """``(eta, overhead_per_layer_s)`` fitted by least squares on ``t = read_s / eta + layers * c``.

    Needs points of at least two layer counts (two model sizes); the fit is linear in ``1/eta`` and ``c``.
    Raises:
        ValueError: fewer than two distinct ``read_s / layers`` ratios, or a fit outside ``eta <= 1``, ``c >= 0``.
    """
    sxx = sum(p.read_s ** 2 for p in pts)
    syy = sum(p.layers ** 2 for p in pts)
    sxy = sum(p.read_s * p.layers for p in pts)
    sxt = sum(p.read_s * p.step_s for p in pts)
    syt = sum(p.layers * p.step_s for p in pts)
    det = sxx * syy - sxy * sxy
    if len(pts) < 2 or abs(det) <= 1e-12 * sxx * syy:
        raise ValueError("fit_decode: needs points of two model sizes")
    a = (sxt * syy - syt * sxy) / det
    c = (syt * sxx - sxt * sxy) / det
    if a < 1.0 or c < 0.0:
        raise ValueError(f"fit_decode: no physical fit (1/eta {a:.3f}, overhead {c:.2e} s per layer)")
    return 1.0 / a, c


def predicted_tokens_per_s(weight_bytes: float, bandwidth_bps: float, layers: int, eta: float,
                           overhead_per_layer_s: float) -> float:
    """Batch-1 decode speed with no KV cache: ``1 / (W / (BW * eta) + layers * c)``."""
    return 1.0 / (weight_bytes / (bandwidth_bps * eta) + layers * overhead_per_layer_s)


def measured_eta(profile_eta: float, profile_eta_f16: float, measured_eta_mem: float | None) -> tuple[float, str]:
    """The efficiency to use when this machine's read bandwidth was measured (the device-bandwidth probe).

    The measured figure replaces the backend's 16-bit efficiency and the format keeps its ratio to it.
    Returns:
        ``(eta, note)``; the profile's own ``eta`` and "" when nothing was measured.
    """
    if measured_eta_mem is None:
        return profile_eta, ""
    ratio = min(1.0, profile_eta / profile_eta_f16)
    eta = min(1.0, measured_eta_mem * ratio)
    return eta, f"measured bandwidth efficiency {measured_eta_mem:.2f} x format ratio {ratio:.2f}"


def decode_bound_tokens_per_s(bandwidth_bps: float, bytes_read_per_token: float) -> float:
    """The bound ``BW / bytes read per token``: no decode estimate may exceed it."""
    if not (bandwidth_bps > 0 and bytes_read_per_token > 0 and math.isfinite(bandwidth_bps)):
        raise ValueError("decode_bound_tokens_per_s: bandwidth and bytes must be positive")
    return bandwidth_bps / bytes_read_per_token


@dataclass(frozen=True)
class ServingSpeed:
    """The numbers a runtime's profile gives one model on one set of devices: everything a decode step or a
    prefill needs, with the runtime resolved away (the planner builds it; a serving model can reuse it).

    Attributes:
        weight_bytes: the stored weights (all devices together).
        active_fraction: active over total parameters (MoE; 1 for a dense model): a batch reads the experts it
            touches, ``1 - (1 - f)^B`` of the weights.
        kv_bytes_per_token: one sequence's cache bytes per cached token.
        active_params, layers, attention_dim: the model (``layers``: those that attend over the cache,
            ``estimate.model.attention_layers``; ``attention_dim`` = query heads x head size:
            ``estimate.model.attention_width``), whose attention FLOPs a decode step and a prompt count.
        devices: devices the weights and caches are split over (tensor parallel), read in parallel.
        bandwidth_bps: one device's peak memory bandwidth.
        eta_mem, eta_kv: bandwidth efficiency reading weights (the format's class) and the cache (16-bit class).
        overhead_s: per-step launch overhead (layers x the runtime's per-layer figure).
        prefill_overhead_s: what a prefill pass pays beyond ``overhead_s`` (kernels launched from the host where
            only decode batches run as CUDA graphs: ``planner.serve_spec.prefill_overhead_s``).
        matmul_peak_flops, matmul_eta: the peak the matrix multiplies run at and its share reached.
        attention_peak_flops, attention_eta: the same for attention (fp16 peak).
        layer_split: the devices hold whole layers and run in turn (llama.cpp's default split): a decode step
            reads at one device's bandwidth; a long prompt's chunks still flow through them in a pipeline.
        prompt_params: of ``active_params``, those a prompt token is multiplied by
            (``estimate.model.prompt_param_count``: not the embedding, nor the head, which makes a prompt's last
            logits only); None: all of them.
        prefill_eta_mem: the bandwidth efficiency of a prefill's weight read where it differs from the decode's
            (a prefill taught by the user's prompt tests, ``estimate.learned.serving_scale``); None: ``eta_mem``.
        unread_bytes: of ``weight_bytes``, what a step does not read (``memory.unread_weight_bytes``: a
            multimodal projector, run once per image; per-layer embeddings, a row per token).
    """

    weight_bytes: float
    active_fraction: float
    kv_bytes_per_token: float
    active_params: float
    layers: int
    attention_dim: float
    devices: int
    bandwidth_bps: float
    eta_mem: float
    eta_kv: float
    overhead_s: float
    matmul_peak_flops: float
    matmul_eta: float
    attention_peak_flops: float
    attention_eta: float
    layer_split: bool = False
    prefill_eta_mem: float | None = None
    unread_bytes: float = 0.0
    kv_replicas: float = 1.0  # devices over the parts the cache is split in: each GPU reads its copy of a replicated head
    prefill_overhead_s: float = 0.0
    prompt_params: float | None = None  # of active_params, those a prompt token is multiplied by; None: all


    @property
    def decode_devices(self) -> int:
        """Devices whose bandwidth a decode step adds up: one when they run in turn."""
        return 1 if self.layer_split else self.devices

    def weights_read(self, batch: int) -> float:
        """Weight bytes a step reads: all of them but ``unread_bytes``, or for MoE the experts a batch of ``batch``
        touches."""
        read = self.weight_bytes - self.unread_bytes
        if self.active_fraction >= 1.0:
            return read
        return read * (1.0 - (1.0 - self.active_fraction) ** batch)

    def decode(self, batch: int, mean_cache: float, prompt_tokens: int, output_tokens: int) -> compute.DecodeEstimate:
        """``compute.decode_estimate`` at ``batch`` sequences whose caches average ``mean_cache`` tokens, the
        prefill being the batch's prompts arriving together."""
        return compute.decode_estimate(
            weight_bytes_read=self.weights_read(batch),
            kv_bytes_read=self.kv_bytes_per_token * mean_cache * batch * self.kv_replicas,
            active_params=self.active_params, batch=batch, devices=self.decode_devices,
            mem_bandwidth_bps=self.bandwidth_bps,
            peak_flops=self.matmul_peak_flops, prompt_tokens=prompt_tokens, output_tokens=output_tokens,
            eta_mem=self.eta_mem, eta_compute=self.matmul_eta, overhead_s=self.overhead_s, eta_kv=self.eta_kv,
            attention_flops=4.0 * self.layers * self.attention_dim * mean_cache * batch,
            prefill_s=self.prefill_s(prompt_tokens, batch))

    def prefill_s(self, prompt_tokens: int, batch: int = 1) -> float:
        """Seconds to prefill ``batch`` prompts of ``prompt_tokens`` together: ``compute.prompt_seconds``, the one
        formula the serving model uses too, with the step's launch overhead and what a prefill pass adds to it.

        With whole layers per device the prompt flows through them in chunks of ``PIPELINE_CHUNK`` tokens
        (llama.cpp's default micro-batch): ``n`` chunks on ``D`` devices take ``(n + D - 1) / D`` chunk-times of
        the whole model (``compute.pipeline_share``), so one chunk gains nothing and a long prompt nearly ``D`` times.
        """
        n = self.decode_devices
        params = self.active_params if self.prompt_params is None else self.prompt_params
        mm, att = compute.prefill_flops(params, prompt_tokens, self.layers, self.attention_dim)
        share = compute.pipeline_share(batch * prompt_tokens, self.devices, PIPELINE_CHUNK) if self.layer_split \
            else 1.0
        eta_mem = self.eta_mem if self.prefill_eta_mem is None else self.prefill_eta_mem
        return compute.prompt_seconds(
            matmul_flops=batch * mm, attention_flops=batch * att,
            matmul_rate=n * self.matmul_peak_flops * self.matmul_eta,
            attention_rate=n * self.attention_peak_flops * self.attention_eta,
            weight_read_s=self.weights_read(batch * prompt_tokens) / (n * self.bandwidth_bps * eta_mem),
            share=share, overhead_s=self.overhead_s + self.prefill_overhead_s)

    def bound_tokens_per_s(self, batch: int, mean_cache: float) -> float:
        """The bandwidth bound at this batch: ``B * N * BW / (weights read + caches)``."""
        return batch * decode_bound_tokens_per_s(self.bandwidth_bps * self.decode_devices,
                                                 self.weights_read(batch)
                                                 + self.kv_bytes_per_token * mean_cache * batch * self.kv_replicas)
