"""Issue 17 wired into the plan: fitted utilisation, honest ranges, decode by format and runtime, and the
inconsistencies a reader noticed (headline layout, MoE FLOPs line, spot rework per million tokens, bf16 on T4)."""

from __future__ import annotations

import math

import pytest

from advisor.catalog import load_catalog
from advisor.catalog.measurements import bundled_calibration_fit
from advisor.catalog.runtimes import runtime_data
from advisor.catalog.training_runs import bundled_utilisation_model
from advisor.commands.plan import render_table
from advisor.estimate import utilisation as U
from advisor.job import JOB_FIELDS
from advisor.job.schema import QUANTS, RUNTIMES
from advisor.planner import PlanRequest, plan
from advisor.planner.calibrated import raw_estimates, training_class
from advisor.store.calibration import Calibration

CAT = load_catalog(use_user_file=False)
MODEL = bundled_utilisation_model()


def _plan(calibration=None, **kw):
    return plan(PlanRequest.from_mapping(kw), CAT, calibration)


# ---------------------------------------------------------------- utilisation and ranges
def test_datacenter_training_takes_the_fitted_utilisation_with_its_interval():
    r = _plan(model="llama-3-8b", workload="pretrain", tokens=1e10, accelerator=["h100-sxm"])
    o = r.option("onprem:h100-sxm")
    est = U.predict_utilisation(MODEL, generation=2022, active_params=r.active_params, seq_len=2048)
    fit = bundled_calibration_fit()["pretraining"]  # the efficiency fitted on published runs, and its range
    factor = fit.factor(training_class("pretraining", r.request, False))  # Megatron-LM (pretraining's default), bf16, dense
    assert o.mfu_source == "fitted" and o.mfu == pytest.approx(est.mfu * factor)
    assert "documented runs" in o.mfu_origin and "calibrated" in o.mfu_origin
    with raw_estimates():
        raw = _plan(model="llama-3-8b", workload="pretrain", tokens=1e10, accelerator=["h100-sxm"])
    assert raw.option("onprem:h100-sxm").mfu == pytest.approx(est.mfu)
    assert o.hours == pytest.approx(raw.option("onprem:h100-sxm").hours / factor)
    # sized on the published dense runs left out source by source, grown with the option's distance from them
    klass = training_class("pretraining", r.request, False)
    assert o.reach is not None and o.reach.width_at_rows == pytest.approx(dict(fit.class_half_widths)["dense"])
    f = math.exp(fit.width(klass, o.reach.distance))
    assert f == pytest.approx(math.exp(o.reach.width)) and f == pytest.approx(
        math.exp(dict(fit.class_half_widths)["dense"] * (1 + fit.reach_slope * o.reach.distance)))
    # the wall time's upper side allows for the restarts and evaluation of the documented runs' published totals
    wall = factor / MODEL.wall_time_low  # the totals' ratio is to the model's rate; the plan runs x factor of it
    assert o.hours_interval == pytest.approx((o.hours / f, o.hours * max(f, wall)))
    assert o.tokens_per_s_interval == pytest.approx((o.tokens_per_s / f, o.tokens_per_s * f))
    lo, hi = o.cost_usd_interval
    assert lo < o.cost_usd < hi and hi / o.cost_usd == pytest.approx(max(f, wall), rel=1e-6)  # no egress: all scale
    doc = o.to_json()
    assert doc["hours_interval"] == list(o.hours_interval) and doc["cost_usd_interval"] == list(o.cost_usd_interval)
    assert r.to_json()["goodput"]["factor"] == pytest.approx(MODEL.goodput)


def test_a_calibrated_machine_gets_a_narrower_range():
    cal = Calibration(mfu=0.35, eta_mem=None, device="cuda:0", accelerator_id="h100-sxm",
                      measured_at="2026-11-29T12:00:00Z", source="probe:train-step")
    kw = dict(model="llama-3-8b", workload="pretrain", tokens=1e10, accelerator=["h100-sxm"])
    o = _plan(**kw, calibration=cal).option("onprem:h100-sxm")
    assert o.mfu == 0.35 and o.mfu_source == "calibrated"
    f = math.exp(MODEL.half_width_calibrated_log)  # 1.09 (docs/method.md, "Intervals")
    assert f == pytest.approx(1.09, abs=0.01)
    assert o.tokens_per_s_interval[1] / o.tokens_per_s == pytest.approx(f)
    assert o.hours / o.hours_interval[0] == pytest.approx(f)
    # a step measured here is still a clean step: the wall time's upper side keeps the published totals' allowance
    assert o.hours_interval[1] / o.hours == pytest.approx(max(f, 1 / MODEL.wall_time_low))
    plain = _plan(**kw).option("onprem:h100-sxm")
    assert o.hours / o.hours_interval[0] < plain.hours / plain.hours_interval[0]


def test_priors_are_kept_where_the_documented_runs_have_no_data():
    cases = [(dict(model="llama-3-8b", workload="lora", tokens=1e8, accelerator=["rtx-4090"]), "home:rtx-4090",
              "consumer parts"),
             (dict(model="mixtral-8x7b", workload="pretrain", tokens=1e9, accelerator=["h100-sxm"]),
              "onprem:h100-sxm", "mixture-of-experts")]
    for kw, option_id, why in cases:
        o = _plan(**kw).option(option_id)
        assert o.mfu_source == "prior" and o.mfu_origin.startswith("prior:")
        assert why in o.note and "prior kept" in o.note
    # fp8 on a datacenter part: the fitted utilisation, its linear layers at the fp8 peak (utilisation.fp8_work_per_token)
    o = _plan(model="llama-3-8b", workload="pretrain", precision="fp8", tokens=1e9,
              accelerator=["h100-sxm"]).option("onprem:h100-sxm")
    assert o.mfu_source == "fitted" and "prior kept" not in o.note


def test_a_power_limit_slows_training_by_the_clock_model():
    # An H100 SXM (700 W) at 500 W: (500/700)^0.61 = 0.815 of its tensor rate (compute.power_limited_fraction).
    # Steps of 16k tokens a device, so that the host's kernel launches (which do not slow with the clock) hide
    # behind the compute: the speed follows the clock alone.
    kw = dict(model="llama-3-8b", workload="pretrain", tokens=1e9, accelerator=["h100-sxm"], gpus=8, seq_len=8192,
              micro_batch=2)
    full = _plan(**kw).option("onprem:h100-sxm")
    capped = _plan(**kw, power_limit_w=500).option("onprem:h100-sxm")
    assert capped.tokens_per_s / full.tokens_per_s == pytest.approx(0.815, abs=0.005)
    assert "power limit 500 W" in capped.note
    same = _plan(**kw, power_limit_w=800).option("onprem:h100-sxm")  # above the board power: no change
    assert same.tokens_per_s == pytest.approx(full.tokens_per_s)
    # short steps: the launches show, and slow less than the tensor units (between 0.815 and 1)
    short = dict(kw, seq_len=2048, micro_batch=1)
    ratio = (_plan(**short, power_limit_w=500).option("onprem:h100-sxm").tokens_per_s
             / _plan(**short).option("onprem:h100-sxm").tokens_per_s)
    assert 0.815 < ratio < 0.9


def test_time_split_adds_up_and_shows_pcie_traffic():
    # Two 4090s in one rig over PCIe 4.0 (31 GB/s): data-parallel gradients cross it.
    r = _plan(model="llama-3-8b", workload="finetune", optimizer="adamw-8bit", gpus=4, tokens=1e8,
              accelerator=["rtx-4090"], checkpointing="full")
    o = r.option("home:rtx-4090")
    split = o.time_split_s
    assert set(split) == {"compute", "communication", "bubble"}
    assert sum(split.values()) == pytest.approx(o.hours * 3600.0)
    assert split["communication"] > 0 and split["bubble"] == 0.0
    assert o.to_json()["time_split_s"] == split
    assert f"Time of {r.best().id}: compute" in render_table(r)


# ---------------------------------------------------------------- decode by format and runtime
def test_runtime_field_is_declared_once():
    data = runtime_data()
    assert RUNTIMES == tuple(data.runtimes) and QUANTS == tuple(data.formats)
    assert JOB_FIELDS["runtime"].choices == RUNTIMES and JOB_FIELDS["runtime"].workloads == ("inference",)
    assert JOB_FIELDS["quant"].choices == QUANTS


def test_decode_efficiency_follows_format_class_and_default_runtime():
    kw = dict(model="llama-3-8b", workload="inference", context=1024, batch=1)
    f16 = _plan(**kw, precision="bf16", accelerator=["rtx-4090"]).option("home:rtx-4090")
    q4 = _plan(**kw, quant="q4_0", accelerator=["rtx-4090"]).option("home:rtx-4090")
    # llama.cpp on CUDA (the default runtime on a GeForce card): 0.93 for 16-bit weights, 0.85 for 4-bit
    assert f16.serving.bandwidth_efficiency == pytest.approx(0.93)
    assert q4.serving.bandwidth_efficiency == pytest.approx(0.85)
    assert "llama.cpp on cuda" in f16.mfu_origin and f16.serving.software.runtime.id == "llama.cpp"
    dc = _plan(**kw, accelerator=["h100-sxm"]).option("onprem:h100-sxm")
    assert "vLLM on cuda" in dc.mfu_origin
    chosen = _plan(**kw, runtime="exllama", accelerator=["rtx-4090"]).option("home:rtx-4090")
    assert "ExLlamaV2 on cuda" in chosen.mfu_origin and chosen.to_json()["software"]["id"] == "exllamav2"


@pytest.mark.parametrize("quant", (None, "q8_0", "q6_k", "q5_k_m", "q4_k_m", "q4_0", "iq4_xs", "q2_k", "awq", "fp8",
                                   "exl2", "q4f16_1", "mlx-4bit", "nf4"))
def test_decode_never_exceeds_the_bandwidth_bound(quant):
    from advisor.estimate.memory import weight_bits

    r = _plan(model="llama-3-8b", workload="inference", context=512, batch=1, quant=quant)
    for o in r.options:
        # no format named: each runtime's usual file (Q4_K_M under llama.cpp, the checkpoint's bf16 under vLLM)
        bits = weight_bits("bf16", quant or o.serving.software.weight_format.id)
        acc = CAT.accelerators[o.accelerator]
        bound = acc.mem_bandwidth_bps * o.devices / (r.params * bits / 8)
        assert o.tokens_per_s <= bound
        assert o.tokens_per_s_interval[1] <= bound * (1 + 1e-9)


# ---------------------------------------------------------------- inconsistencies of issue 17
def test_headline_memory_uses_the_chosen_options_layout():
    # Full fine-tuning of Llama 3 8B on 2 H100s without ZeRO does not fit at tp 1: the cheapest option uses tp 2.
    r = _plan(model="llama-3-8b", workload="finetune", gpus=2, zero=0, accelerator=["h100-sxm"])
    best = r.best()
    assert best.parallelism.tp == 2
    assert r.parallelism == best.parallelism and r.memory.total_bytes == best.memory_per_device_bytes
    assert r.to_json()["memory"]["parallelism"]["tp"] == 2
    assert "(tp 2, pp 1, dp 1, ZeRO 0" in render_table(r)


def test_headline_memory_over_the_whole_catalog_keeps_the_requested_layout():
    # no --accelerator: the headline is data parallel over --gpus (CONTRACT: dp = N/(tp*pp)), whichever offer is
    # cheapest today, so ZeRO stages compare at one layout: 13B, 16 GPUs, bf16 + AdamW = 16 bytes a parameter
    states = []
    for zero in (0, 1, 2, 3):
        r = _plan(params=13e9, workload="pretrain", gpus=16, zero=zero, tokens=1e9)
        assert (r.parallelism.tp, r.parallelism.dp) == (1, 16)
        m = r.memory
        states.append(m.weights_bytes + m.gradients_bytes + m.optimizer_bytes)
    # by hand: 16 B/param = 208 GB; ZeRO-1 shards the 12 B of optimizer state over 16: 52 + 9.75 = 61.75 GB;
    # ZeRO-2 the 2 B of gradients too: 26 + 1.625 + 9.75 = 37.4 GB; ZeRO-3 everything, 13 GB, plus the gathered
    # bf16 weights and gradients of the layer in flight (40 layers of 12 h^2, h = 5,120: 2 x 0.63 GB at most)
    assert [round(v / 1e9, 2) for v in states[:3]] == [208.0, 61.75, 37.38]
    assert 13.0e9 < states[3] <= 13.0e9 + 2 * 12 * 5120**2 * 2
    text = render_table(r)
    assert "(tp 1, pp 1, dp 16, ZeRO 3" in text


def test_moe_flops_line_counts_active_params():
    r = _plan(model="mixtral-8x7b", workload="pretrain", tokens=1e9)
    line = next(x for x in render_table(r).splitlines() if x.startswith("FLOPs:"))
    assert "6 x active params x tokens" in line and " 0 x " not in line


def test_spot_cost_per_million_tokens_includes_the_rework():
    r = _plan(model="llama-3-8b", workload="inference", tokens=1e8, accelerator=["h100-sxm"])
    spot = next(o for o in r.options if o.spot)
    parts = spot.cost_breakdown_usd
    assert parts["spot_rework"] > 0
    assert spot.usd_per_million_tokens == pytest.approx(spot.cost_usd / spot.tokens * 1e6)
    assert spot.usd_per_million_tokens > parts["rent"] / spot.tokens * 1e6


def test_bf16_on_t4_is_timed_at_the_fp16_rate_and_says_so():
    t4 = CAT.accelerators["t4"]
    assert t4.peak_precision("bf16") == "fp16" and t4.peak_flops("bf16") == t4.fp16_flops
    r = _plan(model="llama-3-8b", workload="lora", tokens=1e8, accelerator=["t4"])
    assert all("no bf16 units on Tesla T4: timed at the fp16 rate" in o.note for o in r.options)
    h100 = _plan(model="llama-3-8b", workload="lora", tokens=1e8, accelerator=["h100-sxm"])
    assert not any("units" in o.note for o in h100.options)


def test_the_allreduce_probe_figure_replaces_the_home_link():
    from advisor.probes._types import ProbeResult
    from advisor.probes.session import calibration_from

    kw = dict(model="llama-3-8b", workload="finetune", optimizer="adamw-8bit", gpus=4, tokens=1e8,
              accelerator=["rtx-4090"], checkpointing="full")
    offer = {"allreduce_bus_bps": 5e9, "accelerator_id": "rtx-4090"}
    result = ProbeResult(probe="allreduce", device="cuda", results={}, peak=None, calibration=offer)
    cal = calibration_from([result])
    assert cal.allreduce_bus_bps == 5e9 and cal.mfu is None and cal.applies_to("rtx-4090")
    measured, catalog = _plan(**kw, calibration=cal).option("home:rtx-4090"), _plan(**kw).option("home:rtx-4090")
    # 5 GB/s against PCIe 4.0's 31 GB/s: the gradients take longer to cross
    assert measured.time_split_s["communication"] > catalog.time_split_s["communication"]
    assert measured.hours > catalog.hours and "5.0 GB/s all-reduce bus bandwidth measured" in measured.note


def test_a_moe_plan_carries_the_width_of_the_moe_runs_held_out():
    # the pretraining fit sizes dense and MoE ranges apart (calibration.CLASS_WIDTH_GROUPS): a MoE plan's 80 % range
    # is that of the published MoE runs held out source by source, a dense plan's that of the dense runs
    fit = bundled_calibration_fit()["pretraining"]
    kw = dict(workload="pretrain", tokens=1e9, accelerator=["h100-sxm"], gpus=8)
    dense = _plan(model="llama-3-8b", **kw)
    moe = _plan(model="qwen3-30b-a3b", **kw)
    d, m = dense.options[0], moe.options[0]
    wd = fit.width(training_class("pretraining", dense.request, False), d.reach.distance)
    wm = fit.width(training_class("pretraining", moe.request, True), m.reach.distance)
    assert wm > 2 * wd > 0
    assert d.tokens_per_s_interval[1] / d.tokens_per_s == pytest.approx(math.exp(wd), rel=1e-6)
    assert m.tokens_per_s_interval[1] / m.tokens_per_s == pytest.approx(math.exp(wm), rel=1e-6)
    # and each option says which runs its range comes from
    assert f"80 % range x/÷{math.exp(wm):.2f}, as the published MoE runs held out" in m.note
    assert f"80 % range x/÷{math.exp(wd):.2f}, as the published dense runs held out" in d.note


def test_fp8_moe_runs_its_routed_experts_at_the_16_bit_rate():
    # timing.fp8_split: the routed experts' matrix products of a MoE are counted at the bf16 rate in fp8 training,
    # the rest of the blocks' linear layers at the fp8 rate (Megatron-Bridge 25.11's same-layout DeepSeek-V3 pair,
    # 1.13x); a dense model keeps every block parameter in fp8
    from advisor.estimate.model import active_param_count, embedding_params, routed_expert_active_params
    from advisor.planner.timing import fp8_split
    cat = load_catalog()
    acc = cat.accelerators["h100-sxm"]
    for name in ("qwen3-30b-a3b", "llama-3-8b"):
        arch = cat.model(name)
        active = active_param_count(arch)
        got = fp8_split(acc, arch, active, "fp8")
        assert got["fp8_params"] == active - embedding_params(arch) - routed_expert_active_params(arch)
        assert got["gemm_speedup"] == pytest.approx(acc.peak_flops("fp8") / acc.peak_flops("bf16"))
    assert fp8_split(acc, cat.model("qwen3-30b-a3b"), 3e9, "bf16")["fp8_params"] == 0.0


def test_a_power_limit_slows_the_prompt_not_the_decode_and_not_a_rented_instance():
    # H100 SXM at 500 W: its tensor units run at (500/700)^0.61 = 0.815 of the rate (the training case above). A
    # long bf16 prompt is compute-bound: its rate falls by nearly that (the weights read once a chunk and the
    # launches do not slow); a one-request decode reads memory and keeps its speed; a cloud H100 keeps its power.
    kw = dict(model="llama-3-8b", workload="inference", runtime="vllm", precision="bf16", quant="bf16",
              accelerator=["h100-sxm"], prompt_tokens=8000, output_tokens=200, tokens=1e6)
    full, capped = _plan(**kw), _plan(**kw, power_limit_w=500)
    a, b = full.option("onprem:h100-sxm"), capped.option("onprem:h100-sxm")
    ratio = b.serving.prefill_tokens_per_s / a.serving.prefill_tokens_per_s
    assert (500 / 700) ** 0.61 - 1e-6 <= ratio < 0.85  # 0.8144 by hand
    assert b.serving.ttft_s > a.serving.ttft_s
    assert b.tokens_per_s == pytest.approx(a.tokens_per_s, rel=1e-9)
    cloud_a = next(o for o in full.options if o.kind == "cloud")
    cloud_b = capped.option(cloud_a.id)
    assert cloud_b.serving.prefill_tokens_per_s == pytest.approx(cloud_a.serving.prefill_tokens_per_s)
