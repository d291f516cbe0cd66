"""Driver calls with a deadline: one worker thread per GPU, so a hung call stalls only its own GPU.

A driver call can block for seconds or for ever (an NVML query to a GPU that is falling off the bus, a
wedged firmware). The sampler hands each GPU's reads to that GPU's ``DeviceCaller`` and waits at most
``timeout_s``; past it the GPU is "not responding" and is not asked again until the hung call returns,
while the other GPUs keep their schedule. Threads are daemons and end after a few idle seconds.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable

IDLE_EXIT_S = 5.0


class _Pending:
    """One call's result. ``done`` is a lock taken at creation and released when the call has finished: waiting
    on it is one C-level acquire (a ``threading.Event`` waits and sets through a Python ``Condition``, which
    cost more than the call itself for a GPU read at 10 Hz on 16 GPUs)."""

    __slots__ = ("done", "value", "error")

    def __init__(self) -> None:
        self.done = threading.Lock()
        self.done.acquire()
        self.value = None
        self.error: BaseException | None = None

    def finished(self, timeout_s: float) -> bool:
        """Whether the call finished within ``timeout_s`` (it stays finished for later waits)."""
        if not self.done.acquire(timeout=max(0.0, timeout_s)):
            return False
        self.done.release()
        return True


class DeviceCaller:
    """Runs one GPU's calls, in order, on its own thread.

    Args:
        name: the thread's name (``advisor-gpu<i>``).
    """

    def __init__(self, name: str) -> None:
        self._name = name
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._outstanding = 0  # calls submitted and not finished (a hung one keeps this above zero)

    @property
    def hung(self) -> bool:
        """True while a call submitted earlier has not returned."""
        return self._outstanding > 0

    def submit(self, fn: Callable, *args) -> _Pending:
        """Queue ``fn(*args)``; wait on the result with :meth:`result`."""
        pending = _Pending()
        with self._lock:
            self._outstanding += 1
            self._queue.put((fn, args, pending))  # under the lock: an idle thread ending sees it
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
        return pending

    @staticmethod
    def result(pending: _Pending, timeout_s: float):
        """``(True, value)`` when the call finished within ``timeout_s``, else ``(False, None)``.

        Raises:
            Exception: what the call raised.
        """
        if not pending.finished(timeout_s):
            return False, None
        if pending.error is not None:
            raise pending.error
        return True, pending.value

    def _run(self) -> None:
        while True:
            try:
                fn, args, pending = self._queue.get(timeout=IDLE_EXIT_S)
            except queue.Empty:
                with self._lock:
                    if self._queue.empty():
                        self._thread = None
                        return
                continue
            if fn is None:
                return
            try:
                pending.value = fn(*args)
            except BaseException as exc:  # handed to the waiting caller
                pending.error = exc
            with self._lock:
                self._outstanding -= 1
            pending.done.release()

    def close(self) -> None:
        """Let the thread end (a hung call still ends it when it returns)."""
        with self._lock:
            if self._thread is not None:
                self._queue.put((None, (), None))
                self._thread = None
