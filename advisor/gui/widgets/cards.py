"""Small display widgets: a titled card of label/value rows, a headline figure, a note banner."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QGridLayout, QLabel, QSizePolicy, QVBoxLayout

from advisor.gui import theme as themes
from advisor.gui.safe_text import plain_label, set_plain
from advisor.gui.safe_text import tip as tip_text

TITLE_MAX_CHARS = 300  # a card's title: "GPU 0 · <the driver's name for it>"
VALUE_MAX_CHARS = 1000  # a subtitle or a value: a status line, a note


class CardWidget(QFrame):
    """A framed box with a title, an optional subtitle, and rows of (label, value, tooltip).

    All of it is plain text (never parsed as HTML): titles and values hold GPU, CPU, driver and model names.
    """

    def __init__(self, title: str, subtitle: str = "", parent=None) -> None:
        super().__init__(parent)
        self.setObjectName("card")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(12, 10, 12, 10)
        layout.setSpacing(4)
        self._title = plain_label(title, TITLE_MAX_CHARS)
        self._title.setObjectName("cardTitle")
        self._title.setWordWrap(True)
        font = self._title.font()
        font.setPointSizeF(font.pointSizeF() * 1.2)
        font.setBold(True)
        self._title.setFont(font)
        layout.addWidget(self._title)
        self._subtitle = plain_label(subtitle, VALUE_MAX_CHARS)
        self._subtitle.setWordWrap(True)
        self._subtitle.setStyleSheet(f"color: {themes.current().muted}")
        self._subtitle.setVisible(bool(subtitle))
        layout.addWidget(self._subtitle)
        self._grid = QGridLayout()
        self._grid.setHorizontalSpacing(16)
        self._grid.setVerticalSpacing(3)
        self._grid.setColumnStretch(1, 1)
        layout.addLayout(self._grid)
        self._rows = 0

    def set_title(self, title: str, subtitle: str | None = None) -> None:
        set_plain(self._title, title, TITLE_MAX_CHARS)
        if subtitle is not None:
            set_plain(self._subtitle, subtitle, VALUE_MAX_CHARS)
            self._subtitle.setVisible(bool(subtitle))

    def add_row(self, label: str, value: str, tip: str = "", *, color: str | None = None) -> QLabel:
        """Add one ``label: value`` row; returns the value label so it can be updated."""
        name = plain_label(label)
        name.setStyleSheet(f"color: {themes.current().muted}")
        val = plain_label(value, VALUE_MAX_CHARS)
        val.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        val.setWordWrap(True)
        if color:
            val.setStyleSheet(f"color: {color}; font-weight: bold")
        if tip:
            name.setToolTip(tip_text(tip))
            val.setToolTip(tip_text(tip))
        self._grid.addWidget(name, self._rows, 0, Qt.AlignmentFlag.AlignTop)
        self._grid.addWidget(val, self._rows, 1)
        self._rows += 1
        return val

    def add_widget(self, widget) -> None:
        """Add a widget across both columns (a list with buttons, a setting)."""
        self._grid.addWidget(widget, self._rows, 0, 1, 2)
        self._rows += 1

    def add_rows(self, rows: Sequence[tuple[str, str, str]]) -> None:
        for label, value, tip in rows:
            self.add_row(label, value, tip)

    def clear_rows(self) -> None:
        while self._grid.count():
            item = self._grid.takeAt(0)
            if item.widget():
                item.widget().deleteLater()
        self._rows = 0


def banner(text: str, kind: str = "warn", parent=None) -> QLabel:
    """A full-width coloured note (``kind``: warn, info, bad)."""
    t = themes.current()
    colours = {"warn": ("#fff4ce", "#5c4400") if not t.dark else ("#4a3b00", "#ffe08a"),
               "info": ("#ddf4ff", "#0a3069") if not t.dark else ("#0c2d4a", "#b6e3ff"),
               "bad": ("#ffebe9", "#82071e") if not t.dark else ("#4a1515", "#ffb3b3")}
    bg, fg = colours.get(kind, colours["info"])
    label = QLabel(text, parent)
    label.setWordWrap(True)
    label.setTextFormat(Qt.TextFormat.RichText)
    label.setStyleSheet(f"background: {bg}; color: {fg}; padding: 6px 10px; border-radius: 4px;")
    return label


def headline(value: str, caption: str, tip: str = "", parent=None) -> QFrame:
    """A big figure with a caption under it (for the answer a page exists to give)."""
    box = QFrame(parent)
    box.setObjectName("headline")
    layout = QVBoxLayout(box)
    layout.setContentsMargins(8, 4, 8, 4)
    layout.setSpacing(0)
    v = plain_label(value)
    v.setObjectName("headlineValue")
    f = v.font()
    f.setPointSizeF(f.pointSizeF() * 1.6)
    f.setBold(True)
    v.setFont(f)
    c = plain_label(caption)
    c.setStyleSheet(f"color: {themes.current().muted}")
    layout.addWidget(v)
    layout.addWidget(c)
    if tip:
        box.setToolTip(tip_text(tip))
    box.value_label = v
    box.caption_label = c
    return box
