"""Pricing a job on every option and re-pricing it for sensitivity plots."""

from __future__ import annotations

import pytest

from advisor.cost import CostAssumptions
from advisor.cost.options import DeviceJob as Job
from advisor.cost.options import job_points, quote_job
from tests.cost.conftest import make_accel, make_offer

A = CostAssumptions()
CARD = make_accel()  # 1600 USD, 450 W
OFFERS = [make_offer("aws:one", accel="card", od=1.0, spot=0.4), make_offer("x:nospot", accel="card", od=0.8),
          make_offer("x:spotonly", accel="card", od=None, spot=0.3), make_offer("x:other", accel="other", od=0.1)]


def test_quote_job_lists_every_option():
    ids = [q.option_id for q in quote_job(Job(CARD, 1, 10.0), OFFERS, A)]
    assert ids == ["home:card", "onprem:card", "cloud:aws:one", "cloud:aws:one:spot", "cloud:x:nospot",
                   "cloud:x:spotonly:spot"]
    ids = [q.option_id for q in quote_job(Job(CARD, 1, 10.0, kinds=("home", "cloud")), OFFERS, A,
                                          spot_offers=False)]
    assert ids == ["home:card", "cloud:aws:one", "cloud:x:nospot"]
    assert [q.option_id for q in quote_job(Job(make_accel(price=None), 1, 1.0), OFFERS, A)][:1] == ["cloud:aws:one"]
    assert [q.option_id for q in quote_job(Job(CARD, 1, 1.0, kinds=("onprem",)), OFFERS, A)] == ["onprem:card"]
    with pytest.raises(ValueError, match="kinds"):
        quote_job(Job(CARD, 1, 1.0, kinds=("garage",)), OFFERS, A)


def test_job_points_match_quotes():
    # cloud:aws:one on-demand, 2 devices x 5 h at 1 USD/h per 1-GPU instance = 10 USD.
    pts = {pid: (h, c) for h, c, pid in job_points([Job(CARD, 2, 5.0)], OFFERS, A)}
    assert pts["cloud:aws:one"] == (5.0, pytest.approx(10.0))


def test_more_hours_cost_more_and_egress_stays_fixed():
    # Double the hours: every cost doubles (no per-job charges by default); egress 5 USD stays fixed, so with it
    # the 1 USD/h offer costs 10 + 5 = 15 at 10 h and 20 + 5 = 25 at 20 h.
    a = A.with_overrides(egress_usd=5.0)
    pts = [{pid: c for _h, c, pid in job_points([Job(CARD, 1, h, kinds=("cloud",))], OFFERS[:1], a, spot_offers=False)}
           for h in (10.0, 20.0)]
    assert [p["cloud:aws:one"] for p in pts] == pytest.approx([15.0, 25.0])


def test_electricity_price_can_flip_the_ranking():
    # Home job of the worked case for 100 h: 24.77169 USD depreciation + 55.5 kWh * price.
    # Cloud x:nospot 0.8 USD/h x 100 h = 80 USD. Home is cheaper until 55.5 * p > 55.228, p > 0.9951 USD/kWh.
    jobs = [Job(CARD, 1, 100.0, kinds=("home", "cloud"))]
    costs = [{pid: c for _h, c, pid in job_points(jobs, OFFERS[1:2], A.with_overrides(electricity_usd_per_kwh=p))}
             for p in (0.17, 2.0)]
    assert [c["home:card"] for c in costs] == pytest.approx([34.206689, 24.771689 + 111.0])
    assert min(costs[0], key=costs[0].get) == "home:card" and min(costs[1], key=costs[1].get) == "cloud:x:nospot"


def test_a_device_job_made_at_once_equals_the_dataclass():
    """``DeviceJob.at`` sets the frozen record without its per-field init (a speed path): equal to DeviceJob(...) of
    the same fields, the stated use's hours alike (2 jobs of 10 h and 5 h of other use: 25 h a month)."""
    from advisor.catalog import load_catalog
    from advisor.cost.options import DeviceJob
    from advisor.cost.ownership import Use

    acc = load_catalog(use_user_file=False).accelerators["h100-sxm"]
    for kinds, use in ((("cloud",), Use(2.0, 5.0)), (("home", "onprem"), Use())):
        fast, slow = DeviceJob.at(acc, 8, 10.0, kinds, use), DeviceJob(acc, 8, 10.0, kinds, use)
        assert fast == slow and vars(fast) == vars(slow) and hash(fast) == hash(slow)
    assert DeviceJob.at(acc, 8, 10.0, ("cloud",), Use(2.0, 5.0)).use_hours_per_month == 25.0
    assert DeviceJob.at(acc, 8, 10.0).use_hours_per_month is None
