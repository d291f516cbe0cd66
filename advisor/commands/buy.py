"""``advisor buy --budget USD [--job FILE|MODEL:WORKLOAD ...] [--jobs-per-month N] [--json]``: what to buy.

Ranks the hardware one could buy within the budget (cards added to this machine; 1 to 4 cards of each consumer
and workstation GPU in a new rig at its launch, street and used price; Macs; 4- and 8-GPU servers for teams)
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
                       description="Rank the hardware one could buy within a budget (cards added to this machine, "
                                   "1 to 4 cards of each consumer and workstation GPU in a new rig at new, street "
                                   "and used prices, Macs, 4- and 8-GPU servers for teams) by cost per job over its "
                                   "life, against renting the same jobs; the GPUs you own are kept at their "
                                   "electricity. Without --job, below a $20,000 budget: a hobbyist's month, QLoRA "
                                   "of llama-3.1-8b on 1e7 tokens and 1e6 generated tokens of it, each run "
                                   "--jobs-per-month times; from $20,000: a team's, LoRA of llama-3.1-70b on 2e8 "
                                   "tokens and 1e8 generated tokens at batch 32.")
    p.add_argument("--budget", type=_number, required=True, metavar="USD", help="the most to spend upfront, in USD")
    p.add_argument("--job", action="append", default=[], metavar="FILE|MODEL:WORKLOAD",
                   help="a job: a scenario file (advisor plan --save-scenario) or MODEL:WORKLOAD such as "
                        "llama-3.1-8b:qlora (repeatable)")
    p.add_argument("--jobs-per-month", type=_number, default=4.0, metavar="N",
                   help="runs of each job a month (default 4)")
    p.add_argument("--own", action="append", default=[], metavar="NxID",
                   help="GPUs you own besides those detected, e.g. 2xrtx-3090 (repeatable)")
    p.add_argument("--no-own", action="store_true", help="leave out the GPUs of this machine and --own")
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
        result = buy_advice(jobs, args.budget, args.jobs_per_month, owned_groups(accs), catalog=catalog,
                            calibration=load_planner_calibration(), assumptions=a, owned_power_w=power,
                            default_jobs=not args.job, host_memory_bytes=ram)
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


GROUPS = (("own", "What you own"), ("upgrade", "Add cards to this machine (no new PC)"),
          ("new", "A new rig or machine"), ("server", "Servers for a team (on-prem)"))


def render_table(result, top: int = 15) -> str:
    """The ranking for people, grouped (what you own, cards added to this machine, a new rig, servers), each
    group cheapest per job first; then what renting costs and the assumptions behind it."""
    from advisor.planner.buy import combine_text, defaults_text, summary

    names = [j.name for j in result.jobs]
    lines = [summary(result), ""]
    owned = ", ".join(f"{k} x {acc.name}" for acc, k in result.owned) or "none"
    lines.append(f"Jobs ({units.fmt_count(result.jobs_per_month)} runs of each a month): {', '.join(names)}"
                 + (f" (the default: {defaults_text(result.budget_usd)}; --job to give yours)"
                    if result.default_jobs else "") + ".")
    lines.append(f"Owned: {owned}" + (f" ({combine_text(list(result.owned))})." if result.owned else "."))
    head = ("hardware", "price", "upfront", "monthly", "per job", "use", "verdict", "break-even",
            *[f"time: {n}" for n in names])
    shown = 0
    for group, title in GROUPS:
        rows_of = [o for o in result.options if o.purchase.group == group]
        if not rows_of:
            continue
        take = rows_of[:max(1, top - shown)] if group != "own" else rows_of
        shown += len(take)
        rows = []
        for o in take:
            times = [units.fmt_hours(o.hours_per_job[n]) if o.fits[n] else "does not fit" for n in names]
            m = o.break_even_months
            be = ("owned" if o.purchase.kind == "owned" else "never" if m is None else
                  f"{m:,.1f} mo" if o.pays_back else f"{m:,.0f} mo > life")
            verdict = o.verdict + (" (overbooked)" if o.overbooked else "")
            upfront = units.fmt_usd(o.purchase.upfront_usd) if o.purchase.upfront_usd else "$0"
            rows.append((cell(o.purchase.hardware), cell(o.purchase.price_basis), upfront,
                         units.fmt_usd(o.monthly_usd + o.holding_monthly_usd), units.fmt_usd(o.usd_per_job),
                         f"{o.utilisation:.0%}", verdict, be, *times))
        widths = [max(len(str(r[i])) for r in (head, *rows)) for i in range(len(head))]
        widths[0] = min(widths[0], 60)
        lines += ["", f"{title}:"]
        for r in (head, *rows):
            cells = [str(c)[:widths[i]].ljust(widths[i]) if i < 2 else str(c).rjust(widths[i]) for i, c in enumerate(r)]
            lines.append("  " + "  ".join(cells).rstrip())
        notes = dict.fromkeys(o.purchase.note for o in take if o.purchase.note and group == "upgrade")
        lines += [f"  ({n})" for n in list(notes)[:1]]
        if len(rows_of) > len(take):
            lines.append(f"  ... {len(rows_of) - len(take)} more (--top N, --json)")
    left = result.considered - len(result.options)
    if left:
        lines.append(f"  ({left} more within the budget fit none of the jobs)")
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
                 f"{a.onprem_hours_per_day:g} h). Break-even = upfront / monthly saving against renting ('> life': "
                 f"not within its life). Prices as of {result.prices_as_of} (catalog {result.catalog_date}); used "
                 f"prices and sources in --json.")
    return lines_text(lines) + "\n"  # names from the catalog and the user's own
