"""Typed plan results: serving figures worked by hand, FLOPs of the whole budget, and results read, not re-priced."""

from __future__ import annotations

import dataclasses
import math

import pytest

from advisor.catalog import load_catalog
from advisor.planner import PlanInputError, PlanRequest, plan
from advisor.planner.calibrated import raw_estimates
from advisor.planner.result import PlanOption, Serving, check_finite

CAT = load_catalog(use_user_file=False)


def _plan(**kw):
    return plan(PlanRequest.from_mapping(kw), CAT)


def test_inference_serving_figures_by_hand():
    # llama-3-8b (8.030e9 params, 32 layers, 32 query heads and 8 KV heads of 128) in bf16 on one H100 SXM
    # (989e12 FLOP/s bf16 and fp16 dense, 3.35e12 B/s), 1024 prompt and 200 output tokens, batch 1, on vLLM (the
    # default runtime on a datacenter part): its CUDA profile reads 16-bit weights at 0.85 of the bandwidth, pays
    # 30 us per layer a step, runs prefill at 0.6 of the bf16 peak and the prompt's attention at 0.5 of fp16's.
    eta, overhead = 0.85, 32 * 30e-6
    # The raw estimate: the calibration on published measurements multiplies it (tests/planner/test_calibrated.py).
    with raw_estimates():
        r = _plan(model="llama-3-8b", workload="inference", accelerator=["h100-sxm"], prompt_tokens=1024, batch=1,
                  output_tokens=200)
    o = r.option("onprem:h100-sxm")
    assert isinstance(o, PlanOption) and isinstance(o.serving, Serving)
    assert r.context == 1224  # the window holds prompt and output
    # the prompt's products: its tokens by the parameters less the embedding and the head (2 x 128,256 x 4,096 and
    # the final norm's 4,096: a row looked up, and logits of the last token only; model.prompt_param_count)
    matmul = 2 * (8.030261248e9 - 2 * 128256 * 4096 - 4096) * 1024 / (989e12 * 0.6)  # 24.09 ms
    attention = 2 * 32 * 4096 * 1024 * 1025 / (989e12 * 0.5)                # 0.556 ms: causal, P(P+1) pairs
    kv_mean = 2 * 32 * 8 * 128 * 2 * (1024 + 199 / 2)                      # the cache at its mean length, bytes
    step = (8.030261248e9 * 2 + kv_mean) / (3.35e12 * eta) + overhead       # 6.65 ms: weights + KV + launches
    # the first token: the prompt's compute in series with one read of the weights (compute.prompt_pass_s) and the
    # step's launch overhead (its last logits give the token)
    read = 8.030261248e9 * 2 / (3.35e12 * eta)                              # 5.64 ms
    assert o.serving.ttft_s == pytest.approx(matmul + attention + read + overhead, rel=1e-6)  # 31.25 ms
    assert o.serving.ttft_single_request_s == pytest.approx(o.serving.ttft_s, rel=1e-9)  # batch 1: the same
    assert o.tokens_per_s == pytest.approx(1 / step, rel=1e-6)              # 150.3 tokens/s
    assert o.serving.bandwidth_efficiency == pytest.approx(eta) and o.serving.decode_bound == "memory"
    # mfu is the compute utilisation achieved: 2 * P_act * tokens/s over the peak (0.24 percent, memory-bound).
    assert o.mfu == pytest.approx(2 * 8.030261248e9 / step / 989e12, rel=1e-6)
    assert o.mfu == pytest.approx(0.00244, rel=1e-2)
    assert o.to_json()["software"] == {**o.serving.software.to_json()}
    assert o.to_json()["software"]["id"] == "vllm" and o.to_json()["software"]["weight_format"] == "bf16"
    per_h = o.cost_usd / o.hours
    assert o.usd_per_million_tokens == pytest.approx(per_h / (3600 * o.tokens_per_s) * 1e6)
    assert o.usd_per_million_requests == pytest.approx(per_h / (3600 * o.serving.requests_per_s) * 1e6)
    doc = o.to_json()
    for key in ("ttft_s", "bandwidth_efficiency", "usd_per_million_tokens", "usd_per_million_requests"):
        assert doc[key] == pytest.approx(getattr(o.serving, key))


def test_inference_flops_total_is_the_whole_budget():
    r = _plan(model="llama-3-8b", workload="inference", tokens=1e9, accelerator=["h100-sxm"])
    assert r.flops_per_token == pytest.approx(2 * 8.030261248e9)
    assert r.flops_total == pytest.approx(2 * 8.030261248e9 * 1e9)
    doc = r.to_json()
    assert doc["flops_total"] == r.flops_total and doc["flops_per_token"] == r.flops_per_token
    default = _plan(model="llama-3-8b", workload="inference", accelerator=["h100-sxm"])
    assert default.flops_total == pytest.approx(2 * 8.030261248e9 * 1e6)  # default budget 1e6 tokens (defaults.toml)


def test_mfu_override_sets_the_serving_compute_efficiency():
    # Compute-bound at a large batch: halving the compute efficiency cuts the rate.
    kw = dict(model="llama-3-8b", workload="inference", accelerator=["h100-sxm"], batch=512, context=512)
    fast, slow = _plan(**kw, mfu=0.6).option("onprem:h100-sxm"), _plan(**kw, mfu=0.3).option("onprem:h100-sxm")
    assert fast.serving.decode_bound == "compute"
    assert slow.tokens_per_s < fast.tokens_per_s * 0.75


def test_results_with_a_figure_out_of_range_are_refused():
    r = _plan(model="gpt2", workload="lora", tokens=1e8, accelerator=["rtx-4090"])
    check_finite(r)
    broken = dataclasses.replace(r, options=(dataclasses.replace(r.options[0], hours=math.inf),))
    with pytest.raises(PlanInputError, match="tokens"):
        check_finite(broken)


def test_memory_at_other_device_counts_comes_from_the_same_plan():
    r = _plan(model="llama-3-70b", workload="finetune", accelerator=["h100-sxm"])
    alone = _plan(model="llama-3-70b", workload="finetune", accelerator=["h100-sxm"], gpus=8)
    assert r.memory_at(8) == alone.memory
    assert r.memory_at(0) is None


def test_cost_over_time_reads_the_plan():
    # Money spent against months: the home rig bought at month 0 (its upfront), then running and holding costs
    # at the stated cadence; the rent is each job rented. Read from the plan's options and their holdings.
    r = _plan(model="llama-3-8b", workload="qlora", accelerator=["rtx-4090"], jobs_per_month=3)
    spend = r.cost_over_time()
    assert spend.stated and spend.jobs_per_month == 3
    home = r.option("home:rtx-4090")
    rent = r.best("cloud")
    line = {x.kind: x for x in spend.lines}
    assert line["home"].upfront_usd == pytest.approx(home.owning.holding.upfront_usd)
    # 3 jobs of h hours: energy of 3h hours, idle power of the rest of the 243.3 available hours.
    h = home.hours
    expected = 3 * h * 0.555 * 0.17 + (8 * 365 / 12 - 3 * h) * 0.05 * 0.17  # 450 W x 0.9 + 150 W = 0.555 kW
    assert home.devices == 1 and line["home"].monthly_usd == pytest.approx(expected)
    assert line["cloud"].monthly_usd == pytest.approx(3 * rent.cost_usd) and line["cloud"].upfront_usd == 0
    assert home.break_even.vs == rent.id or r.option(home.break_even.vs).accelerator == "rtx-4090"


def test_no_page_or_report_prices_an_option():
    """Compare, break-even, Pareto, sensitivity and charts read the plan: only the planner calls the pricing."""
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[2] / "advisor"
    pricing = ("advisor.cost.jobs", "advisor.cost.options", "advisor.cost.breakeven", "from advisor.cost import",
               "home_job_cost", "onprem_job_cost", "cloud_job_cost", "quote_job")
    for path in [*root.glob("gui/**/*.py"), *root.glob("report/**/*.py"), *root.glob("commands/**/*.py")]:
        text = path.read_text()
        assert not [p for p in pricing if p in text], path


@pytest.mark.parametrize("busy", [False, True])
def test_onprem_h100_follows_the_cadence_by_hand(busy):
    # The team: LoRA of llama-3.1-70b on 2e8 tokens on n H100 SXM (catalog: 30,000 USD, 700 W), h hours.
    # A month of holding per GPU: capex 30,000 x 1.6 / 0.81 = 59,259.26 over 48 months = 1,234.57; colocation
    # 0.7 x 1.9 = 1.33 kW x 150 = 199.5; support 1,000 / 12 = 83.33; idle 1.33 x 0.3 x 1.2 = 0.4788 kW at
    # 0.10 USD/kWh for the 730 - N h idle hours. Running: 1.33 x 0.75 x 1.2 = 1.197 kW x 0.10 = 0.1197 USD/h per
    # GPU. The job carries h / (N h) = 1/N of the month, plus its own energy.
    # One job a month, or busy: as many jobs as fill 95 % of the month at this job's hours (the hours move with
    # the speed model; the hand-worked month needs idle hours left).
    kw = dict(model="llama-3.1-70b", workload="lora", tokens=2e8, accelerator=["h100-sxm"], owned_options=False)
    per_month = 1
    if busy:
        with raw_estimates():
            one = next(x for x in _plan(**kw, jobs_per_month=1).options if x.kind == "onprem")
        per_month = int(0.95 * 730 // one.hours)
        assert per_month >= 2
    with raw_estimates():
        r = _plan(**kw, jobs_per_month=per_month)
    o = next(x for x in r.options if x.kind == "onprem")
    h, n = o.hours, o.devices
    month = n * (59259.259 / 48 + 199.5 + 1000 / 12 + (730 - per_month * h) * 0.04788)
    assert o.cost_usd == pytest.approx(month / per_month + n * 0.1197 * h, rel=1e-5)
    assert o.utilisation.busy_hours_per_month == pytest.approx(per_month * h)
    assert o.break_even.vs is not None and r.option(o.break_even.vs).fits and r.option(o.break_even.vs).feasible
    if not busy:
        assert o.break_even.months is None and not o.break_even.pays_back  # renting a month costs less than running
    else:  # busy most of the month: the answer changes, it pays back within its 4 years
        assert o.break_even.pays_back and o.break_even.months < 48
