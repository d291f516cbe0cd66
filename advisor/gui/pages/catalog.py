"""Catalog page: searchable, sortable tables of accelerators, cloud offers and model presets.

Every row shows where its figures come from and when they were taken; the page header shows the
date cloud prices are as of. "Edit overrides" opens the user's catalog file (TOML) whose entries
override or extend the bundled ones (see ``advisor.catalog.load``).
"""

from __future__ import annotations

import html

from PySide6.QtCore import Qt, Slot
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QTabWidget,
    QVBoxLayout,
)

from advisor import paths
from advisor.estimate.model import active_param_count, param_count
from advisor.gui import theme as themes
from advisor.gui.pages.base import Page
from advisor.gui.safe_text import rich, tell
from advisor.gui.widgets.tables import Column, RecordTableModel, fit_columns, make_proxy, make_view
from advisor.units import fmt_count, mem_value, memory_unit, sig3, upper_first

USER_TEMPLATE = """# Your catalog overrides (TOML). Entries here override or extend the bundled catalog.
# Field names are those of resources/accelerators.csv, cloud_offers.csv and models.toml.
#
# [accelerators.rtx-4090]
# street_price_usd = 1799
# street_price_date = "2026-11"
#
# [cloud_offers."myprovider:gpu-box"]
# provider = "MyProvider"
# instance = "gpu-box"
# accelerator_id = "rtx-4090"
# accelerator_count = 1
# region = "eu"
# on_demand_usd_per_hour = 0.69
# price_date = "2026-11-29"
"""


def _num(v, digits=0):
    return f"{v:,.{digits}f}"


def _fig(v):
    """A catalog figure: three significant figures, whole numbers from 1,000 up (a vendor's 1,677 stays 1,677)."""
    return f"{v:,.0f}" if abs(v) >= 1000 else sig3(v)


def _tflops(v):
    return None if v is None else v / 1e12


def _first_source(text: str) -> str:
    return (text or "").split(";")[0].strip()


def accelerator_columns(user_ids) -> list[Column]:
    """Columns of the accelerator table (also used by tests)."""
    mark = lambda a: themes.current().accent if a.id in user_ids else None  # noqa: E731 (a cell colour, not a slot)
    return [
        Column("id", lambda a: a.id, tip="catalog id used by `advisor plan --accelerator`", color=mark),
        Column("name", lambda a: a.name),
        Column(f"memory\n({memory_unit()})", lambda a: mem_value(a.memory_bytes), sig3, align_right=True,
               tip="device memory; GB = 1e9 bytes (a card sold as 24 GB holds 24 GiB = 25.8 GB)"),
        Column("bandwidth\n(GB/s)", lambda a: a.mem_bandwidth_bps / 1e9, lambda v: _num(v), align_right=True,
               tip="peak memory bandwidth on paper, GB/s = 1e9 bytes per second"),
        Column("bf16\n(TFLOP/s)", lambda a: _tflops(a.bf16_flops), _fig, align_right=True,
               tip="dense bf16 tensor peak (no sparsity), 1e12 FLOP per second"),
        Column("fp8\n(TFLOP/s)", lambda a: _tflops(a.fp8_flops), _fig, align_right=True,
               tip="dense fp8 tensor peak; — where the part has no fp8 path"),
        Column("fp4\n(TFLOP/s)", lambda a: _tflops(a.fp4_flops), _fig, align_right=True,
               tip="dense fp4 tensor peak (NVFP4 on Blackwell); — where the part has no fp4 path"),
        Column("fp32\n(TFLOP/s)", lambda a: _tflops(a.fp32_flops), _fig, align_right=True,
               tip="fp32 (non-tensor) peak"),
        Column("power\n(W)", lambda a: a.tdp_w, lambda v: _num(v), align_right=True, tip="board power / TDP"),
        Column("price\n(USD)", lambda a: a.price_usd, lambda v: "$" + _num(v), align_right=True,
               tip="street price where known, else the launch price"),
        Column("date", lambda a: a.street_price_date or a.data_date, tip="date of the price or of the data"),
        Column("source", lambda a: _first_source(a.source), cell_tip=lambda a: (a.source + "\n\n" + a.notes).strip(),
               tip="where the figures come from (hover a cell for the full list and notes)"),
        Column("vendor", lambda a: a.vendor),
        Column("kind", lambda a: a.kind),
    ]


def offer_columns(user_ids) -> list[Column]:
    """Columns of the cloud-offer table."""
    mark = lambda o: themes.current().accent if o.id in user_ids else None  # noqa: E731
    return [
        Column("id", lambda o: o.id, color=mark, tip="cloud:<provider>:<instance> in `advisor plan --json`"),
        Column("provider", lambda o: o.provider),
        Column("instance", lambda o: o.instance),
        Column("accelerator", lambda o: o.accelerator_id),
        Column("devices", lambda o: o.accelerator_count, align_right=True, tip="accelerators per instance"),
        Column("region", lambda o: o.region),
        Column("on demand\n(USD/h)", lambda o: o.on_demand_usd_per_h, lambda v: f"${v:,.3f}", align_right=True,
               tip="price of the whole instance per hour"),
        Column("per device\n(USD/h)", lambda o: o.usd_per_device_hour(), lambda v: f"${v:,.3f}", align_right=True,
               tip="instance price / accelerators per instance"),
        Column("spot\n(USD/h)", lambda o: o.spot_usd_per_h, lambda v: f"${v:,.3f}", align_right=True,
               tip="spot/preemptible price of the whole instance; can be interrupted"),
        Column("price date", lambda o: o.price_date, cell_tip=lambda o: o.price_date),
        Column("source", lambda o: _first_source(o.source), cell_tip=lambda o: (o.source + "\n\n" + o.notes).strip()),
    ]


def model_columns(user_ids) -> list[Column]:
    """Columns of the model-preset table."""
    mark = lambda m: themes.current().accent if m.id in user_ids else None  # noqa: E731
    return [
        Column("id", lambda m: m.id, color=mark, tip="preset name for `advisor plan --model`"),
        Column("name", lambda m: m.name),
        Column("params", lambda m: param_count(m), fmt_count, align_right=True,
               tip="parameters counted from the architecture (docs/method.md formula)"),
        Column("active", lambda m: active_param_count(m), fmt_count, align_right=True,
               tip="parameters used per token (differs from params for mixture-of-experts)"),
        Column("layers", lambda m: m.layers, align_right=True),
        Column("hidden", lambda m: m.hidden, align_right=True),
        Column("heads", lambda m: m.heads, align_right=True),
        Column("kv heads", lambda m: m.kv_heads, align_right=True, tip="key/value heads (GQA); sets the KV cache"),
        Column("ffn", lambda m: m.ffn, align_right=True),
        Column("vocab", lambda m: m.vocab, align_right=True),
        Column("context\n(tokens)", lambda m: m.max_context or None, lambda v: f"{v:,}", align_right=True),
        Column("source", lambda m: _first_source(m.source), cell_tip=lambda m: m.source),
    ]


class CatalogPage(Page):
    """Tables of the catalog with a search box, prices-as-of date and the user's overrides."""

    page_id = "catalog"
    title = "Catalog"

    def __init__(self, ctx, parent=None) -> None:
        super().__init__(ctx, parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(16, 12, 16, 12)
        top = QHBoxLayout()
        heading = QLabel("<h2 style='margin:0'>Catalog</h2>")
        top.addWidget(heading)
        top.addSpacing(16)
        self.as_of = QLabel()
        self.as_of.setObjectName("pricesAsOf")
        self.as_of.setToolTip("How old the cloud prices are, from each row's own date: oldest to newest, how many "
                              "are older than a year and how many have no date. Cloud prices change often: check "
                              "the provider before you spend money, or override a price below.")
        self.as_of.setWordWrap(True)  # two lines rather than pushing the search field off a narrow window
        top.addWidget(self.as_of, 1)
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search… (Ctrl+F)")
        self.search.setToolTip("Filters every column of every table: id, name, vendor, provider, source…")
        self.search.setClearButtonEnabled(True)
        self.search.setMinimumWidth(180)  # shrinks before the page would need to scroll sideways at 1024 px
        self.search.textChanged.connect(self._on_search_text_changed)
        top.addWidget(self.search)
        self.edit_button = QPushButton("Edit overrides…")
        self.edit_button.setToolTip(f"Edit your catalog file ({paths.user_catalog_file()}): change a price, "
                                    "add an accelerator or a cloud offer. Rows you changed are coloured.")
        self.edit_button.clicked.connect(self._on_edit_clicked)
        top.addWidget(self.edit_button)
        layout.addLayout(top)

        self.note = QLabel()
        self.note.setWordWrap(True)
        layout.addWidget(self.note)

        self.tabs = QTabWidget()
        self.models: dict[str, RecordTableModel] = {}
        self.proxies = {}
        self.views = {}
        for key, title in (("accelerators", "Accelerators"), ("offers", "Cloud offers"), ("models", "Model presets")):
            model = RecordTableModel([])
            proxy = make_proxy(model, self)
            view = make_view(proxy)
            view.setObjectName(f"{key}Table")
            self.models[key], self.proxies[key], self.views[key] = model, proxy, view
            self.tabs.addTab(view, title)
        layout.addWidget(self.tabs, 1)
        from PySide6.QtGui import QKeySequence, QShortcut

        QShortcut(QKeySequence.StandardKey.Find, self, self.search.setFocus)
        clear = QShortcut(QKeySequence(Qt.Key.Key_Escape), self.search, self.search.clear)
        clear.setContext(Qt.ShortcutContext.WidgetShortcut)
        ctx.catalog_changed.connect(self._on_ctx_catalog_changed)
        self._fill()

    # ------------------------------------------------------------ content
    def _fill(self) -> None:
        cat = self.ctx.catalog
        users = cat.user_ids
        from advisor.cost.price_dates import price_summary

        prices = price_summary(cat.offers, cat.date, cat.prices_as_of)
        self.as_of.setText(f"<b>{rich(upper_first(prices), None)}</b> · catalog data {rich(cat.date)}")
        specs = {
            "accelerators": (accelerator_columns(users), sorted(cat.accelerators.values(), key=lambda a: a.id)),
            "offers": (offer_columns(users), sorted(cat.offers, key=lambda o: o.id)),
            "models": (model_columns(users), sorted(cat.models.values(), key=lambda m: m.id)),
        }
        for key, (columns, rows) in specs.items():
            model = RecordTableModel(columns, rows, self)
            self.proxies[key].setSourceModel(model)
            self.models[key] = model
            fit_columns(self.views[key], max_width=190)
        counts = (f"{len(cat.accelerators)} accelerators, {len(cat.offers)} cloud offers, {len(cat.models)} model "
                  f"presets. Click a header to sort; hover a source for the full reference.")
        extra = ""
        if users:
            extra += f" {len(users)} entries come from your overrides (coloured ids)."
        if cat.warnings:
            # the warnings quote the user's file: shown as text, never as markup
            extra += " <span style='color:%s'>Warnings: %s</span>" % (themes.current().bad,
                                                                      rich("; ".join(cat.warnings), None))
        self._note_text = counts + extra
        self.note.setText(self._note_text)
        self._on_search_text_changed(self.search.text())

    @Slot(str)
    def _on_search_text_changed(self, text: str) -> None:
        for proxy in self.proxies.values():
            proxy.setFilterFixedString(text.strip())
        for i, key in enumerate(("accelerators", "offers", "models")):
            base = ("Accelerators", "Cloud offers", "Model presets")[i]
            n = self.proxies[key].rowCount()
            self.tabs.setTabText(i, f"{base} ({n})")
        if text.strip() and not any(p.rowCount() for p in self.proxies.values()):
            self.note.setText(f"<b>Nothing matches “{html.escape(text.strip())}”.</b> Try part of a name, id, vendor "
                              "or provider, or clear the search (Esc).")
        else:
            self.note.setText(getattr(self, "_note_text", ""))

    @Slot()
    def _on_ctx_catalog_changed(self) -> None:
        self._fill()

    @Slot()
    def _on_edit_clicked(self) -> None:
        dialog = OverridesDialog(self)
        if dialog.exec() == QDialog.DialogCode.Accepted:
            self.ctx.reload_catalog()

    # ------------------------------------------------------------ state
    def save_state(self, s) -> None:
        s.setValue("catalog/tab", self.tabs.currentIndex())
        s.setValue("catalog/search", self.search.text())

    def restore_state(self, s) -> None:
        try:
            self.tabs.setCurrentIndex(int(s.value("catalog/tab", 0)))
        except (TypeError, ValueError):
            pass
        search = s.value("catalog/search", "")
        self.search.setText(search if isinstance(search, str) else "")

    def prepare_screenshot(self) -> None:
        self.search.clear()
        self.tabs.setCurrentIndex(0)
        view = self.views["accelerators"]
        view.sortByColumn(4, Qt.SortOrder.DescendingOrder)  # bf16 TFLOP/s


class OverridesDialog(QDialog):
    """A plain-text editor for the user's catalog file, checked before it is saved.

    The file is read through the regular-file guard and saved under the same lock as ``catalog import
    --apply``; a file changed since it was opened is not overwritten: the user is offered to reload it
    (``store.catalog_edit``). ``opened`` is None when the file could not be opened (``error`` says why).
    """

    def __init__(self, parent=None) -> None:
        from advisor.store.catalog_edit import CatalogEditError, open_for_edit

        super().__init__(parent)
        self.setWindowTitle("Catalog overrides")
        self.resize(720, 520)
        self.path = paths.user_catalog_file()
        self.error = ""
        try:
            self.opened = open_for_edit(self.path, USER_TEMPLATE)
        except CatalogEditError as exc:
            self.opened, self.error = None, str(exc)
        layout = QVBoxLayout(self)
        file_label = QLabel(f"File: {self.path}")
        file_label.setTextFormat(Qt.TextFormat.PlainText)
        layout.addWidget(file_label)
        self.editor = QPlainTextEdit()
        self.editor.setPlainText(self.opened.text if self.opened else "")
        layout.addWidget(self.editor, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self._on_save_clicked)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)

    def exec(self) -> int:
        if self.opened is None:  # a FIFO, a device, a file that is not UTF-8: say so instead of editing it
            QMessageBox.warning(self.parentWidget(), "Cannot edit the catalog file", self.error)
            return QDialog.DialogCode.Rejected
        return super().exec()

    @Slot()
    def _on_save_clicked(self) -> None:
        from advisor.catalog.load import load_catalog
        from advisor.store.catalog_edit import CatalogEditError, ChangedOnDisk, save_edited

        try:
            self.opened = save_edited(self.opened, self.editor.toPlainText())
        except ChangedOnDisk as exc:
            answer = QMessageBox.question(
                self, "Changed on disk", f"{exc}. Reload the file from disk? Your edits here are then replaced; "
                "choose No to keep them and copy what you need first.",
                QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No, QMessageBox.StandardButton.No)
            if answer == QMessageBox.StandardButton.Yes:
                self.reload()
            return
        except CatalogEditError as exc:
            tell(self, "Not saved", str(exc))  # plain text: it may quote the file
            return
        problems = load_catalog(self.path).warnings
        if problems:
            tell(self, "Saved with warnings", "\n".join(problems), QMessageBox.Icon.Information)
        self.accept()

    def reload(self) -> None:
        """Read the file again (after it changed on disk); the editor then shows and guards the new text."""
        from advisor.store.catalog_edit import CatalogEditError, open_for_edit

        try:
            self.opened = open_for_edit(self.path, USER_TEMPLATE)
        except CatalogEditError as exc:
            QMessageBox.warning(self, "Cannot reload", str(exc))
            return
        self.editor.setPlainText(self.opened.text)
