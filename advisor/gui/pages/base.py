"""The base of every page: a widget with an id, a title, and hooks the main window calls.

Two layout concerns live here once, for every page: each page sits in a :class:`PageScrollArea`, so a
window smaller than the page's minimum size (1024x768 and up) scrolls instead of clipping, and every
``QSplitter`` of a page keeps its position between sessions (:meth:`Page.save_layout`).
"""

from __future__ import annotations

import re
import time

from PySide6.QtCore import QByteArray, QCoreApplication, QEvent, QEventLoop, QSettings, Qt, QTimer, Slot
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QAbstractSpinBox,
    QComboBox,
    QFormLayout,
    QFrame,
    QHeaderView,
    QLabel,
    QLineEdit,
    QScrollArea,
    QSplitter,
    QTabBar,
    QWidget,
)

# The controls a person operates; each gets an accessible name and is reachable with Tab.
CONTROL_TYPES = (QAbstractButton, QComboBox, QAbstractSpinBox, QLineEdit, QAbstractItemView)


class Page(QWidget):
    """One page of the main window.

    Subclasses set ``page_id`` (also the screenshot file name), ``title`` and ``tip``, and override the
    hooks they need. Pages talk to each other only through the shared :class:`AppContext` signals.
    """

    page_id = "page"
    title = "Page"
    tip = ""

    def __init__(self, ctx, parent=None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.setObjectName(f"{self.page_id}Page")

    def in_scroll_area(self) -> PageScrollArea:
        """This page inside a scroll area that resizes it and scrolls only below its minimum size."""
        return PageScrollArea(self)

    def _splitters(self) -> list[QSplitter]:
        return [sp for sp in self.findChildren(QSplitter) if sp.window() is self.window()]

    def save_layout(self, s: QSettings) -> None:
        """Write every splitter's position under ``<page_id>/splitter<i>`` (the main window calls it)."""
        for i, sp in enumerate(self._splitters()):
            s.setValue(f"{self.page_id}/splitter{i}", sp.saveState())

    def restore_layout(self, s: QSettings) -> None:
        """Put the splitters back where :meth:`save_layout` left them; a missing or odd value is ignored."""
        for i, sp in enumerate(self._splitters()):
            state = s.value(f"{self.page_id}/splitter{i}")
            if isinstance(state, QByteArray) and not state.isEmpty():
                sp.restoreState(state)

    def controls(self) -> list[QWidget]:
        """Every control of the page a person operates (buttons, boxes, fields, tables)."""
        # not the parts of a composite control: a box's line edit, a table's headers and corner button, a tab
        # bar's scroll arrows, a search field's clear button (the composite itself is named and focused)
        # (a combo box's popup list lives in a window of its own: also a part)
        return [w for w in self.findChildren(QWidget) if isinstance(w, CONTROL_TYPES) and not isinstance(w, QHeaderView)
                and not w.isWindow() and w.window() is self.window()
                and not isinstance(w.parent(), (QAbstractSpinBox, QComboBox, QAbstractItemView, QTabBar, QLineEdit))]

    def name_controls(self) -> None:
        """Give each control without an accessible name one, for screen readers: its form label, its own
        text, or its tooltip's first sentence (the main window calls this once the page is built)."""
        form_labels: dict[int, str] = {}
        for form in self.findChildren(QFormLayout):
            for row in range(form.rowCount()):
                label = form.itemAt(row, QFormLayout.ItemRole.LabelRole)
                field = form.itemAt(row, QFormLayout.ItemRole.FieldRole)
                if label is not None and field is not None and isinstance(label.widget(), QLabel) and field.widget():
                    form_labels[id(field.widget())] = label.widget().text()
        for label in self.findChildren(QLabel):
            if label.buddy() is not None:
                form_labels[id(label.buddy())] = label.text()
        for w in self.controls():
            if w.accessibleName():
                continue
            name = form_labels.get(id(w)) or (w.text() if isinstance(w, QAbstractButton) else "")
            name = name or (w.placeholderText() if isinstance(w, QLineEdit) else "")
            name = name or w.toolTip().split(". ")[0].split("; ")[0].split("\n")[0]
            name = name or re.sub(r"(?<=[a-z])(?=[A-Z])", " ", w.objectName()).lower()  # "modelsTable": "models table"
            w.setAccessibleName(_plain(name) or type(w).__name__)

    def on_shown(self) -> None:
        """The page became the visible one."""

    def on_hidden(self) -> None:
        """Another page became visible."""

    def save_state(self, s: QSettings) -> None:
        """Write the page's inputs under its own group."""

    def restore_state(self, s: QSettings) -> None:
        """Read back what :meth:`save_state` wrote; must tolerate missing or odd values."""

    def is_ready(self) -> bool:
        """Whether the page shows its populated state (screenshots wait for it)."""
        return True

    def prepare_screenshot(self) -> None:
        """Fill the page with representative content before a screenshot (may start work)."""

    def shutdown(self) -> None:
        """Stop timers and workers; called once when the window closes."""

    def wait_ready(self, timeout_s: float = 20.0) -> bool:
        """Run the event loop until :meth:`is_ready` (screenshot mode only; never in normal use)."""
        deadline = time.monotonic() + timeout_s
        while not self.is_ready() and time.monotonic() < deadline:
            QCoreApplication.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 50)
            time.sleep(0.01)
        return self.is_ready()


def _plain(text: str) -> str:
    """Text without markup or mnemonic ampersands, for an accessible name."""
    return re.sub(r"<[^>]+>", "", text).replace("&&", "\0").replace("&", "").replace("\0", "&").strip(" :")[:80]


class PageScrollArea(QScrollArea):
    """A frameless scroll area holding one page; scroll bars appear only when the window is smaller than
    the page's minimum size, and ``page`` gives the page back."""

    def __init__(self, page: Page) -> None:
        super().__init__()
        self.page = page
        self.setObjectName(f"{page.page_id}Scroll")
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setWidgetResizable(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.setWidget(page)
        self._follow = QTimer(self, singleShot=True, interval=0)  # dies with the scroll area, unlike a bare call
        self._follow.timeout.connect(self._follow_page)
        page.installEventFilter(self)

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 (Qt API)
        # A part of the page shown after the layout (the fit advice, the context sweep) raises the page's
        # minimum size; QScrollArea follows only its own resizes, so without this the page keeps its old height
        # and its widgets are squeezed below their minimums (drawn over each other) instead of scrolling.
        # A page filled while hidden (behind another page) gets no layout request: check again when shown.
        # QScrollArea sizes its widget (and its scroll bars) on a layout request of its own: pass the page's on.
        if obj is self.page and event.type() in (QEvent.Type.LayoutRequest, QEvent.Type.Show):
            self._follow.start()
        return False

    @Slot()
    def _follow_page(self) -> None:
        layout = self.page.layout()
        if layout is not None:
            layout.activate()  # the minimum size of what is shown now, not of what was shown before
        QCoreApplication.sendEvent(self, QEvent(QEvent.Type.LayoutRequest))
