"""The monitor's bookkeeper: a sampler listener that keeps ``accounting.Books`` of every GPU process.

    keeper = BookKeeper(sampler, usd_per_kwh=0.30, on_end=print_summary)
    sampler.add_listener(keeper)          # before any listener that shows the books
    keeper.current()                      # {(pid, gpu): ProcessBooks} of the running processes
    keeper.finish()                       # the monitor stops: every process's books, each closed once

``on_end(books)`` is called with one process's merged books (all its GPUs) when it ends, on the sampler
thread; keep it quick. A process is one PID with one start time: a reused PID is another process, with books
of its own. Also ``write_processes_csv(path, books)`` writes the books as a CSV table, each text cell guarded
against spreadsheet formulas (``units.csv_safe``).
"""

from __future__ import annotations

import csv
import threading
from collections.abc import Callable
from pathlib import Path

from advisor.monitor.accounting import Books, ProcessBooks, merge, process_key
from advisor.store.atomic import write_atomic
from advisor.units import csv_safe

BOOK_FIELDS = ("gpu_hours", "energy_j", "cost_usd", "peak_gpu_mem_bytes", "mean_util_pct")
CSV_COLUMNS = ("pid", "name", "gpus", "first_seen_s", "last_seen_s", "ended", *BOOK_FIELDS)


class BookKeeper:
    """Feeds every sample and the sampler's process snapshot into ``Books``."""

    def __init__(self, sampler, usd_per_kwh: float, on_end: Callable[[ProcessBooks], object] | None = None) -> None:
        self.sampler = sampler  # may be set later (before the first sample), for a sampler built after the keeper
        self.books = Books(usd_per_kwh)
        self.on_end = on_end
        self.ended: list[ProcessBooks] = []  # merged books of every process that ended, oldest first
        self._lock = threading.Lock()

    def __call__(self, sample) -> None:
        with self._lock:
            done = self.books.update(sample.time_s, sample.gpus, self.sampler.processes())
            done = self._merge_by_pid(done)
            self.ended.extend(done)
        for b in done:
            if self.on_end is not None:
                self.on_end(b)

    @staticmethod
    def _merge_by_pid(books: list[ProcessBooks]) -> list[ProcessBooks]:
        groups: dict[tuple, list[ProcessBooks]] = {}
        for b in books:
            groups.setdefault(process_key(b), []).append(b)
        return [merge(g) for g in groups.values()]

    def current(self) -> dict:
        """``{(pid, gpu): ProcessBooks}`` of the running processes, as of the last sample: built when asked (the
        Monitor page asks once a second), not on every tick (at 10 Hz with 16 GPUs that was 5 % of a sampler
        tick in a profile)."""
        with self._lock:
            return self.books.current()

    def of(self, pid: int, started_s: float | None = None) -> ProcessBooks | None:
        with self._lock:
            return self.books.of(pid, started_s)

    def finish(self) -> list[ProcessBooks]:
        """Close every open account and return the books of every process seen, oldest end first: those that
        ended while the monitor ran and those it closed now, each once (a second call closes nothing more)."""
        with self._lock:
            done = self._merge_by_pid(self.books.close())
            self.ended.extend(done)
            return list(self.ended)


def book_values(b: ProcessBooks | None) -> dict:
    """The book fields of a process for ``advisor.monitor/1`` (None where the monitor has no books)."""
    return {f: (None if b is None else getattr(b, f)) for f in BOOK_FIELDS}


def write_processes_csv(path: str | Path, books: list[ProcessBooks]) -> None:
    """The books as a CSV table (one row per process), written atomically."""
    import io

    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(CSV_COLUMNS)
    for b in books:
        w.writerow([b.pid, csv_safe(b.name or ""), " ".join(map(str, b.gpus)), f"{b.first_seen_s:.3f}", f"{b.last_seen_s:.3f}",
                    int(b.ended), f"{b.gpu_hours:.6f}", f"{b.energy_j:.3f}", f"{b.cost_usd:.6f}",
                    "" if b.peak_gpu_mem_bytes is None else b.peak_gpu_mem_bytes,
                    "" if b.mean_util_pct is None else f"{b.mean_util_pct:.2f}"])
    write_atomic(Path(path), buf.getvalue())
