"""The Fleet page: every node's GPUs and processes, live, from a Prometheus server or from exporters read
directly, and where the Planner's job fits now.

The page owns a ``fleet.watch.FleetWatcher``; a QTimer calls its ``refresh`` once a second, which never waits
on a node (requests run on the watcher's threads), so a dead node cannot stall the page or the other nodes:
it is greyed by the second refresh. Rows come from the watcher's view; the totals per node from
``fleet.model.summarise`` (the terminal's ``advisor fleet watch`` shows the same); the fit is
``fleet.fit.fleet_now`` on the Planner's last plan (what ``advisor plan --fleet --json`` gives).

With simulated hardware (``--fake-gpu``) the page watches a simulated fleet (three nodes and one that never
answers) so it can be seen and tested without one; nothing of it is saved.
"""

from __future__ import annotations

from PySide6.QtCore import QSettings, Qt, QTimer, Slot
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QComboBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QSplitter,
    QVBoxLayout,
)

from advisor.fleet.model import summarise
from advisor.gui.pages.base import Page
from advisor.gui.widgets.tables import Column, RecordTableModel, fit_columns, make_view
from advisor.gui.widgets.wrapped import WrappedLabel
from advisor.units import fmt_mem

REFRESH_MS = 1000
GREY = "gray"
SOURCES = (("prometheus", "Prometheus server"), ("scrape", "Exporters (URLs, space between)"))
SIMULATED_FLEET = {"sim-h100": "8xh100-sxm", "sim-4090": "2x4090", "sim-mi300x": "2xmi300x"}
SIMULATED_DEAD = ("sim-dead",)


def _num(fmt: str):
    return lambda v: "—" if v is None else format(v, fmt)


def _mem(v) -> str:
    return "—" if v is None else fmt_mem(v)


def _grey(row) -> str | None:
    return GREY if row[0].greyed else None


def node_columns() -> list[Column]:
    return [
        Column("node", lambda r: r[0].name, cell_tip=lambda r: r[0].url, color=_grey),
        Column("state", lambda r: r[0].state, cell_tip=lambda r: r[0].error or "", color=_grey,
               tip="up; stale: figures older than 5 s; down: no answer; waiting: not yet answered"),
        Column("age (s)", lambda r: r[0].age_s, _num(".1f"), align_right=True, color=_grey),
        Column("GPUs", lambda r: r[1].gpus, align_right=True, color=_grey),
        Column("util (%)", lambda r: r[1].mean_util_pct, _num(".0f"), align_right=True, color=_grey),
        Column("free memory", lambda r: r[1].mem_free_bytes, _mem, align_right=True, color=_grey),
        Column("total memory", lambda r: r[1].mem_total_bytes, _mem, align_right=True, color=_grey),
        Column("power (W)", lambda r: r[1].power_w, _num(".0f"), align_right=True, color=_grey),
        Column("processes", lambda r: r[1].processes, align_right=True, color=_grey),
    ]


def gpu_columns() -> list[Column]:
    return [
        Column("node", lambda r: r[0].name, color=_grey),
        Column("GPU", lambda r: r[1].index, align_right=True, color=_grey),
        Column("model", lambda r: r[1].name, color=_grey),
        Column("vendor", lambda r: r[1].vendor, color=_grey),
        Column("util (%)", lambda r: r[1].util_pct, _num(".0f"), align_right=True, color=_grey),
        Column("used", lambda r: r[1].mem_used_bytes, _mem, align_right=True, color=_grey),
        Column("free", lambda r: r[1].mem_free_bytes, _mem, align_right=True, color=_grey),
        Column("power (W)", lambda r: r[1].power_w, _num(".0f"), align_right=True, color=_grey),
        Column("temp (°C)", lambda r: r[1].temp_c, _num(".0f"), align_right=True, color=_grey),
    ]


def process_columns() -> list[Column]:
    return [
        Column("node", lambda r: r[0].name, color=_grey),
        Column("PID", lambda r: r[1].pid, align_right=True, color=_grey),
        Column("user", lambda r: r[1].user, color=_grey),
        Column("job", lambda r: r[1].job, color=_grey, tip="Slurm job id from the process's environment, or --job"),
        Column("GPU", lambda r: r[1].gpu, align_right=True, color=_grey),
        Column("memory", lambda r: r[1].gpu_mem_bytes, _mem, align_right=True, color=_grey),
        Column("GPU-hours", lambda r: None if r[1].gpu_seconds is None else r[1].gpu_seconds / 3600, _num(".3f"),
               align_right=True, color=_grey),
        Column("energy (kWh)", lambda r: None if r[1].energy_j is None else r[1].energy_j / 3.6e6, _num(".4f"),
               align_right=True, color=_grey),
        Column("cost (USD)", lambda r: r[1].cost_usd, _num(".4f"), align_right=True, color=_grey),
    ]


class FleetPage(Page):
    """The live fleet and where the planned job fits on it."""

    page_id = "fleet"
    title = "Fleet"

    def __init__(self, ctx, parent=None) -> None:
        super().__init__(ctx, parent)
        self.watcher = None
        self.view = None
        self._sim_nodes: dict = {}
        layout = QVBoxLayout(self)
        layout.setContentsMargins(16, 12, 16, 12)
        layout.addWidget(QLabel("<h2 style='margin:0'>Fleet</h2>"))
        layout.addWidget(WrappedLabel("Every node's GPUs and processes, read from a Prometheus server or from "
                                      "exporters (advisor monitor --serve-metrics, or NVIDIA's DCGM exporter). A "
                                      "node that stops answering is greyed."))
        bar = QHBoxLayout()
        self.source_box = QComboBox()
        for key, text in SOURCES:
            self.source_box.addItem(text, key)
        self.source_box.setToolTip("Where the fleet is read from")
        self.url_edit = QLineEdit()
        self.url_edit.setPlaceholderText("http://prometheus:9090  or  node1:9400 node2:9400")
        self.url_edit.setToolTip("The Prometheus server's URL, or the exporters' URLs")
        self.url_edit.returnPressed.connect(self._on_watch_clicked)
        self.watch_button = QPushButton("Watch")
        self.watch_button.setToolTip("Start reading the fleet from this source")
        self.watch_button.clicked.connect(self._on_watch_clicked)
        bar.addWidget(self.source_box)
        bar.addWidget(self.url_edit, 1)
        bar.addWidget(self.watch_button)
        layout.addLayout(bar)
        self.message = WrappedLabel()
        self.message.setTextFormat(Qt.TextFormat.PlainText)  # quotes URLs and errors from outside: never markup
        self.message.setObjectName("fleetMessage")
        layout.addWidget(self.message)
        self.fit_label = QLabel()  # fixed-width lines, not wrapped: the ranking is a table
        self.fit_label.setTextFormat(Qt.TextFormat.PlainText)
        self.fit_label.setObjectName("fleetFit")
        self.fit_label.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))  # the ranking's columns
        self.fit_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.fit_label.setToolTip("Where the Planner's job fits now: the nodes ranked by GPUs free for it, and "
                                  "the launch line")
        # the ranking's long lines (the launch line) scroll on their own, so the page fits a 1024-pixel window
        self.fit_scroll = QScrollArea()
        self.fit_scroll.setWidget(self.fit_label)
        self.fit_scroll.setWidgetResizable(True)
        self.fit_scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.fit_scroll.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        layout.addWidget(self.fit_scroll)
        self._show_fit("")
        self.node_model = RecordTableModel(node_columns())
        self.gpu_model = RecordTableModel(gpu_columns())
        self.process_model = RecordTableModel(process_columns())
        split = QSplitter(Qt.Orientation.Vertical)
        for model, name in ((self.node_model, "fleetNodes"), (self.gpu_model, "fleetGpus"),
                            (self.process_model, "fleetProcesses")):
            view = make_view(model)
            view.setObjectName(name)
            split.addWidget(view)
        self.node_view, self.gpu_view, self.process_view = (split.widget(i) for i in range(3))
        layout.addWidget(split, 1)
        self.timer = QTimer(self, interval=REFRESH_MS)
        self.timer.timeout.connect(self._on_timer_timeout)

    # ------------------------------------------------------------ sources
    def _watch(self, source) -> None:
        from advisor.fleet.watch import FleetWatcher

        self._stop()
        self.watcher = FleetWatcher(source, interval_s=REFRESH_MS / 1000)
        self.message.setText(f"watching {len(source.targets())} target(s) ({source.label})"
                             + (" — simulated fleet" if source.simulated else ""))
        self.timer.start()
        self._on_timer_timeout()

    def watch_simulated(self) -> None:
        """Watch the simulated fleet (simulated hardware only)."""
        from advisor.fleet.simulated import simulated_fleet
        from advisor.fleet.sources import SimulatedSource

        self._sim_nodes = simulated_fleet(SIMULATED_FLEET)
        self._watch(SimulatedSource(self._sim_nodes, dead=SIMULATED_DEAD))

    @Slot()
    def _on_watch_clicked(self) -> None:
        from advisor.fleet.sources import PrometheusSource, ScrapeSource, SourceError

        text = self.url_edit.text().strip()
        try:
            if self.source_box.currentData() == "prometheus":
                source = PrometheusSource(text)
            else:
                source = ScrapeSource(text.split())
        except SourceError as exc:
            self.message.setText(str(exc))
            return
        self._sim_nodes = {}
        self._watch(source)

    @Slot()
    def _on_timer_timeout(self) -> None:
        if self.watcher is None:
            return
        for node in self._sim_nodes.values():
            node.advance(REFRESH_MS / 1000)
        self.show_view(self.watcher.refresh())

    def show_view(self, view) -> None:
        """Fill the tables and the fit from one view of the fleet."""
        self.view = view
        self.node_model.set_rows([(n, summarise(n)) for n in view.nodes])
        self.gpu_model.set_rows([(n, g) for n in view.nodes for g in n.gpus])
        self.process_model.set_rows([(n, p) for n in view.nodes for p in n.processes if p.running])
        self._show_fit(self._fit_text(view))

    def _show_fit(self, text: str) -> None:
        """The fit's lines, their box as tall as they are (and its scroll bar) and as wide as the page."""
        self.fit_label.setText(text)
        self.fit_scroll.setFixedHeight((self.fit_label.sizeHint().height() if text else 0)
                                       + self.fit_scroll.horizontalScrollBar().sizeHint().height())

    def _fit_text(self, view) -> str:
        from advisor.commands.fleet_fit import fleet_now_text
        from advisor.fleet.fit import fleet_now

        plan = self.ctx.last_plan if self.ctx.has_plan_model else None
        if plan is None:
            return "Plan a job on the Planner page to see where it fits on the fleet now."
        return fleet_now_text(fleet_now(view, plan.to_json()))

    def _stop(self) -> None:
        self.timer.stop()
        if self.watcher is not None:
            self.watcher.close()
            self.watcher = None

    # ------------------------------------------------------------ page hooks
    def on_shown(self) -> None:
        if self.watcher is None and self.ctx.simulated:
            self.watch_simulated()
        elif self.watcher is not None:
            self.timer.start()

    def on_hidden(self) -> None:
        self.timer.stop()  # a hidden page reads nothing

    def prepare_screenshot(self) -> None:
        if self.ctx.simulated:
            self.watch_simulated()
            self.show_view(self.watcher.snapshot(2.0))
            fit_columns(self.node_view)
            fit_columns(self.gpu_view)
            fit_columns(self.process_view)

    def is_ready(self) -> bool:
        return self.watcher is None or (self.view is not None and all(n.state != "waiting" for n in self.view.nodes))

    def save_state(self, s: QSettings) -> None:
        s.setValue("fleet/source", self.source_box.currentData())
        s.setValue("fleet/url", self.url_edit.text()[:4096])

    def restore_state(self, s: QSettings) -> None:
        source, url = s.value("fleet/source"), s.value("fleet/url")
        i = self.source_box.findData(source) if isinstance(source, str) else -1
        if i >= 0:
            self.source_box.setCurrentIndex(i)
        if isinstance(url, str):
            self.url_edit.setText(url[:4096])

    def shutdown(self) -> None:
        self._stop()
        for node in self._sim_nodes.values():
            node.close()
        self._sim_nodes = {}
