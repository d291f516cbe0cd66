"""benchmarks/bench_probe_host.py sets the probe against a compiled triad by the same statistic, over as many trials,
nearest in time: the reference's pass times come from its own clock, and its figure from the probe's rate_result."""

from __future__ import annotations

import functools
import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

from advisor.probes._common import TRIAL_REPS

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


@functools.cache
def _bench():
    sys.path.insert(0, str(BENCH))  # the benchmark imports its neighbour verdict.py
    try:
        spec = importlib.util.spec_from_file_location("bench_probe_host", BENCH / "bench_probe_host.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCH))
    return module


def test_the_reference_trials_set_against_a_probe_run_are_as_many_taken_from_its_pauses_in_turn():
    bench = _bench()

    def trial(v):  # a trial of TRIAL_REPS passes, each lasting v (v names the trial)
        return [v] * TRIAL_REPS

    # a quick probe's pauses: one reference trial before each of its trials, all taken
    quick = [[trial(1.0)], [trial(2.0)], [trial(3.0)]]
    assert bench.matched_trials(quick, 3 * TRIAL_REPS) == trial(1.0) + trial(2.0) + trial(3.0)
    # a full probe's pauses (before each of its blocks): 7 trials wanted, one from each pause in turn, each pause's
    # last trials (those nearest the probe's block after it), in time order
    full = [[trial(1.0), trial(1.1), trial(1.2)], [trial(2.0), trial(2.1), trial(2.2)], [trial(3.0), trial(3.1)]]
    assert bench.matched_trials(full, 5 * TRIAL_REPS) == (trial(1.1) + trial(1.2) + trial(2.1) + trial(2.2)
                                                         + trial(3.1))
    assert bench.matched_trials(full, 7 * TRIAL_REPS) == (trial(1.0) + trial(1.1) + trial(1.2) + trial(2.1)
                                                         + trial(2.2) + trial(3.0) + trial(3.1))
    assert bench.matched_trials(full, 2 * TRIAL_REPS + 3) == trial(1.2) + trial(2.2)  # whole trials: 2
    assert bench.matched_trials(full, 3) == trial(1.2)  # fewer calls than a trial: one trial
    assert bench.matched_trials(full, 40 * TRIAL_REPS) == [t for p in full for tr in p for t in tr]  # all there are


# a small triad in the reference's shape: timed passes between omp_get_wtime() readings, the best pass printed in GB/s
TRIAD_LIKE = r"""
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    long n = atol(argv[1]);
    int passes = atoi(argv[2]);
    double *a = calloc(n, sizeof *a), *b = calloc(n, sizeof *b), *c = calloc(n, sizeof *c);
    double best = 1e30;
    for (int p = 0; p < passes; p++) {
        double t = omp_get_wtime();
        #pragma omp parallel for
        for (long i = 0; i < n; i++) a[i] = b[i] + 3.0 * c[i];
        t = omp_get_wtime() - t;
        if (t < best) best = t;
    }
    printf("%.2f\n", 3.0 * 8 * n / best / 1e9);
    return a[n / 2] == 0.0 ? 0 : 1;
}
"""


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc with OpenMP")
def test_the_reference_pass_times_come_from_its_own_clock_and_give_its_printed_figure(tmp_path):
    bench = _bench()
    source = tmp_path / "triad_like.c"
    source.write_text(TRIAD_LIKE)
    exe = bench.compile_triad(source, tmp_path)
    times, printed = bench.reference_passes(exe, 1_000_000, 2 * TRIAL_REPS)
    assert len(times) == 2 * TRIAL_REPS and all(t > 0 for t in times)
    # the printed figure is 24 bytes an element over the fastest pass, to the two decimals it prints
    assert printed == pytest.approx(bench.TRIAD_BYTES * 1_000_000 / min(times) / 1e9, abs=0.006)


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc with OpenMP")
def test_the_reference_runs_one_trial_at_a_time_when_asked_and_ends_when_closed(tmp_path):
    bench = _bench()
    source = tmp_path / "triad_like.c"
    source.write_text(TRIAD_LIKE)
    exe = bench.compile_triad(source, tmp_path)
    ref = bench.GatedReference(exe, 1_000_000)
    trials = [ref.trial() for _ in range(3)]
    assert [len(t) for t in trials] == [TRIAL_REPS] * 3 and all(x > 0 for t in trials for x in t)
    ref.close()  # it ends at its next trial's start, long before the passes it was started for
    assert ref.proc.returncode == 0
