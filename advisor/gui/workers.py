"""A thin Qt worker that runs a plain generator off the GUI thread.

The long work itself (a probe, a plan, a detection) is a plain generator or function without Qt:
it yields progress values and returns its result. :class:`GeneratorWorker` runs
it in its own ``QThread`` and turns each step into a signal; only signals cross threads.
Cancellation is cooperative: :meth:`GeneratorWorker.cancel` sets a flag that the run loop checks
between yields and then closes the generator, so its ``finally`` blocks free what it allocated.

Modelled on superqt ``utils/_qthreading.py::GeneratorWorker``.
"""

from __future__ import annotations

import logging
import threading
import traceback
import weakref
from collections.abc import Callable, Generator, Iterable
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThread, QThreadPool, Signal

_log = logging.getLogger("advisor.gui.workers")

_LIVE: weakref.WeakSet[GeneratorWorker | PooledWorker] = weakref.WeakSet()


class WorkerCancelled(Exception):
    """Raised inside a work function that calls :func:`check_cancelled` after a cancel request."""


class GeneratorWorker(QThread):
    """Run ``fn(*args, **kwargs)`` in a thread; a generator's yields become ``progressed`` signals.

    Signals:
        progressed(object): one per value the generator yields.
        result_ready(object): the generator's return value (or the function's result).
        failed(str): a one-line reason when the work raised.
        cancelled(): the work stopped because :meth:`cancel` was called.
        done(): always last, whichever of the three above came first.
    """

    progressed = Signal(object)
    result_ready = Signal(object)
    failed = Signal(str)
    cancelled = Signal()
    done = Signal()

    def __init__(self, fn: Callable[..., Any], *args: Any, parent=None, **kwargs: Any) -> None:
        super().__init__(parent)
        self._fn = fn
        self._args = args
        self._kwargs = kwargs
        self._cancel = threading.Event()
        self.error_detail = ""
        _LIVE.add(self)

    # ------------------------------------------------------------ control
    def cancel(self) -> None:
        """Ask the work to stop at its next yield (cooperative; returns at once)."""
        self._cancel.set()

    @property
    def is_cancelled(self) -> bool:
        return self._cancel.is_set()

    def stop(self, timeout_ms: int = 5000) -> bool:
        """Cancel and wait for the thread to end. Returns True when it ended in time."""
        self.cancel()
        if self.isRunning():
            return self.wait(timeout_ms)
        return True

    # ------------------------------------------------------------ thread body
    def run(self) -> None:  # runs in the worker thread
        try:
            out = self._fn(*self._args, **self._kwargs)
            if isinstance(out, Generator):
                result = self._drain(out)
            elif isinstance(out, Iterable) and hasattr(out, "__next__"):
                result = self._drain(iter(out))
            else:
                result = out
            if self._cancel.is_set():
                self.cancelled.emit()
            else:
                self.result_ready.emit(result)
        except WorkerCancelled:
            self.cancelled.emit()
        except Exception as exc:  # reported to the GUI as one line; the thread never dies silently
            self.error_detail = traceback.format_exc()
            _log.error("worker %s failed", getattr(self._fn, "__qualname__", self._fn), exc_info=True)
            self.failed.emit(" ".join(f"{type(exc).__name__}: {exc}".split()))
        finally:
            self.done.emit()

    def _drain(self, gen) -> Any:
        try:
            while True:
                if self._cancel.is_set():
                    gen.close()  # GeneratorExit inside the work: its finally blocks run
                    return None
                try:
                    value = next(gen)
                except StopIteration as stop:
                    return stop.value
                self.progressed.emit(value)
        finally:
            if self._cancel.is_set():
                gen.close()


class _Call(QRunnable):
    """The one runnable of a :class:`PooledWorker`, started again for each call (never deleted by the pool)."""

    def __init__(self, owner: PooledWorker) -> None:
        super().__init__()
        self.setAutoDelete(False)
        self.owner = owner
        self.call: tuple | None = None

    def run(self) -> None:  # runs in a pool thread
        owner, (fn, args, kwargs) = self.owner, self.call
        self.call = None
        try:
            owner.result_ready.emit(fn(*args, **kwargs))
        except Exception as exc:  # reported to the GUI as one line, as GeneratorWorker does
            owner.error_detail = traceback.format_exc()
            _log.error("worker %s failed", getattr(fn, "__qualname__", fn), exc_info=True)
            owner.failed.emit(" ".join(f"{type(exc).__name__}: {exc}".split()))
        finally:
            owner._idle.set()
            owner.done.emit()


class PooledWorker(QObject):
    """Run a plain function, one call at a time, on a thread of its own kept between calls, one runnable reused.

    For work asked for on every keystroke (a re-plan): a :class:`GeneratorWorker` starts a new thread for each
    call and joins it after, which costs the GUI thread about half a millisecond an edit; here the thread is
    started once (a one-thread pool of this worker's, kept while the worker lives; deleting the worker joins
    it). The signals are :class:`GeneratorWorker`'s (no progress,
    no cancel: the function runs to its end). Whoever starts a call while one runs (``isRunning``) waits for
    ``done`` first.

    Signals:
        result_ready(object): the function's result.
        failed(str): a one-line reason when it raised.
        done(): always last.
    """

    result_ready = Signal(object)
    failed = Signal(str)
    done = Signal()

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(1)
        self._pool.setExpiryTimeout(-1)  # the thread waits for the next call however long it takes
        self._call = _Call(self)
        self._idle = threading.Event()
        self._idle.set()
        self.error_detail = ""
        _LIVE.add(self)

    def start(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        """Run ``fn(*args, **kwargs)`` on a pool thread. Raises RuntimeError while a call runs."""
        if not self._idle.is_set():
            raise RuntimeError("a call is running: wait for done")
        self._idle.clear()
        self._call.call = (fn, args, kwargs)
        self._pool.start(self._call)

    def isRunning(self) -> bool:  # noqa: N802 (QThread's name, for live_workers)
        return not self._idle.is_set()

    def stop(self, timeout_ms: int = 5000) -> bool:
        """Wait for the running call to end (it cannot be cancelled). Returns True when it ended in time."""
        return self._idle.wait(timeout_ms / 1000)


def live_workers() -> list[GeneratorWorker | PooledWorker]:
    """Workers whose thread (or pooled call) is still running (tests assert none is left)."""
    out = []
    for w in list(_LIVE):
        try:
            if w.isRunning():
                out.append(w)
        except RuntimeError:  # the C++ object is gone
            continue
    return out


def release(worker: GeneratorWorker | None) -> None:
    """Let go of a finished worker: join its thread (already ending) and delete it from the event loop."""
    if worker is not None:
        worker.wait()
        worker.deleteLater()
