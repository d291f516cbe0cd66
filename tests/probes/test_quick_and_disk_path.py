"""Host-bandwidth quick mode (the triad alone, bounded arrays) and the disk probe on a chosen folder."""

from __future__ import annotations

import json

import pytest

import advisor.probes.disk as disk
import advisor.probes.host_bandwidth as hb
from advisor.cli import main
from advisor.probes import drive, open_probe
from tests.probes.test_counting import DT, fake_timer


def test_quick_times_the_triad_alone():
    n = 4096
    r = drive(open_probe("host-bandwidth", quick=True, elements=n, reps=4, warmup_s=0.0, timer=fake_timer()))
    assert list(r.results) == ["triad"]
    assert r.results["triad"].best == pytest.approx(3 * 8 * n / DT / 1e9)
    assert any("triad only" in note for note in r.notes)


@pytest.mark.parametrize("llc, quick, expected_bytes", [
    (480 * 2**20, True, 640 * 10**6),  # a VM reporting its host's L3: capped at STREAM's 80M doubles
    (32 * 2**20, True, 256 * 10**6),
    (96 * 2**20, True, 4 * 96 * 2**20),
    (480 * 2**20, False, 4 * 480 * 2**20),
])
def test_quick_array_sizes(monkeypatch, llc, quick, expected_bytes):
    monkeypatch.setattr(hb, "last_level_cache_bytes", lambda: llc)
    assert hb.default_elements(quick, 8) == expected_bytes // 8


def test_disk_probe_on_the_given_folder(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(disk, "QUICK_FILE_MIB", 4)
    data = tmp_path / "datasets"
    data.mkdir()
    assert main(["probe", "disk", "--path", str(data), "--quick", "--json", "--no-save"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["params"]["directory"] == str(data) and doc["params"]["file_bytes"] == 4 * 2**20
    assert doc["results"]["read_1"]["best"] > 0
    assert list(data.iterdir()) == []  # the scratch file is gone


@pytest.mark.parametrize("args, message", [
    (["probe", "disk", "--path", "/nonexistent/folder"], "is not a folder"),
    (["probe", "capacity", "--path", "/tmp"], "--path is for the disk probe"),
])
def test_disk_path_errors_are_one_line(capsys, args, message):
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
