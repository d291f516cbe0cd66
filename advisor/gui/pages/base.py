"""The base of every page: a widget with an id, a title, and hooks the main window calls.

Two layout concerns live here once, for every page: each page sits in a :class:`PageScrollArea`, so a
window smaller than the page's minimum size (1024x768 and up) scrolls instead of clipping, and every
``QSplitter`` of a page keeps its position between sessions (:meth:`Page.save_layout`).
"""

from __future__ import annotations

import time

from PySide6.QtCore import QByteArray, QCoreApplication, QEventLoop, QSettings, Qt
from PySide6.QtWidgets import QFrame, QScrollArea, QSplitter, QWidget


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
