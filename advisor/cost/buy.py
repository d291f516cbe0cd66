"""What to buy: hardware within a budget ranked by cost per job over its life, against renting the same jobs.

Pure pricing (no I/O): :func:`purchases` lists what one could buy (1 to 4 cards of each consumer and
workstation GPU at its launch and street price, the Macs of ``resources/machines.csv``, and cards added to
the GPUs already owned); :func:`price_purchase` prices one of them for a set of jobs run ``jobs_per_month``
times each, given how long each job takes on it (the planner's figures) and what renting it costs.
docs/method.md, "What to buy".

Per purchase, with N runs a month of each job j that fits (hours h_j) and r_j the cheapest rent of job j:
    running_j   = owned_job_cost(h_j): electricity of GPUs and system for the job's hours (wear when set)
    monthly     = sum_j N x running_j                              (``monthly_usd``: electricity a month)
    rest        = sum over jobs that do not fit of N x r_j          (still rented)
    usd_per_job = (upfront x (1 - resale_fraction) / (12 x lifetime_years) + monthly + rest) / (N x jobs)
    break-even  = upfront / sum_j N x (r_j - running_j)  months     (None when that saving is not positive)
Renting wins ("keep renting") when its cost per job, sum_j r_j / jobs, is not above the purchase's.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from advisor.catalog.records import Accelerator
from advisor.cost.assumptions import CostAssumptions
from advisor.cost.jobs import home_rigs, home_system_usd
from advisor.cost.ownership import owned_job_cost

BUY_KINDS = ("consumer", "workstation")
MAX_CARDS = 4
MONTHS_PER_YEAR = 12
DAYS_PER_MONTH = 365 / 12
KEEP_RENTING = "keep renting"
BUY = "buy"
USE_OWNED = "use what you own"


@dataclass(frozen=True)
class Purchase:
    """One thing to buy (or the owned hardware as it is).

    Attributes:
        id: ``new:<n>x<acc>``, ``street:<n>x<acc>``, ``add-new:<m>x<acc>``, ``add-street:<m>x<acc>``,
            ``mac:<machine>`` or ``owned:<n>x<acc>``.
        hardware: what it is, for people ("2 x GeForce RTX 3090, street price, in a new rig").
        kind: ``new``, ``street``, ``upgrade``, ``apple`` or ``owned``.
        accelerator: what to plan on (a Mac: its chip in that configuration).
        devices: GPUs the jobs run on (an upgrade: the owned ones plus the added ones).
        cards_usd / system_usd: the cards' price and the rest of the system (a new rig, or what more GPUs in
            the owned rig need: ``home_system_extra_gpu_usd`` each); ``upfront_usd`` is their sum.
        price_basis: ``launch 2020``, ``street 2026-Q1``, ``Apple 2023-06`` (a machine's price date), ``owned``.
        price_source: where the price comes from (the catalog row's sources).
        owned_devices: GPUs of this kind already owned (upgrades and the owned row).
        whole_machine_power: the accelerator's ``tdp_w`` is the whole machine at the wall (a Mac): no system
            power is added.
    """

    id: str
    hardware: str
    kind: str
    accelerator: Accelerator
    devices: int
    cards_usd: float
    system_usd: float
    price_basis: str
    price_source: str
    owned_devices: int = 0
    whole_machine_power: bool = False
    upfront_usd: float = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "upfront_usd", self.cards_usd + self.system_usd)


def _prices(acc: Accelerator) -> list[tuple[str, float, str]]:
    """(kind, price, basis) of a card: its launch price and, when the catalog has a different one, its street price."""
    out = []
    if acc.launch_price_usd:
        out.append(("new", float(acc.launch_price_usd), f"launch {acc.launch_year}" if acc.launch_year else "launch"))
    if acc.street_price_usd and acc.street_price_usd != acc.launch_price_usd:
        out.append(("street", float(acc.street_price_usd),
                    f"street {acc.street_price_date}" if acc.street_price_date else "street"))
    return out


def buyable(acc: Accelerator) -> bool:
    """A desktop card one can buy on its own: a consumer or workstation GPU with a TDP (laptop parts come in laptops)."""
    return acc.kind in BUY_KINDS and bool(acc.tdp_w) and "laptop" not in acc.id and not acc.derived


def purchases(accelerators: Iterable[Accelerator], machines: Iterable[tuple[object, Accelerator]],
              owned: Sequence[tuple[Accelerator, int]], a: CostAssumptions,
              budget_usd: float | None = None) -> list[Purchase]:
    """Everything one could buy within a budget, and the owned hardware as it is.

    Args:
        accelerators: the catalog's accelerators (the buyable ones are used, see :func:`buyable`).
        machines: ``(machine, accelerator)`` pairs: a :class:`~advisor.catalog.machines.Machine` and its chip in
            that configuration (``Machine.accelerator``).
        owned: ``(accelerator, count)`` of the GPUs already owned, one entry per kind.
        a: cost assumptions (rest-of-system prices, GPUs per rig).
        budget_usd: leave out what costs more upfront (None: no limit).
    Returns:
        Purchases in a stable order: owned first, then upgrades, new rigs, Macs.
    """
    out: list[Purchase] = []
    for acc, k in owned:
        if k < 1:
            continue
        out.append(Purchase(f"owned:{k}x{acc.id}", f"{k} x {acc.name} (owned)", "owned", acc, k, 0.0, 0.0,
                            "owned", "", owned_devices=k))
        if not buyable(acc):  # a laptop's GPU or one not in the catalog: nothing to add to it
            continue
        for kind, price, basis in _prices(acc):
            for m in range(1, MAX_CARDS - k + 1):
                system = home_system_usd(k + m, a) - home_system_usd(k, a)
                out.append(Purchase(f"add-{kind}:{m}x{acc.id}", f"add {m} x {acc.name} to the {k} owned",
                                    "upgrade", acc, k + m, m * price, system, basis, acc.source, owned_devices=k))
    for acc in accelerators:
        if not buyable(acc):
            continue
        for kind, price, basis in _prices(acc):
            for n in range(1, MAX_CARDS + 1):
                rig = "a new rig" if home_rigs(n, a) == 1 else f"{home_rigs(n, a)} new rigs"
                out.append(Purchase(f"{kind}:{n}x{acc.id}", f"{n} x {acc.name} in {rig}", kind, acc, n,
                                    n * price, home_system_usd(n, a), basis, acc.source))
    for machine, acc in machines:
        out.append(Purchase(f"mac:{acc.id}", acc.name, "apple", acc, 1, float(acc.launch_price_usd or 0), 0.0,
                            f"Apple {getattr(machine, 'price_date', '')}".strip(), acc.source, whole_machine_power=True))
    if budget_usd is not None:
        out = [p for p in out if p.upfront_usd <= budget_usd]
    return out


@dataclass(frozen=True)
class JobRun:
    """How one job runs on one purchase (from the planner): whether it fits and its wall-clock hours."""

    fits: bool
    hours: float | None


@dataclass(frozen=True)
class Rent:
    """The cheapest rent of one job: the cloud option that fits at the lowest job cost (None: none fits)."""

    option_id: str
    cost_usd: float
    hours: float


@dataclass(frozen=True)
class BuyOption:
    """One purchase priced for the jobs (the row of ``advisor buy``; ``to_json`` is its ``advisor.buy/1`` form)."""

    purchase: Purchase
    hours_per_job: dict[str, float | None]
    fits: dict[str, bool]
    monthly_usd: float
    rent_monthly_usd: float
    usd_per_job: float | None
    break_even_months: float | None
    busy_hours_per_month: float
    available_hours_per_month: float
    verdict: str
    break_even_vs_owned_months: float | None = None

    @property
    def overbooked(self) -> bool:
        """The jobs that fit need more hours a month than the hardware is available (``hours_per_day``)."""
        return self.busy_hours_per_month > self.available_hours_per_month

    def to_json(self) -> dict:
        p = self.purchase
        doc = {"hardware": p.hardware, "id": p.id, "kind": p.kind, "accelerator": p.accelerator.id,
               "devices": p.devices, "upfront_usd": p.upfront_usd, "cards_usd": p.cards_usd,
               "system_usd": p.system_usd, "monthly_usd": self.monthly_usd, "rent_monthly_usd": self.rent_monthly_usd,
               "usd_per_job": self.usd_per_job, "hours_per_job": dict(self.hours_per_job), "fits": dict(self.fits),
               "break_even_months": self.break_even_months, "verdict": self.verdict,
               "busy_hours_per_month": self.busy_hours_per_month,
               "available_hours_per_month": self.available_hours_per_month,
               "price": {"basis": p.price_basis, "source": p.price_source}}
        if p.kind == "upgrade":
            doc["owned_devices"] = p.owned_devices
            doc["break_even_vs_owned_months"] = self.break_even_vs_owned_months
        return doc


def running_usd(p: Purchase, hours: float, a: CostAssumptions) -> float:
    """What one run of a job costs on a purchase once owned: electricity of the GPUs and the system (wear when a
    wear rate is set), ``advisor.cost.ownership``; a Mac's power is its whole machine at the wall."""
    if p.whole_machine_power:
        quote = owned_job_cost(p.accelerator, p.devices, hours, a.with_overrides(home_system_power_w=0.0))
    else:
        quote = owned_job_cost(p.accelerator, p.devices, hours, a, machines=home_rigs(p.devices, a))
    return quote.total_usd


def _check_jobs_per_month(jobs_per_month: float) -> None:
    if isinstance(jobs_per_month, bool) or not isinstance(jobs_per_month, (int, float)) \
            or not math.isfinite(jobs_per_month) or jobs_per_month <= 0:
        raise ValueError(f"jobs_per_month must be a positive finite number, got {jobs_per_month!r}")


def rent_per_job(rent: Mapping[str, Rent | None]) -> float | None:
    """Renting's cost per job over the jobs that can be rented (None when none can)."""
    costs = [r.cost_usd for r in rent.values() if r is not None]
    return sum(costs) / len(costs) if costs else None


def price_purchase(p: Purchase, runs: Mapping[str, JobRun], rent: Mapping[str, Rent | None], jobs_per_month: float,
                   a: CostAssumptions, owned_monthly_usd: float | None = None) -> BuyOption:
    """Price one purchase for the jobs (formulas in the module docstring).

    Args:
        runs: each job's fit and hours on this purchase (every job of ``rent``).
        rent: each job's cheapest rent (None: no cloud option fits it; that job is left out of the money).
        jobs_per_month: runs of each job a month.
        owned_monthly_usd: what the owned hardware as it is costs a month for the same jobs (its running cost plus
            the rent of what it cannot run): an upgrade's break-even against keeping it.
    Raises:
        ValueError: a job missing from ``runs``, or bad ``jobs_per_month``.
    """
    _check_jobs_per_month(jobs_per_month)
    n = jobs_per_month
    hours: dict[str, float | None] = {}
    fits: dict[str, bool] = {}
    monthly = rest = saving = busy = 0.0
    priced = 0
    for job, r in rent.items():
        if job not in runs:
            raise ValueError(f"no run of job {job!r} on {p.id}")
        run = runs[job]
        fits[job] = bool(run.fits)
        hours[job] = float(run.hours) if run.fits and run.hours is not None else None
        if r is not None:
            priced += 1
        if fits[job]:
            cost = running_usd(p, hours[job], a)
            monthly += n * cost
            busy += n * hours[job]
            if r is not None:
                saving += n * (r.cost_usd - cost)
        elif r is not None:
            rest += n * r.cost_usd
    life_months = a.lifetime_years * MONTHS_PER_YEAR
    per_job = None
    if priced:
        per_job = (p.upfront_usd * (1.0 - a.resale_fraction) / life_months + monthly + rest) / (n * priced)
    break_even = p.upfront_usd / saving if saving > 0 else None
    vs_owned = None
    if owned_monthly_usd is not None:
        gain = owned_monthly_usd - (monthly + rest)
        vs_owned = p.upfront_usd / gain if gain > 0 else None
    rent_cost = rent_per_job(rent)
    if not any(fits.values()) or per_job is None or rent_cost is None or per_job >= rent_cost:
        verdict = KEEP_RENTING
    else:
        verdict = USE_OWNED if p.kind == "owned" else BUY
    available = a.hours_per_day * a.utilisation * DAYS_PER_MONTH
    return BuyOption(p, hours, fits, monthly, rest, per_job, break_even, busy, available, verdict, vs_owned)


def rank(options: Iterable[BuyOption]) -> list[BuyOption]:
    """Options that fit at least one job, cheapest per job first (the owned hardware first among equals); those
    that fit none are left out."""
    kept = [o for o in options if any(o.fits.values()) and o.usd_per_job is not None]
    return sorted(kept, key=lambda o: (o.overbooked, o.usd_per_job, o.purchase.upfront_usd, o.purchase.id))
