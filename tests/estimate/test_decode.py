"""Decode speed from runtime behaviours: the published points reproduced by resources/runtimes.toml, the fit that
set them, and no decode above the bandwidth bound."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from advisor.catalog.runtimes import CLASSES, runtime_data
from advisor.estimate.compute import decode_estimate
from advisor.estimate.decode import (
    GIB,
    PUBLISHED,
    ServingSpeed,
    decode_bound_tokens_per_s,
    fit_decode,
    measured_eta,
    points,
    predicted_tokens_per_s,
)

DATA = runtime_data()
PROFILES = [b for rt in DATA.runtimes.values() for b in rt.backends]


def _predicted(p):
    prof = DATA.runtimes[p.runtime].backend(p.backend)
    eta = prof.eta_for(DATA.formats[p.weight_format].cls)
    return predicted_tokens_per_s(p.weight_bytes, p.bandwidth_bps, p.layers, eta, prof.overhead_per_layer_s)


@pytest.mark.parametrize("p", PUBLISHED, ids=lambda p: f"{p.runtime}-{p.backend}-{p.model}-{p.weight_format}-{p.bandwidth_bps:.0e}")
def test_every_published_point_is_reproduced_by_the_runtime_profile(p):
    # The profiles were fitted on these points: each within 8 % (the worst, TinyLlama on EXL2, is +7.3 %).
    assert _predicted(p) == pytest.approx(p.tokens_per_s, rel=0.08)


def test_llama_cpp_cuda_q4_fit_gives_the_profile():
    # Four points, two model sizes on two GPUs: t = (W/BW)/eta + layers*c. Hand check on the 4090 pair alone:
    # 8B: 4.58 GiB / 1008 GB/s = 4.879 ms, t = 7.658 ms; 70B: 42.17 ms, t = 52.03 ms -> eta 0.911, c 72 us.
    eta, c = fit_decode(points("llama.cpp", "cuda", ("q4_k_m",))[:2])
    assert eta == pytest.approx(0.911, abs=0.002) and c == pytest.approx(72e-6, abs=1e-6)
    eta4, c4 = fit_decode(points("llama.cpp", "cuda", ("q4_k_m",)))
    prof = DATA.runtimes["llama.cpp"].backend("cuda")
    assert prof.eta_for("q4") == pytest.approx(eta4, abs=0.01)
    assert prof.overhead_per_layer_s == pytest.approx(c4, abs=2e-6)


@pytest.mark.parametrize(("runtime", "backend", "formats", "cls"), [
    ("llama.cpp", "metal", ("q4_k_m",), "q4"), ("llama.cpp", "metal", ("f16",), "f16"),
    ("exllamav2", "cuda", None, "q4")])
def test_other_fits_give_the_profiles(runtime, backend, formats, cls):
    pts = points(runtime, backend, formats)
    pts = tuple(p for p in pts if p.model.startswith(("llama-3", "llama-2-70b", "tinyllama")) or runtime == "exllamav2")
    eta, c = fit_decode(pts)
    prof = DATA.runtimes[runtime].backend(backend)
    assert prof.eta_for(cls) == pytest.approx(eta, abs=0.015)
    assert prof.overhead_per_layer_s == pytest.approx(c, rel=0.1)


def test_transformers_generate_is_launch_bound():
    # gpt-fast's eager baseline: 25.5 tokens/s for LLaMA-7B on an A100 where the weights alone allow 151.
    p = points("transformers", "cuda")[0]
    assert p.bandwidth_bps / p.weight_bytes > 150
    prof = DATA.runtimes["transformers"].backend("cuda")
    assert p.layers * prof.overhead_per_layer_s > 0.8 / p.tokens_per_s  # the overhead is most of the step


def test_fit_needs_two_sizes():
    one = points("llama.cpp", "cuda", ("q4_k_m",))[:1]
    with pytest.raises(ValueError):
        fit_decode(one)


def test_measured_bandwidth_keeps_the_format_ratio():
    eta, note = measured_eta(0.78, 0.89, 0.8)
    assert eta == pytest.approx(0.8 * 0.78 / 0.89) and "measured" in note
    assert measured_eta(0.78, 0.89, None) == (0.78, "")


def test_every_profile_efficiency_is_a_fraction_and_overheads_are_not_negative():
    for prof in PROFILES:
        assert all(0.0 < eta <= 1.0 for _, eta in prof.decode_eta)
        assert prof.overhead_per_layer_s >= 0.0


@given(st.sampled_from(PROFILES), st.sampled_from(CLASSES), st.floats(1e8, 1e12), st.floats(1e10, 1e13),
       st.integers(1, 512), st.floats(0.0, 1e11), st.integers(1, 8), st.integers(1, 128),
       st.one_of(st.none(), st.floats(0.05, 1.0)))
def test_decode_never_exceeds_the_bandwidth_bound(prof, cls, weight_bytes, bandwidth, batch, kv_bytes, devices,
                                                  layers, measured):
    etas = dict(prof.decode_eta)
    eta, _ = measured_eta(etas.get(cls, etas["f16"]), etas["f16"], measured)
    eta_kv, _ = measured_eta(etas["f16"], etas["f16"], measured)
    est = decode_estimate(weight_bytes_read=weight_bytes, kv_bytes_read=kv_bytes, active_params=weight_bytes,
                          batch=batch, devices=devices, mem_bandwidth_bps=bandwidth, peak_flops=1e15,
                          prompt_tokens=16, output_tokens=16, eta_mem=eta, eta_compute=0.6,
                          overhead_s=layers * prof.overhead_per_layer_s, eta_kv=eta_kv)
    bound = batch * decode_bound_tokens_per_s(bandwidth * devices, weight_bytes + kv_bytes)
    assert est.tokens_per_s <= bound * (1 + 1e-12)


def test_bound_refuses_nonsense():
    assert decode_bound_tokens_per_s(800e9, 4 * GIB) == pytest.approx(186.26, rel=1e-3)
    with pytest.raises(ValueError):
        decode_bound_tokens_per_s(0.0, 1.0)


def _speed(**kw):
    base = dict(weight_bytes=16e9, active_fraction=1.0, kv_bytes_per_token=131072.0, active_params=8e9, layers=32,
                attention_dim=4096, devices=1, bandwidth_bps=1e12, eta_mem=0.85, eta_kv=0.9, overhead_s=1e-3,
                matmul_peak_flops=1e15, matmul_eta=0.6, attention_peak_flops=1e15, attention_eta=0.5)
    return ServingSpeed(**{**base, **kw})


@given(st.integers(1, 1024), st.floats(1.0, 1e6), st.floats(0.01, 1.0), st.integers(1, 8), st.floats(0.0, 0.05),
       st.floats(0.05, 1.0), st.floats(0.05, 1.0))
def test_serving_speed_never_exceeds_its_bound(batch, mean_cache, fraction, devices, overhead, eta, eta_kv):
    s = _speed(active_fraction=fraction, devices=devices, overhead_s=overhead, eta_mem=eta, eta_kv=eta_kv)
    est = s.decode(batch, mean_cache, 128, 128)
    assert est.tokens_per_s <= s.bound_tokens_per_s(batch, mean_cache) * (1 + 1e-12)
    assert s.decode(batch, mean_cache * 2, 128, 128).tokens_per_s < est.tokens_per_s  # a longer cache is slower


def test_serving_speed_by_hand():
    s = _speed()
    # batch 1, cache 1000: 16e9/(1e12*0.85) + 131072*1000/(1e12*0.9) + 1 ms = 18.824 + 0.146 + 1 = 19.97 ms
    est = s.decode(1, 1000.0, 512, 100)
    assert est.step_s == pytest.approx(16e9 / 0.85e12 + 131072e3 / 0.9e12 + 1e-3, rel=1e-9)
    # prefill of 512: 2*8e9*512/0.6e15 + 2*32*4096*512*513/0.5e15 = 13.65 + 0.14 ms, in series with reading the
    # weights once (18.8 ms: compute.prompt_pass_s, near the ridge the two add); 8192 tokens the same, the read 7 %
    # of it; each adds the step's 1 ms launch overhead (compute.prompt_seconds, the serving model's formula too)
    read = 16e9 / 0.85e12
    assert s.prefill_s(512) == pytest.approx(
        2 * 8e9 * 512 / 0.6e15 + 2 * 32 * 4096 * 512 * 513 / 0.5e15 + read + 1e-3, rel=1e-9)
    assert s.prefill_s(512) == pytest.approx(33.61e-3, abs=0.01e-3)  # 13.65 + 0.14 + 18.82 + 1 ms
    assert s.prefill_s(8192) == pytest.approx(2 * 8e9 * 8192 / 0.6e15 + 2 * 32 * 4096 * 8192 * 8193 / 0.5e15 + read
                                              + 1e-3, rel=1e-9)
    moe = _speed(active_fraction=0.25)
    assert moe.weights_read(1) == pytest.approx(4e9) and moe.weights_read(2) == pytest.approx(16e9 * (1 - 0.75**2))
