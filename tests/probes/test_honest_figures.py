"""Measurements that are true: no utilisation above 100 % and no rate above the device's peak reaches an output;
quick and full runs are labelled apart; the headline stands on whole trials, not one lucky call."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.probes import KernelResult, ProbeResult
from advisor.probes._types import refuse_impossible
from advisor.probes.labels import kernel_value, run_mode
from advisor.store.probe_history import ProbeHistory


def _train_step(mfu: float, quick: bool = True) -> ProbeResult:
    # the stored result the issue saw: a CPU step "at 422 %" of a matmul peak measured on a busier machine
    return ProbeResult(probe="train-step", device="cpu",
                       results={"tokens_per_s": KernelResult(9000.0, 8000.0, "tokens/s"),
                                "achieved": KernelResult(0.2, 0.18, "TFLOP/s"),
                                "mfu": KernelResult(mfu, mfu * 0.9, "fraction")},
                       calibration={"mfu": min(1.0, mfu * 0.9), "accelerator_id": "cpu"},
                       params={"quick": quick}, started_at="2026-12-01T10:00:00+00:00")


def test_a_utilisation_above_100_percent_is_refused_with_a_note():
    r = refuse_impossible(_train_step(4.22))
    assert "mfu" not in r.results and set(r.results) == {"tokens_per_s", "achieved"}
    assert r.calibration is None  # the planner is not calibrated on a figure that cannot be true
    assert any("422 %" in n and "cannot be true" in n for n in r.notes)
    fine = _train_step(0.61)
    assert refuse_impossible(fine) is fine


def test_a_rate_above_the_physical_peak_is_refused():
    r = ProbeResult(probe="device-bandwidth", device="cuda:0",
                    results={"read": KernelResult(1100.0, 1000.0, "GB/s", fraction_of_peak=1100 / 1008),
                             "copy": KernelResult(900.0, 880.0, "GB/s", fraction_of_peak=900 / 1008)},
                    calibration={"eta_mem": 1.0, "accelerator_id": "rtx-4090"})
    out = refuse_impossible(r)
    assert set(out.results) == {"copy"} and out.calibration is None
    assert any("read" in n and "physical peak" in n for n in out.notes)


def test_stored_impossible_figures_are_not_shown_again(advisor_home):
    with ProbeHistory() as h:
        old = h.add(_train_step(4.22).to_dict(), {"id": "m"})  # as an older version stored it
        full = h.add(_train_step(0.5, quick=False).to_dict(), {"id": "m"})
        entry = h.get(old)
        assert "mfu" not in entry.best() and "tokens_per_s" in entry.best()
        assert "mfu" not in ProbeResult.from_dict(entry.result).results
        # quick and full runs are labelled apart, in the store and in what it gives back
        assert entry.mode == "quick" and h.get(full).mode == "full"
        assert [e.id for e in h.list(mode="quick")] == [old] and [e.id for e in h.list(mode="full")] == [full]
        assert entry.to_dict()["mode"] == "quick"
        assert h.compare(old, full)["tokens_per_s"]["mode_b"] == "full"
    assert run_mode({"quick": True}) == "quick" and run_mode({}) == "full"


_kernel = st.builds(KernelResult, best=st.floats(0, 50, allow_nan=False), median=st.floats(0, 50, allow_nan=False),
                    unit=st.sampled_from(["fraction", "GB/s", "TFLOP/s"]),
                    fraction_of_peak=st.none() | st.floats(0, 5, allow_nan=False))


@settings(max_examples=200, deadline=None)
@given(kernels=st.dictionaries(st.sampled_from(["mfu", "triad", "read", "fp32", "achieved"]), _kernel, max_size=5))
def test_no_utilisation_above_100_percent_reaches_any_output(kernels):
    """Whatever a probe measured, what is returned, stored and read back holds no fraction above 1 (and so no
    text above "100 %")."""
    r = ProbeResult(probe="train-step", device="cpu", results=kernels, calibration={"mfu": 0.5})
    for shown in (refuse_impossible(r), ProbeResult.from_dict(r.to_dict())):
        for k in shown.results.values():
            if k.unit == "fraction":
                assert k.best <= 1.0 and k.median <= 1.0
                text = kernel_value(k.best, k.unit)
                assert text == "not measured" or float(text.split()[0]) <= 100.0
            assert k.fraction_of_peak is None or k.fraction_of_peak <= 1.0


def test_host_bandwidth_above_a_given_physical_peak_is_refused():
    from advisor.probes import drive, open_probe

    # a peak of 0.001 GB/s: any real triad is above it, so the figure is refused with the note, never shown
    r = drive(open_probe("host-bandwidth", quick=True, elements=200_000, reps=4, warmup_s=0.0, peak_gbps=0.001))
    assert "triad" not in r.results and any("physical peak" in n for n in r.notes)
    ok = drive(open_probe("host-bandwidth", quick=True, elements=200_000, reps=4, warmup_s=0.0, peak_gbps=1e6))
    assert ok.results["triad"].fraction_of_peak < 1 and ok.peak == {"GB/s": 1e6, "origin": "given"}
