"""Job cost on cloud offers, home rigs and on-prem servers, against figures worked out by hand."""

from __future__ import annotations

import pytest

from advisor.cost import CostAssumptions, can_own, cloud_job_cost, home_job_cost, onprem_job_cost, rank_by_cost
from advisor.cost.jobs import home_system_usd, onprem_capex_per_device
from tests.cost.conftest import make_accel, make_offer

A = CostAssumptions()


# ---------------------------------------------------------------- cloud
def test_eight_gpu_instance_is_billed_once_not_per_gpu():
    # p5.48xlarge (pre-cut list price): 98.32 USD/h for the whole 8-GPU instance -> 98.32 / 8 = 12.29 per GPU-hour.
    # 8 GPUs for 10 h = one instance for 10 h = 983.2 USD; billing the instance per GPU would give 7865.6.
    p5 = make_offer("aws:p5.48xlarge", accel="h100-sxm", count=8, od=98.32, spot=20.9934)
    q = cloud_job_cost(p5, devices=8, hours=10, assumptions=A)
    assert q.usd_per_device_hour == pytest.approx(12.29)
    assert q.instances == 1
    assert q.billed_device_hours == pytest.approx(80)
    assert q.total_usd == pytest.approx(983.2)
    assert q.total_usd != pytest.approx(7865.6)
    assert q.breakdown.as_dict() == pytest.approx({"rent": 983.2, "spot_rework": 0, "storage": 0, "egress": 0})
    assert q.option_id == "cloud:aws:p5.48xlarge"
    assert q.device_hours == pytest.approx(80)


def test_partial_instance_still_pays_for_the_whole_instance():
    # 1 GPU on an 8-GPU instance for 10 h still rents the whole instance: 98.32 * 10 = 983.2 (billed 80 GPU-hours).
    # 9 GPUs need ceil(9/8) = 2 instances: 2 * 98.32 * 10 = 1966.4.
    p5 = make_offer("aws:p5.48xlarge", count=8, od=98.32)
    one = cloud_job_cost(p5, 1, 10, A)
    assert (one.instances, one.total_usd, one.billed_device_hours) == (1, pytest.approx(983.2), pytest.approx(80))
    assert one.device_hours == pytest.approx(10)
    nine = cloud_job_cost(p5, 9, 10, A)
    assert (nine.instances, nine.total_usd) == (2, pytest.approx(1966.4))


def test_deepseek_v3_arithmetic():
    # DeepSeek-V3 report: 2.788M H800 GPU-hours at 2 USD per GPU-hour = 5.576M USD.
    # 2048 GPUs (256 8-GPU instances at 16 USD/h) for 2.788e6 / 2048 = 1361.328125 h.
    h800 = make_offer("x:h800-8x", accel="h800", count=8, od=16.0)
    q = cloud_job_cost(h800, devices=2048, hours=2.788e6 / 2048, assumptions=A)
    assert q.instances == 256
    assert q.usd_per_device_hour == pytest.approx(2.0)
    assert q.billed_device_hours == pytest.approx(2.788e6)
    assert q.total_usd == pytest.approx(5.576e6, rel=1e-12)


def test_dearer_hour_can_be_the_cheaper_job():
    # Slow card: 1.00 USD/h for 10 h = 10.00 USD. Fast card: 2.50 USD/h (2.5x the hour) in 3.2 h
    # (under a third of the time) = 8.00 USD: the dearer hour is the cheaper job.
    slow = cloud_job_cost(make_offer("p:slow", od=1.0), 1, 10.0, A)
    fast = cloud_job_cost(make_offer("p:fast", od=2.5), 1, 3.2, A)
    assert fast.usd_per_device_hour > slow.usd_per_device_hour
    assert fast.total_usd == pytest.approx(8.0)
    assert slow.total_usd == pytest.approx(10.0)
    points = [(q.hours, q.total_usd, q.option_id) for q in (slow, fast)]
    assert rank_by_cost(points) == ["cloud:p:fast", "cloud:p:slow"]


def test_spot_rework_storage_and_egress():
    # Spot 4 USD/h for a 2-GPU instance, 10 h, rework 0.1: rent 40, rework 4, storage 0.5/h * 10 * 1.1 = 5.5,
    # egress 7 once: total 56.5. Billed device-hours 2 * 10 * 1.1 = 22.
    a = A.with_overrides(storage_usd_per_h=0.5, egress_usd=7.0)
    q = cloud_job_cost(make_offer("aws:g", count=2, od=10.0, spot=4.0), 2, 10, a, spot=True)
    assert q.breakdown.as_dict() == pytest.approx({"rent": 40, "spot_rework": 4, "storage": 5.5, "egress": 7})
    assert q.total_usd == pytest.approx(56.5)
    assert q.billed_device_hours == pytest.approx(22)
    assert q.usd_per_device_hour == pytest.approx(2.0)
    assert q.option_id == "cloud:aws:g:spot"


def test_reserved_discount_at_full_use():
    # AWS 3-year: 64 percent off 10 USD/h -> 3.6 USD/h; used all month (730 h), a 10 h job = 36 USD.
    q = cloud_job_cost(make_offer("aws:r", od=10.0), 1, 10, A, reserved_years=3, use_hours_per_month=730)
    assert q.total_usd == pytest.approx(36.0)
    assert q.usd_per_device_hour == pytest.approx(3.6)
    assert q.option_id == "cloud:aws:r:reserved-3y"
    assert cloud_job_cost(make_offer("gcp:r", provider="GCP", od=10.0), 1, 1, A, reserved_years=1,
                          use_hours_per_month=1000).total_usd == pytest.approx(6.3)  # 37 percent off, capped at 730


def test_reserved_term_is_a_commitment():
    # A 2 h job once a month on an AWS 1-year term (41 percent off 10 USD/h = 5.9 USD/h): the term is paid every
    # hour, 5.9 x 730 = 4307 USD a month, all of it carried by the 2 h of use: 4307 USD, 2153.5 USD/h equivalent.
    q = cloud_job_cost(make_offer("aws:r", od=10.0), 1, 2, A, reserved_years=1)
    assert q.total_usd == pytest.approx(4307.0)
    assert q.usd_per_device_hour == pytest.approx(2153.5)
    # 30 such jobs a month plus 40 h of other use = 100 h: 4307 / 100 = 43.07 USD/h, 86.14 USD per job.
    q = cloud_job_cost(make_offer("aws:r", od=10.0), 1, 2, A, reserved_years=1, use_hours_per_month=100)
    assert q.total_usd == pytest.approx(86.14)
    # On-demand 10 USD/h x 2 h = 20 USD: the term pays only with use above 5.9 / 10 x 730 = 430.7 h a month.
    assert cloud_job_cost(make_offer("aws:r", od=10.0), 1, 2, A).total_usd == pytest.approx(20.0)


def test_cloud_energy_is_information_only():
    # 700 W * 1.9 * 0.75 * 1.2 = 1197 W per device; 2 devices * 10 h = 23.94 kWh; cost has no energy part.
    q = cloud_job_cost(make_offer(count=2, od=3.0), 2, 10, A, accel=make_accel(tdp=700))
    assert q.energy_kwh == pytest.approx(23.94)
    assert "energy" not in q.breakdown.as_dict()
    assert cloud_job_cost(make_offer(), 1, 10, A).energy_kwh == 0.0


@pytest.mark.parametrize("kw, match", [
    (dict(devices=0), "devices"), (dict(devices=1.5), "devices"), (dict(devices=True), "devices"),
    (dict(hours=-1), "hours"), (dict(hours=float("nan")), "hours"), (dict(hours="3"), "hours"),
    (dict(spot=True, reserved_years=1), "reserved_years"), (dict(spot=True), "no spot price"),
    (dict(reserved_years=2), "reserved_years"),
])
def test_cloud_bad_input(kw, match):
    args = dict(offer=make_offer(), devices=1, hours=1.0, assumptions=A) | kw
    with pytest.raises(ValueError, match=match):
        cloud_job_cost(**args)


def test_cloud_missing_on_demand_and_unknown_reserved_provider():
    with pytest.raises(ValueError, match="no on-demand price"):
        cloud_job_cost(make_offer(od=None, spot=1.0), 1, 1, A)
    with pytest.raises(ValueError, match="RunPod"):
        cloud_job_cost(make_offer(provider="RunPod"), 1, 1, A, reserved_years=1)


# ---------------------------------------------------------------- home
def test_home_job_worked_case(card):
    # Card 1600 USD, 450 W, 1 GPU, 100 h, defaults.
    # Hardware 1600 + 1500 (rest of the rig) = 3100; resale 30 percent -> net 2170.
    # Lifetime hours of use 3 * 365 * 8 * 1.0 = 8760; depreciation 2170 / 8760 * 100 = 24.77169 USD.
    # Power 450 * 0.9 + 150 = 555 W -> 55.5 kWh in 100 h -> 55.5 * 0.17 = 9.435 USD.
    q = home_job_cost(card, 1, 100, A)
    assert q.hardware_usd == pytest.approx(3100)
    assert q.breakdown.as_dict() == pytest.approx({"depreciation": 24.771689, "energy": 9.435})
    assert q.total_usd == pytest.approx(34.206689)
    assert q.energy_kwh == pytest.approx(55.5)
    assert q.usd_per_device_hour == pytest.approx(0.34206689)
    assert q.fixed_usd_per_device == pytest.approx(2170)
    assert q.variable_usd_per_device_hour == pytest.approx(0.09435)
    assert q.option_id == "home:card"
    assert q.device_hours == pytest.approx(100)


def test_home_rigs_split_at_gpus_per_rig(card):
    # 5 GPUs at 4 per rig = 2 rigs: system 2 * 1500 + (5 - 2) * 500 = 4500 USD; system power 2 * 150 W.
    assert home_system_usd(5, A) == pytest.approx(4500)
    q = home_job_cost(card, 5, 1, A)
    assert q.hardware_usd == pytest.approx(5 * 1600 + 4500)
    assert q.energy_kwh == pytest.approx((5 * 450 * 0.9 + 2 * 150) / 1000)


def test_home_utilisation_and_hours_per_day_stretch_depreciation(card):
    # Half the hours of use per day doubles the depreciation per job hour.
    base = home_job_cost(card, 1, 10, A).breakdown.get("depreciation")
    assert home_job_cost(card, 1, 10, A.with_overrides(utilisation=0.5)).breakdown.get("depreciation") \
        == pytest.approx(2 * base)
    assert home_job_cost(card, 1, 10, A.with_overrides(hours_per_day=4)).breakdown.get("depreciation") \
        == pytest.approx(2 * base)


def test_zero_hour_job_has_no_rate(card):
    q = home_job_cost(card, 1, 0, A)
    assert q.total_usd == 0 and q.usd_per_device_hour is None


# ---------------------------------------------------------------- on-prem
def test_onprem_job_worked_case():
    # GPU 30000 USD, 700 W, 8 GPUs, 10 h (80 device-hours), defaults.
    # Capex per GPU 30000 * 1.6 / (1 - 0.19) = 59259.26; hours of use 4 * 365 * 24 * 0.8 = 28032;
    #   capex share 59259.26 / 28032 * 80 = 169.1190.
    # Power 700 * 1.9 * 0.75 * 1.2 = 1197 W -> 95.76 kWh -> * 0.10 = 9.576 USD.
    # Colocation: 1.33 kW * 150 / (730 h * 0.8) = 0.3416096 per device-hour -> 27.32877.
    # Staff: 1000 / (8760 * 0.8) = 0.1426941 per device-hour -> 11.41553.
    # Idle power: 8 x 700 W x 1.9 x 0.3 x PUE 1.2 = 3.8304 kW for the 20 % of 730 h not busy (146 h) at 0.10:
    #   55.924 USD a month over 584 busy hours x 10 h = 0.9576.
    gpu = make_accel("dc", price=30000, tdp=700)
    q = onprem_job_cost(gpu, 8, 10, A)
    assert onprem_capex_per_device(30000, A) == pytest.approx(59259.259)
    assert q.breakdown.as_dict() == pytest.approx(
        {"capex_share": 169.11900, "idle_power": 0.9576, "energy": 9.576, "colocation": 27.328767,
         "support": 11.415525})
    assert q.energy_kwh == pytest.approx(95.76)
    assert q.hardware_usd == pytest.approx(8 * 59259.259)
    assert q.fixed_usd_per_device == pytest.approx(59259.259)
    assert q.variable_usd_per_device_hour == pytest.approx(0.1197 + 0.3416096 + 0.1426941 + 0.9576 / 80)
    assert q.option_id == "onprem:dc"


@pytest.mark.parametrize("fn", [home_job_cost, onprem_job_cost])
def test_owning_needs_price_and_tdp(fn):
    assert can_own(make_accel())
    for accel, match in ((make_accel(price=None), "purchase price"), (make_accel(tdp=None), "TDP")):
        assert not can_own(accel)
        with pytest.raises(ValueError, match=match):
            fn(accel, 1, 1, A)
    with pytest.raises(ValueError, match="devices"):
        fn(make_accel(), 0, 1, A)


def test_reserved_term_from_the_assumptions():
    # reserved_years=1 in the assumptions: AWS on-demand 10 USD/h -> 5.9 (41 percent off); spot keeps its price;
    # RunPod publishes no discount and keeps on-demand. An explicit 0 overrides the assumption.
    a = A.with_overrides(reserved_years=1)
    aws = make_offer("aws:r", od=10.0, spot=3.0)
    q = cloud_job_cost(aws, 1, 1, a, use_hours_per_month=730)
    assert (q.total_usd, q.reserved_years, q.option_id) == (pytest.approx(5.9), 1, "cloud:aws:r:reserved-1y")
    s = cloud_job_cost(aws, 1, 1, a, spot=True)
    assert (s.usd_per_device_hour, s.reserved_years) == (pytest.approx(3.0), 0)
    rp = cloud_job_cost(make_offer("runpod:r", provider="RunPod", od=2.0), 1, 1, a)
    assert (rp.total_usd, rp.reserved_years, rp.option_id) == (pytest.approx(2.0), 0, "cloud:runpod:r")
    assert cloud_job_cost(aws, 1, 1, a, reserved_years=0).total_usd == pytest.approx(10.0)


def test_a_cloud_quote_is_the_dataclass_its_init_makes():
    """cloud_job_cost fills the frozen CloudQuote without its __init__ (a speed path): same fields, equal."""
    import dataclasses

    from advisor.catalog import load_catalog
    from advisor.cost.assumptions import CostAssumptions
    from advisor.cost.jobs import CloudQuote, cloud_job_cost

    cat = load_catalog(use_user_file=False)
    offer = next(o for o in cat.offers if o.id == "aws:p5.48xlarge-2026-03-11")
    q = cloud_job_cost(offer, 12, 10.0, CostAssumptions(), accel=cat.accelerators[offer.accelerator_id])
    via_init = CloudQuote(**{f.name: getattr(q, f.name) for f in dataclasses.fields(CloudQuote)})
    assert via_init == q and vars(via_init) == vars(q) and hash(via_init) == hash(q)
    assert q.instances == 2 and q.total_usd == q.breakdown.total_usd


def test_owned_quote_built_without_init_equals_the_dataclass():
    """job_cost fills the frozen OwnedQuote without its __init__ (a speed path): same fields, equal."""
    import dataclasses

    from advisor.catalog import load_catalog
    from advisor.cost.assumptions import CostAssumptions
    from advisor.cost.jobs import OwnedQuote
    from advisor.cost.ownership import home_job_cost

    acc = load_catalog(use_user_file=False).accelerators["rtx-4090"]
    q = home_job_cost(acc, 2, 10.0, CostAssumptions())
    via_init = OwnedQuote(**{f.name: getattr(q, f.name) for f in dataclasses.fields(OwnedQuote)})
    assert via_init == q and vars(via_init) == vars(q)
    assert q.devices == 2 and q.total_usd == q.breakdown.total_usd > 0
