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


def test_the_reference_trials_set_against_a_probe_run_are_as_many_and_nearest():
    bench = _bench()
    before = [1.0 + i for i in range(8 * TRIAL_REPS)]  # 8 trials before the probe, 8 after; values name the pass
    after = [100.0 + i for i in range(8 * TRIAL_REPS)]
    # a probe of 3 trials: the last 2 trials before it and the first one after
    assert bench.nearest_trials(before, after, 3 * TRIAL_REPS) == before[-2 * TRIAL_REPS:] + after[:TRIAL_REPS]
    assert bench.nearest_trials(before, after, 2 * TRIAL_REPS + 3) == before[-TRIAL_REPS:] + after[:TRIAL_REPS]
    assert bench.nearest_trials(before, after, 3) == before[-TRIAL_REPS:]  # fewer calls than a trial: one trial
    assert bench.nearest_trials(before, after, 40 * TRIAL_REPS) == before + after  # more than there are: all
    # one side short: the other gives the rest
    assert bench.nearest_trials(before[:TRIAL_REPS], after, 4 * TRIAL_REPS) == before[:TRIAL_REPS] + after[:3 * TRIAL_REPS]


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
