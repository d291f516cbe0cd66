"""Properties of the cost model that must hold for any inputs (hypothesis)."""

from __future__ import annotations

import math

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from advisor.catalog.load import bundled_catalog
from advisor.cost import (
    CostAssumptions,
    break_even_device_hours,
    breakeven_days,
    can_own,
    cloud_job_cost,
    home_job_cost,
    onprem_job_cost,
    pareto_front,
)
from tests.cost.conftest import make_accel, make_offer

# Per-test settings: loading a profile here would change hypothesis for every other test module too.
PROPERTY = settings(max_examples=100, deadline=None)

prices = st.floats(0.01, 200.0)
hours = st.floats(0.0, 1e5)
devices = st.integers(1, 64)
fractions = st.floats(0.0, 1.0)

assumptions = st.builds(
    CostAssumptions,
    electricity_usd_per_kwh=st.floats(0.0, 1.0), home_load_factor=fractions, resale_fraction=fractions,
    hours_per_day=st.floats(0.5, 24.0), utilisation=st.floats(0.05, 1.0), lifetime_years=st.floats(0.5, 10),
    onprem_utilisation=st.floats(0.05, 1.0), pue=st.floats(1.0, 2.0), spot_rework_factor=st.floats(0.0, 1.0),
    storage_usd_per_h=st.floats(0.0, 5.0), egress_usd=st.floats(0.0, 100.0),
    colocation_usd_per_kw_month=st.floats(0.0, 500.0), staff_usd_per_gpu_year=st.floats(0.0, 5000.0),
    home_gpus_per_rig=st.integers(1, 8),
)
accels = st.builds(make_accel, price=st.floats(50.0, 60000.0), tdp=st.floats(10.0, 1500.0))


@st.composite
def offers(draw):
    od = draw(prices)
    spot = draw(st.one_of(st.none(), st.floats(0.001, 1.0).map(lambda f: od * f)))
    return make_offer("aws:i", count=draw(st.sampled_from([1, 2, 4, 8, 16])), od=od, spot=spot)


def _all_quotes(a, accel, offer, n, h):
    quotes = [home_job_cost(accel, n, h, a), onprem_job_cost(accel, n, h, a), cloud_job_cost(offer, n, h, a)]
    if offer.spot_usd_per_h is not None:
        quotes.append(cloud_job_cost(offer, n, h, a, spot=True))
    quotes.append(cloud_job_cost(offer, n, h, a, reserved_years=3))
    return quotes


@PROPERTY
@given(assumptions, accels, offers(), devices, hours, st.floats(0.0, 1e4))
def test_cost_never_falls_when_hours_rise(a, accel, offer, n, h, extra):
    # More tokens mean more hours on the same devices; no option may get cheaper.
    for short, long in zip(_all_quotes(a, accel, offer, n, h), _all_quotes(a, accel, offer, n, h + extra)):
        assert long.total_usd >= short.total_usd


@PROPERTY
@given(assumptions, accels, offers(), devices, hours)
def test_breakdown_parts_sum_to_total(a, accel, offer, n, h):
    for q in _all_quotes(a, accel, offer, n, h):
        parts = q.breakdown.as_dict()
        assert all(v >= 0 and math.isfinite(v) for v in parts.values())
        assert math.isclose(sum(parts.values()), q.total_usd, rel_tol=1e-9, abs_tol=1e-9)


@PROPERTY
@given(assumptions, offers(), devices, st.floats(0.01, 1e4))
def test_spot_never_costs_more_per_hour_than_on_demand(a, offer, n, h):
    if offer.spot_usd_per_h is None:
        return
    od = cloud_job_cost(offer, n, h, a)
    spot = cloud_job_cost(offer, n, h, a, spot=True)
    assert spot.usd_per_device_hour <= od.usd_per_device_hour
    # Per billed hour (the rework hours are billed hours too), with storage per instance-hour included.
    assert spot.total_usd - a.egress_usd <= (od.total_usd - a.egress_usd) / od.billed_device_hours \
        * spot.billed_device_hours * (1 + 1e-12)


@PROPERTY
@given(assumptions, offers(), devices, st.floats(0.01, 1e4))
def test_cloud_cost_covers_the_rent_of_the_devices_used(a, offer, n, h):
    # The acceptance invariant: cost >= device_hours * usd_per_device_hour (whole instances are billed).
    for q in (cloud_job_cost(offer, n, h, a), cloud_job_cost(offer, n, h, a, reserved_years=1)):
        assert q.total_usd >= q.device_hours * q.usd_per_device_hour  # exactly, not only within rounding
        assert q.billed_device_hours >= q.device_hours


def _f(lo, hi):
    return st.floats(lo, hi, allow_subnormal=False)


@PROPERTY
@given(_f(0.0, 1e5), _f(0.0, 10.0), _f(0.0, 3.0), _f(0.0, 1.0), _f(0.01, 1.0))
def test_break_even_none_when_renting_is_cheaper_than_electricity(hw, cloud, kw, price, u):
    days = breakeven_days(hw, cloud, kw, price, u)
    per_dh = break_even_device_hours(hw, kw * price, cloud)
    if cloud <= kw * price:
        assert days is None and per_dh is None
    else:
        assume(cloud - kw * price > 1e-6)  # a saving of a millionth of a dollar an hour or more
        assert days is not None and days >= 0
        assert math.isclose(days * 24 * u, per_dh, rel_tol=1e-9, abs_tol=1e-9)


points = st.lists(st.tuples(st.floats(0.0, 1e3), st.floats(0.0, 1e3), st.text(min_size=1, max_size=4)),
                  max_size=20, unique_by=lambda p: p[2])


@PROPERTY
@given(points)
def test_pareto_front_is_exactly_the_undominated_points(pts):
    front = set(pareto_front(pts))

    def dominated(p):
        return any(q[0] <= p[0] and q[1] <= p[1] and (q[0] < p[0] or q[1] < p[1]) for q in pts)

    for p in pts:
        if dominated(p):
            assert p[2] not in front
    for p in pts:  # every point off the front is matched or beaten by a front point
        if p[2] not in front:
            assert any(q[2] in front and q[0] <= p[0] and q[1] <= p[1] for q in pts)


def test_catalog_spot_prices_are_below_on_demand():
    # The bundled data: where an offer has both prices, spot must not be dearer per device-hour.
    cat = bundled_catalog()
    a = CostAssumptions()
    for offer in cat.offers:
        if offer.spot_usd_per_h is None or offer.on_demand_usd_per_h is None:
            continue
        spot = cloud_job_cost(offer, offer.accelerator_count, 1.0, a, spot=True)
        od = cloud_job_cost(offer, offer.accelerator_count, 1.0, a)
        assert spot.usd_per_device_hour <= od.usd_per_device_hour, offer.id


def test_every_bundled_option_prices_consistently():
    # Every priced offer and every ownable accelerator of the bundled catalog gives a quote whose parts sum
    # to the total and whose cloud cost covers devices * hours * usd_per_device_hour (the acceptance invariant).
    cat = bundled_catalog()
    a = CostAssumptions()
    for offer in cat.offers:
        for spot in (False, True):
            if (offer.spot_usd_per_h if spot else offer.on_demand_usd_per_h) is None:
                continue
            accel = cat.accelerators.get(offer.accelerator_id)
            q = cloud_job_cost(offer, 3, 7.5, a, spot=spot, accel=accel)
            assert math.isclose(sum(q.breakdown.as_dict().values()), q.total_usd, rel_tol=1e-12), q.option_id
            assert q.total_usd >= q.device_hours * q.usd_per_device_hour, q.option_id
    owned = [acc for acc in cat.accelerators.values() if can_own(acc)]
    assert owned
    for acc in owned:
        for fn in (home_job_cost, onprem_job_cost):
            q = fn(acc, 2, 7.5, a)
            assert q.total_usd > 0 and q.energy_kwh > 0, q.option_id
