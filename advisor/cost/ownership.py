"""What an hour of owned, bought or on-prem hardware costs: the one place that decides (docs/method.md,
"Cost of owning").

Owning has two kinds of cost. *Holding* costs come every month whether the hardware works or not:
depreciation (home rig: price less resale over its life) or amortisation (on-prem capex over its years),
financing when a rate is set, idle power for the hours it is on but not working, colocation and support.
*Running* costs come with each hour of work: energy, and wear when a wear rate is set. A job carries its
share of a month's holding costs, ``job hours / busy hours``, where the busy hours come from the use the user
states (:class:`Use`: jobs a month and their hours, plus other use) or, when nothing is stated, from the
assumptions' hours per day and utilisation. So a server that runs one job a month carries a month of holding
costs on that job; one that runs thirty shares it thirty ways. Hardware already owned (``owned``) is paid for:
it carries its running costs only.

The API the planner, the buy advisor and the serving plans use:
    ``home_holding``, ``onprem_holding``, ``owned_holding`` -> :class:`Holding` (per month, per hour);
    :func:`utilisation` -> :class:`Utilisation` (busy over available hours, stated or assumed);
    :func:`job_cost` -> :class:`~advisor.cost.jobs.OwnedQuote` (a job's share, with named parts);
    :func:`payback` -> :class:`~advisor.cost.breakeven.BreakEven` against a rent that runs the same job;
    :func:`cumulative_usd` -> money spent after some months (the cumulative-cost chart).
``home_job_cost``, ``onprem_job_cost`` and ``owned_job_cost`` are these for one call.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from advisor.catalog.records import Accelerator
from advisor.cost.assumptions import CostAssumptions
from advisor.cost.breakdown import CostBreakdown
from advisor.cost.breakeven import BreakEven
from advisor.cost.jobs import (
    OwnedQuote,
    _check_job,
    _own_inputs,
    datacenter_kw_per_device,
    home_rigs,
    home_system_usd,
    onprem_capex_per_device,
)

DAYS_PER_MONTH = 365.0 / 12
MONTHS_PER_YEAR = 12
OWNED = "owned"
# The holding parts in display order; a part is listed only where it is above zero (financing, idle power) or
# always for its kind (depreciation on a home rig; capex share, colocation, support on-prem).
HOLDING_PARTS = ("depreciation", "capex_share", "financing", "idle_power", "colocation", "support")


@dataclass(frozen=True)
class Use:
    """How much owned hardware works a month.

    Attributes:
        jobs_per_month: runs of the job a month (None: not stated, the assumptions' utilisation applies).
        other_hours_per_month: other work on the same hardware a month, hours (shares the holding costs).
    """

    jobs_per_month: float | None = None
    other_hours_per_month: float = 0.0

    def __post_init__(self) -> None:
        n = self.jobs_per_month
        if n is not None and (isinstance(n, bool) or not isinstance(n, (int, float)) or not math.isfinite(n)
                              or n <= 0):
            raise ValueError(f"jobs_per_month: must be a finite number above 0, got {n!r}")
        h = self.other_hours_per_month
        if isinstance(h, bool) or not isinstance(h, (int, float)) or not math.isfinite(h) or h < 0:
            raise ValueError(f"other_use_hours_per_month: must be a finite number of zero or more, got {h!r}")

    @property
    def stated(self) -> bool:
        return self.jobs_per_month is not None


NO_STATED_USE = Use()  # nothing stated: the assumptions' hours per day and utilisation apply


@dataclass(frozen=True)
class Holding:
    """``devices`` of an accelerator held as a home rig, on-prem servers or owned hardware.

    Attributes:
        kind: ``home``, ``onprem`` or ``owned``.
        upfront_usd: what buying it costs (GPUs and the rest of the system, or on-prem capex); 0 when owned.
        resale_usd: what it sells for at the end of its life (home rig), 0 otherwise.
        life_months: months its price is spread over (home lifetime, on-prem amortisation).
        monthly_usd: holding parts a month that do not depend on use (depreciation or capex, financing,
            colocation, support), by name.
        idle_kw / idle_usd_per_kwh: power while on but not working, and its price (idle power part).
        running_kw: power while working (GPUs and system; on-prem: with the facility's PUE).
        running_usd_per_hour: running parts per hour of work of the whole setup (energy, wear).
        available_hours_per_month: hours a month it can work (hours per day x days).
        assumed_busy_hours_per_month: its busy hours when no use is stated (available x utilisation).
    """

    kind: str
    accelerator_id: str
    devices: int
    upfront_usd: float
    resale_usd: float
    life_months: float
    monthly_usd: tuple[tuple[str, float], ...]
    idle_kw: float
    idle_usd_per_kwh: float
    running_kw: float
    running_usd_per_hour: tuple[tuple[str, float], ...]
    available_hours_per_month: float
    assumed_busy_hours_per_month: float

    @functools.cached_property
    def running_rate_usd_per_hour(self) -> float:
        return math.fsum(v for _, v in self.running_usd_per_hour)

    @functools.cached_property
    def assumed_utilisation(self) -> Utilisation:
        """The use assumed when none is stated: ``available x utilisation`` busy hours a month."""
        return Utilisation(self.assumed_busy_hours_per_month, self.available_hours_per_month, False, None)

    @functools.cached_property
    def monthly_total_usd(self) -> float:
        """The holding parts of a month summed (``math.fsum``), idle power aside."""
        return math.fsum(v for _, v in self.monthly_usd)

    @functools.cached_property
    def monthly_paid_usd(self) -> float:
        """The holding parts of a month paid in cash (no depreciation or capex share) summed, idle power aside."""
        return math.fsum([v for k, v in self.monthly_usd if k not in ("depreciation", "capex_share")])

    @functools.cached_property
    def monthly_sunk_usd(self) -> float:
        """The depreciation and capex share of a month (``sum``, in order)."""
        return sum(v for k, v in self.monthly_usd if k in ("depreciation", "capex_share"))

    @functools.cached_property
    def part_orders(self) -> tuple[tuple, tuple]:
        """How :func:`job_cost` lays out its parts, without and with idle power: ``(names, order, distinct)``, the
        names in display order (``_PART_ORDER``, a stable sort), ``order`` the index of each in the amounts as made
        (holding parts a month, idle power, running parts), ``distinct`` whether no name repeats."""
        out = []
        for idle in (False, True):
            made = [n for n, _ in self.monthly_usd] + (["idle_power"] if idle else []) + [
                n for n, _ in self.running_usd_per_hour]
            order = tuple(sorted(range(len(made)), key=lambda i: _PART_ORDER.get(made[i], len(_PART_ORDER))))
            out.append((tuple(made[i] for i in order), order, len(set(made)) == len(made)))
        return out[0], out[1]

    def monthly_fixed_usd(self, busy_hours: float) -> float:
        """Holding costs of a month with ``busy_hours`` of work (idle power for the rest of the available hours)."""
        idle = max(0.0, self.available_hours_per_month - busy_hours) * self.idle_kw * self.idle_usd_per_kwh
        return self.monthly_total_usd + idle

    def monthly_cash_usd(self, busy_hours: float) -> float:
        """Money paid a month besides the purchase (financing, idle power, colocation, support; no depreciation),
        for cumulative spending."""
        idle = max(0.0, self.available_hours_per_month - busy_hours) * self.idle_kw * self.idle_usd_per_kwh
        return self.monthly_paid_usd + idle


@dataclass(frozen=True)
class Utilisation:
    """How much the hardware works: busy hours over the hours it is available, and where the busy hours come from.

    ``overbooked``: the stated use needs more hours than are available (the busy hours are capped there).
    """

    busy_hours_per_month: float
    available_hours_per_month: float
    stated: bool
    jobs_per_month: float | None
    overbooked: bool = False

    @property
    def fraction(self) -> float:
        a = self.available_hours_per_month
        return self.busy_hours_per_month / a if a > 0 else 0.0

    def text(self) -> str:
        """``busy 9 h of 730 a month (1 %), 1 job a month`` or ``... (80 %, assumed: give --jobs-per-month)``."""
        how = (f"{self.jobs_per_month:g} job{'s' if self.jobs_per_month != 1 else ''} a month" if self.stated
               else "assumed: give --jobs-per-month")
        over = "; overbooked: the stated use needs more hours than there are" if self.overbooked else ""
        return (f"busy {self.busy_hours_per_month:,.0f} h of {self.available_hours_per_month:,.0f} a month "
                f"({self.fraction:.0%}), {how}{over}")

    def as_dict(self) -> dict[str, object]:
        return {"busy_hours_per_month": self.busy_hours_per_month,
                "available_hours_per_month": self.available_hours_per_month, "fraction": self.fraction,
                "stated": self.stated, "jobs_per_month": self.jobs_per_month, "overbooked": self.overbooked}


def financing_usd_per_month(principal_usd: float, rate_per_year: float, months: float) -> float:
    """Interest a month of a loan of ``principal_usd`` repaid in equal payments over ``months``, averaged over the
    loan: ``payment - principal / months`` with ``payment = P r / (1 - (1 + r)^-n)``, ``r`` the monthly rate
    (the standard annuity formula)."""
    if rate_per_year <= 0 or principal_usd <= 0:
        return 0.0
    r = rate_per_year / MONTHS_PER_YEAR
    paid_down = -math.expm1(-months * math.log1p(r))  # 1 - (1 + r)^-n, exact for a tiny rate too
    if paid_down <= 0:
        return 0.0
    return max(0.0, principal_usd * r / paid_down - principal_usd / months)


def rig_holding(accel_id: str, devices: int, upfront_usd: float, running_w: float, idle_w: float,
                a: CostAssumptions) -> Holding:
    """A home rig (or a whole machine such as a Mac) bought for ``upfront_usd``: price less resale over
    ``lifetime_years``, financing, ``idle_w`` for the available hours it does not work; ``running_w`` at the wall
    while working (wear when set)."""
    resale = upfront_usd * a.resale_fraction
    life = a.lifetime_years * MONTHS_PER_YEAR
    monthly = [("depreciation", (upfront_usd - resale) / life)]
    fin = financing_usd_per_month(upfront_usd, a.financing_rate_per_year, life)
    if fin > 0:
        monthly.append(("financing", fin))
    kw = running_w / 1000.0
    running = [("energy", kw * a.electricity_usd_per_kwh)]
    if a.owned_wear_usd_per_gpu_hour > 0:
        running.append(("wear", a.owned_wear_usd_per_gpu_hour * devices))
    available = a.hours_per_day * DAYS_PER_MONTH
    return Holding("home", accel_id, devices, upfront_usd, resale, life, tuple(monthly), idle_w / 1000.0,
                   a.electricity_usd_per_kwh, kw, tuple(running), available, available * a.utilisation)


def home_holding(accel: Accelerator, devices: int, a: CostAssumptions) -> Holding:
    """A home rig of ``devices`` GPUs at the catalog price with its rest of system (:func:`rig_holding`):
    GPUs at TDP x load plus each rig's system power while working, each rig's idle power otherwise.

    Raises:
        ValueError: bad devices, or an accelerator without a purchase price or TDP.
    """
    _check_job(devices, 0.0)
    price, tdp = _own_inputs(accel)
    rigs = home_rigs(devices, a)
    return rig_holding(accel.id, devices, price * devices + home_system_usd(devices, a),
                       tdp * a.home_load_factor * devices + a.home_system_power_w * rigs,
                       a.home_idle_power_w * rigs, a)


def onprem_holding(accel: Accelerator, devices: int, a: CostAssumptions, *,
                   capex_usd: float | None = None) -> Holding:
    """On-prem servers for ``devices`` GPUs: capex (``onprem_capex_per_device``) over the amortisation years,
    financing, colocation per kW of server power and staff per GPU-year every month, idle power (a fraction of
    the server power, with the PUE) for the hours it does not work; facility energy while working.
    ``capex_usd`` replaces the capex (one server bought for a team: no share of a cluster network).

    Raises:
        ValueError: bad devices, or an accelerator without a purchase price or TDP.
    """
    _check_job(devices, 0.0)
    price, tdp = _own_inputs(accel)
    capex = onprem_capex_per_device(price, a) * devices if capex_usd is None else capex_usd
    life = a.onprem_amortisation_years * MONTHS_PER_YEAR
    it_kw = tdp * a.onprem_power_factor / 1000.0 * devices
    monthly = [("capex_share", capex / life)]
    fin = financing_usd_per_month(capex, a.financing_rate_per_year, life)
    if fin > 0:
        monthly.append(("financing", fin))
    monthly += [("colocation", it_kw * a.colocation_usd_per_kw_month),
                ("support", a.staff_usd_per_gpu_year * devices / MONTHS_PER_YEAR)]
    kw = datacenter_kw_per_device(tdp, a) * devices
    running = [("energy", kw * a.onprem_electricity_usd_per_kwh)]
    if a.owned_wear_usd_per_gpu_hour > 0:
        running.append(("wear", a.owned_wear_usd_per_gpu_hour * devices))
    available = a.onprem_hours_per_day * DAYS_PER_MONTH
    return Holding("onprem", accel.id, devices, capex, 0.0, life, tuple(monthly),
                   it_kw * a.onprem_idle_power_fraction * a.pue, a.onprem_electricity_usd_per_kwh, kw,
                   tuple(running), available, available * a.onprem_utilisation)


def owned_gpu_power_w(accel: Accelerator, a: CostAssumptions, gpu_power_w: float | None = None) -> float:
    """Power one owned GPU draws while the job runs: the given figure, else TDP x ``home_load_factor``.

    Raises:
        ValueError: no figure given and no TDP in the catalog (Apple Silicon rows have none: pass the
            measured or published package power).
    """
    if gpu_power_w is not None:
        if not math.isfinite(gpu_power_w) or gpu_power_w < 0:
            raise ValueError(f"gpu power must be a finite figure of zero or more, got {gpu_power_w!r}")
        return float(gpu_power_w)
    if not accel.tdp_w:
        raise ValueError(f"{accel.id}: no TDP in the catalog, give the GPU power to price its energy")
    return accel.tdp_w * a.home_load_factor


def owned_holding(accel: Accelerator, devices: int, a: CostAssumptions, *, machines: int = 1,
                  gpu_power_w: float | None = None) -> Holding:
    """GPUs already owned: the purchase is sunk, so no holding parts; energy of the GPUs and of each machine
    while working, wear when ``owned_wear_usd_per_gpu_hour`` is set (docs/method.md, "Owned hardware").

    Raises:
        ValueError: bad counts, or no power figure.
    """
    if isinstance(devices, bool) or not isinstance(devices, int) or devices < 1:
        raise ValueError(f"devices must be a whole number of 1 or more, got {devices!r}")
    if isinstance(machines, bool) or not isinstance(machines, int) or machines < 1:
        raise ValueError(f"machines must be a whole number of 1 or more, got {machines!r}")
    kw = (owned_gpu_power_w(accel, a, gpu_power_w) * devices + a.home_system_power_w * machines) / 1000.0
    running = [("energy", kw * a.electricity_usd_per_kwh)]
    if a.owned_wear_usd_per_gpu_hour > 0:
        running.append(("wear", a.owned_wear_usd_per_gpu_hour * devices))
    available = a.hours_per_day * DAYS_PER_MONTH
    return Holding(OWNED, accel.id, devices, 0.0, 0.0, a.lifetime_years * MONTHS_PER_YEAR, (), 0.0, 0.0, kw,
                   tuple(running), available, available * a.utilisation)


def utilisation(h: Holding, job_hours: float, use: Use) -> Utilisation:
    """Busy hours a month: ``jobs_per_month x job_hours + other hours`` when stated, capped at the available
    hours (overbooked beyond); the assumptions' ``available x utilisation`` when not."""
    if not use.stated:  # the holding's own assumed use, whatever the job (frozen: one object per holding)
        return h.assumed_utilisation
    wanted = use.jobs_per_month * job_hours + use.other_hours_per_month
    available = h.available_hours_per_month
    # every field given, none derived: set at once, not one by one by the frozen dataclass's __init__ (a plan asks
    # twice per rig and server per keystroke); tests/cost/test_ownership.py checks it equals Utilisation(...)
    u = object.__new__(Utilisation)
    u.__dict__.update(busy_hours_per_month=min(wanted, available), available_hours_per_month=available, stated=True,
                      jobs_per_month=use.jobs_per_month, overbooked=wanted > available * (1 + 1e-9))
    return u


_PART_ORDER = {n: i for i, n in enumerate(("depreciation", "capex_share", "financing", "idle_power", "energy", "wear",
                                           "colocation", "support"))}  # the order of an owned quote's parts


def job_cost(h: Holding, hours: float, use: Use = NO_STATED_USE) -> OwnedQuote:
    """A job's cost on held hardware: running parts for its hours, plus ``hours / busy hours`` of a month's
    holding parts (a job longer than the busy hours of a month carries more than one month).

    Raises:
        ValueError: bad hours.
    """
    _check_job(h.devices, hours)
    u = utilisation(h, hours, use)
    busy = u.busy_hours_per_month
    share = hours / busy if busy > 0 else 0.0
    amounts = [usd * share for _, usd in h.monthly_usd]
    idle = max(0.0, h.available_hours_per_month - busy) * h.idle_kw * h.idle_usd_per_kwh
    if idle > 0:
        amounts.append(idle * share)
    amounts += [rate * hours for _, rate in h.running_usd_per_hour]
    names, order, distinct = h.part_orders[idle > 0]  # the parts in display order (_PART_ORDER), laid out once
    parts = tuple(zip(names, [float(amounts[i]) for i in order]))
    fixed_month = h.monthly_fixed_usd(busy)
    per_busy_hour = fixed_month / busy if busy > 0 else 0.0
    depreciation = h.monthly_sunk_usd
    variable = h.running_rate_usd_per_hour + (per_busy_hour - (depreciation / busy if busy > 0 else 0.0))
    # Every field given, none derived: set at once rather than one by one by the frozen dataclass's __init__ (a plan
    # prices two owned options per accelerator per keystroke); tests/cost/test_jobs.py checks it equals OwnedQuote(...)
    quote = object.__new__(OwnedQuote)
    quote.__dict__.update(
        kind=h.kind, accelerator_id=h.accelerator_id, devices=h.devices, hours=float(hours),
        hardware_usd=h.upfront_usd, fixed_usd_per_device=(h.upfront_usd - h.resale_usd) / h.devices,
        variable_usd_per_device_hour=variable / h.devices, energy_kwh=h.running_kw * hours,
        breakdown=CostBreakdown.of_floats(parts) if distinct else CostBreakdown(parts),  # the latter raises
        utilisation=u, monthly_usd=fixed_month, holding=h)
    return quote


def home_job_cost(accel: Accelerator, devices: int, hours: float, assumptions: CostAssumptions,
                  use: Use = NO_STATED_USE) -> OwnedQuote:
    """A job on a home rig of ``devices`` GPUs (:func:`home_holding`, :func:`job_cost`).

    With the default use (none stated) and no idle power: depreciation = (hardware - resale) / lifetime hours
    of use x hours, energy = (GPU W x load x devices + system W x rigs) / 1000 x hours x USD/kWh.

    Raises:
        ValueError: bad devices/hours, or an accelerator without a purchase price or TDP.
    """
    _check_job(devices, hours)
    return job_cost(_held(home_holding, accel, devices, assumptions), hours, use)


def onprem_job_cost(accel: Accelerator, devices: int, hours: float, assumptions: CostAssumptions,
                    use: Use = NO_STATED_USE) -> OwnedQuote:
    """A job on on-prem servers for ``devices`` GPUs (:func:`onprem_holding`, :func:`job_cost`).

    Raises:
        ValueError: bad devices/hours, or an accelerator without a purchase price or TDP.
    """
    _check_job(devices, hours)
    return job_cost(_held(onprem_holding, accel, devices, assumptions), hours, use)


_HELD: dict[tuple, tuple] = {}  # (holding function, id(accel), devices, id(assumptions)) -> (accel, a, holding)


def _held(holding, accel: Accelerator, devices: int, a: CostAssumptions) -> Holding:
    """``holding(accel, devices, a)``, kept for the same (frozen) accelerator and assumptions objects: a plan prices
    the same rigs and servers on every keystroke, and a holding depends on nothing else."""
    key = (holding, id(accel), devices, id(a))
    hit = _HELD.get(key)
    if hit is not None and hit[0] is accel and hit[1] is a:
        return hit[2]
    h = holding(accel, devices, a)
    if len(_HELD) > 4096:
        _HELD.clear()
    _HELD[key] = (accel, a, h)
    return h


def owned_option_id(accelerator_id: str) -> str:
    """The option id of owned hardware: ``owned:<accelerator id>``."""
    return f"{OWNED}:{accelerator_id}"


def owned_job_cost(accel: Accelerator, devices: int, hours: float, assumptions: CostAssumptions, *,
                   machines: int = 1, gpu_power_w: float | None = None, use: Use = NO_STATED_USE) -> OwnedQuote:
    """The cost to its owner of running a job on owned GPUs: energy (and wear when set), no purchase part.

    energy = (devices x GPU power + machines x ``home_system_power_w``) / 1000 x hours x
    ``electricity_usd_per_kwh``; wear = ``owned_wear_usd_per_gpu_hour`` x devices x hours.

    Raises:
        ValueError: bad counts or hours, or no power figure.
    """
    if not isinstance(hours, (int, float)) or not math.isfinite(hours) or hours < 0:
        raise ValueError(f"hours must be a finite figure of zero or more, got {hours!r}")
    h = owned_holding(accel, devices, assumptions, machines=machines, gpu_power_w=gpu_power_w)
    return job_cost(h, hours, use)


# ------------------------------------------------------------------------------------------------ payback
@dataclass(frozen=True)
class SpendLine:
    """Money spent on one option after some months at a cadence: the purchase at month 0, then the same
    spending every month (a straight line; the cumulative-cost chart and the reports draw these).

    Attributes:
        option_id / kind / label: the plan option and how people name it.
        upfront_usd: the purchase (0 when renting or already owned).
        monthly_usd: running and holding costs paid a month (no depreciation: the purchase is counted once).
        life_months: the hardware's life (None when renting).
    """

    option_id: str
    kind: str
    label: str
    upfront_usd: float
    monthly_usd: float
    life_months: float | None = None

    def usd_after(self, months: float) -> float:
        return self.upfront_usd + self.monthly_usd * months

    def as_dict(self) -> dict[str, object]:
        return {"id": self.option_id, "kind": self.kind, "label": self.label, "upfront_usd": self.upfront_usd,
                "monthly_usd": self.monthly_usd, "life_months": self.life_months}


def monthly_spend_usd(h: Holding, hours: float, jobs_per_month: float, other_hours_per_month: float = 0.0) -> float:
    """Money paid a month for held hardware running ``jobs_per_month`` jobs of ``hours`` (and other use):
    holding costs paid in cash (:meth:`Holding.monthly_cash_usd`) plus running costs of the busy hours."""
    busy = min(jobs_per_month * hours + other_hours_per_month, h.available_hours_per_month)
    return h.monthly_cash_usd(busy) + h.running_rate_usd_per_hour * busy


def cumulative_usd(upfront_usd: float, monthly_usd: float, months: float) -> float:
    """Money spent after ``months``: the purchase at month 0 plus the monthly spending (a straight line)."""
    return upfront_usd + monthly_usd * months


def payback(h: Holding, hours: float, use: Use, rent_id: str | None, rent_usd_per_job: float | None,
            rent_hours: float | None = None, provider: str = "",
            rent_usd_per_device_hour: float | None = None) -> BreakEven:
    """When buying ``h`` pays back against renting the same job (``rent_id``, a cloud option that can run it).

    With B busy hours a month (:func:`utilisation`), the job's own hours h_o and the rent's h_r:
        owning a month  = holding costs + B x running rate              (``monthly_fixed_usd`` + running)
        renting a month = B / h_o x rent per job                        (the same work rented)
        months          = upfront / (renting - (owning cash))           (cumulative spending crosses)
        jobs_per_month  = N where N x (rent per job - running per job) = holding costs at N jobs a month (the
                          cadence where owning costs the same per job over its life; None when a rented job
                          costs no more than running it, or when it takes more runs than a month holds)
    Months beyond the hardware's life: it does not pay back (``pays_back`` False).
    ``device_hours`` (the contract's figure) is the hours of use per device by then: months x B.
    """
    life = h.life_months
    if rent_id is None or rent_usd_per_job is None or hours <= 0:
        return BreakEven(None, None, None, life_months=life, upfront_usd=h.upfront_usd)
    busy = utilisation(h, hours, use).busy_hours_per_month
    running_job = h.running_rate_usd_per_hour * hours
    rent_month = busy / hours * rent_usd_per_job
    own_cash_month = h.monthly_cash_usd(busy) + h.running_rate_usd_per_hour * busy
    margin = rent_month - own_cash_month
    months = h.upfront_usd / margin if margin > 0 else None
    if months is not None and not math.isfinite(months):
        months = None
    # N jobs a month cost the same owned or rented when N (rent - running) = F + idle x (A - N h_o):
    # F the use-independent holding parts, idle the idle power price per hour, A the available hours.
    idle_rate = h.idle_kw * h.idle_usd_per_kwh
    saving = rent_usd_per_job - running_job + idle_rate * hours
    fixed = h.monthly_total_usd + idle_rate * h.available_hours_per_month
    jobs = fixed / saving if saving > 0 and rent_usd_per_job > running_job else None
    device_hours = None if months is None else months * busy
    most = h.available_hours_per_month / hours
    if jobs is not None and jobs > most:  # it would need more runs than a month holds
        jobs = None
    # every field given, none derived: set at once, not one by one by the frozen dataclass's __init__ (a plan asks
    # once per rig and server per keystroke); tests/cost/test_ownership.py checks it equals BreakEven(...)
    out = object.__new__(BreakEven)
    out.__dict__.update(vs=rent_id, device_hours=device_hours, months=months,
                        rent_usd_per_device_hour=rent_usd_per_device_hour, provider=provider, jobs_per_month=jobs,
                        pays_back=months is not None and months <= life, life_months=life,
                        rent_usd_per_job=rent_usd_per_job, rent_hours=rent_hours, upfront_usd=h.upfront_usd,
                        own_monthly_usd=own_cash_month, rent_monthly_usd=rent_month, busy_hours_per_month=busy,
                        max_jobs_per_month=most)
    return out
