"""Ranking, Pareto front, sensitivity series and serving cost."""

from __future__ import annotations

import math

import pytest

from advisor.cost import (
    CostAssumptions,
    assumption_sensitivity,
    home_job_cost,
    pareto_front,
    rank_by_cost,
    requests_per_s,
    scaled_grid,
    sensitivity,
    usd_per_million_requests,
    usd_per_million_tokens,
)
from tests.cost.conftest import make_accel

POINTS = [(10.0, 10.0, "slow-cheap"), (2.0, 30.0, "fast-dear"), (5.0, 12.0, "middle"),
          (6.0, 40.0, "dominated"), (2.0, 30.0, "a-duplicate")]


def test_rank_by_cost():
    assert rank_by_cost(POINTS) == ["slow-cheap", "middle", "a-duplicate", "fast-dear", "dominated"]
    assert rank_by_cost([]) == []


def test_pareto_front():
    # "dominated" is slower and dearer than "middle"; of the two identical points the first id is kept.
    assert pareto_front(POINTS) == ["a-duplicate", "middle", "slow-cheap"]
    assert pareto_front([]) == []


def test_sensitivity_to_tokens_collects_costs_and_rankings():
    # Option "rent" costs 1 USD per 1e6 tokens; option "own" has a fixed 5 USD plus 0.5 per 1e6 tokens and is
    # missing at the smallest budget. At 4e6 tokens: rent 4, own 7; at 2e7: rent 20, own 15 (ranking flips).
    def evaluate(tokens):
        pts = [(tokens / 1e6, tokens / 1e6, "rent")]
        if tokens > 1e6:
            pts.append((tokens / 2e6, 5 + 0.5 * tokens / 1e6, "own"))
        return pts

    s = sensitivity(evaluate, "tokens", [1e6, 4e6, 2e7], unit="tokens")
    assert s.values == (1e6, 4e6, 2e7)
    assert s.costs_for("rent") == pytest.approx((1, 4, 20))
    own = s.costs_for("own")
    assert math.isnan(own[0]) and own[1:] == pytest.approx((7, 15))
    assert s.rankings == (("rent",), ("rent", "own"), ("own", "rent"))
    assert s.cheapest == ("rent", "rent", "own")
    d = s.as_dict()
    assert d["parameter"] == "tokens" and d["unit"] == "tokens" and d["cheapest"] == ["rent", "rent", "own"]
    assert d["costs_usd"]["rent"] == pytest.approx([1, 4, 20])
    assert sensitivity(lambda v: [], "x", [1.0]).cheapest == (None,)


def test_sensitivity_to_electricity_price():
    # Home job of the worked case: energy 55.5 kWh, depreciation 24.77169 USD; cost = 24.77169 + 55.5 * price.
    base = CostAssumptions()
    card = make_accel()

    def evaluate(a):
        q = home_job_cost(card, 1, 100, a)
        return [(q.hours, q.total_usd, q.option_id)]

    s = assumption_sensitivity(evaluate, base, "electricity_usd_per_kwh", [0.0, 0.17, 0.40])
    assert s.unit == "USD/kWh"
    assert s.costs_for("home:card") == pytest.approx((24.771689, 34.206689, 46.971689))
    with pytest.raises(ValueError, match="utilisation"):
        assumption_sensitivity(evaluate, base, "utilisation", [0.0])


def test_scaled_grid():
    assert scaled_grid(2e8) == (5e7, 1e8, 2e8, 4e8, 8e8)
    assert scaled_grid(1.0, (1, 3)) == (1.0, 3.0)


def test_serving_cost():
    # 8 devices at 2 USD/h = 16 USD/h; 1000 tokens/s aggregate: 16 / 3.6e6 * 1e6 = 4.444 USD per 1M tokens.
    assert usd_per_million_tokens(16.0, 1000.0) == pytest.approx(4.444444)
    assert usd_per_million_tokens(16.0, 0.0) is None
    # 2 requests/s: 16 / 7200 * 1e6 = 2222.22 USD per 1M requests.
    assert usd_per_million_requests(16.0, 2.0) == pytest.approx(2222.2222)
    assert usd_per_million_requests(16.0, 0) is None
    with pytest.raises(ValueError, match="hourly_price_total"):
        usd_per_million_tokens(-1, 1)
    with pytest.raises(ValueError, match="requests_per_s"):
        usd_per_million_requests(1, float("inf"))


def test_requests_per_s():
    # Batch 8, 256 output tokens each, 800 tokens/s aggregate, 0.44 s prefill: 8 / (0.44 + 2048/800) = 8 / 3 = 2.667.
    assert requests_per_s(800, 256, batch=8, prefill_s=0.44) == pytest.approx(8 / 3)
    assert requests_per_s(100, 50) == pytest.approx(2.0)
    assert requests_per_s(0, 50) == 0.0
    for kw, match in ((dict(output_tokens=0), "output_tokens"), (dict(batch=0), "batch"),
                      (dict(batch=True), "batch"), (dict(prefill_s=-1), "prefill_s")):
        with pytest.raises(ValueError, match=match):
            requests_per_s(**(dict(tokens_per_s=10, output_tokens=5) | kw))
