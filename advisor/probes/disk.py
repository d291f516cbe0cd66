"""Disk read throughput that measures the disk, not the page cache.

Method (docs/method.md, after fio): a scratch file is written once, flushed and dropped from the page cache;
then it is read in 1 MiB blocks with direct I/O (``O_DIRECT``, aligned buffers) by one reader and by
several readers on separate regions. Where direct I/O is refused (tmpfs, some file systems) the file's
pages are evicted with ``posix_fadvise(DONTNEED)`` before each pass and the result says so.
The scratch file is removed afterwards, also on failure.
"""

from __future__ import annotations

import mmap
import os
import threading
import time
from pathlib import Path

from advisor import paths
from advisor.probes._common import GB, probe
from advisor.probes._types import CancelToken, KernelResult, ProbeResult, ProbeSkipped, Progress

NAME = "disk"
BLOCK = 1 << 20
SYNC_EVERY = 64 << 20
QUICK_FILE_MIB, FULL_FILE_MIB = 256, 2048  # scratch file sizes


def _write_file(path: Path, size: int, cancel: CancelToken):
    """Write ``size`` bytes of random data; yields the fraction written."""
    chunk = os.urandom(BLOCK) * 8  # 8 MiB of incompressible data, reused
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        done = synced = 0
        while done < size:
            cancel.check()
            n = os.write(fd, chunk[:min(len(chunk), size - done)])
            done += n
            if done - synced >= SYNC_EVERY:  # short flushes keep each step (and a cancel) well under a second
                getattr(os, "fdatasync", os.fsync)(fd)
                synced = done
            yield done / size
        os.fsync(fd)
        _drop_cache(fd, size)
    finally:
        os.close(fd)


def _drop_cache(fd: int, size: int) -> None:
    if hasattr(os, "posix_fadvise"):
        os.posix_fadvise(fd, 0, size, os.POSIX_FADV_DONTNEED)


def _open_reader(path: Path, direct: bool) -> int:
    flags = os.O_RDONLY | (getattr(os, "O_DIRECT", 0) if direct else 0)
    return os.open(path, flags)


def _direct_io_works(path: Path) -> bool:
    if not hasattr(os, "O_DIRECT"):
        return False
    try:
        fd = _open_reader(path, True)
    except OSError:
        return False
    buf = mmap.mmap(-1, BLOCK)
    try:
        return os.preadv(fd, [buf], 0) > 0
    except OSError:
        return False
    finally:
        buf.close()
        os.close(fd)


def _read_pass(path: Path, size: int, readers: int, direct: bool, cancel: CancelToken) -> float:
    """Read the whole file with ``readers`` threads on separate regions; returns seconds."""
    if not direct:
        fd = os.open(path, os.O_RDONLY)
        try:
            _drop_cache(fd, size)
        finally:
            os.close(fd)
    blocks = size // BLOCK
    per = -(-blocks // readers)
    errors: list[BaseException] = []

    def work(first: int, last: int) -> None:
        fd = _open_reader(path, direct)
        buf = mmap.mmap(-1, BLOCK)  # page aligned, as O_DIRECT needs
        try:
            for b in range(first, last):
                if cancel.cancelled:
                    return
                os.preadv(fd, [buf], b * BLOCK)
        except BaseException as exc:  # noqa: BLE001 - reported by the caller
            errors.append(exc)
        finally:
            buf.close()
            os.close(fd)

    threads = [threading.Thread(target=work, args=(i * per, min(blocks, (i + 1) * per)), name=f"disk-reader-{i}")
               for i in range(readers)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    cancel.check()
    if errors:
        raise errors[0]
    return elapsed


@probe(NAME)
def run(device: str = "cpu", quick: bool = False, cancel: CancelToken | None = None, *,
        directory: str | None = None, file_bytes: int | None = None, readers: int = 4, passes: int | None = None):
    """Measure sequential read throughput with one reader and with ``readers`` readers.

    Args:
        directory: where to put the scratch file, i.e. the disk measured (``advisor probe disk --path DIR``;
            default: the advisor's cache directory).
        file_bytes: scratch file size (default 256 MiB quick, 2 GiB full; a multiple of 1 MiB).
        readers: threads of the multi-reader pass.
        passes: passes per reader count (default 1 quick, 3 full).
    Returns:
        ProbeResult with ``read_1`` and ``read_<readers>`` in GB/s.
    """
    if device != "cpu":
        raise ProbeSkipped("the disk probe measures the host's disk: use --device cpu")
    where = Path(directory) if directory else paths.cache_dir(create=True)
    where.mkdir(parents=True, exist_ok=True)
    size = int(file_bytes or (QUICK_FILE_MIB if quick else FULL_FILE_MIB) * BLOCK) // BLOCK * BLOCK
    if size < BLOCK:
        raise ValueError("file_bytes must be at least 1 MiB")
    free = os.statvfs(where).f_bavail * os.statvfs(where).f_frsize
    if free < 2 * size:
        raise ProbeSkipped(f"not enough free disk space in {where} for a {size / GB:.2f} GB scratch file "
                           f"({free / GB:.2f} GB free)")
    passes = int(passes or (1 if quick else 3))
    path = where / f"advisor-disk-probe-{os.getpid()}.bin"
    try:
        for frac in _write_file(path, size, cancel):
            yield Progress(0.3 * frac, f"writing a {size / 1e6:.0f} MB scratch file")
        direct = _direct_io_works(path)
        results = {}
        counts = [1, int(readers)] if readers > 1 else [1]
        for ci, n in enumerate(counts):
            times = []
            for p in range(passes):
                yield Progress(0.3 + 0.7 * (ci * passes + p) / (len(counts) * passes),
                               f"reading with {n} reader{'s' if n > 1 else ''}, pass {p + 1}/{passes}")
                times.append(_read_pass(path, size, n, direct, cancel))
            rates = sorted(size / t / GB for t in times)
            results[f"read_{n}"] = KernelResult(best=rates[-1], median=rates[len(rates) // 2], unit="GB/s",
                                                worst=rates[0], repetitions=len(rates), extra={"readers": n})
    finally:
        try:
            path.unlink()
        except FileNotFoundError:
            pass
    method = "direct I/O (O_DIRECT), 1 MiB blocks" if direct else "buffered reads after posix_fadvise(DONTNEED)"
    notes = [f"{method}; decimal GB/s"]
    if not direct:
        notes.append("direct I/O refused here: the page cache may still serve part of the reads")
    return ProbeResult(probe=NAME, device=device, results=results,
                       params={"quick": quick, "file_bytes": size, "block_bytes": BLOCK, "readers": int(readers),
                               "passes": passes, "directory": str(where), "direct_io": direct},
                       notes=tuple(notes))
