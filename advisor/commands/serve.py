"""``advisor serve``: size a deployment against a latency target, per user, on the GPUs you own and on every offer."""

from __future__ import annotations

import sys
from pathlib import Path

_GROUPS = {"model": "model", "job": "weights", "inference": "runtime and cache", "serve": "load and targets",
           "hardware": "hardware and cost"}


def register(sub) -> None:
    from advisor.commands.plan import _integer, add_job_flags
    from advisor.job.serve import SERVE_FIELDS
    from advisor.report.serve_launch import SERVE_KINDS

    p = sub.add_parser("serve", help="size a serving deployment: users or requests/s against p95 latency targets",
                       description="How many users a model serves within a latency target, what each of them "
                                   "sees (time to first token, tokens/s), the replicas a load needs and what a "
                                   "million requests cost: on the GPUs you own first, then home, on-prem and every "
                                   "cloud offer. Flags override the scenario file's [serve] table.")
    p.add_argument("scenario", nargs="*", metavar="SCENARIO_FILE",
                   help="TOML scenario file(s) with a [serve] table (and [assumptions])")
    add_job_flags(p, SERVE_FIELDS, _GROUPS)
    o = p.add_argument_group("output")
    o.add_argument("--json", action="store_true", help="one JSON document on stdout (schema advisor.serve/1)")
    o.add_argument("--top", type=_integer, default=12, help="options shown in the table (1 to 100000; default 12)")
    o.add_argument("--all", action="store_true", help="show every option in the table")
    o.add_argument("--launch", choices=SERVE_KINDS, default=None,
                   help="print the launch line of an option (vllm, llama-server, sglang) or a SkyPilot service YAML")
    o.add_argument("--bench", choices=("vllm", "sglang", "guidellm", "llama-server"), default=None,
                   help="print a command that measures the plan on your box (its lengths, a load ladder around "
                        "the predicted knee, the target as goodput); import its results with 'advisor runs import'")
    o.add_argument("--report", metavar="FILE", default=None,
                   help="also write a report: the answer, the throughput-against-latency chart and the options "
                        "(.md, .html or .pdf by the suffix)")
    o.add_argument("--option", metavar="ID", default=None,
                   help="the option to launch (default: your GPUs when they meet the target, else the cheapest)")
    from advisor.commands import engine_check

    engine_check.add_flag(o)
    from advisor.cli import add_fake_gpu

    add_fake_gpu(p)
    p.set_defaults(run=run)


def _values(args, table: dict | None, assumptions: dict | None, name: str) -> dict:
    """Flags over the scenario's [serve] and [assumptions] tables (flags win), with where each came from."""
    from advisor.cli import UsageError
    from advisor.commands.plan import assumption_flags
    from advisor.job.serve import SERVE_FIELDS, with_default_load

    values = dict(table or {})
    sources = {k: f"scenario {name} [serve]" for k in values}
    assumed = dict(assumptions or {})
    for key in assumed:
        sources[key] = f"scenario {name} [assumptions]"
    for field_name, meta in SERVE_FIELDS.items():
        value = getattr(args, field_name, None) if meta.flag else None
        if value is not None:
            values[field_name] = list(value) if meta.kind == "ids" else value
            sources[field_name] = f"command line ({meta.flag})"
    assumption_flags(args, assumed, sources)
    with_default_load(values, sources)  # no load given: the default serving job's (advisor.job.serve)
    if args.launch in ("vllm", "sglang", "llama-server"):  # the server launched is the runtime sized
        from advisor.report.serve_launch import RUNTIME_OF

        want = RUNTIME_OF[args.launch]
        if values.get("runtime") not in (None, want):
            raise UsageError(f"serve: --launch {args.launch} starts {want}, but the job is sized for "
                             f"--runtime {values['runtime']}: give --runtime {want} or leave --runtime out")
        values["runtime"] = want
    values["assumptions"] = assumed
    values["sources"] = sources
    return values


def _scenario_tables(path: str) -> tuple[dict, dict]:
    """The [serve] and [assumptions] tables of a scenario file (one line, exit 2, when it cannot be read)."""
    from advisor.cli import UsageError
    from advisor.commands._scenario import read_scenario

    sc = read_scenario(path)
    table = sc.extra.get("serve")
    if not isinstance(table, dict):
        raise UsageError(f"{Path(path).name}: serve: no [serve] table (the load and targets of a serving job)")
    return table, dict(sc.assumptions)


def build_serve(values: dict, catalog=None, machine=None):
    """Validate and size a serving job; bad input raises UsageError with one line naming the field."""
    from advisor.cli import UsageError
    from advisor.job import JobInputError
    from advisor.job.serve import ServeJob
    from advisor.planner import PlanInputError
    from advisor.planner.serve import serve_plan

    try:
        job = ServeJob.from_mapping(values)
        from advisor.store.calibration import load_planner_calibration

        return serve_plan(job, catalog, owned=tuple(machine.owned) if machine is not None else (),
                          calibration=load_planner_calibration())  # what advisor plan takes
    except (JobInputError, PlanInputError) as exc:
        raise UsageError(f"serve: {exc}") from None
    except TypeError as exc:
        raise UsageError(f"serve: {exc}") from None


def run(args) -> int:
    from advisor.cli import UsageError

    if not 1 <= args.top <= 100_000:
        raise UsageError(f"serve: top: must be a whole number between 1 and 100000, got {args.top}")
    from advisor.catalog import load_catalog
    from advisor.commands.plan import _this_machine
    from advisor.planner.serve_advice import changes_of
    from advisor.report.serve_json import serve_document, serve_json_text
    from advisor.report.serve_text import render_serve_table

    catalog = load_catalog()
    machine = _this_machine(args, catalog)
    if machine.simulated and not args.json and not args.launch and not args.bench:
        print("*** SIMULATED HARDWARE: this machine's GPUs come from a fake scenario ***", file=sys.stderr)
    named = [(p, *_scenario_tables(p)) for p in args.scenario] or [(None, None, None)]
    if args.report and len(named) > 1:
        raise UsageError("serve: --report writes one scenario; give one scenario file")
    docs, texts = [], []
    for path, table, assumptions in named:
        values = _values(args, table, assumptions, Path(path).name if path else "")
        result = build_serve(values, catalog, machine)
        changes = changes_of(result)
        docs.append(serve_document(result, changes))
        texts.append(render_serve_table(result, top=None if args.all else args.top, changes=changes))
        if args.engine_check:  # the engines' own figures beside the plan's (advisor.models.engines)
            from advisor.commands import engine_check

            c = engine_check.check(values.get("model"), engine_check.memory_of_serve(result), catalog)
            docs[-1]["engine_check"] = engine_check.json_of(c)
            texts[-1] += engine_check.text(c)
        if args.report:
            from advisor.planner.serve import knee_curves
            from advisor.report import ReportError
            from advisor.report.serve_report import write_serve_report

            try:
                written = write_serve_report(result, changes, knee_curves(result), args.report,
                                             top=None if args.all else args.top)
            except ReportError as exc:
                raise UsageError(f"serve: {exc}") from None
            print(f"report written: {written}", file=sys.stderr)
    if args.bench or args.launch:  # a command that measures the plan, or the server's launch line
        from advisor.report.launch_text import LaunchError
        from advisor.report.serve_bench import render_serve_bench
        from advisor.report.serve_launch import render_serve_launch

        render, kind = (render_serve_bench, args.bench) if args.bench else (render_serve_launch, args.launch)
        try:
            sys.stdout.write("".join(render(kind, d, args.option) for d in docs))
        except LaunchError as exc:
            raise UsageError(str(exc)) from None
        return 0
    if args.json:
        doc = docs[0] if len(docs) == 1 else {"schema": "advisor.serve-set/1", "plans": docs}
        try:
            sys.stdout.write(serve_json_text(doc))
        except ValueError as exc:
            raise UsageError(f"serve: a figure is out of range ({exc}); give smaller inputs") from None
        return 0
    sys.stdout.write("\n".join(texts))
    return 0
