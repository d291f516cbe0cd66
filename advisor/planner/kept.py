"""What plans keep between calls, job by job: the app plans again on every keystroke, and most edits leave the job's
layouts, timings and replicas as they were (``planner.service``, ``planner.serve``).

``KeptByJob`` holds one value per job key, the least recently asked dropped first beyond its size, and keeps a value
only with the very objects it was made with (a calibration read again, another fit or utilisation model put in force
starts anew: they are held, so their ids stay theirs). The app plans in worker threads: one at a time here.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

V = TypeVar("V")


class KeptByJob(Generic[V]):
    """A bounded, locked store of ``make()`` values by job key and the identity of the objects they rest on."""

    def __init__(self, size: int, make: Callable[[], V]) -> None:
        self.size = size
        self._make = make
        self._held: OrderedDict[tuple, tuple[tuple, V]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, job: tuple, *rests_on: object) -> V:
        """The value kept for ``job`` made with ``rests_on`` (held by identity), a new one where none is."""
        key = (job, *map(id, rests_on))
        with self._lock:
            hit = self._held.get(key)
            if hit is None or any(a is not b for a, b in zip(hit[0], rests_on)):
                hit = self._held[key] = (rests_on, self._make())
                while len(self._held) > self.size:
                    self._held.popitem(last=False)
            else:
                self._held.move_to_end(key)
            return hit[1]

    def clear(self) -> None:
        """Forget every job's value (a benchmark or a test plans cold)."""
        with self._lock:
            self._held.clear()

    def __len__(self) -> int:
        return len(self._held)
