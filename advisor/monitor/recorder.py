"""Record monitor samples to CSV (``advisor monitor --csv``; columns in ``columns.csv_columns``).

Rows are written and flushed as they come, so an interrupted recording keeps what it has. Figures that
are not available are empty cells. A path target is opened safely: a symbolic link or anything but a
regular file is refused (the recording would overwrite what the link points to, or replace a device),
the file is locked so that a second monitor on the same file is refused instead of interleaving rows,
and a write that fails (a full disk) is cut back to the last whole row and reported in ``error``.
"""

from __future__ import annotations

import csv
import io
import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path

from advisor.monitor.columns import csv_columns, gpu_values, host_values, stamp_values
from advisor.monitor.sampler import MonitorSample

try:
    import fcntl
except ImportError:  # Windows: no advisory lock; the symlink and regular-file checks still apply
    fcntl = None


class CsvTargetError(ValueError):
    """The CSV target cannot be used; the message is one line naming the file and why."""


def format_cell(value) -> str:
    """'' for None, text as it is, integers as integers, other numbers with at most 4 decimals."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int):
        return str(value)
    if value != value:  # NaN
        return ""
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.4f}".rstrip("0").rstrip(".")


def open_csv_target(path: str | Path) -> int:
    """Open ``path`` for a new recording: a descriptor of a regular file, locked and emptied.

    Raises:
        CsvTargetError: a symbolic link, not a regular file, held by another monitor, or not writable.
    """
    name = str(path)
    try:
        st = os.lstat(name)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise CsvTargetError(f"cannot write {name!r}: {exc.strerror or exc}") from None
    if st is not None and stat.S_ISLNK(st.st_mode):
        raise CsvTargetError(f"{name!r} is a symbolic link: refusing to write through it (give the real path)")
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise CsvTargetError(f"{name!r} is not a regular file: refusing to replace it")
    flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(name, flags, 0o644)
    except OSError as exc:
        raise CsvTargetError(f"cannot write {name!r}: {exc.strerror or exc}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise CsvTargetError(f"{name!r} is not a regular file: refusing to replace it")
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                raise CsvTargetError(f"{name!r} is being recorded by another advisor monitor: "
                                     "choose another file") from None
        os.ftruncate(fd, 0)
    except BaseException:
        os.close(fd)
        raise
    return fd


class CsvRecorder:
    """A sampler listener that appends one CSV row per sample.

    Args:
        target: a path (opened with ``open_csv_target``: regular file, no symlink, locked, emptied) or an
            open text file.
        gpu_count: number of GPUs, which fixes the columns.
        on_error: called once, on the sampler thread, when a write fails (the CLI stops the sampler).
        simulated: the GPUs are simulated (``--fake-gpu``): every row says so in its ``simulated`` cell.
    Raises:
        CsvTargetError: the path cannot be used (see ``open_csv_target``), or the header cannot be written.
    """

    def __init__(self, target: str | Path | io.TextIOBase, gpu_count: int,
                 on_error: Callable[[str], None] | None = None, simulated: bool = False) -> None:
        self._simulated = simulated
        self._own = not hasattr(target, "write")
        self._name = str(target) if self._own else getattr(target, "name", "the CSV file")
        self._fd = open_csv_target(target) if self._own else None
        self._file = None if self._own else target
        self._lock = threading.Lock()
        self._size = 0  # bytes of whole rows written
        self._on_error = on_error
        self.error: str | None = None
        self.rows = 0
        if not self._write_row(csv_columns(gpu_count)):
            self.close()
            raise CsvTargetError(self.error)

    def _write_row(self, values) -> bool:
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerow(values)
        text = buf.getvalue()
        if self._fd is None:
            self._file.write(text)
            self._file.flush()
            return True
        data = text.encode("utf-8")
        try:
            view = memoryview(data)
            while view:
                n = os.write(self._fd, view)
                view = view[n:]
        except OSError as exc:
            try:
                os.ftruncate(self._fd, self._size)  # no cut-short row: back to the last whole one
                os.lseek(self._fd, self._size, os.SEEK_SET)
            except OSError:
                pass
            self.error = f"cannot write {self._name!r}: {exc.strerror or exc}; {self.rows} rows kept"
            return False
        self._size += len(data)
        return True

    def __call__(self, sample: MonitorSample) -> None:
        values = (stamp_values(sample.time_s, sample.wall_time_s, self._simulated) + host_values(sample.host)
                  + gpu_values(sample.gpus))
        with self._lock:
            if self.error is not None or (self._fd is None and self._file.closed) or (self._own and self._fd == -1):
                return
            if self._write_row([format_cell(v) for v in values]):
                self.rows += 1
                return
        if self._on_error is not None:
            self._on_error(self.error)

    def close(self) -> None:
        """Close the file if the recorder opened it (the lock goes with it)."""
        with self._lock:
            if self._own and self._fd not in (None, -1):
                os.close(self._fd)
                self._fd = -1
