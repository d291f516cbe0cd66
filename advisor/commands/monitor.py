"""``advisor monitor [--interval S] [--duration S] [--csv FILE] [--once --json] [--fake-gpu S]``: watch the machine.

On a terminal it shows a live table per GPU and per process (rich); piped, one line per sample; with
``--csv`` it records; with ``--once --json`` it prints one ``advisor.monitor/1`` document and exits.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from advisor.commands._json import print_json
from advisor.commands._terminal import echo
from advisor.commands.monitor_run import run_sampler, usd_per_kwh
from advisor.units import mem_value, memory_unit

ONCE_SETTLE_S = 0.25


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text!r}")
    return value


def register(subparsers) -> None:
    from advisor.cli import add_fake_gpu

    p = subparsers.add_parser("monitor", help="watch CPU, memory and GPUs live, or record them to CSV",
                              description="Sample the host and every GPU on a fixed schedule. On a terminal, a "
                                          "live table per GPU and per process; piped, one line per sample; with "
                                          "--csv, records to FILE; with --once --json, one advisor.monitor/1 "
                                          "document.")
    p.add_argument("--interval", type=_seconds, default=1.0, metavar="S", help="seconds between samples, 0.1 to 10")
    p.add_argument("--duration", type=_seconds, default=None, metavar="S", help="stop after S seconds (default: Ctrl-C)")
    p.add_argument("--csv", metavar="FILE", default=None, help="record samples to FILE (header row, one row per sample)")
    p.add_argument("--once", action="store_true", help="take one sample (with its processes) and exit")
    p.add_argument("--json", action="store_true", help="with --once: print one advisor.monitor/1 JSON document")
    p.add_argument("--no-laptop-safe", action="store_true",
                   help="poll GPUs even when in runtime suspend (wakes a laptop's discrete GPU)")
    p.add_argument("--usd-per-kwh", type=_price, default=None, metavar="USD",
                   help="electricity price for each process's cost (default: the cost assumptions' home price)")
    from advisor.commands.monitor_job import register_flags

    register_flags(p)
    from advisor.commands.monitor_serve import register_flags as register_serve_flags

    register_serve_flags(p)
    add_fake_gpu(p)
    p.set_defaults(run=run)


def _price(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value) or not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"must be between 0 and 100 USD per kWh, got {text!r}")
    return value


def format_line(sample, simulated: bool) -> str:
    """One live text line: time, CPU, RAM, then per GPU util, memory, power, temperature."""
    h = sample.host

    def num(v, fmt, unit=""):
        return "n/a" if v is None else f"{v:{fmt}}{unit}"

    parts = [f"{sample.time_s:8.2f}s", f"cpu {num(h.cpu_util_pct, '5.1f', '%')}",
             f"mem {num(None if h.mem_used_bytes is None else mem_value(h.mem_used_bytes), '.1f')}"
             f"/{num(None if h.mem_total_bytes is None else mem_value(h.mem_total_bytes), '.1f', ' ' + memory_unit())}"]
    for g in sample.gpus:
        if not g.available:
            parts.append(f"gpu{g.index} {g.state}")
            continue
        used = None if g.mem_used_bytes is None else mem_value(g.mem_used_bytes)
        parts.append(f"gpu{g.index} {num(g.util_pct, '3.0f', '%')} {num(used, '.1f', ' ' + memory_unit())} "
                     f"{num(g.power_w, '.0f', ' W')} {num(g.temp_c, '.0f', ' C')}")
    return " | ".join(parts) + ("  [simulated]" if simulated else "")


def run(args: argparse.Namespace) -> int:
    from advisor.cli import UsageError
    from advisor.hw import select_backend, select_host_backend
    from advisor.hw.detect import UnknownScenario
    from advisor.monitor import Sampler, check_interval

    try:
        interval = check_interval(args.interval)
    except ValueError as exc:
        raise UsageError(f"--interval: {exc}") from None
    if args.json and not args.once:
        raise UsageError("--json: only with --once (one advisor.monitor/1 document); use --csv to record")
    if args.once and args.csv is not None:
        raise UsageError("--once: not with --csv (a recording is a series of samples)")
    if args.pid is None and (args.save or args.save_run or args.tokens or args.trainer_state):
        raise UsageError("--save, --save-run, --tokens and --trainer-state: only with --pid (one job followed)")
    if args.pid is not None and (args.once or args.csv):
        raise UsageError("--pid: not with --once or --csv (it follows one job to its end)")
    if args.serve_metrics is not None and (args.once or args.csv is not None or args.pid is not None):
        raise UsageError("--serve-metrics: not with --once, --csv or --pid (it serves until stopped)")
    if args.serve_metrics is None and (args.job is not None or args.export_cmdline or args.plan is not None):
        raise UsageError("--job, --plan and --export-cmdline: only with --serve-metrics")
    if args.csv is not None:
        target = Path(args.csv)
        if not target.is_symlink() and (target.is_dir() or not target.parent.is_dir()):
            raise UsageError(f"--csv: cannot write {args.csv!r} (not a file in an existing directory)")
    try:
        gpu = select_backend(args.fake_gpu)
    except UnknownScenario as exc:
        raise UsageError(f"--fake-gpu: {exc}") from None
    try:
        sampler = Sampler(gpu, select_host_backend(gpu), interval_s=interval, laptop_safe=not args.no_laptop_safe)
        status = gpu.status()
        banner = f"GPU backend [{status.name}]: {status.status}"
        if gpu.simulated:
            banner = "SIMULATED HARDWARE - " + banner
        from advisor.monitor.books import BookKeeper

        if args.serve_metrics is not None:
            from advisor.commands.monitor_serve import serve_metrics

            return serve_metrics(sampler, gpu, banner, args, usd_per_kwh(args))
        if args.pid is not None:
            from advisor.commands.monitor_job import follow

            return follow(sampler, gpu, banner, args)
        if args.once:
            return _once(sampler, gpu, status, args.json, BookKeeper(sampler, usd_per_kwh(args)), banner)
        if args.csv is not None:
            return _record(sampler, gpu, banner, args)
        if sys.stdout.isatty():
            return _live(sampler, gpu, banner, args.duration, usd_per_kwh(args))
        echo(banner, flush=True)
        simulated = gpu.simulated

        def _print_line(sample) -> None:
            print(format_line(sample, simulated), flush=True)

        def _print_end(books) -> None:
            echo(f"ended: {books.summary()}", flush=True)  # a command line: inert

        sampler.add_listener(BookKeeper(sampler, usd_per_kwh(args), on_end=_print_end))
        sampler.add_listener(_print_line)
        run_sampler(sampler, args.duration)
        if sampler.last_error:
            echo(f"warning: {sampler.last_error}", file=sys.stderr)
        return 0
    finally:
        gpu.close()


def _once(sampler, gpu, status, as_json: bool, keeper, banner: str) -> int:
    import time

    from advisor.monitor.snapshot import monitor_document, read_infos

    infos = read_infos(gpu)
    sampler.add_listener(keeper)
    sampler.tick()  # the books' first reading: each process's books run from here
    time.sleep(ONCE_SETTLE_S)  # CPU load is a rate: measured over this span since the sampler primed it
    sample = sampler.tick()
    sampler.stop()
    doc = monitor_document(infos, sample, sampler.processes(), backend=status.name, status=status.status,
                           simulated=gpu.simulated, books=keeper.current())
    if as_json:
        print_json(doc, indent=2)
    elif not sys.stdout.isatty():  # piped: a plain tab-separated layout, whole names, for scripts
        from advisor.commands.monitor_view import plain_tables

        sys.stdout.write(plain_tables(sample, infos, sampler.processes(), keeper.current(), simulated=gpu.simulated))
    else:
        from rich.console import Console

        from advisor.commands.monitor_view import live_view

        console = Console()
        console.print(live_view(sample, infos, sampler.processes(), banner, books=keeper.current(),
                                width=console.width))
    return 0


def _record(sampler, gpu, banner: str, args) -> int:
    from advisor.cli import UsageError
    from advisor.monitor.recorder import CsvRecorder, CsvTargetError

    failed: list[str] = []

    def _on_error(reason: str) -> None:
        failed.append(reason)
        sampler.stop()

    try:
        recorder = CsvRecorder(args.csv, sampler.gpu_count, on_error=_on_error, simulated=gpu.simulated)
    except CsvTargetError as exc:
        raise UsageError(f"--csv: {exc}") from None
    from advisor.monitor.books import BookKeeper, write_processes_csv

    keeper = BookKeeper(sampler, usd_per_kwh(args),
                        on_end=lambda b: echo(f"ended: {b.summary()}", file=sys.stderr, flush=True))
    try:
        sampler.add_listener(keeper)
        sampler.add_listener(recorder)
        echo(banner, file=sys.stderr, flush=True)
        run_sampler(sampler, args.duration)
    finally:
        recorder.close()
    books = keeper.finish()
    target = Path(args.csv)
    books_csv = target.with_name(f"{target.stem}.processes.csv")
    if not failed and books:
        try:
            write_processes_csv(books_csv, books)
            print(f"process books ({len(books)} processes) in {books_csv}", file=sys.stderr)
        except OSError as exc:
            echo(f"warning: process books not written to {books_csv}: {exc.strerror or exc}", file=sys.stderr)
    if failed:
        raise UsageError(f"--csv: {failed[0]}")
    note = " (simulated hardware)" if gpu.simulated else ""
    print(f"recorded {recorder.rows} samples of {sampler.gpu_count} GPU(s) to {args.csv}{note}")
    if sampler.last_error:
        echo(f"warning: {sampler.last_error}", file=sys.stderr)
    return 0


def _live(sampler, gpu, banner: str, duration, price: float) -> int:
    """The refreshing terminal table (rich ``Live``), redrawn after every sample and after each key
    (``s``/``S`` sort the processes, ``p`` pauses the view, ``q`` quits; ``monitor_keys``); a line when a
    process ends, with its books."""
    import threading

    from rich.console import Console
    from rich.live import Live

    from advisor.commands._terminal import term_text
    from advisor.commands.monitor_keys import keys
    from advisor.commands.monitor_view import ViewState, live_view
    from advisor.monitor.books import BookKeeper
    from advisor.monitor.snapshot import read_infos

    infos = read_infos(gpu)
    console = Console()
    state = ViewState()
    latest: list = []
    lock = threading.Lock()
    with Live(console=console, auto_refresh=False, screen=False, transient=False) as live:
        keeper = BookKeeper(sampler, price, on_end=lambda b: live.console.print(term_text(f"ended: {b.summary()}", max_chars=None)))

        def _draw(sample=None) -> None:
            with lock:
                if sample is not None:
                    if state.paused:
                        return
                    latest[:] = [sample]
                if latest:
                    live.update(live_view(latest[0], infos, sampler.processes(), banner, state, keeper.current(),
                                          width=console.width, height=console.height), refresh=True)

        def _on_key(ch: str) -> None:
            state.key(ch)
            if state.quit:
                sampler.stop()
            else:
                _draw()

        sampler.add_listener(keeper)
        sampler.add_listener(_draw)
        with keys(_on_key):
            run_sampler(sampler, duration)
    if sampler.last_error:
        console.print(term_text(f"warning: {sampler.last_error}", style="yellow", max_chars=None))
    return 0
