"""The user's run records: an SQLite database beside the probe history (``runs.sqlite3`` in ``paths.data_dir()``).

One row per imported file *content* (the SHA-256 of its bytes is unique), so importing the same file twice
keeps one record. Each row keeps the record, the prediction the advisor made for it at import time (kept, for
plan against actual) and when it was stored. Writes are transactions (SQLite's journal makes them atomic);
a file SQLite reports as damaged is kept aside and a fresh one started, as the probe history does
(``advisor.store.probe_history``); any other failure is one ``RunStoreError`` line and the file is kept.

    with RunStore() as store:
        run_id, added = store.add(record, predicted)     # added False: that content was already stored
        for entry in store.list(): entry.id, entry.record, entry.predicted_at_import
        store.forget(run_id); store.clear()
"""

from __future__ import annotations

import datetime as _dt
import functools
import hashlib
import json
import os
import platform
import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path

from advisor import paths
from advisor.estimate.run_record import RunRecord
from advisor.runs.record import checked_record
from advisor.store.sqlite_file import open_store, why
from advisor.untrusted import plain_text

SCHEMA_VERSION = 1
FILE_NAME = "runs.sqlite3"
MAX_RUN_ID = 2**63 - 1  # SQLite's INTEGER PRIMARY KEY is a signed 64-bit integer
_WARNED: set[tuple[str, int]] = set()  # (store, row id) of the damaged rows warned about in this process

_DDL = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    content_sha256 TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    recorded_at TEXT NOT NULL,
    imported_at TEXT NOT NULL,
    record TEXT NOT NULL,
    predicted_at_import TEXT
);
CREATE INDEX IF NOT EXISTS runs_time ON runs (recorded_at);
"""


def _prediction(doc) -> dict | None:
    """A stored prediction (``runs.predict.Prediction.to_dict``) when it holds finite numbers and short
    strings, else None (a damaged one is not shown)."""
    import math

    if not isinstance(doc, dict):
        return None
    nums = [doc.get(k) for k in ("tokens_per_s", "low", "high")]
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0 for v in nums):
        return None
    if not all(isinstance(doc.get(k), str) and len(doc[k]) <= 2000 for k in ("source", "origin")):
        return None
    return {k: doc[k] for k in ("tokens_per_s", "low", "high", "source", "origin")}


class RunStoreError(RuntimeError):
    """The run store cannot be read or written as asked; one line, the file left as it was."""


@dataclass(frozen=True)
class RunEntry:
    """One stored run: its id, the record, the prediction made when it was imported (a dict or None)."""

    id: int
    record: RunRecord
    imported_at: str
    predicted_at_import: dict | None


def runs_file() -> Path:
    """Path of the run store (it may not exist yet)."""
    return paths.data_dir() / FILE_NAME


@functools.lru_cache(maxsize=1)
def this_machine_id() -> str:
    """This machine's id for run records: a short hash of its hostname, OS, CPU model, logical cores and memory.

    Read from the standard library only (the store is read by reports, which open no socket); the GPUs are left
    out, so a record keeps its machine when a card is added (the record names its own accelerator).
    """
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.lower().startswith("model name")), cpu)
    except OSError:
        pass
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        memory = None
    desc = [platform.node(), platform.system(), platform.release(), cpu, os.cpu_count(), memory]
    return hashlib.sha256(json.dumps(desc).encode()).hexdigest()[:16]


class RunStore:
    """The run store. ``create=False`` opens nothing when the file does not exist (``list`` is then empty)."""

    def __init__(self, path: str | Path | None = None, *, create: bool = True) -> None:
        self.path = Path(path) if path is not None else runs_file()
        self._db: sqlite3.Connection | None = None
        if not create and not self.path.exists():
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise RunStoreError(f"run store {self.path}: cannot create its folder: {exc.strerror or exc}") from None
        self._db = open_store(self.path, what="run store", ddl=_DDL, schema_version=SCHEMA_VERSION, table="runs",
                              error=RunStoreError)

    def close(self) -> None:
        if self._db is not None:
            self._db.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _write(self, sql: str, args=()) -> sqlite3.Cursor:
        if self._db is None:
            raise RunStoreError(f"run store {self.path}: not opened for writing")
        try:
            with self._db:
                return self._db.execute(sql, args)
        except sqlite3.DatabaseError as exc:
            raise RunStoreError(f"run store {self.path}: cannot write: {why(exc)}; nothing was stored") from None

    def _read(self, sql: str, args=()) -> list:
        if self._db is None:
            return []
        try:
            return self._db.execute(sql, args).fetchall()
        except sqlite3.DatabaseError as exc:
            raise RunStoreError(f"run store {self.path}: cannot read: {why(exc)}") from None

    def add(self, record: RunRecord, predicted: dict | None = None) -> tuple[int, bool]:
        """Store ``record`` unless a record of the same file content exists; returns ``(id, added)``."""
        return self.add_all([(record, predicted)])[0]

    def add_all(self, items) -> list[tuple[int, bool]]:
        """Store ``(record, predicted)`` pairs in one transaction (all or none); ``(id, added)`` for each, a
        record whose file content is already stored keeping the stored one."""
        if self._db is None:
            raise RunStoreError(f"run store {self.path}: not opened for writing")
        now = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
        out = []
        try:
            with self._db:
                for record, predicted in items:
                    cur = self._db.execute(
                        "INSERT OR IGNORE INTO runs (content_sha256, kind, recorded_at, imported_at, record,"
                        " predicted_at_import) VALUES (?,?,?,?,?,?)",
                        (record.content_sha256, record.kind, record.recorded_at, now, json.dumps(record.to_dict()),
                         None if predicted is None else json.dumps(predicted)))
                    if cur.rowcount:
                        out.append((int(cur.lastrowid), True))
                    else:  # that content is stored already
                        row = self._db.execute("SELECT id FROM runs WHERE content_sha256 = ?",
                                               (record.content_sha256,)).fetchone()
                        out.append((int(row[0]), False))
        except sqlite3.DatabaseError as exc:
            raise RunStoreError(f"run store {self.path}: cannot write: {why(exc)}; nothing was stored") from None
        return out

    def list(self) -> list[RunEntry]:
        """Every stored run, oldest run first; a row that no longer reads as a record is skipped with a warning."""
        out = []
        for rid, rec, imported, predicted in self._read(
                "SELECT id, record, imported_at, predicted_at_import FROM runs ORDER BY recorded_at, id"):
            try:
                record = checked_record(json.loads(rec))  # the import's schema, every field
                pred = _prediction(json.loads(predicted) if predicted else None)
                if not isinstance(imported, str):
                    raise ValueError("imported_at: not a date")
            except (ValueError, TypeError, RecursionError) as exc:
                if (str(self.path), rid) not in _WARNED:  # one warning a row, however often it is read
                    _WARNED.add((str(self.path), rid))
                    print(plain_text(f"warning: run {rid} in {self.path} cannot be read ({exc}); skipped"),
                          file=sys.stderr)
                continue
            out.append(RunEntry(int(rid), record, imported, pred))
        return out

    def forget(self, run_id: int) -> bool:
        """Delete one run; False when there is no such id (or an id no row can have: SQLite's are 64-bit)."""
        if isinstance(run_id, bool) or not isinstance(run_id, int) or not 1 <= run_id <= MAX_RUN_ID:
            return False
        return self._write("DELETE FROM runs WHERE id = ?", (run_id,)).rowcount > 0

    def clear(self) -> int:
        """Delete every run; returns how many."""
        return self._write("DELETE FROM runs").rowcount
