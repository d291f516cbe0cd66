"""Benchmark: the monitor engine's own cost at 10 Hz with the simulated 8xh100-sxm machine.

Runs the real sampler thread (psutil host readings + 8 fake GPUs + history + drain queue, like the app)
and reports, beyond a start-up period, the CPU time it used as a percent of one core and the resident
memory over time (it must stay flat: the history is preallocated). Target: under 5 % of one core.

    python benchmarks/bench_monitor.py                  # 60 s
    python benchmarks/bench_monitor.py --duration 10    # a quick run
    python benchmarks/bench_monitor.py --duration 1800  # the 30-minute soak
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import psutil  # the benchmark measures the process; the advisor itself reads psutil only in advisor.hw.host

from advisor.hw.fake import FakeGpuBackend
from advisor.hw.host import PsutilHostBackend
from advisor.monitor import Sampler

TARGET_PCT = 5.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=60.0, help="measured seconds (after warm-up)")
    parser.add_argument("--interval", type=float, default=0.1, help="sampling interval, s (10 Hz)")
    parser.add_argument("--scenario", default="8xh100-sxm")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds excluded as start-up")
    parser.add_argument("--drain-hz", type=float, default=30.0, help="a GUI-like consumer draining at this rate")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)

    proc = psutil.Process(os.getpid())
    gpu = FakeGpuBackend(args.scenario)
    sampler = Sampler(gpu, PsutilHostBackend(), interval_s=args.interval)
    drained = 0
    sampler.start()
    try:
        time.sleep(args.warmup)
        sampler.drain()
        cpu0, wall0 = time.process_time(), time.monotonic()
        ticks0 = len(sampler.history) if len(sampler.history) < sampler.history.capacity else None
        seq0 = sampler.latest().seq
        rss = [(0.0, proc.memory_info().rss)]
        next_rss = 5.0
        while (now := time.monotonic() - wall0) < args.duration:
            time.sleep(1.0 / args.drain_hz)
            drained += len(sampler.drain())  # the consumer side the GUI runs, on this (main) thread
            sampler.history.window("gpu0_util_pct", 60)
            if now >= next_rss:
                rss.append((round(now, 1), proc.memory_info().rss))
                next_rss += max(5.0, args.duration / 20)
        cpu1, wall1 = time.process_time(), time.monotonic()
        seq1 = sampler.latest().seq
    finally:
        sampler.stop()
        gpu.close()
    rss.append((round(wall1 - wall0, 1), proc.memory_info().rss))
    cpu_pct = 100.0 * (cpu1 - cpu0) / (wall1 - wall0)
    samples = seq1 - seq0
    half = [r for t, r in rss if t >= (wall1 - wall0) / 2]
    result = {
        "scenario": args.scenario, "interval_s": args.interval, "measured_s": round(wall1 - wall0, 2),
        "samples": samples, "achieved_hz": round(samples / (wall1 - wall0), 2), "drained": drained,
        "cpu_pct_of_one_core": round(cpu_pct, 2), "target_pct": TARGET_PCT,
        "rss_start_mib": round(rss[0][1] / 2**20, 2), "rss_end_mib": round(rss[-1][1] / 2**20, 2),
        "rss_growth_second_half_kib": round((max(half) - min(half)) / 1024, 1) if half else None,
        "rss_mib_over_time": [(t, round(r / 2**20, 2)) for t, r in rss],
        "history_rows": len(sampler.history), "history_capacity": sampler.history.capacity,
        "ticks_at_start": ticks0,
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for key, value in result.items():
            print(f"{key:30} {value}")
    verdict = cpu_pct < TARGET_PCT
    print(f"{'PASS' if verdict else 'FAIL'}: {cpu_pct:.2f} % of one core at {1 / args.interval:g} Hz "
          f"with {args.scenario} (target < {TARGET_PCT} %)", file=sys.stderr)
    return 0 if verdict else 1


if __name__ == "__main__":
    raise SystemExit(main())
