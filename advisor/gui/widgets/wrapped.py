"""A word-wrapped label that asks its layout for the height its text needs at its width.

Qt gives a word-wrapped QLabel a minimum height of one short line; a layout short of room then squeezes it and
the widgets under it, below their minimums, are drawn over each other instead of the page scrolling. This
label's minimum height is its ``heightForWidth`` at its current width, kept up to date on every resize and
text change, so the page's minimum size (and its scroll area) counts the text as shown.

Its sizes are QLabel's, worked out with fewer layouts of the text. For rich text QLabel measures by laying its
own document out at the width asked about and then again at the width it had (to draw), on every question: a new
text's size hints took about eight layouts of the whole text and each of its four ``heightForWidth`` questions
two, most of a re-plan's work on the GUI thread (the Planner's answer changes with every edit). Here rich text is
measured on a document of its own, laid out once per width asked about and never restored, and each answer is
kept for the text, font and margins it was worked out for (``_measure``); plain text is left to QLabel (it
measures that with font metrics, cheaply).
"""

from __future__ import annotations

import math

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import Qt as GuiQt
from PySide6.QtGui import QTextDocument, QTextOption
from PySide6.QtWidgets import QLabel

_MAX = (1 << 24) - 1  # QWIDGETSIZE_MAX


class WrappedLabel(QLabel):
    """A ``QLabel`` with word wrap whose minimum height follows its text at its width."""

    def __init__(self, text: str = "", parent=None) -> None:
        super().__init__(text, parent)
        self.setWordWrap(True)
        self._doc: QTextDocument | None = None
        self._doc_key: tuple | None = None  # what the document was built from
        self._sizes: dict = {}  # (what a size depends on, width) -> (width, height) of the text, before margins

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

    # ------------------------------------------------------------ QLabel's sizes, measured once per width
    def _rich(self) -> bool:
        """Whether QLabel lays this text out as a document (rich text, a plain QLabel with no frame or indent)."""
        fmt = self.textFormat()
        rich = fmt == Qt.TextFormat.RichText or (fmt == Qt.TextFormat.AutoText and GuiQt.mightBeRichText(self.text()))
        return rich and self.wordWrap() and self.frameWidth() == 0 and self.indent() <= 0

    def _measure(self, width: int) -> tuple[int, int]:
        """The text's size laid out ``width`` wide (``-1``: QTextDocument.adjustSize, as QLabel's size hint), as
        QLabel's control measures it: the label's font and alignment, word wrap, no document margin."""
        self.ensurePolished()
        key = (self.text(), self.font().key(), int(self.alignment().value))
        if key != self._doc_key:
            self._doc_key, self._sizes = key, {}
            doc = self._doc = QTextDocument()
            doc.setUndoRedoEnabled(False)
            doc.setDefaultFont(self.font())
            doc.setHtml(self.text())
            option = doc.defaultTextOption()
            option.setAlignment(self.alignment())
            option.setWrapMode(QTextOption.WrapMode.WordWrap)
            doc.setDefaultTextOption(option)
            frame = doc.rootFrame().frameFormat()
            frame.setMargin(0)
            doc.rootFrame().setFrameFormat(frame)
        size = self._sizes.get(width)
        if size is None:
            if len(self._sizes) > 8:
                self._sizes.clear()
            if width < 0:
                self._doc.adjustSize()
            else:
                self._doc.setTextWidth(width)
            s = self._doc.size()
            size = self._sizes[width] = (math.ceil(s.width()), math.ceil(s.height()))
        return size

    def _size_for_width(self, w: int) -> QSize:
        """QLabel's ``sizeForWidth`` for a rich text with word wrap, no frame and no indent."""
        m = self.contentsMargins()
        extra = 2 * self.margin()
        if self.minimumWidth() > 0:
            w = max(w, self.minimumWidth())
        tw, th = self._measure(max(w - extra - m.left() - m.right(), 0) if w >= 0 else -1)
        size = QSize(tw + extra + m.left() + m.right(), th + extra + m.top() + m.bottom())
        return size.expandedTo(self.minimumSize())

    def heightForWidth(self, width: int) -> int:  # noqa: N802 (Qt API)
        if not self._rich():
            return super().heightForWidth(width)
        return self._size_for_width(width).height()

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt API)
        if not self._rich():
            return super().sizeHint()
        return self._size_for_width(-1)

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt API)
        if not self._rich():
            return super().minimumSizeHint()
        hint = self._size_for_width(-1)
        one_line = self._size_for_width(_MAX).height()
        return QSize(self._size_for_width(0).width(), min(one_line, hint.height()))
