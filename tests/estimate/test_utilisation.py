"""The fitted utilisation model: hand-worked conversions, the stored fit, and its leave-one-out figures."""

import math

import pytest

from advisor.catalog.load import bundled_catalog
from advisor.catalog.training_runs import bundled_training_runs, catalog_peak, fitted_model_text
from advisor.estimate import utilisation as U


@pytest.fixture(scope="module")
def runs():
    return {r.run_id: r for r in bundled_training_runs()}


@pytest.fixture(scope="module")
def obs():
    return U.observations(bundled_training_runs(), catalog_peak(bundled_catalog()))


def test_llama_7b_effective_mfu_by_hand(runs):
    # 6 * 6.7e9 * 1.0e12 = 4.02e22 FLOPs over 82,432 h * 3600 s * 312e12 FLOP/s = 9.2588e22
    assert U.observed_mfu(runs["llama1-7b"], 312e12) == pytest.approx(0.43418, rel=1e-4)


def test_llama_65b_throughput_agrees_with_its_gpu_hours(runs):
    # 380 tokens/s/GPU and 1,022,362 GPU-hours for 1.4T tokens describe the same run (within 1 %)
    speed = U.observed_mfu(runs["llama1-65b-speed"], 312e12)
    total = U.observed_mfu(runs["llama1-65b"], 312e12)
    assert speed == pytest.approx(total, rel=0.01)


def test_megatron_tokens_per_s_by_hand():
    # 1008B row: 96*128*25600^2*(1 + 2048/153600 + 51200/(16*128*25600)) = 8.168e12 FLOPs per token
    assert U.megatron_tokens_per_s(163, 128, 25600, 2048, 51200) == pytest.approx(163e12 / 8.1679e12, rel=1e-3)


def test_clean_utilisation_removes_recompute_and_adds_attention():
    # attention 1 + L*s*h/P = 1 + 24*2048*2304/1.7e9 = 1.06662; full recomputation x 8/6
    u = U.clean_utilisation(0.3, "full", active_params=1.7e9, layers=24, hidden=2304, seq_len=2048)
    assert u == pytest.approx(0.3 * 1.066618 * 4 / 3, rel=1e-5)
    assert U.clean_utilisation(0.3, "selective", active_params=1e12, layers=1, hidden=1, seq_len=1) == pytest.approx(0.3)


def test_ridge_without_penalty_recovers_exact_coefficients():
    true = (-1.0, 0.0, 0.2, 0.0, 0.1, -0.05, -0.1)
    pts = []
    for gen in (2020, 2022):
        for p in (1e9, 1e10, 1e11):
            for s in (2048, 4096):
                for total in (False, True):
                    x = U.features(gen, p, s, total)
                    pts.append(U.Observation("r", "g", x, math.exp(sum(a * b for a, b in zip(true, x)))))
    coef = U.ridge(pts, penalties=(0, 1e-12, 0, 1e-12, 0, 0, 0))
    for got, want in zip(coef, true):
        assert got == pytest.approx(want, abs=1e-6)


def test_stored_fit_is_the_refit(obs):
    stored = U.model_from_csv(fitted_model_text())
    refit = U.fit_utilisation(obs)
    assert stored.runs == refit.runs == len(obs)
    for a, b in zip(stored.coefficients, refit.coefficients):
        assert a == pytest.approx(b, rel=1e-9, abs=1e-12)
    assert stored.half_width_log == pytest.approx(refit.half_width_log, rel=1e-9)
    assert stored.half_width_calibrated_log == pytest.approx(refit.half_width_calibrated_log, rel=1e-9)


def test_leave_one_out_meets_the_targets(obs):
    # issue 17: at least 80 % of runs within 25 % and 80 % intervals covering at least 80 % of runs
    loo = U.leave_one_out(obs)
    assert len(obs) >= 20
    assert loo.share_within_25pct >= 0.80
    assert loo.interval_coverage >= 0.80
    assert loo.median_error_factor < 1.15


def test_prediction_terms_multiply_to_the_estimate():
    model = U.model_from_csv(fitted_model_text())
    est = U.predict_utilisation(model, generation=2022, active_params=7e10, seq_len=8192)
    assert math.prod(f for _, f in est.terms) == pytest.approx(est.mfu, rel=1e-12)
    assert est.low < est.mfu < est.high
    assert {n for n, _ in est.terms} == {"intercept", "gen_2022", "log10_params_per_1e10"}
    # no sequence term: the same model at 2,048 and 8,192 tokens has the same utilisation (its attention work grows)
    assert U.predict_utilisation(model, generation=2022, active_params=7e10, seq_len=2048).mfu == est.mfu


def test_interval_is_log_symmetric_and_narrower_when_calibrated():
    model = U.model_from_csv(fitted_model_text())
    low, high = U.interval_80(100.0, model)
    assert low * high == pytest.approx(100.0**2)
    clow, chigh = U.interval_80(100.0, model, calibrated=True)
    assert low < clow < 100.0 < chigh < high


def test_generation_classes():
    assert U.generation_of("a100-80gb-sxm") == 2020
    assert U.generation_of("h800") == 2022 and U.generation_of("h20") == 2022 and U.generation_of("l20") == 2022
    assert U.generation_of("a800") == 2020
    assert U.generation_of("v100-sxm2-32gb") == 2018
    assert U.generation_of("b200") == 2024
    assert U.generation_of("mystery-9000") is None
    catalog = bundled_catalog()
    assert [a for a in catalog.accelerators if U.generation_of(a) is None] == []


def test_model_from_csv_rejects_missing_and_non_finite():
    with pytest.raises(ValueError):
        U.model_from_csv("name,value\nintercept,1.0\n")
    with pytest.raises(ValueError):
        U.model_from_csv(fitted_model_text().replace("intercept,", "intercept,nan#"))


def test_leaving_whole_studies_out_is_the_harder_check(obs):
    loo, study = U.leave_one_out(obs), U.leave_one_study_out(obs)
    assert study.median_error_factor >= loo.median_error_factor
    assert len(study.log_residuals) == len(obs)
    # a study with one run is predicted the same way by both
    singles = [i for i, o in enumerate(obs) if sum(p.group == o.group for p in obs) == 1]
    assert singles and all(study.log_residuals[i] == pytest.approx(loo.log_residuals[i]) for i in singles)


def test_bundled_model_is_read_once_and_predicts_a_hopper_run():
    from advisor.catalog.training_runs import bundled_utilisation_model

    model = bundled_utilisation_model()
    assert model is bundled_utilisation_model()
    # Nemotron-4 340B on H100 at 4096 tokens: fitted u 0.406 (192 tokens/s/GPU), prediction within 25 %
    est = U.predict_utilisation(model, generation=U.generation_of("h100-sxm"), active_params=340e9, seq_len=4096)
    assert est.mfu == pytest.approx(0.406, rel=0.25)
    assert est.low < 0.406 < est.high


def test_training_time_reproduces_llama_65b_within_its_interval():
    # LLaMA-1 65B, 1.4T tokens on 2048 A100 (312 TFLOP/s): published 1,022,362 GPU-hours (Touvron et al. 2023)
    model = U.model_from_csv(fitted_model_text())
    t = U.training_time(model, generation=2020, active_params=65.2e9, layers=80, hidden=8192, seq_len=2048,
                        tokens=1.4e12, devices=2048, peak_flops=312e12)
    gpu_hours = t.hours * 2048
    assert gpu_hours == pytest.approx(1_022_362, rel=0.15)
    low, high = t.hours_interval
    assert low * 2048 < 1_022_362 < high * 2048
    # flops by hand: (6 * 65.2e9 + 6 * 80 * 2048 * 8192) * 1.4e12
    assert t.flops == pytest.approx((6 * 65.2e9 + 6 * 80 * 2048 * 8192) * 1.4e12)
    assert t.tokens_per_s == pytest.approx(1.4e12 / (t.hours * 3600))


def test_training_time_calibrated_recompute_lora_and_slowdown():
    model = U.model_from_csv(fitted_model_text())
    kw = dict(generation=2022, active_params=7e9, layers=32, hidden=4096, seq_len=4096, tokens=1e10, devices=8,
              peak_flops=989e12)
    base = U.training_time(model, **kw)
    cal = U.training_time(model, calibrated_mfu=0.3, **kw)
    assert cal.mfu == 0.3 and "training-step probe" in cal.origin
    assert (cal.hours_interval[1] / cal.hours_interval[0]) < (base.hours_interval[1] / base.hours_interval[0])
    assert U.training_time(model, recompute="full", **kw).hours == pytest.approx(base.hours * 8 / 6)
    assert U.training_time(model, slowdown=1.5, **kw).hours == pytest.approx(base.hours * 1.5)
    assert U.training_time(model, workload="lora", **kw).hours == pytest.approx(base.hours * 4 / 6)


def test_palm_convention_mfu_is_rescaled_to_causal_attention():
    # PaLM 540B: r = L*s*h / P = 118*2048*18432/540e9 = 0.008248; (1 + r)/(1 + 2r) = 0.991885
    u = U.clean_utilisation(0.462, "unknown", active_params=540e9, layers=118, hidden=18432, seq_len=2048,
                            mfu_convention="palm")
    assert u == pytest.approx(0.462 * 0.991885, rel=1e-5)


def test_fp8_work_per_token_is_amdahls_split_by_hand():
    # Llama 3 8B at 8,192 tokens: F = 6 x 8.03e9 + 6 x 32 x 8192 x 4096 = 54.6 GFLOP; the blocks' linear layers
    # (8.03e9 less 2 x 128,256 x 4,096 embedding and output weights = 6.98e9) are F_8 = 41.9 GFLOP; S = 2
    f = 6 * 8.03e9 + 6 * 32 * 8192 * 4096
    f8 = 6 * (8.03e9 - 2 * 128_256 * 4096)
    w = U.fp8_work_per_token(f, f8, 2.0)
    assert w == pytest.approx(33.7e9, rel=0.01)
    assert f / w == pytest.approx(1.62, abs=0.01)
    assert U.fp8_work_per_token(f, 0.0, 2.0) == f
    with pytest.raises(ValueError):
        U.fp8_work_per_token(f, f8, 0.0)
