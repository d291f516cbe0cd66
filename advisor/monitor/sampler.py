"""The sampler: a background thread that reads the backends on a drift-free schedule.

Tick ``k`` is due at ``start + k * interval`` whatever each read cost, so the interval does not creep;
a tick missed because a read ran long is skipped, not bunched. The clock and the wait are injectable,
so tests drive the schedule with a fake clock and no sleeping. The sampler knows nothing of Qt: the GUI
drains new samples with ``drain()`` from a QTimer (or registers a listener and emits a signal).
"""

from __future__ import annotations

import collections
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from advisor.hw.base import GpuBackend, HostBackend
from advisor.hw.records import (
    GPU_LOST,
    GPU_NOT_RESPONDING,
    GPU_SUSPENDED,
    GpuSample,
    HostSample,
    ProcessSample,
    clean_sample,
)
from advisor.monitor.calls import GpuReader
from advisor.monitor.columns import history_values, metric_names
from advisor.monitor.history import DEFAULT_CAPACITY, History

MIN_INTERVAL_S = 0.1
MAX_INTERVAL_S = 10.0
DEFAULT_INTERVAL_S = 1.0
DEFAULT_CALL_TIMEOUT_S = 2.0

Listener = Callable[["MonitorSample"], None]


@dataclass(frozen=True)
class MonitorSample:
    """One tick: the host and every GPU at ``time_s`` seconds after the sampler started."""

    seq: int
    time_s: float
    wall_time_s: float
    host: HostSample
    gpus: tuple[GpuSample, ...]


def check_interval(interval_s: float) -> float:
    """The interval as a float. Raises ValueError outside 0.1 to 10 s (or not a finite number)."""
    try:
        value = float(interval_s)
    except (TypeError, ValueError):
        raise ValueError(f"interval must be a number of seconds, got {interval_s!r}") from None
    if not math.isfinite(value) or not MIN_INTERVAL_S <= value <= MAX_INTERVAL_S:
        raise ValueError(f"interval must be between {MIN_INTERVAL_S} and {MAX_INTERVAL_S} s, got {interval_s!r}")
    return value


class Sampler:
    """Samples the host and every GPU into a ``History`` on its own thread.

    Args:
        gpu: GPU backend (``advisor.hw.select_backend``).
        host: host backend (``advisor.hw.select_host_backend``).
        interval_s: seconds between ticks, 0.1 to 10.
        capacity: rows kept per metric (default an hour at 1 Hz); also bounds the ``drain`` queue.
        laptop_safe: read each GPU's PCI runtime power state first and do not poll a suspended GPU
            (polling would wake a laptop's discrete GPU and drain the battery).
        process_interval_s: how often the per-process snapshot is refreshed (it costs more than a tick).
        clock: monotonic seconds (inject a fake clock in tests).
        wall_clock: epoch seconds, for ``MonitorSample.wall_time_s``.
        wait: ``wait(seconds)`` sleeps until the next tick; the default is interruptible by ``stop``.
        call_timeout_s: the longest one GPU's reads may take in a tick; past it that GPU is "not
            responding" (and is not asked again until the hung call returns) while the others keep
            sampling. None reads every GPU in the sampler's own thread, without a deadline.

    Use ``start()``/``stop()`` (or ``with Sampler(...) as s:``), ``pause()``/``resume()``, read
    ``history.window(metric, seconds)``, take new samples with ``drain()`` or ``add_listener(fn)``
    (listeners run on the sampler thread and must be quick), and ``processes()`` for the latest
    per-process snapshot. ``tick()`` takes one sample synchronously.
    """

    def __init__(self, gpu: GpuBackend, host: HostBackend, *, interval_s: float = DEFAULT_INTERVAL_S,
                 capacity: int = DEFAULT_CAPACITY, laptop_safe: bool = True, process_interval_s: float = 2.0,
                 clock: Callable[[], float] = time.monotonic, wall_clock: Callable[[], float] = time.time,
                 wait: Callable[[float], object] | None = None,
                 call_timeout_s: float | None = DEFAULT_CALL_TIMEOUT_S) -> None:
        self.gpu = gpu
        self.host = host
        self._interval_s = check_interval(interval_s)
        self.laptop_safe = laptop_safe
        self.process_interval_s = float(process_interval_s)
        self._clock = clock
        self._wall_clock = wall_clock
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._wait = wait if wait is not None else self._wake.wait
        self._gpu_count = gpu.device_count()
        self.call_timeout_s = call_timeout_s
        self._reader = GpuReader() if call_timeout_s else None
        self._core_count = len(host.sample().per_core_util_pct)  # also primes psutil's rate counters
        self.history = History(metric_names(self._gpu_count, self._core_count), capacity)
        self._queue: collections.deque[MonitorSample] = collections.deque(maxlen=capacity)
        self._listeners: list[Listener] = []
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._paused = False
        self._reschedule = False
        self._t0: float | None = None
        self.wall_start_s: float | None = None  # wall clock at the first sample (history times count from it)
        self._seq = 0
        self._latest: MonitorSample | None = None
        self._processes: tuple[ProcessSample, ...] = ()
        self._processes_at: float | None = None
        self.last_error: str | None = None

    # ------------------------------------------------------------------ state
    @property
    def gpu_count(self) -> int:
        return self._gpu_count

    @property
    def interval_s(self) -> float:
        return self._interval_s

    def set_interval(self, interval_s: float) -> None:
        """Change the interval (0.1 to 10 s, else ValueError); the next tick is one new interval from now."""
        value = check_interval(interval_s)
        with self._lock:
            self._interval_s = value
            self._reschedule = True
        self._wake.set()

    @property
    def paused(self) -> bool:
        return self._paused

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def pause(self) -> None:
        """Stop taking samples (the thread keeps its schedule; history stays)."""
        self._paused = True

    def resume(self) -> None:
        """Take samples again from the next scheduled tick."""
        self._paused = False
        self._wake.set()

    # ---------------------------------------------------------------- thread
    def start(self) -> None:
        """Run the schedule on a background thread (the first tick is immediate).

        Raises:
            RuntimeError: already running.
        """
        if self.running:
            raise RuntimeError("sampler already running")
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="advisor-sampler", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the schedule and wait for the thread (idempotent; callable from a listener).

        The backends stay open: their owner closes them.
        """
        self._stop.set()
        self._wake.set()
        if self._reader is not None:
            self._reader.close()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
            self._thread = None

    def __enter__(self) -> Sampler:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def run(self, *, max_ticks: int | None = None, duration_s: float | None = None) -> None:
        """Run the schedule in the calling thread until ``stop()``, ``max_ticks`` samples, or ``duration_s``.

        Tick k is due at ``start + k * interval``; with ``duration_s`` the tick due at exactly that time is
        the last one. ``start()`` runs the same loop on a thread; the CLI and the tests call this directly.
        """
        self._stop.clear()
        self._loop(max_ticks=max_ticks, duration_s=duration_s)

    def _loop(self, max_ticks: int | None = None, duration_s: float | None = None) -> None:
        start = self._clock()
        end = None if duration_s is None else start + duration_s + 1e-9
        if self._t0 is None:
            self._t0 = start
        k = 0
        taken = 0
        while not self._stop.is_set():
            with self._lock:
                interval = self._interval_s
                if self._reschedule:
                    self._reschedule = False
                    start, k = self._clock(), 1
            due = start + k * interval
            if end is not None and due > end:
                break
            now = self._clock()
            if now < due:
                self._wait(due - now)
                self._wake.clear()
                continue
            if not self._paused:
                self.tick(now)
                taken += 1
                if max_ticks is not None and taken >= max_ticks:
                    break
            # Next tick on the grid after the read finished: never the same tick twice, no burst of missed ones.
            k = max(k + 1, int((self._clock() - start) // interval) + 1)

    # ---------------------------------------------------------------- sampling
    def tick(self, now: float | None = None) -> MonitorSample:
        """Take one sample now, store it in the history and the drain queue, and call the listeners."""
        now = self._clock() if now is None else now
        if self._t0 is None:
            self._t0 = now
            self.wall_start_s = self._wall_clock()
        host = self.host.sample()
        gpus = self._sample_gpus()
        sample = MonitorSample(seq=self._seq, time_s=now - self._t0, wall_time_s=self._wall_clock(),
                               host=host, gpus=gpus)
        self._seq += 1
        self.history.append(sample.time_s, history_values(host, gpus, self._core_count))
        with self._lock:
            self._queue.append(sample)
            self._latest = sample
            listeners = list(self._listeners)
        if self._processes_at is None or now - self._processes_at >= self.process_interval_s:
            self._processes_at = now
            self._processes = self._snapshot_processes(gpus)
        for fn in listeners:
            try:
                fn(sample)
            except Exception as exc:  # a broken listener must not stop the monitor
                self.last_error = f"listener {getattr(fn, '__name__', fn)!r} failed: {exc}"
        return sample

    def _asleep(self, index: int) -> bool:
        return self.laptop_safe and self.gpu.runtime_status(index) == "suspended"

    def _sample_gpus(self) -> tuple[GpuSample, ...]:
        """Every GPU's reading; a sleeping GPU is not asked, a hung one does not hold up the others."""
        asleep = [self._asleep(i) for i in range(self._gpu_count)]
        out = self._per_gpu(self.gpu.sample, [i for i in range(self._gpu_count) if not asleep[i]])
        return tuple(GpuSample(index=i, state=GPU_SUSPENDED) if asleep[i]
                     else clean_sample(out[i]) if isinstance(out.get(i), GpuSample)
                     else GpuSample(index=i, state=GPU_NOT_RESPONDING) for i in range(self._gpu_count))

    def _per_gpu(self, fn, indices: list[int]) -> dict:
        """``{i: fn(i)}``; through the reader with a deadline (missing: not responding)."""
        if self._reader is None:
            return {i: fn(i) for i in indices}
        return self._reader.read(fn, indices, self.call_timeout_s)

    def _snapshot_processes(self, gpus: tuple[GpuSample, ...]) -> tuple[ProcessSample, ...]:
        indices = [g.index for g in gpus if g.state not in (GPU_LOST, GPU_SUSPENDED, GPU_NOT_RESPONDING)]
        found = self._per_gpu(self.gpu.processes, indices)
        out = []
        for i in indices:
            for p in found.get(i, ()):
                d = self.host.process_details(p.pid)
                out.append(ProcessSample(pid=p.pid, gpu_index=p.gpu_index, gpu_mem_bytes=p.gpu_mem_bytes,
                                         kind=p.kind, name=d.name, user=d.user, cpu_pct=d.cpu_pct,
                                         host_mem_bytes=d.rss_bytes, cmdline=d.cmdline, started_s=d.started_s,
                                         gpu_util_pct=p.gpu_util_pct, own=d.own))
        return tuple(out)

    # ---------------------------------------------------------------- reading
    def drain(self, max_items: int | None = None) -> list[MonitorSample]:
        """New samples since the last drain, oldest first (at most ``capacity`` are kept between drains)."""
        with self._lock:
            n = len(self._queue) if max_items is None else min(max_items, len(self._queue))
            return [self._queue.popleft() for _ in range(n)]

    def latest(self) -> MonitorSample | None:
        """The newest sample, or None before the first tick."""
        return self._latest

    def processes(self) -> tuple[ProcessSample, ...]:
        """The latest per-process snapshot (GPU memory, name, user), refreshed every ``process_interval_s``."""
        return self._processes

    def add_listener(self, fn: Listener) -> None:
        """Call ``fn(sample)`` on the sampler thread after each tick."""
        with self._lock:
            self._listeners.append(fn)

    def remove_listener(self, fn: Listener) -> None:
        """Stop calling ``fn`` (no error if it was not registered)."""
        with self._lock:
            if fn in self._listeners:
                self._listeners.remove(fn)
