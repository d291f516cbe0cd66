"""When owning beats renting: Dettmers' break-even, its per-device-hour form, and the :class:`BreakEven` record
(``advisor.cost.ownership.payback`` fills it against a rent that can run the job)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from advisor.catalog.records import CloudOffer

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
    """When buying pays back against renting a cloud option that runs the same job (``advisor.cost.ownership.payback``).

    ``vs`` is the cloud option id (None without one that can run the job); ``device_hours`` the hours of use per
    device by the break-even and ``months`` the months to it at the stated (or assumed) use, both None when it
    never pays back; ``pays_back`` False when that is later than the hardware's life (``life_months``) or never;
    ``jobs_per_month`` the cadence at which owning costs the same per job as renting over its life.
    """

    vs: str | None
    device_hours: float | None
    months: float | None
    rent_usd_per_device_hour: float | None = None  # the rate compared with (spot rework included)
    provider: str = ""  # the provider of ``vs``, as the catalog names it
    jobs_per_month: float | None = None
    pays_back: bool = False
    life_months: float | None = None
    rent_usd_per_job: float | None = None
    rent_hours: float | None = None
    upfront_usd: float = 0.0
    own_monthly_usd: float = 0.0  # money spent a month owning it (running and holding costs, no purchase)
    rent_monthly_usd: float = 0.0  # the same work rented a month
    busy_hours_per_month: float = 0.0
    max_jobs_per_month: float | None = None  # runs of the job a month holds (available hours / job hours)

    def as_dict(self) -> dict[str, object]:
        return {"vs": self.vs, "device_hours": self.device_hours, "months": self.months,
                "rent_usd_per_device_hour": self.rent_usd_per_device_hour, "jobs_per_month": self.jobs_per_month,
                "pays_back_within_life": self.pays_back, "life_months": self.life_months,
                "rent_usd_per_job": self.rent_usd_per_job, "upfront_usd": self.upfront_usd,
                "max_jobs_per_month": self.max_jobs_per_month,
                "own_monthly_usd": self.own_monthly_usd, "rent_monthly_usd": self.rent_monthly_usd}

    def verdict(self) -> str:
        """Whether and when it pays back, and from what cadence (no option named)."""
        if self.vs is None:
            return "no cloud option that can run this job to compare with"
        if self.jobs_per_month is not None:
            cadence = f"; owning costs less per job from {self.jobs_per_month:,.1f} jobs a month"
        elif self.max_jobs_per_month is not None:
            cadence = f"; not even at {self.max_jobs_per_month:,.0f} jobs a month, as many as a month holds"
        else:
            cadence = ""
        if self.months is None:
            return f"does not pay back: renting costs less a month than owning costs to run{cadence}"
        if not self.pays_back:
            life = f"{(self.life_months or 0) / 12:g}-year life"
            return f"does not pay back within its {life} ({self.months:,.0f} months at this use){cadence}"
        return f"pays back after {self.months:,.1f} months at this use{cadence}"

    def sentence(self, option_id: str) -> str:
        """One line for people; never names an option that cannot run the job (``vs`` is one that can)."""
        if self.vs is None:
            return f"{option_id}: {self.verdict()}"
        return f"{option_id} against {self.vs}: {self.verdict()}"
