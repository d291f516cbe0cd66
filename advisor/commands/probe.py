"""``advisor probe NAME|all [--device cpu|cuda:N] [--quick] [--json] [--calibrate]``: measure this machine.

Also ``advisor probe --history [NAME]`` (past runs), ``--compare A B`` (two runs side by side) and
``--reset-calibration`` (the planner returns to its priors). torch is imported only when a probe runs.
"""

from __future__ import annotations

import json
import os
import sys

from advisor.cli import UsageError
from advisor.commands._json import print_json
from advisor.commands._terminal import echo
from advisor.untrusted import NAME_MAX_CHARS, plain_text

HISTORY_SCHEMA = "advisor.probe-history/1"
SET_SCHEMA = "advisor.probe-set/1"


def register(subparsers) -> None:
    """Add the ``probe`` subcommand."""
    from advisor.probes import PROBES

    names = ", ".join(PROBES)
    p = subparsers.add_parser(
        "probe", help="measure this machine (bandwidth, matmul, transfer, all-reduce, a training step)",
        description=f"Run a probe ({names}) or all of them; results are kept in the probe history. "
                    "With --calibrate, the training-step MFU and the decode bandwidth efficiency become the "
                    "planner's values for this machine.")
    p.add_argument("name", nargs="?", metavar="NAME|all", help=f"probe to run: {names}, or all")
    p.add_argument("--device", default="cpu", help="cpu or cuda:N (default cpu)")
    p.add_argument("--quick", action="store_true", help="smaller sizes, fewer repetitions (seconds)")
    p.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    p.add_argument("--path", metavar="DIR", default=None,
                   help="disk probe: measure the disk holding DIR (where your data is; default the cache folder)")
    p.add_argument("--precision", default=None, help="train-step precision: fp32, bf16 or fp16")
    p.add_argument("--calibrate", action="store_true",
                   help="save the measured MFU / bandwidth efficiency as the planner's calibration")
    p.add_argument("--yes", action="store_true", help="measure a GPU even when other processes use it")
    p.add_argument("--no-save", action="store_true", help="do not store the results in the probe history")
    p.add_argument("--history", action="store_true", help="list past runs (of NAME when given)")
    p.add_argument("--limit", type=int, default=20, help="runs listed by --history (default 20)")
    p.add_argument("--compare", nargs=2, type=int, metavar=("A", "B"), help="compare two runs of the history")
    p.add_argument("--reset-calibration", action="store_true",
                   help="remove the saved calibration: the planner returns to its priors")
    p.set_defaults(run=run)


def run(args) -> int:
    """Dispatch to the probe runner, the history listing or the calibration reset."""
    from advisor.probes import PROBES
    from advisor.probes._common import parse_device

    if args.reset_calibration:
        return _reset_calibration(args)
    if args.history:
        if args.name is not None and args.name not in PROBES:
            raise UsageError(f"unknown probe {args.name!r} (known: {', '.join(PROBES)})")
        if not 1 <= args.limit <= 1_000_000:
            raise UsageError(f"--limit must be a whole number from 1 to 1000000, not {args.limit}")
        return _history(args)
    if args.compare:
        return _compare(args)
    if args.name is None:
        raise UsageError(f"probe: name a probe ({', '.join(PROBES)}) or all, or use --history")
    if args.name != "all" and args.name not in PROBES:
        raise UsageError(f"unknown probe {args.name!r} (known: {', '.join(PROBES)}, all)")
    try:
        parse_device(args.device)
    except ValueError as exc:
        raise UsageError(f"--device: {exc}") from None
    if args.path is not None:
        from pathlib import Path

        if args.name not in ("disk", "all"):
            raise UsageError("--path is for the disk probe: advisor probe disk --path DIR")
        if not Path(args.path).is_dir():
            raise UsageError(f"--path: {args.path} is not a folder")
        if not os.access(args.path, os.W_OK):
            raise UsageError(f"--path: {args.path} is not writable (the probe writes a scratch file there)")
    if args.precision is not None and args.precision not in ("fp32", "bf16", "fp16"):
        raise UsageError(f"--precision must be fp32, bf16 or fp16, not {args.precision!r}")
    return _run_probes(args)


def _run_probes(args) -> int:
    from advisor.probes import PROBES
    from advisor.probes.session import calibration_from, record
    from advisor.store.calibration import load_calibration, save_calibration

    names = list(PROBES) if args.name == "all" else [args.name]
    # under torchrun every rank runs this command: only rank 0 reports and stores
    follower = os.environ.get("RANK", "0") != "0" and int(os.environ.get("WORLD_SIZE", "1") or 1) > 1
    bar = _Bar(sys.stderr) if sys.stderr.isatty() and not follower else None
    results = []
    store_errors: list[str] = []
    for i, name in enumerate(names):
        device = "cpu" if (args.name == "all" and PROBES[name].devices == ("cpu",)) else args.device
        params = _params_for(name, args, results)
        gen = record(name, device=device, quick=args.quick, store=not (args.no_save or follower), **params)
        while True:
            try:
                event = next(gen)
            except StopIteration as stop:
                recorded = stop.value
                break
            if bar is not None:
                bar.show((i + event.fraction) / len(names), f"{name}: {event.message}")
        results.append(recorded.result)
        if recorded.store_error:
            store_errors.append(recorded.store_error)
        if bar is not None:
            bar.clear()
        if not args.json and not follower:
            _print_result(recorded.result)
    if follower:
        return 0
    offer = calibration_from(results, previous=load_calibration())
    if args.calibrate:
        if offer is None:
            print("no calibration measured: run train-step (MFU) or device-bandwidth on a GPU (eta_mem)",
                  file=sys.stderr)
        else:
            save_calibration(offer)
            echo(f"calibration saved: mfu={_fmt(offer.mfu)} eta_mem={_fmt(offer.eta_mem)} for {offer.belongs_to} "
                  f"({offer.source}, {offer.measured_at})", file=sys.stderr)
    elif offer is not None and not args.json:
        print("these results can calibrate the planner: rerun with --calibrate to use them", file=sys.stderr)
    if args.json:
        docs = [r.to_dict() for r in results]
        doc = docs[0] if args.name != "all" else {"schema": SET_SCHEMA, "device": args.device, "quick": args.quick,
                                                  "probes": docs}
        print_json(doc, indent=2)
    if store_errors:  # measured, but the history could not take it: say so once, keep the file
        echo(f"error: {store_errors[0]}", file=sys.stderr)
        return 2
    return 0


def _params_for(name: str, args, previous) -> dict:
    params: dict = {}
    if name == "disk" and getattr(args, "path", None):
        params["directory"] = str(args.path)
    if name == "capacity" and args.yes:
        params["allow_busy"] = True
    if name == "train-step":
        if args.precision:
            params["precision"] = args.precision
        # on a CPU, MFU is relative to the fp32 matmul rate measured in the same run
        mm = next((r for r in previous if r.probe == "matmul" and not r.skipped and "fp32" in r.results), None)
        if mm is not None and mm.device == args.device == "cpu":
            params["peak_tflops"] = mm.results["fp32"].best
            params["peak_origin"] = "measured fp32 matmul on this CPU (matmul probe, same run)"
    return params


def _fmt(x) -> str:
    return "-" if x is None else f"{x:.3f}"


def _num(x: float) -> str:
    if x == 0:
        return "0"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    if abs(x) >= 1:
        return f"{x:.2f}"
    return f"{x:.4g}"


def _print_result(r) -> None:
    from advisor.probes.labels import run_mode

    out = sys.stdout
    if r.skipped:
        echo(f"{r.probe} on {r.device}: skipped: {r.skipped}", file=out)
        return
    echo(f"{r.probe} on {r.device}, {run_mode(r.params)} run ({r.duration_s:.1f} s)", file=out)
    for kernel, k in r.results.items():
        frac = f"  {100 * k.fraction_of_peak:5.1f} % of peak" if k.fraction_of_peak is not None else ""
        echo(f"  {kernel:14s} best {_num(k.best):>10s}  median {_num(k.median):>10s} {k.unit}{frac}", file=out)
    if r.peak:
        echo(f"  peak: {json.dumps(dict(r.peak))}", file=out)
    unsupported = (r.details or {}).get("unsupported") or {}
    for prec, why in unsupported.items():
        echo(f"  {prec}: not measured: {why}", file=out)
    for note in r.notes:
        echo(f"  note: {note}", file=out)


def _history(args) -> int:
    from advisor.store.probe_history import HistoryError, ProbeHistory

    try:
        with ProbeHistory() as h:
            entries = h.list(probe=args.name, limit=args.limit)
    except HistoryError as exc:
        raise UsageError(str(exc)) from None
    if args.json:
        print_json({"schema": HISTORY_SCHEMA, "runs": [e.to_dict() for e in entries]}, indent=2)
        return 0
    if not entries:
        echo("no probe runs recorded yet")
        return 0
    echo(f"{'id':>5}  {'started (UTC)':25s} {'probe':17s} {'device':8s} {'run':5s} {'machine':16s} headline")
    for e in entries:
        if e.skipped:
            head = f"skipped: {e.skipped}"
        else:
            best = e.best()
            kernel = next(iter(best), None)
            head = f"{kernel} {_num(best[kernel][0])} {best[kernel][1]}" if kernel else "-"
        echo(f"{e.id:>5}  {e.started_at:25s} {e.probe:17s} {e.device:8s} {e.mode:5s} "
              f"{str(e.fingerprint.get('id', ''))[:16]:16s} {head}")
    return 0


def _compare(args) -> int:
    from advisor.store.probe_history import HistoryError, ProbeHistory

    a, b = args.compare
    try:
        with ProbeHistory() as h:
            rows = h.compare(a, b)
    except KeyError as exc:
        raise UsageError(f"--compare: {exc.args[0]}") from None
    except HistoryError as exc:
        raise UsageError(str(exc)) from None
    if args.json:
        print_json({"schema": "advisor.probe-compare/1", "a": a, "b": b, "kernels": rows}, indent=2)
        return 0
    modes = next(iter(rows.values()), {})
    if modes and modes["mode_a"] != modes["mode_b"]:
        print(f"note: run {a} is a {modes['mode_a']} run and run {b} a {modes['mode_b']} one: not measured alike")
    print(f"{'kernel':14s} {'run ' + str(a):>12s} {'run ' + str(b):>12s}  unit      b/a")
    for kernel, row in rows.items():
        ratio = "-" if row["ratio"] is None else f"{row['ratio']:.3f}"
        print(f"{kernel:14s} {_num(row['a']):>12s} {_num(row['b']):>12s}  {row['unit']:8s} {ratio}")
    return 0


def _reset_calibration(args) -> int:
    from advisor.store.calibration import clear_calibration, load_calibration

    had = load_calibration()
    clear_calibration()
    if args.json:
        print_json({"schema": "advisor.calibration-reset/1", "removed": had is not None})
    else:
        print("calibration removed: the planner uses its priors" if had else "no calibration was saved")
    return 0


class _Bar:
    """A progress bar redrawn in place on a terminal (rich), on stderr so stdout stays the results."""

    def __init__(self, stream) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn

        self._progress = Progress(BarColumn(bar_width=20), TaskProgressColumn(), TextColumn("{task.description}", markup=False),
                                  console=Console(file=stream), transient=True, auto_refresh=False)
        self._task = None

    def show(self, fraction: float, message: str) -> None:
        fraction = min(max(fraction, 0.0), 1.0)
        if self._task is None:
            self._progress.start()
            self._task = self._progress.add_task(plain_text(message, NAME_MAX_CHARS), total=1.0)
        self._progress.update(self._task, completed=fraction, description=plain_text(message, NAME_MAX_CHARS), refresh=True)

    def clear(self) -> None:
        """Remove the bar (the next ``show`` draws a new one)."""
        if self._task is not None:
            self._progress.stop()
            self._progress.remove_task(self._task)
            self._task = None
