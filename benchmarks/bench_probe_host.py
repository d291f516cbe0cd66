"""Benchmark: the host-bandwidth probe's triad against a compiled OpenMP STREAM triad on the same machine.

Compiles the reference triad (``gcc -O3 -march=native -fopenmp``) and, in every round, runs its trials between the
probe's, and reports the probe's triad as a fraction of the reference's, and how long the probe took.
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
  fastest pass reproduces the figure triad.c prints, checked before the first round) and put through the probe's
  own ``rate_result``: the best of per-trial medians, trials of five consecutive passes. Set against the best single
  pass that triad.c prints, a probe's best trial median reads low by the spread of the machine within a trial;
  the single fastest pass and call are compared as well (``fastest``);
- the same seconds and the same number of chances: the two sides take turns. The reference is started with its
  arrays filled and held at the start of each of its trials (the forced include waits on a line from the benchmark
  before a trial's first pass, outside its timed passes); the probe's process stops before each of its triad's
  trials (quick) or blocks of trials (full, one a round of its kernels) and waits while the reference runs one
  trial (quick) or trials for as long as the probe's block may last (full). The probe's deadlines run on a clock
  less those waits (its ``clock`` argument), so it times as many trials as it would alone, and its time is given
  less them. The reference's figure is then taken over as many trials as the probe timed, from its pauses in turn
  (``matched_trials``), so neither side's best is the best of more tries, and every reference trial sits next to
  one of the probe's. Runs before and after the probe, as this benchmark took them until now, left the two sides
  seconds apart (the probe's import, fill and warm-up on one side, the next run's start and fill on the other): on
  a machine whose load changes by the second, a reference run that caught a quiet moment the probe did not see
  (36 GB/s against the probe's 22, and a ratio of 0.62, at load 4) failed a round that said nothing about the
  probe. Each side's spread (slowest, median and fastest call) and the reference's trials in time order are
  printed, so a round where the machine changed under the probe shows as such.

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
from advisor.probes.host_bandwidth import FULL_BUDGET_S, STREAMS, default_elements

RATIO = Target("probe triad / compiled OpenMP triad (best trial medians, same window)", ">=", 0.95)
SECONDS = {False: Target("full probe took", "<", 30.0, "s"), True: Target("quick probe took", "<", 5.0, "s")}
ITEMSIZE = 8  # float64, as triad.c
TRIAD_BYTES = STREAMS["triad"] * ITEMSIZE  # bytes counted per element, on both sides
#: passes of the reference's check run (its pass times against the figure it prints), before the rounds
CHECK_PASSES = 2 * TRIAL_REPS
#: passes the reference is started for in a round: more than it ever runs (the benchmark ends it between trials)
GATED_PASSES = 1 << 14

# Forced include for triad.c: omp_get_wtime() wrapped so each reading is kept, the pass times (pairs of readings)
# written to stderr at exit. With BENCH_TRIAL_PASSES=k in its environment the wrapper also holds the run at the start
# of every k-th pass (a trial's first) until a line comes on stdin, and writes the trial just ended to stdout: the
# benchmark runs the reference's trials one at a time between the probe's. The clock is read after the wait, so no
# pass times it; on end of input the run ends there. The kernel and its loop are triad.c's own.
CLOCK_H = r"""
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
static double bench_marks_[1 << 16];
static int bench_count_, bench_gate_ = -1;
static double bench_wtime_(void) {
    if (bench_gate_ < 0) bench_gate_ = getenv("BENCH_TRIAL_PASSES") ? atoi(getenv("BENCH_TRIAL_PASSES")) : 0;
    if (bench_gate_ > 0 && bench_count_ % (2 * bench_gate_) == 0) {
        if (bench_count_ == 0) printf("ready");
        else printf("trial");
        for (int i = bench_count_ - 2 * bench_gate_; i >= 0 && i < bench_count_; i += 2)
            printf(" %.9f", bench_marks_[i + 1] - bench_marks_[i]);
        printf("\n");
        fflush(stdout);
        char line[16];
        if (!fgets(line, sizeof line, stdin)) _exit(0);
    }
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
from advisor.probes import open_probe
paused = 0.0
def clock():  # the probe's clock for its deadlines: it stands still while the probe waits for the reference
    return time.perf_counter() - paused
t0 = time.perf_counter()
gen = open_probe("host-bandwidth", quick=sys.argv[1] == "quick", clock=clock)
try:
    while True:
        if next(gen).message.startswith("triad:"):  # the triad's next trial (quick) or block of trials (full)
            t = time.perf_counter()
            print("pause", flush=True)
            sys.stdin.readline()
            paused += time.perf_counter() - t
except StopIteration as stop:
    result = stop.value
print(json.dumps({"wall_s": time.perf_counter() - t0 - paused, "paused_s": paused, "result": result.to_dict()}))
"""


class GatedReference:
    """The compiled triad in its own process, held between trials: filled and waiting when opened, each ``trial()``
    runs ``TRIAL_REPS`` passes and returns their seconds (its own clock), closing ends it."""

    def __init__(self, exe: Path, elements: int):
        env = {**os.environ, "BENCH_TRIAL_PASSES": str(TRIAL_REPS)}
        self.proc = subprocess.Popen([str(exe), str(elements), str(GATED_PASSES)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
        self._expect("ready")  # its arrays are filled (before the probe starts, so the fills do not overlap)

    def _expect(self, word: str) -> list[float]:
        line = self.proc.stdout.readline().split()
        if not line or line[0] != word:
            raise RuntimeError(f"the reference triad stopped (exit {self.proc.poll()}) instead of its {word!r} line")
        return [float(x) for x in line[1:]]

    def trial(self) -> list[float]:
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        times = self._expect("trial")
        if len(times) != TRIAL_REPS or min(times) <= 0:
            raise RuntimeError(f"the reference triad's trial has {len(times)} pass times, not {TRIAL_REPS}")
        return times

    def close(self) -> None:
        self.proc.stdin.close()  # end of input: it ends at its next trial's start
        self.proc.wait(timeout=60)
        self.proc.stdout.close()

    def __enter__(self) -> GatedReference:
        return self

    def __exit__(self, *exc) -> None:
        if exc[0] is not None:
            self.proc.kill()
        self.close()


def reference_at_pause(ref: GatedReference, quick: bool) -> list[list[float]]:
    """The reference's trials at one pause of the probe: one before each of the quick probe's trials; before each of
    the full probe's blocks of triad trials, trials for as long as the probe's block may last
    (``FULL_BUDGET_S["triad"]``), so the reference has as many trials to give as the probe's block can have."""
    trials = [ref.trial()]
    while not quick and sum(map(sum, trials)) < FULL_BUDGET_S["triad"]:
        trials.append(ref.trial())
    return trials


def probe_round(quick: bool, at_pause) -> tuple[dict, float, list]:
    """The probe in a fresh process, as a user runs it (torch imported by the probe), ``at_pause()`` called before
    each of its triad's trials (quick) or blocks of trials (full) while it waits: (result document, seconds from
    the call to its result less the waits, what each ``at_pause()`` returned)."""
    with tempfile.TemporaryFile("w+") as err:
        child = subprocess.Popen([sys.executable, "-c", PROBE_CHILD, "quick" if quick else "full"],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True)
        pauses, last = [], ""
        try:
            for line in child.stdout:
                last = line
                if line.strip() == "pause":
                    pauses.append(at_pause())
                    child.stdin.write("go\n")
                    child.stdin.flush()
            child.stdin.close()
            rc = child.wait(timeout=600)
        except BaseException:
            child.kill()
            raise
        if rc != 0 or not last.startswith("{"):
            err.seek(0)
            raise RuntimeError(f"the probe's process failed (exit {rc}): {err.read()[-2000:]}")
    doc = json.loads(last)
    return doc["result"], doc["wall_s"], pauses


def side(best: float, median: float, worst: float, fastest: float, calls: int) -> dict:
    return {"best_gbps": round(best, 2), "median_gbps": round(median, 2), "worst_gbps": round(worst, 2),
            "fastest_gbps": round(fastest, 2), "timed_calls": calls}


def matched_trials(pauses: list[list[list[float]]], calls: int) -> list[float]:
    """The reference's passes set against a probe run of ``calls`` timed calls: as many whole trials as the probe's,
    taken from its pauses in turn (one from each pause, then a second from each, ...), from each pause's end, the
    trials nearest the probe's that followed; in time order. Neither side's best trial is then the best of more
    chances than the other's, and each side's trials sit between the other's."""
    want = max(1, calls // TRIAL_REPS)
    left = [list(p) for p in pauses]
    chosen: list[list[list[float]]] = [[] for _ in pauses]
    while want and any(left):
        for i, trials in enumerate(left):
            if want and trials:
                chosen[i].insert(0, trials.pop())
                want -= 1
    return [t for trials in chosen for trial in trials for t in trial]


def one_round(exe: Path, quick: bool, elements: int) -> dict:
    """The probe with the reference's trials run between its own: both sides' figures from the same seconds."""
    load = os.getloadavg()[0]
    with GatedReference(exe, elements) as ref:
        doc, probe_s, pauses = probe_round(quick, lambda: reference_at_pause(ref, quick))
    load_end = os.getloadavg()[0]
    if doc.get("skipped"):
        raise RuntimeError(f"probe skipped: {doc['skipped']}")
    if doc["params"]["array_bytes"] != elements * ITEMSIZE:
        print(f"note: the probe's arrays ({doc['params']['array_bytes']} bytes) differ from the reference's "
              f"({elements * ITEMSIZE} bytes)", file=sys.stderr)
    if not pauses:
        raise RuntimeError("the probe timed no triad trial")
    got = doc["results"]["triad"]
    near = matched_trials(pauses, got["repetitions"])
    every = [t for trials in pauses for trial in trials for t in trial]
    ref = rate_result(TRIAD_BYTES * elements, near, GB, "GB/s")  # the probe's statistic on as many trials
    every_ref = rate_result(TRIAD_BYTES * elements, every, GB, "GB/s")
    probe = side(got["best"], got["median"], got["worst"], got["fastest"], got["repetitions"])
    reference = side(ref.best, ref.median, ref.worst, ref.extra["fastest"], len(near))
    reference["all_trials_best_gbps"] = round(every_ref.best, 2)
    reference["all_trials"] = len(every) // TRIAL_REPS
    reference["trial_medians_gbps"] = [  # each chosen trial's median, in time order: the machine's drift
        round(TRIAD_BYTES * elements / statistics.median(near[i:i + TRIAL_REPS]) / GB, 2)
        for i in range(0, len(near), TRIAL_REPS)]
    return {"probe": probe, "reference": reference,
            "ratio": got["best"] / ref.best, "ratio_all_trials": got["best"] / every_ref.best,
            "ratio_fastest": got["fastest"] / ref.extra["fastest"],
            "probe_s": probe_s, "pauses": len(pauses), "threads": doc["params"]["threads"],
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
    parser.add_argument("--rounds", type=int, default=1,
                        help="probe runs (each in a fresh process, with a fresh reference run between its trials)")
    parser.add_argument("--quick", action="store_true", help="run the probe in quick mode")
    parser.add_argument("--reference-elements", type=int, default=None,
                        help="elements per array of the reference triad (default: the probe's own)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if not args.triad_c.is_file():
        parser.error(f"no such file: {args.triad_c}")
    if shutil.which("gcc") is None:
        parser.error("gcc is needed to build the reference triad")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    elements = args.reference_elements or default_elements(args.quick, ITEMSIZE)
    if elements < 1_000_000:
        parser.error("--reference-elements must be at least 1000000 (arrays far beyond the caches)")

    seconds = SECONDS[args.quick]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        exe = compile_triad(args.triad_c, Path(tmp))
        for i in range(args.rounds):
            try:
                if i == 0:
                    reference_passes(exe, elements, CHECK_PASSES)  # its pass times give the figure it prints
                rows.append({"round": i + 1, **one_round(exe, args.quick, elements)})
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
            trials = r["reference"]["trial_medians_gbps"]
            print("  " + describe("compiled OpenMP triad", r["reference"]) +
                  f"; its trials between the probe's {r['pauses']} pauses, in time order: "
                  + " ".join(f"{g:.1f}" for g in trials))
            print(f"  fastest call / fastest pass {r['ratio_fastest']:.2f}; probe best / the reference's best of all "
                  f"its {r['reference']['all_trials']} trials {r['ratio_all_trials']:.2f}")
            print("  " + RATIO.line(r["ratio"], label=f"round {r['round']}"))
            print("  " + seconds.line(r["probe_s"], 1, label=f"round {r['round']}"))
        if len(rows) > 1:
            print(f"ratio over {len(rows)} rounds: min {min(ratios):.2f}, median {statistics.median(ratios):.2f}, "
                  f"max {max(ratios):.2f}")
        print(f"naive tutorial method (z = x + y once, 2 streams, allocation timed): {naive:.1f} GB/s")
    return exit_code(met)


if __name__ == "__main__":
    sys.exit(main())
