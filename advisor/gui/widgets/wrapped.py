"""A word-wrapped label that asks its layout for the height its text needs at its width.

Qt gives a word-wrapped QLabel a minimum height of one short line; a layout short of room then squeezes it and
the widgets under it, below their minimums, are drawn over each other instead of the page scrolling. This
label's minimum height is its ``heightForWidth`` at its current width, kept up to date on every resize and
text change, so the page's minimum size (and its scroll area) counts the text as shown.
"""

from __future__ import annotations

from PySide6.QtWidgets import QLabel


class WrappedLabel(QLabel):
    """A ``QLabel`` with word wrap whose minimum height follows its text at its width."""

    def __init__(self, text: str = "", parent=None) -> None:
        super().__init__(text, parent)
        self.setWordWrap(True)

    def setText(self, text: str) -> None:  # noqa: N802 (Qt API)
        if text == self.text():
            return  # the same text: nothing to lay out again
        super().setText(text)
        self._fit()

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        self._fit()

    def _fit(self) -> None:
        width = self.width()
        if width > 0:
            need = self.heightForWidth(width)
            if need > 0 and need != self.minimumHeight():
                self.setMinimumHeight(need)
