"""Atomic file writes and keeping broken files aside.

A save writes a temporary file in the same directory, flushes and fsyncs it, then ``os.replace``s
the target: a crash midway leaves the old file intact. A target that exists and is not a regular file
(a symlink, a FIFO, a device node, a directory) is refused: replacing it would swap a link or a device
for a file, or follow a link the user did not name.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
import time
from pathlib import Path

_KINDS = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


class UnsafeTargetError(OSError):
    """The file to write exists and is not a regular file; ``strerror`` says what it is."""


def check_target(path: str | os.PathLike) -> None:
    """Refuse a target that exists and is not a regular file (it is not followed, opened or replaced).

    Raises:
        UnsafeTargetError: naming what the target is (``a FIFO``, ``a symbolic link`` ...).
    """
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISREG(mode):
        return
    what = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    raise UnsafeTargetError(errno.EEXIST, f"it is {what}, not a regular file; give another name", str(path))


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike):
    """Yield a temporary path beside ``path`` for a writer that wants a file name (Qt's PDF writer, say);
    when the block ends without an error the file is fsynced and moved over ``path``, otherwise removed.

    Raises:
        UnsafeTargetError: when ``path`` exists and is not a regular file (see ``check_target``).
        OSError: when the directory cannot be written; the old file is then untouched.
    """
    path = Path(path)
    check_target(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        os.chmod(tmp, _mode_for(path))
        yield Path(tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_atomic(path: str | os.PathLike, data: str | bytes, encoding: str = "utf-8") -> Path:
    """Write ``data`` to ``path`` atomically (temp file + fsync + os.replace).

    Returns:
        The path written.
    Raises:
        OSError: when the directory cannot be written; the old file is then untouched.
    """
    raw = data.encode(encoding) if isinstance(data, str) else data
    with atomic_path(path) as tmp:
        tmp.write_bytes(raw)
    return Path(path)


def _mode_for(path: Path) -> int:
    """The permissions a replaced file keeps, or those a new file gets under the umask (mkstemp uses 0600)."""
    try:
        return path.stat().st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def keep_aside(path: str | os.PathLike) -> Path:
    """Move a broken file to ``<name>.broken-<timestamp>`` beside it and return the new path."""
    path = Path(path)
    target = path.with_name(f"{path.name}.broken-{time.strftime('%Y%m%d-%H%M%S')}")
    n = 1
    while target.exists():
        target = path.with_name(f"{path.name}.broken-{time.strftime('%Y%m%d-%H%M%S')}-{n}")
        n += 1
    os.replace(path, target)
    return target


LOCK_TIMEOUT_S = 30.0


@contextlib.contextmanager
def locked(path: str | os.PathLike, timeout_s: float | None = None):
    """Hold an exclusive lock for a read-modify-write of ``path`` (``<name>.lock`` beside it, by ``filelock``).

    Other processes and threads that lock the same file wait; a lock still held after ``timeout_s``
    (``LOCK_TIMEOUT_S`` by default) raises.

    Raises:
        OSError: the lock was not free in time (``errno.EBUSY``), or its file cannot be made.
    """
    import filelock

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = filelock.FileLock(str(path.with_name(path.name + ".lock")),
                             timeout=LOCK_TIMEOUT_S if timeout_s is None else timeout_s)
    try:
        lock.acquire()
    except filelock.Timeout:
        raise OSError(errno.EBUSY, "another advisor is writing this file; try again", str(path)) from None
    try:
        yield path
    finally:
        lock.release()
