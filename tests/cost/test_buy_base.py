"""What to buy for a hobbyist, by hand: the base system (a desktop with its power supply and free slots, a laptop,
none), the basic PC, the use from which a purchase pays back, the software stack and the words of the table."""

from __future__ import annotations

import pytest

from advisor.cost.assumptions import CostAssumptions
from advisor.cost.buy import (
    KEEP_RENTING,
    OVERBOOKED,
    BaseSystem,
    JobRun,
    Purchase,
    Rent,
    break_even_text,
    price_purchase,
    purchases,
    rank,
    use_text,
)
from tests.cost.conftest import make_accel

A = CostAssumptions()  # basic PC $500 with an 850 W supply, a new supply $100, 8 h a day, 3 years, resale 0.3


def card(**kw):
    return make_accel(price=1600.0, launch_price_usd=1999.0, launch_year=2022, street_price_date="2026-Q1", **kw)


def test_a_desktop_with_no_gpu_gets_cards_added_at_the_cards_price():
    acc = card(id="c350", tdp=350.0)
    out = {p.id: p for p in purchases([acc], [], [], A, base=BaseSystem("desktop"))}
    one = out["add-street:1xc350"]
    assert one.upfront_usd == 1600 and one.hardware == "add 1 x c350 to your desktop" and one.devices == 1
    # a second card: the rig's extra per GPU beyond the first (a bigger supply, lanes, cooling) when the
    # desktop's supply is not given
    assert out["add-street:2xc350"].upfront_usd == 2 * 1600 + 500
    assert "detection reads neither" in one.note


def test_the_desktops_supply_and_slots_decide_what_an_upgrade_costs():
    acc = card(id="c350", tdp=350.0)
    # one card: (350 + 150) x 1.25 = 625 W; two: (700 + 150) x 1.25 = 1,062.5 W
    roomy = {p.id: p for p in purchases([acc], [], [], A, base=BaseSystem("desktop", psu_w=750, free_slots=1))}
    assert roomy["add-street:1xc350"].upfront_usd == 1600  # the 750 W supply covers 625 W
    assert "add-street:2xc350" not in roomy  # one free slot
    assert "your 750 W power supply covers the about 625 W" in roomy["add-street:1xc350"].note
    short = {p.id: p for p in purchases([acc], [], [], A, base=BaseSystem("desktop", psu_w=550, free_slots=2))}
    assert short["add-street:1xc350"].upfront_usd == 1600 + 100  # a new supply is counted
    assert short["add-street:2xc350"].upfront_usd == 2 * 1600 + 100
    assert "your 550 W one is short" in short["add-street:1xc350"].note
    assert "2 of your 2 free PCIe x16 slots" in short["add-street:2xc350"].note


def test_a_laptop_or_none_gets_a_basic_pc_when_the_card_fits_its_supply():
    small, big = card(id="c350", tdp=350.0), card(id="c575", tdp=575.0)
    for base in (BaseSystem("laptop"), BaseSystem("none")):
        out = {p.id: p for p in purchases([small, big], [], [], A, base=base)}
        assert not any(p.kind == "upgrade" for p in out.values())
        basic = out["basic-street:1xc350"]
        assert basic.upfront_usd == 1600 + 500 and basic.hardware == "1 x c350 in a basic PC" and basic.group == "new"
        # (575 + 150) x 1.25 = 906 W is more than the basic PC's 850 W supply: only the new rig
        assert "basic-street:1xc575" not in out and out["street:1xc575"].upfront_usd == 1600 + 1500
    laptop = {p.id: p for p in purchases([small], [], [], A, budget_usd=1500, base=BaseSystem("laptop"),
                                         used={"c350": _used("c350", 650.0)})}
    assert laptop["basic-used:1xc350"].upfront_usd == 1150  # a used card in a basic PC, within $1,500
    assert laptop["basic-used:1xc350"].price_basis == "used 2026" and laptop["basic-used:1xc350"].price_source == "src"


def _used(acc_id, price):
    from advisor.catalog.used import UsedPrice

    return UsedPrice(acc_id, price, "2026", "used", "src")


def test_a_used_price_equal_to_the_street_price_is_shown_as_used_with_its_source():
    acc = card(id="c", tdp=350.0)  # street 1,600
    out = {p.id: p for p in purchases([acc], [], [], A, used={"c": _used("c", 1600.0)})}
    assert "street:1xc" not in out and out["used:1xc"].price_basis == "used 2026"
    assert out["used:1xc"].price_source == "src"


@pytest.mark.parametrize("kw", [{"kind": "tower"}, {"kind": "laptop", "psu_w": 500}, {"kind": "desktop", "psu_w": 50},
                                {"kind": "desktop", "free_slots": 9}, {"kind": "desktop", "free_slots": 1.5}])
def test_a_bad_base_is_refused(kw):
    with pytest.raises(ValueError):
        BaseSystem(**kw)


def test_the_use_from_which_a_rig_pays_back_by_hand():
    # A new rig (1,600 + 1,500 = 3,100) running one 10 h job that rents for 5.00: electricity (450 x 0.9 + 150) W
    # x 10 h x 0.17 = 0.9435 a run; idle 50 W for the hours of the 8 h day not worked. It pays back within its 36
    # months when N x (5 - 0.9435) - (243.33 - 10 N) x 0.05 x 0.17 = 3,100 / 36, so N = 88.18 / 4.1415 = 21.29.
    acc = card()
    p = Purchase("street:1xcard", "rig", "street", acc, 1, 1600.0, 1500.0, "street", "")
    runs, rent = {"a": JobRun(True, 10.0)}, {"a": Rent("cloud:x", 5.0, 2.0)}
    o = price_purchase(p, runs, rent, 4, A)
    available = 8 * 365 / 12
    want = (3100 / 36 + available * 0.05 * 0.17) / (5.0 - 0.9435 + 10 * 0.05 * 0.17)
    assert want == pytest.approx(21.29, abs=0.01)
    assert o.pays_back_from == pytest.approx(want, rel=1e-6)
    assert not o.pays_back and break_even_text(o) == "never within its 3-year life"
    there = price_purchase(p, runs, rent, want * 1.001, A)
    assert there.pays_back and there.break_even_months == pytest.approx(36, rel=0.01)
    assert there.verdict == "buy" and break_even_text(there) == f"{there.break_even_months:,.1f} mo"
    # 21.29 runs of 10 h a month: 7.0 h of work a day
    assert use_text(o) == f"21 runs/mo ({want * 10 / (365 / 12):.1f} h/day)"


def test_beyond_the_hours_assumed_the_use_is_found_at_24_hours_and_marked():
    # The same rig with 3 h runs that rent for 1.30 (electricity 0.28305 a run). At 24 h a day (730 h a month) it
    # pays back when N x (1.30 - 0.28305) - (730 - 3 N) x 0.0085 = 86.11: N = 92.32 / 1.0425 = 88.6 runs, 266 h
    # a month (8.7 h a day): more than the 243 h of the 8 h a day assumed, where it never does.
    acc = card()
    p = Purchase("street:1xcard", "rig", "street", acc, 1, 1600.0, 1500.0, "street", "")
    runs, rent = {"a": JobRun(True, 3.0)}, {"a": Rent("cloud:x", 1.30, 1.0)}
    o = price_purchase(p, runs, rent, 4, A)
    want = (3100 / 36 + 730 * 0.0085) / (1.30 - 0.28305 + 3 * 0.0085)
    assert want * 3 > 8 * 365 / 12  # more than the 8 h a day assumed
    assert o.pays_back_from == pytest.approx(want, rel=1e-6)
    assert use_text(o).endswith("h/day!)")


def test_a_card_off_the_jobs_stack_ranks_after_those_on_it_and_says_which():
    rent = {"a": Rent("cloud:x", 5.0, 2.0)}
    acc = card()
    p = Purchase("street:1xcard", "rig", "street", acc, 1, 1600.0, 1500.0, "street", "")
    cheap = Purchase("street:1xarc", "arc", "street", card(id="arc"), 1, 100.0, 1500.0, "street", "")
    on = price_purchase(p, {"a": JobRun(True, 10.0)}, rent, 4, A)
    off = price_purchase(cheap, {"a": JobRun(True, 5.0, stack_ok=False, stack_reason="needs PyTorch XPU")}, rent, 4,
                         A)
    assert off.usd_per_job < on.usd_per_job and off.stack_notes == ("a needs PyTorch XPU",) and not off.stack_ok
    assert rank([off, on]) == [on, off]
    assert off.to_json()["stack_notes"] == ["a needs PyTorch XPU"] and off.to_json()["stack_ok"] is False


def test_an_overbooked_rig_is_never_a_buy():
    # 70 h runs, 4 a month: 280 h against the 243 h of an 8 h day. Cheap per job, but it cannot run the month.
    p = Purchase("street:1xc", "rig", "street", card(id="c"), 1, 100.0, 0.0, "street", "")
    o = price_purchase(p, {"a": JobRun(True, 70.0)}, {"a": Rent("cloud:x", 500.0, 2.0)}, 4, A)
    assert o.overbooked and o.verdict == OVERBOOKED and o.verdict != KEEP_RENTING
