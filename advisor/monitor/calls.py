"""Driver calls with a deadline, so a hung call stalls only its own GPU.

A driver call can block for seconds or for ever (an NVML query to a GPU that is falling off the bus, a
wedged firmware). The sampler hands a tick's reads to a ``GpuReader`` and waits at most ``timeout_s``; past it
the GPU whose call has not returned is "not responding" and is not asked again until that call returns, while
the other GPUs keep their schedule. The reader asks every GPU in turn on one worker thread (a ``DeviceCaller``):
a GPU that hangs keeps that thread, and the GPUs not read yet move to a new one with a deadline of their own.
One thread per GPU did the same with a thread hand-off per GPU and tick: with 16 GPUs at 10 Hz that was about
1 % of a core (2.5-2.7 % for the sampler against 1.6-1.7 % reading in its own thread). Threads are daemons and
end after a few idle seconds.
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
    """Runs calls, in order, on its own thread (a ``GpuReader``'s worker).

    Args:
        name: the thread's name.
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


class _Pass:
    """One pass over some GPUs on a reader thread: ``fn(i)`` for each in turn, each result kept as it comes."""

    __slots__ = ("fn", "indices", "results", "stopped")

    def __init__(self, fn: Callable, indices: list[int]) -> None:
        self.fn = fn
        self.indices = indices
        self.results: dict[int, tuple[bool, object]] = {}  # index -> (returned, value or the exception raised)
        self.stopped = False  # set when its thread was given up on: the GPUs after a hung one are not asked here

    def run(self) -> None:
        for i in self.indices:
            if self.stopped:
                return
            try:
                self.results[i] = (True, self.fn(i))
            except Exception as exc:  # handed to the sampler with the others' results
                self.results[i] = (False, exc)


class GpuReader:
    """Reads GPUs in turn on one worker thread, with a deadline per pass (see the module notes).

    Args:
        name: the worker threads' name.
    """

    def __init__(self, name: str = "advisor-gpus") -> None:
        self._name = name
        self._caller = DeviceCaller(name)
        self._stuck: dict[int, _Pending] = {}  # GPU index -> its call that has not returned

    def hung(self, index: int) -> bool:
        """True while a call to GPU ``index`` that passed its deadline has not returned."""
        pending = self._stuck.get(index)
        if pending is None:
            return False
        if pending.finished(0.0):
            del self._stuck[index]
            return False
        return True

    def read(self, fn: Callable[[int], object], indices: list[int], timeout_s: float) -> dict:
        """``{i: fn(i)}`` for the GPUs in ``indices`` that are not hung and answer in time (a GPU missing from the
        answer is not responding). A pass that passes ``timeout_s`` leaves its thread to the GPU it was asking
        (that GPU is hung) and the GPUs after it get a new thread and ``timeout_s`` again.

        Raises:
            Exception: what a call raised (the first in ``indices`` order).
        """
        todo = [i for i in indices if not self.hung(i)]
        out: dict = {}
        error: BaseException | None = None
        while todo:
            job = _Pass(fn, todo)
            pending = self._caller.submit(job.run)
            finished = pending.finished(timeout_s)
            for i in todo:
                if i in job.results:
                    ok, value = job.results[i]
                    if ok:
                        out[i] = value
                    elif error is None:
                        error = value
            error = error or pending.error
            if finished:
                break
            job.stopped = True  # its thread asks no further GPU once the hung call returns
            done = set(job.results)
            # calls run in order: the first GPU without an answer is the one its thread is still asking
            stuck = next((i for i in todo if i not in done), None)
            if stuck is None:  # every answer came between the deadline and now
                break
            self._stuck[stuck] = pending
            self._caller.close()  # its thread ends once the hung call returns
            self._caller = DeviceCaller(self._name)
            todo = [i for i in todo if i not in done and i != stuck]
        if error is not None:
            raise error  # after the hung GPU, if any, was set apart: the next pass does not wait behind it
        return out

    def close(self) -> None:
        """Let the worker threads end (a hung call still ends its thread when it returns)."""
        self._caller.close()
