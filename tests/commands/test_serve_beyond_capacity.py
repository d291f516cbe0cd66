"""``advisor serve`` at an arrival rate beyond or near what a replica serves: no steady first token beyond it, but how
fast the queue and a new request's wait grow; near it, the chance the rate is beyond it given the capacity's held-out
error (docs/method.md, "Serving under load")."""

from __future__ import annotations

import json
import math
from statistics import NormalDist

import pytest

from advisor.cli import main

OWN = ["serve", "--model", "llama-3.1-8b", "--own", "2xrtx-4090", "--fake-gpu", "no-driver", "--no-spot",
       "--accelerator", "h100-sxm", "--prompt-tokens", "512", "--output-tokens", "256"]


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def _owned(capsys, rate: float) -> dict:
    doc = json.loads(run(capsys, *OWN, "--requests-per-s", str(rate), "--json"))
    return next(o for o in doc["options"] if o["id"] == "owned:rtx-4090")


def test_beyond_capacity_the_json_gives_the_queues_growth_not_a_first_token(capsys):
    o = _owned(capsys, 200)
    cap = o["capacity_requests_per_s_per_replica"]
    assert o["replicas"] == 2 and 0 < cap < 100
    assert o["beyond_capacity"] is True and o["chance_beyond_capacity"] == pytest.approx(1.0, abs=1e-9)
    assert o["ttft_s"]["p50"] is None and o["ttft_s"]["p95"] is None
    # 200 arrive a second, two replicas end 2 x cap: the rest wait; each second adds (100 - cap) / cap seconds
    assert o["queue_growth_requests_per_s"] == pytest.approx(200 - 2 * cap, rel=1e-9)
    assert o["wait_growth_s_per_s"] == pytest.approx((100 - cap) / cap, rel=1e-9)
    text = run(capsys, *OWN, "--requests-per-s", "200")
    assert "no steady first token" in text
    assert f"the queue grows by {200 - 2 * cap:.3g} requests/s" in text


def test_near_capacity_the_chance_it_is_beyond_grows_with_the_load_and_is_a_half_at_it(capsys):
    low, near = _owned(capsys, 4), _owned(capsys, 14)
    cap = near["capacity_requests_per_s_per_replica"]
    assert low["beyond_capacity"] is False and near["beyond_capacity"] is False
    assert low["chance_beyond_capacity"] < near["chance_beyond_capacity"] < 0.5
    # Phi(ln(share / cap) / sd): the sd from the two chances' z-scores (one sd for both, so their ratio is the logs')
    # (each replica's share: the load over the replicas it needs, one for 4 requests/s, two for 14)
    z_low, z_near = (NormalDist().inv_cdf(o["chance_beyond_capacity"]) for o in (low, near))
    assert z_low / z_near == pytest.approx(math.log(4 / low["replicas"] / cap) / math.log(14 / near["replicas"] / cap),
                                           rel=1e-6)
    text = run(capsys, *OWN, "--requests-per-s", "14")
    share = 14 / near["replicas"] / cap
    assert f"at {100 * share:.0f} % of what a replica serves as planned" in text
    at_cap = _owned(capsys, round(2 * cap * 0.999999, 6))
    assert at_cap["chance_beyond_capacity"] == pytest.approx(0.5, abs=1e-3)


def test_a_load_of_users_has_no_capacity_chance(capsys):
    doc = json.loads(run(capsys, *OWN, "--users", "4", "--json"))
    o = next(o for o in doc["options"] if o["id"] == "owned:rtx-4090")
    assert "chance_beyond_capacity" not in o and "beyond_capacity" not in o


def test_over_the_capacitys_error_the_first_tokens_range_is_asymmetric_and_widens_with_the_load(capsys):
    # the ends are the figure on the replica e^(+-1.2816 sd) as fast; the slow end is beyond capacity where
    # share x e^(1.2816 sd) reaches what a replica serves (at 14 requests/s on two replicas: 92 %); sd is the
    # served throughput's stored 80 % width at a load of users (x/÷1.34 on today's fit) over z(0.9)
    low, near = _owned(capsys, 10), _owned(capsys, 14)
    for o in (low, near):
        lo, hi = o["over_capacity_s"]["ttft_p95"]
        assert lo < o["ttft_s"]["p95"]
    cap = near["capacity_requests_per_s_per_replica"]
    sd = math.log(7 / cap) / NormalDist().inv_cdf(near["chance_beyond_capacity"])  # chance = Phi(ln(7 / cap) / sd)
    spread_factor = math.exp(NormalDist().inv_cdf(0.9) * sd)
    from advisor.catalog.load import bundled_catalog
    from advisor.catalog.runtimes import choose
    from advisor.planner.calibrated import serve_range_factors

    cat = bundled_catalog()
    acc = cat.accelerator("rtx-4090")
    choice = choose(near["runtime"], "bf16", "q4_k_m", 16, acc.vendor, acc.kind)  # llama.cpp's usual 4-bit file
    width, _ = serve_range_factors("users", choice, acc, False)["serving"]
    assert 1.05 < width < 3.0  # a served throughput's held-out width: neither nil nor beyond the check's target
    assert spread_factor == pytest.approx(width, rel=0.01)
    assert 7 * spread_factor > cap and near["over_capacity_s"]["ttft_p95"][1] is None
    lo, hi = low["over_capacity_s"]["ttft_p95"]
    assert 5 * spread_factor < cap and hi is not None
    p95 = low["ttft_s"]["p95"]
    assert hi / p95 > p95 / lo > 1.0  # the slow side longer: the wait grows as 1 / (1 - rho)
    text = run(capsys, *OWN, "--requests-per-s", "14")
    assert "over that error alone the p95 first token is" in text and "to beyond it" in text


def test_the_capacity_range_is_the_plan_on_replicas_faster_and_slower_by_the_spread():
    from advisor.catalog.load import bundled_catalog
    from advisor.estimate.serving_queue import Z80, serve_at_speed
    from advisor.job.serve import ServeJob
    from advisor.planner.serve import capacity_ranges, serve_plan

    job = ServeJob.from_mapping({"model": "llama-3.1-8b", "accelerator": ("h100-sxm",), "requests_per_s": 20.0,
                                 "prompt_tokens": 512, "output_tokens": 256, "spot_offers": False})
    result = serve_plan(job, bundled_catalog())
    o = next(o for o in result.options if o.point is not None and o.point.stable)
    over = capacity_ranges(o)
    k = Z80 * o.capacity_spread
    rate = o.point.requests_per_s_offered
    fast = o.shown(serve_at_speed(o.spec, result.lengths, rate, k))
    assert over["ttft_p50_s"][0] == pytest.approx(fast.ttft_p50_s, rel=1e-12)
    slow = serve_at_speed(o.spec, result.lengths, rate, -k)
    if slow is None:
        assert over["tpot_p50_s"][1] is None
    else:
        assert over["tpot_p50_s"][1] == pytest.approx(o.shown(slow).tpot_p50_s, rel=1e-12)
    # a replica e^k as fast at rate r is the plan at r / e^k with its times over e^k
    base = serve_at_speed(o.spec, result.lengths, rate / math.exp(k), 0.0)
    assert serve_at_speed(o.spec, result.lengths, rate, k).ttft_mean_s == pytest.approx(
        base.ttft_mean_s / math.exp(k), rel=1e-12)
