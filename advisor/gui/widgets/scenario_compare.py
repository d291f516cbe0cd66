"""Several scenario files side by side: each one's cheapest option in a table, and two charts on log axes
(a 2-hour and a 2-month job, a $5 and a $50,000 one, stay readable side by side): the cheapest total of
each kind per scenario, and every fitting option's time against its cost with each scenario's Pareto
front drawn and its ends labelled (read from the plans' ``pareto`` ids, never priced again).

The plans run in a :class:`GeneratorWorker` (about 25 ms each), so a long list never blocks the GUI
thread; :func:`summarize_scenarios` is the Qt-free generator it runs. A file that cannot be read or
planned gets a row with its one-line reason instead of figures. With no file the charts give way to a
line that says how to add scenarios.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import pyqtgraph as pg
from PySide6.QtCore import Qt, Slot
from PySide6.QtGui import QFont
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
from advisor.gui.compare_data import front_points
from advisor.gui.report_export import ReportWriter, ask_report_path
from advisor.gui.safe_text import set_plain, tell
from advisor.gui.widgets import plots
from advisor.gui.widgets.tables import Column, RecordTableModel, fit_columns, make_proxy, make_view
from advisor.gui.workers import GeneratorWorker, release
from advisor.units import fmt_hours, fmt_usd, fmt_usd_short

KINDS = (("home", "home rig"), ("onprem", "on-prem"), ("cloud", "cloud"))
SCENARIO_FILTER = "Scenario files (*.toml);;All files (*)"
MAX_LABELLED = 6  # scenarios up to which each bar carries its total as text
EMPTY_TEXT = ("<b>No scenarios to compare yet.</b><br>Press <b>Add…</b> to choose scenario files (TOML). To make "
              "one, set up a job on the Planner page and use <b>File › Save as…</b> (Ctrl+Shift+S), or run "
              "<code>advisor plan … --save-scenario FILE</code>. Each file gets a row with its cheapest option; "
              "its options are drawn here, time against cost.")


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


def summarize_scenario(path, catalog, calibration=None, owned=(), host=None) -> ScenarioSummary:
    """Load and plan one scenario file (never raises: a failure becomes ``error``).

    Args:
        owned / host: this machine's GPUs and host figures (``AppContext.plan_kw``), as the app plans its job.
    """
    from advisor.planner import PlanInputError, PlanRequest, plan
    from advisor.store.scenario import ScenarioError, job_values, load_scenario

    path = Path(path)
    try:
        scenario = load_scenario(path)
        result = plan(PlanRequest.from_mapping(job_values(scenario, path.name)), catalog, calibration, owned=owned,
                      host=host)
    except (ScenarioError, PlanInputError, TypeError, ValueError) as exc:
        return ScenarioSummary(path.stem, path, error=" ".join(str(exc).split()))
    return summary_of(path.stem, path, result)


def summary_of(name: str, path: Path, result) -> ScenarioSummary:
    """A plan result reduced to its cheapest option and the cheapest of each kind (read, never priced again)."""
    doc = result.to_json()
    doc["scenario"] = name
    best = result.best()
    by_kind = {}
    for kind, _label in KINDS:
        o = result.best(kind)
        if o is not None:
            by_kind[kind] = o.cost_usd
    if best is None:
        return ScenarioSummary(name, path, error="nothing in the catalog fits", doc=doc)
    per_h = best.cost_usd / best.device_hours if best.device_hours > 0 else math.nan
    return ScenarioSummary(name, path, None, best.id, best.accelerator_name, best.kind, best.devices,
                           best.hours, best.cost_usd, per_h, by_kind, doc)


def summarize_scenarios(paths, catalog, calibration=None, **kw):
    """Generator: yields ``(done, total)`` after each file and returns the list of :class:`ScenarioSummary`."""
    out = []
    for i, path in enumerate(paths):
        out.append(summarize_scenario(path, catalog, calibration, **kw))
        yield (i + 1, len(paths))
    return out


def _columns(colour_of=lambda _s: None) -> list[Column]:
    """``colour_of(summary)``: the colour of the scenario's front in the chart (its name is shown in it)."""
    t = themes.current()
    return [
        Column("scenario", lambda s: s.name, cell_tip=lambda s: str(s.path), color=colour_of,
               tip="the scenario file (in the colour of its Pareto front in the chart)"),
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
        current: also show the app's current job (``ctx.plan``) as the first row, following its changes.
    """

    def __init__(self, ctx, paths=(), parent=None, current: bool = False) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.file_summaries: list[ScenarioSummary] = []
        self.current: ScenarioSummary | None = None  # the app's current job, when shown
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
        self._colours: dict[int, str] = {}  # id(summary) -> the colour of its front
        self.model = RecordTableModel(_columns(lambda s: self._colours.get(id(s))), [], self)
        self.table = make_view(make_proxy(self.model, self))
        self.table.setObjectName("scenarioCompareTable")
        split.addWidget(self.table)
        charts = QWidget()
        row = QHBoxLayout(charts)
        row.setContentsMargins(0, 0, 0, 0)
        self.chart = plots.make_plot("Cheapest total of each kind per scenario (log scale)",
                                     "total cost", "USD", x_label="scenario", x_unit="", legend=True,
                                     min_height=240, legend_columns=3)
        self.chart.setLogMode(y=True)
        self.scatter = plots.make_plot("Time against cost, Pareto front per scenario (log axes)", "job cost",
                                       "USD", x_label="job time", x_unit="", min_height=240)
        self.scatter.setLogMode(x=True, y=True)
        self.scatter.setToolTip("Dots: every option that fits. Lines: each scenario's Pareto front, the options no "
                                "other option of that scenario beats on both time and cost, in the colour of its "
                                "row in the table; its cheapest end is labelled (and its fastest, with two "
                                "scenarios or fewer).")
        self._scatter_items: list = []
        self._small_font = QFont()
        self._small_font.setPointSize(7)
        for p in (self.chart, self.scatter):
            p.setMouseEnabled(x=False, y=False)
            row.addWidget(p, 1)
        self.empty = QLabel(EMPTY_TEXT)
        self.empty.setObjectName("scenarioCompareEmpty")
        self.empty.setWordWrap(True)
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty.setTextFormat(Qt.TextFormat.RichText)
        self.empty.setMargin(24)
        row.addWidget(self.empty, 1)
        split.addWidget(charts)
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
        if current:  # the dialog observes the app's plan model: the row follows the Planner's edits
            self._plan = ctx.plan
            self._plan.plan_ready.connect(self._on_plan_changed)
            self._plan.stale_changed.connect(self._on_plan_changed)
            self._on_plan_changed()
        self.add_paths(paths)

    @Slot()
    def _on_plan_changed(self, *_args) -> None:
        result = self._plan.result
        self.current = None if result is None else summary_of("current job", Path("(the Planner's inputs)"), result)
        if self.is_ready():
            self._show_rows()

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
        if not self.paths:
            self._draw([])
        from advisor.store.calibration import load_calibration

        self._worker = GeneratorWorker(summarize_scenarios, list(self.paths), self.ctx.catalog, load_calibration(),
                                       **self.ctx.plan_kw(), parent=self)
        self._worker.result_ready.connect(self._on_worker_result_ready)
        self._worker.failed.connect(self._on_worker_failed)
        self._worker.done.connect(self._on_worker_done)
        self._worker.start()

    def is_ready(self) -> bool:
        """True when the table shows the current list of files."""
        return self._worker is None and not self._pending and len(self.file_summaries) == len(self.paths)

    @Slot(object)
    def _on_worker_result_ready(self, summaries) -> None:
        if self._pending:
            return
        self.file_summaries = list(summaries)
        self._show_rows()

    def _show_rows(self) -> None:
        self.summaries = ([self.current] if self.current is not None else []) + self.file_summaries
        self._colours = {id(s): plots.color(i).name() for i, s in enumerate(self.summaries)}
        self.model.set_rows(self.summaries)
        fit_columns(self.table, max_width=320)
        self._draw(self.summaries)
        bad = [s for s in self.summaries if s.error]
        self.status.setText("Add scenario files to compare them." if not self.summaries else
                            f"{len(self.summaries)} scenario(s) planned"
                            + (f" · {len(bad)} could not be planned (hover the row)" if bad else ""))

    @Slot(str)
    def _on_worker_failed(self, reason: str) -> None:
        set_plain(self.status, f"Planning failed: {reason}")

    @Slot()
    def _on_worker_done(self) -> None:
        worker, self._worker = self._worker, None
        release(worker)
        if self._pending:
            self._pending = False
            self.refresh()

    def _draw(self, summaries) -> None:
        """Grouped bars on a log cost axis (one group per scenario, one bar per option kind: its cheapest total)
        and every scenario's options, time against cost, with its Pareto front."""
        empty = not summaries
        self.empty.setVisible(empty)
        self.chart.setVisible(not empty)
        self.scatter.setVisible(not empty)
        plots.clear_bars(self.chart, self._bars)
        for label in self._labels:
            self.chart.removeItem(label)
        self._labels.clear()
        costs = [c for s in summaries for c in s.best_by_kind_usd.values() if c > 0 and math.isfinite(c)]
        if not costs:
            self._draw_front(summaries)
            return
        floor = math.floor(math.log10(min(costs))) - 0.3  # bars rise from below the cheapest, in log10 units
        top = math.log10(max(costs))
        width = 0.8 / len(KINDS)
        for k, (kind, label) in enumerate(KINDS):
            xs, heights = [], []
            for i, s in enumerate(summaries):
                cost = s.best_by_kind_usd.get(kind)
                if cost is not None and cost > 0 and math.isfinite(cost):
                    xs.append(i - 0.4 + width * (k + 0.5))
                    heights.append(math.log10(cost) - floor)
                    if len(summaries) <= MAX_LABELLED:
                        text = pg.TextItem(fmt_usd_short(cost), color=plots.theme().text, anchor=(0.5, 1))
                        text.setFont(self._small_font)
                        text.setPos(xs[-1], math.log10(cost))
                        self.chart.addItem(text)
                        self._labels.append(text)
            bar = pg.BarGraphItem(x=xs, y0=[floor] * len(xs), height=heights, width=width * 0.9,
                                  brush=pg.mkBrush(plots.color(k)), pen=pg.mkPen(plots.theme().background, width=0.5),
                                  name=label)
            self.chart.addItem(bar)
            self._bars.append(bar)
        plots.set_categories(self.chart, [s.name for s in summaries])
        self.chart.setXRange(-0.6, max(len(summaries), 1) - 0.4, padding=0)
        self.chart.setYRange(floor, top + 0.45, padding=0)  # room above the tallest bar for its label
        plots.set_log_ticks(self.chart, "left", plots.USD_TICKS, 10 ** floor, 10 ** (top + 0.45))
        self._draw_front(summaries)

    def _draw_front(self, summaries) -> None:
        for it in self._scatter_items:
            self.scatter.removeItem(it)
        self._scatter_items.clear()
        every = [p for s in summaries for p in (front_points(s.doc) if s.doc else [])]
        if every:  # ranges with room for the labels, ticks people read
            h_lo, h_hi = min(p.hours for p in every), max(p.hours for p in every)
            c_lo, c_hi = min(p.cost_usd for p in every), max(p.cost_usd for p in every)
            x0, x1 = math.log10(h_lo) - 0.3, math.log10(h_hi) + 0.3
            y0, y1 = math.log10(c_lo) - 0.3, math.log10(c_hi) + 0.6
            self.scatter.setXRange(x0, x1, padding=0)
            self.scatter.setYRange(y0, y1, padding=0)
            plots.set_log_ticks(self.scatter, "bottom", plots.HOUR_TICKS, 10 ** x0, 10 ** x1)
            plots.set_log_ticks(self.scatter, "left", plots.USD_TICKS, 10 ** y0, 10 ** y1)
        placed: list[tuple[float, float]] = []  # labels' (x, y) in chart fractions, to step the next one clear
        for i, s in enumerate(summaries):
            points = front_points(s.doc) if s.doc else []
            if not points:
                continue
            c = plots.color(i)
            faint = plots.color(i)
            faint.setAlpha(90)
            dots = pg.PlotDataItem([p.hours for p in points], [p.cost_usd for p in points], pen=None, symbol="o",
                                   symbolSize=5, symbolBrush=pg.mkBrush(faint), symbolPen=None)
            front = [p for p in points if p.on_front]
            line = pg.PlotDataItem([p.hours for p in front], [p.cost_usd for p in front],
                                   pen=pg.mkPen(c, width=2), symbol="o", symbolSize=8, symbolBrush=pg.mkBrush(c),
                                   symbolPen=None)
            self.scatter.addItem(dots)
            self.scatter.addItem(line)
            self._scatter_items += [dots, line]
            # The cheapest end of each front is labelled, and the fastest too while few fronts share the chart.
            ends = [(front[-1], (1.05, 0.0))] + ([(front[0], (-0.05, 1.0))] if len(front) > 1 and len(summaries) <= 2
                                                 else [])
            for p, (ax, ay) in ends:
                rel_x = (math.log10(p.hours) - x0) / (x1 - x0)
                rel_y = (math.log10(p.cost_usd) - y0) / (y1 - y0)
                ax = -0.05 if rel_x < 0.35 else 1.05 if rel_x > 0.6 else ax  # the text stays inside the chart
                ay = 1.0 if rel_y < 0.2 else ay
                while any(abs(rel_y - y) < 0.07 and abs(rel_x - x) < 0.3 for x, y in placed):
                    rel_y -= 0.07 if ay == 0.0 else -0.07  # away from the label already there
                placed.append((rel_x, rel_y))
                label = pg.TextItem(p.label, color=c, anchor=(ax, ay))
                label.setPos(math.log10(p.hours), y0 + rel_y * (y1 - y0))  # log axes: positions in log10
                self.scatter.addItem(label)
                self._scatter_items.append(label)

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
        tell(self, "Export report", f"Could not write the report: {reason}")

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
