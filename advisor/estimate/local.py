"""This machine as a target: the CPU, Apple Silicon's unified memory, and partial offload (llama.cpp's
``-ngl N``: N layers on the GPU, the rest on the CPU).

Decode is memory-bound at batch 1: every generated token reads the weights (and the KV cache) once,
so a token takes ``bytes / (bandwidth x efficiency)``; with layers split over two memories the two
reads happen one after the other (docs/method.md, "This machine: CPU, Apple Silicon, offload").

Priors: ``CPU_ETA_MEM`` is the share of the measured (triad) host bandwidth a CPU decode reaches;
``HOST_BANDWIDTH_PRIOR_BPS`` stands in until the host-bandwidth probe has run. Check figure: llama.cpp
issue #34 (comment of 2023-05-16): an i5-6500 measured at 20.0 GB/s decodes LLaMA-7B q4_0 at
253.7 ms per token (3.94 tokens/s); this model gives 0.8 x 20.0 GB/s / 3.79 GB = 4.2 tokens/s.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.estimate.memory import CUDA_CONTEXT_BYTES, kv_cache_bytes, weight_bits
from advisor.estimate.model import ModelArch, embedding_params
from advisor.estimate.priors import ETA_MEM_PRIOR

CPU_ETA_MEM = 0.80  # assumption: decode streams weights like a triad, less the work between reads
HOST_BANDWIDTH_PRIOR_BPS = 40e9  # assumption: dual-channel DDR4-3200 (51.2 GB/s peak), ~40 GB/s in a triad
CPU_FLOP_PER_CYCLE = 32  # FP32 per core per cycle with two 256-bit FMA units (AVX2): 2 x 8 lanes x 2
HOST_RESERVE_BYTES = 2 * 2**30  # assumption: RAM the OS and desktop keep while a model runs on the CPU


@dataclass(frozen=True)
class HostFigures:
    """What a CPU target is made of (from ``advisor detect`` and the host-bandwidth probe)."""

    memory_total_bytes: int
    physical_cores: int
    max_freq_hz: float | None = None
    bandwidth_bps: float | None = None  # measured (host-bandwidth probe); None: the prior
    bandwidth_origin: str = ""
    fp32_flops: float | None = None  # the fp32 matmul rate the training-step probe measured its MFU against
    fp32_origin: str = ""


def host_bandwidth(host: HostFigures) -> tuple[float, str]:
    """The host bandwidth to plan with and where it comes from (the measured figure, else the prior)."""
    if host.bandwidth_bps and host.bandwidth_bps > 0:
        return float(host.bandwidth_bps), host.bandwidth_origin or "measured (host-bandwidth probe)"
    return HOST_BANDWIDTH_PRIOR_BPS, ("prior: 40 GB/s (dual-channel DDR4-3200 in a triad); "
                                      "run 'advisor probe host-bandwidth' to measure this machine")


def cpu_peak_flops(host: HostFigures, flop_per_cycle: int = CPU_FLOP_PER_CYCLE) -> float | None:
    """FP32 peak of the CPU: the rate the training-step probe measured its utilisation against (one peak for the
    probe and the plan), else physical cores x clock x FLOP per cycle (None without a clock)."""
    if host.fp32_flops and host.fp32_flops > 0:
        return float(host.fp32_flops)
    if not host.max_freq_hz or host.physical_cores < 1:
        return None
    return host.physical_cores * host.max_freq_hz * flop_per_cycle


def usable_host_bytes(host: HostFigures, reserve_bytes: int = HOST_RESERVE_BYTES) -> int:
    """Host RAM a model may take on the CPU: total less what the OS keeps."""
    return max(0, int(host.memory_total_bytes) - reserve_bytes)


def memory_bound_tokens_per_s(bytes_per_token: float, bandwidth_bps: float, eta_mem: float) -> float:
    """Decode tokens/s at batch 1 when reading ``bytes_per_token`` bounds the step: ``eta x BW / bytes``."""
    if bytes_per_token <= 0 or bandwidth_bps <= 0 or not 0 < eta_mem <= 1:
        raise ValueError("bytes, bandwidth and efficiency must be positive (efficiency at most 1)")
    return eta_mem * bandwidth_bps / bytes_per_token


def cpu_decode_tokens_per_s(weight_bytes: float, kv_bytes: float, host: HostFigures,
                            eta_mem: float = CPU_ETA_MEM) -> float:
    """Decode tokens/s on the CPU (batch 1): ``CPU_ETA_MEM x host bandwidth / (weights + KV cache)``."""
    bw, _ = host_bandwidth(host)
    return memory_bound_tokens_per_s(weight_bytes + kv_bytes, bw, eta_mem)


def apple_decode_tokens_per_s(weight_bytes: float, kv_bytes: float, unified_bandwidth_bps: float,
                              eta_mem: float = ETA_MEM_PRIOR) -> float:
    """Decode tokens/s on Apple Silicon's GPU (batch 1) from the unified-memory bandwidth.

    The default efficiency is the decode prior (llama.cpp F16 on an M2 Ultra: 41.4 tokens/s for
    LLaMA-7B, 13.5 GB at 800 GB/s, about 0.70).
    """
    return memory_bound_tokens_per_s(weight_bytes + kv_bytes, unified_bandwidth_bps, eta_mem)


def unified_gpu_bytes(ram_bytes: int, gpu_share: float) -> int:
    """Unified memory the GPU may use: RAM x the share macOS allows (``Accelerator.gpu_memory_share``)."""
    if not 0 < gpu_share <= 1:
        raise ValueError(f"gpu share must be in (0, 1], got {gpu_share!r}")
    return int(ram_bytes * gpu_share)


# ------------------------------------------------------------------------------------------ offload
@dataclass(frozen=True)
class LayerSizes:
    """Bytes of one inference model, split the way llama.cpp offloads it."""

    layers: int
    layer_bytes: float  # weights of one repeating layer
    head_bytes: float  # output head + final norm, read every token (on the GPU only with every layer)
    embed_bytes: float  # token embedding (stays on the CPU; one row is read per token)
    kv_bytes_per_layer: float  # KV cache of one layer for the context and batch

    @property
    def total_bytes(self) -> float:
        return self.layers * (self.layer_bytes + self.kv_bytes_per_layer) + self.head_bytes + self.embed_bytes


def layer_sizes(arch: ModelArch, params: float, *, precision: str = "bf16", quant: str | None = None,
                context: int = 2048, batch: int = 1, kv_bytes_per_value: float = 2.0) -> LayerSizes:
    """Split a model's weights and KV cache into per-layer, head and embedding bytes.

    Weights take ``weight_bits(precision, quant)`` bits each; the embeddings are counted by
    ``model.embedding_params`` (an untied head is half of them).
    """
    bits = weight_bits(precision, quant)
    emb = embedding_params(arch)
    head = arch.vocab * arch.hidden if not arch.tied else 0
    token_embed = emb - head
    per_layer = (params - emb) / arch.layers
    kv = kv_cache_bytes(arch, context, batch, kv_bytes_per_value) / arch.layers
    return LayerSizes(layers=arch.layers, layer_bytes=per_layer * bits / 8, head_bytes=head * bits / 8,
                      embed_bytes=token_embed * bits / 8, kv_bytes_per_layer=kv)


@dataclass(frozen=True)
class OffloadPlan:
    """N layers on the GPU and the rest on the CPU: memory on each and the resulting decode speed."""

    gpu_layers: int
    layers: int
    gpu_bytes: int  # weights + KV of the GPU layers (+ head when all are there) + the CUDA context
    host_bytes: int  # the rest, in host RAM
    gpu_s_per_token: float
    cpu_s_per_token: float
    fits: bool  # both sides within their capacities

    @property
    def tokens_per_s(self) -> float:
        return 1.0 / (self.gpu_s_per_token + self.cpu_s_per_token)

    @property
    def flags(self) -> dict[str, int]:
        """The llama.cpp flag that applies it (``-ngl``/``--n-gpu-layers``), as the job's ``gpu_layers``."""
        return {"gpu_layers": self.gpu_layers}


def offload_plan(sizes: LayerSizes, gpu_layers: int, *, gpu_bandwidth_bps: float, cpu_bandwidth_bps: float,
                 gpu_capacity_bytes: int, host_capacity_bytes: int, eta_gpu: float = ETA_MEM_PRIOR,
                 eta_cpu: float = CPU_ETA_MEM, gpu_overhead_bytes: int = CUDA_CONTEXT_BYTES) -> OffloadPlan:
    """Memory and decode speed with ``gpu_layers`` of the model's layers on the GPU.

    GPU: ``n x (layer + KV)``, the head when ``n`` is every layer, and the CUDA context. CPU: the other
    layers with their KV cache, the token embedding, and the head otherwise. Per token the GPU reads
    its bytes at ``eta_gpu x GPU bandwidth``, then the CPU its bytes at ``eta_cpu x host bandwidth``.

    Raises:
        ValueError: ``gpu_layers`` outside 0..layers or a non-positive bandwidth.
    """
    if isinstance(gpu_layers, bool) or not isinstance(gpu_layers, int) or not 0 <= gpu_layers <= sizes.layers:
        raise ValueError(f"gpu_layers must be a whole number from 0 to {sizes.layers}, got {gpu_layers!r}")
    if gpu_bandwidth_bps <= 0 or cpu_bandwidth_bps <= 0:
        raise ValueError("bandwidths must be positive")
    per_layer = sizes.layer_bytes + sizes.kv_bytes_per_layer
    all_on_gpu = gpu_layers == sizes.layers
    gpu_read = gpu_layers * per_layer + (sizes.head_bytes if all_on_gpu else 0.0)
    cpu_layers = sizes.layers - gpu_layers
    cpu_read = cpu_layers * per_layer + (0.0 if all_on_gpu else sizes.head_bytes)
    gpu_bytes = int(gpu_read + (gpu_overhead_bytes if gpu_layers else 0))
    host_bytes = int(cpu_read + sizes.embed_bytes)
    gpu_s = gpu_read / (gpu_bandwidth_bps * eta_gpu)
    cpu_s = cpu_read / (cpu_bandwidth_bps * eta_cpu)
    fits = gpu_bytes <= gpu_capacity_bytes and host_bytes <= host_capacity_bytes
    return OffloadPlan(gpu_layers=gpu_layers, layers=sizes.layers, gpu_bytes=gpu_bytes, host_bytes=host_bytes,
                       gpu_s_per_token=gpu_s, cpu_s_per_token=cpu_s, fits=fits)


def most_gpu_layers(sizes: LayerSizes, **kw) -> OffloadPlan:
    """The plan with the most layers on the GPU that still fits (fastest, as GPU memory is faster);
    the all-CPU plan when not even that fits (``fits`` says so). Keyword arguments as ``offload_plan``."""
    best = offload_plan(sizes, 0, **kw)
    lo, hi = 0, sizes.layers
    while lo < hi:  # GPU bytes grow with n: binary search for the largest n whose GPU side fits
        mid = (lo + hi + 1) // 2
        if offload_plan(sizes, mid, **kw).gpu_bytes <= kw["gpu_capacity_bytes"]:
            lo = mid
        else:
            hi = mid - 1
    plan = offload_plan(sizes, lo, **kw)
    return plan if plan.fits or not best.fits else best


def sweep_offload(sizes: LayerSizes, **kw) -> list[OffloadPlan]:
    """Every split from 0 to all layers on the GPU (for a chart of tokens/s against ``gpu_layers``)."""
    return [offload_plan(sizes, n, **kw) for n in range(sizes.layers + 1)]
