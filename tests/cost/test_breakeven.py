"""Break-even between owning and renting (Dettmers' formula and its per-device-hour form)."""

from __future__ import annotations

import pytest

from advisor.cost import (
    CostAssumptions,
    break_even_device_hours,
    breakeven_days,
    cheapest_offer,
    months_of_use,
)
from tests.cost.conftest import make_offer

A = CostAssumptions()


def test_dettmers_worked_case():
    # 2000 USD of hardware replacing 1.00 USD/h of cloud, drawing 0.5 kW at 0.20 USD/kWh, used half the day:
    # 2000 / (24 * 0.5 * (1.00 - 0.5 * 0.20)) = 2000 / (12 * 0.9) = 2000 / 10.8 = 185.185 days.
    assert breakeven_days(2000, 1.0, 0.5, 0.20, 0.5) == pytest.approx(185.185185)


def test_dettmers_none_when_electricity_costs_more_than_renting():
    # 0.5 kW at 0.20 = 0.10 USD/h of electricity against 0.08 USD/h of cloud: renting always wins.
    assert breakeven_days(2000, 0.08, 0.5, 0.20, 1.0) is None
    assert breakeven_days(2000, 0.10, 0.5, 0.20, 1.0) is None  # equal: never
    # A saving per hour so small that the outlay is never reached in any representable time: never, not inf.
    assert breakeven_days(0.0, 5e-324, 0.0, 0.0, 0.01) is None
    assert break_even_device_hours(1e300, 0.0, 1e-300) is None


@pytest.mark.parametrize("args, match", [
    ((-1, 1, 1, 1, 1), "hardware_usd"), ((1, float("nan"), 1, 1, 1), "cloud_usd_per_h"),
    ((1, 1, -1, 1, 1), "kw"), ((1, 1, 1, -1, 1), "usd_per_kwh"), ((1, 1, 1, 1, 0), "utilisation"),
    ((1, 1, 1, 1, 1.5), "utilisation"),
])
def test_dettmers_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        breakeven_days(*args)


def test_device_hours_form():
    # fixed 2170 USD, 0.09435 USD per device-hour of electricity, cloud 0.50: 2170 / 0.40565 = 5349.44 h.
    assert break_even_device_hours(2170, 0.09435, 0.5) == pytest.approx(5349.4392)
    assert break_even_device_hours(2170, 0.6, 0.5) is None
    with pytest.raises(ValueError, match="cloud_usd_per_device_hour"):
        break_even_device_hours(1, 1, -1)


def test_cheapest_offer_and_months():
    offers = [make_offer("b:y", od=2.0, spot=1.0), make_offer("a:x", od=2.0), make_offer("c:z", od=None, spot=0.5)]
    assert cheapest_offer(offers, "card").id == "a:x"  # tie on price: the id decides
    assert cheapest_offer(offers, "card", spot=True).id == "c:z"
    assert cheapest_offer(offers, "none") is None
    assert months_of_use(None, 8) is None
    assert months_of_use(365, 1) == pytest.approx(12)
    with pytest.raises(ValueError, match="hours_per_day"):
        months_of_use(10, 0)
