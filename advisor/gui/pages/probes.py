"""Probes page: pick probes and a device, run them with progress and cancel, see curves against the peak.

Probes run in a ``GeneratorWorker`` (torch is imported inside the probe, never at start-up). Results go
to the probe history; a history row can be shown again beside the latest run. When a run offers
calibration values (MFU from train-step, bandwidth efficiency from device-bandwidth) the user can
hand them to the planner, or return to the priors.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt, Slot
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QProgressBar,
    QPushButton,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from advisor.gui import theme as themes
from advisor.gui.pages.base import Page
from advisor.gui.probe_runner import ProbeFinished, ProbeStarted, history_entries, run_probes
from advisor.gui.safe_text import plain, rich
from advisor.gui.widgets import plots
from advisor.gui.widgets.tables import Column, RecordTableModel, fit_columns, make_view
from advisor.gui.workers import GeneratorWorker, release
from advisor.probes.labels import run_mode

SCREENSHOT_PARAMS = {"host-bandwidth": {"elements": 8_000_000, "reps": 4, "trials": 1}}
EMPTY_TEXT = ("<b>Nothing measured yet.</b><br>Tick a probe on the left, pick the device and press <b>Run</b> "
              "(a quick host-bandwidth run takes seconds). The results show here, on the Machine page, "
              "and can calibrate the planner.")


def _kernel_rows(result) -> list[dict]:
    return [{"probe": result.probe, "device": result.device, "run": run_mode(result.params), "kernel": k,
             "best": v.best, "median": v.median, "unit": v.unit, "fraction": v.fraction_of_peak}
            for k, v in result.results.items()]


def _result_columns() -> list[Column]:
    return [Column("probe", lambda r: r["probe"]), Column("device", lambda r: r["device"]),
            Column("run", lambda r: r["run"], tip="quick (smaller arrays, fewer repetitions) or full: not comparable"),
            Column("kernel", lambda r: r["kernel"]),
            Column("best", lambda r: r["best"], lambda v: f"{v:,.2f}", align_right=True,
                   tip="the headline: the best of the per-trial medians (one lucky repetition does not make it)"),
            Column("median", lambda r: r["median"], lambda v: f"{v:,.2f}", align_right=True),
            Column("unit", lambda r: r["unit"], tip="GB/s = 1e9 bytes per second; TFLOP/s = 1e12 FLOP per second"),
            Column("of peak", lambda r: r["fraction"], lambda v: f"{100 * v:.0f} %", align_right=True,
                   tip="best / the device's peak (catalog or driver figure)")]


def _history_columns() -> list[Column]:
    def summary(e):
        best = e.best()
        return ", ".join(f"{k} {v:,.1f} {u}" for k, (v, u) in list(best.items())[:3]) if best else ""

    return [Column("when", lambda e: e.started_at[:19].replace("T", " "), tip="start time (UTC)"),
            Column("probe", lambda e: e.probe), Column("device", lambda e: e.device),
            Column("run", lambda e: e.mode, tip="quick or full: a quick run is not comparable with a full one"),
            Column("result", lambda e: e.skipped and f"skipped: {e.skipped}" or summary(e),
                   cell_tip=lambda e: e.skipped or summary(e)),
            Column("time (s)", lambda e: e.duration_s, lambda v: f"{v:,.1f}", align_right=True)]


class ProbesPage(Page):
    """Measure this machine and calibrate the planner."""

    page_id = "probes"
    title = "Probes"

    def __init__(self, ctx, parent=None) -> None:
        super().__init__(ctx, parent)
        from advisor.probes import PROBES, CancelToken

        self._token_cls = CancelToken
        self._token = None
        self._worker: GeneratorWorker | None = None
        self.runs: list = []
        self.last_error = ""
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        split = QSplitter(Qt.Orientation.Horizontal)
        layout.addWidget(split)

        left = QWidget()
        ll = QVBoxLayout(left)
        ll.setContentsMargins(16, 12, 8, 12)
        ll.addWidget(QLabel("<h2 style='margin:0'>Probes</h2>"))
        ll.addWidget(QLabel("Tick the measurements to run:"))
        self.probe_list = QListWidget()
        self.probe_list.setObjectName("probeList")
        self.probe_list.setWordWrap(True)
        self.probe_list.setUniformItemSizes(False)
        for name, info in PROBES.items():
            item = QListWidgetItem(f"{info.title}  [{name}]")
            item.setData(Qt.ItemDataRole.UserRole, name)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked if name == "host-bandwidth" else Qt.CheckState.Unchecked)
            item.setToolTip(f"{info.title}. Devices: {', '.join(info.devices)}")
            self.probe_list.addItem(item)
        ll.addWidget(self.probe_list, 1)
        row = QHBoxLayout()
        row.addWidget(QLabel("Device"))
        self.device_box = QComboBox()
        self.device_box.addItem("cpu", "cpu")
        self.device_box.setToolTip("cpu, or a GPU as torch numbers it (cuda:N)")
        row.addWidget(self.device_box, 1)
        ll.addLayout(row)
        self.quick = QCheckBox("quick (seconds, not minutes)")
        self.quick.setChecked(True)
        ll.addWidget(self.quick)
        drow = QHBoxLayout()
        drow.addWidget(QLabel("Disk folder"))
        self.disk_path = QLineEdit()
        self.disk_path.setPlaceholderText("the advisor's cache folder")
        self.disk_path.setToolTip("The disk probe measures the disk holding this folder: put the folder your "
                                  "data sets are in (it writes a scratch file there and removes it)")
        drow.addWidget(self.disk_path, 1)
        ll.addLayout(drow)
        buttons = QHBoxLayout()
        self.run_button = QPushButton("Run")
        self.run_button.setDefault(True)
        self.run_button.clicked.connect(self._on_run_clicked)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.cancel_button.setToolTip("Stops within about a second; what the probe allocated is freed")
        self.cancel_button.clicked.connect(self._on_cancel_clicked)
        buttons.addWidget(self.run_button)
        buttons.addWidget(self.cancel_button)
        ll.addLayout(buttons)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setValue(0)
        ll.addWidget(self.progress)
        self.message = QLabel("torch is loaded only when a probe that needs it runs.")
        self.message.setTextFormat(Qt.TextFormat.RichText)  # names in it go through rich()
        self.message.setWordWrap(True)
        ll.addWidget(self.message)
        self.calibrate_button = QPushButton("Use these measurements in the planner")
        self.calibrate_button.setEnabled(False)
        self.calibrate_button.setToolTip("Replace the planner's MFU / bandwidth priors for this machine with the "
                                         "values measured by train-step and device-bandwidth")
        self.calibrate_button.clicked.connect(self._on_calibrate_clicked)
        ll.addWidget(self.calibrate_button)
        self.prior_button = QPushButton("Return to the priors")
        self.prior_button.clicked.connect(self._on_prior_clicked)
        ll.addWidget(self.prior_button)
        self.calibration_label = QLabel()
        self.calibration_label.setWordWrap(True)
        ll.addWidget(self.calibration_label)
        split.addWidget(left)

        right = QWidget()
        rl = QVBoxLayout(right)
        rl.setContentsMargins(8, 12, 16, 8)
        self.chart = plots.make_plot("Measured rates (bars: best, dots: median; dashed: the peak)", "rate", "",
                                     x_label="kernel", x_unit="", legend=True, min_height=260)
        self.chart.setMouseEnabled(x=False, y=False)
        plots.set_empty_text(self.chart, EMPTY_TEXT)
        rl.addWidget(self.chart, 3)
        self.tabs = QTabWidget()
        self.result_model = RecordTableModel(_result_columns(), [], self)
        self.result_view = make_view(self.result_model)
        self.result_view.setAccessibleName("Probe results")
        self.history_model = RecordTableModel(_history_columns(), [], self)
        self.history_view = make_view(self.history_model)
        self.history_view.setObjectName("historyTable")
        self.history_view.setToolTip("Select a run to show it in the chart; select two runs of one probe "
                                     "(Ctrl+click) to compare them")
        self.history_view.selectionModel().selectionChanged.connect(self._on_history_selection_changed)
        self.tabs.addTab(self.result_view, "Results")
        self.tabs.addTab(self.history_view, "History")
        rl.addWidget(self.tabs, 2)
        split.addWidget(right)
        split.setSizes([380, 1000])
        self._series: dict[str, object] = {}
        self._live_x: dict[str, list] = {}
        self._live_y: dict[str, list] = {}
        ctx.machine_ready.connect(self._on_ctx_machine_ready)
        if ctx.machine is not None:
            self._on_ctx_machine_ready(ctx.machine)
        self._refresh_history()
        self._show_calibration()

    # ------------------------------------------------------------ running
    @Slot(object)
    def _on_ctx_machine_ready(self, machine) -> None:
        for g in machine.gpus:
            if self.device_box.findData(f"cuda:{g.info.index}") < 0:
                self.device_box.addItem(f"cuda:{g.info.index} — {plain(g.info.name)}", f"cuda:{g.info.index}")

    def checked_probes(self) -> list[str]:
        return [self.probe_list.item(i).data(Qt.ItemDataRole.UserRole) for i in range(self.probe_list.count())
                if self.probe_list.item(i).checkState() == Qt.CheckState.Checked]

    def set_checked(self, names) -> None:
        for i in range(self.probe_list.count()):
            item = self.probe_list.item(i)
            on = item.data(Qt.ItemDataRole.UserRole) in names
            item.setCheckState(Qt.CheckState.Checked if on else Qt.CheckState.Unchecked)

    @Slot()
    def _on_run_clicked(self) -> None:
        self.start(self.checked_probes())

    def start(self, names, params: dict | None = None) -> GeneratorWorker | None:
        """Run probes in a worker; returns it (None when one is running or nothing is ticked). Screenshot and demo
        runs measure but store nothing in the probe history (a screenshot under load must not change later plans)."""
        if self._worker is not None or not names:
            return None
        folder = self.disk_path.text().strip()
        if folder and "disk" in names:
            from pathlib import Path

            if not Path(folder).is_dir():
                self.message.setText(f"Disk folder: {folder} is not a folder")
                return None
            params = {**(params or {}), "disk": {**(params or {}).get("disk", {}), "directory": folder}}
        self._token = self._token_cls()
        self.runs = []
        self._clear_chart()
        self.progress.setValue(0)
        w = GeneratorWorker(run_probes, list(names), self.device_box.currentData(), self.quick.isChecked(),
                            self._token, params, not self.ctx.screenshot_mode, parent=self)
        w.progressed.connect(self._on_worker_progressed)
        w.result_ready.connect(self._on_worker_result_ready)
        w.failed.connect(self._on_worker_failed)
        w.cancelled.connect(self._on_worker_cancelled)
        w.done.connect(self._on_worker_done)
        self._worker = w
        self.run_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        self.message.setText("starting…")
        w.start()
        return w

    def cancel(self) -> None:
        """Ask the running probe to stop (it stops within about a second)."""
        if self._token is not None:
            self._token.cancel()
        if self._worker is not None:
            self._worker.cancel()

    @Slot()
    def _on_cancel_clicked(self) -> None:
        self.cancel()
        self.message.setText("cancelling…")

    @Slot(object)
    def _on_worker_progressed(self, event) -> None:
        if isinstance(event, ProbeStarted):
            self._current = event
            self.message.setText(f"{event.name} ({event.index + 1} of {event.count})…")
            return
        if isinstance(event, ProbeFinished):
            self._show_result(event.run.result)
            self.ctx.add_probe_result(event.run.result)
            return
        cur = getattr(self, "_current", None)
        if cur is not None:
            self.progress.setValue(int(1000 * (cur.index + max(0.0, min(1.0, event.fraction))) / cur.count))
            self.message.setText(f"{rich(cur.name)}: {rich(event.message)}")
        if event.point:
            self._add_point(event.point)

    @Slot(object)
    def _on_worker_result_ready(self, runs) -> None:
        self.runs = list(runs or [])
        self.progress.setValue(1000)
        skipped = [rich(f"{r.result.probe}: {r.result.skipped}") for r in self.runs if r.result.skipped]
        notes = [rich(n, None) for r in self.runs for n in r.result.notes][:3]  # notes name devices and files
        notes += sorted({rich(r.store_error, None) for r in self.runs if getattr(r, "store_error", None)})[:1]
        self.message.setText(f"done: {len(self.runs)} probe(s)" + (". Skipped — " + "; ".join(skipped)
                                                                      if skipped else "")
                             + ("<br>" + "<br>".join(notes) if notes else ""))
        self.calibrate_button.setEnabled(any(r.result.calibration for r in self.runs))

    @Slot(str)
    def _on_worker_failed(self, reason: str) -> None:
        self.last_error = reason
        self.message.setText(f"<span style='color:{themes.current().bad}'>failed: {rich(reason, None)}</span>")

    @Slot()
    def _on_worker_cancelled(self) -> None:
        self.message.setText("cancelled; nothing was stored for the probe that was running")

    @Slot()
    def _on_worker_done(self) -> None:
        worker, self._worker = self._worker, None
        release(worker)
        self.run_button.setEnabled(True)
        self.cancel_button.setEnabled(False)
        self._refresh_history()

    # ------------------------------------------------------------ drawing
    def _clear_chart(self) -> None:
        self.chart.clear()
        self._series.clear()
        self._live_x.clear()
        self._live_y.clear()

    def _add_point(self, point) -> None:
        plots.set_empty_text(self.chart, None)
        name = str(point.get("series", "measured"))
        if name not in self._series:
            self._series[name] = plots.add_line(self.chart, name, len(self._series))
            self._series[name].setSymbol("o")
            self._live_x[name], self._live_y[name] = [], []
            self.chart.getPlotItem().setLabel("bottom", "size / problem", units="")
        self._live_x[name].append(float(point["x"]))
        self._live_y[name].append(float(point["y"]))
        self._series[name].setData(self._live_x[name], self._live_y[name])

    def _show_result(self, result) -> None:
        rows = [r for run in self.runs for r in _kernel_rows(run.result)] + _kernel_rows(result)
        self.result_model.set_rows(rows)
        fit_columns(self.result_view)
        self.tabs.setCurrentIndex(0)
        if result.skipped or not result.results:
            return
        if not self._series:  # no curve came live: draw the kernels as bars
            self._draw_bars(result)
        unit = next(iter(result.results.values())).unit
        self.chart.getPlotItem().setLabel("left", "rate", units=unit)
        peak = (result.peak or {}).get(unit)
        if peak:
            plots.add_limit_line(self.chart, peak, f"peak {peak:,.0f} {unit} ({result.peak.get('origin', '')})")

    def _draw_bars(self, result) -> None:
        plots.set_empty_text(self.chart, None)
        self.chart.clear()
        names = list(result.results)
        best = [result.results[k].best for k in names]
        median = [result.results[k].median for k in names]
        bars = pg.BarGraphItem(x=list(range(len(names))), height=best, width=0.55, brush=pg.mkBrush(plots.color(0)),
                               name="best")
        self.chart.addItem(bars)
        dots = pg.PlotDataItem(list(range(len(names))), median, pen=None, symbol="o", symbolSize=9,
                               symbolBrush=pg.mkBrush(plots.color(1)), name="median")
        self.chart.addItem(dots)
        plots.set_categories(self.chart, names)
        self.chart.getPlotItem().setLabel("bottom", f"{result.probe} on {result.device}", units="")
        self.chart.setXRange(-0.6, len(names) - 0.4, padding=0)
        self.chart.setYRange(0, max(best) * 1.2, padding=0)

    def _refresh_history(self) -> None:
        self.history_model.set_rows(history_entries())
        fit_columns(self.history_view)
        self.tabs.setTabText(1, f"History ({self.history_model.rowCount()})")

    @Slot()
    def _on_history_selection_changed(self, *_args) -> None:
        rows = self.history_view.selectionModel().selectedRows()
        if not rows:
            return
        if len(rows) == 2:
            a, b = sorted((self.history_model.rows()[r.row()] for r in rows), key=lambda e: (e.started_at, e.id))
            if a.probe == b.probe and not a.skipped and not b.skipped:
                self._compare_runs(a, b)
                return
        entry = self.history_model.rows()[rows[0].row()]
        from advisor.probes import ProbeResult

        result = ProbeResult.from_dict(entry.result)
        self._clear_chart()
        for kernel, points in (result.details.get("sweep") or {}).items():
            for x, y in points:
                self._add_point({"series": kernel, "x": x, "y": y})
        self.runs = []
        self._show_result(result)
        self.tabs.setCurrentIndex(1)

    def _compare_runs(self, a, b) -> None:
        """Two stored runs of one probe side by side: grouped bars of each kernel's best and the ratios."""
        plots.set_empty_text(self.chart, None)
        self._clear_chart()
        best_a, best_b = a.best(), b.best()
        kernels = [k for k in best_a if k in best_b]
        if not kernels:
            return
        for i, (entry, best, shift) in enumerate(((a, best_a, -0.2), (b, best_b, 0.2))):
            bars = pg.BarGraphItem(x=[j + shift for j in range(len(kernels))], height=[best[k][0] for k in kernels],
                                   width=0.38, brush=pg.mkBrush(plots.color(i)),
                                   name=f"{entry.started_at[:16].replace('T', ' ')} {entry.device}")
            self.chart.addItem(bars)
        plots.set_categories(self.chart, kernels)
        unit = best_a[kernels[0]][1]
        self.chart.getPlotItem().setLabel("left", "rate", units=unit)
        self.chart.getPlotItem().setLabel("bottom", f"{a.probe}: two runs compared", units="")
        self.chart.setXRange(-0.6, len(kernels) - 0.4, padding=0)
        ratios = ", ".join(f"{k} {best_b[k][0] / best_a[k][0]:.2f}×" for k in kernels if best_a[k][0])
        self.message.setText(f"later run against earlier run: {ratios}")

    # ------------------------------------------------------------ calibration
    @Slot()
    def _on_calibrate_clicked(self) -> None:
        from advisor.probes.session import calibration_from
        from advisor.store.calibration import load_calibration, save_calibration

        calib = calibration_from([r.result for r in self.runs], previous=load_calibration())
        if calib is not None:
            save_calibration(calib)
            self.ctx.calibration_changed.emit()
        self._show_calibration()

    @Slot()
    def _on_prior_clicked(self) -> None:
        from advisor.store.calibration import clear_calibration

        clear_calibration()
        self.ctx.calibration_changed.emit()
        self._show_calibration()

    def _show_calibration(self) -> None:
        from advisor.store.calibration import load_calibration

        try:
            c = load_calibration()
        except Exception:  # a broken file is kept aside by the store
            c = None
        if c is None:
            self.calibration_label.setText("The planner uses its published priors (no measurement saved).")
            self.prior_button.setEnabled(False)
            return
        parts = [f"MFU {c.mfu:.2f}" if c.mfu else "", f"bandwidth efficiency {c.eta_mem:.2f}" if c.eta_mem else ""]
        self.calibration_label.setText(f"The planner uses this machine's {' and '.join(p for p in parts if p)}, "
                                       f"measured on {c.belongs_to} at {c.measured_at[:16]}.")
        self.prior_button.setEnabled(True)

    # ------------------------------------------------------------ page hooks
    def save_state(self, s) -> None:
        s.setValue("probes/checked", ",".join(self.checked_probes()))
        s.setValue("probes/quick", self.quick.isChecked())
        s.setValue("probes/disk_path", self.disk_path.text().strip())

    def restore_state(self, s) -> None:
        checked = s.value("probes/checked", "host-bandwidth")
        if isinstance(checked, str):
            self.set_checked(checked.split(","))
        self.quick.setChecked(str(s.value("probes/quick", "true")).lower() == "true")
        self.disk_path.setText(str(s.value("probes/disk_path", "") or ""))

    def is_ready(self) -> bool:
        return self._worker is None

    def prepare_screenshot(self) -> None:
        self.set_checked(["host-bandwidth"])
        self.start(["host-bandwidth"], SCREENSHOT_PARAMS)

    def shutdown(self) -> None:
        if self._worker is not None:
            self.cancel()
            self._worker.stop()
