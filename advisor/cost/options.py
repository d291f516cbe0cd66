"""Price one device-job on every kind of option: the one pricing path of a plan.

A :class:`DeviceJob` is what the estimate says an accelerator needs: how many devices and for how many hours.
Pricing it gives one quote per option (home rig, on-prem, every cloud offer on-demand and spot).
``advisor.planner.options`` calls :func:`quote_job` for every accelerator of a plan; sensitivity plots plan
again (``advisor.planner.sensitivity``), so nothing else prices an option.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from advisor.catalog.records import Accelerator, CloudOffer
from advisor.cost.assumptions import CostAssumptions
from advisor.cost.compare import Point
from advisor.cost.jobs import CloudQuote, OwnedQuote, can_own, offer_quotes
from advisor.cost.ownership import NO_STATED_USE, Use, home_job_cost, onprem_job_cost

Quote = CloudQuote | OwnedQuote
KINDS = ("home", "onprem", "cloud")


@dataclass(frozen=True)
class DeviceJob:
    """One accelerator's share of a plan: ``devices`` of it for ``hours``, priced as the ``kinds`` listed, at the
    ``use`` the user states (home and on-prem holding costs, reserved terms follow it)."""

    accelerator: Accelerator
    devices: int
    hours: float
    kinds: tuple[str, ...] = KINDS
    use: Use = NO_STATED_USE

    @classmethod
    def at(cls, accelerator: Accelerator, devices: int, hours: float, kinds: tuple[str, ...] = KINDS,
           use: Use = NO_STATED_USE) -> DeviceJob:
        """``DeviceJob(...)`` of its fields without the frozen dataclass's per-field init (a plan prices a hundred
        groups per keystroke); equal to it (tests/cost/test_options.py)."""
        job = object.__new__(cls)
        job.__dict__.update(accelerator=accelerator, devices=devices, hours=hours, kinds=kinds, use=use)
        return job

    @property
    def use_hours_per_month(self) -> float | None:
        """Hours of use a month the user states (this job's runs and other use), None when not stated."""
        u = self.use
        return None if not u.stated else u.jobs_per_month * self.hours + u.other_hours_per_month


def quote_job(job: DeviceJob, offers: Iterable[CloudOffer], assumptions: CostAssumptions,
              spot_offers: bool = True) -> list[Quote]:
    """Every quote for a job: home and on-prem where the accelerator can be owned, then each cloud offer of the
    accelerator on-demand (with the assumptions' reserved term, spread over the stated use) and, with
    ``spot_offers``, at its spot price.

    Offers without the needed price are skipped; so are owned kinds for an accelerator without price or TDP.

    Raises:
        ValueError: for an unknown kind or bad devices/hours.
    """
    for kind in job.kinds:
        if kind not in KINDS:
            raise ValueError(f"kinds: unknown option kind {kind!r} (expected one of {', '.join(KINDS)})")
    acc, n, h, a = job.accelerator, job.devices, job.hours, assumptions
    quotes: list[Quote] = []
    if can_own(acc):
        if "home" in job.kinds:
            quotes.append(home_job_cost(acc, n, h, a, job.use))
        if "onprem" in job.kinds:
            quotes.append(onprem_job_cost(acc, n, h, a, job.use))
    if "cloud" in job.kinds:  # each offer as ``cloud_job_cost`` prices it, the job checked once
        quotes += offer_quotes(offers, acc, n, h, a, job.use_hours_per_month, spot_offers)
    return quotes


def job_points(jobs: Iterable[DeviceJob], offers: Sequence[CloudOffer], assumptions: CostAssumptions,
               spot_offers: bool = True) -> list[Point]:
    """``(hours, cost_usd, option id)`` for every quote of every job (for ranking and the Pareto front)."""
    return [(q.hours, q.total_usd, q.option_id)
            for job in jobs for q in quote_job(job, offers, assumptions, spot_offers)]
