"""FLOPs, time and the decode roofline against published figures (tolerances stated per test)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.estimate import compute
from advisor.estimate.priors import mfu_prior

A100_BF16 = 312e12


def test_gpt3_and_chinchilla_flops():
    assert compute.training_flops(175e9, 300e9) == pytest.approx(3.14e23, rel=0.01)  # paper: 3.14e23
    assert compute.training_flops(70e9, 1.4e12) == pytest.approx(5.76e23, rel=0.03)  # paper: 5.76e23


def test_lora_skips_weight_gradients():
    assert compute.training_flops(7e9, 1e9, "lora") == pytest.approx(4 * 7e9 * 1e9)


@pytest.mark.parametrize("params, tokens, published_gpu_hours", [
    (6.7e9, 1.0e12, 82_432), (13.0e9, 1.0e12, 135_168), (32.5e9, 1.4e12, 530_432), (65.2e9, 1.4e12, 1_022_362)])
def test_llama1_gpu_hours_on_a100(params, tokens, published_gpu_hours):
    """Touvron et al. 2023, table 15, with the A100 prior; published hours include restarts, so +-20 percent."""
    mfu = mfu_prior("a100-80gb-sxm", "datacenter", "bf16").mfu
    seconds = compute.training_seconds(compute.training_flops(params, tokens), 2048, A100_BF16, mfu)
    assert seconds * 2048 / 3600 == pytest.approx(published_gpu_hours, rel=0.20)


def test_llama65b_throughput_prior_matches_380_tokens_per_gpu():
    # 380 tokens/s/GPU published on 2048 A100s; the prior should land within 10 percent.
    tps = compute.training_tokens_per_s(65.2e9, 1, A100_BF16, 0.45, "pretrain")
    assert tps == pytest.approx(380, rel=0.10)


def test_full_recomputation_adds_a_forward():
    base = compute.training_seconds(1e20, 8, 1e15, 0.4, "selective")
    assert compute.training_seconds(1e20, 8, 1e15, 0.4, "full") == pytest.approx(base * 8 / 6)


def test_full_recomputation_of_a_lora_step_adds_half_its_work():
    # a LoRA step is 4P a token (forward 2P, input gradients 2P, no weight gradients of the frozen base); recomputing
    # the forward adds 2P: 6P/4P = 1.5, where a full step's 6P becomes 8P (8/6)
    assert compute.recompute_factor("full", "lora") == pytest.approx(1.5)
    assert compute.recompute_factor("full", "qlora") == pytest.approx(1.5)
    assert compute.recompute_factor("full", "pretrain") == pytest.approx(8 / 6)
    assert compute.recompute_factor("full", "full") == pytest.approx(8 / 6)
    assert compute.recompute_factor("selective", "lora") == 1.0
    base = compute.training_tokens_per_s(7e9, 8, 1e15, 0.4, "lora", "selective")
    assert base / compute.training_tokens_per_s(7e9, 8, 1e15, 0.4, "lora", "full") == pytest.approx(1.5)


def test_decode_matches_llama_cpp_on_m2_ultra():
    """llama.cpp, Llama-2-7B F16 on an M2 Ultra (800 GB/s): 41.4 tokens/s, about 70 percent of peak."""
    weights = 6.738e9 * 2
    d = compute.decode_estimate(weight_bytes_read=weights, kv_bytes_read=0, active_params=6.738e9, batch=1,
                                devices=1, mem_bandwidth_bps=800e9, peak_flops=27e12, prompt_tokens=512,
                                output_tokens=128, eta_mem=0.70, eta_compute=0.6)
    assert d.tokens_per_s == pytest.approx(41.4, rel=0.05)
    assert d.bound == "memory"


def test_prefill_is_compute_bound():
    d = compute.decode_estimate(weight_bytes_read=16e9, kv_bytes_read=0, active_params=8e9, batch=1, devices=1,
                                mem_bandwidth_bps=1008e9, peak_flops=165.2e12, prompt_tokens=1000,
                                output_tokens=100, eta_mem=0.7, eta_compute=0.6)
    assert d.prefill_s == pytest.approx(2 * 8e9 * 1000 / (165.2e12 * 0.6))
    assert d.request_s == pytest.approx(d.prefill_s + 100 * d.step_s)


@settings(max_examples=80, deadline=None)
@given(params=st.floats(1e8, 1e12), batch=st.integers(1, 256), bw=st.floats(1e11, 1e13),
       eta=st.floats(0.3, 1.0), kv=st.floats(0, 1e11))
def test_decode_never_beats_the_bandwidth_bound(params, batch, bw, eta, kv):
    weights = params * 2
    d = compute.decode_estimate(weight_bytes_read=weights, kv_bytes_read=kv, active_params=params, batch=batch,
                                devices=1, mem_bandwidth_bps=bw, peak_flops=1e15, prompt_tokens=100,
                                output_tokens=10, eta_mem=eta, eta_compute=0.6)
    assert d.tokens_per_s / batch <= bw / weights * (1 + 1e-9)


@settings(max_examples=60, deadline=None)
@given(tokens=st.floats(1e6, 1e13), more=st.floats(1.0, 100.0), devices=st.integers(1, 4096))
def test_more_tokens_never_take_less_time(tokens, more, devices):
    t1 = compute.training_seconds(compute.training_flops(7e9, tokens), devices, 1e15, 0.4)
    t2 = compute.training_seconds(compute.training_flops(7e9, tokens * more), devices, 1e15, 0.4)
    assert t2 >= t1


def test_priors_by_class():
    assert mfu_prior("h100-sxm", "datacenter", "bf16").mfu == 0.40
    assert mfu_prior("h100-sxm", "datacenter", "fp8").mfu == 0.25
    assert mfu_prior("rtx-4090", "consumer", "bf16").mfu == 0.30
    assert mfu_prior("v100-sxm2-16gb", "datacenter", "fp16").mfu == 0.20
    assert mfu_prior("h100-sxm", "datacenter", "bf16", moe=True).mfu == 0.20
    assert "Llama 3.1" in mfu_prior("h200", "datacenter", "bf16").origin
    assert mfu_prior("rtx-4090", "consumer", "bf16", workload="qlora").mfu == pytest.approx(0.21)
    assert mfu_prior("tpu-v4", "tpu", "bf16").mfu == 0.45
    assert "assumption" in mfu_prior("gaudi3", "datacenter", "bf16").origin


def test_power_caps_the_int8_and_fp16_accumulate_peaks():
    """Hand-worked: INT8_OPS_PER_JOULE 1.8e12 x 300 W = 540 TOPS for the RTX 6000 Ada (datasheet 728.5 TOPS);
    the RTX 4090's 450 W allow 810 TOPS, above its 660.6 (uncapped); fp16 and a part without a TDP keep the peak."""
    assert compute.power_capped_flops(728.5e12, 300.0, "int8") == pytest.approx(540e12)
    assert compute.power_capped_flops(660.6e12, 450.0, "int8") == pytest.approx(660.6e12)
    assert compute.power_capped_flops(364.2e12, 300.0, "fp16") == pytest.approx(364.2e12)
    assert compute.power_capped_flops(728.5e12, None, "int8") == pytest.approx(728.5e12)
    # fp16 with fp16 accumulation: 0.85e12 FLOP/J x 300 W = 255e12 below the RTX 6000 Ada's 364.25e12
    assert compute.power_capped_flops(364.25e12, 300.0, "fp16acc") == pytest.approx(255e12)


def test_power_limited_fraction_by_hand():
    from advisor.estimate.compute import POWER_CLOCK_EXPONENT, power_limited_fraction

    # the AD102 pair it is fitted on: 728.5 TOPS would need 450 W x 728.5 / 660.6 = 496 W; at 300 W, 0.736 of it
    assert (300 / (450 * 728.5 / 660.6)) ** POWER_CLOCK_EXPONENT == pytest.approx(0.736, abs=0.005)
    # an H100 SXM (700 W) at Grand Teton's 500 W default: (5/7)^0.61 = 0.815
    assert power_limited_fraction(500, 700) == pytest.approx(0.815, abs=0.002)
    assert power_limited_fraction(None, 700) == 1.0
    assert power_limited_fraction(800, 700) == 1.0
    assert power_limited_fraction(300, None) == 1.0
