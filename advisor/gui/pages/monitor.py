"""Monitor page: current values per GPU first, then live plots of the chosen GPUs and the host, the GPU
processes (sortable, filterable, stoppable when yours), the event log and CSV export.

Sampling and drawing are separate loops: the shared ``Sampler`` thread fills a
bounded history; a QTimer here drains it at the drawing rate (at most 4 redraws a second) and
updates plots that were built once, with ``setData`` (rule 10). A hidden page drains but does not draw;
curves of GPUs not chosen on the overview are hidden and not updated.
"""

from __future__ import annotations

import math
import time

import numpy as np
from PySide6.QtCore import QPoint, QRect, Qt, QTimer, Slot
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from advisor.gui.monitor_data import HOST_CHARTS, MIN_Y_RANGE, WINDOWS_S, export_csv
from advisor.gui.pages.base import Page
from advisor.gui.pages.machine import UTIL_TIP
from advisor.gui.safe_text import rich
from advisor.gui.widgets import plots
from advisor.gui.widgets.gpu_overview import GpuOverviewWidget
from advisor.gui.widgets.process_panel import ProcessPanelWidget
from advisor.gui.widgets.tables import Column, RecordTableModel, make_view
from advisor.gui.workers import GeneratorWorker

FIXED_Y = ("util", "temp", "cpu")  # charts in percent or °C keep 0..100
MIN_TICK_MS = 40
# Each chart is redrawn at most this often (or once per sample when slower), whatever the sampling rate: at 10 Hz a
# redraw adds ten points. Drawing at 2 Hz cost about 1.5 % of a core more with 16 GPUs sampled at 10 Hz (5.1-5.8 %
# in all, benchmarks/bench_monitor.py --gui), past the 5 % a monitor left running all day may take.
CHART_PERIOD_S = 1.0
OVERVIEW_PERIOD_S = 1.0  # current values once a second (as nvidia-smi -l 1): readable, and cheap with 16 GPUs
DRAW_BUDGET_S = 0.0  # one chart per tick: its data update and repaint stay well under 50 ms

# (key, title, y label, unit, metrics per GPU [(metric, dashed)], scale, tooltip)
GPU_CHARTS = (
    ("util", "GPU utilisation", "utilisation", "%", (("util_pct", False),), 1.0, UTIL_TIP),
    ("mem", "GPU memory used", "memory", "B", (("mem_used_bytes", False),), 1.0,
     "memory allocated on each device; the dashed line is the device's total"),
    ("power", "GPU power", "power", "W", (("power_w", False),), 1.0,
     "board power draw; the dashed line is the power limit"),
    ("temp", "GPU temperature", "temperature", "°C", (("temp_c", False),), 1.0, "GPU core temperature"),
    ("clock", "GPU clocks (SM solid, memory dashed)", "clock", "Hz", (("sm_clock_mhz", False), ("mem_clock_mhz", True)), 1e6,
     "SM clock (solid) and memory clock (dashed); clocks drop when the GPU throttles"),
    ("pcie", "PCIe traffic (rx solid, tx dashed)", "throughput", "B/s", (("pcie_rx_bps", False), ("pcie_tx_bps", True)), 1.0,
     "host-to-device (rx, solid) and device-to-host (tx, dashed) PCIe throughput, bytes per second"),
)
def _event_columns() -> list[Column]:
    return [Column("time", lambda e: e.clock), Column("GPU", lambda e: e.gpu_index, align_right=True),
            Column("kind", lambda e: e.kind), Column("what happened", lambda e: e.text, cell_tip=lambda e: e.text)]


class MonitorPage(Page):
    """Live charts over a chosen time window, with pause, interval, events, processes and CSV export."""

    page_id = "monitor"
    title = "Monitor"

    def __init__(self, ctx, parent=None) -> None:
        super().__init__(ctx, parent)
        self._curves: list[tuple[str, float, object]] = []  # (metric, scale, PlotDataItem)
        self._core_curves: list[tuple[str, object]] = []
        self._limit_lines: list[tuple[str, object]] = []  # (metric, InfiniteLine)
        self._chart_curves: dict[str, list] = {}  # chart key -> [(metric, scale, item)]
        self._chart_lines: dict[str, list] = {}  # chart key -> [(metric, InfiniteLine)]
        self._drawn_at: dict[str, float] = {}  # chart -> when it was last drawn (perf_counter), while in view
        self._tables_at = -1e9
        self._y_top: dict[str, float] = {}  # current top of each chart's vertical range
        self._plots: dict[str, object] = {}
        self._event_rows: list = []
        self._gpu_items: dict[int, list] = {}  # GPU index -> its curves and limit lines
        self._overview_seq, self._overview_at = -1, -1e9
        self._charts_in_view: int | None = None  # counted by each redraw; the tick rate follows it
        self._dirty = False
        self._overview_due = False  # the tables were updated on the last tick: the overview's turn is the next
        self._samples_seen = 0
        self._export_worker: GeneratorWorker | None = None
        self._visible = False

        layout = QVBoxLayout(self)
        layout.setContentsMargins(16, 12, 16, 8)
        layout.addLayout(self._toolbar())
        self.note = QLabel("Waiting for the hardware detection…")
        self.note.setWordWrap(True)
        layout.addWidget(self.note)
        self.overview = GpuOverviewWidget()
        self.overview.selection_changed.connect(self._on_overview_selection_changed)
        layout.addWidget(self.overview)

        split = QSplitter(Qt.Orientation.Vertical)
        scroll = self._scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        self._chart_host = QWidget()
        self._grid = QGridLayout(self._chart_host)
        self._grid.setContentsMargins(0, 0, 0, 0)
        self._grid.setSpacing(6)
        scroll.setWidget(self._chart_host)
        # a chart scrolled into view is drawn at once (charts out of view wait: see _redraw)
        scroll.verticalScrollBar().valueChanged.connect(self._on_charts_scrolled)
        split.addWidget(scroll)
        self.tabs = QTabWidget()
        self.processes = ProcessPanelWidget(self._signal_host)
        self.processes.status_changed.connect(self._on_processes_status_changed)
        self.process_model = self.processes.model
        self.process_view = self.processes.view
        self.event_model = RecordTableModel(_event_columns(), [], self)
        self.event_view = make_view(self.event_model)
        self.event_view.setObjectName("eventTable")
        self.tabs.addTab(self.processes, "GPU processes")
        self.tabs.addTab(self.event_view, "Events (throttling, lost GPUs)")
        self.tabs.setTabToolTip(1, "Throttle reasons reported by the driver and GPUs that disappear, as they happen")
        split.addWidget(self.tabs)
        split.setStretchFactor(0, 4)
        split.setStretchFactor(1, 1)
        split.setCollapsible(0, False)
        split.setSizes([1000, 420])
        self.tabs.setMinimumHeight(170)
        layout.addWidget(split, 1)

        self._timer = QTimer(self)
        self._timer.timeout.connect(self._on_timer_timeout)
        ctx.machine_ready.connect(self._on_ctx_machine_ready)
        ctx.sampler_ready.connect(self._on_ctx_sampler_ready)
        ctx.gpu_events.connect(self._on_ctx_gpu_events)
        if ctx.sampler is not None:
            self._on_ctx_machine_ready(ctx.machine)

    def _toolbar(self) -> QHBoxLayout:
        bar = QHBoxLayout()
        bar.addWidget(QLabel("<h2 style='margin:0'>Monitor</h2>"))
        bar.addSpacing(16)
        bar.addWidget(QLabel("Window"))
        self.window_box = QComboBox()
        for label, seconds in WINDOWS_S:
            self.window_box.addItem(label, seconds)
        self.window_box.setToolTip("How much history the charts show (the last hour is kept)")
        self.window_box.currentIndexChanged.connect(self._on_window_box_current_index_changed)
        bar.addWidget(self.window_box)
        bar.addWidget(QLabel("Interval"))
        self.interval_box = QDoubleSpinBox()
        self.interval_box.setRange(0.1, 10.0)
        self.interval_box.setSingleStep(0.1)
        self.interval_box.setDecimals(1)
        self.interval_box.setSuffix(" s")
        self.interval_box.setValue(1.0)
        self.interval_box.setToolTip("Seconds between samples (0.1 to 10). NVML refreshes utilisation every 1/6 to "
                                     "1 s depending on the GPU, so faster sampling repeats values.")
        self.interval_box.valueChanged.connect(self._on_interval_box_value_changed)
        bar.addWidget(self.interval_box)
        self.pause_button = QPushButton("Pause")
        self.pause_button.setCheckable(True)
        self.pause_button.setToolTip("Stop taking samples; the charts keep what they have (Ctrl+P)")
        self.pause_button.toggled.connect(self._on_pause_button_toggled)
        bar.addWidget(self.pause_button)
        pause_key = QShortcut(QKeySequence("Ctrl+P"), self, self.pause_button.toggle)
        pause_key.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self.per_core = QCheckBox("per core")
        self.per_core.setToolTip("Draw each logical core on the CPU chart")
        self.per_core.toggled.connect(self._on_per_core_toggled)
        bar.addWidget(self.per_core)
        bar.addStretch(1)
        self.status = QLabel()
        # A fixed size keeps its changing text from asking the whole window for a new layout (and a repaint
        # of every chart) several times a second.
        # As wide as its longest text, and no wider: at 1024 px the bar must fit the window.
        widest = self.status.fontMetrics().horizontalAdvance("99,999 samples kept · every 10 s") + 8
        self.status.setFixedSize(widest, self.status.sizeHint().height())
        self.status.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        bar.addWidget(self.status)
        self.export_button = QPushButton("Export CSV…")
        self.export_button.setToolTip("Save the window shown to a CSV file (columns of `advisor monitor --csv`)")
        self.export_button.clicked.connect(self._on_export_clicked)
        bar.addWidget(self.export_button)
        return bar

    # ------------------------------------------------------------ building (once)
    @Slot()
    def _on_ctx_sampler_ready(self) -> None:
        self._on_ctx_machine_ready(self.ctx.machine)

    @Slot(object)
    def _on_ctx_machine_ready(self, _profile) -> None:
        sampler = self.ctx.sampler
        if sampler is None or self._plots:
            return
        self.interval_box.blockSignals(True)
        self.interval_box.setValue(sampler.interval_s)
        self.interval_box.blockSignals(False)
        n = sampler.gpu_count
        names = [f"GPU {i}" for i in range(n)]
        machine = self.ctx.machine
        infos = {g.info.index: g.info.name for g in machine.gpus} if machine is not None else {}
        self.overview.set_gpus([infos.get(i, f"GPU {i}") for i in range(n)])
        charts = []
        if n:
            for key, title, ylabel, unit, metrics, scale, tip in GPU_CHARTS:
                # Past eight GPUs the overview's colour swatches are the legend.
                p = plots.make_plot(title, ylabel, unit, legend=(key == "util" and 1 < n <= 8),
                                    legend_columns=4 if n > 4 else 1)
                p.setToolTip(tip)
                for i in range(n):
                    for metric, dashed in metrics:
                        item = plots.add_line(p, names[i] if not dashed and key == "util" else None, i, dashed=dashed,
                                              live=True)
                        self._curves.append((f"gpu{i}_{metric}", scale, item))
                        self._chart_curves.setdefault(key, []).append((f"gpu{i}_{metric}", scale, item))
                        self._gpu_items.setdefault(i, []).append(item)
                    limit = {"power": ("power_limit_w", "limit"), "mem": ("mem_total_bytes", "total")}.get(key)
                    if limit:
                        # Equal limits overlap: stagger the labels along the line by GPU index.
                        line = plots.add_limit_line(p, None, f"GPU {i} {limit[1]}" if i else f"{limit[1]}",
                                                    index=i, label_position=0.97 - (0.16 * i) % 0.8)
                        self._limit_lines.append((f"gpu{i}_{limit[0]}", line))
                        self._chart_lines.setdefault(key, []).append((f"gpu{i}_{limit[0]}", line))
                        self._gpu_items.setdefault(i, []).append(line)
                if key in ("util", "temp"):
                    p.setYRange(0, 100)
                charts.append((key, p))
            self.note.setText(self._note_text(n))
        else:
            self.note.setText("No GPU to monitor (" + (rich(self.ctx.machine.gpu_backend.status, None) if self.ctx.machine
                              else "no backend") + "); the host charts below are live.")
        for key, title, ylabel, unit, metrics, tip in HOST_CHARTS:
            p = plots.make_plot(title, ylabel, unit, legend=True)
            p.setToolTip(tip)
            for _j, (metric, dashed, label) in enumerate(metrics):
                item = plots.add_line(p, label, 0, dashed=dashed, live=True)
                self._curves.append((metric, 1.0, item))
                self._chart_curves.setdefault(key, []).append((metric, 1.0, item))
            if key == "cpu":
                p.setYRange(0, 100)
            charts.append((key, p))
        cols = 3
        for k, (key, p) in enumerate(charts):
            self._plots[key] = p
            p.setMouseEnabled(x=False, y=False)
            # Never below zero, and never so narrow that a flat line at 0 gets "mB/s" ticks.
            unit = p.property("y_unit")
            p.getViewBox().setLimits(yMin=0, minYRange=MIN_Y_RANGE.get(unit, 1.0))
            self._grid.addWidget(p, k // cols, k % cols)
        for r in range((len(charts) + cols - 1) // cols):
            self._grid.setRowMinimumHeight(r, 190)
        self._apply_draw_rate()
        self._apply_selection()
        self._on_ctx_gpu_events(self.ctx.event_log)
        self._timer.start()
        self._redraw()

    def _note_text(self, n: int) -> str:
        return ("Click a GPU to draw it on the charts or hide it; colours follow the GPU index. "
                "Utilisation is the share of time a kernel was running, not how much of the GPU it used.")

    def _empty_reason(self, latest) -> str:
        machine = self.ctx.machine
        vendors = {g.info.vendor for g in machine.gpus} if machine is not None else set()
        if "apple" in vendors:
            return "macOS does not report per-process GPU use"
        if latest is not None and latest.gpus and all(g.state == "suspended" for g in latest.gpus):
            return "the GPU is asleep, so nothing runs on it"
        return ""

    def _signal_host(self):
        """The host backend that signals processes: the sampler's (simulated processes with a fake GPU)."""
        return self.ctx.sampler.host if self.ctx.sampler is not None else None

    def _apply_selection(self) -> None:
        chosen = self.overview.selected
        for i, items in self._gpu_items.items():
            for item in items:
                item.setVisible(i in chosen)
        if self._gpu_items:
            shown = sorted(chosen)
            text = ("GPU " + ", ".join(str(i) for i in shown)) if len(shown) <= 6 else f"{len(shown)} GPUs"
            self.note.setText(f"Charts draw {text}. " + self._note_text(len(self._gpu_items)))

    @Slot(object)
    def _on_overview_selection_changed(self, _chosen) -> None:
        self._apply_selection()
        self._y_top.clear()
        self._redraw()

    @Slot(object)
    def _on_ctx_gpu_events(self, events) -> None:
        for e in events:
            if e.kind == "state" and e.state == "lost":
                self.overview.mark_lost(e.gpu_index, e.wall_time_s)
        if events:
            self._event_rows = (list(events)[::-1] + self._event_rows)[:500]
            self.event_model.set_rows(self._event_rows)

    @Slot(str)
    def _on_processes_status_changed(self, text: str) -> None:
        self.status.setText(text)

    def show_events(self) -> None:
        """Bring the event log forward (the fault banner's "Event log")."""
        self.tabs.setCurrentIndex(1)

    # ------------------------------------------------------------ loop
    def _apply_draw_rate(self) -> None:
        """Ticks for the charts in view: one chart per tick, so that each is redrawn once per ``CHART_PERIOD_S`` or
        per sample, then one for the tables and one to spare. Charts out of view are not drawn (``_redraw``): with
        16 GPUs at 1280x720 three of ten charts are in view, and a tick for each of the ten (10 a second) drained
        the sampler and looked for a due chart twice as often as anything was drawn."""
        period_s = self._chart_period_s()
        charts = len(self._plots) if self._charts_in_view is None else self._charts_in_view
        interval = max(MIN_TICK_MS, int(1000 * period_s / (charts + 2)))
        if interval != self._timer.interval():
            self._timer.setInterval(interval)

    @Slot()
    def _on_timer_timeout(self) -> None:
        sampler = self.ctx.sampler
        if sampler is None:
            return
        new = sampler.drain()
        if new:
            self._samples_seen += len(new)
            self._dirty = True
        if self._dirty and self.isVisible():
            self._redraw(DRAW_BUDGET_S)

    def _redraw(self, budget_s: float | None = None) -> None:
        """Redraw the charts that are due; with a budget, only as many as fit in it (the rest on the next ticks).

        A chart is due once per chart period (``CHART_PERIOD_S``, or the sampling interval when slower) and only
        while it is in view: with 16 GPUs the cards push most charts below the fold. A chart out of view is due
        as soon as it scrolls into view. Without a budget (a new window, screenshots) every chart is drawn.
        """
        sampler = self.ctx.sampler
        if sampler is None:
            return
        full = budget_s is None or self.ctx.screenshot_mode
        now = time.perf_counter()
        period_s = self._chart_period_s()
        due = []
        in_view = 0
        for key, plot in self._plots.items():
            if not self._in_view(plot):
                self._drawn_at.pop(key, None)  # out of view: drawn again the moment it comes back
                if not full:
                    continue
            else:
                in_view += 1
            if full or now - self._drawn_at.get(key, -math.inf) >= 0.9 * period_s:
                due.append(key)
        if in_view != self._charts_in_view:
            self._charts_in_view = in_view
            self._apply_draw_rate()
        due.sort(key=lambda k: self._drawn_at.get(k, -math.inf))  # the longest waiting first
        window = float(self.window_box.currentData())
        drawn = 0
        for key in due:
            self._redraw_chart(key, sampler.history, window)
            self._drawn_at[key] = time.perf_counter()
            drawn += 1
            if budget_s is not None and time.perf_counter() - now > budget_s:
                break
        self._dirty = drawn < len(due)
        # the tables and the overview at the charts' pace, not every tick, each on a tick of its own: drawn in the
        # same pass as a chart, or as each other, two would be painted in one window repaint. The tables' tick, the
        # process table's repaint and the overview's in one pass were the GUI thread's longest spell (9-10 ms of
        # its CPU, benchmarks/bench_monitor.py --gui at load 1.2; the tick 2.2-2.5 ms, each paint 2.4-3.8 ms)
        if full:
            self._tables_at = now
            self._update_tables(sampler)
            self._update_overview(sampler)
        elif now - self._tables_at >= period_s and not drawn:
            self._tables_at = now
            self._update_tables(sampler)
            self._overview_due = True
            self._dirty = True  # the overview on the next tick
        elif self._overview_due and not drawn:
            self._overview_due = not self._update_overview(sampler)
        elif now - self._tables_at >= period_s or self._overview_due:
            self._dirty = True  # the next tick

    def _chart_period_s(self) -> float:
        sampler = self.ctx.sampler
        return max(CHART_PERIOD_S, sampler.interval_s if sampler else 1.0)

    def _redraw_chart(self, key: str, history, window: float) -> None:
        curves = list(self._chart_curves.get(key, ()))
        if key == "cpu":
            curves += [(m, 1.0, i) for m, i in self._core_curves if i.isVisible()]
        top = 0.0
        shown = [(metric, scale, item) for metric, scale, item in curves if item.isVisible()]  # a GPU not chosen
        # on the overview is neither drawn nor updated; the others are read at one moment, on one time axis
        times, rows = history.windows([metric for metric, _scale, _item in shown], window)
        if len(times):
            x = times - times[-1]
            for (_metric, scale, item), values in zip(shown, rows, strict=True):
                y = values * scale if scale != 1.0 else values
                if np.isfinite(y).all():  # the common case: no gap to leave (pyqtgraph's finite path copies twice)
                    item.setData(x, y, connect="all", skipFiniteCheck=True)
                    top = max(top, float(y.max()))
                else:  # a lost GPU or a reading not available: a gap in the line
                    item.setData(x, y, connect="finite")
                    if np.isfinite(y).any():
                        top = max(top, float(np.nanmax(y)))
        first = None
        chosen = self.overview.selected
        for i, (metric, line) in enumerate(self._chart_lines.get(key, ())):
            value = history.latest(metric)
            shown = value is not None and int(metric[3:metric.index("_")]) in chosen
            if line.isVisible() != shown:
                line.setVisible(shown)
            if value is not None:
                if line.value() != value:  # a limit rarely moves: an unchanged one is not laid out again
                    line.setValue(value)
                top = max(top, value)
                first = value if i == 0 else first
                # One label when every GPU has the same limit; a label per GPU only where it differs.
                label = i == 0 or value != first
                if line.label.isVisible() != label:
                    line.label.setVisible(label)
        self._grow_y(key, top)
        left = -window
        if self.ctx.screenshot_mode and len(history):  # a fresh recording fills the picture, not its last 5 %
            times, _ = history.window(curves[0][0], window) if curves else ((), ())
            if len(times) > 1:
                left = -max(5.0, float(times[-1] - times[0]))
        self._plots[key].setXRange(left, 0, padding=0)

    def _grow_y(self, key: str, top: float) -> None:
        """A vertical range that only grows (and restarts with the window): auto-ranging every redraw would
        re-lay out the axis and re-clip every curve, the most expensive part of a redraw."""
        if key in FIXED_Y:
            return
        current = self._y_top.get(key, 0.0)
        if top > current or top < 0.3 * current:
            new = max(top * 1.2, MIN_Y_RANGE.get(self._plots[key].property("y_unit"), 1.0))
            self._y_top[key] = new
            self._plots[key].setYRange(0, new, padding=0)

    def _update_tables(self, sampler) -> None:
        latest = sampler.latest()
        books = self.ctx.books.current() if getattr(self.ctx, "books", None) is not None else None
        self.processes.set_rows(sampler.processes(), latest.wall_time_s if latest is not None else None,
                                self._empty_reason(latest), books=books)
        state = "paused" if sampler.paused else f"every {sampler.interval_s:g} s"
        text = f"{len(sampler.history):,} samples kept · {state}"
        if text != self.status.text():
            self.status.setText(text)

    def _update_overview(self, sampler) -> bool:
        """The overview repaints at most ``OVERVIEW_PERIOD_S`` apart, and only for a new sample; False while a new
        sample waits for that period to pass."""
        latest = sampler.latest()
        if latest is None or latest.seq == self._overview_seq:
            return True
        now = time.perf_counter()
        if now - self._overview_at < OVERVIEW_PERIOD_S:
            return False
        self._overview_seq, self._overview_at = latest.seq, now
        self.overview.update_sample(latest)
        return True

    def _in_view(self, plot) -> bool:
        """Whether any of a chart lies in the scrolled view (geometry only: ``visibleRegion`` also depends on
        what the window system reports as exposed)."""
        viewport = self._scroll.viewport()
        return QRect(plot.mapTo(viewport, QPoint(0, 0)), plot.size()).intersects(viewport.rect())

    @Slot(int)
    def _on_charts_scrolled(self, _value: int) -> None:
        if self.isVisible():
            self._redraw(DRAW_BUDGET_S)  # a chart just scrolled into view is due

    # ------------------------------------------------------------ controls
    @Slot(int)
    def _on_window_box_current_index_changed(self, _i: int) -> None:
        self._y_top.clear()
        self._redraw()

    @Slot(float)
    def _on_interval_box_value_changed(self, value: float) -> None:
        if self.ctx.sampler is not None:
            self.ctx.sampler.set_interval(round(value, 1))
            self._apply_draw_rate()

    @Slot(bool)
    def _on_pause_button_toggled(self, paused: bool) -> None:
        sampler = self.ctx.sampler
        self.pause_button.setText("Resume" if paused else "Pause")
        if sampler is None:
            return
        sampler.pause() if paused else sampler.resume()
        self._redraw()

    @Slot(bool)
    def _on_per_core_toggled(self, on: bool) -> None:
        sampler = self.ctx.sampler
        cpu = self._plots.get("cpu")
        if sampler is None or cpu is None:
            return
        if not self._core_curves:
            cores = [m for m in sampler.history.metrics if m.startswith("cpu") and m[3:4].isdigit()]
            for k, metric in enumerate(cores):
                item = plots.add_line(cpu, None, k + 1, width=1.0, live=True)
                item.setOpacity(0.5)
                self._core_curves.append((metric, item))
        for _m, item in self._core_curves:
            item.setVisible(on)
        self._redraw()

    @Slot()
    def _on_export_clicked(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Export the recorded window", "monitor.csv", "CSV files (*.csv)")
        if path:
            self.export(path)

    def export(self, path: str) -> GeneratorWorker | None:
        """Write the window shown to ``path`` in a worker; returns the worker (None without a sampler)."""
        sampler = self.ctx.sampler
        if sampler is None or self._export_worker is not None:
            return None
        window = float(self.window_box.currentData())
        w = GeneratorWorker(export_csv, sampler.history, sampler.gpu_count, window, path,
                            sampler.wall_start_s or 0.0, self.ctx.simulated, parent=self)
        w.result_ready.connect(self._on_export_result_ready)
        w.failed.connect(self._on_export_failed)
        w.done.connect(self._on_export_done)
        self._export_worker = w
        self.export_button.setEnabled(False)
        w.start()
        return w

    @Slot(object)
    def _on_export_result_ready(self, rows) -> None:
        self.status.setText(f"exported {rows} rows")

    @Slot(str)
    def _on_export_failed(self, reason: str) -> None:
        self.status.setText(f"export failed: {reason}")

    @Slot()
    def _on_export_done(self) -> None:
        self._export_worker = None
        self.export_button.setEnabled(True)

    # ------------------------------------------------------------ page hooks
    def on_shown(self) -> None:
        latest = self.ctx.sampler.latest() if self.ctx.sampler is not None else None
        if latest is not None:
            self.overview.update_sample(latest)
        self._redraw()

    def save_state(self, s) -> None:
        s.setValue("monitor/window_s", self.window_box.currentData())
        s.setValue("monitor/interval_s", self.interval_box.value())
        s.setValue("monitor/per_core", self.per_core.isChecked())

    def restore_state(self, s) -> None:
        try:
            window = int(s.value("monitor/window_s", 60))
        except (TypeError, ValueError):
            window = 60
        i = self.window_box.findData(window)
        self.window_box.setCurrentIndex(max(0, i))
        self.per_core.setChecked(str(s.value("monitor/per_core", "false")).lower() == "true")

    def is_ready(self) -> bool:
        need = 25 if self.ctx.screenshot_mode else 5  # a screenshot of live data waits for a few seconds of it
        return bool(self._plots) and self.ctx.sampler is not None and len(self.ctx.sampler.history) >= need

    def prepare_screenshot(self) -> None:
        self.window_box.setCurrentIndex(0)

    def shutdown(self) -> None:
        self._timer.stop()
        if self._export_worker is not None:
            self._export_worker.stop()
