"""When owning beats renting: Dettmers' break-even and its per-device-hour form."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from advisor.catalog.records import CloudOffer
from advisor.cost.assumptions import CostAssumptions
from advisor.cost.jobs import OwnedQuote

DAYS_PER_MONTH = 365.0 / 12


def breakeven_days(hardware_usd: float, cloud_usd_per_h: float, kw: float, usd_per_kwh: float,
                   utilisation: float) -> float | None:
    """Days of ownership after which buying beats renting.

    Source: Tim Dettmers, "Which GPU(s) to Get for Deep Learning" (2023):
    ``days = hardware_usd / (24 * utilisation * (cloud_usd_per_h - kw * usd_per_kwh))``.

    Args:
        hardware_usd: purchase price of the hardware.
        cloud_usd_per_h: the rent it replaces, per hour.
        kw: power of the owned hardware while running, kW.
        usd_per_kwh: electricity price.
        utilisation: fraction of the day the hardware runs (0 < u <= 1).
    Returns:
        Days, or None when an hour of cloud costs no more than the electricity of an hour (renting always wins).
    Raises:
        ValueError: for a negative price or power, or a utilisation outside (0, 1].
    """
    for name, v in (("hardware_usd", hardware_usd), ("cloud_usd_per_h", cloud_usd_per_h), ("kw", kw),
                    ("usd_per_kwh", usd_per_kwh)):
        if not math.isfinite(v) or v < 0:
            raise ValueError(f"{name}: must be a finite number of zero or more, got {v!r}")
    if not (math.isfinite(utilisation) and 0 < utilisation <= 1):
        raise ValueError(f"utilisation: must be more than 0 and at most 1, got {utilisation!r}")
    denominator = 24.0 * utilisation * (cloud_usd_per_h - kw * usd_per_kwh)
    return _finite_or_none(hardware_usd, denominator)


def break_even_device_hours(owned_fixed_usd_per_device: float, owned_variable_usd_per_device_hour: float,
                            cloud_usd_per_device_hour: float) -> float | None:
    """Hours of use per device after which owning costs less than renting.

    The same balance as Dettmers' formula, per device-hour: ``fixed / (cloud - variable)``.

    Returns:
        Device-hours, or None when renting an hour costs no more than running an owned device for an hour.
    Raises:
        ValueError: for a negative or non-finite input.
    """
    for name, v in (("owned_fixed_usd_per_device", owned_fixed_usd_per_device),
                    ("owned_variable_usd_per_device_hour", owned_variable_usd_per_device_hour),
                    ("cloud_usd_per_device_hour", cloud_usd_per_device_hour)):
        if not math.isfinite(v) or v < 0:
            raise ValueError(f"{name}: must be a finite number of zero or more, got {v!r}")
    margin = cloud_usd_per_device_hour - owned_variable_usd_per_device_hour
    return _finite_or_none(owned_fixed_usd_per_device, margin)


def _finite_or_none(numerator: float, denominator: float) -> float | None:
    """numerator / denominator, or None ("never") when the saving per hour is nil, negative or too small to
    reach the outlay in any representable time."""
    if denominator <= 0:
        return None
    result = numerator / denominator
    return result if math.isfinite(result) else None


def months_of_use(device_hours: float | None, hours_per_day: float) -> float | None:
    """Calendar months to accumulate ``device_hours`` of use per device at ``hours_per_day`` (None passes through)."""
    if device_hours is None:
        return None
    if not (math.isfinite(hours_per_day) and 0 < hours_per_day <= 24):
        raise ValueError(f"hours_per_day: must be more than 0 and at most 24, got {hours_per_day!r}")
    return device_hours / hours_per_day / DAYS_PER_MONTH


def cheapest_offer(offers: Iterable[CloudOffer], accelerator_id: str, spot: bool = False) -> CloudOffer | None:
    """The offer of an accelerator with the lowest price per device-hour (ties: the offer id), or None."""
    priced = [(o.usd_per_device_hour(spot), o.id, o) for o in offers
              if o.accelerator_id == accelerator_id and o.usd_per_device_hour(spot) is not None]
    return min(priced, key=lambda t: (t[0], t[1]))[2] if priced else None


@dataclass(frozen=True)
class BreakEven:
    """Break-even of an owned option against renting (``vs`` is the cloud option id, None without one).

    ``device_hours`` is None when renting is always cheaper or there is no offer; ``months`` is the same at the
    option's hours of use per day.
    """

    vs: str | None
    device_hours: float | None
    months: float | None
    rent_usd_per_device_hour: float | None = None  # the rate compared with (spot rework included)
    provider: str = ""  # the provider of ``vs``, as the catalog names it

    def as_dict(self) -> dict[str, object]:
        return {"vs": self.vs, "device_hours": self.device_hours, "months": self.months,
                "rent_usd_per_device_hour": self.rent_usd_per_device_hour}


def break_even(owned: OwnedQuote, offers: Iterable[CloudOffer], assumptions: CostAssumptions) -> BreakEven:
    """Break-even of an owned quote against the cheapest cloud offer of the same accelerator.

    The cloud rate is on-demand, or spot with the rework factor when ``assumptions.spot``. Months are counted at
    ``hours_per_day * utilisation`` for a home rig and ``onprem_hours_per_day * onprem_utilisation`` on-prem.
    """
    a = assumptions
    offer = cheapest_offer(offers, owned.accelerator_id, spot=a.spot)
    if offer is None:
        return BreakEven(None, None, None)
    rate = offer.usd_per_device_hour(a.spot)
    assert rate is not None  # cheapest_offer only returns priced offers
    if a.spot:
        rate *= 1.0 + a.spot_rework_factor
    hours = break_even_device_hours(owned.fixed_usd_per_device, owned.variable_usd_per_device_hour, rate)
    per_day = (a.hours_per_day * a.utilisation if owned.kind == "home"
               else a.onprem_hours_per_day * a.onprem_utilisation)
    vs = f"cloud:{offer.id}" + (":spot" if a.spot else "")
    return BreakEven(vs, hours, months_of_use(hours, per_day), rate, offer.provider)
