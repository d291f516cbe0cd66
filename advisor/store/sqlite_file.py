"""Open one of the advisor's SQLite files (probe history, run store) the same way.

A file written by a newer advisor is refused (one line); a new or older file gets the schema; a file SQLite calls
damaged or not a database is kept aside (``atomic.keep_aside``, by one process: under the file's lock, and only if
it is still damaged when the lock is held) with a warning and a new one is started; any other
failure (busy, read-only, full disk) leaves the file as it is. Every error is the caller's own error class, its
message starting with what the file is ("probe history PATH: ...").
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

from advisor.store.atomic import keep_aside, locked

BUSY_TIMEOUT_S = 10.0
_SQLITE_CORRUPT, _SQLITE_NOTADB = 11, 26  # sqlite3.h primary result codes


def is_corrupt(exc: sqlite3.DatabaseError) -> bool:
    """Whether SQLite says the file is damaged or not a database (not: busy, read-only, full, I/O error)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (_SQLITE_CORRUPT, _SQLITE_NOTADB)
    text = str(exc).lower()  # Python 3.10 has no error codes on the exception
    return "not a database" in text or "malformed" in text


def why(exc: BaseException) -> str:
    """An exception as one line."""
    return " ".join(str(exc).split()) or type(exc).__name__


def open_store(path: Path, *, what: str, ddl: str, schema_version: int, table: str,
               error: type[Exception]) -> sqlite3.Connection:
    """A connection to the SQLite file at ``path`` with ``ddl``'s schema at ``schema_version``.

    Args:
        what: the file in words, for messages (``"probe history"``).
        table: a table read on opening, so a damaged file shows at once.
        error: the exception raised for a file that cannot be used.
    Raises:
        error: a file from a newer advisor, or one that cannot be opened (kept as it is).
    """
    try:
        return _connect(path, what, ddl, schema_version, table, error)
    except sqlite3.DatabaseError as exc:
        if not is_corrupt(exc):
            raise error(f"{what} {path}: {why(exc)}; the file is kept as it is") from None
    # One mover: under the file's lock, look again (another process may have moved it aside and started a
    # fresh file meanwhile); only a file still damaged is moved, by the process holding the lock.
    try:
        with locked(path):
            try:
                return _connect(path, what, ddl, schema_version, table, error)
            except sqlite3.DatabaseError as exc:
                if not is_corrupt(exc):
                    raise error(f"{what} {path}: {why(exc)}; the file is kept as it is") from None
                aside = keep_aside(path)
                print(f"warning: unreadable {what} kept aside as {aside} ({why(exc)})", file=sys.stderr)
            try:
                return _connect(path, what, ddl, schema_version, table, error)
            except sqlite3.DatabaseError as again:
                raise error(f"{what} {path}: {why(again)}") from None
    except OSError as exc:  # the lock could not be taken, or the file could not be moved
        raise error(f"{what} {path}: damaged, and cannot be kept aside: {exc.strerror or exc}") from None


def _connect(path: Path, what: str, ddl: str, schema_version: int, table: str, error) -> sqlite3.Connection:
    db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S)
    try:
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version > schema_version:
            raise error(f"{what} {path}: written by a newer advisor (schema {version}, this one reads "
                        f"{schema_version}); upgrade to read it")
        if version < schema_version:  # a new file (or an old schema): the only case that needs a write
            db.executescript(ddl)
            db.execute(f"PRAGMA user_version = {schema_version}")
            db.commit()
        else:
            db.execute(f"SELECT count(*) FROM {table}").fetchone()  # reads the pages: a damaged file shows here
    except BaseException:
        db.close()
        raise
    return db
