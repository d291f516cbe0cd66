"""The base of every page: a widget with an id, a title, and hooks the main window calls."""

from __future__ import annotations

import time

from PySide6.QtCore import QCoreApplication, QEventLoop, QSettings
from PySide6.QtWidgets import QWidget


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
