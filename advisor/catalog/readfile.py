"""Reading a file the user named, without trusting it: a regular file only, of bounded size.

A FIFO would block the reader forever, ``/dev/zero`` never ends, a multi-gigabyte file fills the memory:
``read_regular_file`` opens without blocking, checks the kind of file on the open descriptor (no race with
a rename), and reads at most ``max_bytes + 1`` bytes.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

DEFAULT_MAX_BYTES = 16 * 2**20  # scenario files, user catalogs and price lists are kilobytes


class UnreadableFile(OSError):
    """Not a regular file, or larger than allowed; ``strerror`` says which."""


def read_regular_file(path: str | os.PathLike, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """The bytes of ``path`` when it is a regular file of at most ``max_bytes``.

    Raises:
        UnreadableFile: a FIFO, device, socket or directory, or a file over ``max_bytes``.
        OSError: the file cannot be opened or read (missing, no permission).
    """
    path = Path(path)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = "a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "a device or socket"
            raise UnreadableFile(errno.EINVAL, f"not a regular file (it is {kind})", str(path))
        chunks, size = [], 0
        while size <= max_bytes:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > max_bytes:
        raise UnreadableFile(errno.EFBIG, f"larger than {max_bytes // 2**20} MiB, not a file the advisor reads",
                             str(path))
    return b"".join(chunks)
