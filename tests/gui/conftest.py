"""GUI test fixtures: a main window on fake hardware, and a check that no worker thread is left running."""

from __future__ import annotations

import pytest

from advisor.gui.compat import guard_none_refcount

# PySide6 6.12 on Python 3.11 leaks references to None/True/False (see advisor.gui.compat): guard before
# pytest-qt starts pumping events.
guard_none_refcount()


@pytest.fixture(autouse=True)
def _no_dangling_workers(qapp):
    """Fail a test that leaves a GeneratorWorker thread running (napari's _dangling_qthreads idea)."""
    from advisor.gui.workers import live_workers

    yield
    leftover = live_workers()
    for w in leftover:
        w.stop(3000)
    assert not leftover, f"test left {len(leftover)} worker thread(s) running"


@pytest.fixture
def make_window(qtbot):
    """Build main windows on a fake scenario; each is closed (pages shut down, sampler stopped) afterwards."""
    from advisor.app import apply_theme, build_window

    apply_theme(qtbot_app(qtbot))
    windows = []

    def make(fake_gpu: str | None = "2x4090", wait_hardware: bool = True, interval_s: float | None = None):
        window = build_window(fake_gpu)
        if interval_s is not None:
            window.ctx.settings.setValue("monitor/interval_s", interval_s)
        qtbot.addWidget(window)
        window.resize(1280, 820)
        window.show()
        windows.append(window)
        if wait_hardware:
            # the machine detected, then read for the planner (a second worker): plans include its GPUs
            qtbot.waitUntil(lambda: window.ctx.machine is not None and window.ctx.local_known, timeout=10000)
        return window

    yield make
    for w in windows:
        w.close()
        w.ctx.shutdown()


def qtbot_app(qtbot):
    from PySide6.QtWidgets import QApplication

    return QApplication.instance()
