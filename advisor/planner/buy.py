"""The buy advisor's planning: each job planned on each thing one could buy, and on the cheapest rent.

``buy_advice`` plans every job once per device count (1 to 4) on every candidate accelerator together (the
planner's one path: memory, fit, utilisation, time), reads each candidate's fit and hours from that plan, and
prices each purchase with ``advisor.cost.buy`` against the cheapest cloud option that fits the same job.
A Mac is planned as its chip in that configuration (its unified memory's GPU share, its GPU cores), as a
machine one owns: ``advisor.catalog.machines``. docs/method.md, "What to buy".
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace

from advisor.catalog import Accelerator, Catalog, load_catalog
from advisor.catalog.machines import load_machines
from advisor.cost.assumptions import CostAssumptions
from advisor.cost.buy import MAX_CARDS, BuyOption, JobRun, Purchase, Rent, price_purchase, purchases, rank, rent_per_job
from advisor.cost.jobs import can_own
from advisor.job import JobInputError
from advisor.planner.request import PlanInputError, PlanRequest
from advisor.planner.service import plan

SCHEMA = "advisor.buy/1"
DEFAULT_JOBS = (
    ("qlora llama-3.1-8b", {"model": "llama-3.1-8b", "workload": "qlora", "tokens": 1e8}),
    ("inference llama-3.1-8b", {"model": "llama-3.1-8b", "workload": "inference", "tokens": 1e6}),
)


@dataclass(frozen=True)
class BuyJob:
    """One job of the buy question: a name (a scenario file's name, ``MODEL:WORKLOAD``) and its request."""

    name: str
    request: PlanRequest


def default_jobs() -> list[BuyJob]:
    """The jobs asked about when none are given: QLoRA of Llama 3.1 8B on 1e8 tokens, and 1e6 generated tokens
    of it at batch 1 (a month of one person's chat and coding use, about 30,000 tokens a day)."""
    return [BuyJob(name, PlanRequest.from_mapping({**values, "sources": {k: "buy default job" for k in values}}))
            for name, values in DEFAULT_JOBS]


def load_job(text: str) -> BuyJob:
    """A job from ``--job``: a scenario file (named by its file name), else ``MODEL:WORKLOAD`` (a preset or any
    model spec with a workload, e.g. ``llama-3.1-8b:qlora``, planned at the planner's default budget).

    Raises:
        PlanInputError: a missing or invalid file, an unknown workload, or a job the schema refuses (one line).
    """
    from pathlib import Path

    from advisor.job.schema import WORKLOADS
    from advisor.store.scenario import ScenarioError, job_values, load_scenario

    text = (text or "").strip()
    path = Path(text).expanduser()
    model, sep, workload = text.rpartition(":")
    if not path.exists() and sep and model and workload in WORKLOADS:
        values = {"model": model, "workload": workload, "sources": {"model": "--job", "workload": "--job"}}
        name = text
    else:
        if not path.is_file():
            raise PlanInputError("job", f"{text}: no such scenario file (or give MODEL:WORKLOAD, e.g. "
                                        f"llama-3.1-8b:qlora)")
        try:
            values = job_values(load_scenario(path), path.name)
        except ScenarioError as exc:
            raise PlanInputError("job", str(exc)) from None
        values.pop("notes", None)
        name = path.stem
    try:
        return BuyJob(name, PlanRequest.from_mapping(values))
    except JobInputError as exc:
        raise PlanInputError("job", f"{name}: {exc}") from None


def owned_groups(accelerators: list[Accelerator]) -> list[tuple[Accelerator, int]]:
    """The owned GPUs by kind: ``[(accelerator, count)]`` in the order first seen (``advisor detect``)."""
    counts = Counter(a.id for a in accelerators)
    first = {a.id: a for a in reversed(accelerators)}
    return [(first[i], counts[i]) for i in dict.fromkeys(a.id for a in accelerators)]


@dataclass(frozen=True)
class BuyResult:
    """What to buy for the jobs: ranked options, the rent they are measured against, and what was left out."""

    budget_usd: float
    jobs_per_month: float
    jobs: tuple[BuyJob, ...]
    owned: tuple[tuple[Accelerator, int], ...]
    options: tuple[BuyOption, ...]
    rent: dict[str, Rent | None]
    assumptions: CostAssumptions
    catalog_date: str
    prices_as_of: str
    considered: int = 0  # purchases within the budget, before those that fit no job were left out
    warnings: tuple[str, ...] = ()
    rent_usd_per_job: float | None = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "rent_usd_per_job", rent_per_job(self.rent))

    @property
    def rent_monthly_usd(self) -> float:
        return sum(r.cost_usd for r in self.rent.values() if r is not None) * self.jobs_per_month

    def best(self) -> BuyOption | None:
        """The cheapest option per job (the first row), or None."""
        return self.options[0] if self.options else None

    def to_json(self) -> dict:
        """The ``advisor.buy/1`` document."""
        a = self.assumptions
        return {
            "schema": SCHEMA, "budget_usd": self.budget_usd, "jobs_per_month": self.jobs_per_month,
            "jobs": [{"name": j.name, "model": j.request.model, "params": j.request.params,
                      "workload": j.request.workload, "inputs": {k: v for k, v in j.request.changed().items()
                                                                 if k not in ("notes", "assumptions")}}
                     for j in self.jobs],
            "owned": [{"accelerator": acc.id, "name": acc.name, "devices": k} for acc, k in self.owned],
            "rent": {"usd_per_job": self.rent_usd_per_job, "monthly_usd": self.rent_monthly_usd,
                     "jobs": {name: None if r is None else {"option": r.option_id, "cost_usd": r.cost_usd,
                                                            "hours": r.hours}
                              for name, r in self.rent.items()}},
            "options": [o.to_json() for o in self.options],
            "considered": self.considered,
            "assumptions": {k: getattr(a, k) for k in ("electricity_usd_per_kwh", "home_load_factor",
                                                       "home_system_price_usd", "home_system_extra_gpu_usd",
                                                       "home_system_power_w", "lifetime_years", "resale_fraction",
                                                       "hours_per_day", "utilisation", "owned_wear_usd_per_gpu_hour")},
            "catalog": {"date": self.catalog_date, "prices_as_of": self.prices_as_of},
            "warnings": list(self.warnings),
        }


def _runs_at(job: BuyJob, devices: int, accel_ids: list[str], catalog: Catalog, calibration,
             a: CostAssumptions) -> dict[str, JobRun]:
    """Fit and hours of one job on ``devices`` of each accelerator (one plan over all of them)."""
    try:
        req = job.request.model_copy(update={"accelerator": tuple(accel_ids), "gpus": devices})
        req.check_rules()
    except JobInputError:  # e.g. the job's tensor-parallel degree does not divide this device count
        return {}
    result = plan(req, catalog=catalog, calibration=calibration, assumptions=a)
    runs: dict[str, JobRun] = {}
    for o in result.options:
        if o.accelerator not in runs:
            runs[o.accelerator] = JobRun(o.fits, o.hours if o.fits else None)
    return runs


def _missing(acc: Accelerator) -> list[str]:
    return [what for what, value in (("purchase price", acc.price_usd), ("TDP", acc.tdp_w)) if not value]


def cheapest_rent(job: BuyJob, catalog: Catalog, calibration, a: CostAssumptions) -> Rent | None:
    """The cloud option that runs the job at the lowest job cost (any accelerator, the fewest devices that fit)."""
    req = job.request.model_copy(update={"accelerator": (), "gpus": None})
    req.check_rules()
    best = plan(req, catalog=catalog, calibration=calibration, assumptions=a).best("cloud")
    return None if best is None else Rent(best.id, best.cost_usd, best.hours)


def buy_advice(jobs: list[BuyJob], budget_usd: float, jobs_per_month: float,
               owned: list[tuple[Accelerator, int]] = (), catalog: Catalog | None = None, calibration=None,
               assumptions: CostAssumptions | None = None) -> BuyResult:
    """Rank what to buy within a budget for jobs run ``jobs_per_month`` times each, against renting them.

    Args:
        jobs: the jobs (at least one; names unique).
        budget_usd: the most to spend upfront (USD, zero or more; zero leaves only the owned hardware).
        owned: ``(accelerator, count)`` of the GPUs already owned (``owned_groups`` of ``advisor detect``'s).
        calibration: this machine's calibration, as for ``plan``.
        assumptions: cost assumptions for every plan and purchase (defaults when None).
    Returns:
        A BuyResult with options ranked by cost per job (``advisor.cost.buy.rank``).
    Raises:
        PlanInputError: no jobs, duplicate names, a bad budget or frequency, or a job the planner refuses.
    """
    import math

    if not jobs:
        raise PlanInputError("job", "give at least one job")
    names = [j.name for j in jobs]
    if len(set(names)) != len(names):
        raise PlanInputError("job", f"two jobs share a name: {', '.join(n for n in names if names.count(n) > 1)}")
    if not isinstance(budget_usd, (int, float)) or not math.isfinite(budget_usd) or budget_usd < 0:
        raise PlanInputError("budget", f"must be a finite amount of zero or more USD, got {budget_usd!r}")
    if not isinstance(jobs_per_month, (int, float)) or not math.isfinite(jobs_per_month) or not 0 < jobs_per_month <= 1e5:
        raise PlanInputError("jobs_per_month", f"must be above 0 and at most 100000, got {jobs_per_month!r}")
    catalog = catalog or load_catalog()
    a = assumptions or CostAssumptions()
    machines = [(m, m.accelerator(catalog.accelerators[m.accelerator_id])) for m in load_machines(catalog.accelerators)]
    owned = [(acc, k) for acc, k in owned if k >= 1]
    candidates = purchases(catalog.accelerators.values(), machines, owned, a, budget_usd)
    buy_catalog = replace(catalog, accelerators={**catalog.accelerators, **{acc.id: acc for _m, acc in machines},
                                                 **{acc.id: acc for acc, _k in owned}})
    warnings = [f"owned {acc.name}: the catalog has no {' or '.join(_missing(acc))} for it, so it is not "
                f"planned here (give it in your catalog file: advisor catalog export)" for acc, _k in owned
                if not can_own(acc)]
    for j in jobs:
        if j.request.assumptions:
            warnings.append(f"{j.name}: its [assumptions] are not used here; give them with --set")
    rent = {}
    for j in jobs:
        try:
            rent[j.name] = cheapest_rent(j, catalog, calibration, a)
        except PlanInputError as exc:  # the first plan of a job: say which job it is
            raise PlanInputError("job", f"{j.name}: {exc}") from None
    for name, r in rent.items():
        if r is None:
            warnings.append(f"{name}: no cloud option fits it; it is left out of the money")
    by_count: dict[int, list[str]] = {}
    for p in candidates:
        by_count.setdefault(p.devices, [])
        if p.accelerator.id not in by_count[p.devices]:
            by_count[p.devices].append(p.accelerator.id)
    runs = {(j.name, n): _runs_at(j, n, ids, buy_catalog, calibration, a)
            for j in jobs for n, ids in sorted(by_count.items()) if n <= MAX_CARDS}
    none = JobRun(False, None)

    def runs_of(p: Purchase) -> dict[str, JobRun]:
        return {j.name: runs[(j.name, p.devices)].get(p.accelerator.id, none) for j in jobs}

    owned_monthly: dict[str, float] = {}
    priced: list[BuyOption] = []
    for p in candidates:
        if p.kind == "owned":
            o = price_purchase(p, runs_of(p), rent, jobs_per_month, a)
            owned_monthly[p.accelerator.id] = o.monthly_usd + o.rent_monthly_usd
            priced.append(o)
    for p in candidates:
        if p.kind != "owned":
            vs = owned_monthly.get(p.accelerator.id) if p.kind == "upgrade" else None
            priced.append(price_purchase(p, runs_of(p), rent, jobs_per_month, a, owned_monthly_usd=vs))
    return BuyResult(budget_usd=float(budget_usd), jobs_per_month=float(jobs_per_month), jobs=tuple(jobs),
                     owned=tuple(owned), options=tuple(rank(priced)), rent=rent, assumptions=a,
                     catalog_date=catalog.date, prices_as_of=catalog.prices_as_of, considered=len(candidates),
                     warnings=tuple(warnings))


def summary(result: BuyResult) -> str:
    """One sentence for people: what to do (buy the best row, use what you own, or keep renting) and why."""
    head, detail = summary_parts(result)
    return f"{head} ({detail})." if detail else f"{head}."


def summary_parts(result: BuyResult) -> tuple[str, str]:
    """The verdict (``Use what you own: ...``, ``Buy ...``, ``Renting is cheaper ...``) and the figures behind it."""
    from advisor.cost.buy import KEEP_RENTING
    from advisor.units import fmt_usd

    rent = result.rent_usd_per_job
    budget = fmt_usd(result.budget_usd)
    rent_text = "no cloud option fits these jobs" if rent is None else \
        f"renting costs {fmt_usd(rent)} per job, {fmt_usd(result.rent_monthly_usd)} a month"
    best = result.best()
    if best is None:
        return f"Nothing within {budget} runs these jobs: keep renting", rent_text
    buying = next((o for o in result.options if o.verdict != KEEP_RENTING and not o.overbooked), None)
    if buying is None:
        return (f"Renting is cheaper than anything within {budget}: keep renting",
                f"{rent_text}; the best buy, {_named(best)}, costs {fmt_usd(best.usd_per_job)} per job over its life")
    if buying.purchase.kind == "owned":
        bought = next((o for o in result.options if o.purchase.kind != "owned"), None)
        if bought is None:
            then = f"nothing within {budget} runs them"
        elif bought.verdict == KEEP_RENTING:
            then = (f"nothing within {budget} beats renting: the best buy, {_named(bought)}, costs "
                    f"{fmt_usd(bought.usd_per_job)} per job over its life")
        else:
            then = f"the best buy, {_named(bought)}, costs {fmt_usd(bought.usd_per_job)} per job"
        return (f"Use what you own: {buying.purchase.hardware.replace(' (owned)', '')} runs these jobs for "
                f"{fmt_usd(buying.usd_per_job)} per job in electricity", f"{rent_text}; {then}")
    months = "" if buying.break_even_months is None else f", paid back in {buying.break_even_months:.1f} months"
    return f"Buy {_named(buying)}: {fmt_usd(buying.usd_per_job)} per job over its life{months}", rent_text


def _named(o: BuyOption) -> str:
    """A purchase and the price it is counted at: ``1 x GeForce RTX 3090 in a new rig (street 2026)``."""
    return f"{o.purchase.hardware} ({o.purchase.price_basis})"
