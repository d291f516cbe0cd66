"""What to buy: hardware within a budget ranked by cost per job over its life, against renting the same jobs.

Pure pricing (no I/O): :func:`purchases` lists what one could buy for the user's :class:`BaseSystem` (a desktop,
with its power supply and free slots when known; a laptop; none): cards added to the desktop (an upgrade: no
new PC), one card in a basic PC, 1 to 4 consumer and workstation cards in a new rig at their launch, street and
used prices, the Macs of ``resources/machines.csv``, and 4- and 8-GPU servers of datacenter and workstation
GPUs for teams; and the owned hardware as it is. :func:`price_purchase` prices one for a set of jobs run ``jobs_per_month``
times each, given how long each job takes on it (the planner's figures) and what renting it costs. What owning
costs comes from ``advisor.cost.ownership`` (the one place): a rig's or a server's holding costs a month
(depreciation or capex, financing, idle power, colocation and support for a server) and its running costs per
hour (energy, wear when set). docs/method.md, "What to buy".

Per purchase, with N runs a month of each job j that fits (hours h_j) and r_j the cheapest rent of job j:
    busy        = N x sum_j h_j  (capped at the available hours: overbooked beyond)
    running_j   = running rate x h_j                                (electricity, wear when set)
    monthly     = sum_j N x running_j                              (``monthly_usd``: running costs a month)
    holding     = holding costs of a month with ``busy`` hours     (``holding_monthly_usd``)
    rest        = sum over jobs that do not fit of N x r_j          (still rented)
    usd_per_job = (holding + monthly + rest) / (N x jobs)
    break-even  = upfront / (sum_j N x (r_j - running_j) - holding paid in cash)  months (None when not positive)
    margin      = sum_j N x (r_j - running_j) - holding paid in cash  (``margin_monthly_usd``)
Owned hardware has no holding costs (the purchase is sunk). Renting wins ("keep renting") when its cost per
job, sum_j r_j / jobs, is not above the purchase's; a purchase whose jobs need more hours than it has is
"overbooked". The use from which a purchase pays back within its life (``pays_back_from``, runs of each job a
month) is where margin x life = upfront: the margin is linear in N up to the hours available, so two prices of
the same purchase give it (:func:`pays_back_use`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from advisor.catalog.records import Accelerator
from advisor.cost.assumptions import CostAssumptions
from advisor.cost.jobs import home_rigs, home_system_usd
from advisor.cost.ownership import DAYS_PER_MONTH, Holding, onprem_holding, owned_holding, rig_holding

BUY_KINDS = ("consumer", "workstation")
SERVER_KINDS = ("datacenter", "workstation")
SERVER_SIZES = (4, 8)
MAX_CARDS = 4
KEEP_RENTING = "keep renting"
BUY = "buy"
USE_OWNED = "use what you own"
OVERBOOKED = "overbooked"
BASE_KINDS = ("desktop", "laptop", "none")
PSU_HEADROOM = 1.25  # a power supply sized 25 % above the cards and the system at full load


@dataclass(frozen=True)
class BaseSystem:
    """What the user has to put cards in: a ``desktop`` (with its power supply's watts and free PCIe x16 slots
    when known), a ``laptop`` (a card needs a PC), or ``none``. ``origin`` says where it came from (``--base``,
    ``detected``: the owned GPUs are desktop or laptop parts, ``assumed``)."""

    kind: str = "none"
    psu_w: float | None = None
    free_slots: int | None = None
    origin: str = "assumed"

    def __post_init__(self) -> None:
        if self.kind not in BASE_KINDS:
            raise ValueError(f"base: must be one of {', '.join(BASE_KINDS)}, got {self.kind!r}")
        if self.psu_w is not None and (isinstance(self.psu_w, bool) or not isinstance(self.psu_w, (int, float))
                                       or not math.isfinite(self.psu_w) or not 100 <= self.psu_w <= 5000):
            raise ValueError(f"psu_w: a power supply of 100 to 5000 W, got {self.psu_w!r}")
        if self.free_slots is not None and (isinstance(self.free_slots, bool) or not isinstance(self.free_slots, int)
                                            or not 0 <= self.free_slots <= 8):
            raise ValueError(f"free_slots: a whole number from 0 to 8, got {self.free_slots!r}")
        if (self.psu_w is not None or self.free_slots is not None) and self.kind != "desktop":
            raise ValueError("psu_w and free_slots describe a desktop: give them with the desktop base")

    def text(self) -> str:
        """``a desktop (850 W power supply, 1 free x16 slot)``, ``a laptop (a card needs a PC)``, ..."""
        if self.kind == "laptop":
            return "a laptop (a card needs a PC)"
        if self.kind == "none":
            return "no PC to put a card in"
        parts = [f"{self.psu_w:,.0f} W power supply" if self.psu_w is not None else "power supply not given",
                 (f"{self.free_slots} free x16 slot{'' if self.free_slots == 1 else 's'}"
                  if self.free_slots is not None else "free slots not given")]
        return f"a desktop ({', '.join(parts)})"


@dataclass(frozen=True)
class Purchase:
    """One thing to buy (or the owned hardware as it is).

    Attributes:
        id: ``new:<n>x<acc>``, ``street:<n>x<acc>``, ``used:<n>x<acc>`` (a new rig), ``basic-new:1x<acc>``,
            ``basic-street:1x<acc>``, ``basic-used:1x<acc>`` (a basic PC), ``add-new:<m>x<acc>``,
            ``add-street:<m>x<acc>``, ``add-used:<m>x<acc>`` (added to the desktop), ``mac:<machine>``,
            ``server:<n>x<acc>`` or ``owned:<n>x<acc>``.
        hardware: what it is, for people ("2 x GeForce RTX 3090, street price, in a new rig").
        kind: ``new``, ``street``, ``used``, ``upgrade``, ``apple``, ``server`` or ``owned``.
        accelerator: what to plan on (a Mac: its chip in that configuration).
        devices: GPUs the jobs run on (an upgrade: the owned ones plus the added ones).
        cards_usd / system_usd: the cards' price and the rest of the system (a new rig, or what more GPUs in
            the owned rig need: ``home_system_extra_gpu_usd`` each); ``upfront_usd`` is their sum.
        price_basis: ``launch 2020``, ``street 2026-Q1``, ``used 2026``, ``Apple 2023-06`` (a machine's price
            date), ``owned``.
        price_source: where the price comes from (the catalog row's sources; a used price: its row's source).
        owned_devices: GPUs of this kind already owned (upgrades and the owned row).
        whole_machine_power: the accelerator's ``tdp_w`` is the whole machine at the wall (a Mac): no system
            power is added.
        note: what to check before buying (an upgrade's slots and power supply).
        gpu_power_w: power per owned GPU while working when the driver reports it (a GPU with no TDP in the
            catalog); None: TDP x load.
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
    note: str = ""
    gpu_power_w: float | None = None
    upfront_usd: float = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "upfront_usd", self.cards_usd + self.system_usd)

    @property
    def group(self) -> str:
        """``own`` (as it is), ``upgrade`` (cards added to this machine), ``server`` (for teams) or ``new`` (a new
        rig or machine): how the table and the Buy page group the rows."""
        return {"owned": "own", "upgrade": "upgrade", "server": "server"}.get(self.kind, "new")


def _prices(acc: Accelerator, used: Mapping[str, object] | None = None) -> list[tuple[str, float, str, str]]:
    """(kind, price, basis, source) of a card: its launch price, its street price when the catalog has a different
    one, and its used-market price where ``used`` (``advisor.catalog.used``) has a dated row, with that row's
    source; a used price equal to the street or launch price replaces it (the catalog copied the used figure)."""
    out = []
    if acc.launch_price_usd:
        out.append(("new", float(acc.launch_price_usd), f"launch {acc.launch_year}" if acc.launch_year else "launch",
                    acc.source))
    if acc.street_price_usd and acc.street_price_usd != acc.launch_price_usd:
        out.append(("street", float(acc.street_price_usd),
                    f"street {acc.street_price_date}" if acc.street_price_date else "street", acc.source))
    row = (used or {}).get(acc.id)
    if row is not None:
        out = [x for x in out if x[1] != row.price_usd]
        out.append(("used", float(row.price_usd), f"used {row.price_date}", row.source))
    return out


def power_need_w(acc: Accelerator, cards: int, a: CostAssumptions) -> float | None:
    """The power supply ``cards`` of a card and the rest of a PC need: (cards x TDP + system) x 1.25 (None: no
    TDP in the catalog)."""
    if not acc.tdp_w:
        return None
    return (acc.tdp_w * cards + a.home_system_power_w) * PSU_HEADROOM


def server_capex_usd(price_usd: float, devices: int, a: CostAssumptions) -> float:
    """One GPU server for a team: its GPUs x ``onprem_server_overhead`` (CPUs, memory, chassis, NICs; Cottier et
    al. 2024: x1.54 to 1.69 for 8-GPU servers). No share of a cluster network: it is one box."""
    return price_usd * devices * a.onprem_server_overhead


def added_system_usd(acc: Accelerator, owned: int, added: int, base: BaseSystem, a: CostAssumptions) -> float:
    """What adding ``added`` cards to a desktop holding ``owned`` of them costs besides the cards: with its power
    supply known, a new supply (``psu_upgrade_usd``) when it is short of :func:`power_need_w`, else nothing;
    without it, ``home_system_extra_gpu_usd`` for each card beyond the first (a bigger supply, a board with
    more lanes, cooling)."""
    if base.psu_w is not None:
        need = power_need_w(acc, owned + added, a)
        return a.psu_upgrade_usd if need is not None and need > base.psu_w else 0.0
    return a.home_system_extra_gpu_usd * ((owned + added) - max(owned, 1))


def upgrade_note(acc: Accelerator, owned: int, added: int, a: CostAssumptions,
                 host_memory_bytes: int | None = None, base: BaseSystem | None = None) -> str:
    """What to check before adding cards: a free slot each and a power supply for all the cards (from the
    desktop's figures when given; detection reads neither; the board's lanes and the case's room are the
    user's to check), and this machine's RAM against the cards' memory where detection knows it (loading a
    model that fills the cards passes through host RAM)."""
    base = base or BaseSystem("desktop")
    need = power_need_w(acc, owned + added, a)
    s = "s" if added > 1 else ""
    if need is None:
        note = "check a free PCIe slot per card and the power supply"
    else:
        how = f"{owned + added} x {acc.tdp_w:g} W + {a.home_system_power_w:g} W, 25 % headroom"
        slots = (f"{added} of your {base.free_slots} free PCIe x16 slots" if base.free_slots is not None
                 else f"{added} free PCIe x16 slot{s}")
        if base.psu_w is None:
            note = (f"needs {slots} and a power supply of about {need:,.0f} W ({how}); detection reads neither, "
                    f"so check them")
        elif need > base.psu_w:
            note = (f"needs {slots} and a power supply of about {need:,.0f} W ({how}): your {base.psu_w:,.0f} W "
                    f"one is short, so a new one is counted ({a.psu_upgrade_usd:,.0f} USD)")
        else:
            note = f"needs {slots}; your {base.psu_w:,.0f} W power supply covers the about {need:,.0f} W ({how})"
    vram = acc.memory_bytes * (owned + added)
    if host_memory_bytes and host_memory_bytes < vram:
        note += (f"; this machine's {host_memory_bytes / 1e9:,.0f} GB of RAM is less than the cards' "
                 f"{vram / 1e9:,.0f} GB: a model that fills them may need more RAM to load")
    return note


def buyable(acc: Accelerator) -> bool:
    """A desktop card one can buy on its own: a consumer or workstation GPU with a TDP (laptop parts come in laptops)."""
    return acc.kind in BUY_KINDS and bool(acc.tdp_w) and "laptop" not in acc.id and not acc.derived


def purchases(accelerators: Iterable[Accelerator], machines: Iterable[tuple[object, Accelerator]],
              owned: Sequence[tuple[Accelerator, int]], a: CostAssumptions,
              budget_usd: float | None = None, used: Mapping[str, object] | None = None,
              servers: bool = True, owned_power_w: Mapping[str, float] | None = None,
              host_memory_bytes: int | None = None, base: BaseSystem | None = None) -> list[Purchase]:
    """Everything one could buy within a budget, and the owned hardware as it is.

    Args:
        accelerators: the catalog's accelerators (the buyable ones are used, see :func:`buyable`).
        machines: ``(machine, accelerator)`` pairs: a :class:`~advisor.catalog.machines.Machine` and its chip in
            that configuration (``Machine.accelerator``).
        owned: ``(accelerator, count)`` of the GPUs already owned, one entry per kind.
        a: cost assumptions (rest-of-system prices, GPUs per rig).
        budget_usd: leave out what costs more upfront (None: no limit).
        used: used-market rows by accelerator id (``advisor.catalog.used.UsedPrice``).
        servers: list 4- and 8-GPU servers of datacenter and workstation GPUs (for teams).
        owned_power_w: power per owned GPU by accelerator id where the driver reports it (no TDP in the catalog).
        host_memory_bytes: this machine's RAM where detection knows it (an upgrade's note compares it).
        base: what the user has to put cards in (None: a desktop when a desktop card is owned, else none). A
            desktop gets cards added to it: more of the kind it holds, or any card when it holds none (at most
            its free slots); a basic PC is offered for one card whose power fits its supply.
    Returns:
        Purchases in a stable order: owned first, then upgrades, basic PCs, new rigs, Macs, servers.
    """
    if base is None:
        base = BaseSystem("desktop" if any(k >= 1 and buyable(acc) for acc, k in owned) else "none")
    out: list[Purchase] = []
    slots = MAX_CARDS if base.free_slots is None else base.free_slots

    def add_cards(acc: Accelerator, k: int) -> None:
        for kind, price, basis, source in _prices(acc, used):
            for m in range(1, min(MAX_CARDS - k, slots) + 1):
                to = f"this machine's {k}" if k else "your desktop"
                out.append(Purchase(f"add-{kind}:{m}x{acc.id}", f"add {m} x {acc.name} to {to}", "upgrade", acc,
                                    k + m, m * price, added_system_usd(acc, k, m, base, a), basis, source,
                                    owned_devices=k, note=upgrade_note(acc, k, m, a, host_memory_bytes, base)))

    desktop_cards = False
    for acc, k in owned:
        if k < 1:
            continue
        out.append(Purchase(f"owned:{k}x{acc.id}", f"{k} x {acc.name} (owned)", "owned", acc, k, 0.0, 0.0,
                            "owned", "", owned_devices=k, gpu_power_w=(owned_power_w or {}).get(acc.id)))
        if base.kind == "desktop" and buyable(acc):  # a laptop's GPU or one not in the catalog: nothing to add to
            desktop_cards = True
            add_cards(acc, k)
    if base.kind == "desktop" and not desktop_cards:  # a desktop with no card of its own: any card goes in
        for acc in accelerators:
            if buyable(acc):
                add_cards(acc, 0)
    for acc in accelerators:
        if not buyable(acc):
            continue
        need = power_need_w(acc, 1, a)
        for kind, price, basis, source in _prices(acc, used):
            if need is not None and need <= a.basic_system_psu_w:
                out.append(Purchase(f"basic-{kind}:1x{acc.id}", f"1 x {acc.name} in a basic PC", kind, acc, 1,
                                    price, a.basic_system_price_usd, basis, source,
                                    note=f"a basic PC: budget parts and an {a.basic_system_psu_w:,.0f} W supply "
                                         f"(the card and system need about {need:,.0f} W)"))
            for n in range(1, MAX_CARDS + 1):
                rig = "a new rig" if home_rigs(n, a) == 1 else f"{home_rigs(n, a)} new rigs"
                out.append(Purchase(f"{kind}:{n}x{acc.id}", f"{n} x {acc.name} in {rig}", kind, acc, n,
                                    n * price, home_system_usd(n, a), basis, source))
    for machine, acc in machines:
        out.append(Purchase(f"mac:{acc.id}", acc.name, "apple", acc, 1, float(acc.launch_price_usd or 0), 0.0,
                            f"Apple {getattr(machine, 'price_date', '')}".strip(), acc.source, whole_machine_power=True))
    if servers:
        for acc in accelerators:
            price = acc.price_usd
            if acc.kind not in SERVER_KINDS or not price or not acc.tdp_w or acc.derived:
                continue
            basis = (f"street {acc.street_price_date}" if acc.street_price_usd and acc.street_price_date
                     else f"launch {acc.launch_year}" if acc.launch_year else "catalog")
            for n in SERVER_SIZES:
                out.append(Purchase(f"server:{n}x{acc.id}", f"{n}-GPU server of {acc.name} (on-prem)", "server",
                                    acc, n, n * float(price), server_capex_usd(float(price), n, a) - n * float(price),
                                    basis, acc.source, note="on-prem: colocation, support and power every month"))
    if budget_usd is not None:
        out = [p for p in out if p.upfront_usd <= budget_usd]
    return out


@dataclass(frozen=True)
class JobRun:
    """How one job runs on one purchase (from the planner): whether it fits and its wall-clock hours."""

    fits: bool
    hours: float | None
    devices: int | None = None  # GPUs the job uses when fewer than the purchase holds (owned hardware)
    stack_ok: bool = True  # the job's software stack runs on it (``planner.stacks``)
    stack_reason: str = ""  # when not: ``needs PyTorch XPU or llama.cpp``


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
    holding_monthly_usd: float = 0.0  # depreciation or capex, financing, idle power, colocation, support a month
    life_months: float = 0.0
    margin_monthly_usd: float = 0.0  # what it saves a month against renting, less holding paid in cash
    stack_notes: tuple[str, ...] = ()  # ``qlora llama-3.1-8b needs PyTorch XPU or llama.cpp``: jobs off its stack
    pays_back_from: float | None = None  # runs of each job a month from which it pays back within its life

    @property
    def pays_back_hours_per_day(self) -> float | None:
        """Hours of work a day at ``pays_back_from`` (None when it never pays back; 0 when owned)."""
        if self.pays_back_from is None:
            return None
        return sum(h for h in self.hours_per_job.values() if h) * self.pays_back_from / DAYS_PER_MONTH

    @property
    def stack_ok(self) -> bool:
        """Every job it runs is on the job's software stack."""
        return not self.stack_notes

    @property
    def overbooked(self) -> bool:
        """The jobs that fit need more hours a month than the hardware is available (``hours_per_day``)."""
        return self.busy_hours_per_month > self.available_hours_per_month * (1 + 1e-9)

    @property
    def utilisation(self) -> float:
        """Busy hours over available hours (capped at 1)."""
        a = self.available_hours_per_month
        return min(1.0, self.busy_hours_per_month / a) if a > 0 else 0.0

    @property
    def pays_back(self) -> bool:
        """Buying it pays back against renting within its life (owned hardware: already)."""
        m = self.break_even_months
        return m is not None and (m == 0 or m <= self.life_months)

    def to_json(self) -> dict:
        p = self.purchase
        doc = {"hardware": p.hardware, "id": p.id, "kind": p.kind, "group": p.group, "accelerator": p.accelerator.id,
               "devices": p.devices, "upfront_usd": p.upfront_usd, "cards_usd": p.cards_usd,
               "system_usd": p.system_usd, "monthly_usd": self.monthly_usd,
               "holding_monthly_usd": self.holding_monthly_usd, "rent_monthly_usd": self.rent_monthly_usd,
               "usd_per_job": self.usd_per_job, "hours_per_job": dict(self.hours_per_job), "fits": dict(self.fits),
               "break_even_months": self.break_even_months, "pays_back_within_life": self.pays_back,
               "life_months": self.life_months, "verdict": self.verdict,
               "busy_hours_per_month": self.busy_hours_per_month,
               "available_hours_per_month": self.available_hours_per_month, "utilisation": self.utilisation,
               "price": {"basis": p.price_basis, "source": p.price_source},
               "margin_monthly_usd": self.margin_monthly_usd, "pays_back_from_jobs_per_month": self.pays_back_from,
               "pays_back_hours_per_day": self.pays_back_hours_per_day,
               "stack_ok": self.stack_ok, "stack_notes": list(self.stack_notes)}
        if p.note:
            doc["note"] = p.note
        if p.kind == "upgrade":
            doc["owned_devices"] = p.owned_devices
            doc["break_even_vs_owned_months"] = self.break_even_vs_owned_months
        return doc


def purchase_holding(p: Purchase, a: CostAssumptions, devices: int | None = None) -> Holding:
    """What owning a purchase costs by month and by hour (``advisor.cost.ownership``): the owned hardware at its
    running costs; a new rig, an upgrade or a Mac as a rig bought for its upfront (an upgrade adds no idle power:
    the machine idles already; a Mac's power is the whole machine at the wall, its idle a few watts, left out); a
    server as on-prem hardware (colocation, support, idle and facility power). ``devices``: the GPUs a job uses
    of owned hardware (the rest stay off)."""
    acc = p.accelerator
    if p.kind == "owned":
        power = p.gpu_power_w if p.gpu_power_w is not None or acc.tdp_w else 0.0
        n = min(devices or p.devices, p.devices)
        return owned_holding(acc, n, a, machines=1, gpu_power_w=power)
    if p.kind == "server":
        return onprem_holding(acc, p.devices, a, capex_usd=p.upfront_usd)
    if p.whole_machine_power:
        return rig_holding(acc.id, p.devices, p.upfront_usd, (acc.tdp_w or 0.0) * a.home_load_factor, 0.0, a)
    rigs = home_rigs(p.devices, a)
    idle = 0.0 if p.kind == "upgrade" else a.home_idle_power_w * rigs
    return rig_holding(acc.id, p.devices, p.upfront_usd,
                       (acc.tdp_w or 0.0) * a.home_load_factor * p.devices + a.home_system_power_w * rigs, idle, a)


def running_usd(p: Purchase, hours: float, a: CostAssumptions) -> float:
    """What one run of a job costs on a purchase once owned: its running costs (electricity, wear when set) for
    the hours (``purchase_holding``)."""
    return purchase_holding(p, a).running_rate_usd_per_hour * hours


def _check_jobs_per_month(jobs_per_month: float) -> None:
    if isinstance(jobs_per_month, bool) or not isinstance(jobs_per_month, (int, float)) \
            or not math.isfinite(jobs_per_month) or jobs_per_month <= 0:
        raise ValueError(f"jobs_per_month must be a positive finite number, got {jobs_per_month!r}")


def rent_per_job(rent: Mapping[str, Rent | None]) -> float | None:
    """Renting's cost per job over the jobs that can be rented (None when none can)."""
    costs = [r.cost_usd for r in rent.values() if r is not None]
    return sum(costs) / len(costs) if costs else None


def price_purchase(p: Purchase, runs: Mapping[str, JobRun], rent: Mapping[str, Rent | None], jobs_per_month: float,
                   a: CostAssumptions, owned_monthly_usd: float | None = None, find_use: bool = True) -> BuyOption:
    """Price one purchase for the jobs (formulas in the module docstring).

    Args:
        runs: each job's fit and hours on this purchase (every job of ``rent``).
        rent: each job's cheapest rent (None: no cloud option fits it; that job is left out of the money).
        jobs_per_month: runs of each job a month.
        owned_monthly_usd: what the owned hardware as it is costs a month for the same jobs (its running cost plus
            the rent of what it cannot run): an upgrade's break-even against keeping it.
        find_use: also find the use from which it pays back (:func:`pays_back_use`).
    Raises:
        ValueError: a job missing from ``runs``, or bad ``jobs_per_month``.
    """
    _check_jobs_per_month(jobs_per_month)
    n = jobs_per_month
    h = purchase_holding(p, a)
    rate = h.running_rate_usd_per_hour
    hours: dict[str, float | None] = {}
    fits: dict[str, bool] = {}
    notes: list[str] = []
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
            if not run.stack_ok:
                notes.append(f"{job} {run.stack_reason or 'needs another software stack'}")
            cost = (rate if run.devices is None or p.kind != "owned" else
                    purchase_holding(p, a, run.devices).running_rate_usd_per_hour) * hours[job]
            monthly += n * cost
            busy += n * hours[job]
            if r is not None:
                saving += n * (r.cost_usd - cost)
        elif r is not None:
            rest += n * r.cost_usd
    worked = min(busy, h.available_hours_per_month)
    holding = h.monthly_fixed_usd(worked) if p.kind != "owned" else 0.0
    per_job = (holding + monthly + rest) / (n * priced) if priced else None
    margin = saving - (h.monthly_cash_usd(worked) if p.kind != "owned" else 0.0)
    if p.kind == "owned":
        break_even = 0.0
    else:
        break_even = p.upfront_usd / margin if margin > 0 and math.isfinite(p.upfront_usd / margin) else None
    vs_owned = None
    if owned_monthly_usd is not None:
        gain = owned_monthly_usd - (monthly + rest + h.monthly_cash_usd(worked))
        vs_owned = p.upfront_usd / gain if gain > 0 else None
    rent_cost = rent_per_job(rent)
    overbooked = busy > h.available_hours_per_month * (1 + 1e-9)
    if not any(fits.values()) or per_job is None or rent_cost is None or per_job >= rent_cost:
        verdict = KEEP_RENTING
    elif overbooked:
        verdict = OVERBOOKED
    else:
        verdict = USE_OWNED if p.kind == "owned" else BUY
    o = BuyOption(p, hours, fits, monthly, rest, per_job, break_even, busy, h.available_hours_per_month, verdict,
                  vs_owned, holding, h.life_months, margin, tuple(notes))
    if find_use:
        o = replace(o, pays_back_from=pays_back_use(p, runs, rent, a, o))
    return o


def pays_back_use(p: Purchase, runs: Mapping[str, JobRun], rent: Mapping[str, Rent | None], a: CostAssumptions,
                  at: BuyOption | None = None) -> float | None:
    """The fewest runs of each job a month from which the purchase pays back within its life (margin x life >=
    upfront) without being overbooked; 0 for owned hardware. A rig that does not within the ``hours_per_day``
    assumed is tried at 24 hours a day (``use_text`` says when the use is beyond those hours); None when none
    does.

    The margin is linear in the runs a month up to the hours available (saving per run less idle power for the
    hours not worked), so two prices of the purchase (:func:`price_purchase`) at half and all of those hours give
    it; the answer is checked by pricing it there."""
    if p.kind == "owned":
        return 0.0
    use = _pays_back_at(p, runs, rent, a, at)
    if use is None and a.hours_per_day < 24 and p.kind != "server":
        use = _pays_back_at(p, runs, rent, a.with_overrides(hours_per_day=24.0), None)
    return use


def _pays_back_at(p: Purchase, runs: Mapping[str, JobRun], rent: Mapping[str, Rent | None], a: CostAssumptions,
                  at: BuyOption | None) -> float | None:
    run_hours = sum(r.hours for job, r in runs.items() if job in rent and r.fits and r.hours)
    available = (at or price_purchase(p, runs, rent, 1.0, a, find_use=False)).available_hours_per_month
    if run_hours <= 0 or available <= 0:
        return None
    cap = available / run_hours  # runs a month that fill the hours available
    lo, hi = (price_purchase(p, runs, rent, x, a, find_use=False) for x in (cap / 2, cap))
    target = p.upfront_usd / lo.life_months if lo.life_months > 0 else math.inf
    slope = (hi.margin_monthly_usd - lo.margin_monthly_usd) / (cap / 2)
    if slope <= 0 or not math.isfinite(target):
        return None
    use = cap / 2 + (target - lo.margin_monthly_usd) / slope
    if use > cap * (1 + 1e-9):
        return None
    use = max(use, 1e-6)
    check = price_purchase(p, runs, rent, min(use * (1 + 1e-9), cap), a, find_use=False)
    return use if check.pays_back and not check.overbooked else None


def rank(options: Iterable[BuyOption]) -> list[BuyOption]:
    """Options that fit at least one job, those on the jobs' software stack first, then the ones whose jobs fit
    in the hours they have, cheapest per job first (the owned hardware first among equals); and the owned
    hardware even when it fits none (it is the user's: the table says so); the rest are left out."""
    kept = [o for o in options if (any(o.fits.values()) or o.purchase.kind == "owned") and o.usd_per_job is not None]
    return sorted(kept, key=lambda o: (not o.stack_ok, o.overbooked, o.usd_per_job, o.purchase.upfront_usd,
                                       o.purchase.id))


def break_even_text(o: BuyOption) -> str:
    """The break-even cell of the CLI and the Buy page: ``owned``, ``14.2 mo``, or ``never within its 3-year
    life`` (renting stays cheaper, or the upfront is repaid only after the hardware's life)."""
    if o.purchase.kind == "owned":
        return "owned"
    if o.pays_back:
        return f"{o.break_even_months:,.1f} mo"
    return f"never within its {o.life_months / 12:g}-year life"


def use_text(o: BuyOption) -> str:
    """The use from which a purchase pays back within its life: ``owned``, ``23 runs/mo (5.1 h/day)`` (runs of
    each job a month and the hours of work a day they take; ``h/day!`` when more than the hours a day assumed)
    or ``never``."""
    if o.purchase.kind == "owned":
        return "owned"
    if o.pays_back_from is None:
        return "never"
    runs, hours = o.pays_back_from, o.pays_back_hours_per_day
    over = "!" if hours > o.available_hours_per_month / DAYS_PER_MONTH * (1 + 1e-9) else ""
    return f"{runs:,.{1 if runs < 10 else 0}f} runs/mo ({hours:,.1f} h/day{over})"
