"""The probe API: registry, result documents, the generator wrapper, and no torch at import."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from advisor.probes import PROBES, CancelToken, KernelResult, ProbeCancelled, ProbeResult, drive, open_probe
from advisor.probes._common import headline_time, parse_device, probe, rate_result
from advisor.probes._types import ProbeSkipped, Progress


def test_registry_names_match_contract():
    assert list(PROBES) == ["host-bandwidth", "device-bandwidth", "transfer", "matmul", "capacity", "disk",
                            "allreduce", "train-step"]
    with pytest.raises(KeyError):
        open_probe("nope")


def test_importing_cli_and_probes_does_not_import_torch():
    code = ("import sys, advisor.cli, advisor.probes, advisor.probes.session, advisor.commands.probe; "
            "advisor.cli.build_parser(); "
            "import advisor.probes.host_bandwidth, advisor.probes.allreduce, advisor.probes.train_step; "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_result_document_round_trips_through_json():
    r = ProbeResult(probe="host-bandwidth", device="cpu",
                    results={"triad": KernelResult(30.0, 25.0, "GB/s", 20.0, 10, 0.5, {"bytes_per_call": 24})},
                    peak={"GB/s": 60.0, "origin": "test"}, params={"elements": 1})
    doc = json.loads(json.dumps(r.to_dict()))
    assert doc["schema"] == "advisor.probe/1" and doc["probe"] == "host-bandwidth" and doc["device"] == "cpu"
    assert doc["results"]["triad"]["best"] == 30.0 and doc["results"]["triad"]["unit"] == "GB/s"
    assert doc["results"]["triad"]["spread_pct"] == pytest.approx(100 * (30 - 20) / 30)
    assert "skipped" not in doc
    assert ProbeResult.from_dict(doc).to_dict() == doc


def test_rate_result_best_median_worst():
    # three calls are too few for trials: the headline is their median (2 GB/s); the fastest call is kept apart
    k = rate_result(1e9, [0.5, 0.25, 1.0], 1e9, "GB/s", peak=8.0)
    assert (k.best, k.median, k.worst) == (2.0, 2.0, 1.0)
    assert k.extra["fastest"] == 4.0
    assert k.fraction_of_peak == 0.25 and k.repetitions == 3


def test_headline_is_the_best_of_per_trial_medians():
    # ten calls, trials of five: medians 1.0 s (one lucky 0.1 s call in it) and 0.5 s: the headline is 0.5 s
    times = [1.0, 1.0, 0.1, 1.0, 1.0, 0.5, 0.5, 0.5, 0.6, 0.4]
    assert headline_time(times) == 0.5
    k = rate_result(1e9, times, 1e9, "GB/s")
    assert k.best == 2.0 and k.extra["fastest"] == 10.0  # the lucky call does not make the headline
    # never faster than the fastest call, never slower than the median of all
    assert min(times) <= headline_time(times) <= sorted(times)[len(times) // 2]


@pytest.mark.parametrize("text,expected", [("cpu", ("cpu", None)), ("cuda", ("cuda", 0)), ("cuda:3", ("cuda", 3))])
def test_parse_device(text, expected):
    assert parse_device(text) == expected


@pytest.mark.parametrize("bad", ["tpu", "cuda:", "cpu:0", "cuda:-1", "", "CUDA:0"])
def test_parse_device_rejects(bad):
    with pytest.raises(ValueError):
        parse_device(bad)


def test_wrapper_turns_skips_and_out_of_memory_into_reasons():
    @probe("demo")
    def skipper(device="cpu", quick=False, cancel=None):
        yield Progress(0.0, "start")
        raise ProbeSkipped("no widget here")

    @probe("demo")
    def oom(device="cpu", quick=False, cancel=None):
        yield Progress(0.0, "start")
        raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")

    @probe("demo")
    def broken(device="cpu", quick=False, cancel=None):
        yield Progress(0.0, "start")
        raise RuntimeError("a real bug")

    r = drive(skipper())
    assert r.skipped == "no widget here" and r.to_dict()["skipped"] == "no widget here" and r.results == {}
    r = drive(oom(device="cuda:0"))
    assert r.skipped.startswith("not enough memory on cuda:0")
    with pytest.raises(RuntimeError, match="a real bug"):
        drive(broken())


def test_cancel_before_start_raises():
    token = CancelToken()
    token.cancel()
    with pytest.raises(ProbeCancelled):
        drive(open_probe("capacity", cancel=token))


def test_progress_fractions_are_monotone_and_bounded():
    events = []
    drive(open_probe("capacity"), on_progress=events.append)
    fractions = [e.fraction for e in events]
    assert fractions == sorted(fractions) and 0.0 <= fractions[0] and fractions[-1] == 1.0
