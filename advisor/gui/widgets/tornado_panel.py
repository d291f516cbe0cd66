"""What moves the total cost most: the chosen option's tornado, computed in a worker and drawn as bars.

The figures come from ``advisor.planner.sensitivity.tornado`` (the plan made again with one input at each end
of its range, the same path as ``advisor plan --sensitivity``); the bars are :func:`plots.tornado_bars`, in
the colours of :data:`advisor.colours.TORNADO_COLOURS`. A newer plan replaces a tornado still being computed.
"""

from __future__ import annotations

from PySide6.QtCore import Slot
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from advisor.gui import theme as themes
from advisor.gui.safe_text import set_plain
from advisor.gui.widgets import plots
from advisor.gui.workers import GeneratorWorker, release
from advisor.units import fmt_usd

EMPTY = "Plan a job on the Planner page: this chart shows which input moves the chosen option's total cost most."


def compute_tornado(result, catalog, calibration, plan_kw: dict):
    """The tornado of the plan's best option (runs in a worker)."""
    from advisor.planner import tornado

    return tornado(result.request, catalog, calibration, base=result, **plan_kw)


class TornadoPanel(QWidget):
    """A title line and the tornado chart of the current plan's chosen option.

    Attributes:
        tornado: the last ``Tornado`` drawn (None before the first, or when nothing fits).
    """

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.plot = plots.make_plot("What moves the total cost most (chosen option)", "", "", x_label="total job cost",
                                    x_unit="USD", legend=True, min_height=220, legend_columns=2,
                                    legend_offset=(-10, 4))
        self.plot.setObjectName("tornadoChart")
        self.plot.setMouseEnabled(x=False, y=False)
        self.plot.getAxis("left").setWidth(190)
        self.plot.setToolTip("Each input at the low and high ends of its range, the rest as planned: the bar runs "
                             "from the chosen option's total to its total at that end. The same figures as "
                             "advisor plan --sensitivity.")
        lay.addWidget(self.plot)
        self.note = QLabel()
        self.note.setWordWrap(True)
        self.note.setObjectName("tornadoNote")
        self.note.setStyleSheet(f"color: {themes.current().muted}")
        lay.addWidget(self.note)
        self.tornado = None
        self._items: list = []
        self._worker: GeneratorWorker | None = None
        self._next = None
        plots.set_empty_text(self.plot, EMPTY)

    def show_plan(self, result, catalog, calibration=None, plan_kw: dict | None = None) -> None:
        """Compute and draw the tornado of ``result`` (a newer call replaces one in progress)."""
        self._next = (result, catalog, calibration, dict(plan_kw or {}))
        if self._worker is None:
            self._start()

    def _start(self) -> None:
        job, self._next = self._next, None
        if job is None:
            return
        self.note.setText("Working out which input moves the cost most…")
        self._worker = GeneratorWorker(compute_tornado, *job, parent=self)
        self._worker.result_ready.connect(self._on_worker_result_ready)
        self._worker.failed.connect(self._on_worker_failed)
        self._worker.done.connect(self._on_worker_done)
        self._worker.start()

    def is_idle(self) -> bool:
        return self._worker is None and self._next is None

    @Slot(object)
    def _on_worker_result_ready(self, tornado) -> None:
        if self._next is not None:  # a newer plan is waiting: draw that one
            return
        self.draw(tornado)

    @Slot(str)
    def _on_worker_failed(self, reason: str) -> None:
        set_plain(self.note, f"No tornado for this plan: {reason}")

    @Slot()
    def _on_worker_done(self) -> None:
        worker, self._worker = self._worker, None
        release(worker)
        if self._next is not None:
            self._start()

    def draw(self, tornado) -> None:
        """Draw a ``Tornado`` (None: nothing fits)."""
        plots.clear_bars(self.plot, self._items)
        self.tornado = tornado
        if tornado is None or not tornado.bars:
            plots.set_empty_text(self.plot, "Nothing fits, so there is no chosen option to vary." if tornado is None
                                 else "No input to vary for this option.")
            self.note.setText("")
            return
        plots.set_empty_text(self.plot, None)
        self._items = plots.tornado_bars(self.plot, tornado.bars, tornado.base_cost_usd, fmt_usd)
        top = tornado.bars[0]
        self.note.setText(f"{tornado.option_id}: {fmt_usd(tornado.base_cost_usd)} as planned. "
                          f"{top.parameter.replace('_', ' ')} moves it most, from {fmt_usd(top.low_cost_usd or 0)} "
                          f"to {fmt_usd(top.high_cost_usd or 0)} over its range.")

    def shutdown(self) -> None:
        self._next = None
        if self._worker is not None:
            self._worker.stop()
