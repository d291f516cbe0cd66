"""Bytes and FLOPs counted per kernel, checked with a fake clock that makes every call last exactly DT."""

from __future__ import annotations

import itertools

import pytest

from advisor.probes import drive, open_probe

DT = 1e-3


def fake_timer(step=DT):
    counter = itertools.count()
    return lambda: next(counter) * step


def test_host_bandwidth_counts_two_and_three_arrays():
    n = 4096
    r = drive(open_probe("host-bandwidth", elements=n, reps=5, trials=1, warmup_s=0.0, timer=fake_timer()))
    assert r.skipped is None
    for kernel, arrays in {"copy": 2, "scale": 2, "add": 3, "triad": 3}.items():
        k = r.results[kernel]
        assert k.unit == "GB/s"
        assert k.best == pytest.approx(arrays * 8 * n / DT / 1e9)
        assert k.median == pytest.approx(k.best)
        assert k.repetitions == (12 if kernel == "triad" else 5)  # the headline kernel gets 2.5x the samples
        assert k.extra["bytes_per_call"] == arrays * 8 * n


def test_host_bandwidth_float32_counts_four_bytes():
    n = 4096
    r = drive(open_probe("host-bandwidth", elements=n, reps=3, trials=1, warmup_s=0.0, dtype="float32",
                         timer=fake_timer()))
    assert r.results["triad"].best == pytest.approx(3 * 4 * n / DT / 1e9)


def test_device_bandwidth_on_cpu_counts_read_once():
    size = 1 << 20
    r = drive(open_probe("device-bandwidth", largest_bytes=size, points=1, reps=3, warmup_s=0.0,
                         timer=fake_timer()))
    assert r.skipped is None
    expected = {"copy": 2, "add": 3, "triad": 3, "read": 1}
    for kernel, arrays in expected.items():
        assert r.results[kernel].best == pytest.approx(arrays * size / DT / 1e9)
    assert r.details["sweep"]["read"] == [[size, pytest.approx(size / DT / 1e9)]]
    assert r.peak is None and r.calibration is None


def test_matmul_counts_two_mnk():
    n = 64
    r = drive(open_probe("matmul", precisions=["fp32"], sizes=[n], reps=3, warmup_s=0.0, timer=fake_timer()))
    k = r.results["fp32"]
    assert k.unit == "TFLOP/s"
    assert k.best == pytest.approx(2 * n**3 / DT / 1e12)
    assert r.details["sweep"] == {"fp32": [[n, pytest.approx(k.best)]]} and r.details["sweep_x"] == "matrix size n"
    assert r.details["unsupported"] == {}


def test_matmul_reports_why_a_precision_is_not_measured_on_cpu():
    r = drive(open_probe("matmul", precisions=["tf32", "fp8"], sizes=[64], reps=1, warmup_s=0.0))
    assert r.results == {}
    assert "GPU" in r.details["unsupported"]["tf32"] and "8.9" in r.details["unsupported"]["fp8"]


def test_matmul_rejects_unknown_precision():
    with pytest.raises(ValueError, match="fp3"):
        drive(open_probe("matmul", precisions=["fp3"]))


def test_real_timing_gives_plausible_triad():
    """Not a benchmark: a tiny real run must give a positive rate with best >= median >= worst."""
    r = drive(open_probe("host-bandwidth", elements=1 << 18, reps=5, trials=1, warmup_s=0.01))
    k = r.results["triad"]
    assert k.best >= k.median >= k.worst > 0
    assert r.params["threads"] >= 1


def _ramp(durations):
    """A fake clock and a call that advances it by the next of ``durations`` (the last one repeats)."""
    clock, calls = [0.0], [0]

    def fn():
        clock[0] += durations[min(calls[0], len(durations) - 1)]
        calls[0] += 1

    return fn, (lambda: clock[0]), calls


def test_warm_up_lasts_while_the_speed_rises_and_no_longer():
    from advisor.probes._common import TRIAL_REPS, warm_until_steady
    from advisor.probes._types import CancelToken

    # three groups of calls each 20 % faster than the one before, then steady: the warm-up ends with the first
    # steady group (the fifth), not before the speed stopped rising
    ramp = [d for d in (2.0, 1.6, 1.28, 1.024) for _ in range(TRIAL_REPS)] + [1.024]
    fn, timer, calls = _ramp([d * 1e-3 for d in ramp])
    spent = warm_until_steady(fn, max_s=10.0, cancel=CancelToken(), timer=timer)
    assert calls[0] == 5 * TRIAL_REPS
    assert spent == pytest.approx(TRIAL_REPS * (2.0 + 1.6 + 1.28 + 2 * 1.024) * 1e-3)
    # a speed that keeps rising is waited for at most max_s (the group under way is finished)
    fn, timer, calls = _ramp([1e-3 * 0.9 ** k for k in range(1000)])
    assert warm_until_steady(fn, max_s=0.01, cancel=CancelToken(), timer=timer) < 0.01 + TRIAL_REPS * 1e-3
    # a steady call: two groups; no warm-up at all with max_s 0
    fn, timer, calls = _ramp([1e-3])
    warm_until_steady(fn, max_s=10.0, cancel=CancelToken(), timer=timer)
    assert calls[0] == 2 * TRIAL_REPS
    fn, timer, calls = _ramp([1e-3])
    assert warm_until_steady(fn, max_s=0.0, cancel=CancelToken(), timer=timer) == 0.0 and calls[0] == 0


def test_full_host_bandwidth_stops_at_its_time_budget_after_one_headline_trial(monkeypatch):
    """A machine whose memory is busy gets fewer samples, not a longer probe: past the budget each kernel stops
    after one trial of TRIAL_REPS calls (the headline's unit), whatever ``reps`` asks for."""
    import advisor.probes.host_bandwidth as hb
    from advisor.probes._common import TRIAL_REPS

    monkeypatch.setattr(hb, "FULL_BUDGET_S", dict.fromkeys(hb.STREAMS, 0.0))
    r = drive(open_probe("host-bandwidth", elements=4096, reps=40, trials=2, warmup_s=0.0, timer=fake_timer()))
    assert {k: v.repetitions for k, v in r.results.items()} == dict.fromkeys(hb.STREAMS, 2 * TRIAL_REPS)
    assert r.results["triad"].best == pytest.approx(3 * 8 * 4096 / DT / 1e9)
