"""``advisor monitor [--interval S] [--duration S] [--csv FILE] [--fake-gpu S]``: watch the machine live."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path


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
                              description="Sample the host and every GPU on a fixed schedule. Without --csv, "
                                          "prints one line per sample; with --csv, records to FILE.")
    p.add_argument("--interval", type=_seconds, default=1.0, metavar="S", help="seconds between samples, 0.1 to 10")
    p.add_argument("--duration", type=_seconds, default=None, metavar="S", help="stop after S seconds (default: Ctrl-C)")
    p.add_argument("--csv", metavar="FILE", default=None, help="record samples to FILE (header row, one row per sample)")
    p.add_argument("--no-laptop-safe", action="store_true",
                   help="poll GPUs even when in runtime suspend (wakes a laptop's discrete GPU)")
    add_fake_gpu(p)
    p.set_defaults(run=run)


def format_line(sample, simulated: bool) -> str:
    """One live text line: time, CPU, RAM, then per GPU util, memory, power, temperature."""
    h = sample.host

    def num(v, fmt, unit=""):
        return "n/a" if v is None else f"{v:{fmt}}{unit}"

    parts = [f"{sample.time_s:8.2f}s", f"cpu {num(h.cpu_util_pct, '5.1f', '%')}",
             f"mem {num(None if h.mem_used_bytes is None else h.mem_used_bytes / 2**30, '.1f')}"
             f"/{num(None if h.mem_total_bytes is None else h.mem_total_bytes / 2**30, '.1f', ' GiB')}"]
    for g in sample.gpus:
        if not g.available:
            parts.append(f"gpu{g.index} {g.state}")
            continue
        used = None if g.mem_used_bytes is None else g.mem_used_bytes / 2**30
        parts.append(f"gpu{g.index} {num(g.util_pct, '3.0f', '%')} {num(used, '.1f', ' GiB')} "
                     f"{num(g.power_w, '.0f', ' W')} {num(g.temp_c, '.0f', ' C')}")
    return " | ".join(parts) + ("  [simulated]" if simulated else "")


def run(args: argparse.Namespace) -> int:
    from advisor.cli import UsageError
    from advisor.hw import select_backend, select_host_backend
    from advisor.hw.detect import UnknownScenario
    from advisor.monitor import CsvRecorder, Sampler, check_interval

    try:
        interval = check_interval(args.interval)
    except ValueError as exc:
        raise UsageError(f"--interval: {exc}") from None
    if args.csv is not None:
        target = Path(args.csv)
        if target.is_dir() or not target.parent.is_dir():
            raise UsageError(f"--csv: cannot write {args.csv!r} (not a file in an existing directory)")
    try:
        gpu = select_backend(args.fake_gpu)
    except UnknownScenario as exc:
        raise UsageError(f"--fake-gpu: {exc}") from None

    recorder = None
    try:
        sampler = Sampler(gpu, select_host_backend(), interval_s=interval, laptop_safe=not args.no_laptop_safe)
        status = gpu.status()
        banner = f"GPU backend [{status.name}]: {status.status}"
        if gpu.simulated:
            banner = "SIMULATED HARDWARE - " + banner
        if args.csv is not None:
            try:
                recorder = CsvRecorder(args.csv, sampler.gpu_count)
            except OSError as exc:
                raise UsageError(f"--csv: cannot write {args.csv!r}: {exc.strerror or exc}") from None
            sampler.add_listener(recorder)
            print(banner, file=sys.stderr, flush=True)
        else:
            print(banner, flush=True)
            simulated = gpu.simulated

            def _print_line(sample) -> None:
                print(format_line(sample, simulated), flush=True)

            sampler.add_listener(_print_line)
        try:
            sampler.run(duration_s=args.duration)  # in this thread: Ctrl-C ends it
        except KeyboardInterrupt:
            pass
        if recorder is not None:
            note = " (simulated hardware)" if gpu.simulated else ""
            print(f"recorded {recorder.rows} samples of {sampler.gpu_count} GPU(s) to {args.csv}{note}")
        if sampler.last_error:
            print(f"warning: {sampler.last_error}", file=sys.stderr)
        return 0
    finally:
        if recorder is not None:
            recorder.close()
        gpu.close()
