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
