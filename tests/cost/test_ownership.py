"""The cost of owning follows use (advisor.cost.ownership): hand-worked holding costs, shares and break-even."""

from __future__ import annotations

import pytest

from advisor.cost import CostAssumptions, Use, home_job_cost, job_cost, onprem_job_cost, payback
from advisor.cost.ownership import financing_usd_per_month, home_holding, onprem_holding, owned_holding
from tests.cost.conftest import make_accel

A = CostAssumptions()
DC = make_accel("dc", price=30000, tdp=700)

# 8 GPUs of 30000 USD, 700 W, defaults (see test_jobs' on-prem worked case):
#   capex 8 x 59259.259 = 474074.07 over 48 months = 9876.543 a month;
#   colocation 8 x 0.7 x 1.9 = 10.64 kW x 150 = 1596 a month; support 8 x 1000 / 12 = 666.667 a month;
#   idle 10.64 kW x 0.3 x PUE 1.2 = 3.8304 kW at 0.10 = 0.38304 USD per idle hour;
#   running 8 x 0.7 x 1.9 x 0.75 x 1.2 = 9.576 kW at 0.10 = 0.9576 USD per hour.
MONTHLY = 9876.543 + 1596 + 666.667


def test_onprem_holding_by_hand():
    h = onprem_holding(DC, 8, A)
    assert dict(h.monthly_usd) == pytest.approx({"capex_share": 9876.543, "colocation": 1596.0,
                                                 "support": 666.667}, rel=1e-6)
    assert h.idle_kw * h.idle_usd_per_kwh == pytest.approx(0.38304)
    assert h.running_rate_usd_per_hour == pytest.approx(0.9576)
    assert (h.available_hours_per_month, h.assumed_busy_hours_per_month) == (pytest.approx(730), pytest.approx(584))


def test_one_job_a_month_carries_the_whole_month():
    # 10 h job once a month: busy 10 h, idle 720 h x 0.38304 = 275.789; the job carries all of the month:
    # 9876.543 + 1596 + 666.667 + 275.789 + energy 9.576 = 12424.575 USD.
    q = onprem_job_cost(DC, 8, 10, A, Use(jobs_per_month=1))
    assert q.total_usd == pytest.approx(MONTHLY + 275.789 + 9.576, rel=1e-6)
    assert q.breakdown.get("idle_power") == pytest.approx(275.789, rel=1e-5)
    assert q.utilisation.busy_hours_per_month == pytest.approx(10)
    assert q.utilisation.fraction == pytest.approx(10 / 730)


def test_thirty_jobs_a_month_share_it():
    # 30 x 10 h = 300 h busy, idle 430 h x 0.38304 = 164.707; each job carries 10/300 of the month:
    # (12139.21 + 164.707) / 30 + 9.576 = 419.707 USD, about 29.6 times less than at one a month.
    q = onprem_job_cost(DC, 8, 10, A, Use(jobs_per_month=30))
    assert q.total_usd == pytest.approx((MONTHLY + 164.707) / 30 + 9.576, rel=1e-6)
    one = onprem_job_cost(DC, 8, 10, A, Use(jobs_per_month=1))
    assert one.total_usd > 5 * q.total_usd
    assert q.utilisation.fraction == pytest.approx(300 / 730)


def test_other_use_and_overbooking():
    # 1 job of 10 h and 290 h of other work: the same 300 busy hours as thirty jobs.
    assert onprem_job_cost(DC, 8, 10, A, Use(1, 290)).total_usd == pytest.approx(
        onprem_job_cost(DC, 8, 10, A, Use(30)).total_usd)
    # 100 jobs of 10 h need 1000 h: capped at 730, no idle, marked overbooked.
    q = onprem_job_cost(DC, 8, 10, A, Use(100))
    assert q.utilisation.overbooked and q.utilisation.busy_hours_per_month == pytest.approx(730)
    assert q.breakdown.get("idle_power") == 0.0
    # Half a job a month: busy 5 h a month (idle 725 h x 0.38304 = 277.704); each job carries two months.
    assert onprem_job_cost(DC, 8, 10, A, Use(0.5)).total_usd == pytest.approx(2 * (MONTHLY + 277.704) + 9.576,
                                                                              rel=1e-6)


def test_home_rig_unstated_use_keeps_the_stated_hours():
    # Not stated: 8 h a day x 365/12 = 243.33 h busy; u = 1 leaves no idle hour; depreciation (3100 x 0.7) / 36
    # = 60.278 a month over 243.33 h = 0.24772 per hour (test_jobs' home worked case).
    card = make_accel()
    q = home_job_cost(card, 1, 100, A)
    assert q.breakdown.as_dict() == pytest.approx({"depreciation": 24.771689, "energy": 9.435})
    assert not q.utilisation.stated and q.utilisation.fraction == pytest.approx(1.0)
    # 4 jobs of 100 h a month: 400 h > 243.33 available: overbooked, capped.
    assert home_job_cost(card, 1, 100, A, Use(4)).utilisation.overbooked
    # 2 jobs of 10 h: busy 20 h; idle 223.33 h x 50 W x 0.17 = 1.8983 a month; job = half of
    # (60.278 + 1.8983) + 10 h x 0.555 kW x 0.17 = 31.088 + 0.9435 = 32.032.
    q = home_job_cost(card, 1, 10, A, Use(2))
    assert q.total_usd == pytest.approx((2170 / 36 + 223.333 * 0.05 * 0.17) / 2 + 0.9435, rel=1e-5)


def test_owned_is_marginal_whatever_the_use():
    card = make_accel()
    h = owned_holding(card, 2, A)
    assert h.upfront_usd == 0 and h.monthly_usd == ()
    for use in (Use(), Use(1), Use(30)):
        q = job_cost(h, 10, use)
        # (2 x 450 x 0.9 + 150) W = 0.96 kW x 10 h x 0.17 = 1.632 USD of energy only
        assert q.breakdown.as_dict() == pytest.approx({"energy": 1.632})


def test_financing_annuity():
    # 10000 USD at 12 % a year over 36 months: payment 332.143 (annuity formula), interest 332.143 - 277.778.
    assert financing_usd_per_month(10000, 0.12, 36) == pytest.approx(332.1431 - 10000 / 36, rel=1e-5)
    assert financing_usd_per_month(10000, 0.0, 36) == 0.0
    h = home_holding(make_accel(), 1, A.with_overrides(financing_rate_per_year=0.12))
    assert dict(h.monthly_usd)["financing"] == pytest.approx(financing_usd_per_month(3100, 0.12, 36))


def test_payback_by_hand():
    # Home rig of one 1600 USD card (3100 USD with its system), rent 0.50 USD/h for the same 10 h job (5 USD).
    # Unstated use: 243.33 h a month. Renting that work: 24.333 jobs x 5 = 121.667 a month; owning spends
    # 243.33 x 0.09435 = 22.959 on energy: margin 98.708 a month -> 3100 / 98.708 = 31.405 months (< 36: pays back).
    # Jobs a month where owning matches renting per job: N (5 - 0.9435 + 0.0085 x 10) = 60.278 + 0.0085 x 243.33
    # -> N = 62.346 / 4.1415 = 15.054.
    h = home_holding(make_accel(), 1, A)
    be = payback(h, 10, Use(), "cloud:x", 5.0, 10.0)
    assert be.months == pytest.approx(31.405, rel=1e-4)
    assert be.pays_back and be.life_months == 36
    assert be.jobs_per_month == pytest.approx(15.054, rel=1e-4)
    assert be.device_hours == pytest.approx(31.405 * 243.333, rel=1e-4)
    assert "pays back after 31.4 months" in be.sentence("home:card")
    # Renting for 0.05 USD/h: less than the energy of an hour: never.
    never = payback(h, 10, Use(), "cloud:x", 0.5, 10.0)
    assert never.months is None and not never.pays_back and never.jobs_per_month is None
    assert "does not pay back" in never.sentence("home:card")
    # No cloud option that runs the job: no comparison, and nothing named.
    none = payback(h, 10, Use(), None, None)
    assert none.vs is None and "vs -" not in none.sentence("home:card")


def test_onprem_once_a_month_does_not_pay_back():
    # The 8-GPU server once a month against 10 h of rent at 30 USD/h (300 USD a job): renting a month costs
    # 300, owning spends 1596 + 666.667 + 275.789 + 9.576 in cash: never; at 30 a month renting is 9000 against
    # 2262.667 + 164.707 + 287.28 = 2714.65: 474074.07 / 6285.35 = 75.4 months, beyond its 48: not within life.
    h = onprem_holding(DC, 8, A)
    once = payback(h, 10, Use(1), "cloud:y", 300.0, 10.0)
    assert once.months is None and not once.pays_back
    busy = payback(h, 10, Use(30), "cloud:y", 300.0, 10.0)
    assert busy.months == pytest.approx(474074.07 / (9000 - 2262.667 - 164.707 - 287.28), rel=1e-5)
    assert not busy.pays_back and "within its 4-year life" in busy.sentence("onprem:dc")


# ---------------------------------------------------------------- properties
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=80, deadline=None)
@given(hours=st.floats(0.1, 500), n=st.floats(0.05, 200), more=st.floats(1.0, 10.0),
       idle=st.floats(0.0, 1.0), fin=st.floats(0.0, 0.5))
def test_more_use_never_makes_a_job_dearer(hours, n, more, idle, fin):
    # The holding costs of a month are shared by more busy hours: a job's share falls (or stays, when overbooked),
    # never below its running costs; the parts always sum to the total.
    a = A.with_overrides(onprem_idle_power_fraction=idle, financing_rate_per_year=fin)
    few = onprem_job_cost(DC, 8, hours, a, Use(n))
    many = onprem_job_cost(DC, 8, hours, a, Use(n * more))
    assert many.total_usd <= few.total_usd * (1 + 1e-9)
    running = onprem_holding(DC, 8, a).running_rate_usd_per_hour * hours
    assert many.total_usd >= running * (1 - 1e-9)
    assert sum(v for _, v in many.breakdown.parts) == pytest.approx(many.total_usd)


@settings(max_examples=80, deadline=None)
@given(hours=st.floats(0.5, 100), n=st.floats(0.1, 60), rent=st.floats(1.0, 5000.0))
def test_payback_is_where_spending_crosses(hours, n, rent):
    # After the break-even months, the purchase plus its monthly spending equals the same work rented.
    h = onprem_holding(DC, 8, A)
    be = payback(h, hours, Use(n), "cloud:x", rent, hours)
    if be.months is not None:
        assert h.upfront_usd + be.own_monthly_usd * be.months == pytest.approx(be.rent_monthly_usd * be.months)
        assert be.pays_back == (be.months <= 48)
    else:
        assert be.rent_monthly_usd <= be.own_monthly_usd * (1 + 1e-9)


def test_a_stated_use_built_without_init_equals_the_dataclass():
    """``utilisation`` fills the frozen Utilisation of a stated use without its __init__ (a speed path): the same
    fields as Utilisation(...) of them, overbooked or not (100 jobs of 10 h need 1000 h of 730)."""
    import dataclasses

    from advisor.cost.ownership import Utilisation, utilisation

    h = onprem_holding(DC, 8, A)
    for use in (Use(3), Use(100), Use(0.5, 200.0)):
        u = utilisation(h, 10.0, use)
        via_init = Utilisation(**{f.name: getattr(u, f.name) for f in dataclasses.fields(Utilisation)})
        assert via_init == u and vars(via_init) == vars(u) and hash(via_init) == hash(u)
    assert utilisation(h, 10.0, Use(100)).overbooked and not utilisation(h, 10.0, Use(3)).overbooked
    assert utilisation(h, 10.0, Use(3)).busy_hours_per_month == 30.0


def test_a_payback_built_without_init_equals_the_dataclass():
    """``payback`` fills the frozen BreakEven without its __init__ (a speed path): every field, as BreakEven(...) of
    them sets it (one that pays back, one that never does)."""
    import dataclasses

    from advisor.cost.breakeven import BreakEven

    h = onprem_holding(DC, 8, A)
    for rent in (5000.0, 1.0):
        be = payback(h, 10.0, Use(30), "cloud:x", rent, 12.0, "aws", 3.0)
        via_init = BreakEven(**{f.name: getattr(be, f.name) for f in dataclasses.fields(BreakEven)})
        assert via_init == be and vars(via_init) == vars(be) and hash(via_init) == hash(be)
        assert set(vars(be)) == {f.name for f in dataclasses.fields(BreakEven)}
    assert payback(h, 10.0, Use(30), "cloud:x", 5000.0).months is not None
    assert payback(h, 10.0, Use(30), "cloud:x", 1.0).months is None


def test_an_owned_quote_lists_its_parts_in_display_order_and_refuses_a_repeated_name():
    """``job_cost`` lays a holding's parts out once (``Holding.part_orders``): on-prem's holding parts a month
    (capex, colocation, support), idle power and energy come out capex, idle power, energy, colocation, support
    (``_PART_ORDER``), idle power only while some hours are idle; a holding made with a name twice is refused."""
    import dataclasses

    h = onprem_holding(DC, 8, A)
    # 30 jobs of 10 h: 300 busy hours, 430 idle: idle power is a part
    assert [n for n, _ in job_cost(h, 10.0, Use(30)).breakdown.parts] == [
        "capex_share", "idle_power", "energy", "colocation", "support"]
    # 100 jobs of 10 h: every hour busy, no idle part
    assert [n for n, _ in job_cost(h, 10.0, Use(100)).breakdown.parts] == [
        "capex_share", "energy", "colocation", "support"]
    # the energy: 9.576 kW x 10 h x 0.10 USD/kWh
    assert job_cost(h, 10.0, Use(30)).breakdown.get("energy") == pytest.approx(9.576)
    twice = dataclasses.replace(h, running_usd_per_hour=(("energy", 0.5), ("energy", 0.5)))
    with pytest.raises(ValueError, match="repeat"):
        job_cost(twice, 10.0, Use(30))
