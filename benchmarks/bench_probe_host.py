"""Benchmark: the host-bandwidth probe's triad against a compiled OpenMP STREAM triad on the same machine.

Compiles the reference triad (``gcc -O3 -march=native -fopenmp``), runs it before and after the probe,
and reports the probe's best triad as a fraction of the reference's best. Target: at least 0.90.
Also prints the naive tutorial method (``z = x + y`` once, two streams counted, allocation timed)
so the difference is visible.

    python benchmarks/bench_probe_host.py PATH/TO/triad.c
    python benchmarks/bench_probe_host.py PATH/TO/triad.c --rounds 3 --json
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET = 0.90


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

    from advisor.probes import drive, open_probe

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        exe = compile_triad(args.triad_c, Path(tmp))
        for i in range(args.rounds):
            ref = max(reference_gbps(exe) for _ in range(2))
            t0 = time.perf_counter()
            result = drive(open_probe("host-bandwidth", quick=args.quick))
            probe_s = time.perf_counter() - t0
            ref = max(ref, reference_gbps(exe))
            if result.skipped:
                print(f"probe skipped: {result.skipped}", file=sys.stderr)
                return 1
            got = result.results["triad"]
            rows.append({"round": i + 1, "probe_triad_best_gbps": got.best, "probe_triad_median_gbps": got.median,
                         "reference_triad_gbps": ref, "ratio": got.best / ref, "probe_s": probe_s,
                         "threads": result.params["threads"], "array_bytes": result.params["array_bytes"]})
    naive = naive_gbps()
    worst = min(r["ratio"] for r in rows)
    if args.json:
        print(json.dumps({"rounds": rows, "naive_gbps": naive, "target": TARGET, "pass": worst >= TARGET}, indent=2))
    else:
        for r in rows:
            print(f"round {r['round']}: probe triad best {r['probe_triad_best_gbps']:.1f} GB/s "
                  f"(median {r['probe_triad_median_gbps']:.1f}), compiled OpenMP triad {r['reference_triad_gbps']:.1f}"
                  f" GB/s, ratio {r['ratio']:.2f} (target >= {TARGET:.2f}), probe took {r['probe_s']:.1f} s")
        print(f"naive tutorial method (z = x + y once, 2 streams, allocation timed): {naive:.1f} GB/s")
    return 0 if worst >= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
