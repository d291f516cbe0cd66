"""CSV recording and ``advisor monitor``."""

from __future__ import annotations

import csv
import io

import pytest

from advisor.cli import main
from advisor.hw.fake import FakeGpuBackend, FakeHostBackend
from advisor.monitor import CsvRecorder, Sampler, csv_columns
from advisor.monitor.recorder import format_cell
from tests.monitor.fakeclock import FakeClock


def test_format_cell():
    assert [format_cell(v) for v in (None, 0, 12, 1.5, 2.0, 1 / 3, float("nan"), True)] == [
        "", "0", "12", "1.5", "2", "0.3333", "", "1"]


def _record(scenario: str, ticks: int = 4) -> list[dict]:
    clock = FakeClock()
    buf = io.StringIO()
    sampler = Sampler(FakeGpuBackend(scenario, clock=clock), FakeHostBackend(clock), interval_s=0.5, clock=clock,
                      wait=clock.advance)
    rec = CsvRecorder(buf, sampler.gpu_count)
    sampler.add_listener(rec)
    sampler.run(max_ticks=ticks)
    rec.close()
    assert rec.rows == ticks
    rows = list(csv.DictReader(io.StringIO(buf.getvalue())))
    assert list(rows[0]) == list(csv_columns(sampler.gpu_count))
    return rows


def test_csv_rows_hold_the_readings():
    rows = _record("2x4090")
    assert [r["time_s"] for r in rows] == ["0", "0.5", "1", "1.5"]
    assert all(r["mem_used_bytes"] == str(16 * 2**30) for r in rows)
    assert all(0 <= float(r["gpu1_util_pct"]) <= 100 and 25 <= float(r["gpu1_power_w"]) <= 450 for r in rows)
    assert all(r["gpu0_mem_total_bytes"] == str(24564 * 2**20) for r in rows)


def test_csv_cells_empty_where_not_available():
    rows = _record("not-supported")
    assert all(r["gpu0_power_w"] == "" and r["gpu0_temp_c"] == "" and r["gpu0_util_pct"] != "" for r in rows)


def test_csv_lost_gpu_keeps_its_columns():
    rows = _record("gpu-lost", ticks=7)
    assert rows[0]["gpu1_util_pct"] != "" and rows[-1]["gpu1_util_pct"] == "" and rows[-1]["gpu0_util_pct"] != ""


def test_cli_monitor_csv(tmp_path, capsys):
    out = tmp_path / "m.csv"
    assert main(["monitor", "--duration", "0.4", "--interval", "0.2", "--csv", str(out), "--fake-gpu", "2x4090"]) == 0
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 3 and rows[0]["time_s"] == "0"
    assert rows[-1]["gpu1_power_w"] != ""
    captured = capsys.readouterr()
    assert "recorded 3 samples" in captured.out and "simulated" in captured.out
    assert "SIMULATED HARDWARE" in captured.err


def test_cli_monitor_live_text(capsys, monkeypatch):
    monkeypatch.setenv("ADVISOR_FAKE_GPU", "gpu-lost")
    assert main(["monitor", "--duration", "0.2", "--interval", "0.1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("SIMULATED HARDWARE") and len(lines) == 4
    assert all("[simulated]" in line and "gpu1" in line for line in lines[1:])


@pytest.mark.parametrize("args", [
    ["--interval", "0.05"], ["--interval", "11"], ["--interval", "abc"], ["--interval", "nan"],
    ["--duration", "0"], ["--duration", "-1"], ["--duration", "inf"], ["--fake-gpu", "nope"],
    ["--csv", "/no/such/dir/m.csv"],
])
def test_cli_monitor_bad_input_exit_2(args, capsys, tmp_path):
    assert main(["monitor", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_cli_monitor_csv_is_a_directory(tmp_path, capsys):
    assert main(["monitor", "--csv", str(tmp_path), "--duration", "0.1"]) == 2
    assert "--csv" in capsys.readouterr().err


def test_cli_monitor_leaves_a_suspended_laptop_gpu_asleep(capsys):
    assert main(["monitor", "--duration", "0.1", "--interval", "0.1", "--fake-gpu", "laptop-4060"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and all("gpu0 suspended" in line for line in lines[1:])


# ---------------------------------------------------------------- --once --json
@pytest.mark.parametrize(("scenario", "gpus", "vendor"), [("8xh100-sxm", 8, "nvidia"), ("2xmi300x", 2, "amd"),
                                                          ("m3-max", 1, "apple"), ("arc-b580", 1, "intel")])
def test_cli_monitor_once_json(scenario, gpus, vendor, capsys):
    import json

    assert main(["monitor", "--once", "--json", "--fake-gpu", scenario]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "advisor.monitor/1" and doc["simulated"] is True and len(doc["gpus"]) == gpus
    for g in doc["gpus"]:
        assert {"index", "name", "vendor", "state", "util_pct", "mem_used_bytes", "mem_total_bytes", "power_w",
                "power_limit_w", "temp_c"} <= set(g)
        assert g["vendor"] == vendor and g["state"] == "ok" and 0 <= g["util_pct"] <= 100
        assert 0 < g["mem_used_bytes"] < g["mem_total_bytes"]
    for p in doc["processes"]:
        assert {"pid", "user", "cmdline", "gpu", "gpu_mem_bytes", "gpu_util_pct"} <= set(p)
    if scenario == "8xh100-sxm":
        assert {p["gpu"] for p in doc["processes"]} == set(range(8))
        assert all(p["cmdline"] for p in doc["processes"] if p["user"])
        assert doc["gpus"][0]["mem_total_bytes"] == 81559 * 2**20 and doc["gpus"][0]["power_limit_w"] == 700.0
    if scenario == "m3-max":
        assert doc["gpus"][0]["power_w"] is None and doc["processes"] == []  # needs root / not given by macOS


def test_cli_monitor_once_lost_gpu_and_json_needs_once(capsys):
    assert main(["monitor", "--json"]) == 2
    assert "--once" in capsys.readouterr().err


# ---------------------------------------------------------------- unsafe CSV targets and write failures
def test_csv_refuses_a_symlink_and_keeps_its_target(tmp_path, capsys):
    victim = tmp_path / "precious.txt"
    victim.write_text("keep me\n")
    link = tmp_path / "m.csv"
    link.symlink_to(victim)
    assert main(["monitor", "--csv", str(link), "--duration", "0.1", "--fake-gpu", "2x4090"]) == 2
    err = capsys.readouterr().err
    assert "symbolic link" in err and err.count("\n") == 1
    assert victim.read_text() == "keep me\n"


def test_csv_refuses_a_fifo(tmp_path, capsys):
    import os

    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    assert main(["monitor", "--csv", str(fifo), "--duration", "0.1", "--fake-gpu", "2x4090"]) == 2
    assert "not a regular file" in capsys.readouterr().err


def test_a_second_monitor_on_the_same_csv_is_refused(tmp_path):
    from advisor.monitor.recorder import CsvTargetError

    path = tmp_path / "m.csv"
    first = CsvRecorder(path, 2)
    try:
        with pytest.raises(CsvTargetError, match="another advisor monitor"):
            CsvRecorder(path, 36)
        assert path.read_text().count("\n") == 1  # the first recording's header is intact
    finally:
        first.close()
    CsvRecorder(path, 1).close()  # free again once the first one ended


def test_a_full_disk_keeps_whole_rows_and_exits_2(tmp_path, capsys, monkeypatch):
    import errno
    import os

    from advisor.monitor import recorder as rec_mod

    path = tmp_path / "m.csv"
    real_open, real_write = rec_mod.open_csv_target, os.write
    state = {"fd": None, "writes": 0}

    def open_and_remember(target):
        state["fd"] = real_open(target)
        return state["fd"]

    def filling_disk(fd, data):
        if fd != state["fd"]:
            return real_write(fd, data)
        state["writes"] += 1
        if state["writes"] < 4:  # the header and two rows fit
            return real_write(fd, data)
        if state["writes"] == 4:  # half of the third row fits, then the disk is full
            real_write(fd, bytes(data)[: len(data) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(rec_mod, "open_csv_target", open_and_remember)
    monkeypatch.setattr(rec_mod.os, "write", filling_disk)
    assert main(["monitor", "--csv", str(path), "--duration", "2", "--interval", "0.1", "--fake-gpu", "2x4090"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "No space left on device" in err[-1] and "2 rows kept" in err[-1] and "Traceback" not in "".join(err)
    rows = list(csv.reader(path.open()))
    assert len(rows) == 3 and all(len(r) == len(rows[0]) for r in rows)  # no cut-short last row


def test_csv_rows_carry_wall_clock_and_the_simulated_flag():
    import csv
    import datetime as dt

    clock = FakeClock()
    buf = io.StringIO()
    sampler = Sampler(FakeGpuBackend("2x4090", clock=clock), FakeHostBackend(clock), interval_s=0.5, clock=clock,
                      wait=clock.advance, wall_clock=lambda: 1_800_000_000.25)
    rec = CsvRecorder(buf, sampler.gpu_count, simulated=True)
    sampler.add_listener(rec)
    sampler.run(max_ticks=2)
    rows = list(csv.DictReader(io.StringIO(buf.getvalue())))
    # 1_800_000_000.25 s after the epoch is 2027-01-15 08:00:00.250 UTC
    assert dt.datetime(2027, 1, 15, 8, 0, 0, 250000, tzinfo=dt.UTC).timestamp() == 1_800_000_000.25
    assert [r["wall_time_utc"] for r in rows] == ["2027-01-15T08:00:00.250Z"] * 2
    assert [r["simulated"] for r in rows] == ["1", "1"]
