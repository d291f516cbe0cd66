"""Several scenario files side by side: each one's cheapest option in a table, total costs in a grouped bar chart.

The plans run in a :class:`GeneratorWorker` (about 25 ms each), so a long list never blocks the GUI
thread; :func:`summarize_scenarios` is the Qt-free generator it runs. A file that cannot be read or
planned gets a row with its one-line reason instead of figures.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import pyqtgraph as pg
from PySide6.QtCore import Qt, Slot
from PySide6.QtWidgets import (
    QDialog,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QMessageBox,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from advisor.gui import theme as themes
from advisor.gui.report_export import ReportWriter, ask_report_path
from advisor.gui.widgets import plots
from advisor.gui.widgets.tables import Column, RecordTableModel, fit_columns, make_proxy, make_view
from advisor.gui.workers import GeneratorWorker, release
from advisor.units import fmt_hours, fmt_usd

KINDS = (("home", "home rig"), ("onprem", "on-prem"), ("cloud", "cloud"))
SCENARIO_FILTER = "Scenario files (*.toml);;All files (*)"
MAX_LABELLED = 6  # scenarios up to which each bar carries its total as text


@dataclass(frozen=True)
class ScenarioSummary:
    """One scenario's plan reduced to its cheapest option.

    Attributes:
        name: the file name without its suffix.
        path: the scenario file.
        error: the one-line reason the file could not be planned, or None.
        option_id / option_name / kind: the cheapest fitting option (id, accelerator name, home|onprem|cloud).
        devices: devices of that option.
        hours: wall-clock time of the job on it.
        cost_usd: total cost of the job on it.
        usd_per_device_h: that total over its device-hours (all-in price of one device-hour).
        best_by_kind_usd: the cheapest fitting total per option kind (kinds without a fitting option left out).
        doc: the ``advisor.plan/1`` document, named after the scenario (for reports), or None.
    """

    name: str
    path: Path
    error: str | None = None
    option_id: str = ""
    option_name: str = ""
    kind: str = ""
    devices: int = 0
    hours: float = math.nan
    cost_usd: float = math.nan
    usd_per_device_h: float = math.nan
    best_by_kind_usd: dict = field(default_factory=dict)
    doc: dict | None = None


def summarize_scenario(path, catalog, calibration=None) -> ScenarioSummary:
    """Load and plan one scenario file (never raises: a failure becomes ``error``)."""
    from advisor.planner import PlanInputError, PlanRequest, plan
    from advisor.store.scenario import ScenarioError, job_values, load_scenario

    path = Path(path)
    try:
        scenario = load_scenario(path)
        result = plan(PlanRequest.from_mapping(job_values(scenario, path.name)), catalog, calibration)
    except (ScenarioError, PlanInputError, TypeError, ValueError) as exc:
        return ScenarioSummary(path.stem, path, error=" ".join(str(exc).split()))
    doc = result.to_json()
    doc["scenario"] = path.stem
    best = result.best()
    by_kind = {}
    for kind, _label in KINDS:
        o = result.best(kind)
        if o is not None:
            by_kind[kind] = o.cost_usd
    if best is None:
        return ScenarioSummary(path.stem, path, error="nothing in the catalog fits", doc=doc)
    per_h = best.cost_usd / best.device_hours if best.device_hours > 0 else math.nan
    return ScenarioSummary(path.stem, path, None, best.id, best.accelerator_name, best.kind, best.devices,
                           best.hours, best.cost_usd, per_h, by_kind, doc)


def summarize_scenarios(paths, catalog, calibration=None):
    """Generator: yields ``(done, total)`` after each file and returns the list of :class:`ScenarioSummary`."""
    out = []
    for i, path in enumerate(paths):
        out.append(summarize_scenario(path, catalog, calibration))
        yield (i + 1, len(paths))
    return out


def _columns() -> list[Column]:
    t = themes.current()
    return [
        Column("scenario", lambda s: s.name, cell_tip=lambda s: str(s.path), tip="the scenario file"),
        Column("cheapest option", lambda s: s.error and f"error: {s.error}" or f"{s.option_name} ({s.kind})",
               cell_tip=lambda s: s.error or s.option_id, color=lambda s: t.bad if s.error else None,
               tip="the cheapest option that fits (hover a cell for its id, or for the error)"),
        Column("devices", lambda s: s.devices or None, lambda v: "" if v is None else f"{v}", align_right=True,
               tip="devices of that option"),
        Column("time", lambda s: s.hours, fmt_hours, align_right=True, tip="wall-clock time of the job"),
        Column("total cost", lambda s: s.cost_usd, fmt_usd, align_right=True, tip="cost of the whole job, USD"),
        Column("$/device-hour", lambda s: s.usd_per_device_h, fmt_usd, align_right=True,
               tip="total cost over device-hours: the all-in price of one device for one hour, USD"),
    ]


class ScenarioCompareDialog(QDialog):
    """Scenario files compared side by side; more can be added, and the comparison exported as a report.

    Args:
        ctx: the window's :class:`AppContext` (catalog; calibration is read from the store).
        paths: the scenario files to start with.
    """

    def __init__(self, ctx, paths=(), parent=None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.setWindowTitle("Compare scenarios")
        self.setObjectName("scenarioCompareDialog")
        self.resize(1000, 680)
        self.paths: list[Path] = []
        self.summaries: list[ScenarioSummary] = []
        self._bars: list = []
        self._labels: list = []
        self._worker: GeneratorWorker | None = None
        self._pending = False
        self.ask_open_paths = _ask_open_paths
        self.ask_report_path = _ask_comparison_path
        self.reports = ReportWriter(self)
        self.reports.written.connect(self._on_reports_written)
        self.reports.failed.connect(self._on_reports_failed)

        layout = QVBoxLayout(self)
        top = QHBoxLayout()
        self.files = QListWidget()
        self.files.setMaximumHeight(90)
        self.files.setToolTip("The scenario files compared; select one and press Remove to drop it")
        top.addWidget(self.files, 1)
        buttons = QVBoxLayout()
        self.add_button = QPushButton("Add…")
        self.add_button.clicked.connect(self._on_add_clicked)
        self.remove_button = QPushButton("Remove")
        self.remove_button.clicked.connect(self._on_remove_clicked)
        self.export_button = QPushButton("Export report…")
        self.export_button.setToolTip("Write this comparison as HTML, PDF, Markdown or CSV (by the file's suffix)")
        self.export_button.clicked.connect(self._on_export_clicked)
        for b in (self.add_button, self.remove_button, self.export_button):
            buttons.addWidget(b)
        buttons.addStretch(1)
        top.addLayout(buttons)
        layout.addLayout(top)

        split = QSplitter(Qt.Orientation.Vertical)
        self.model = RecordTableModel(_columns(), [], self)
        self.table = make_view(make_proxy(self.model, self))
        self.table.setObjectName("scenarioCompareTable")
        split.addWidget(self.table)
        self.chart = plots.make_plot("Total job cost per scenario: the cheapest option of each kind",
                                     "total cost", "USD", x_label="scenario", x_unit="", legend=True,
                                     min_height=240, legend_columns=3)
        self.chart.setMouseEnabled(x=False, y=False)
        split.addWidget(self.chart)
        split.setSizes([220, 380])
        layout.addWidget(split, 1)
        self.status = QLabel()
        self.status.setStyleSheet(f"color: {themes.current().muted}")
        layout.addWidget(self.status)
        bottom = QHBoxLayout()
        bottom.addStretch(1)
        close = QPushButton("Close")
        close.clicked.connect(self.accept)
        bottom.addWidget(close)
        layout.addLayout(bottom)
        self.add_paths(paths)

    # ------------------------------------------------------------ files
    def add_paths(self, paths) -> None:
        """Add scenario files (duplicates ignored) and plan the list again."""
        for p in paths:
            p = Path(p)
            if p not in self.paths:
                self.paths.append(p)
                self.files.addItem(str(p))
        self.refresh()

    @Slot()
    def _on_add_clicked(self) -> None:
        self.add_paths(self.ask_open_paths(self))

    @Slot()
    def _on_remove_clicked(self) -> None:
        row = self.files.currentRow()
        if row >= 0:
            self.files.takeItem(row)
            del self.paths[row]
            self.refresh()

    # ------------------------------------------------------------ planning
    def refresh(self) -> None:
        """Plan every file in a worker (or once more after the running one)."""
        if self._worker is not None:
            self._pending = True
            return
        self.status.setText(f"Planning {len(self.paths)} scenario(s)…" if self.paths else
                            "Add scenario files to compare them.")
        from advisor.store.calibration import load_calibration

        self._worker = GeneratorWorker(summarize_scenarios, list(self.paths), self.ctx.catalog, load_calibration(),
                                       parent=self)
        self._worker.result_ready.connect(self._on_worker_result_ready)
        self._worker.failed.connect(self._on_worker_failed)
        self._worker.done.connect(self._on_worker_done)
        self._worker.start()

    def is_ready(self) -> bool:
        """True when the table shows the current list of files."""
        return self._worker is None and not self._pending and len(self.summaries) == len(self.paths)

    @Slot(object)
    def _on_worker_result_ready(self, summaries) -> None:
        if self._pending:
            return
        self.summaries = list(summaries)
        self.model.set_rows(self.summaries)
        fit_columns(self.table, max_width=320)
        self._draw(self.summaries)
        bad = [s for s in self.summaries if s.error]
        self.status.setText(f"{len(self.summaries)} scenario(s) planned"
                            + (f" · {len(bad)} could not be planned (hover the row)" if bad else ""))

    @Slot(str)
    def _on_worker_failed(self, reason: str) -> None:
        self.status.setText(f"Planning failed: {reason}")

    @Slot()
    def _on_worker_done(self) -> None:
        worker, self._worker = self._worker, None
        release(worker)
        if self._pending:
            self._pending = False
            self.refresh()

    def _draw(self, summaries) -> None:
        """Grouped bars: one group per scenario, one bar per option kind (its cheapest fitting total)."""
        plots.clear_bars(self.chart, self._bars)
        for label in self._labels:
            self.chart.removeItem(label)
        self._labels.clear()
        width = 0.8 / len(KINDS)
        top = 0.0
        for k, (kind, label) in enumerate(KINDS):
            xs, heights = [], []
            for i, s in enumerate(summaries):
                cost = s.best_by_kind_usd.get(kind)
                if cost is not None and math.isfinite(cost):
                    xs.append(i - 0.4 + width * (k + 0.5))
                    heights.append(cost)
                    top = max(top, cost)
                    if len(summaries) <= MAX_LABELLED:  # a cheap scenario's bar is too short to see beside a dear one
                        text = pg.TextItem(fmt_usd(cost), color=plots.theme().text, anchor=(0.5, 1))
                        text.setPos(xs[-1], cost)
                        self.chart.addItem(text)
                        self._labels.append(text)
            bar = pg.BarGraphItem(x=xs, height=heights, width=width * 0.9, brush=pg.mkBrush(plots.color(k)),
                                  pen=pg.mkPen(plots.theme().background, width=0.5), name=label)
            self.chart.addItem(bar)
            self._bars.append(bar)
        plots.set_categories(self.chart, [s.name for s in summaries])
        self.chart.setXRange(-0.6, max(len(summaries), 1) - 0.4, padding=0)
        self.chart.setYRange(0, (top or 1.0) * 1.15, padding=0)

    # ------------------------------------------------------------ report
    @Slot()
    def _on_export_clicked(self) -> None:
        path = self.ask_report_path(self)
        if path:
            self.export(path)

    def export(self, path) -> bool:
        """Write the planned scenarios as one report (format by suffix) in a worker. False when nothing started."""
        docs = [s.doc for s in self.summaries if s.doc is not None]
        if not docs:
            QMessageBox.information(self, "Export report", "No scenario could be planned: nothing to export.")
            return False
        if not self.reports.start(docs, path):
            return False
        self.status.setText(f"Writing {Path(path).name}…")
        return True

    @Slot(str)
    def _on_reports_written(self, path: str) -> None:
        self.status.setText(f"Report written to {path}")

    @Slot(str)
    def _on_reports_failed(self, reason: str) -> None:
        self.status.setText("")
        QMessageBox.warning(self, "Export report", f"Could not write the report: {reason}")

    # ------------------------------------------------------------ closing
    def done(self, result: int) -> None:  # every way out of the dialog (Close, Esc, window close)
        if self._worker is not None:
            self._pending = False
            self._worker.stop()
        self.reports.stop()
        super().done(result)


def _ask_open_paths(parent: QWidget) -> list[str]:
    paths, _ = QFileDialog.getOpenFileNames(parent, "Add scenario files", "", SCENARIO_FILTER)
    return paths


def _ask_comparison_path(parent: QWidget) -> str | None:
    return ask_report_path(parent, "Export the comparison", "comparison.html")
