"""A worker's exception is logged with its traceback and reaches the GUI as one line."""

from __future__ import annotations

import logging


def _fails():
    raise ValueError("bad\nthing")
    yield  # a generator


def test_worker_failure_is_logged_with_traceback(qtbot, caplog):
    from advisor.gui.workers import GeneratorWorker

    worker = GeneratorWorker(_fails)
    reasons = []
    worker.failed.connect(reasons.append)
    logger = logging.getLogger("advisor")
    logger.addHandler(caplog.handler)
    try:
        with qtbot.waitSignal(worker.done, timeout=5000):
            worker.start()
        worker.wait(2000)
    finally:
        logger.removeHandler(caplog.handler)
    assert reasons == ["ValueError: bad thing"]
    records = [r for r in caplog.records if r.name == "advisor.gui.workers"]
    assert records and records[0].exc_info and "_fails" in records[0].getMessage()
    assert "ValueError" in caplog.text and "Traceback" in caplog.text
