"""Benchmark: the host-bandwidth probe's triad against a compiled OpenMP STREAM triad on the same machine.

Compiles the reference triad (``gcc -O3 -march=native -fopenmp``), runs it before and after the probe,
and reports the probe's best triad as a fraction of the reference's best, and how long the probe took.
Targets, every round (each printed with PASS or FAIL; exit status 1 when any is missed): at least 0.95 of the
compiled triad, in under 30 s (full) or 5 s (``--quick``). Each round is a fresh process, as a user's probe is
(the first round is not warmed by an earlier one). Also prints the naive tutorial method (``z = x + y`` once,
two streams counted, allocation timed) so the difference is visible, and the load average.

    python benchmarks/bench_probe_host.py PATH/TO/triad.c
    python benchmarks/bench_probe_host.py PATH/TO/triad.c --rounds 3 --json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from verdict import Target, exit_code

RATIO = Target("probe triad / compiled OpenMP triad", ">=", 0.95)
SECONDS = {False: Target("full probe took", "<", 30.0, "s"), True: Target("quick probe took", "<", 5.0, "s")}


def compile_triad(source: Path, out_dir: Path) -> Path:
    """Build the reference triad; raises CalledProcessError when gcc or OpenMP is missing."""
    exe = out_dir / "triad"
    subprocess.run(["gcc", "-O3", "-march=native", "-fopenmp", str(source), "-o", str(exe)], check=True)
    return exe


def reference_gbps(exe: Path) -> float:
    return float(subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout)


def naive_gbps(n: int = 80_000_000) -> float:
    """The tutorials' method: one timed ``z = x + y`` with allocation, two streams counted (for contrast)."""
    import torch

    x, y = torch.rand(n, dtype=torch.float64), torch.rand(n, dtype=torch.float64)
    for _ in range(2):
        _ = x + y
    t = time.perf_counter()
    z = x + y
    t = time.perf_counter() - t
    del x, y, z
    return 2 * 8 * n / t / 1e9


PROBE_CHILD = r"""
import json, sys, time
from advisor.probes import drive, open_probe
t0 = time.perf_counter()
result = drive(open_probe("host-bandwidth", quick=sys.argv[1] == "quick"))
print(json.dumps({"wall_s": time.perf_counter() - t0, "result": result.to_dict()}))
"""


def probe_round(quick: bool) -> tuple[dict, float]:
    """The probe in a fresh process, as a user runs it (torch imported by the probe): (result document, seconds
    from the call to its result)."""
    out = subprocess.run([sys.executable, "-c", PROBE_CHILD, "quick" if quick else "full"], capture_output=True,
                         text=True, check=True, timeout=600)
    doc = json.loads(out.stdout.strip().splitlines()[-1])
    return doc["result"], doc["wall_s"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("triad_c", type=Path,
                        help="path of the reference triad.c (the OpenMP STREAM-style triad the acceptance checks compile)")
    parser.add_argument("--rounds", type=int, default=1, help="probe runs (each against fresh reference runs)")
    parser.add_argument("--quick", action="store_true", help="run the probe in quick mode")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if not args.triad_c.is_file():
        parser.error(f"no such file: {args.triad_c}")
    if shutil.which("gcc") is None:
        parser.error("gcc is needed to build the reference triad")

    seconds = SECONDS[args.quick]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        exe = compile_triad(args.triad_c, Path(tmp))
        for i in range(args.rounds):
            # both sides in the same run, back to back: the compiled triad just before and just after the probe
            # (the better of the two: the probe is judged against what the machine gave it then), and the load
            # average at both ends, since a shared machine's memory is as busy as its neighbours make it
            load = os.getloadavg()[0]
            before = max(reference_gbps(exe) for _ in range(2))
            doc, probe_s = probe_round(args.quick)
            after = reference_gbps(exe)
            ref = max(before, after)
            load_end = os.getloadavg()[0]
            if doc.get("skipped"):
                print(f"probe skipped: {doc['skipped']}", file=sys.stderr)
                return 1
            got = doc["results"]["triad"]
            rows.append({"round": i + 1, "probe_triad_best_gbps": got["best"], "probe_triad_median_gbps": got["median"],
                         "reference_triad_gbps": ref, "reference_before_gbps": before, "reference_after_gbps": after,
                         "ratio": got["best"] / ref, "probe_s": probe_s,
                         "threads": doc["params"]["threads"], "array_bytes": doc["params"]["array_bytes"],
                         "thread_counts": doc["params"].get("thread_counts"),
                         "headline_threads": doc["params"].get("triad_threads"),
                         "load_average_1min": round(load, 2), "load_average_1min_end": round(load_end, 2)})
    naive = naive_gbps()
    met = [RATIO.met(r["ratio"]) for r in rows] + [seconds.met(r["probe_s"]) for r in rows]
    if args.json:
        print(json.dumps({"rounds": rows, "naive_gbps": naive, "target_ratio": RATIO.limit,
                          "target_s": seconds.limit, "pass": all(met)}, indent=2))
    else:
        for r in rows:
            print(f"round {r['round']} (load average {r['load_average_1min']:.2f} -> {r['load_average_1min_end']:.2f}): "
                  f"probe triad best {r['probe_triad_best_gbps']:.1f} GB/s (median {r['probe_triad_median_gbps']:.1f}), "
                  f"compiled OpenMP triad {r['reference_triad_gbps']:.1f} GB/s (before {r['reference_before_gbps']:.1f}, "
                  f"after {r['reference_after_gbps']:.1f}); the probe's best trial on {r['headline_threads']} of "
                  f"{r['threads']} threads")
            print("  " + RATIO.line(r["ratio"], label=f"round {r['round']}"))
            print("  " + seconds.line(r["probe_s"], 1, label=f"round {r['round']}"))
        print(f"naive tutorial method (z = x + y once, 2 streams, allocation timed): {naive:.1f} GB/s")
    return exit_code(met)


if __name__ == "__main__":
    sys.exit(main())
