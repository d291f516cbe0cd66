"""The GUI thread is never blocked for more than 50 ms while the monitor draws and the planner re-plans.

A 5 ms QTimer on the GUI thread records the gap between its ticks (a blocked event loop shows up as a
long gap) and the CPU time the GUI thread itself used in that gap; meanwhile the sampler runs at 10 Hz
with eight GPUs, the monitor page redraws, and a planner input changes every 200 ms so that plans run
in the worker one after the other.

The CPU-time bound always holds: no single pass of the event loop does 50 ms of work. The wall-clock
bound is asserted only when the machine has a free core: on an overloaded machine the OS alone can
deschedule the process for longer than that, which no code of ours can prevent. A second window is
watched when one fails (three in all): a stall caused by our code shows in every one.
"""

from __future__ import annotations

import gc
import os
import threading
import time

from PySide6.QtCore import QObject, QTimer, Slot

LIMIT_S = 0.050


class GapWatchdog(QObject):
    """Measures the longest gap between ticks of a fast GUI-thread timer."""

    def __init__(self) -> None:
        super().__init__()
        self.max_gap_s = 0.0
        self.max_busy_s = 0.0
        self.busiest = (0.0, 0.0)  # (start, end) of the longest busy stretch
        self.ticks = 0
        self._last = None
        self._last_cpu = None
        self.timer = QTimer(self)
        self.timer.setInterval(5)
        self.timer.timeout.connect(self._on_timer_timeout)

    def start(self) -> None:
        self._last = time.perf_counter()
        self._last_cpu = time.thread_time()
        self.timer.start()

    @Slot()
    def _on_timer_timeout(self) -> None:
        now, cpu = time.perf_counter(), time.thread_time()
        self.max_gap_s = max(self.max_gap_s, now - self._last)
        if cpu - self._last_cpu > self.max_busy_s:
            self.max_busy_s = cpu - self._last_cpu
            self.busiest = (self._last, now)
        self._last, self._last_cpu = now, cpu
        self.ticks += 1


class StackSampler:
    """Samples the GUI thread's Python stack every 2 ms, to name what it was doing in the longest stretch."""

    def __init__(self) -> None:
        self.samples: list[tuple[float, str]] = []
        self._target = threading.get_ident()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="watchdog-stack-sampler", daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        import sys
        import traceback

        while not self._stop.wait(0.002):
            frame = sys._current_frames().get(self._target)
            if frame is not None:
                stack = [f"{f.f_code.co_filename.rsplit('/', 1)[-1]}:{f.f_code.co_name}"
                         for f, _ in traceback.walk_stack(frame)][:5]
                self.samples.append((time.perf_counter(), " < ".join(stack)))

    def during(self, start: float, end: float) -> str:
        from collections import Counter

        counts = Counter(s for t, s in self.samples if start <= t <= end)
        return "; ".join(f"{n}× {s}" for s, n in counts.most_common(3)) or "no Python frame (inside Qt)"


class GcTimer:
    """Longest garbage collection on the GUI thread while active (to tell GC pauses from our own work)."""

    def __init__(self) -> None:
        self.longest_s = 0.0
        self._start = 0.0
        self._thread = threading.get_ident()

    def __call__(self, phase, info) -> None:
        if threading.get_ident() != self._thread:
            return
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.longest_s = max(self.longest_s, time.perf_counter() - self._start)


class InputWiggler(QObject):
    """Changes a planner input every 200 ms (past the debounce, so each change is planned)."""

    def __init__(self, spin) -> None:
        super().__init__()
        self.spin = spin
        self.timer = QTimer(self)
        self.timer.setInterval(200)
        self.timer.timeout.connect(self._on_timer_timeout)

    @Slot()
    def _on_timer_timeout(self) -> None:
        self.spin.setValue(1 + self.spin.value() % 8)


def test_gui_thread_never_blocked_while_monitoring_and_replanning(make_window, qtbot):
    w = make_window("8xh100-sxm", interval_s=0.1)
    monitor = w.page("monitor")
    planner = w.page("planner")
    w.show_page("planner")
    qtbot.waitUntil(lambda: planner.bundle is not None and planner.is_ready(), timeout=10000)
    w.show_page("monitor")
    qtbot.waitUntil(lambda: len(w.ctx.sampler.history) >= 10, timeout=10000)
    qtbot.wait(300)  # first full redraw of the freshly shown page

    wiggle = InputWiggler(planner.form.w["micro_batch"])
    reports = []
    for _attempt in range(3):
        with StackSampler() as stacks:
            dog, gc_timer = _watch(qtbot, wiggle, planner, monitor)
        report = (f"longest gap {1000 * dog.max_gap_s:.0f} ms, longest busy stretch {1000 * dog.max_busy_s:.0f} ms "
                  f"(GUI thread in: {stacks.during(*dog.busiest)}), "
                  f"longest GC on the GUI thread {1000 * gc_timer.longest_s:.0f} ms")
        reports.append(report)
        print(report)
        ok = dog.max_busy_s < LIMIT_S and (dog.max_gap_s < LIMIT_S or not _has_free_core())
        if ok:
            break
        # One more window: a stall our code causes shows in every window; a hiccup of a shared machine
        # (another process on our core, the page cache) only now and then.
    assert ok, "; ".join(reports)


def _watch(qtbot, wiggle, planner, monitor):
    """One 2.5 s window of monitoring at 10 Hz and re-planning every 200 ms under the watchdog."""
    dog = GapWatchdog()
    plans_before = planner.plans_done
    samples_before = monitor._samples_seen
    gc_timer = GcTimer()
    gc.callbacks.append(gc_timer)
    try:
        dog.start()
        wiggle.timer.start()
        qtbot.wait(2500)
        wiggle.timer.stop()
        qtbot.waitUntil(planner.is_ready, timeout=5000)
        dog.timer.stop()
    finally:
        gc.callbacks.remove(gc_timer)
    assert monitor._samples_seen - samples_before >= 15, "the monitor kept drawing"
    assert planner.plans_done > plans_before, "the planner re-planned"
    assert dog.ticks > 100
    return dog, gc_timer


def _has_free_core() -> bool:
    try:
        load = os.getloadavg()[0]
    except OSError:
        return True
    return load < (os.cpu_count() or 1) - 1
