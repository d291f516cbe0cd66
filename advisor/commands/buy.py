"""``advisor buy --budget USD [--job FILE|MODEL:WORKLOAD ...] [--jobs-per-month N] [--base desktop|laptop|none
[--psu-w W] [--free-slots N]] [--json]``: what to buy.

Ranks the hardware one could buy within the budget (cards added to the user's desktop; one card in a basic PC;
1 to 4 cards of each consumer and workstation GPU in a new rig at its launch, street and used price; Macs; 4-
and 8-GPU servers for teams)
by cost per job over the hardware's life, against renting the same jobs on the cheapest cloud option that
fits; the GPUs one owns (any number, a laptop's included) are kept at their electricity. The GPUs of this
machine (``--fake-gpu`` to simulate) and those given with ``--own`` are the owned hardware; ``--no-own``
leaves them out. Bad input is one line on stderr and exit 2.
"""

from __future__ import annotations

import argparse
import re
import sys

from advisor import units
from advisor.commands._terminal import cell, echo, lines_text

SCHEMA = "advisor.buy/1"
_OWN = re.compile(r"^(?:(\d{1,2})x)?([A-Za-z0-9][A-Za-z0-9._+\-]{0,127})$")


def register(sub) -> None:
    from advisor.cli import add_fake_gpu
    from advisor.commands.plan import _number

    p = sub.add_parser("buy", help="what to buy for your jobs within a budget, against renting them",
                       description="Rank the hardware one could buy within a budget (cards added to your desktop, "
                                   "one card in a basic PC, 1 to 4 cards of each consumer and workstation GPU in a "
                                   "new rig at new, street and used prices, Macs, 4- and 8-GPU servers for teams) "
                                   "by cost per job over its life, against renting the same jobs; the GPUs you own "
                                   "are kept at their electricity. Without --job: a hobbyist's month of default "
                                   "jobs, or a team's for a large budget (the output's Jobs line names them).")
    p.add_argument("--budget", type=_number, required=True, metavar="USD", help="the most to spend upfront, in USD")
    p.add_argument("--job", action="append", default=[], metavar="FILE|MODEL:WORKLOAD",
                   help="a job: a scenario file (advisor plan --save-scenario) or MODEL:WORKLOAD such as "
                        "llama-3.1-8b:qlora (repeatable)")
    p.add_argument("--jobs-per-month", type=_number, default=4.0, metavar="N",
                   help="runs of each job a month (default 4)")
    p.add_argument("--own", action="append", default=[], metavar="NxID",
                   help="GPUs you own besides those detected, e.g. 2xrtx-3090 (repeatable)")
    p.add_argument("--no-own", action="store_true", help="leave out the GPUs of this machine and --own")
    p.add_argument("--base", choices=("desktop", "laptop", "none"), default=None,
                   help="what you have to put cards in: a desktop (cards are added to it), a laptop or none (a card "
                        "needs a PC); default: a desktop when a desktop GPU is owned, a laptop when a laptop's is, "
                        "else none")
    p.add_argument("--psu-w", type=_number, default=None, metavar="W",
                   help="your desktop's power supply in watts (a short one is replaced and counted)")
    p.add_argument("--free-slots", type=_number, default=None, metavar="N",
                   help="free PCIe x16 slots in your desktop (at most that many cards are added)")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                   help="set a cost assumption (electricity_usd_per_kwh, lifetime_years, resale_fraction, ...)")
    p.add_argument("--top", type=_number, default=15, metavar="N", help="rows shown in the table (default 15)")
    p.add_argument("--json", action="store_true", help=f"one JSON document on stdout (schema {SCHEMA})")
    add_fake_gpu(p)
    p.set_defaults(run=run)


def _owned(args, catalog) -> tuple[list, dict[str, float], int | None]:
    """The owned accelerators, one entry per GPU: this machine's (detected or simulated) and ``--own``'s; the
    driver's power figure of those the catalog has no TDP for; this machine's RAM (None when not known)."""
    from advisor.cli import UsageError

    if args.no_own:
        return [], {}, None
    out = []
    for item in args.own:
        m = _OWN.match(item.strip())
        if not m or m.group(2) not in catalog.accelerators:
            raise UsageError(f"buy: --own {item!r}: expected NxID with an accelerator id, e.g. 2xrtx-3090")
        count = int(m.group(1) or 1)
        if not 1 <= count <= 16:
            raise UsageError(f"buy: --own {item!r}: between 1 and 16 GPUs")
        out.extend([catalog.accelerators[m.group(2)]] * count)
    from advisor.hw.detect import UnknownScenario
    from advisor.planner.machine import local_machine

    try:
        local = local_machine(args.fake_gpu, catalog)  # the same detection `advisor plan` uses
    except UnknownScenario as exc:
        raise UsageError(f"--fake-gpu: {exc}") from None
    power = {}
    for hw in local.owned:
        out.extend([hw.accelerator] * hw.count)
        if hw.gpu_power_w is not None:
            power[hw.accelerator.id] = hw.gpu_power_w
    ram = getattr(local.host, "memory_total_bytes", None) if local.host is not None else None
    return out, power, ram or None


def _base(args, owned):
    """The base system of ``--base``, ``--psu-w`` and ``--free-slots`` (None: inferred from the owned GPUs)."""
    from advisor.cli import UsageError
    from advisor.cost.buy import BaseSystem

    if args.base is None and args.psu_w is None and args.free_slots is None:
        return None
    kind = args.base or "desktop"
    slots = args.free_slots
    if slots is not None and slots != int(slots):
        raise UsageError(f"buy: --free-slots: a whole number from 0 to 8, got {slots:g}")
    try:
        return BaseSystem(kind, args.psu_w, None if slots is None else int(slots), origin="--base")
    except ValueError as exc:
        raise UsageError(f"buy: {exc}") from None


def _assumptions(items: list[str]):
    from advisor.cli import UsageError
    from advisor.commands.plan import _assumption_value
    from advisor.cost.assumptions import CostAssumptions

    values = {}
    for item in items:
        name, sep, raw = item.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"buy: --set: expected NAME=VALUE, got {item!r}")
        try:
            values[name.strip().replace("-", "_")] = _assumption_value(raw)
        except ValueError as exc:
            raise UsageError(f"buy: --set {name.strip()}: {exc}") from None
    try:
        return CostAssumptions().with_overrides(**values)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"buy: --set: {' '.join(str(exc).split())}") from None


def run(args: argparse.Namespace) -> int:
    from advisor.catalog import load_catalog
    from advisor.cli import UsageError
    from advisor.planner import PlanInputError
    from advisor.planner.buy import buy_advice, default_jobs, load_job, owned_groups
    from advisor.store.calibration import load_planner_calibration

    if args.budget < 0:
        raise UsageError(f"buy: budget: must be zero or more USD, got {args.budget:g}")
    if not 0 < args.jobs_per_month <= 1e5:
        raise UsageError(f"buy: jobs-per-month: must be above 0 and at most 100000, got {args.jobs_per_month:g}")
    if not 1 <= args.top <= 100_000:
        raise UsageError(f"buy: top: must be between 1 and 100000, got {args.top:g}")
    a = _assumptions(args.set)
    catalog = load_catalog()
    try:
        jobs = [load_job(text) for text in args.job] or default_jobs(args.budget)
        accs, power, ram = _owned(args, catalog)
        owned = owned_groups(accs)
        result = buy_advice(jobs, args.budget, args.jobs_per_month, owned, catalog=catalog,
                            calibration=load_planner_calibration(), assumptions=a, owned_power_w=power,
                            default_jobs=not args.job, host_memory_bytes=ram, base=_base(args, owned))
    except PlanInputError as exc:
        raise UsageError(f"buy: {exc}") from None
    for w in result.warnings:
        echo(f"warning: {w}", file=sys.stderr)
    if args.json:
        from advisor.commands._json import print_json

        print_json(result.to_json(), indent=1)
    else:
        sys.stdout.write(render_table(result, int(args.top)))
    return 0


GROUP_WORDS = {"own": "yours", "upgrade": "add to PC", "new": "new", "server": "server"}


def render_table(result, top: int = 15) -> str:
    """The ranking for people: one table in the order of the ranking (its first row is the headline's), with
    what each row is (yours, cards added to your PC, a new PC or machine, a server), the use from which it pays
    back, the owned rows and the headline's purchase always shown; then the used prices with their date and
    source, what renting costs and the assumptions behind it."""
    from advisor.cost.buy import break_even_text, use_text
    from advisor.planner.buy import combine_text, defaults_text, soonest_payback, summary

    names = [j.name for j in result.jobs]
    lines = [summary(result), ""]
    owned = ", ".join(f"{k} x {acc.name}" for acc, k in result.owned) or "none"
    lines.append(f"Jobs ({units.fmt_count(result.jobs_per_month)} runs of each a month): {', '.join(names)}"
                 + (f" (the default: {defaults_text(result.budget_usd)}; --job to give yours)"
                    if result.default_jobs else "") + ".")
    lines.append(f"Owned: {owned}" + (f" ({combine_text(list(result.owned))})." if result.owned else "."))
    how = {"--base": "", "detected": ", from the GPUs owned", "assumed": ", assumed: --base desktop to add cards"}
    lines.append(f"Base: {result.base.text()}{how.get(result.base.origin, '')}.")
    head = ("what", "hardware", "price", "upfront", "monthly", "per job", "use", "verdict", "break-even",
            "pays back from", *[f"time: {n}" for n in names])
    named = soonest_payback(result)
    take = [o for i, o in enumerate(result.options)
            if i < top or o.purchase.kind == "owned" or o is named]
    rows = []
    for o in take:
        times = [units.fmt_hours(o.hours_per_job[n]) if o.fits[n] else "does not fit" for n in names]
        upfront = units.fmt_usd(o.purchase.upfront_usd) if o.purchase.upfront_usd else "$0"
        verdict = o.verdict if o.stack_ok else f"{o.verdict} (other stack)"
        rows.append((GROUP_WORDS.get(o.purchase.group, o.purchase.group), cell(o.purchase.hardware),
                     cell(o.purchase.price_basis), upfront, units.fmt_usd(o.monthly_usd + o.holding_monthly_usd),
                     units.fmt_usd(o.usd_per_job), f"{o.utilisation:.0%}", verdict, break_even_text(o), use_text(o),
                     *times))
    widths = [max(len(str(r[i])) for r in (head, *rows)) for i in range(len(head))]
    widths[1] = min(widths[1], 60)
    lines.append("")
    for r in (head, *rows):
        cells = [str(c)[:widths[i]].ljust(widths[i]) if i < 3 else str(c).rjust(widths[i]) for i, c in enumerate(r)]
        lines.append("  " + "  ".join(cells).rstrip())
    if len(result.options) > len(take):
        lines.append(f"  ... {len(result.options) - len(take)} more (--top N, --json)")
    left = result.considered - len(result.options)
    if left:
        lines.append(f"  ({left} more within the budget fit none of the jobs)")
    notes = dict.fromkeys(f"{o.purchase.hardware}: {'; '.join(o.stack_notes)}" for o in take if o.stack_notes)
    if notes:
        lines.append("")
        lines.append("On another software stack than the jobs' (ranked after those that run them):")
        lines += [f"  {n}" for n in notes]
    upgrades = dict.fromkeys(o.purchase.note for o in take if o.purchase.note and o.purchase.group == "upgrade")
    lines += [f"  (add to PC: {n})" for n in list(upgrades)[:1]]
    if result.used:
        lines.append("")
        lines.append("Used prices (resources/used_prices.csv, or used_prices.csv in your config folder):")
        lines += [f"  {u.accelerator_id}: {units.fmt_usd(u.price_usd)} {u.condition}, {u.price_date}, {u.source}"
                  for u in result.used]
    lines.append("")
    lines.append("Rent (cheapest cloud option that fits each job):")
    for name, r in result.rent.items():
        lines.append(f"  {name}: " + ("no cloud option fits" if r is None else
                                      f"{r.option_id}, {units.fmt_usd(r.cost_usd)} in {units.fmt_hours(r.hours)}"))
    a = result.assumptions
    lines.append("")
    lines.append(f"Monthly = running (electricity at ${a.electricity_usd_per_kwh:g}/kWh) plus holding costs: a rig's "
                 f"price less resale {a.resale_fraction:g} over {a.lifetime_years:g} years and its idle power "
                 f"({a.home_idle_power_w:g} W), a server's capex over {a.onprem_amortisation_years:g} years, "
                 f"colocation, support and idle power. Per job = monthly plus the rent of the jobs it cannot run, "
                 f"over the jobs a month. Use = busy hours over the {a.hours_per_day:g} h a day available (servers "
                 f"{a.onprem_hours_per_day:g} h). Break-even = upfront / monthly saving against renting. Pays back "
                 f"from = the runs of each job a month from which break-even falls within the hardware's life, and "
                 f"the hours of work a day they take ('!': more than the {a.hours_per_day:g} h assumed, priced at "
                 f"24 h a day). A "
                 f"basic PC = {units.fmt_usd(a.basic_system_price_usd)} of budget parts with an "
                 f"{a.basic_system_psu_w:g} W supply; a new rig = {units.fmt_usd(a.home_system_price_usd)}. Rent at "
                 f"on-demand prices{' (spot: --set spot=true)' if not a.spot else ', spot as set'}. Prices as of "
                 f"{result.prices_as_of} (catalog {result.catalog_date}); sources in --json.")
    return lines_text(lines) + "\n"  # names from the catalog and the user's own
