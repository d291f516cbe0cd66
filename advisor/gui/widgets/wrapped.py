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

Rich text is also drawn from that document (``paintEvent``), as QLabel draws its own: QLabel keeps a second
document, filled again from the new text and laid out three times on the first paint after each change (its
default option, its frame and its width each lay it out), about a tenth of a re-plan's instructions on the GUI
thread. Drawn here, the text's document is filled once and laid out once per width; the pixels are QLabel's
(the same document, palette, rectangle and clip). Where QLabel's drawing depends on more than that (a style sheet,
which adjusts the palette at paint time; text a person can select; a buddy's mnemonic; a disabled label), QLabel
draws.
"""

from __future__ import annotations

import math

from PySide6.QtCore import QEvent, QRectF, QSize, Qt
from PySide6.QtGui import QAbstractTextDocumentLayout, QPainter, QPalette, QTextDocument, QTextOption
from PySide6.QtGui import Qt as GuiQt
from PySide6.QtWidgets import QLabel, QStyleOption, QWidget

_MAX = (1 << 24) - 1  # QWIDGETSIZE_MAX


class WrappedLabel(QLabel):
    """A ``QLabel`` with word wrap whose minimum height follows its text at its width."""

    def __init__(self, text: str = "", parent=None, *, hint_at_width: bool = False) -> None:
        """``hint_at_width``: once the label has a width, its size hint is that width and the height the text
        needs at it, not QLabel's guess of a pleasing shape (``QTextDocument.adjustSize``: three or four layouts
        of the whole text at widths the label never has). For a label whose width its layout decides (a column
        of a page: the layout gives it the column's width and asks its height for that width); its minimum size
        hint stays QLabel's."""
        super().__init__(text, parent)
        self.setWordWrap(True)
        self._hint_at_width = hint_at_width
        self._doc: QTextDocument | None = None  # the text as drawn: laid out at the label's width
        self._aside: QTextDocument | None = None  # the same text, for the other widths asked about
        self._doc_key: tuple | None = None  # what the documents were built from
        self._sizes: dict = {}  # (what a size depends on, width) -> (width, height) of the text, before margins
        self._doc_width: int | None = None  # the width the drawn document is laid out at now
        self._plain_key: tuple | None = None  # what a plain text's last heightForWidth was worked out for
        self._plain_height = 0
        self._gate: LayoutGate | None = None  # the widget holding this label in a layout, if any

    def setText(self, text: str) -> None:  # noqa: N802 (Qt API)
        if text == self.text():
            return  # the same text: nothing to lay out again
        super().setText(text)
        self._fit()
        if self._gate is not None:
            self._gate._sync()  # at once, as the layout a label sits in is told (not one posted event later)

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        self._fit()

    def _fit(self) -> None:
        width = self.width()
        if width > 0:
            need = self.heightForWidth(width)
            if need > 0 and need != self.minimumHeight():
                self.setMinimumHeight(need)
                if self._gate is not None:
                    self._gate._sync()

    # ------------------------------------------------------------ QLabel's sizes, measured once per width
    def _rich(self) -> bool:
        """Whether QLabel lays this text out as a document (rich text, a plain QLabel with no frame or indent)."""
        fmt = self.textFormat()
        rich = fmt == Qt.TextFormat.RichText or (fmt == Qt.TextFormat.AutoText and GuiQt.mightBeRichText(self.text()))
        return rich and self.wordWrap() and self.frameWidth() == 0 and self.indent() <= 0

    def _document(self) -> QTextDocument:
        """The text as QLabel's control lays it out: the label's font and alignment, word wrap, no margin."""
        doc = QTextDocument()
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
        return doc

    def _measure(self, width: int) -> tuple[int, int]:
        """The text's size laid out ``width`` wide (``-1``: QTextDocument.adjustSize, as QLabel's size hint), as
        QLabel's control measures it.

        The width the label draws at is laid out on the document it draws from; any other (the one-line width of
        the minimum size hint, a width a layout asks about) on a second document, so the drawn one is not laid
        out again for the next paint (a new text was laid out four times: at the label's width, at the one-line
        and the narrowest widths, and at its width again to draw)."""
        self.ensurePolished()
        key = (self.text(), self.font().key(), int(self.alignment().value))
        if key != self._doc_key:
            self._doc_key, self._sizes, self._doc_width = key, {}, None
            self._doc, self._aside = self._document(), None
        size = self._sizes.get(width)
        if size is None:
            if len(self._sizes) > 8:
                self._sizes.clear()
            m = self.contentsMargins()
            drawn = max(self.width() - m.left() - m.right() - 2 * self.margin(), 0)
            if width == drawn or (width >= 0 and self._doc_width is None):
                doc = self._doc
                doc.setTextWidth(width)
                self._doc_width = width
            else:
                if self._aside is None:
                    self._aside = self._document()
                doc = self._aside
                if width < 0:
                    doc.adjustSize()
                else:
                    doc.setTextWidth(width)
            s = doc.size()
            size = self._sizes[width] = (math.ceil(s.width()), math.ceil(s.height()))
        return size

    def _narrowest(self) -> int | None:
        """The text's width laid out as narrow as it goes (every line one unbreakable piece), without laying it out
        at width 0: the widest unbreakable piece of any block (``QTextLayout.minimumWidth``, found by every
        layout) of the drawn document as laid out now, equal to the width-0 layout's width for blocks of text
        with no list, indent or table. None where that does not hold, or nothing is laid out yet."""
        doc = self._doc
        if doc is None or self._doc_width is None or doc.rootFrame().childFrames():
            return None
        doc.size()  # the layout done to its end (it is laid out lazily)
        widest = 0.0
        block = doc.begin()
        while block.isValid():
            fmt = block.blockFormat()
            if block.textList() is not None or fmt.indent() or fmt.textIndent():
                return None
            widest = max(widest, block.layout().minimumWidth() + fmt.leftMargin() + fmt.rightMargin())
            block = block.next()
        return math.ceil(widest)

    def _size_for_width(self, w: int) -> QSize:
        """QLabel's ``sizeForWidth`` for a rich text with word wrap, no frame and no indent."""
        m = self.contentsMargins()
        extra = 2 * self.margin()
        if self.minimumWidth() > 0:
            w = max(w, self.minimumWidth())
        tw, th = self._measure(max(w - extra - m.left() - m.right(), 0) if w >= 0 else -1)
        size = QSize(tw + extra + m.left() + m.right(), th + extra + m.top() + m.bottom())
        return size.expandedTo(self.minimumSize())

    def _draws_itself(self) -> bool:
        """Whether this label's rich text is drawn from its own document (see the module's note)."""
        return (self._rich() and self.isEnabled() and not self.styleSheet()
                and self.style().metaObject().className() != "QStyleSheetStyle"
                and not self.textInteractionFlags() & (Qt.TextInteractionFlag.TextSelectableByMouse
                                                       | Qt.TextInteractionFlag.TextSelectableByKeyboard)
                and self.buddy() is None)  # a buddy underlines its mnemonic in QLabel's document

    def paintEvent(self, event) -> None:  # noqa: N802 (Qt API)
        if not self._draws_itself():
            super().paintEvent(event)
            return
        # QLabel::paintEvent for a text label with a document: its layout rectangle (the contents less the margin,
        # the text centred vertically as aligned), the palette of its style option with the text in the
        # foreground role's colour, the painter moved to the rectangle and clipped to it
        m = self.contentsMargins()
        width = self.width() - m.left() - m.right() - 2 * self.margin()
        height = self.height() - m.top() - m.bottom() - 2 * self.margin()
        self._measure(max(width, 0))
        if self._doc_width != max(width, 0):  # the size was known for this width, the layout elsewhere
            self._doc.setTextWidth(max(width, 0))
            self._doc_width = max(width, 0)
        rh = self._doc.documentLayout().documentSize().height()
        align = self.alignment()
        yo = 0.0
        if align & Qt.AlignmentFlag.AlignVCenter:
            yo = max((height - rh) / 2, 0.0)
        elif align & Qt.AlignmentFlag.AlignBottom:
            yo = max(height - rh, 0.0)
        lr = QRectF(m.left() + self.margin(), m.top() + self.margin() + yo, width, height).toAlignedRect()
        opt = QStyleOption()
        opt.initFrom(self)
        context = QAbstractTextDocumentLayout.PaintContext()
        palette = QPalette(opt.palette)
        if self.foregroundRole() != QPalette.ColorRole.Text:
            palette.setColor(QPalette.ColorRole.Text, palette.color(self.foregroundRole()))
        context.palette = palette
        painter = QPainter(self)
        self.drawFrame(painter)
        painter.translate(lr.topLeft())
        painter.setClipRect(lr.translated(-lr.x(), -lr.y()))
        self._doc.documentLayout().draw(painter, context)
        painter.end()

    def heightForWidth(self, width: int) -> int:  # noqa: N802 (Qt API)
        if not self._rich():
            # QLabel's, kept for the last width asked about: the label asks it at its width after each new text
            # (its minimum height), and the layout asks again at the same width (a plain text laid out each time)
            m = self.contentsMargins()
            key = (self.text(), self.font().key(), width, self.textFormat(), self.wordWrap(), self.margin(),
                   self.indent(), self.frameWidth(), self.minimumWidth(), m.left(), m.top(), m.right(), m.bottom())
            if key != self._plain_key:
                self._plain_key, self._plain_height = key, super().heightForWidth(width)
            return self._plain_height
        return self._size_for_width(width).height()

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt API)
        if not self._rich():
            return super().sizeHint()
        if self._hint_at_width and self.width() > 0:
            return self._size_for_width(self.width())
        return self._size_for_width(-1)

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt API)
        if not self._rich():
            return super().minimumSizeHint()
        hint = self.sizeHint()  # (its height at least one line's, however it is worked out)
        one_line = self._size_for_width(_MAX).height()
        return QSize(self._minimum_hint_width(), min(one_line, hint.height()))

    def _minimum_hint_width(self) -> int:
        """The width of :meth:`minimumSizeHint` for rich text, without its height (a layout of the text on one line)."""
        narrowest = self._narrowest() if self.minimumWidth() <= 0 else None
        if narrowest is None:
            return self._size_for_width(0).width()
        m = self.contentsMargins()  # _size_for_width(0).width() without the layout at width 0
        return narrowest + 2 * self.margin() + m.left() + m.right()

    def layout_key(self) -> tuple:
        """What a layout reads of this label at its width now: its size hint, the part of its minimum size hint a
        layout uses (``qSmartMinSize`` takes an explicit minimum width or height over the hint's), its minimum and
        maximum sizes, size policy and height for its width. Equal keys lay the page out the same
        (:class:`LayoutGate`); the one-line layout of the minimum size hint's height is left out where the
        explicit minimum height (kept at the text's height, ``_fit``) is what a layout takes."""
        width = self.width()
        explicit = self.minimumSize()
        if not self._rich():
            min_hint = self.minimumSizeHint().toTuple()
        else:
            min_hint = (self._minimum_hint_width() if explicit.width() <= 0 else None,
                        self.minimumSizeHint().height() if explicit.height() <= 0 else None)
        return (width, self.sizeHint().toTuple(), min_hint, explicit.toTuple(), self.maximumSize().toTuple(),
                self.sizePolicy(), self.hasHeightForWidth(), self.heightForWidth(width) if width > 0 else None)


class LayoutGate(QWidget):
    """A :class:`WrappedLabel` in a layout, which lays the page out again only when the label's size changed.

    ``QLabel.setText`` asks its layout for a new pass on every new text (``updateGeometry``), and a layout passes
    it up to every layout above it: the whole column, and the splitter holding it, asked each of their widgets for
    its size hints again. The Planner's answer and status lines change with every edit and nearly always keep
    their size; those passes, with the label's hints measured anew (its text laid out on one line), were about a
    tenth of an edit's instructions on the GUI thread. Here the label sits in this widget with no layout: its
    request arrives here, and goes on (``updateGeometry``) only when :meth:`WrappedLabel.layout_key` changed, or
    when this widget is shown or resized (a layout's cached heights for other widths are then asked again). The
    label fills this widget, and this widget gives the layout the label's sizes, so the page is laid out as with
    the label in its place."""

    def __init__(self, label: WrappedLabel, parent=None) -> None:
        super().__init__(parent)
        self.label = label
        label._gate = self
        label.setParent(self)
        label.move(0, 0)
        self._key: tuple | None = None
        self._sync()

    def _sync(self) -> None:
        """Take on the label's sizes and size policy, and ask for a layout pass where they changed."""
        key = self.label.layout_key()
        if key == self._key:
            return
        self._key = key
        label = self.label
        self.setSizePolicy(label.sizePolicy())
        self.setMinimumSize(label.minimumSize())
        self.setMaximumSize(label.maximumSize())
        self.updateGeometry()

    def event(self, event) -> bool:
        if event.type() == QEvent.Type.LayoutRequest:  # the label's updateGeometry (no layout here to take it)
            self._sync()
        return super().event(event)

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        self.label.setGeometry(self.rect())
        if event.oldSize().width() != event.size().width():
            self._key = None  # a new width: the layout asks the heights of the label at it again
        self._sync()

    def showEvent(self, event) -> None:  # noqa: N802 (Qt API)
        self._sync()  # a text set while hidden posted nothing here
        super().showEvent(event)

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt API)
        return self.label.sizeHint()

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt API)
        return self.label.minimumSizeHint()

    def hasHeightForWidth(self) -> bool:  # noqa: N802 (Qt API)
        return self.label.hasHeightForWidth()

    def heightForWidth(self, width: int) -> int:  # noqa: N802 (Qt API)
        return self.label.heightForWidth(width)
