"""``advisor runs``: the user's own runs, what they measured, and plan against actual.

    advisor runs import FILE... [--accelerator ID] [--devices N] [--model SPEC] [--seq-len N] [--tokens N]
                                [--workload W] [--precision P] [--software NAME] [--other-machine]
    advisor runs [--json]          every record: measured, predicted at import and now, error factor, range held
    advisor runs --forget ID       delete one record
    advisor runs --reset           delete every record

A bad file is one line naming it and the reason, exit 2, and nothing of that command is stored (every file is
read and checked before any is written).
"""

from __future__ import annotations

import argparse

from advisor.commands._json import print_json
from advisor.commands._terminal import cell, echo
from advisor.commands.monitor_job import token_count
from advisor.untrusted import plain_text

SCHEMA = "advisor.runs/1"


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if not 1 <= v <= 10**7:
        raise argparse.ArgumentTypeError(f"must be between 1 and 10000000, got {text!r}")
    return v


def run_id(text: str) -> int:
    """A run id as ``advisor runs`` lists it: a whole number from 1 to SQLite's largest row id."""
    from advisor.store.runs import MAX_RUN_ID

    if not text.isascii() or not text.strip().isdigit() or len(text.strip()) > 19:
        raise argparse.ArgumentTypeError(f"not a run id: {plain_text(text, 40)!r}")
    v = int(text)
    if not 1 <= v <= MAX_RUN_ID:
        raise argparse.ArgumentTypeError(f"not a run id: {plain_text(text, 40)!r}")
    return v


def register(subparsers) -> None:
    from advisor.cli import add_fake_gpu

    p = subparsers.add_parser("runs", help="import your own runs, plan from them, and see plan against actual",
                              description="List the runs you imported with what the advisor predicts for each "
                                          "(at import and now), the error factor and whether the range held.")
    p.add_argument("--json", action="store_true", help="print one advisor.runs/1 JSON document")
    p.add_argument("--forget", type=run_id, metavar="ID", default=None, help="delete the run with this id")
    p.add_argument("--reset", action="store_true", help="delete every imported run")
    add_fake_gpu(p)
    p.set_defaults(run=run, runs_action=None)
    sub = p.add_subparsers(dest="runs_action", parser_class=type(p), metavar="ACTION")
    imp = sub.add_parser("import", help="import run files (Trainer state, llama-bench, vLLM or SGLang bench, "
                                        "GuideLLM, vLLM start-up log, advisor job)",
                         description="Import what your jobs measured. Flags fill what a file does not say.")
    imp.add_argument("files", nargs="+", metavar="FILE")
    imp.add_argument("--accelerator", metavar="ID", help="catalog id of the accelerator that ran it (cpu: the CPU)")
    imp.add_argument("--devices", type=_positive_int, metavar="N", help="how many accelerators it used")
    imp.add_argument("--model", metavar="SPEC", help="the model (a preset, config.json, hf:ORG/NAME, .gguf)")
    imp.add_argument("--workload", choices=("pretrain", "finetune", "lora", "qlora", "inference"))
    imp.add_argument("--precision", choices=("fp32", "tf32", "bf16", "fp16", "fp8"))
    imp.add_argument("--software", metavar="NAME", help="the framework or runtime, where the file does not say")
    imp.add_argument("--seq-len", type=_positive_int, metavar="N", help="training sequence length")
    imp.add_argument("--tokens", type=token_count, metavar="N", help="tokens the job processed")
    imp.add_argument("--other-machine", action="store_true",
                     help="the run was made on another machine (it counts less in plans)")
    imp.add_argument("--json", action="store_true", help="print the imported records as advisor.runs/1")
    add_fake_gpu(imp)
    imp.set_defaults(run=run)


def _context(args):
    """``(catalog, machine)``: the catalog and this machine (its host figures plan the CPU)."""
    from advisor.catalog import load_catalog
    from advisor.commands.plan import _this_machine

    catalog = load_catalog()
    return catalog, _this_machine(args, catalog)


def run(args: argparse.Namespace) -> int:
    from advisor.cli import UsageError
    from advisor.store.runs import RunStore, RunStoreError

    try:
        if args.runs_action == "import":
            return _import(args)
        if args.reset or args.forget is not None:
            if args.reset and args.forget is not None:
                raise UsageError("runs: --forget and --reset: give one")
            with RunStore() as store:
                if args.reset:
                    print(f"forgot {store.clear()} run(s)")
                    return 0
                if not store.forget(args.forget):
                    raise UsageError(f"runs --forget: no run with id {args.forget} (see 'advisor runs')")
                print(f"forgot run {args.forget}")
                return 0
        return _list(args)
    except RunStoreError as exc:
        raise UsageError(str(exc)) from None


def _import(args) -> int:
    from advisor.cli import UsageError
    from advisor.probes._device_info import cpu_model
    from advisor.runs import ImportOptions, RunImportError, import_file
    from advisor.runs.predict import predict
    from advisor.store.calibration import load_planner_calibration, with_runs
    from advisor.store.runs import RunStore, this_machine_id

    catalog, machine = _context(args)
    gpus = tuple(g.info.name for g in machine.profile.gpus) if getattr(machine, "profile", None) else ()
    if args.accelerator and args.accelerator != "cpu" and args.accelerator not in catalog.accelerators:
        raise UsageError(f"runs import: --accelerator: unknown accelerator {args.accelerator!r} "
                         "(advisor catalog list accelerators)")
    opts = ImportOptions(accelerator=args.accelerator, devices=args.devices, model=args.model, workload=args.workload,
                         precision=args.precision, software=args.software, seq_len=args.seq_len, tokens=args.tokens,
                         other_machine=args.other_machine, this_machine_id=this_machine_id(), this_cpu=cpu_model(),
                         this_gpus=gpus)
    records = []
    for f in args.files:  # every file is read and checked before anything is stored
        try:
            records.extend(import_file(f, opts))
        except RunImportError as exc:
            raise UsageError(f"runs import: {exc}") from None
    # each file is predicted from what was known before it: the stored runs and the others imported with it
    calibration = with_runs(load_planner_calibration(), records, this_machine_id())
    preds = [predict(rec, catalog=catalog, calibration=calibration, host=machine.host) for rec in records]
    with RunStore() as store:  # one transaction: every record or none
        ids = store.add_all([(rec, None if p is None else p.to_dict()) for rec, p in zip(records, preds)])
    docs = [(run_id, added, rec) for (run_id, added), rec in zip(ids, records)]
    if args.json:
        return _list(args, only={rid for rid, _, _ in docs}, catalog=catalog, machine=machine)
    for rid, added, rec in docs:
        what = "imported" if added else "already imported (same content)"
        echo(f"run {rid}: {what}: {rec.kind} {cell(rec.model or '(model unknown)')} on "
             f"{cell(rec.accelerator_id or rec.accelerator_name or 'an unknown accelerator')} x{rec.devices}, "
             f"{rec.machine_note}" + "".join(f"; {n}" for n in rec.notes))
    return 0


def _list(args, only=None, catalog=None, machine=None) -> int:
    from advisor.runs.listing import load_summary, run_entries
    from advisor.store.runs import RunStore

    with RunStore(create=False) as store:
        has_any = bool(store.list())
    rows = []
    if has_any:
        if catalog is None:
            catalog, machine = _context(args)
        rows = [r for r in run_entries(catalog, machine.host) if only is None or r["id"] in only]
    if args.json:
        print_json({"schema": SCHEMA, "runs": rows}, indent=2)
        return 0
    if not rows:
        from advisor.runs import READS

        print(f"no runs imported yet: advisor runs import FILE ({READS})")
        return 0
    print(f"{'id':>4}  {'date':10}  {'kind':12}  {'figure':15}  {'model':24}  {'accelerator':14}  {'measured':>14}  "
          f"{'at import':>10}  {'now':>10}  {'error':>6}  range  machine")
    for r in rows:
        print(_line(r))
    for r in rows:
        if r["teaches"] is False and ((r.get("load") or {}).get("shape") or {}).get("requests_per_s") is not None:
            print(f"run {r['id']} teaches nothing: no efficiency up to the hardware's limits gives its time per "
                  f"output token at its rate (the rate sets its output tokens/s) on the plan of its load")
        elif r["teaches"] is False:
            print(f"run {r['id']} teaches nothing: no efficiency up to the hardware's limits gives its "
                  f"{r['compared']['measured']:,.0f} tokens/s on the plan of its job (check its accelerator and "
                  f"model: --accelerator, --model)")
    for r in rows:
        if "engine_reading" in r:
            print(_reading_line(r))
    for r in rows:
        if "load" in r:
            print(f"run {r['id']} {load_summary(r['load'])}")
    print("error = predicted now / measured (tokens/s; an engine's reading: its KV cache tokens or concurrency; above "
          "1: the plan was optimistic); range: whether the measured figure fell in the plan's 80 % range; machine "
          "'other': counts less in plans; a serving run at its load is planned as a published run of that shape")
    return 0


def _reading_line(r: dict) -> str:
    """An engine's start-up reading beside the advisor's figures for the same cache memory."""
    e = r["engine_reading"]
    if e["kv_cache_tokens"]["advisor"] is None:
        return (f"run {r['id']} (vLLM start-up log): nothing to set beside it (the log gives no KV cache memory, or "
                "its model is not resolved here: --model)")
    parts = []
    for key, what, spec in (("kv_cache_tokens", "KV cache", ",.0f"), ("max_concurrency", "concurrency", ".2f")):
        theirs, ours = e[key]["engine"], e[key]["advisor"]
        if theirs:
            unit = " tokens" if key == "kv_cache_tokens" else "x"
            at = f" at {e['max_model_len']:,} tokens" if key == "max_concurrency" else ""
            parts.append(f"{what}{at} {format(theirs, spec)}{unit}, advisor {format(ours, spec)}{unit} "
                         f"({(ours / theirs - 1) * 100:+.1f} %)")
    return f"run {r['id']} (vLLM start-up log): " + "; ".join(parts)


def _fmt(v, spec=".0f") -> str:
    """A figure for a fixed-width cell: ``spec``, or 3 significant digits when that would be longer than 10."""
    if v is None:
        return "-"
    text = format(v, spec)
    return text if len(text) <= 10 else format(v, ".3g")


def _line(r: dict) -> str:
    """One row of the runs table; every text from a run file goes through ``_terminal.cell``."""
    pi, pn = r["predicted_at_import"] or {}, r["predicted_now"] or {}
    held = {True: "held", False: "missed", None: "-"}[r["range_held"]]
    where = "this" if r["machine"]["this_machine"] else "other"
    model = cell(r["model"] or "-", 24)
    acc = f"{cell(r['accelerator']['id'] or '?', 10)} x{r['accelerator']['devices']}"
    spec = ".2f" if r["compared"]["figure"] == "max_concurrency" else ".0f"  # requests at once, not tokens/s
    return (f"{r['id']:>4}  {cell(r['recorded_at'][:10], 10):10}  {r['kind']:12}  {r['compared']['label']:15}  "
            f"{model:24}  {acc:14}  {_fmt(r['compared']['measured'], spec):>14}  "
            f"{_fmt(pi.get('tokens_per_s'), spec):>10}  {_fmt(pn.get('tokens_per_s'), spec):>10}  "
            f"{_fmt(r['error_factor'], '.2f'):>6}  {held:5}  {where}")
