"""The books in ``advisor monitor``: --once --json, the processes CSV beside --csv, --pid with --save/--save-run."""

from __future__ import annotations

import csv
import json

import pytest

from advisor.cli import main
from advisor.hw.fake import OWN_PID_BASE


def test_once_json_processes_carry_their_books(capsys):
    assert main(["monitor", "--once", "--json", "--fake-gpu", "2x4090", "--usd-per-kwh", "0.5"]) == 0
    procs = json.loads(capsys.readouterr().out)["processes"]
    assert procs
    for p in procs:
        for key in ("gpu_hours", "energy_j", "cost_usd", "peak_gpu_mem_bytes"):
            assert key in p
        # two readings 0.25 s (plus the sampling) apart: a fraction of a second, priced at 0.5 $/kWh
        assert 0 < p["gpu_hours"] < 10 / 3600
        assert p["cost_usd"] == pytest.approx(p["energy_j"] / 3.6e6 * 0.5)
        assert p["peak_gpu_mem_bytes"] == p["gpu_mem_bytes"]
    ours = [p for p in procs if p["pid"] == OWN_PID_BASE]
    assert ours and ours[0]["energy_j"] > 0


def test_csv_recording_writes_the_process_books_beside_it(tmp_path, capsys):
    out = tmp_path / "m.csv"
    assert main(["monitor", "--duration", "0.6", "--interval", "0.2", "--csv", str(out), "--fake-gpu", "2x4090"]) == 0
    books = tmp_path / "m.processes.csv"
    rows = list(csv.DictReader(books.open()))
    assert {int(r["pid"]) for r in rows} >= {OWN_PID_BASE, OWN_PID_BASE + 1}
    assert all(float(r["gpu_hours"]) > 0 and r["ended"] == "1" for r in rows if r["pid"] != "4190000")
    assert "process books" in capsys.readouterr().err


def test_pid_follows_one_job_and_keeps_it_as_a_run(tmp_path, capsys):
    job = tmp_path / "job.json"
    assert main(["monitor", "--pid", str(OWN_PID_BASE + 1), "--duration", "0.6", "--interval", "0.2",
                 "--fake-gpu", "2x4090", "--tokens", "1000", "--save", str(job), "--save-run"]) == 0
    out = capsys.readouterr()
    assert out.out.startswith("still running: python: ") and "GPU-h" in out.out and "peak 3.2 GB" in out.out
    doc = json.loads(job.read_text())
    assert doc["schema"] == "advisor.job/1" and doc["pid"] == OWN_PID_BASE + 1 and doc["tokens"] == 1000
    assert doc["gpus"][0]["catalog_id"] == "rtx-4090" and doc["simulated"] is True and doc["energy_j"] > 0
    assert main(["runs", "--json"]) == 0
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert len(runs) == 1 and runs[0]["kind"] == "monitor" and runs[0]["measured"]["energy_j"] == doc["energy_j"]
    assert main(["runs", "import", str(job)]) == 0  # the saved file reads as the same job
    assert main(["monitor", "--pid", "1", "--fake-gpu", "2x4090", "--duration", "0.1"]) == 2
    assert "no running process 1" in capsys.readouterr().err
    assert main(["monitor", "--save", str(job), "--duration", "0.1"]) == 2


def test_pid_with_a_trainer_state_records_the_model_and_its_tokens(tmp_path, capsys):
    from pathlib import Path

    state = Path(__file__).parents[1] / "runs" / "fixtures" / "hf-trainer" / "small-4x256" / "trainer_state.json"
    job = tmp_path / "job.json"
    assert main(["monitor", "--pid", str(OWN_PID_BASE), "--duration", "0.4", "--interval", "0.2", "--fake-gpu",
                 "2x4090", "--trainer-state", str(state), "--save", str(job)]) == 0
    doc = json.loads(job.read_text())
    assert doc["tokens"] == 24576 and doc["seq_len"] == 256 and doc["layers"] == 4 and doc["precision"] == "fp32"
    assert main(["runs", "import", str(job)]) == 0
    assert "never learned from" in capsys.readouterr().out  # simulated GPUs
    bad = tmp_path / "state.json"
    bad.write_text("{}")
    assert main(["monitor", "--pid", str(OWN_PID_BASE), "--duration", "0.2", "--fake-gpu", "2x4090",
                 "--trainer-state", str(bad)]) == 2
