"""What one job costs on a cloud offer, and the quote records of every kind (docs/method.md, "Cost of a job").

Owned, home and on-prem quotes are built in ``advisor.cost.ownership`` (the cost of owning follows use).

Every quote carries a :class:`CostBreakdown` whose parts sum to its total, the energy used, and the
effective price per device-hour. ``hours`` is the wall-clock time of the job on ``devices`` devices.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from advisor.catalog.records import Accelerator, CloudOffer
from advisor.cost.assumptions import CostAssumptions
from advisor.cost.breakdown import CostBreakdown

DAYS_PER_YEAR = 365.0
HOURS_PER_MONTH = 365.0 * 24 / 12
MIN_USE_H = 1.0 / 3600  # a second: the least use a reserved term is spread over (keeps the hourly figure finite)


class _Quote:
    """What every quote derives from its ``devices``, ``hours`` and ``breakdown``."""

    @property
    def device_hours(self) -> float:
        """Device-hours the job uses (devices x hours), not the billed ones."""
        return self.devices * self.hours

    @property
    def total_usd(self) -> float:
        return self.breakdown.total_usd


@dataclass(frozen=True)
class CloudQuote(_Quote):
    """The price of one job on a cloud offer.

    ``usd_per_device_hour`` is the billed rate per accelerator (instance price / accelerators per instance,
    less any reserved discount), before spot rework. ``billed_device_hours`` counts every accelerator of every
    instance paid for, rework included.
    """

    offer_id: str
    accelerator_id: str
    devices: int
    hours: float
    spot: bool
    reserved_years: int
    instances: int
    usd_per_instance_hour: float
    usd_per_device_hour: float
    billed_device_hours: float
    energy_kwh: float
    breakdown: CostBreakdown
    term_usd_per_instance_hour: float | None = None  # a reserved term's rate at full use (None: no term)
    term_use_hours_per_month: float | None = None  # the hours a month the term is spread over

    @property
    def option_id(self) -> str:
        """``cloud:<provider>:<instance>``, with ``:spot`` for a spot price and ``:reserved-<n>y`` for a term."""
        suffix = ":spot" if self.spot else (f":reserved-{self.reserved_years}y" if self.reserved_years else "")
        return f"cloud:{self.offer_id}{suffix}"



@dataclass(frozen=True)
class OwnedQuote(_Quote):
    """The price of one job on owned hardware (``kind`` ``"home"``, ``"onprem"`` or ``"owned"``), built by
    ``advisor.cost.ownership.job_cost``.

    ``fixed_usd_per_device`` and ``variable_usd_per_device_hour`` describe the cost of owning for break-even:
    money sunk per device whatever the use (purchase less resale), and money per device-hour of use (running
    costs and the holding costs paid in cash, spread over the busy hours).
    """

    kind: str
    accelerator_id: str
    devices: int
    hours: float
    hardware_usd: float
    fixed_usd_per_device: float
    variable_usd_per_device_hour: float
    energy_kwh: float
    breakdown: CostBreakdown
    utilisation: object = None  # ``advisor.cost.ownership.Utilisation``: the busy hours behind the figure
    monthly_usd: float = 0.0  # holding costs a month at that use (what the job carries a share of)
    holding: object = None  # ``advisor.cost.ownership.Holding``: what it costs by month and by hour of work

    @property
    def option_id(self) -> str:
        """``home:<accelerator>``, ``onprem:<accelerator>`` or ``owned:<accelerator>``."""
        return f"{self.kind}:{self.accelerator_id}"

    @property
    def usd_per_device_hour(self) -> float | None:
        """Total cost over device-hours (None for a zero-hour job)."""
        dh = self.device_hours
        return self.total_usd / dh if dh > 0 else None


def _check_job(devices: int, hours: float) -> None:
    if devices.__class__ is int and devices >= 1 and hours.__class__ is float and 0.0 <= hours < math.inf:
        return  # the planner's case, at once
    if isinstance(devices, bool) or not isinstance(devices, int) or devices < 1:
        raise ValueError(f"devices: must be a whole number, 1 or more, got {devices!r}")
    if isinstance(hours, bool) or not isinstance(hours, (int, float)) or not math.isfinite(hours) or hours < 0:
        raise ValueError(f"hours: must be a finite number of zero or more, got {hours!r}")


def can_own(accel: Accelerator) -> bool:
    """Whether an accelerator can be priced as owned hardware: it needs a purchase price and a TDP."""
    return bool(accel.price_usd) and bool(accel.tdp_w)


def _own_inputs(accel: Accelerator) -> tuple[float, float]:
    if not accel.price_usd:
        raise ValueError(f"{accel.id}: no purchase price in the catalog, cannot price owning it")
    if not accel.tdp_w:
        raise ValueError(f"{accel.id}: no TDP in the catalog, cannot price its energy")
    return float(accel.price_usd), float(accel.tdp_w)


def datacenter_kw_per_device(tdp_w: float, a: CostAssumptions) -> float:
    """Facility power per device while running: TDP * power factor * load * PUE, in kW (docs/method.md)."""
    return tdp_w * a.onprem_power_factor * a.onprem_load * a.pue / 1000.0


def cloud_job_cost(offer: CloudOffer, devices: int, hours: float, assumptions: CostAssumptions,
                   spot: bool = False, reserved_years: int | None = None,
                   accel: Accelerator | None = None, use_hours_per_month: float | None = None) -> CloudQuote:
    """Price a job of ``devices`` accelerators for ``hours`` on a cloud offer.

    Whole instances are billed: ``instances = ceil(devices / accelerator_count)``, so an 8-GPU instance is billed
    once, not once per GPU, and a 1-GPU job on an 8-GPU instance pays for all eight. Spot pays the spot price for
    ``hours * (1 + spot_rework_factor)`` (part ``spot_rework``). A reserved term is a commitment: the instances
    are paid every hour of the term at the provider's discounted rate, so a month of the term,
    ``instances x rate x (1 - discount) x 730 h``, is spread over the hours of use a month
    (``use_hours_per_month``, at most 730; this job once a month when not stated), and the hourly equivalent is
    that month over those hours. Storage is per instance-hour, egress once per job
    (docs/method.md, "Cost of a job").

    Args:
        offer: the cloud offer; its prices are for the whole instance.
        devices: accelerators the job uses.
        hours: wall-clock hours of the job.
        assumptions: spot rework, discounts, storage and egress, datacenter power for the energy figure.
        spot: price at the spot rate.
        reserved_years: 0, 1 or 3: the reserved/committed discount of the provider. None (the default) takes
            ``assumptions.reserved_years`` for an on-demand quote, where the provider publishes a discount, and
            no term for a spot quote or a provider without one.
        accel: the offer's accelerator, for the energy figure (TDP-based, information only, zero cost).
        use_hours_per_month: hours a month the reserved instances work (the stated use); None: ``hours``.
    Returns:
        A :class:`CloudQuote`.
    Raises:
        ValueError: bad devices/hours, a missing price, spot with a reserved term, or a term the provider has no
            published discount for.
    """
    _check_job(devices, hours)
    if reserved_years is None:  # the assumptions' term where the provider publishes a discount, none for spot
        reserved_years = 0 if spot else assumptions.reserved_years
        discount = assumptions.reserved_discount(offer.provider, reserved_years)
        if discount is None:
            reserved_years, discount = 0, 0.0
    else:
        if spot and reserved_years:
            raise ValueError("reserved_years: spot prices cannot be reserved")
        discount = assumptions.reserved_discount(offer.provider, reserved_years)
        if discount is None:
            raise ValueError(f"reserved_years: no published reserved discount for {offer.provider}")
    price = offer.spot_usd_per_h if spot else offer.on_demand_usd_per_h
    if price is None:
        raise ValueError(f"{offer.id}: no {'spot' if spot else 'on-demand'} price")
    kw = datacenter_kw_per_device(accel.tdp_w, assumptions) if accel is not None and accel.tdp_w else 0.0
    return _cloud_quote(offer, devices, hours, assumptions, spot, reserved_years, discount, price, kw,
                        use_hours_per_month)


def offer_quotes(offers: Iterable[CloudOffer], accel: Accelerator, devices: int, hours: float,
                 assumptions: CostAssumptions, use_hours_per_month: float | None = None,
                 spot_offers: bool = True) -> list[CloudQuote]:
    """Every cloud quote of a job on ``accel``'s offers: each offer on-demand (with the assumptions' reserved term
    where its provider publishes a discount, spread over ``use_hours_per_month``) and, with ``spot_offers``, at
    its spot price; offers of another accelerator or without the price are skipped.

    The same quotes as :func:`cloud_job_cost` offer by offer (``reserved_years`` None), with the job checked and
    the discounts and the power looked up once for all offers: a plan prices two hundred offers per keystroke.

    Raises:
        ValueError: bad devices/hours.
    """
    _check_job(devices, hours)
    a = assumptions
    kw = datacenter_kw_per_device(accel.tdp_w, a) if accel.tdp_w else 0.0
    years = a.reserved_years
    terms: dict[str, tuple[int, float]] = {}
    quotes: list[CloudQuote] = []
    for offer in offers:
        if offer.accelerator_id != accel.id:
            continue
        price = offer.on_demand_usd_per_h
        if price is not None:
            term = terms.get(offer.provider) if years else (0, 0.0)
            if term is None:
                discount = a.reserved_discount(offer.provider, years)
                term = terms[offer.provider] = (0, 0.0) if discount is None else (years, discount)
            quotes.append(_cloud_quote(offer, devices, hours, a, False, term[0], term[1], price, kw,
                                       use_hours_per_month))
        if spot_offers and offer.spot_usd_per_h is not None:
            quotes.append(_cloud_quote(offer, devices, hours, a, True, 0, 0.0, offer.spot_usd_per_h, kw, None))
    return quotes


def _cloud_quote(offer: CloudOffer, devices: int, hours: float, assumptions: CostAssumptions, spot: bool,
                 reserved_years: int, discount: float, price: float, kw_per_device: float,
                 use_hours_per_month: float | None) -> CloudQuote:
    """:func:`cloud_job_cost` once its inputs are checked and the term, its discount, the price and the facility
    power per device are known."""
    instance_rate = price * (1.0 - discount)
    instances = math.ceil(devices / offer.accelerator_count)
    rework = assumptions.spot_rework_factor if spot else 0.0
    term_rate = used = None
    if reserved_years and hours > 0:
        # The whole term is paid: a month of it (at the reserved rate) times the job's share of the month's use,
        # 1 for this job alone; the hourly equivalent follows from that rent (one rounding path).
        term_rate = instance_rate
        used = min(hours if use_hours_per_month is None else use_hours_per_month, HOURS_PER_MONTH)
        rent = instances * term_rate * HOURS_PER_MONTH * (hours / max(used, MIN_USE_H))
        instance_rate = rent / (instances * hours)
        per_device = instance_rate / offer.accelerator_count
        while devices * hours * per_device > rent:  # rounding: the shown rate never claims more than the rent
            per_device = math.nextafter(per_device, 0.0)
    else:
        per_device = instance_rate / offer.accelerator_count
        # Equal or more in exact arithmetic; max() keeps rent >= device-hours * per-device rate after rounding too.
        rent = max(instances * instance_rate * hours, (devices * hours) * per_device)
    parts = CostBreakdown.of_four("rent", float(rent), "spot_rework", float(rent * rework), "storage",
                                  float(assumptions.storage_usd_per_h * instances * hours * (1.0 + rework)),
                                  "egress", float(assumptions.egress_usd))
    energy = 0.0
    if kw_per_device:
        energy = kw_per_device * devices * hours * (1.0 + rework)
    # Every field given, none derived: the frozen dataclass's __init__ would only set them one by one (a plan
    # makes two hundred quotes per keystroke); tests/cost/test_jobs.py checks it equals CloudQuote(...).
    quote = object.__new__(CloudQuote)
    quote.__dict__.update(
        offer_id=offer.id, accelerator_id=offer.accelerator_id, devices=devices, hours=float(hours),
        spot=spot, reserved_years=reserved_years, instances=instances, usd_per_instance_hour=instance_rate,
        usd_per_device_hour=per_device,
        billed_device_hours=instances * offer.accelerator_count * hours * (1.0 + rework),
        energy_kwh=energy, breakdown=parts, term_usd_per_instance_hour=term_rate, term_use_hours_per_month=used)
    return quote


def home_rigs(devices: int, a: CostAssumptions) -> int:
    """Rigs needed for ``devices`` GPUs at ``home_gpus_per_rig`` each."""
    return math.ceil(devices / a.home_gpus_per_rig)


def home_system_usd(devices: int, a: CostAssumptions) -> float:
    """Rest-of-system price: one base system per rig plus the extra per GPU beyond the first in each rig."""
    rigs = home_rigs(devices, a)
    return rigs * a.home_system_price_usd + (devices - rigs) * a.home_system_extra_gpu_usd


def onprem_capex_per_device(price_usd: float, a: CostAssumptions) -> float:
    """Capex per GPU: price * server overhead, grossed up so the interconnect is its share of the total capex.

    docs/method.md: server overhead x1.54-1.69 over GPU cost (8-GPU servers), cluster interconnect about 19 percent
    of capex; so capex = price * overhead / (1 - share).
    """
    return price_usd * a.onprem_server_overhead / (1.0 - a.onprem_interconnect_share)
