"""``advisor plan``: memory, time and total job cost of an LLM job on every hardware option."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from advisor import units
from advisor.commands._terminal import cell, echo, lines_text
from advisor.cost.price_dates import price_date_label
from advisor.job import ASSUMPTION_FLAGS, JOB_FIELDS, assumption_meta
from advisor.job.schema import WORKLOADS
from advisor.untrusted import NAME_MAX_CHARS

_GROUPS = {"model": "model", "job": "job", "budget": "budget (training; --tokens also for inference)",
           "inference": "inference", "hardware": "hardware and cost"}


def _number(text: str) -> float:
    try:
        value = units.parse_quantity(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a finite number (like 7e9 or 7B), got {text!r}") from None
    return value


def _integer(text: str) -> int:
    value = _number(text)
    if value != int(value):
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}")
    return int(value)


def _help(meta) -> str:
    """``--help`` text of a schema field: its help, unit, range and default, from the schema."""
    extra = []
    if meta.choices:
        extra.append(" | ".join(str(c) for c in meta.choices))
    elif meta.range_text():
        extra.append(meta.range_text() + (f" {meta.unit}" if meta.unit else ""))
    if meta.default not in (None, (), {}) and meta.kind != "bool":
        extra.append(f"default {meta.default}")
    if set(meta.workloads) != set(WORKLOADS):
        extra.append("for " + ", ".join(meta.workloads))
    return (meta.help + (f" ({'; '.join(extra)})" if extra else "")).replace("%", "%%")


def add_job_flags(p, fields=None, titles=None) -> None:
    """Add one flag per job schema field (``advisor/job/schema.py``; ``fields``: another schema's, such as a
    serving job's) and per cost assumption with a flag; ``titles``: the ``--help`` groups by schema group."""
    groups = {key: p.add_argument_group(title) for key, title in (titles or _GROUPS).items()}
    for meta in (fields or JOB_FIELDS).values():
        if meta.flag is None:
            continue
        g = groups.get(meta.group, groups["job"])
        if meta.kind == "bool":  # a default-on switch: --no-<name> turns it off; a default-off one: --<name>
            action = "store_true" if meta.default is False else "store_false"
            g.add_argument(meta.flag, dest=meta.name, action=action, default=None, help=_help(meta))
        elif meta.kind == "ids":
            g.add_argument(meta.flag, dest=meta.name, action="append", metavar="ID", help=_help(meta))
        else:
            kind = {"int": _integer, "number": _number}.get(meta.kind)
            if meta.kind == "choice" and isinstance(meta.choices[0], int):
                kind = _integer
            g.add_argument(meta.flag, dest=meta.name, type=kind, help=_help(meta))
    h = groups["hardware"]
    for name in ASSUMPTION_FLAGS:
        a = assumption_meta(name)
        text = f"{a.help} ({a.unit}; default {a.value}: {a.origin})"
        if isinstance(a.value, bool):
            h.add_argument(f"--{name.replace('_', '-')}", dest=name, action="store_true", default=None, help=text)
        else:
            h.add_argument(f"--{name.replace('_', '-')}", dest=name, type=_number, help=text.replace("%", "%%"))
    h.add_argument("--set", action="append", metavar="NAME=VALUE", default=[],
                   help="set any cost assumption (see the assumptions listed in the output)")


def register(sub) -> None:
    from advisor.cli import _Parser  # noqa: F401  (subparsers inherit the one-line error parser)

    p = sub.add_parser("plan", help="plan an LLM job: memory, time and cost on every hardware option",
                       description="Plan a training or inference job: memory per device, fit, FLOPs, time, "
                                   "tokens/s and total job cost for home rigs, on-prem servers and every cloud offer. "
                                   "Flags override the scenario file.")
    p.add_argument("scenario", nargs="*", metavar="SCENARIO_FILE", help="TOML scenario file(s) (schema advisor.scenario/1)")
    add_job_flags(p)
    o = p.add_argument_group("output")
    o.add_argument("--json", action="store_true", help="one JSON document on stdout (schema advisor.plan/1)")
    o.add_argument("--sensitivity", action="store_true",
                   help="add how costs and the ranking move with tokens, MFU, electricity price and utilisation "
                        "(JSON key 'sensitivity')")
    o.add_argument("--top", type=_integer, default=12, help="options shown in the table (1 to 100000; default 12)")
    o.add_argument("--all", action="store_true", help="show every option in the table")
    o.add_argument("--explain", action="store_true",
                   help="add the options that cannot run, every assumption with its origin and the method's sources")
    from advisor.report.plan_outputs import add_output_flags  # --report, --launch, --save-scenario, --fleet

    add_output_flags(o)
    from advisor.commands import engine_check

    engine_check.add_flag(o)
    from advisor.commands.fleet_watch import add_source_flags  # --fleet with --prometheus/--scrape: the live fleet

    add_source_flags(p.add_argument_group("live fleet (--fleet with --prometheus or --scrape)"))
    from advisor.cli import add_fake_gpu

    add_fake_gpu(p)
    p.set_defaults(run=run)


def assumption_flags(args, assumptions: dict, sources: dict) -> None:
    """The cost assumptions given on the command line (their own flags, then ``--set NAME=VALUE``) into
    ``assumptions``, each with its origin in ``sources`` (``advisor plan`` and ``advisor serve``).

    Raises:
        UsageError: a ``--set`` that is not NAME=VALUE, or a value that is not one.
    """
    from advisor.cli import UsageError

    for name in ASSUMPTION_FLAGS:
        value = getattr(args, name, None)
        if value is not None:
            assumptions[name] = value
            sources[name] = f"command line (--{name.replace('_', '-')})"
    for item in args.set:
        name, sep, raw = item.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"--set: expected NAME=VALUE, got {item!r}")
        key = name.strip().replace("-", "_")
        try:
            assumptions[key] = _assumption_value(raw)
        except ValueError as exc:
            raise UsageError(f"--set {name.strip()}: {exc}") from None
        sources[key] = f"--set {key}={raw.strip()}"


def _assumption_value(text: str):
    low = text.strip().lower()
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    return units.parse_quantity(text)


def request_values(args, scenario_plan: dict | None = None, scenario_assumptions: dict | None = None,
                   scenario_name: str = "") -> dict:
    """Merge a scenario's [plan]/[assumptions] with the command-line flags (flags win).

    Returns:
        The ``Job.from_mapping`` values, with ``sources``: where each value came from (the scenario file,
        the flag, ``--set NAME=VALUE``), by field or assumption name.
    """
    from advisor.store.scenario import Scenario, job_values

    scenario = Scenario(plan=dict(scenario_plan or {}), assumptions=dict(scenario_assumptions or {}))
    values = job_values(scenario, scenario_name)
    values.pop("notes")
    sources, assumptions = values.pop("sources"), values.pop("assumptions")
    for name, meta in JOB_FIELDS.items():
        value = getattr(args, name, None) if meta.flag else None
        if value is not None:
            values[name] = list(value) if meta.kind == "ids" else value
            sources[name] = f"command line ({meta.flag})"
    if isinstance(values.get("accelerator"), str):
        values["accelerator"] = [values["accelerator"]]
    assumption_flags(args, assumptions, sources)
    values["assumptions"] = assumptions
    values["sources"] = sources
    return values


def build_plan(values: dict, catalog=None, calibration=None, machine=None, fleet_owned=None):
    """Validate values and plan; bad input raises UsageError with one line naming the field.

    Args:
        machine: this machine (``planner.machine.LocalMachine``): its GPUs as owned options, its host figures.
        fleet_owned: a fleet's machines as owned hardware (``--fleet``): planned instead of this machine's GPUs,
            and no option needs more devices than the fleet holds.
    """
    from advisor.cli import UsageError
    from advisor.planner import PlanInputError, PlanRequest, plan
    from advisor.planner.owned import fleet_limits

    try:
        request = PlanRequest.from_mapping(values)
        host = machine.host if machine is not None else None
        if fleet_owned is not None:
            return plan(request, catalog=catalog, calibration=calibration, owned=fleet_owned, host=host,
                        limits=fleet_limits(fleet_owned))
        owned = machine.owned if machine is not None else ()
        return plan(request, catalog=catalog, calibration=calibration, owned=owned, host=host)
    except PlanInputError as exc:
        raise UsageError(f"plan: {exc}") from None
    except TypeError as exc:  # wrong type from a scenario file
        raise UsageError(f"plan: {exc}") from None


def _load_scenarios(paths: list[str]):
    from advisor.commands._scenario import read_scenario

    return [(path, read_scenario(path)) for path in paths]


def run(args) -> int:
    if not 1 <= args.top <= 100_000:
        from advisor.cli import UsageError

        raise UsageError(f"plan: top: must be a whole number between 1 and 100000, got {args.top}")
    named = _load_scenarios(args.scenario) if args.scenario else [(None, None)]
    scenarios = [sc for _path, sc in named]
    from advisor.catalog import load_catalog
    from advisor.report.plan_outputs import prepare_values, write_outputs
    from advisor.store.calibration import load_planner_calibration

    catalog, calibration = load_catalog(), load_planner_calibration()  # read once for every scenario and variation
    machine = _this_machine(args, catalog)
    if machine.simulated and not args.json:
        print("*** SIMULATED HARDWARE: this machine's GPUs come from a fake scenario ***", file=sys.stderr)
    live = None
    if args.fleet and (args.prometheus or args.scrape):  # the live fleet, in place of the imported inventory
        from advisor.commands.fleet_fit import read_live_fleet

        live, args.fleet = read_live_fleet(args), False
    elif args.prometheus or args.scrape:
        from advisor.cli import UsageError

        raise UsageError("--prometheus and --scrape: only with --fleet (where the job fits now)")
    fleet_owned = None
    if args.fleet:
        from advisor.planner.owned import owned_from_fleet
        from advisor.store.fleet import load_fleet

        fleet_owned = owned_from_fleet(load_fleet(), catalog)
    results, values_list = [], []
    for path, sc in named:
        values = prepare_values(args, request_values(args, sc.plan if sc else None, sc.assumptions if sc else None,
                                                     Path(path).name if path else ""), catalog)
        values_list.append(values)
        results.append(build_plan(values, catalog, calibration, machine, fleet_owned))

    for warning in dict.fromkeys(w for r in results for w in r.warnings):
        echo(f"warning: {warning}", file=sys.stderr)
    tornados = ([_tornado(r, catalog, calibration, _plan_kw(machine, fleet_owned)) for r in results]
                if args.sensitivity else [None] * len(results))
    docs = [r.to_json() for r in results]
    if live is not None:
        from advisor.fleet.fit import fleet_now

        for doc in docs:
            doc["fleet_now"] = fleet_now(live, doc)
    for doc, t in zip(docs, tornados):
        if t is not None:
            doc["tornado"] = t.as_dict()
        doc["simulated"] = bool(machine.simulated)  # this machine's GPUs from --fake-gpu: reports say so
    checks = [None] * len(results)
    if args.engine_check:  # the engines' own figures beside each plan's (advisor.models.engines)
        from advisor.commands import engine_check

        checks = [engine_check.check(r.request.model, engine_check.memory_of_plan(r), catalog) for r in results]
        for doc, c in zip(docs, checks):
            doc["engine_check"] = engine_check.json_of(c)
    launch_text = write_outputs(args, docs, values_list, scenarios)
    if launch_text is not None:  # --launch without --launch-file: the spec alone, ready to redirect
        sys.stdout.write(launch_text)
        return 0
    if args.json:
        if args.sensitivity:
            for r, doc in zip(results, docs):
                doc["sensitivity"] = _sensitivity(r, catalog, calibration, _plan_kw(machine, fleet_owned))
        doc = docs[0] if len(docs) == 1 else {"schema": "advisor.plan-set/1", "plans": docs}
        from advisor.report import ReportError
        from advisor.report.plan_json import plan_json_text

        try:  # the whole document first: a figure out of range prints nothing but one line
            text = plan_json_text(doc)
        except ReportError as exc:
            from advisor.cli import UsageError

            raise UsageError(str(exc)) from None
        sys.stdout.write(text)
    else:
        for r, t, c in zip(results, tornados, checks):
            sys.stdout.write(render_table(r, top=None if args.all else args.top, explain=args.explain))
            if args.sensitivity:
                sys.stdout.write(render_tornado(t))
            if args.engine_check:
                from advisor.commands import engine_check

                sys.stdout.write(engine_check.text(c))
        if live is not None:
            from advisor.commands.fleet_fit import fleet_now_text

            for doc in docs:
                sys.stdout.write(fleet_now_text(doc["fleet_now"]))
    return 0


def _tornado(result, catalog, calibration, plan_kw):
    from advisor.cli import UsageError
    from advisor.planner import PlanInputError, tornado

    try:
        return tornado(result.request, catalog, calibration, base=result, **plan_kw)
    except PlanInputError as exc:
        raise UsageError(f"plan: {exc}") from None


def render_tornado(t) -> str:
    """The tornado as a table: each assumption at its low and high value, the chosen option's total at each,
    largest swing first (``planner.sensitivity.tornado``: the plan made again at each value)."""
    if t is None:
        return "Sensitivity: no option fits, nothing to vary.\n\n"
    from advisor.job import JOB_FIELDS

    lines = [f"Sensitivity of {t.option_id} (total {units.fmt_usd(t.base_cost_usd)}): the plan made again with one "
             "input at each end of its range, largest swing first:"]
    lines.append(f"  {'input':<32} {'unit':<28} {'low':>9} {'total at low':>13} {'high':>9} {'total at high':>14} "
                 f"{'swing':>11}")
    for b in t.bars:
        unit = b.unit or (JOB_FIELDS[b.parameter].unit if b.parameter in JOB_FIELDS else "")
        low = "-" if b.low_cost_usd is None else units.fmt_usd(b.low_cost_usd)
        high = "-" if b.high_cost_usd is None else units.fmt_usd(b.high_cost_usd)
        lines.append(f"  {b.parameter:<32} {unit[:28]:<28} {_tornado_value(b.parameter, b.low_value):>9} {low:>13} "
                     f"{_tornado_value(b.parameter, b.high_value):>9} {high:>14} {units.fmt_usd(b.swing_usd):>11}")
    return lines_text(lines) + "\n\n"


def _this_machine(args, catalog):
    """This machine's GPUs and host figures (``--fake-gpu`` honoured), read once per command."""
    from advisor.cli import UsageError
    from advisor.hw.detect import UnknownScenario
    from advisor.planner.machine import local_machine

    try:
        return local_machine(getattr(args, "fake_gpu", None), catalog)
    except UnknownScenario as exc:
        raise UsageError(f"--fake-gpu: {exc}") from None
    except ImportError as exc:  # a hardware library missing (a bare interpreter): plan without this machine
        from advisor.planner.machine import LocalMachine

        echo(f"warning: this machine was not detected ({exc}); its GPUs are left out of the plan", file=sys.stderr)
        return LocalMachine(owned=(), host=None)


def _plan_kw(machine, fleet_owned) -> dict:
    """What ``build_plan`` gave the planner besides the request, for the plans sensitivity makes again."""
    from advisor.planner.owned import fleet_limits

    if fleet_owned is not None:
        return {"owned": fleet_owned, "host": machine.host, "limits": fleet_limits(fleet_owned)}
    return {"owned": machine.owned, "host": machine.host}


def _sensitivity(result, catalog, calibration, plan_kw=None) -> dict:
    from advisor.cli import UsageError
    from advisor.planner import SENSITIVITY_PARAMETERS, PlanInputError, sensitivity

    out = {}
    for name in SENSITIVITY_PARAMETERS:
        if name == "tokens" and result.tokens is None:
            continue
        try:
            out[name] = sensitivity(result.request, name, catalog=catalog, calibration=calibration,
                                    base=result, **(plan_kw or {})).as_dict()
        except PlanInputError as exc:
            raise UsageError(f"plan: {exc}") from None
    return out


# ---------------------------------------------------------------- the readable table
def render_table(result, top: int | None = 12, explain: bool = False) -> str:
    """The plan as text for people: the answer, memory, the cheapest options and one line on the assumptions;
    ``explain`` (``--explain``) adds the options that cannot run, every assumption with its origin and the
    method's sources."""
    r = result.request
    lines = []
    name = cell(result.model_name or "custom model", NAME_MAX_CHARS)
    moe = f", {units.fmt_count(result.active_params)} active" if result.active_params != result.params else ""
    fmt = f"{r.quant} weights" if r.quant else r.precision
    if r.workload == "inference":
        sw = result._serving_json().get("software") or {}
        if sw.get("weight_format"):
            fmt = f"{sw['weight_format']} weights under {sw.get('name') or sw.get('id')}"
            if sw.get("assumed"):
                fmt += f" ({sw['assumed']})"
    lines.append(f"Plan: {name} ({units.fmt_count(result.params)} parameters{moe}), {r.workload}, {fmt}"
                 + ("" if r.workload == "inference" else f", {r.optimizer}"))
    if result.software is not None:
        lines.append("Software: " + result.software.summary())
    if result.tokens is not None:
        lines.append(f"Budget: {units.fmt_count(result.tokens)} tokens ({result.budget_origin})")
    else:
        lines.append(f"Budget: {r.hours:g} hours ({result.budget_origin})")
    if r.workload == "inference":
        lens = result.lengths
        prompt = f"prompt {lens.prompt:,} and output {lens.output:,}" if lens else f"output {r.output_tokens:,}"
        lines.append(f"FLOPs: {result.flops_per_token:.3e} per generated token; {prompt} tokens per request "
                     f"(context {result.context:,}), batch {r.batch}")
    else:
        moe = result.active_params != result.params
        lines.append(f"FLOPs: {units.fmt_flops(result.flops_total)} (model FLOPs, "
                     f"{result.flops_per_token / result.active_params:.0f} x {'active ' if moe else ''}params x tokens; "
                     f"attention adds about {result.attention_flops_per_token:.2e} per token)")
    lines.extend(headline(result))
    lay = result.parallelism
    lines.append("")
    lines.append(f"Memory per device on {lay.devices} device(s) (tp {lay.tp}, pp {lay.pp}, dp {lay.dp}, "
                 f"ZeRO {lay.zero}; {units.memory_unit_note()}):")
    md = result.memory.as_dict()
    for part in ("weights", "gradients", "optimizer", "activations", "kv_cache", "overhead"):
        if md[part]:
            lines.append(f"  {part:<12} {units.mem_value(md[part]):10.2f} {units.memory_unit()}")
    lines.append(f"  {'total':<12} {units.mem_value(md['total']):10.2f} {units.memory_unit()}" + (
        f"  (80 %: {units.mem_value(result.memory_interval[0]):.1f}-{units.mem_value(result.memory_interval[1]):.1f} "
        f"{units.memory_unit()})" if result.memory_interval else ""))
    if result.memory.host_offload_bytes:
        lines.append(f"  {'host RAM':<12} {units.mem_value(result.memory.host_offload_bytes):10.2f} "
                     f"{units.memory_unit()} (offloaded or paged, not on the device)")
    best = result.best()
    bl = best.parallelism if best is not None else None
    if bl is not None and (bl.devices, bl.tp, bl.pp, bl.zero) != (lay.devices, lay.tp, lay.pp, lay.zero):
        lines.append(f"  On the cheapest option ({best.devices} x {best.accelerator_name}, tp {bl.tp}, pp {bl.pp}, "
                     f"ZeRO {bl.zero}): "
                     f"{units.fmt_mem(best.memory_per_device_bytes)} per device of {units.fmt_mem(best.capacity_bytes)}")
    lines.append("")
    ranked = result.ranked
    fitting = [o for o in ranked if o.fits]
    shown = ranked if top is None else ranked[:top]
    prices = result.prices_text()
    lines.append(f"Options by total job cost ({len(fitting)} of {len(ranked)} fit; {prices}; catalog {result.catalog_date}):")
    lines.append(_stack_line(result, ranked))
    inference = r.workload == "inference"
    mine = {o.accelerator for o in result.options if o.kind == "owned"}
    rate_head = "$/M tokens" if inference else "tokens/s"
    width = min(60, max([len(o.id) for o in shown] + [6]))
    header = (f"  {'option':<{width}} {'dev':>4} {'fits':>4} {'time':>10} {'time, 80 %':>21} {'$/dev-h':>8} {'total':>11} "
              f"{'total, 80 %':>21} {rate_head:>10} {'comm':>5}  cost parts")
    lines.append(header)
    marks, note_lines = option_notes(shown)
    for o in shown:
        rate = units.fmt_usd(o.usd_per_million_tokens) if inference else f"{o.tokens_per_s:,.0f}"
        per_h = "-" if o.usd_per_device_hour is None else f"{o.usd_per_device_hour:.2f}"
        parts = ", ".join(f"{k} {units.fmt_usd(v)}" for k, v in o.cost_breakdown_usd.items() if v)
        if not o.stack_ok:
            parts = f"[{o.stack_reason}] {parts}"
        if o.price_stale:
            parts += f"  [price of {price_date_label(o.price_date)}, older than a year]"
        if o.kind in ("home", "onprem") and o.accelerator in mine:
            parts += "  [buying again the cards you own]"
        if o.note:
            parts += f"  {marks[o.note]}"
        lines.append(f"  {_clip(o.id, width):<{width}} {o.devices:>4} {'yes' if o.fits else 'NO':>4} {units.fmt_hours(o.hours):>10} "
                     f"{_range(o.hours_interval, units.fmt_hours):>21} {per_h:>8} {units.fmt_usd(o.cost_usd):>11} "
                     f"{_range(o.cost_usd_interval, units.fmt_usd):>21} {rate:>10} {_comm(o):>5}  {parts}")
    if top is not None and len(ranked) > top:
        lines.append(f"  ... {len(ranked) - top} more (--all to list them, --json for scripts)")
    lines.extend(note_lines)
    best = result.best()
    if best is not None and best.time_split_s:
        split = best.time_split_s
        total = sum(split.values()) or 1.0
        lines.append(f"  Time of {best.id}: " + ", ".join(f"{k} {units.fmt_hours(v / 3600)} ({v / total:.0%})"
                                                          for k, v in split.items())
                     + " (communication model, docs/method.md); 'comm' above is communication and bubble")
    lines.extend(reach_lines(result, explain))
    if explain:
        lines.extend(_infeasible_lines(result, top))
    elif result.infeasible:
        lines.append(f"  ({len(result.infeasible)} more option(s) cannot run as laid out: --explain lists them)")
    lines.extend(fit_advice_lines(result))
    lines.extend(inference_lines(result))
    lines.extend(_dearer_hour_note(result))
    lines.extend(_ownership_lines(result))
    lines.append("")
    described = result.describe_assumptions()
    if not explain:
        changed = [k for k, a in described.items() if "default_value" in a]
        lines.append(f"Assumptions: {len(described)}, " + (f"changed: {', '.join(changed)}" if changed else
                                                           "all at their defaults")
                     + " (--explain lists each with its origin and the method's sources; --set NAME=VALUE changes one)")
        lines.append("")
        return lines_text(lines) + "\n"
    lines.append("Assumptions (value, unit, origin; change with --set NAME=VALUE or a scenario's [assumptions]):")
    for key, a in described.items():
        default = f"; default {a['default_value']}: {a['default_origin']}" if "default_value" in a else ""
        lines.append(f"  {key} = {a['value']} {a['unit']}  [{a['origin']}{default}]")
    best = result.best()
    if best:
        lines.append(f"Utilisation of the cheapest option: {best.mfu:.2g} ({best.mfu_origin})")
    lines.append("")
    return lines_text(lines) + "\n"  # a model's name comes from its file, an accelerator's from a user catalog


def _stack_line(result, ranked) -> str:
    """Which software stacks the ranking assumes, and how many options were put after for needing another."""
    from advisor.catalog.stacks import STACK_LABELS

    names = ", ".join(STACK_LABELS.get(s, s) for s in result.stacks)
    given = "--stack" if result.request.stack else "the default for this job; --stack to change"
    off = sum(1 for o in ranked if not o.stack_ok)
    tail = (f"; {off} option(s) on other stacks are ranked after those that run it, marked [needs ...]"
            if off else "")
    return f"  Software stack: {names} ({given}){tail}"


def headline(result) -> list[str]:
    """The headline: this machine first (fits or not, time, cost, against the cheapest rent)."""
    from advisor.planner.summary import headline as sentence
    from advisor.planner.summary import learned_lines

    return ["", sentence(result), *learned_lines(result)]


def fit_advice_lines(result) -> list[str]:
    """What to change so the job fits this machine (or the hardware asked for), cheapest in time first: only
    changes that fit, each with the time and cost it makes; when none fits, one line with the closest."""
    from advisor.planner.summary import cost_text, fit_advice_closest, fit_advice_rows, lost_text

    rows = fit_advice_rows(result)
    target = result.fit_target()
    where = f" {target.id} ({units.fmt_mem(target.capacity_bytes)} per device)" if target else ""
    if not rows:
        closest = fit_advice_closest(result)
        if closest is None:
            return []
        return ["", f"No change the advisor tries makes the job fit{where}; the closest, {closest['flags']} "
                    f"({closest['why']}), still needs {closest['memory']} per device."]
    lines = ["", f"What to change to fit{where}, cheapest in time first:"]
    width = min(60, max(len(r["flags"]) for r in rows))
    for r in rows:
        hours = "-" if r["hours"] is None else units.fmt_hours(r["hours"])
        lost = lost_text(r["hours_lost"])
        cost = cost_text(r["cost_usd"], r["cost_added_usd"]) or "-"
        lines.append(f"  {r['flags']:<{width}} {r['memory']:>10} {hours + lost:>20} {cost:>20}  {r['why']}")
    return lines


def reach_lines(result, explain: bool = False) -> list[str]:
    """Where the training job lies against the calibrated runs (``planner.summary.reach_sentence``); ``explain``
    adds how its range was sized."""
    from advisor.planner.summary import reach_method, reach_sentence

    text = reach_sentence(result)
    if not text:
        return []
    method = reach_method(result) if explain else None
    return [f"  {text}"] + ([f"    ({method})"] if method else [])


def inference_lines(result) -> list[str]:
    from advisor.planner.summary import inference_sentence

    text = inference_sentence(result)
    return ["", text] if text else []



def _clauses(note: str) -> list[str]:
    """A note's clauses: its parts between ``"; "`` outside brackets (a bracket's own ``"; "`` stays in its clause)."""
    out, depth, start = [], 0, 0
    for i, c in enumerate(note):
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif depth == 0 and note.startswith("; ", i):
            out.append(note[start:i])
            start = i + 2
    out.append(note[start:])
    return [c for c in out if c]


def option_notes(options) -> tuple[dict[str, str], list[str]]:
    """``({note: its mark}, footnote lines)`` for the options shown. One note is marked ``(*)``; several are numbered
    ``(*1)``, ``(*2)``, ... in the order of the table, the clauses every one of them shares said once above them, so
    each numbered line says only what sets its options apart."""
    notes = list(dict.fromkeys(o.note for o in options if o.note))
    count = {n: sum(o.note == n for o in options) for n in notes}
    if len(notes) <= 1:
        return {n: "(*)" for n in notes}, [f"  (*) {n} ({count[n]} option(s) above)" for n in notes]
    parts = {n: _clauses(n) for n in notes}
    common = [c for c in parts[notes[0]] if all(c in parts[n] for n in notes[1:])]
    marks = {n: f"(*{i})" for i, n in enumerate(notes, 1)}
    lines = [f"  (*) on every marked option: {'; '.join(common)}"] if common else []
    for n in notes:
        own = [c for c in parts[n] if c not in common]
        lines.append(f"  {marks[n]} {'; '.join(own) or 'nothing more'} ({count[n]} option(s) above)")
    return marks, lines

def _clip(text: str, width: int) -> str:
    """Shorten in the middle so the end (``:spot``, the instance) stays visible."""
    return text if len(text) <= width else text[: width - 13] + "~" + text[-12:]


def _range(pair, fmt) -> str:
    """``low-high`` of an 80 % interval."""
    if not pair:
        return "-"
    low, high = fmt(pair[0]), fmt(pair[1])
    unit = low.rpartition(" ")[2]
    if " " in low and high.endswith(" " + unit):  # one unit: "23.6-34.4 days"
        low = low.rpartition(" ")[0]
    return f"{low}-{high}"


def _comm(o) -> str:
    """Share of an option's time spent communicating or idle in the pipeline bubble."""
    if not o.time_split_s:
        return "-"
    total = sum(o.time_split_s.values())
    return f"{(total - o.time_split_s['compute']) / total:.0%}" if total else "-"


def _infeasible_lines(result, top: int | None) -> list[str]:
    """The options that cannot run as laid out, apart from the ranking, with their reasons."""
    apart = result.infeasible
    if not apart:
        return []
    lines = ["", f"Not ranked: {len(apart)} option(s) cannot run as laid out:"]
    shown = apart if top is None else apart[:top]
    for o in shown:
        lines.append(f"  {o.id} ({o.devices} x {o.accelerator_name}, {units.fmt_usd(o.cost_usd)}): {o.infeasible_reason}")
    if len(shown) < len(apart):
        lines.append(f"  ... {len(apart) - len(shown)} more (--all to list them)")
    return lines


def _dearer_hour_note(result) -> list[str]:
    """Explain, with numbers, a case where a dearer hour gives the cheaper job."""
    cloud = [o for o in result.ranked if o.fits and o.kind == "cloud" and o.usd_per_device_hour]
    if len(cloud) < 2:
        return []
    cheapest_job = cloud[0]
    cheapest_hour = min(cloud, key=lambda o: o.usd_per_device_hour)
    if cheapest_hour.id == cheapest_job.id or cheapest_job.usd_per_device_hour <= cheapest_hour.usd_per_device_hour:
        return []
    return ["", f"A dearer hour can be the cheaper job: {cheapest_job.id} costs "
                f"${cheapest_job.usd_per_device_hour:.2f}/device-hour against ${cheapest_hour.usd_per_device_hour:.2f} for "
                f"{cheapest_hour.id}, but finishes in {units.fmt_hours(cheapest_job.hours)} instead of "
                f"{units.fmt_hours(cheapest_hour.hours)}: {units.fmt_usd(cheapest_job.cost_usd)} against "
                f"{units.fmt_usd(cheapest_hour.cost_usd)} for the whole job."]


def _tornado_value(parameter: str, value: float) -> str:
    """A tornado end as people read it: ``25M`` tokens, ``0.221`` of peak, ``2.00`` years."""
    return units.fmt_count(value) if parameter == "tokens" else units.sig3(value)


def _ownership_lines(result) -> list[str]:
    """How busy the owned, home and on-prem hardware is behind its figure, and whether buying pays back."""
    from advisor.planner.summary import ownership_lines

    return ownership_lines(result)
