"""The buy advisor's planning: each job planned on each thing one could buy, and on the cheapest rent.

``buy_advice`` plans every job once per device count (1 to 4 cards, 4- and 8-GPU servers, and however many GPUs
are owned) on every candidate accelerator together (the planner's one path: memory, fit, utilisation, time),
reads each candidate's fit and hours from that plan, and prices each purchase with ``advisor.cost.buy``
against the cheapest cloud option that fits the same job. The GPUs one owns are planned as owned hardware
(``planner.owned``: a laptop's GPU or one without a price included, at its electricity).
A Mac is planned as its chip in that configuration (its unified memory's GPU share, its GPU cores), as a
machine one owns: ``advisor.catalog.machines``. docs/method.md, "What to buy".
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace

from advisor.catalog import Accelerator, Catalog, load_catalog
from advisor.catalog.defaults import default_job, defaults
from advisor.catalog.machines import load_machines
from advisor.cost.assumptions import CostAssumptions
from advisor.cost.buy import (
    BaseSystem,
    BuyOption,
    JobRun,
    Purchase,
    Rent,
    price_purchase,
    purchases,
    rank,
    rent_per_job,
)
from advisor.job import JobInputError
from advisor.planner.owned import OwnedHardware
from advisor.planner.request import PlanInputError, PlanRequest
from advisor.planner.service import plan

SCHEMA = "advisor.buy/1"
# The jobs asked about when none are given, by who is likely asking (the budget says): runs of each a month are
# ``--jobs-per-month`` (4 by default) of the workloads' default jobs (resources/defaults.toml); a team's (a budget of
# TEAM_BUDGET_USD or more) fine-tunes a 70B model. A hobbyist's settings: QLoRA with gradient checkpointing (as in
# Dettmers et al. 2023, "QLoRA") on 1,024-token sequences, and generation from the runtime's usual file (the
# 4-bit Q4_K_M Ollama serves for llama3.1:8b by default, on the cards a hobbyist buys).
# A hobbyist's month: the default model's QLoRA and inference jobs at the workloads' default budgets (the one
# table, resources/defaults.toml), inference in the runtime's usual file like every plan.
DEFAULT_JOBS = (
    (f"qlora {defaults().model}", {"model": defaults().model, "workload": "qlora",
                                   "tokens": default_job("qlora").tokens, "checkpointing": "full", "seq_len": 1024}),
    (f"inference {defaults().model}", {"model": defaults().model, "workload": "inference",
                                       "tokens": default_job("inference").tokens}),
)
TEAM_BUDGET_USD = 20_000.0
TEAM_JOBS = (
    ("lora llama-3.1-70b", {"model": "llama-3.1-70b", "workload": "lora", "tokens": 2e8}),
    ("inference llama-3.1-70b", {"model": "llama-3.1-70b", "workload": "inference", "tokens": 1e8, "batch": 32}),
)


@dataclass(frozen=True)
class BuyJob:
    """One job of the buy question: a name (a scenario file's name, ``MODEL:WORKLOAD``) and its request."""

    name: str
    request: PlanRequest


def default_jobs(budget_usd: float = 0.0) -> list[BuyJob]:
    """The jobs asked about when none are given, for who is likely asking. Below ``TEAM_BUDGET_USD``, a
    hobbyist's: QLoRA of Llama 3.1 8B on 1e7 tokens (full checkpointing, 1,024-token sequences) and 1e6 tokens
    generated from its Q4_K_M file at batch 1 (about 30,000 tokens a day of chat and coding use a month at 4
    runs); from it, a team's: LoRA of Llama 3.1 70B on 2e8 tokens and 1e8 tokens generated from it, 32
    requests at a time."""
    table = TEAM_JOBS if budget_usd >= TEAM_BUDGET_USD else DEFAULT_JOBS
    return [BuyJob(name, PlanRequest.from_mapping({**values, "sources": {k: "buy default job" for k in values}}))
            for name, values in table]


def _job_words(values: dict) -> str:
    """One default job in words: ``QLoRA of llama-3.1-8b on 10 million tokens`` (training) or ``10 million tokens
    generated from llama-3.1-8b's Q4_K_M file, 32 requests at a time`` (inference): from the table's values."""
    from advisor.units import fmt_count

    tokens = f"{fmt_count(values['tokens'])} tokens"
    if values["workload"] == "inference":
        file = f"'s {values['quant'].upper()} file" if values.get("quant") else ""
        batch = f", {values['batch']} requests at a time" if values.get("batch", 1) > 1 else ""
        return f"{tokens} generated from {values['model']}{file}{batch}"
    name = {"qlora": "QLoRA", "lora": "LoRA"}.get(values["workload"], values["workload"])
    return f"{name} of {values['model']} on {tokens}"


def defaults_text(budget_usd: float) -> str:
    """The default jobs in words (for the CLI's help and table and the Buy page), from ``DEFAULT_JOBS`` or
    ``TEAM_JOBS`` (the one place they are declared)."""
    from advisor.units import fmt_usd

    if budget_usd >= TEAM_BUDGET_USD:
        who, table = f"a team's month (a budget of {fmt_usd(TEAM_BUDGET_USD)} or more)", TEAM_JOBS
    else:
        who, table = "a hobbyist's month", DEFAULT_JOBS
    return f"{who}: {' and '.join(_job_words(v) for _n, v in table)}, each run jobs-per-month times"


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


def combine_text(owned: list[tuple[Accelerator, int]]) -> str:
    """How the owned GPUs work together on a job, as the planner plans them: cards of one kind in one machine
    split a job (tensor parallel inside the machine); different kinds are planned apart (a job runs on one
    kind); a laptop's GPU is one device."""
    if not owned:
        return "no GPUs owned: only purchases and rent"
    parts = []
    for acc, k in owned:
        if k == 1:
            parts.append(f"1 x {acc.name} runs a job alone")
        else:
            parts.append(f"{k} x {acc.name} in one machine: a job uses as many as it needs, up to {k} (tensor or "
                         f"data parallel over the machine's links), and only those draw power")
    if len(owned) > 1:
        parts.append("different kinds are planned apart: a job runs on one kind")
    return "; ".join(parts)


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
    default_jobs: bool = False  # the jobs are the defaults (``defaults_text``), none were given
    base: BaseSystem = BaseSystem()
    used: tuple = ()  # the used-market rows priced (``advisor.catalog.used.UsedPrice``): date and source shown
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
            "owned_combine": combine_text(list(self.owned)),
            "base": {"kind": self.base.kind, "psu_w": self.base.psu_w, "free_slots": self.base.free_slots,
                     "origin": self.base.origin, "text": self.base.text()},
            "used_prices": [{"accelerator": u.accelerator_id, "price_usd": u.price_usd, "price_date": u.price_date,
                             "condition": u.condition, "source": u.source} for u in self.used],
            "headline": summary(self),
            "default_jobs": defaults_text(self.budget_usd) if self.default_jobs else None,
            "rent": {"usd_per_job": self.rent_usd_per_job, "monthly_usd": self.rent_monthly_usd,
                     "jobs": {name: None if r is None else {"option": r.option_id, "cost_usd": r.cost_usd,
                                                            "hours": r.hours}
                              for name, r in self.rent.items()}},
            "options": [o.to_json() for o in self.options],
            "considered": self.considered,
            "assumptions": {k: getattr(a, k) for k in ("electricity_usd_per_kwh", "home_load_factor",
                                                       "home_system_price_usd", "home_system_extra_gpu_usd",
                                                       "home_system_power_w", "home_idle_power_w", "lifetime_years",
                                                       "basic_system_price_usd", "basic_system_psu_w",
                                                       "psu_upgrade_usd",
                                                       "resale_fraction", "financing_rate_per_year", "hours_per_day",
                                                       "utilisation", "owned_wear_usd_per_gpu_hour",
                                                       "onprem_server_overhead", "onprem_amortisation_years",
                                                       "colocation_usd_per_kw_month", "staff_usd_per_gpu_year",
                                                       "onprem_electricity_usd_per_kwh", "onprem_hours_per_day")},
            "catalog": {"date": self.catalog_date, "prices_as_of": self.prices_as_of},
            "warnings": list(self.warnings),
        }


def _runs_at(job: BuyJob, devices: int, accel_ids: list[str], catalog: Catalog, calibration,
             a: CostAssumptions) -> dict[str, JobRun]:
    """Fit and hours of one job on ``devices`` of each accelerator (one plan over all of them), read from the
    home or on-prem option where there is one (a box one owns), else the first."""
    try:
        req = job.request.model_copy(update={"accelerator": tuple(accel_ids), "gpus": devices, "own": (),
                                             "owned_options": False})
        req.check_rules()
    except JobInputError:  # e.g. the job's tensor-parallel degree does not divide this device count
        return {}
    result = plan(req, catalog=catalog, calibration=calibration, assumptions=a, advise=False)
    runs: dict[str, JobRun] = {}
    for o in sorted(result.options, key=lambda o: o.kind not in ("home", "onprem")):
        if o.accelerator not in runs:
            ok = o.fits and o.feasible
            runs[o.accelerator] = JobRun(ok, o.hours if ok else None, stack_ok=o.stack_ok,
                                         stack_reason=o.stack_reason)
    return runs


def _owned_run(job: BuyJob, hw: OwnedHardware, catalog: Catalog, calibration, a: CostAssumptions) -> JobRun:
    """Fit and hours of one job on owned hardware as the planner plans it (at most the GPUs owned; a GPU with no
    price, a laptop's, included)."""
    try:
        req = job.request.model_copy(update={"accelerator": (), "gpus": None, "own": (), "owned_options": True})
        req.check_rules()
    except JobInputError:
        return JobRun(False, None)
    result = plan(req, catalog=catalog, calibration=calibration, assumptions=a, owned=[hw], only_owned=True,
                  advise=False)
    o = next((o for o in result.options if o.kind == "owned"), None)
    ok = o is not None and o.fits and o.feasible
    return JobRun(ok, o.hours if ok else None, o.devices if ok else None,
                  stack_ok=o.stack_ok if o is not None else True, stack_reason=o.stack_reason if o is not None else "")


def _used_prices(catalog: Catalog) -> list:
    """The bundled used-market rows and the user's ``used_prices.csv`` (config folder); a broken user file is
    reported as one line (PlanInputError)."""
    from advisor.catalog.load import CatalogError
    from advisor.catalog.used import FILE_NAME, load_used_prices
    from advisor.paths import config_dir

    try:
        return load_used_prices(catalog.accelerators, config_dir() / FILE_NAME)
    except CatalogError as exc:
        raise PlanInputError("used_prices", str(exc)) from None


def cheapest_rent(job: BuyJob, catalog: Catalog, calibration, a: CostAssumptions) -> Rent | None:
    """The cloud option that runs the job at the lowest job cost (any accelerator, the fewest devices that fit),
    on the job's software stack when one fits, among the options a plan measures owning against
    (``planner.options.rent_options``: on-demand unless the assumptions rank by spot)."""
    from advisor.planner.options import rent_options

    req = job.request.model_copy(update={"accelerator": (), "gpus": None})
    req.check_rules()
    options = rent_options(plan(req, catalog=catalog, calibration=calibration, assumptions=a).options, a)
    best = min(options, key=lambda o: (not o.stack_ok, o.cost_usd, o.hours, o.id), default=None)
    return None if best is None else Rent(best.id, best.cost_usd, best.hours)


def default_base(owned: list[tuple[Accelerator, int]]) -> BaseSystem:
    """The base system when none is given: a desktop when a desktop card is owned, a laptop when a laptop's GPU
    is, else none (``origin`` says it was inferred)."""
    from advisor.cost.buy import buyable

    if any(buyable(acc) for acc, k in owned if k >= 1):
        return BaseSystem("desktop", origin="detected")
    if any("laptop" in acc.id for acc, k in owned if k >= 1):
        return BaseSystem("laptop", origin="detected")
    return BaseSystem("none", origin="assumed")


def buy_advice(jobs: list[BuyJob], budget_usd: float, jobs_per_month: float,
               owned: list[tuple[Accelerator, int]] = (), catalog: Catalog | None = None, calibration=None,
               assumptions: CostAssumptions | None = None, owned_power_w: dict[str, float] | None = None,
               used=None, default_jobs: bool = False, host_memory_bytes: int | None = None,
               base: BaseSystem | None = None) -> BuyResult:
    """Rank what to buy within a budget for jobs run ``jobs_per_month`` times each, against renting them.

    Args:
        jobs: the jobs (at least one; names unique).
        budget_usd: the most to spend upfront (USD, zero or more; zero leaves only the owned hardware).
        owned: ``(accelerator, count)`` of the GPUs already owned (``owned_groups`` of ``advisor detect``'s), any
            number of them; kept at their electricity whether or not the catalog prices them.
        calibration: this machine's calibration, as for ``plan``.
        owned_power_w: the driver's power figure of an owned GPU with no TDP in the catalog, by accelerator id.
        used: used-market rows (``advisor.catalog.used``); None: the bundled ones and the user's file.
        host_memory_bytes: this machine's RAM where detection knows it (an upgrade says when it is short).
        base: what the user has to put cards in (None: :func:`default_base` of the owned GPUs).
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
    base = base or default_base(owned)
    if used is None:
        used = _used_prices(catalog)
    candidates = purchases(catalog.accelerators.values(), machines, owned, a, budget_usd,
                           used={u.accelerator_id: u for u in used}, owned_power_w=owned_power_w,
                           host_memory_bytes=host_memory_bytes, base=base)
    buy_catalog = replace(catalog, accelerators={**catalog.accelerators, **{acc.id: acc for _m, acc in machines},
                                                 **{acc.id: acc for acc, _k in owned}})
    warnings = [f"owned {acc.name}: no power figure for it, so its electricity counts the machine's power alone"
                for acc, _k in owned if not acc.tdp_w and not (owned_power_w or {}).get(acc.id)]
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
        if p.kind == "owned":
            continue
        by_count.setdefault(p.devices, [])
        if p.accelerator.id not in by_count[p.devices]:
            by_count[p.devices].append(p.accelerator.id)
    runs = {(j.name, n): _runs_at(j, n, ids, buy_catalog, calibration, a)
            for j in jobs for n, ids in sorted(by_count.items())}
    owned_runs = {(j.name, acc.id): _owned_run(j, OwnedHardware(acc, k, per_machine=k, origin="owned",
                                                                gpu_power_w=(owned_power_w or {}).get(acc.id)),
                                               buy_catalog, calibration, a)
                  for j in jobs for acc, k in owned}
    none = JobRun(False, None)

    def runs_of(p: Purchase) -> dict[str, JobRun]:
        if p.kind == "owned":
            return {j.name: owned_runs.get((j.name, p.accelerator.id), none) for j in jobs}
        return {j.name: runs.get((j.name, p.devices), {}).get(p.accelerator.id, none) for j in jobs}

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
                     warnings=tuple(warnings), default_jobs=default_jobs, base=base,
                     used=tuple(u for u in used if any(o.purchase.price_basis.startswith("used")
                                                        and o.purchase.accelerator.id == u.accelerator_id
                                                        for o in priced)))


def summary(result: BuyResult) -> str:
    """One sentence for people: what to do (buy the best row, use what you own, or keep renting) and why."""
    head, detail = summary_parts(result)
    return f"{head} ({detail})." if detail else f"{head}."


def summary_parts(result: BuyResult) -> tuple[str, str]:
    """The verdict and the figures behind it. The verdict is the first row's (``Use what you own: ...``, ``Buy
    ...``); when that row keeps renting, it says from what use the purchase that pays back soonest would (the
    table's "pays back from" column): ``Renting is cheaper at 4 runs of each job a month; 1 x ... pays back
    within its 3-year life from 23 runs/mo (5.1 h/day)``."""
    from advisor.cost.buy import BUY, USE_OWNED
    from advisor.units import fmt_count, fmt_usd

    rent = result.rent_usd_per_job
    budget = fmt_usd(result.budget_usd)
    n = result.jobs_per_month
    use = f"{fmt_count(n)} run{'' if n == 1 else 's'} of each job a month"
    rent_text = "no cloud option fits these jobs" if rent is None else \
        f"renting costs {fmt_usd(rent)} per job, {fmt_usd(result.rent_monthly_usd)} a month"
    best = result.best()
    if best is None:
        return f"Nothing you own or could buy within {budget} runs these jobs: keep renting", rent_text
    bought = next((o for o in result.options if o.purchase.kind != "owned"), None)
    if best.verdict == USE_OWNED:
        yours = best.purchase.hardware.replace(" (owned)", "")
        if all(best.fits.values()):  # a purchase would only replace what runs every job already
            then = _then(bought, result) if bought is not None and bought.verdict == BUY else \
                f"nothing within {budget} runs them for less per job"
            return (f"Use what you own: {yours} runs these jobs for {fmt_usd(best.usd_per_job)} per job in "
                    f"electricity", f"{rent_text}; {then}")
        runs = [name for name, ok in best.fits.items() if ok]
        return (f"Use what you own: {yours} runs {', '.join(runs)}; with the rent of the rest, "
                f"{fmt_usd(best.usd_per_job)} per job", f"{rent_text}; {_then(bought, result)}")
    if best.verdict == BUY:
        return (f"Buy {_named(best)}: {fmt_usd(best.usd_per_job)} per job over its life at {use}{_payback(best)}"
                f"{_stack(best)}", rent_text)
    if best.purchase.kind == "owned":
        yours = best.purchase.hardware.replace(" (owned)", "")
        how = "in electricity" if all(best.fits.values()) else "in electricity and the rent of the jobs it cannot run"
        head = f"Keep renting at {use}: your {yours} costs {fmt_usd(best.usd_per_job)} per job {how}, more than renting"
    else:
        head = f"Renting is cheaper at {use} than anything within {budget}"
    return f"{head}; {_from_use(result)}", rent_text


def soonest_payback(result: BuyResult) -> BuyOption | None:
    """The purchase on the jobs' software stack that pays back within its life at the lowest use (runs a month),
    one that runs every job before one that runs some, the cheaper per job among equals; None when none does
    within 24 hours a day."""
    cands = [o for o in result.options if o.purchase.kind != "owned" and o.stack_ok and o.pays_back_from is not None]
    return min(cands, key=lambda o: (not all(o.fits.values()), o.pays_back_from, o.usd_per_job, o.purchase.id),
               default=None)


def _from_use(result: BuyResult) -> str:
    """From what use a purchase would pay back (:func:`soonest_payback`), or that none would."""
    from advisor.cost.buy import use_text
    from advisor.units import fmt_usd

    o = soonest_payback(result)
    if o is None:
        return f"nothing within {fmt_usd(result.budget_usd)} pays back within its life, even at work 24 h a day"
    over = ("" if not use_text(o).endswith("!)") else
            f", more than the {result.assumptions.hours_per_day:g} h a day assumed")
    return (f"{_named(o)}, {fmt_usd(o.purchase.upfront_usd)}, would pay back within its {o.life_months / 12:g}-year "
            f"life from {use_text(o).replace('!', '')}{over}")


def _stack(o: BuyOption) -> str:
    return f" ({'; '.join(o.stack_notes)})" if o.stack_notes else ""


def _payback(o: BuyOption) -> str:
    if not o.pays_back:
        return f", though it does not pay back within its {o.life_months / 12:g}-year life"
    return f", paid back in {o.break_even_months:.1f} months"


def _then(bought: BuyOption | None, result: BuyResult) -> str:
    """What the best purchase would add, after the owned hardware: the first purchase row when it beats renting,
    else from what use one would (:func:`soonest_payback`)."""
    from advisor.cost.buy import BUY
    from advisor.units import fmt_usd

    if bought is None:
        return f"nothing within {fmt_usd(result.budget_usd)} runs them"
    if bought.verdict != BUY:
        return f"no purchase beats renting at this use; {_from_use(result)}"
    return f"the best buy, {_named(bought)}, costs {fmt_usd(bought.usd_per_job)} per job{_payback(bought)}"


def _named(o: BuyOption) -> str:
    """A purchase and the price it is counted at: ``1 x GeForce RTX 3090 in a basic PC (used 2026)``."""
    return f"{o.purchase.hardware} ({o.purchase.price_basis})"
