"""The calibration set wired into the plan: the stored fit is what the stored raw predictions give, a sample of
those predictions is what the planner gives now, and every serving figure carries its 80 % range."""

from __future__ import annotations

import csv
import io
import math
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.catalog import load_catalog
from advisor.catalog.load import _resource_text
from advisor.catalog.measurements import bundled_calibration_fit, bundled_measurements
from advisor.estimate import calibration as C
from advisor.job.serve import ServeJob
from advisor.planner import PlanRequest, plan
from advisor.planner.calibrated import memory_interval, raw_estimates
from advisor.planner.measured import predict
from advisor.planner.serve import serve_plan

CAT = load_catalog(use_user_file=False)


def _stored_predictions() -> dict[str, dict]:
    return {r["row_id"]: r for r in csv.DictReader(io.StringIO(_resource_text("calibration_predictions.csv")))}


def test_stored_fit_is_the_fit_of_the_stored_predictions():
    # benchmarks/bench_truth.py --write regenerates both files; a stale one fails here
    stored = _stored_predictions()
    ms = {m.row_id: m for m in bundled_measurements()}
    obs = [C.Observation(rid, r["group"], ms[rid].source_id, r["class"], ms[rid].value, float(r["predicted"]),
                         r["setup"], implied=float(r["implied"]) if r["implied"] else None,
                         held_out=float(r["held_out"]) if r["held_out"] else None,
                         position=C.position_of(ms[rid], r["class"]) if r["group"] in C.REACH_GROUPS else None)
           for rid, r in stored.items()]
    refit = C.fit_all(obs)
    fits = bundled_calibration_fit()
    assert set(refit) == set(fits)
    for g, f in fits.items():
        assert f.log_factor == pytest.approx(refit[g].log_factor, abs=1e-9)
        assert f.half_width_log == pytest.approx(refit[g].half_width_log, abs=1e-9)
        assert f.reach_slope == pytest.approx(refit[g].reach_slope, abs=1e-9)
        assert dict(f.class_half_widths) == pytest.approx(dict(refit[g].class_half_widths), abs=1e-9)
        assert dict(f.class_log_factors) == pytest.approx(dict(refit[g].class_log_factors), abs=1e-9)


def test_a_sample_of_stored_predictions_is_what_the_planner_says_now():
    stored = _stored_predictions()
    ms = [m for m in bundled_measurements() if m.row_id in stored]
    sample = ms[:: max(1, len(ms) // 12)]  # a dozen rows across the groups
    for m in sample:
        p = predict(m, CAT)
        assert p.predicted == pytest.approx(float(stored[m.row_id]["predicted"]), rel=1e-6), m.row_id
        assert p.klass == stored[m.row_id]["class"]


def test_serving_figures_carry_their_ranges():
    r = plan(PlanRequest.from_mapping(dict(model="llama-3-8b", workload="inference", context=2048, output_tokens=256,
                                           accelerator=["rtx-4090"], owned_options=False)), CAT)
    doc = r.options[0].to_json()
    for key, value in (("tokens_per_s_interval", "tokens_per_s"), ("ttft_s_interval", "ttft_s"),
                       ("prefill_tokens_per_s_interval", "prefill_tokens_per_s"), ("cost_usd_interval", "cost_usd")):
        lo, hi = doc[key]
        assert lo < doc[value] < hi, key
    fits = bundled_calibration_fit()
    lo, hi = doc["ttft_s_interval"]  # one request: the range advisor serve gives one user (one question, one range)
    served = serve_plan(ServeJob.from_mapping(dict(model="llama-3-8b", context=2048, output_tokens=256, users=1,
                                                   accelerator=["rtx-4090"], owned_options=False)), CAT)
    one = next(o for o in served.options if o.accelerator == "rtx-4090")
    f_ttft = next(f for g, f, _ in one.ranges if g == "ttft")
    assert hi / doc["ttft_s"] == pytest.approx(f_ttft, rel=1e-9)
    assert one.point.ttft_p50_s == pytest.approx(doc["ttft_s"], rel=0.02)
    loaded = plan(PlanRequest.from_mapping(dict(model="llama-3-8b", workload="inference", prompt_tokens=2048,
                                                output_tokens=256, batch=8, accelerator=["rtx-4090"],
                                                owned_options=False)), CAT).options[0].to_json()
    lo, hi = loaded["ttft_s_interval"]  # a batch: the loaded servers' first-token spread
    assert math.log(hi / loaded["ttft_s"]) == pytest.approx(fits["ttft"].half_width_log)


def test_calibrated_decode_is_the_raw_one_times_its_class_factor_and_never_past_the_bound():
    kw = dict(model="llama-3-8b", workload="inference", quant="q4_k_m", context=512, output_tokens=128,
              accelerator=["rtx-4090"], owned_options=False, runtime="llama.cpp")
    with raw_estimates():
        raw = plan(PlanRequest.from_mapping(kw), CAT).options[0]
    cal = plan(PlanRequest.from_mapping(kw), CAT).options[0]
    fit = bundled_calibration_fit()["decode"]
    factor = fit.factor(C.efficiency_class("decode", "llama.cpp", "cuda", "4", "gddr"))
    acc = CAT.accelerators["rtx-4090"]
    bound = acc.mem_bandwidth_bps / (8.03e9 * 4.5 / 8)  # eta = 1 over the Q4_K_M weights alone
    assert cal.tokens_per_s == pytest.approx(min(raw.tokens_per_s * factor, raw.tokens_per_s / raw.serving.
                                                 bandwidth_efficiency), rel=1e-6)
    assert cal.tokens_per_s < bound


def test_training_memory_has_a_range_and_inference_none():
    assert memory_interval(10e9, "inference") is None
    lo, hi = memory_interval(10e9, "lora")
    fit = bundled_calibration_fit()["finetune_memory"]
    w = math.exp(fit.half_width_log)
    assert lo == pytest.approx(min(10e9, 10e9 * fit.factor() / w)) and hi == pytest.approx(max(10e9, 10e9 * fit.factor() * w))


def test_a_decode_measured_on_this_machine_is_not_rescaled():
    from advisor.store.calibration import Calibration

    cal = Calibration(mfu=None, eta_mem=0.7, device="cuda:0", accelerator_id="rtx-4090",
                      measured_at="2026-11-29T12:00:00Z", source="probe:device-bandwidth")
    kw = dict(model="llama-3-8b", workload="inference", quant="q4_k_m", prompt_tokens=512, output_tokens=128,
              accelerator=["rtx-4090"], owned_options=False, runtime="llama.cpp")
    measured = plan(PlanRequest.from_mapping(kw), CAT, cal).options[0]
    with raw_estimates():
        raw = plan(PlanRequest.from_mapping(kw), CAT, cal).options[0]
    assert measured.tokens_per_s == pytest.approx(raw.tokens_per_s, rel=1e-9)


@settings(max_examples=40, deadline=None)
@given(acc_id=st.sampled_from(["rtx-4090", "rtx-3090", "h100-sxm", "a100-80gb-sxm", "m2-ultra", "l40s", "mi300x"]),
       model=st.sampled_from(["llama-3-8b", "llama-2-7b", "qwen2.5-7b", "mixtral-8x7b"]),
       quant=st.sampled_from([None, "q4_k_m", "q8_0"]), batch=st.integers(1, 64),
       log_factor=st.floats(-1.0, 3.0))
def test_no_calibrated_decode_passes_the_bandwidth_bound(acc_id, model, quant, batch, log_factor):
    # whatever the fitted factor (up to 20x), the decode stays under B x bandwidth / (weights + caches) (eta = 1)
    from advisor.estimate.calibration import GroupFit
    from advisor.planner import calibrated
    from advisor.planner.request import lengths, resolve_job_model
    from advisor.planner.timing import serving_timing

    req = PlanRequest.from_mapping(dict(model=model, workload="inference", quant=quant, batch=batch,
                                        prompt_tokens=512, output_tokens=128, accelerator=[acc_id]))
    acc = CAT.accelerators[acc_id]
    m = resolve_job_model(req, CAT)
    t = serving_timing(req, acc, m.arch, m.params, m.active_params, lengths(req, m.arch.max_context or 1 << 30),
                       1, None)
    fits = {g: GroupFit(g, log_factor, (), 0.2, 10, 2) for g in ("decode", "serving", "prefill")}
    with patch.object(calibrated, "active_fits", return_value=fits):
        cal = calibrated.calibrate_serving(t, req, acc, m.arch.is_moe)
    assert cal.tokens_per_s <= t.high_cap * (1 + 1e-9)
    assert cal.speed is None or (cal.speed.eta_mem <= 1.0 and cal.speed.eta_kv <= 1.0)
