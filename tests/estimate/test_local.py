"""CPU and Apple Silicon decode rates and partial offload, against published llama.cpp figures and by hand."""

from __future__ import annotations

import pytest

from advisor.catalog import load_catalog
from advisor.estimate.local import (
    CPU_ETA_MEM,
    HOST_BANDWIDTH_PRIOR_BPS,
    HostFigures,
    apple_decode_tokens_per_s,
    cpu_decode_tokens_per_s,
    cpu_peak_flops,
    host_bandwidth,
    layer_sizes,
    memory_bound_tokens_per_s,
    most_gpu_layers,
    offload_plan,
    sweep_offload,
    unified_gpu_bytes,
    usable_host_bytes,
)
from advisor.estimate.memory import CUDA_CONTEXT_BYTES
from advisor.estimate.model import param_count

GIB = 2**30


@pytest.fixture(scope="module")
def llama7b():
    arch = load_catalog(use_user_file=False).model("llama-2-7b")
    return arch, param_count(arch)


def test_cpu_decode_within_25_percent_of_llama_cpp(llama7b):
    # llama.cpp issue #34 (2023-05-16): i5-6500, 20.0 GB/s measured, LLaMA-7B q4_0: 253.7 ms/token = 3.94 t/s.
    _, params = llama7b
    host = HostFigures(memory_total_bytes=16 * GIB, physical_cores=4, max_freq_hz=3.6e9, bandwidth_bps=20.0e9)
    tps = cpu_decode_tokens_per_s(params * 4.5 / 8, 0.0, host)  # q4_0: 4.5 bits per weight
    assert tps == pytest.approx(1000 / 253.7, rel=0.25)
    assert tps == pytest.approx(0.8 * 20.0e9 / (params * 4.5 / 8))


def test_apple_m2_ultra_f16_within_25_percent(llama7b):
    # llama.cpp discussion of Apple Silicon (M2 Ultra, 800 GB/s): LLaMA-7B F16 tg128 41.4 t/s.
    _, params = llama7b
    m2 = load_catalog(use_user_file=False).accelerator("m2-ultra")
    tps = apple_decode_tokens_per_s(params * 2, 0.0, m2.mem_bandwidth_bps)
    assert tps == pytest.approx(41.4, rel=0.25)
    assert m2.kind == "apple" and m2.usable_memory_bytes == int(192 * GIB * 0.75)
    assert unified_gpu_bytes(64 * GIB, 0.75) == 48 * GIB


def test_host_prior_until_measured():
    host = HostFigures(memory_total_bytes=32 * GIB, physical_cores=8, max_freq_hz=4.0e9)
    bw, origin = host_bandwidth(host)
    assert bw == HOST_BANDWIDTH_PRIOR_BPS and "prior" in origin and "probe" in origin
    assert cpu_peak_flops(host) == 8 * 4.0e9 * 32
    assert cpu_peak_flops(HostFigures(1, 1)) is None
    assert usable_host_bytes(host) == 30 * GIB
    with pytest.raises(ValueError):
        memory_bound_tokens_per_s(1.0, 1.0, 1.5)


def test_layer_sizes_add_up(llama7b):
    arch, params = llama7b
    s = layer_sizes(arch, params, precision="fp16", context=1024)
    kv = 2 * 32 * 32 * 128 * 2 * 1024  # 2 x L x n_kv x d_h x 2 bytes x context
    assert s.layers == 32 and s.kv_bytes_per_layer * 32 == pytest.approx(kv)
    assert s.head_bytes == pytest.approx(32000 * 4096 * 2)
    assert s.total_bytes == pytest.approx(params * 2 + kv)


def test_offload_by_hand(llama7b):
    arch, params = llama7b
    s = layer_sizes(arch, params, precision="fp16", context=1024)
    kw = dict(gpu_bandwidth_bps=256e9, cpu_bandwidth_bps=40e9, gpu_capacity_bytes=8 * GIB,
              host_capacity_bytes=30 * GIB)
    p = offload_plan(s, 10, **kw)
    per_layer = s.layer_bytes + s.kv_bytes_per_layer
    assert p.gpu_bytes == int(10 * per_layer + CUDA_CONTEXT_BYTES)
    assert p.host_bytes == int(22 * per_layer + s.head_bytes + s.embed_bytes)
    t = 10 * per_layer / (256e9 * 0.7) + (22 * per_layer + s.head_bytes) / (40e9 * CPU_ETA_MEM)
    assert p.tokens_per_s == pytest.approx(1 / t)
    assert p.fits and p.flags == {"gpu_layers": 10}
    best = most_gpu_layers(s, **kw)
    assert best.fits and not offload_plan(s, best.gpu_layers + 1, **kw).gpu_bytes <= 8 * GIB
    speeds = [q.tokens_per_s for q in sweep_offload(s, **kw)]
    assert speeds == sorted(speeds)  # more layers on the faster memory, more tokens/s
    with pytest.raises(ValueError):
        offload_plan(s, 33, **kw)
