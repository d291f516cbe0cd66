"""Bounded ring buffers of monitor metrics, one per metric, with windows by time.

One ``History`` holds a time column and one float column per metric (NaN where a figure was not
available), each a preallocated numpy array of ``capacity`` slots: memory is fixed at creation, so a
monitor left running for days stays flat. Reads copy under a lock, so the GUI thread never sees a
half-written row.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Sequence

import numpy as np

DEFAULT_CAPACITY = 3600  # an hour at 1 Hz


class History:
    """Fixed-size history of named metrics.

    Args:
        metrics: metric names in the order ``append`` receives their values.
        capacity: slots per metric; the oldest rows are overwritten once full.
    """

    def __init__(self, metrics: Sequence[str], capacity: int = DEFAULT_CAPACITY) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self._metrics = tuple(metrics)
        self._index = {m: i for i, m in enumerate(self._metrics)}
        self._capacity = int(capacity)
        self._times = np.full(self._capacity, np.nan)
        self._values = np.full((len(self._metrics), self._capacity), np.nan)
        self._count = 0  # rows ever appended
        self._lock = threading.Lock()

    @property
    def metrics(self) -> tuple[str, ...]:
        return self._metrics

    @property
    def capacity(self) -> int:
        return self._capacity

    def __len__(self) -> int:
        return min(self._count, self._capacity)

    def __contains__(self, metric: object) -> bool:
        return metric in self._index

    def append(self, time_s: float, values: Iterable[float | None]) -> None:
        """Add one row; ``values`` follow ``metrics`` (None becomes NaN). Times must not go backwards."""
        row = values if isinstance(values, tuple | list) else tuple(values)
        if len(row) != len(self._metrics):
            raise ValueError(f"expected {len(self._metrics)} values, got {len(row)}")
        with self._lock:
            slot = self._count % self._capacity
            # numpy converts the row as float() would, None to NaN, in one pass (a Python list of floats first
            # cost half as much again: 9.1 -> 5.9 us a row of 219 metrics, 16 GPUs and 2 cores)
            self._values[:, slot] = row
            self._times[slot] = time_s
            self._count += 1

    def clear(self) -> None:
        """Forget every row (capacity and metrics stay)."""
        with self._lock:
            self._count = 0
            self._times.fill(np.nan)
            self._values.fill(np.nan)

    def _window_slots(self, seconds: float | None) -> tuple[slice, ...]:
        """The slots of the last ``seconds`` (all kept rows when None), oldest first: one slice, or two when the
        window wraps around the ring. Found by bisection on the times in place (they rise in ring order), so a
        window costs what it holds, not the capacity: a minute's chart at 10 Hz reads 600 rows of 36,000."""
        n = len(self)
        if self._count <= self._capacity:
            runs = (slice(0, n),)
        else:
            start = self._count % self._capacity
            runs = (slice(start, self._capacity), slice(0, start))
        if seconds is None or n == 0:
            return runs
        newest = self._times[(self._count - 1) % self._capacity]
        threshold = newest - seconds - 1e-9
        for k, run in enumerate(runs):
            seg = self._times[run]
            if len(seg) and seg[-1] >= threshold:  # the window starts in this run
                first = run.start + int(np.searchsorted(seg, threshold, side="left"))
                return (slice(first, run.stop),) + runs[k + 1:]
        return (slice(0, 0),)

    def window(self, metric: str, seconds: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Times and values of one metric, oldest first, for the last ``seconds`` (all kept rows when None).

        The window ends at the newest row and includes rows exactly ``seconds`` older.
        Raises:
            KeyError: unknown metric.
        """
        times, values = self.windows((metric,), seconds)
        return times, values[0]

    def windows(self, metrics: Sequence[str], seconds: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Times and the values of several metrics (one row each, in the order given) over the last ``seconds``,
        read at one moment: every row on the same times. A chart reads its curves so, and a CSV its columns
        (read one by one, a row appended between two reads shifts one metric against the others).

        Raises:
            KeyError: unknown metric.
        """
        rows = [self._index[m] for m in metrics]
        with self._lock:
            slots = self._window_slots(seconds)
            times = np.concatenate([self._times[s] for s in slots])  # copies: the ring moves on after the lock
            values = np.concatenate([self._values[rows, s] for s in slots], axis=1)
        return times, values

    def latest(self, metric: str) -> float | None:
        """The newest value of a metric, None when there is none or it was not available."""
        row = self._index[metric]
        with self._lock:
            if self._count == 0:
                return None
            value = self._values[row, (self._count - 1) % self._capacity]
        return None if math.isnan(value) else float(value)
