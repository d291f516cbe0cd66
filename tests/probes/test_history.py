"""Probe history in SQLite, the sampler, recording a run, and calibration offers."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from advisor.probes import KernelResult, ProbeResult
from advisor.probes.sampling import ProbeSampler
from advisor.probes.session import calibration_from, record
from advisor.store.calibration import Calibration
from advisor.store.probe_history import ProbeHistory, history_file


def _doc(best, probe="host-bandwidth", started="2026-11-29T10:00:00+00:00"):
    return ProbeResult(probe=probe, device="cpu", results={"triad": KernelResult(best, best * 0.9, "GB/s")},
                       params={"elements": 10}, started_at=started, duration_s=1.5).to_dict()


def test_round_trip_list_compare_delete(advisor_home):
    fp = {"id": "abc123", "cpu_model": "Test CPU"}
    samples = [{"t_s": 0.0, "cpu_clock_mhz": 2400.0}]
    with ProbeHistory() as h:
        a = h.add(_doc(20.0, started="2026-11-29T10:00:00+00:00"), fp, samples)
        b = h.add(_doc(30.0, started="2026-11-29T11:00:00+00:00"), fp)
        h.add(_doc(1.0, probe="disk", started="2026-11-29T12:00:00+00:00"), {"id": "other"})
    assert history_file().parent == advisor_home / "data"
    with ProbeHistory() as h:
        entries = h.list(probe="host-bandwidth")
        assert [e.id for e in entries] == [b, a]  # newest first
        got = h.get(a)
        assert got.fingerprint == fp and list(got.samples) == samples and got.params == {"elements": 10}
        assert got.result["results"]["triad"]["best"] == 20.0 and got.duration_s == 1.5
        assert len(h.list(fingerprint_id="abc123")) == 2 and len(h.list(limit=1)) == 1
        cmp = h.compare(a, b)
        assert cmp["triad"]["ratio"] == pytest.approx(1.5) and cmp["triad"]["unit"] == "GB/s"
        with pytest.raises(KeyError):
            h.compare(a, 999)
        assert h.delete(a) and not h.delete(a)
        assert h.clear() == 2 and h.list() == []


def test_unreadable_database_is_kept_aside(advisor_home, capsys):
    path = history_file()
    path.parent.mkdir(parents=True)
    path.write_bytes(b"this is not sqlite" * 100)
    with ProbeHistory() as h:
        assert h.list() == []
        h.add(_doc(5.0), {"id": "x"})
    assert len(list(path.parent.glob("probe_history.sqlite3.broken-*"))) == 1
    assert "kept aside" in capsys.readouterr().err
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 1


def test_sampler_collects_and_stops():
    calls = []

    def reader():
        calls.append(1)
        return {"power_w": 100.0, "sm_clock_mhz": 1800.0}

    with ProbeSampler("cuda:0", interval_s=0.01, reader=reader) as s:
        threading.Event().wait(0.1)
    n = len(s.samples)
    assert n >= 2 and s.samples[0]["power_w"] == 100.0 and "t_s" in s.samples[0]
    threading.Event().wait(0.05)
    assert len(s.samples) == n
    assert not any(t.name == "probe-sampler" and t.is_alive() for t in threading.enumerate())


def test_record_stores_result_with_fingerprint():
    gen = record("capacity", sample_interval_s=0.01)
    while True:
        try:
            next(gen)
        except StopIteration as stop:
            run = stop.value
            break
    assert run.run_id is not None and run.fingerprint["id"]
    with ProbeHistory() as h:
        entry = h.get(run.run_id)
    assert entry.probe == "capacity" and entry.fingerprint["id"] == run.fingerprint["id"]
    assert entry.result == run.result.to_dict()


def _offer(probe, **cal):
    return ProbeResult(probe=probe, device="cuda:0", calibration=cal, started_at="2026-11-29T10:00:00+00:00")


def test_calibration_from_merges_with_previous_on_same_device():
    prev = Calibration(mfu=0.3, eta_mem=0.7, device="cuda:0", accelerator_id="rtx-4090",
                       measured_at="2026-01-01T00:00:00+00:00", source="probe:train-step")
    cal = calibration_from([_offer("device-bandwidth", eta_mem=0.9, accelerator_id="rtx-4090")], previous=prev)
    assert (cal.mfu, cal.eta_mem, cal.accelerator_id, cal.source) == (0.3, 0.9, "rtx-4090", "probe:device-bandwidth")
    other = Calibration(mfu=0.3, eta_mem=None, device="cpu", accelerator_id=None, measured_at="x", source="y")
    assert calibration_from([_offer("train-step", mfu=0.5)], previous=other).eta_mem is None
    assert calibration_from([ProbeResult(probe="disk", device="cpu")]) is None
