"""Owned hardware at its marginal cost: electricity, and wear only when a wear rate is set (hand-worked)."""

from __future__ import annotations

import pytest

from advisor.catalog import load_catalog
from advisor.cost.assumptions import CostAssumptions
from advisor.cost.ownership import owned_gpu_power_w, owned_job_cost, owned_option_id


@pytest.fixture(scope="module")
def cat():
    return load_catalog(use_user_file=False)


def test_two_4090s_ten_hours_by_hand(cat):
    a = CostAssumptions()  # 0.17 USD/kWh, load 0.9, system 150 W
    q = owned_job_cost(cat.accelerator("rtx-4090"), 2, 10.0, a)
    # (2 x 450 W x 0.9 + 150 W) = 960 W; 9.6 kWh; x 0.17 = 1.632 USD
    assert q.energy_kwh == pytest.approx(9.6)
    assert q.total_usd == pytest.approx(1.632)
    assert q.breakdown.as_dict() == {"energy": pytest.approx(1.632)}  # no purchase, no depreciation
    assert q.kind == "owned" and q.hardware_usd == 0 and q.fixed_usd_per_device == 0
    assert q.variable_usd_per_device_hour == pytest.approx(0.96 * 0.17 / 2)
    assert owned_option_id("rtx-4090") == "owned:rtx-4090"


def test_wear_only_when_set(cat):
    a = CostAssumptions().with_overrides(owned_wear_usd_per_gpu_hour=0.05)
    q = owned_job_cost(cat.accelerator("rtx-4090"), 2, 10.0, a)
    assert q.breakdown.as_dict() == {"energy": pytest.approx(1.632), "wear": pytest.approx(1.0)}  # 0.05 x 2 x 10
    assert q.total_usd == pytest.approx(2.632)
    assert "depreciation" not in q.breakdown.as_dict() and "capex_share" not in q.breakdown.as_dict()


def test_laptop_machines_and_given_power(cat):
    a = CostAssumptions().with_overrides(electricity_usd_per_kwh=0.30)
    q = owned_job_cost(cat.accelerator("rtx-4060-laptop"), 1, 4.0, a)
    # 115 W x 0.9 + 150 W = 253.5 W; 4 h -> 1.014 kWh; x 0.30 = 0.3042 USD
    assert q.total_usd == pytest.approx(0.3042)
    two = owned_job_cost(cat.accelerator("rtx-4090"), 4, 1.0, CostAssumptions(), machines=2, gpu_power_w=300.0)
    assert two.energy_kwh == pytest.approx((4 * 300 + 2 * 150) / 1000)


def test_apple_needs_a_power_figure(cat):
    m2 = cat.accelerator("m2-ultra")
    with pytest.raises(ValueError, match="no TDP"):
        owned_gpu_power_w(m2, CostAssumptions())
    q = owned_job_cost(m2, 1, 2.0, CostAssumptions(), gpu_power_w=100.0)
    assert q.total_usd == pytest.approx((100 + 150) / 1000 * 2 * 0.17)


@pytest.mark.parametrize("kw", [{"devices": 0}, {"hours": -1.0}, {"hours": float("inf")}, {"machines": 0},
                                {"gpu_power_w": float("nan")}])
def test_bad_inputs(kw, cat):
    args = {"devices": 1, "hours": 1.0} | {k: v for k, v in kw.items() if k in ("devices", "hours")}
    extra = {k: v for k, v in kw.items() if k in ("machines", "gpu_power_w")}
    with pytest.raises(ValueError):
        owned_job_cost(cat.accelerator("rtx-4090"), args["devices"], args["hours"], CostAssumptions(), **extra)


def test_wear_assumption_is_documented():
    w = CostAssumptions().assumption("owned_wear_usd_per_gpu_hour")
    assert w.value == 0.0 and w.unit == "USD per GPU-hour" and "not counted unless set" in w.origin
    with pytest.raises(ValueError):
        CostAssumptions().with_overrides(owned_wear_usd_per_gpu_hour=-1)
