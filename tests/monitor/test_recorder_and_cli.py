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
