"""What to buy, priced by hand: purchases within a budget, cost per job over the life, break-even against rent."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.cost.assumptions import CostAssumptions
from advisor.cost.buy import (
    BUY,
    KEEP_RENTING,
    USE_OWNED,
    JobRun,
    Purchase,
    Rent,
    price_purchase,
    purchases,
    rank,
    running_usd,
)
from tests.cost.conftest import make_accel

A = CostAssumptions()  # 0.17 USD/kWh, load 0.9, system 150 W and $1,500, $500 per extra GPU, 3 years, resale 0.3


def card(**kw):
    return make_accel(price=1600.0, launch_price_usd=1999.0, launch_year=2022, street_price_date="2026-Q1", **kw)


def new_rig(n=1, price=1600.0):
    acc = card()
    from advisor.cost.jobs import home_system_usd

    return Purchase(f"street:{n}xcard", "rig", "street", acc, n, n * price, home_system_usd(n, A), "street", "")


def test_purchases_within_a_budget_with_upgrades_of_what_is_owned():
    acc = card()
    laptop = make_accel(id="rtx-4060-laptop", price=300.0)
    out = {p.id: p for p in purchases([acc, laptop], [], [(acc, 2)], A, budget_usd=3200)}
    assert out["owned:2xcard"].upfront_usd == 0 and out["owned:2xcard"].devices == 2
    # a third card in the owned rig: the card plus the rig's extra per GPU (1500+2x500 - (1500+500) = 500)
    assert out["add-street:1xcard"].upfront_usd == 1600 + 500 and out["add-street:1xcard"].devices == 3
    assert out["add-new:1xcard"].upfront_usd == 1999 + 500
    assert "add-street:2xcard" not in out and "street:2xcard" not in out  # 3,200 + 1,000 and 3,200 + 2,000
    assert out["street:1xcard"].upfront_usd == 1600 + 1500  # a card in a new rig
    assert "new:1xcard" not in out  # 1,999 + 1,500
    assert not any("laptop" in i for i in out)  # a laptop's GPU is not sold alone
    everything = {p.id for p in purchases([acc], [], [(acc, 2)], A)}
    assert {"street:4xcard", "new:4xcard", "add-new:2xcard"} <= everything and "add-new:3xcard" not in everything


def test_a_rig_that_loses_to_rent_by_hand():
    p = new_rig()  # 1,600 + 1,500 = 3,100 upfront
    runs = {"a": JobRun(True, 10.0), "b": JobRun(False, None)}
    rent = {"a": Rent("cloud:x", 5.0, 2.0), "b": Rent("cloud:y", 3.0, 1.0)}
    o = price_purchase(p, runs, rent, 4, A)
    run_a = (450 * 0.9 + 150) / 1000 * 10 * 0.17  # 555 W for 10 h: 5.55 kWh = 0.9435 USD
    assert running_usd(p, 10.0, A) == pytest.approx(run_a)
    assert o.monthly_usd == pytest.approx(4 * run_a)  # electricity a month
    assert o.rent_monthly_usd == pytest.approx(4 * 3.0)  # job b still rented
    life = 3100 * 0.7 / 36  # net of resale over 36 months: 60.28 USD a month
    idle = (8 * 365 / 12 - 40) * 50 / 1000 * 0.17  # 203.3 idle hours of the 243.3 available at 50 W: 1.728 USD
    assert o.holding_monthly_usd == pytest.approx(life + idle)
    assert o.usd_per_job == pytest.approx((life + idle + 4 * run_a + 12.0) / 8)  # 9.73 USD
    assert o.break_even_months == pytest.approx(3100 / (4 * (5.0 - run_a) - idle))  # 217 months
    assert not o.pays_back  # beyond its 36-month life
    assert o.verdict == KEEP_RENTING  # renting: (5 + 3) / 2 = 4 USD per job
    assert o.hours_per_job == {"a": 10.0, "b": None} and o.fits == {"a": True, "b": False}
    assert o.busy_hours_per_month == 40 and o.available_hours_per_month == pytest.approx(8 * 365 / 12)
    doc = o.to_json()
    assert set(doc) >= {"hardware", "upfront_usd", "monthly_usd", "hours_per_job", "fits", "break_even_months"}


def test_a_rig_that_pays_back_by_hand():
    p = new_rig()
    o = price_purchase(p, {"a": JobRun(True, 10.0)}, {"a": Rent("cloud:x", 50.0, 2.0)}, 10, A)
    run_a = 0.9435
    idle = (8 * 365 / 12 - 100) * 0.05 * 0.17  # 143.3 idle hours at 50 W: 1.218 USD a month
    assert o.break_even_months == pytest.approx(3100 / (10 * (50.0 - run_a) - idle))  # 6.3 months
    assert o.usd_per_job == pytest.approx((3100 * 0.7 / 36 + idle + 10 * run_a) / 10)  # 7.09 USD against 50
    assert o.pays_back
    assert o.verdict == BUY


def test_rent_stays_cheaper_gives_no_break_even():
    o = price_purchase(new_rig(), {"a": JobRun(True, 10.0)}, {"a": Rent("cloud:x", 0.5, 2.0)}, 4, A)
    assert o.break_even_months is None and o.verdict == KEEP_RENTING  # 0.94 USD of power against 0.50 of rent


def test_a_mac_draws_its_wall_power_and_no_system_power():
    mac = make_accel(id="mac", price=1999.0, tdp=295.0)
    p = Purchase("mac:mac", "Mac", "apple", mac, 1, 1999.0, 0.0, "price (2023-06)", "", whole_machine_power=True)
    assert running_usd(p, 10.0, A) == pytest.approx(295 * 0.9 / 1000 * 10 * 0.17)  # 0.451 USD


def test_owned_hardware_and_an_upgrade_against_keeping_it():
    acc = card()
    owned = Purchase("owned:2xcard", "2 owned", "owned", acc, 2, 0.0, 0.0, "owned", "", owned_devices=2)
    rent = {"a": Rent("cloud:x", 5.0, 2.0), "big": Rent("cloud:y", 40.0, 3.0)}
    o = price_purchase(owned, {"a": JobRun(True, 10.0), "big": JobRun(False, None)}, rent, 4, A)
    run2 = (2 * 450 * 0.9 + 150) / 1000 * 10 * 0.17  # 960 W for 10 h: 1.632 USD
    assert o.break_even_months == 0 and o.verdict == USE_OWNED
    assert o.usd_per_job == pytest.approx((4 * run2 + 4 * 40.0) / 8)
    owned_monthly = o.monthly_usd + o.rent_monthly_usd
    # A fourth and third card (1,600 + 500) let "big" run in 20 h instead of renting it at 40 USD.
    up = Purchase("add-street:1xcard", "add 1", "upgrade", acc, 3, 1600.0, 500.0, "street", "", owned_devices=2)
    u = price_purchase(up, {"a": JobRun(True, 7.0), "big": JobRun(True, 20.0)}, rent, 4, A, owned_monthly_usd=owned_monthly)
    run3 = (3 * 450 * 0.9 + 150) / 1000 * 0.17  # USD per hour on three cards
    mine = 4 * run3 * (7.0 + 20.0)
    assert u.monthly_usd == pytest.approx(mine)
    assert u.break_even_vs_owned_months == pytest.approx(2100 / (owned_monthly - mine))
    assert u.break_even_months == pytest.approx(2100 / (4 * (5.0 - 7 * run3) + 4 * (40.0 - 20 * run3)))
    assert u.verdict == BUY


def test_a_server_carries_its_onprem_costs():
    # A 4-GPU server of 30,000 USD, 700 W GPUs: capex 4 x 30,000 x 1.6 = 192,000 over 48 months = 4,000 a month;
    # colocation 4 x 0.7 x 1.9 = 5.32 kW x 150 = 798; support 4 x 1000 / 12 = 333.33; idle 5.32 x 0.3 x 1.2 kW
    # x 0.10 = 0.19152 USD per idle hour. One 10 h job a month: 720 idle hours = 137.89 USD.
    from dataclasses import replace

    gpu = replace(make_accel("dc", price=30000.0, tdp=700.0), kind="datacenter")
    p = next(x for x in purchases([gpu], [], [], A) if x.id == "server:4xdc")
    assert p.upfront_usd == pytest.approx(192000) and p.group == "server"
    o = price_purchase(p, {"a": JobRun(True, 10.0)}, {"a": Rent("cloud:x", 300.0, 10.0)}, 1, A)
    assert o.holding_monthly_usd == pytest.approx(4000 + 798 + 333.333 + 137.894, rel=1e-5)
    energy = 4 * 0.7 * 1.9 * 0.75 * 1.2 * 0.10 * 10  # 4.788 USD
    assert o.usd_per_job == pytest.approx(4000 + 798 + 333.333 + 137.894 + energy, rel=1e-5)
    assert o.break_even_months is None and o.verdict == KEEP_RENTING  # 300 a month of rent against 1,274 of cash


def test_used_rows_and_upgrade_notes():
    from advisor.catalog.used import UsedPrice

    acc = card(id="rtx-3090", tdp=350.0)
    used = {"rtx-3090": UsedPrice("rtx-3090", 650.0, "2026", "used", "a source")}
    out = {p.id: p for p in purchases([acc], [], [(acc, 1)], A, used=used)}
    assert out["used:1xrtx-3090"].cards_usd == 650 and out["used:1xrtx-3090"].price_basis == "used 2026"
    up = out["add-used:1xrtx-3090"]
    assert up.upfront_usd == 650 + 500 and up.group == "upgrade"
    # 2 x 350 W + 150 W, 25 % headroom: 1,062 W
    assert "1,062 W" in up.note and "1 free PCIe" in up.note


def test_rank_leaves_out_what_fits_nothing_and_puts_overbooked_last():
    rent = {"a": Rent("cloud:x", 5.0, 2.0)}
    fast = price_purchase(new_rig(), {"a": JobRun(True, 10.0)}, rent, 4, A)
    slow = price_purchase(new_rig(price=100.0), {"a": JobRun(True, 70.0)}, rent, 4, A)  # 280 h a month
    none = price_purchase(new_rig(), {"a": JobRun(False, None)}, rent, 4, A)
    assert slow.overbooked and slow.usd_per_job < fast.usd_per_job
    assert [o is fast for o in rank([slow, none, fast])] == [True, False]


def test_bad_frequency_and_missing_runs_raise():
    with pytest.raises(ValueError, match="jobs_per_month"):
        price_purchase(new_rig(), {"a": JobRun(True, 1.0)}, {"a": None}, 0, A)
    with pytest.raises(ValueError, match="no run"):
        price_purchase(new_rig(), {}, {"a": None}, 1, A)


@settings(max_examples=60, deadline=None)
@given(upfront=st.floats(0, 1e5), hours=st.floats(0.01, 200), rent=st.floats(0.01, 500), n=st.floats(0.1, 100))
def test_break_even_repays_the_upfront_and_more_upfront_never_costs_less(upfront, hours, rent, n):
    acc = card()
    p = Purchase("x", "x", "new", acc, 1, upfront, 0.0, "b", "")
    dearer = Purchase("y", "y", "new", acc, 1, upfront + 100, 0.0, "b", "")
    runs, rents = {"a": JobRun(True, hours)}, {"a": Rent("cloud:x", rent, 1.0)}
    o, d = price_purchase(p, runs, rents, n, A), price_purchase(dearer, runs, rents, n, A)
    assert d.usd_per_job > o.usd_per_job
    if o.break_even_months is not None:
        idle = max(0.0, 8 * 365 / 12 - n * hours) * 0.05 * 0.17  # the rig's idle power a month (50 W)
        saving = n * (rent - running_usd(p, hours, A)) - idle
        assert o.break_even_months * saving == pytest.approx(upfront, abs=1e-6)


def test_an_upgrade_says_when_this_machines_ram_is_short():
    # 2 owned + 1 added 24 GiB cards = 77.3 GB of card memory against 32 GB of RAM: the note says so; 128 GB: not.
    acc = card(id="c24", tdp=350.0)
    short = {p.id: p for p in purchases([acc], [], [(acc, 2)], A, host_memory_bytes=32 * 10**9)}
    assert "32 GB of RAM is less than the cards' 77 GB" in short["add-street:1xc24"].note
    ample = {p.id: p for p in purchases([acc], [], [(acc, 2)], A, host_memory_bytes=128 * 10**9)}
    assert "RAM" not in ample["add-street:1xc24"].note
