"""What to change to fit, as a list with one "Apply" button per change (``PlanResult.fit_advice``)."""

from __future__ import annotations

import html

from PySide6.QtCore import Signal, Slot
from PySide6.QtWidgets import QGridLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from advisor.gui import theme as themes
from advisor.gui.safe_text import rich
from advisor.gui.safe_text import tip as tip_text
from advisor.gui.widgets.wrapped import WrappedLabel
from advisor.planner.summary import cost_text, fit_advice_closest, fit_advice_rows, lost_text
from advisor.units import fmt_hours, fmt_mem

MAX_ROWS = 5


class FitAdviceWidget(QWidget):
    """The plan's fit advice (cheapest in time lost first); ``apply_requested`` carries a ``{flag: value}``."""

    apply_requested = Signal(dict)

    def hasHeightForWidth(self) -> bool:  # noqa: N802 (Qt API)
        # its wrapped text asks for its height through its minimum (WrappedLabel): a height-for-width here
        # makes the page's layout give this widget more than its minimum and squeeze the chart above it
        return False

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        self.title = WrappedLabel()
        outer.addWidget(self.title)
        self.grid = QGridLayout()
        self.grid.setContentsMargins(0, 0, 0, 0)
        self.grid.setHorizontalSpacing(10)
        self.grid.setVerticalSpacing(2)
        outer.addLayout(self.grid)
        self.rows: list[dict] = []
        self.buttons: list[QPushButton] = []  # the rows shown now (a prefix of the pool)
        # MAX_ROWS rows built once and filled per plan: building and deleting them on every plan made Qt
        # polish, lay out and move the whole Planner page each time (most of a re-plan's drawing)
        self._pool: list[tuple[QPushButton, QLabel]] = []
        for i in range(MAX_ROWS):
            button = QPushButton("Apply")
            button.setProperty("row", i)
            button.clicked.connect(self._on_button_clicked)
            text = WrappedLabel()  # a long change wraps: it must not widen the page past the window
            self.grid.addWidget(button, i, 0)
            self.grid.addWidget(text, i, 1)
            button.setVisible(False)
            text.setVisible(False)
            self._pool.append((button, text))
        self.grid.setColumnStretch(1, 1)
        self._shown: tuple = ()

    def show_plan(self, result) -> None:
        """Show the advice of ``result`` (hidden when the job fits or there is none)."""
        self.rows = fit_advice_rows(result) if result is not None else []
        closest = fit_advice_closest(result) if result is not None and not self.rows else None
        shown = bool(self.rows) or closest is not None
        # Hidden first and shown last: a widget shown inside a visible one activates the layout of every visible
        # widget above it (QWidget::setVisible), so showing the rows one by one in a shown panel laid the whole
        # page out twice per row (14 layouts of the page when the advice appears); rows shown while the panel is
        # hidden cost nothing there, and the panel's own show lays the page out once.
        if not shown:
            self.setVisible(False)
        self._fill(result, closest)
        if shown:
            self.setVisible(True)

    def _fill(self, result, closest) -> None:
        if not self.rows:
            self.buttons = []
            for button, text in self._pool:
                button.setVisible(False)
                text.setVisible(False)
            self._shown = ()
            if closest is not None:  # nothing fits: say so, with the nearest change, and offer nothing to apply
                target = result.fit_target()
                name = rich(target.accelerator_name) if target else "the hardware asked for"
                self.title.setText(f"<b>No change the advisor tries makes the job fit {name}</b>; the closest, "
                                   f"<code>{html.escape(closest['flags'])}</code>, still needs "
                                   f"{closest['memory']} per device.")
            return
        t = themes.current()
        target = result.fit_target()
        title = (f"<b>What to change to fit {rich(target.accelerator_name)}</b> "
                 f"({fmt_mem(target.capacity_bytes)} per device), cheapest in time first:")
        lines = []
        for row in self.rows[:MAX_ROWS]:
            hours = "" if row["hours"] is None else fmt_hours(row["hours"])
            lost = lost_text(row["hours_lost"])
            cost = cost_text(row.get("cost_usd"), row.get("cost_added_usd"))
            colour = t.good if row["fits"] else t.muted
            lines.append((f"<code>{row['flags']}</code> · <span style='color:{colour}'>{row['memory']}"
                          f"{' fits' if row['fits'] else ' still too big'}</span> · {hours}{lost}"
                          f"{' · ' + cost if cost else ''}",
                          row["why"], f"set {row['flags']} in the form and plan again", bool(row["fits"])))
        shown = (title, tuple(lines))
        self.buttons = [button for button, _text in self._pool[:len(lines)]]
        if shown == self._shown:  # the same advice as drawn: nothing to move or repaint
            return
        self._shown = shown
        if self.title.text() != title:
            self.title.setText(title)
        for i, (button, text) in enumerate(self._pool):
            if i >= len(lines):
                button.setVisible(False)
                text.setVisible(False)
                continue
            markup, why, tip, fits = lines[i]
            button.setEnabled(fits)
            button.setToolTip(tip)
            if text.text() != markup:
                text.setText(markup)
            text.setToolTip(tip_text(why))
            button.setVisible(True)
            text.setVisible(True)

    @Slot()
    def _on_button_clicked(self) -> None:
        row = self.sender().property("row")
        self.apply_requested.emit(dict(self.rows[int(row)]["change"]))
