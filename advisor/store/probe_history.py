"""Probe history: every result with the machine's fingerprint, parameters, time and clock/power samples.

An SQLite database ``probe_history.sqlite3`` in ``paths.data_dir()``. The schema version is SQLite's
``user_version``. Only a file SQLite reports as corrupt or not a database is kept aside (and a fresh one
started); a busy database is waited for (``BUSY_TIMEOUT_S``), a read-only one is read, and a failure to
write (read-only, full disk, still locked) raises ``HistoryError`` with one line and keeps the file.

    from advisor.store.probe_history import ProbeHistory
    with ProbeHistory() as h:
        run_id = h.add(result_doc, fingerprint, samples)
        for entry in h.list(probe="host-bandwidth", limit=20): ...
        h.compare(a_id, b_id)    # kernel -> (best a, best b, ratio, each run's mode)
    Each run is labelled ``quick`` or ``full`` (``HistoryEntry.mode``, ``list(mode=...)``).
"""

from __future__ import annotations

import datetime as _dt
import json
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor import paths
from advisor.probes._types import KernelResult, impossible_reason
from advisor.probes.labels import run_mode
from advisor.store.sqlite_file import open_store, why

SCHEMA_VERSION = 1
FILE_NAME = "probe_history.sqlite3"

# SQLite's primary result codes for a damaged file (https://www.sqlite.org/rescode.html).


class HistoryError(RuntimeError):
    """The history cannot be read or written as asked (locked, read-only, full disk, newer schema); one line.

    The database file is left as it was.
    """


_DDL = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    probe TEXT NOT NULL,
    device TEXT NOT NULL,
    started_at TEXT NOT NULL,
    recorded_at TEXT NOT NULL,
    duration_s REAL,
    fingerprint_id TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    params TEXT NOT NULL,
    result TEXT NOT NULL,
    samples TEXT NOT NULL,
    skipped TEXT
);
CREATE INDEX IF NOT EXISTS runs_probe ON runs (probe, started_at);
CREATE INDEX IF NOT EXISTS runs_machine ON runs (fingerprint_id, started_at);
"""


@dataclass(frozen=True)
class HistoryEntry:
    """One stored probe run.

    Attributes:
        id: row id (use it to compare or delete).
        probe, device: what was measured.
        started_at: ISO time the probe started; recorded_at: when it was stored.
        duration_s: the probe's wall time.
        fingerprint: the machine description (``fingerprint["id"]`` is its short hash).
        params: the probe's parameters.
        result: the ``advisor.probe/1`` document.
        samples: clock/power/temperature readings taken during the run.
        skipped: the skip reason, or None.
    """

    id: int
    probe: str
    device: str
    started_at: str
    recorded_at: str
    duration_s: float | None
    fingerprint: Mapping[str, Any]
    params: Mapping[str, Any]
    result: Mapping[str, Any]
    samples: Sequence[Mapping[str, Any]]
    skipped: str | None

    @property
    def mode(self) -> str:
        """``quick`` or ``full``: how the probe ran (``labels.run_mode``); the two are not comparable."""
        return run_mode(self.params or self.result.get("params"))

    def best(self) -> dict[str, tuple[float, str]]:
        """Kernel -> (headline figure, unit), without the figures that cannot be true (a utilisation above 100 %,
        a rate above the device's peak: ``_types.refuse_impossible``; an older version may have stored them)."""
        out = {}
        for name, v in (self.result.get("results") or {}).items():
            k = KernelResult(best=v["best"], median=v.get("median", v["best"]), unit=v["unit"],
                             fraction_of_peak=v.get("fraction_of_peak"))
            if impossible_reason(name, k) is None:
                out[name] = (k.best, k.unit)
        return out

    def to_dict(self) -> dict:
        return {"id": self.id, "probe": self.probe, "device": self.device, "mode": self.mode,
                "started_at": self.started_at,
                "recorded_at": self.recorded_at, "duration_s": self.duration_s, "fingerprint": dict(self.fingerprint),
                "params": dict(self.params), "result": dict(self.result), "samples": list(self.samples),
                "skipped": self.skipped}


def history_file() -> Path:
    """Path of the history database (it may not exist yet)."""
    return paths.data_dir() / FILE_NAME


class ProbeHistory:
    """The probe history database. Open, use, close (or use as a context manager)."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else history_file()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise HistoryError(f"probe history {self.path}: cannot create its folder: {exc.strerror or exc}") from None
        self._db = self._open()

    def _open(self) -> sqlite3.Connection:
        return open_store(self.path, what="probe history", ddl=_DDL, schema_version=SCHEMA_VERSION, table="runs",
                          error=HistoryError)

    def _write(self, sql: str, args=()) -> sqlite3.Cursor:
        """Run one writing statement in a transaction; any failure is a ``HistoryError`` (file kept)."""
        try:
            with self._db:
                return self._db.execute(sql, args)
        except sqlite3.DatabaseError as exc:
            raise HistoryError(f"probe history {self.path}: cannot write: {why(exc)}; nothing was recorded "
                               "and the file is kept as it is") from None

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> ProbeHistory:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def add(self, result: Mapping[str, Any], fingerprint: Mapping[str, Any],
            samples: Sequence[Mapping[str, Any]] = ()) -> int:
        """Store one ``advisor.probe/1`` document; returns its id."""
        recorded = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
        cur = self._write(
            "INSERT INTO runs (probe, device, started_at, recorded_at, duration_s, fingerprint_id, fingerprint,"
            " params, result, samples, skipped) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (result["probe"], result["device"], result.get("started_at") or recorded, recorded,
             result.get("duration_s"), str(fingerprint.get("id", "")), json.dumps(dict(fingerprint)),
             json.dumps(result.get("params") or {}), json.dumps(dict(result)),
             json.dumps(list(samples)), result.get("skipped")))
        return int(cur.lastrowid)

    def list(self, probe: str | None = None, device: str | None = None, fingerprint_id: str | None = None,
             limit: int = 50, mode: str | None = None) -> list[HistoryEntry]:
        """Stored runs, newest first, optionally filtered (``mode``: ``quick`` or ``full`` runs only)."""
        where, args = [], []
        for col, val in (("probe", probe), ("device", device), ("fingerprint_id", fingerprint_id)):
            if val is not None:
                where.append(f"{col} = ?")
                args.append(val)
        if mode is not None:
            if mode not in ("quick", "full"):
                raise ValueError(f"mode must be quick or full, not {mode!r}")
            where.append("coalesce(json_extract(params, '$.quick'), 0) = ?")
            args.append(1 if mode == "quick" else 0)
        sql = "SELECT * FROM runs" + (" WHERE " + " AND ".join(where) if where else "")
        sql += " ORDER BY started_at DESC, id DESC LIMIT ?"
        return [self._entry(row) for row in self._read(sql, (*args, int(limit)))]

    def get(self, run_id: int) -> HistoryEntry | None:
        """The run of this id, or None (also for an id SQLite cannot hold, such as a 23-digit one)."""
        if not _storable(run_id):
            return None
        rows = self._read("SELECT * FROM runs WHERE id = ?", (int(run_id),))
        row = rows[0] if rows else None
        return None if row is None else self._entry(row)

    def _read(self, sql: str, args=()) -> list:
        try:
            return self._db.execute(sql, args).fetchall()
        except sqlite3.DatabaseError as exc:
            raise HistoryError(f"probe history {self.path}: cannot read: {why(exc)}") from None

    def delete(self, run_id: int) -> bool:
        if not _storable(run_id):
            return False
        return self._write("DELETE FROM runs WHERE id = ?", (int(run_id),)).rowcount > 0

    def clear(self) -> int:
        """Delete every run; returns how many."""
        return self._write("DELETE FROM runs").rowcount

    def compare(self, a_id: int, b_id: int) -> dict[str, dict[str, Any]]:
        """Kernel -> {"a", "b", "unit", "ratio" (b/a)} for the kernels both runs measured.

        Raises:
            KeyError: either run does not exist.
        """
        a, b = self.get(a_id), self.get(b_id)
        if a is None or b is None:
            raise KeyError(f"no such run: {a_id if a is None else b_id}")
        ka, kb = a.best(), b.best()
        out = {}
        for kernel in ka.keys() & kb.keys():
            (va, unit), (vb, _) = ka[kernel], kb[kernel]
            out[kernel] = {"a": va, "b": vb, "unit": unit, "ratio": vb / va if va else None,
                           "mode_a": a.mode, "mode_b": b.mode}
        return dict(sorted(out.items()))

    @staticmethod
    def _entry(row) -> HistoryEntry:
        (rid, probe, device, started, recorded, duration, _fid, fp, params, result, samples, skipped) = row
        return HistoryEntry(id=rid, probe=probe, device=device, started_at=started, recorded_at=recorded,
                            duration_s=duration, fingerprint=json.loads(fp), params=json.loads(params),
                            result=json.loads(result), samples=json.loads(samples), skipped=skipped)


def _storable(run_id) -> bool:
    """Whether ``run_id`` fits SQLite's 64-bit INTEGER (the ids are its rowids: 1 and up)."""
    return isinstance(run_id, int) and not isinstance(run_id, bool) and 0 < run_id < 2**63
