"""Benchmark: the host-bandwidth probe's triad against a compiled OpenMP STREAM triad on the same machine.

Compiles the reference triad (``gcc -O3 -march=native -fopenmp``) and, in every round, runs it just before and just
after the probe, and reports the probe's triad as a fraction of the reference's, and how long the probe took.
Targets, every round (each printed with PASS or FAIL; exit status 1 when any is missed): at least 0.95 of the
compiled triad, in under 30 s (full) or 5 s (``--quick``). Each round is a fresh process, as a user's probe is
(the first round is not warmed by an earlier one). Also prints the naive tutorial method (``z = x + y`` once,
two streams counted, allocation timed) so the difference is visible, and the load average.

Why the ratio is taken this way. On a shared virtual machine the compiled triad alone swings by a factor of two
within a minute (29-40 GB/s, and 11-36 GB/s while neighbours stream: the memory and the cores are the host's,
not ours), so a probe run set against one reference run taken at another moment measures the neighbours, not the
probe. The two sides are therefore made to measure the same thing the same way:

- the same kernel and bytes: ``a = b + 3*c`` over float64 arrays, 24 bytes an element counted on both sides
  (2 reads, 1 write). Neither side counts the write-allocate read of ``a`` (4 streams of traffic) and neither
  avoids it: gcc emits ordinary stores for triad.c, as ATen does for ``torch.add(..., out=a)``;
- the same arrays: the reference runs at the probe's element count (``--reference-elements`` to change it), so
  both stream the same bytes, far beyond the last-level cache, each filled in parallel before it is timed;
- the same statistic: the reference's pass times are read from its own clock (``omp_get_wtime``, wrapped at
  compile time by a forced include that records each reading; the kernel is triad.c's, unchanged, and the wrapper's
  fastest pass reproduces the figure triad.c prints, checked every run) and put through the probe's own
  ``rate_result``: the best of per-trial medians, trials of five consecutive passes. Set against the best single
  pass that triad.c prints, a probe's best trial median reads low by the spread of the machine within a trial;
  the single fastest pass and call are compared as well (``fastest``), and the ratio to the printed figure too;
- the same window and the same number of chances: reference passes are timed just before and just after each
  probe run (``--reference-passes`` each side), and the reference's figure is taken over as many trials as the
  probe timed, those nearest the probe (half before, half after), so both sides' best trials are drawn from the
  same minute of the machine and neither is the best of more tries (on a busy machine a probe whose start was slow
  times two trials, and the best of sixteen reference trials would beat the best of its two by luck alone; the
  ratio to all the reference's trials is printed beside it). Each side's spread (slowest, median and fastest call)
  and the reference's best before and after the probe are printed, so a round where the machine changed under the
  probe shows as such.

    python benchmarks/bench_probe_host.py PATH/TO/triad.c
    python benchmarks/bench_probe_host.py PATH/TO/triad.c --rounds 3 --json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from verdict import Target, exit_code

from advisor.probes._common import GB, TRIAL_REPS, rate_result
from advisor.probes.host_bandwidth import STREAMS, default_elements

RATIO = Target("probe triad / compiled OpenMP triad (best trial medians, same window)", ">=", 0.95)
SECONDS = {False: Target("full probe took", "<", 30.0, "s"), True: Target("quick probe took", "<", 5.0, "s")}
ITEMSIZE = 8  # float64, as triad.c
TRIAD_BYTES = STREAMS["triad"] * ITEMSIZE  # bytes counted per element, on both sides
#: reference passes before and after each probe run: together as many as the probe times triad calls on a quiet
#: machine (quick: trials until its deadline, up to 100 calls; full: four triad rounds of about 25 calls of 1.9 GB in
#: 1.5 s each), so the reference has as many trials near the probe as the probe has (nearest_trials)
REFERENCE_PASSES = {True: 50, False: 50}

# Forced include for triad.c: omp_get_wtime() wrapped so each reading is kept, the pass times (pairs of readings)
# written to stderr at exit. The kernel and its loop are triad.c's own.
CLOCK_H = r"""
#include <omp.h>
#include <stdio.h>
static double bench_marks_[1 << 16];
static int bench_count_;
static double bench_wtime_(void) {
    double t = omp_get_wtime();
    if (bench_count_ < (1 << 16)) bench_marks_[bench_count_++] = t;
    return t;
}
__attribute__((destructor)) static void bench_dump_(void) {
    for (int i = 0; i + 1 < bench_count_; i += 2) fprintf(stderr, "pass %.9f\n", bench_marks_[i + 1] - bench_marks_[i]);
}
#define omp_get_wtime bench_wtime_
"""


def compile_triad(source: Path, out_dir: Path) -> Path:
    """Build the reference triad with its clock readings kept; raises CalledProcessError when gcc or OpenMP is
    missing."""
    exe, header = out_dir / "triad", out_dir / "pass_clock.h"
    header.write_text(CLOCK_H)
    subprocess.run(["gcc", "-O3", "-march=native", "-fopenmp", "-include", str(header), str(source), "-o", str(exe)],
                   check=True)
    return exe


def reference_passes(exe: Path, elements: int, passes: int) -> tuple[list[float], float]:
    """One run of the compiled triad: (seconds of each pass, the GB/s it printed: its best pass)."""
    out = subprocess.run([str(exe), str(elements), str(passes)], capture_output=True, text=True, check=True,
                         timeout=600)
    times = [float(line.split()[1]) for line in out.stderr.splitlines() if line.startswith("pass ")]
    printed = float(out.stdout)
    if len(times) != passes or abs(TRIAD_BYTES * elements / min(times) / GB - printed) > 0.01 + 1e-3 * printed:
        raise RuntimeError(f"the reference's pass times ({len(times)} of {passes}) do not give the figure it "
                           f"printed ({printed} GB/s)")
    return times, printed


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


def side(best: float, median: float, worst: float, fastest: float, calls: int) -> dict:
    return {"best_gbps": round(best, 2), "median_gbps": round(median, 2), "worst_gbps": round(worst, 2),
            "fastest_gbps": round(fastest, 2), "timed_calls": calls}


def nearest_trials(before: list[float], after: list[float], calls: int) -> list[float]:
    """The reference passes set against a probe run of ``calls`` timed calls: as many whole trials as the probe's,
    those nearest to it in time (the last of the passes before it and the first of those after, half each where
    both sides have enough), so that neither side's best trial is the best of more chances than the other's."""
    want = max(1, calls // TRIAL_REPS)
    trials_before = [before[i:i + TRIAL_REPS] for i in range(0, len(before), TRIAL_REPS)]
    trials_after = [after[i:i + TRIAL_REPS] for i in range(0, len(after), TRIAL_REPS)]
    n_after = min(want // 2, len(trials_after))
    n_before = min(want - n_after, len(trials_before))
    n_after = min(want - n_before, len(trials_after))
    chosen = trials_before[len(trials_before) - n_before:] + trials_after[:n_after]
    return [t for trial in chosen for t in trial]


def one_round(exe: Path, quick: bool, elements: int, passes: int) -> dict:
    """Reference passes, the probe, reference passes: both sides' figures from the same window."""
    load = os.getloadavg()[0]
    before, printed_before = reference_passes(exe, elements, passes)
    doc, probe_s = probe_round(quick)
    after, printed_after = reference_passes(exe, elements, passes)
    load_end = os.getloadavg()[0]
    if doc.get("skipped"):
        raise RuntimeError(f"probe skipped: {doc['skipped']}")
    if doc["params"]["array_bytes"] != elements * ITEMSIZE:
        print(f"note: the probe's arrays ({doc['params']['array_bytes']} bytes) differ from the reference's "
              f"({elements * ITEMSIZE} bytes)", file=sys.stderr)
    got = doc["results"]["triad"]
    near = nearest_trials(before, after, got["repetitions"])
    ref = rate_result(TRIAD_BYTES * elements, near, GB, "GB/s")  # the probe's statistic on as many passes
    every = rate_result(TRIAD_BYTES * elements, before + after, GB, "GB/s")
    probe = side(got["best"], got["median"], got["worst"], got["fastest"], got["repetitions"])
    reference = side(ref.best, ref.median, ref.worst, ref.extra["fastest"], len(near))
    reference["all_passes_best_gbps"] = round(every.best, 2)
    reference["printed_gbps"] = max(printed_before, printed_after)  # triad.c's own figure: its fastest pass
    reference["before_gbps"], reference["after_gbps"] = (  # each side of the probe alone: the machine's drift
        round(rate_result(TRIAD_BYTES * elements, ts, GB, "GB/s").best, 2) for ts in (before, after))
    return {"probe": probe, "reference": reference,
            "ratio": got["best"] / ref.best, "ratio_all_passes": got["best"] / every.best,
            "ratio_fastest": got["fastest"] / ref.extra["fastest"],
            "ratio_to_printed": got["best"] / reference["printed_gbps"],
            "probe_s": probe_s, "threads": doc["params"]["threads"],
            "thread_counts": doc["params"].get("thread_counts"), "headline_threads": doc["params"].get("triad_threads"),
            "array_bytes": doc["params"]["array_bytes"], "reference_array_bytes": elements * ITEMSIZE,
            "load_average_1min": round(load, 2), "load_average_1min_end": round(load_end, 2)}


def describe(name: str, s: dict) -> str:
    return (f"{name} {s['best_gbps']:.1f} GB/s best trial median (calls: slowest {s['worst_gbps']:.1f}, median "
            f"{s['median_gbps']:.1f}, fastest {s['fastest_gbps']:.1f}; {s['timed_calls']} timed)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("triad_c", type=Path,
                        help="path of the reference triad.c (the OpenMP STREAM-style triad the acceptance checks compile)")
    parser.add_argument("--rounds", type=int, default=1, help="probe runs (each between its own reference runs)")
    parser.add_argument("--quick", action="store_true", help="run the probe in quick mode")
    parser.add_argument("--reference-elements", type=int, default=None,
                        help="elements per array of the reference triad (default: the probe's own)")
    parser.add_argument("--reference-passes", type=int, default=None,
                        help=f"reference passes before and after each probe run, a multiple of {TRIAL_REPS} "
                             f"(default {REFERENCE_PASSES[True]} quick, {REFERENCE_PASSES[False]} full)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if not args.triad_c.is_file():
        parser.error(f"no such file: {args.triad_c}")
    if shutil.which("gcc") is None:
        parser.error("gcc is needed to build the reference triad")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    passes = args.reference_passes or REFERENCE_PASSES[args.quick]
    if passes < TRIAL_REPS or passes % TRIAL_REPS:
        parser.error(f"--reference-passes must be a positive multiple of {TRIAL_REPS} (whole trials)")
    elements = args.reference_elements or default_elements(args.quick, ITEMSIZE)
    if elements < 1_000_000:
        parser.error("--reference-elements must be at least 1000000 (arrays far beyond the caches)")

    seconds = SECONDS[args.quick]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        exe = compile_triad(args.triad_c, Path(tmp))
        for i in range(args.rounds):
            try:
                rows.append({"round": i + 1, **one_round(exe, args.quick, elements, passes)})
            except RuntimeError as exc:
                print(str(exc), file=sys.stderr)
                return 1
    naive = naive_gbps()
    met = [RATIO.met(r["ratio"]) for r in rows] + [seconds.met(r["probe_s"]) for r in rows]
    ratios = [r["ratio"] for r in rows]
    if args.json:
        print(json.dumps({"rounds": rows, "naive_gbps": naive, "target_ratio": RATIO.limit,
                          "target_s": seconds.limit, "pass": all(met)}, indent=2))
    else:
        for r in rows:
            print(f"round {r['round']} (load average {r['load_average_1min']:.2f} -> {r['load_average_1min_end']:.2f}), "
                  f"arrays of {r['array_bytes'] / 1e6:.0f} MB, the probe's best trial on {r['headline_threads']} of "
                  f"{r['threads']} threads")
            print("  " + describe("probe triad", r["probe"]))
            print("  " + describe("compiled OpenMP triad", r["reference"]) +
                  f"; {r['reference']['before_gbps']:.1f} before the probe, {r['reference']['after_gbps']:.1f} after; "
                  f"it printed {r['reference']['printed_gbps']:.1f}")
            print(f"  fastest call / fastest pass {r['ratio_fastest']:.2f}; probe best / the reference's best trial "
                  f"of all {2 * passes} passes {r['ratio_all_passes']:.2f}; probe best / printed figure "
                  f"{r['ratio_to_printed']:.2f}")
            print("  " + RATIO.line(r["ratio"], label=f"round {r['round']}"))
            print("  " + seconds.line(r["probe_s"], 1, label=f"round {r['round']}"))
        if len(rows) > 1:
            print(f"ratio over {len(rows)} rounds: min {min(ratios):.2f}, median {statistics.median(ratios):.2f}, "
                  f"max {max(ratios):.2f}")
        print(f"naive tutorial method (z = x + y once, 2 streams, allocation timed): {naive:.1f} GB/s")
    return exit_code(met)


if __name__ == "__main__":
    sys.exit(main())
