"""bench_monitor's callback trace names the GUI-thread event that ran longest, with its Python stack."""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

from PySide6.QtCore import QObject, QTimer

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def _bench_monitor():
    sys.path.insert(0, str(BENCH))  # bench_monitor imports its neighbour verdict.py
    try:
        spec = importlib.util.spec_from_file_location("bench_monitor_under_test", BENCH / "bench_monitor.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))


class Burner(QObject):
    """Owns a timer whose tick spends ``ms`` of the GUI thread's CPU time."""

    def __init__(self, ms: float) -> None:
        super().__init__()
        self.ms = ms
        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.setInterval(0)
        self.timer.timeout.connect(self.burn_cpu)
        self.done = False

    def burn_cpu(self) -> None:
        end = time.thread_time() + self.ms / 1000
        while time.thread_time() < end:
            pass
        self.done = True


def test_the_longest_callback_is_named_with_its_cpu_time_and_stack(qtbot, qapp):
    trace = _bench_monitor().callback_trace(spell_ms=10.0)
    burner = Burner(40.0)
    quick = QTimer()  # a short tick beside it, from a timer without an owner
    quick.setInterval(2)
    ticks = [0]
    quick.timeout.connect(lambda: ticks.__setitem__(0, ticks[0] + 1))
    qapp.installEventFilter(trace)
    try:
        quick.start()
        burner.timer.start()
        qtbot.waitUntil(lambda: burner.done, timeout=5000)
        qtbot.wait(30)  # further events close the burner's
        ticks_after_burn = ticks[0]
        qtbot.waitUntil(lambda: ticks[0] > ticks_after_burn, timeout=5000)  # the quick timer has ticked in the trace
    finally:
        quick.stop()
        qapp.removeEventFilter(trace)
        trace.close()
    # every name, not the top 8: on a busy machine other events' longest spells can outrank the quick timer's tick
    report = trace.report(top=len(trace.by_name))
    assert report["longest_callback"] == "Timer QTimer of Burner"
    # the tick's CPU time: the 40 ms it burned, and at most a few ms of the event loop's own work beside it
    assert 40.0 <= report["longest_callback_cpu_ms"] < 60.0
    assert report["longest_callback_wall_ms"] >= report["longest_callback_cpu_ms"] - 0.1
    assert any("Burner.burn_cpu" in stack for stack in report["longest_callback_stacks"])
    over = [row for row in report["callbacks_over_frame"] if row[1] == "Timer QTimer of Burner"]
    assert len(over) == 1 and over[0][2] == report["longest_callback_cpu_ms"]
    names = {row["name"]: row for row in report["callbacks_by_longest"]}
    assert names["Timer QTimer"]["count"] >= 1  # the ownerless timer, named apart
    assert names["Timer QTimer"]["longest_cpu_ms"] < report["longest_callback_cpu_ms"]


def test_a_gap_less_the_neighbours_preemption_is_the_apps_own_block():
    bench = _bench_monitor()
    # worked by hand: a 61.1 ms gap of a 4 ms beat, 56.9 ms of it runnable on a run queue while the app's other
    # threads ran 0 ms: 61.1 - 56.9 - 4 = 0.2 ms was the app's
    assert abs(bench.own_block_ms(0.0611, 0.0569, 0.0) - 0.2) < 1e-9
    # the same wait while the sampler ran 12.8 ms: those 12.8 ms stay the app's (0.2 + 12.8 = 13.0)
    assert abs(bench.own_block_ms(0.0611, 0.0569, 0.0128) - 13.0) < 1e-9
    # other threads ran longer than the GUI thread waited: nothing is taken out (61.1 - 4 = 57.1)
    assert abs(bench.own_block_ms(0.0611, 0.010, 0.020) - 57.1) < 1e-9
    assert bench.own_block_ms(0.002, 0.0, 0.0) == 0.0  # a beat early by 2 ms blocked nothing


def test_schedstat_counts_the_threads_cpu_time():
    stat = _bench_monitor()._SchedStat()
    if not stat.ok:  # not Linux: the benchmark reports no split
        assert stat.read() == (0.0, 0.0)
        return
    try:
        ran0, waited0 = stat.read()
        cpu0 = time.thread_time()
        end = cpu0 + 0.05
        while time.thread_time() < end:
            pass
        ran1, waited1 = stat.read()
        spent = time.thread_time() - cpu0
    finally:
        stat.close()
    # the kernel's per-thread CPU clock and schedstat's are one count (a tick's rounding apart)
    assert abs((ran1 - ran0) - spent) < 0.005
    assert waited1 >= waited0
