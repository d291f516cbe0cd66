"""The re-plan's worker: one thread kept between calls, results and failures as GeneratorWorker gives them."""

from __future__ import annotations

import threading


def _ident(x):
    return threading.get_ident(), x * 2


def _fails():
    raise ValueError("bad\nthing")


def test_calls_run_off_the_gui_thread_on_one_kept_thread(qtbot):
    from advisor.gui.workers import PooledWorker, live_workers

    worker = PooledWorker()
    results, idents = [], []
    worker.result_ready.connect(results.append)
    for x in (1, 2, 3):
        with qtbot.waitSignal(worker.done, timeout=5000):
            worker.start(_ident, x)
        qtbot.waitUntil(lambda: not worker.isRunning(), timeout=5000)
    assert [r[1] for r in results] == [2, 4, 6]
    idents = {r[0] for r in results}
    assert len(idents) == 1  # the same thread each time: none started per call
    assert threading.get_ident() not in idents
    assert worker not in live_workers()


def test_failure_is_one_line_and_a_second_start_while_running_is_refused(qtbot):
    from advisor.gui.workers import PooledWorker, live_workers

    worker = PooledWorker()
    reasons = []
    worker.failed.connect(reasons.append)
    with qtbot.waitSignal(worker.done, timeout=5000):
        worker.start(_fails)
    assert reasons == ["ValueError: bad thing"]
    assert "Traceback" in worker.error_detail

    gate = threading.Event()
    with qtbot.waitSignal(worker.done, timeout=5000):
        worker.start(gate.wait, 5)
        assert worker.isRunning() and worker in live_workers()
        try:
            worker.start(_ident, 1)
        except RuntimeError:
            refused = True
        else:
            refused = False
        gate.set()
    assert refused
    assert worker.stop(2000) and not worker.isRunning()
