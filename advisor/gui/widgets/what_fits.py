"""The Machine page's "What fits on this machine": per workload the largest preset that fits and at what
setting, each with a button that opens the Planner on it; and the setting of the GPUs the user owns."""

from __future__ import annotations

from PySide6.QtCore import Signal, Slot
from PySide6.QtWidgets import QGridLayout, QHBoxLayout, QLabel, QLineEdit, QPushButton, QWidget

from advisor.gui import theme as themes
from advisor.gui.safe_text import rich
from advisor.planner.summary import change_flags
from advisor.units import fmt_count, fmt_hours, fmt_usd


class WhatFitsWidget(QWidget):
    """Rows of ``plan_service.what_fits``; ``plan_requested`` carries the plan inputs of a row."""

    plan_requested = Signal(dict)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.grid = QGridLayout(self)
        self.grid.setContentsMargins(0, 0, 0, 0)
        self.grid.setHorizontalSpacing(10)
        self.rows: list[dict] = []
        self.buttons: list[QPushButton] = []

    def set_rows(self, rows: list[dict]) -> None:
        while self.grid.count():
            w = self.grid.takeAt(0).widget()
            if w is not None:
                w.deleteLater()
        self.rows, self.buttons = list(rows), []
        t = themes.current()
        for i, r in enumerate(rows):
            name = QLabel(r["workload"])
            name.setStyleSheet(f"color: {t.muted}")
            self.grid.addWidget(name, i, 0)
            if r["values"] is None:
                none = QLabel("no preset fits")
                none.setStyleSheet(f"color: {t.bad}; font-weight: bold")
                self.grid.addWidget(none, i, 1)
                continue
            setting = f" with <code>{change_flags(r['change'])}</code>" if r["change"] else " as it is"
            time = "" if r["workload_id"] == "inference" else f" · {fmt_hours(r['hours'])}"
            text = QLabel(f"<b>{r['model']}</b> ({fmt_count(r['params'])}){setting} · "
                          f"{r['tokens_per_s']:,.0f} tokens/s{time} · {fmt_usd(r['cost_usd'])} for the default "
                          "budget")
            text.setWordWrap(True)
            text.setToolTip("planner estimate on this machine's GPUs with published utilisation priors, priced "
                            "at the electricity it takes")
            self.grid.addWidget(text, i, 1)
            button = QPushButton("Plan it")
            button.setToolTip("open the Planner on this job")
            button.setProperty("row", i)
            button.clicked.connect(self._on_button_clicked)
            self.grid.addWidget(button, i, 2)
            self.buttons.append(button)
        self.grid.setColumnStretch(1, 1)

    @Slot()
    def _on_button_clicked(self) -> None:
        row = self.rows[int(self.sender().property("row"))]
        self.plan_requested.emit(dict(row["values"]))


class OwnedSettingWidget(QWidget):
    """"GPUs you own besides this machine": ``--own`` specs, saved with ``AppContext.set_own``."""

    def __init__(self, ctx, parent=None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(QLabel("Other GPUs you own:"))
        self.edit = QLineEdit(", ".join(ctx.own_specs))
        self.edit.setPlaceholderText("e.g. 2xrtx-3090, 1xrtx-4070 (catalog ids)")
        self.edit.setToolTip("Priced at what running a job costs you (electricity, and wear when you set a rate), "
                             "listed in the Planner as owned options; kept for the next session")
        layout.addWidget(self.edit, 1)
        self.save = QPushButton("Save")
        self.save.clicked.connect(self._on_save_clicked)
        layout.addWidget(self.save)
        self.status = QLabel()
        layout.addWidget(self.status)

    @Slot()
    def _on_save_clicked(self) -> None:
        specs = [x for x in self.edit.text().replace(";", ",").split(",")]
        try:
            self.ctx.set_own(specs)
        except ValueError as exc:
            self.status.setText(f"<span style='color:{themes.current().bad}'>{rich(exc, None)}</span>")
            return
        self.status.setText("saved")
