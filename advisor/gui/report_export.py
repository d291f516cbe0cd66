"""Reports from the GUI: where to write one, and writing it in a worker thread.

``write_report`` (``advisor.report``) picks the format by the file's suffix; laying out a PDF takes a few
seconds, so :class:`ReportWriter` runs it off the GUI thread and signals when the file is there.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Signal, Slot
from PySide6.QtWidgets import QFileDialog, QWidget

REPORT_FILTERS = "HTML (*.html);;PDF (*.pdf);;Markdown (*.md);;CSV (*.csv)"
SERVE_REPORT_FILTERS = "HTML (*.html);;PDF (*.pdf);;Markdown (*.md)"


def write_with_tornados(docs: list, path: str, plans: list):
    """Add each plan's tornado to its document, then write the report (runs in a worker).

    Returns:
        The path written (``advisor.report.write_report``).
    """
    from advisor.planner import tornado
    from advisor.report import ReportError, report_format, write_report
    from advisor.store.atomic import check_target

    report_format(Path(path), None)  # an unknown format or a target that cannot be written: said at once,
    try:  # not after the tornado's re-plans (write_report checks both again)
        check_target(Path(path))
    except OSError as exc:
        raise ReportError(f"cannot write {path}: {exc.strerror or exc}") from None
    docs = [dict(d) for d in docs]
    for doc, job in zip(docs, plans, strict=False):
        if job is not None and "tornado" not in doc:
            result, catalog, calibration, plan_kw = job
            t = tornado(result.request, catalog, calibration, base=result, **(plan_kw or {}))
            if t is not None:
                doc["tornado"] = t.as_dict()
    return write_report(docs, path)


def with_report_suffix(path: str, chosen_filter: str) -> str:
    """``path`` with the suffix of the chosen filter when it has none of the report formats."""
    from advisor.report import FORMATS

    if Path(path).suffix.lower() in FORMATS:
        return path
    for name, suffix in (("PDF", ".pdf"), ("Markdown", ".md"), ("CSV", ".csv")):
        if chosen_filter.startswith(name):
            return path + suffix
    return path + ".html"


def ask_report_path(parent: QWidget, title: str = "Export report", default: str = "report.html",
                    filters: str = REPORT_FILTERS) -> str | None:
    """Ask where to write a report; the suffix of the chosen format is added when the name has none."""
    path, chosen = QFileDialog.getSaveFileName(parent, title, default, filters)
    return with_report_suffix(path, chosen) if path else None


class ReportWriter(QObject):
    """Writes one report at a time in a worker thread (laying out a PDF takes seconds).

    Signals:
        written(str): the path written.
        failed(str): one line saying why nothing was written.
    """

    written = Signal(str)
    failed = Signal(str)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._worker = None

    def busy(self) -> bool:
        """True while a report is being written."""
        return self._worker is not None

    def start(self, docs: list, path, plans: list | None = None) -> bool:
        """Write ``docs`` to ``path`` (format by suffix) off the GUI thread. False when one is already running.

        Args:
            plans: per document, ``(PlanResult, catalog, calibration, plan_kw)`` to add its tornado
                (``planner.sensitivity.tornado``, the one ``advisor plan --sensitivity`` adds), or None.
        """
        return self.start_call(write_with_tornados, docs, str(path), plans or [])

    def start_call(self, write, *args) -> bool:
        """Run ``write(*args)`` (a report writer returning the path written) off the GUI thread; False when a
        report is already being written."""
        from advisor.gui.workers import GeneratorWorker

        if self._worker is not None:
            return False
        self._worker = GeneratorWorker(write, *args, parent=self)
        self._worker.result_ready.connect(self._on_worker_result_ready)
        self._worker.failed.connect(self._on_worker_failed)
        self._worker.done.connect(self._on_worker_done)
        self._worker.start()
        return True

    def stop(self) -> None:
        """Wait for a running report to finish (the write is atomic; it cannot be interrupted midway)."""
        if self._worker is not None:
            self._worker.stop(15000)

    # The outcome is signalled once the worker is released, so a slot that starts the next report at
    # ``written`` or ``failed`` finds the writer free.
    @Slot(object)
    def _on_worker_result_ready(self, path) -> None:
        self._outcome = (self.written, str(path))

    @Slot(str)
    def _on_worker_failed(self, reason: str) -> None:
        self._outcome = (self.failed, reason.split(": ", 1)[-1])  # drop the exception's type name

    @Slot()
    def _on_worker_done(self) -> None:
        from advisor.gui.workers import release

        worker, self._worker = self._worker, None
        release(worker)
        outcome, self._outcome = getattr(self, "_outcome", None), None
        if outcome is not None:
            outcome[0].emit(outcome[1])
