"""The probe history under faults: only a damaged file is moved aside; busy, read-only and full keep it."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import threading

import pytest

from advisor.store import probe_history, sqlite_file
from advisor.store.probe_history import HistoryError, ProbeHistory

RESULT = {"probe": "host-bandwidth", "device": "cpu", "started_at": "2026-12-01T10:00:00+00:00", "duration_s": 1.0,
          "params": {}, "results": {"copy": {"best": 10.0e9, "unit": "B/s"}}}


def _history_with_one_run(path):
    with ProbeHistory(path) as h:
        h.add(RESULT, {"id": "abc"})
    return path.read_bytes()


def _aside(path):
    return sorted(p.name for p in path.parent.glob(path.name + ".broken-*"))


def test_a_locked_history_is_kept_and_reported(tmp_path, monkeypatch):
    path = tmp_path / "h.sqlite3"
    _history_with_one_run(path)
    monkeypatch.setattr(sqlite_file, "BUSY_TIMEOUT_S", 0.05)  # both stores open through it
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(HistoryError, match="locked"):
            ProbeHistory(path)
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert _aside(path) == [] and path.exists()
    with ProbeHistory(path) as h:
        assert len(h.list()) == 1


def test_a_busy_history_is_waited_for(tmp_path, monkeypatch):
    path = tmp_path / "h.sqlite3"
    _history_with_one_run(path)
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN EXCLUSIVE")
    release = threading.Timer(0.3, lambda: (other.execute("ROLLBACK"), other.close()))
    release.start()
    try:
        with ProbeHistory(path) as h:  # waits up to BUSY_TIMEOUT_S for the other transaction
            h.add(RESULT, {"id": "abc"})
            assert len(h.list()) == 2
    finally:
        release.join()


def test_a_read_only_history_is_read_and_a_write_refused(tmp_path, monkeypatch):
    path = tmp_path / "h.sqlite3"
    _history_with_one_run(path)
    real_connect = sqlite3.connect
    # a read-only file as SQLite sees it (root ignores chmod, so open it read-only by URI)
    monkeypatch.setattr(probe_history.sqlite3, "connect",
                        lambda p, timeout=5.0: real_connect(f"file:{p}?mode=ro", uri=True, timeout=timeout))
    with ProbeHistory(path) as h:
        assert [e.probe for e in h.list()] == ["host-bandwidth"]
        with pytest.raises(HistoryError, match="cannot write.*kept"):
            h.add(RESULT, {"id": "abc"})
    assert _aside(path) == []


def test_a_full_disk_keeps_the_history(tmp_path):
    """RLIMIT_FSIZE just above the file's size: the insert cannot grow the file (SQLite reports it full)."""
    path = tmp_path / "h.sqlite3"
    before = _history_with_one_run(path)
    code = textwrap.dedent(f"""
        import resource, sys
        from advisor.store.probe_history import HistoryError, ProbeHistory
        resource.setrlimit(resource.RLIMIT_FSIZE, ({len(before) + 4096}, resource.RLIM_INFINITY))
        h = ProbeHistory({str(path)!r})
        try:
            h.add({RESULT!r}, {{"id": "abc"}}, [{{"t": i, "pad": "x" * 1000}} for i in range(200)])
        except HistoryError as exc:
            print(exc)
            sys.exit(3)
        """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3, proc.stderr
    assert "cannot write" in proc.stdout and "Traceback" not in proc.stderr
    assert _aside(path) == []
    with ProbeHistory(path) as h:
        assert len(h.list()) == 1


def test_a_damaged_history_is_kept_aside_and_a_fresh_one_started(tmp_path, capsys):
    path = tmp_path / "h.sqlite3"
    path.write_bytes(b"this is not an sqlite database" * 100)
    with ProbeHistory(path) as h:
        assert h.list() == []
    assert len(_aside(path)) == 1
    assert "kept aside" in capsys.readouterr().err


def test_a_newer_history_is_refused_not_moved(tmp_path):
    path = tmp_path / "h.sqlite3"
    _history_with_one_run(path)
    db = sqlite3.connect(path)
    db.execute("PRAGMA user_version = 99")
    db.commit()
    db.close()
    with pytest.raises(HistoryError, match="newer advisor"):
        ProbeHistory(path)
    assert _aside(path) == []


def test_cli_history_of_a_newer_advisor_is_one_line_and_kept(run_cli, advisor_home):
    from tests.reliability.conftest import one_line_error

    path = advisor_home / "data" / "probe_history.sqlite3"
    path.parent.mkdir(parents=True)
    _history_with_one_run(path)
    db = sqlite3.connect(path)
    db.execute("PRAGMA user_version = 99")
    db.commit()
    db.close()
    line = one_line_error(run_cli("probe", "--history"))
    assert "newer advisor" in line
    assert _aside(path) == []
