"""The main window: a navigation sidebar, the pages, the simulated-hardware banner, saved state.

Pages are built the first time they are shown (the Machine page at start-up), which keeps the first
paint fast; ``--screenshot`` builds and renders them all.
"""

from __future__ import annotations

import gc
import importlib
from pathlib import Path

from PySide6.QtCore import QByteArray, Qt, Slot
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QHBoxLayout, QLabel, QListWidget, QListWidgetItem, QMainWindow, QStackedWidget, QVBoxLayout, QWidget

from advisor.gui.safe_text import plain
from advisor.gui.widgets.cards import banner

# (page id, module, class, sidebar title, tooltip): the order of the sidebar and of the shortcuts Ctrl+1..9 (the
# first nine pages).
PAGES = (
    ("machine", "advisor.gui.pages.machine", "MachinePage", "Machine",
     "What this computer has: CPU, GPUs, their catalog peaks and measured figures"),
    ("monitor", "advisor.gui.pages.monitor", "MonitorPage", "Monitor",
     "Live utilisation, memory, power, temperature, clocks and PCIe traffic"),
    ("probes", "advisor.gui.pages.probes", "ProbesPage", "Probes",
     "Measure bandwidth and TFLOP/s on this machine and calibrate the planner"),
    ("planner", "advisor.gui.pages.planner", "PlannerPage", "Planner",
     "Will a model fit, on how many devices, and how long will the job take"),
    ("serve", "advisor.gui.pages.serve", "ServePage", "Serve",
     "How many users a model serves within a latency target, what each sees, and what a million requests cost"),
    ("compare", "advisor.gui.pages.compare", "ComparePage", "Compare",
     "Home rig, on-prem and cloud: what the job costs and when owning pays off"),
    ("catalog", "advisor.gui.pages.catalog", "CatalogPage", "Catalog",
     "Accelerators, cloud prices and model presets with their sources and dates"),
    ("models", "advisor.gui.pages.models", "ModelsPage", "Models",
     "Models in the Hugging Face cache, Ollama and LM Studio, and whether each fits this machine"),
    ("buy", "advisor.gui.pages.buy", "BuyPage", "Buy",
     "What to buy for your jobs within a budget (cards, Macs, upgrades of your GPUs), against renting"),
    ("runs", "advisor.gui.pages.runs", "RunsPage", "Runs",
     "Your own runs: what they measured, what the advisor predicted, and how far to trust the next plan"),
    ("fleet", "advisor.gui.pages.fleet", "FleetPage", "Fleet",
     "Many machines live, from Prometheus or their exporters, and where the planned job fits now"),
)


class MainWindow(QMainWindow):
    """The app's one window. ``ctx`` is the shared :class:`advisor.gui.context.AppContext`."""

    def __init__(self, ctx, parent=None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.setWindowTitle("Hardware Advisor" + (" — simulated hardware" if ctx.simulated else ""))
        self.setMinimumSize(900, 600)
        self._pages: dict[str, QWidget] = {}
        self._current: str | None = None

        central = QWidget()
        outer = QVBoxLayout(central)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.setSpacing(0)
        self.banner = banner(
            f"<b>Simulated hardware</b>: the GPUs shown come from the fake scenario "
            f"<b>{ctx.fake_gpu}</b>, not from this machine.", "warn")
        self.banner.setObjectName("simulatedBanner")
        self.banner.setVisible(ctx.simulated)
        self.banner.setToolTip("Started with --fake-gpu or ADVISOR_FAKE_GPU; start without it to see the real GPUs.")
        outer.addWidget(self.banner)
        from advisor.gui.widgets.fault_banner import FaultBannerWidget

        self.fault_banner = FaultBannerWidget()  # lost GPUs, Xid errors, thermal throttling: on every page
        self.fault_banner.log_requested.connect(self._on_fault_banner_log_requested)
        ctx.gpu_events.connect(self.fault_banner.add_events)
        outer.addWidget(self.fault_banner)

        body = QHBoxLayout()
        body.setContentsMargins(0, 0, 0, 0)
        body.setSpacing(0)
        self.nav = QListWidget()
        self.nav.setObjectName("navigation")
        self.nav.setFixedWidth(150)
        self.nav.setAccessibleName("Pages")
        self.nav.setStyleSheet("QListWidget#navigation { font-size: 11pt; border: none; padding-top: 6px; }"
                               "QListWidget#navigation::item { padding: 9px 12px; }")
        self.stack = QStackedWidget()
        for i, (pid, _m, _c, title, tip) in enumerate(PAGES):
            item = QListWidgetItem(title)
            item.setData(Qt.ItemDataRole.UserRole, pid)
            item.setToolTip(f"{tip}  (Ctrl+{i + 1})" if i < 9 else tip)
            self.nav.addItem(item)
            placeholder = QLabel("Loading…")
            placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
            self.stack.addWidget(placeholder)
            if i < 9:  # Ctrl+1 to Ctrl+9: a tenth page has no digit of its own
                shortcut = QShortcut(QKeySequence(f"Ctrl+{i + 1}"), self)
                shortcut.setObjectName(f"shortcut_{pid}")
                shortcut.activated.connect(self._on_shortcut_activated)
        self.nav.currentRowChanged.connect(self._on_nav_current_row_changed)
        body.addWidget(self.nav)
        body.addWidget(self.stack, 1)
        outer.addLayout(body, 1)
        self.setCentralWidget(central)

        self.statusBar().showMessage("Loading the catalog and detecting this machine…")
        ctx.machine_ready.connect(self._on_ctx_machine_ready)
        ctx.catalog_changed.connect(self._show_catalog_status)
        ctx.hardware_failed.connect(self._on_ctx_hardware_failed)
        if ctx.catalog_loaded:
            self._show_catalog_status()
        from advisor.gui.scenario_actions import ScenarioController

        self.scenarios = ScenarioController(self)  # the File menu: scenario files and reports
        ctx.page_requested.connect(self._on_ctx_page_requested)
        self._restore_window()
        ctx.start_hardware()

    @Slot(object)
    def _on_ctx_machine_ready(self, _profile) -> None:
        self._show_catalog_status()

    @Slot(str)
    def _on_ctx_hardware_failed(self, _reason: str) -> None:
        self._show_catalog_status()

    @Slot()
    def _show_catalog_status(self) -> None:
        from advisor.cost.price_dates import price_summary

        cat = self.ctx.catalog  # loaded by now (by the detection worker, or by a page that needed it)
        prices = price_summary(cat.offers, cat.date, cat.prices_as_of)
        self.statusBar().showMessage(plain(  # the prices' dates can come from a user catalog
            f"Catalog {cat.date} · {prices}"
            + (f" · {len(cat.warnings)} catalog warning(s)" if cat.warnings else ""), None))

    # ------------------------------------------------------------ pages
    def page(self, page_id: str) -> QWidget:
        """The page with this id, built on first use."""
        if page_id not in self._pages:
            row = [p[0] for p in PAGES].index(page_id)
            _pid, module, cls, _t, _tip = PAGES[row]
            page = getattr(importlib.import_module(module), cls)(self.ctx)
            page.restore_state(self.ctx.settings)
            page.restore_layout(self.ctx.settings)
            page.name_controls()
            old = self.stack.widget(row)
            self.stack.insertWidget(row, page.in_scroll_area())
            self.stack.removeWidget(old)
            old.deleteLater()
            self._pages[page_id] = page
            # The page's thousands of long-lived objects go to the permanent GC generation: a full
            # collection then scans only new objects (100+ ms saved per pass, on the GUI thread).
            gc.freeze()
        return self._pages[page_id]

    def current_page(self):
        """The visible page (the stack holds each page inside its scroll area)."""
        area = self.stack.currentWidget()
        return getattr(area, "page", None)

    def show_page(self, page_id: str) -> None:
        """Make a page the visible one (and select it in the sidebar)."""
        row = [p[0] for p in PAGES].index(page_id)
        if self.nav.currentRow() != row:
            self.nav.setCurrentRow(row)
        else:
            self._on_nav_current_row_changed(row)

    @Slot(int)
    def _on_nav_current_row_changed(self, row: int) -> None:
        if row < 0:
            return
        pid = PAGES[row][0]
        if pid == self._current:
            return
        if self._current in self._pages:
            self._pages[self._current].on_hidden()
        page = self.page(pid)
        self.stack.setCurrentIndex(row)
        self._current = pid
        page.on_shown()

    @Slot(str)
    def _on_ctx_page_requested(self, page_id: str) -> None:
        if page_id in [p[0] for p in PAGES]:
            self.show_page(page_id)

    @Slot()
    def _on_fault_banner_log_requested(self) -> None:
        self.show_page("monitor")
        self.page("monitor").show_events()

    @Slot()
    def _on_shortcut_activated(self) -> None:
        pid = self.sender().objectName().removeprefix("shortcut_")
        self.show_page(pid)
        self.nav.setFocus()

    # ------------------------------------------------------------ state
    def _restore_window(self) -> None:
        s = self.ctx.settings
        geometry = s.value("window/geometry")
        if isinstance(geometry, QByteArray) and not geometry.isEmpty():
            self.restoreGeometry(geometry)
        else:
            self.resize(1280, 820)
        state = s.value("window/state")
        if isinstance(state, QByteArray) and not state.isEmpty():
            self.restoreState(state)
        last = s.value("window/page", "machine")
        self.show_page(last if last in [p[0] for p in PAGES] else "machine")

    def save_state(self) -> None:
        """Write window geometry, the visible page and every built page's inputs."""
        s = self.ctx.settings
        s.setValue("window/geometry", self.saveGeometry())
        s.setValue("window/state", self.saveState())
        if self._current:
            s.setValue("window/page", self._current)
        for page in self._pages.values():
            page.save_state(s)
            page.save_layout(s)
        self.ctx.save_plan_inputs()
        s.sync()

    def shutdown(self) -> None:
        """Stop every page's timers and workers (idempotent)."""
        for page in self._pages.values():
            page.shutdown()
        self.ctx.shutdown()

    def closeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        if not self.scenarios.confirm_close():  # unsaved scenario changes: the user chose Cancel
            event.ignore()
            return
        if not self.ctx.screenshot_mode:
            self.save_state()
        self.shutdown()
        super().closeEvent(event)

    # ------------------------------------------------------------ screenshots
    def render_screenshots(self, directory: Path, timeout_s: float = 25.0) -> list[Path]:
        """Build every page, fill it with representative content and save ``<dir>/<page>.png``.

        Returns:
            The files written, in sidebar order.
        Raises:
            OSError: a file that cannot be written (read-only or full folder); the PNG is encoded in memory
                and written atomically, so a failed write leaves no cut-short image.
        """
        from PySide6.QtCore import QBuffer, QByteArray, QIODevice

        from advisor.store.atomic import write_atomic

        directory.mkdir(parents=True, exist_ok=True)
        self.ctx.screenshot_mode = True
        for pid, *_ in PAGES:
            self.page(pid).prepare_screenshot()
        written = []
        for pid, *_ in PAGES:
            self.show_page(pid)
            page = self.page(pid)
            page.wait_ready(timeout_s)
            _settle()
            path = directory / f"{pid}.png"
            data = QByteArray()
            buffer = QBuffer(data)
            buffer.open(QIODevice.WriteOnly)
            if not self.grab().save(buffer, "PNG"):
                raise OSError(f"Qt could not encode the {pid} page as PNG")
            buffer.close()
            written.append(write_atomic(path, bytes(data.data())))
        return written


def _settle(ms: int = 150) -> None:
    """Let layouts and pending repaints finish before grabbing."""
    from PySide6.QtCore import QCoreApplication, QElapsedTimer

    timer = QElapsedTimer()
    timer.start()
    while timer.elapsed() < ms:
        QCoreApplication.processEvents()

