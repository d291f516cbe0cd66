"""Training-step probe: exact parameter count, 6*P*tokens/s, MFU against the given peak, and the offer."""

from __future__ import annotations

import pytest

from advisor.probes import drive, open_probe
from advisor.probes._common import require_torch
from advisor.probes._transformer import TinyGptConfig, build_model
from advisor.probes.train_step import step_matmul_shapes

TINY = {"hidden": 32, "layers": 2, "heads": 2, "vocab": 128, "seq_len": 16, "batch": 2, "steps": 3, "warmup_s": 0.0}


@pytest.mark.parametrize("cfg", [TinyGptConfig(vocab=128, hidden=32, layers=2, heads=2, seq_len=16),
                                 TinyGptConfig(vocab=1000, hidden=48, layers=3, heads=4, seq_len=40)])
def test_param_count_is_exact(cfg):
    torch = require_torch()
    model = build_model(torch, cfg)
    assert sum(p.numel() for p in model.parameters()) == cfg.param_count()


def test_model_is_causal():
    torch = require_torch()
    cfg = TinyGptConfig(vocab=50, hidden=16, layers=1, heads=2, seq_len=8)
    torch.manual_seed(0)
    model = build_model(torch, cfg).eval()
    a = torch.randint(0, 50, (1, 8))
    b = a.clone()
    b[0, 5:] = (b[0, 5:] + 1) % 50
    with torch.no_grad():
        assert torch.allclose(model(a)[0, :5], model(b)[0, :5], atol=1e-5)


def test_figures_follow_the_planner_s_flops_and_the_given_peak():
    r = drive(open_probe("train-step", peak_tflops=2.0, **TINY))
    assert r.skipped is None
    p = r.details["params"]
    assert p == TinyGptConfig(vocab=128, hidden=32, layers=2, heads=2, seq_len=16).param_count()
    tps = r.results["tokens_per_s"]
    assert tps.unit == "tokens/s" and tps.repetitions == 3 and tps.best >= tps.median > 0
    assert step_matmul_shapes(TinyGptConfig(vocab=128, hidden=32, layers=2, heads=2, seq_len=16), 2) == (
        (32, 32, 96), (32, 32, 32), (32, 32, 128), (32, 128, 32), (32, 32, 128))  # tokens 2 x 16, h 32, ffn 128
    # the planner's FLOPs of a token: 6P and the attention's 6 L s h = 6 x 2 x 16 x 32
    assert r.results["achieved"].best == pytest.approx((6 * p + 6 * 2 * 16 * 32) * tps.best / 1e12)
    assert r.results["mfu"].median == pytest.approx(r.results["achieved"].median / 2.0)
    assert r.peak == {"TFLOP/s": 2.0, "precision": "fp32", "origin": "given"}
    assert r.calibration["mfu"] == pytest.approx(r.results["mfu"].median)
    assert r.details["peak_memory_bytes"] > 0
    assert [x for x, _ in r.details["sweep"]["tokens_per_s"]] == [1, 2, 3]
    # three steps are too few for trials: the headline is their median, never above the fastest step
    rates = sorted(y for _, y in r.details["sweep"]["tokens_per_s"])
    assert tps.best == pytest.approx(rates[1]) and tps.best <= rates[-1]


def test_cpu_peak_is_a_measured_matmul_and_said_so():
    r = drive(open_probe("train-step", **TINY))
    assert "measured fp32 matmul" in r.peak["origin"] and "the step's own shapes" in r.peak["origin"]
    assert 0 < r.calibration["mfu"] <= 1.0
    assert r.calibration["accelerator_id"] == "cpu"  # saved under the CPU's device id, not without one


@pytest.mark.parametrize("precision", ["bf16"])
def test_mixed_precision_runs_on_cpu(precision):
    r = drive(open_probe("train-step", precision=precision, peak_tflops=1.0, **TINY))
    assert r.params["precision"] == precision and r.results["tokens_per_s"].best > 0


def test_bad_precision_is_an_error():
    with pytest.raises(ValueError, match="precision"):
        drive(open_probe("train-step", precision="fp8", **TINY))
