"""``WrappedLabel`` measures rich text on a document of its own (fewer layouts of the text than QLabel): every
size it gives the layouts must be the one a plain word-wrapped QLabel with the same minimum-height rule gives."""

import itertools

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel

from advisor.gui.widgets.wrapped import WrappedLabel


class QLabelMeasured(QLabel):
    """The label as it was: QLabel's own sizes, the minimum height kept at ``heightForWidth`` of its width."""

    def __init__(self) -> None:
        super().__init__()
        self.setWordWrap(True)

    def setText(self, text: str) -> None:  # noqa: N802 (Qt API)
        if text != self.text():
            super().setText(text)
            self._fit()

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        self._fit()

    def _fit(self) -> None:
        if self.width() > 0:
            need = self.heightForWidth(self.width())
            if need > 0 and need != self.minimumHeight():
                self.setMinimumHeight(need)


TEXTS = [
    "<span style='color:#cf222e; font-size:12pt'><b>Does not fit your 2× GeForce RTX 4090: needs 31.2 GB per "
    "device of 24 GB</b></span><br>Cheapest rent that runs it: 1× H100 80GB SXM, $12 in 3.1 h (2.4–4.0 h)<br>"
    "<b style='font-size:13pt'>QLoRA fine-tune Llama 3.1 8B</b> · 8.03 B parameters",
    "<b>What to change to fit GeForce RTX 4090</b> (24 GB per device), cheapest in time first:",
    "<code>--micro-batch 1 --grad-accum 8</code> · <span style='color:#1a7f37'>20.1 GB fits</span> · 3.1 h",
    "plain text, long enough to wrap at the narrower of the widths tried here",
    "<b>x</b>",
    "",
    # the narrowest width worked out from the drawn layout: margins, unbreakable runs, a word wider than the label
    "<p style='margin-left:12px; margin-right:7px'>A paragraph with margins</p><p>and a second, wider one of "
    "many words</p>",
    "10&nbsp;GB&nbsp;per&nbsp;device, unbreakable · then words · a_very_long_identifier_wider_than_120_pixels_at_least",
    # ... and where it is not (a list, a table, an indented first line): laid out at width 0 as before
    "<ul><li>a list item long enough to wrap</li><li>two</li></ul>",
    "<table><tr><td>cell one</td><td>cell two, which wraps</td></tr></table>",
    "<p style='text-indent:20px'>an indented first line of a paragraph</p>",
]
NARROWEST_KNOWN = TEXTS[:3] + TEXTS[6:8]  # rich texts whose narrowest width comes from the drawn layout


def _sizes(label) -> tuple:
    return (label.sizeHint().toTuple(), label.minimumSizeHint().toTuple(), label.minimumSize().toTuple(),
            [label.heightForWidth(w) for w in (0, 50, 200, 652, 2000)])


def test_sizes_are_qlabels_for_rich_and_plain_text_at_every_width(qtbot):
    cases = 0
    for fmt, margin in itertools.product((Qt.TextFormat.RichText, Qt.TextFormat.AutoText), (0, 3)):
        mine, qt = WrappedLabel(), QLabelMeasured()
        for label in (mine, qt):
            qtbot.addWidget(label)
            label.setTextFormat(fmt)
            label.setMargin(margin)
            if margin:
                label.setContentsMargins(1, 2, 3, 4)
        # texts one after another, longer and shorter, at several widths: the minimum height it carries over counts
        for text, width in itertools.product(TEXTS + TEXTS[::-1], (0, 120, 400, 652, 900)):
            for label in (mine, qt):
                label.setText(text)
                if width:
                    label.resize(width, 30)
            assert _sizes(mine) == _sizes(qt), (text[:40], fmt, margin, width)
            cases += 1
    assert cases == 2 * 2 * 2 * len(TEXTS) * 5


def test_a_new_font_is_measured_again(qtbot):
    mine, qt = WrappedLabel(), QLabelMeasured()
    for label in (mine, qt):
        qtbot.addWidget(label)
    for text in (TEXTS[0], TEXTS[3]):  # rich, and plain (its height kept for the last width asked about)
        for label in (mine, qt):
            label.setText(text)
        assert _sizes(mine) == _sizes(qt)
        for label in (mine, qt):
            font = label.font()
            font.setPointSize(font.pointSize() + 4)
            label.setFont(font)
        assert mine.heightForWidth(2000) == qt.heightForWidth(2000)  # the last width asked: not the old font's
        assert _sizes(mine) == _sizes(qt)
        for label in (mine, qt):
            label.setContentsMargins(2, 0, 5, 0)
        assert mine.heightForWidth(2000) == qt.heightForWidth(2000)
        assert _sizes(mine) == _sizes(qt)


def test_rich_text_is_drawn_as_qlabel_draws_it(qtbot):
    """The label draws rich text from its own document: pixel for pixel what QLabel draws from its own, for each
    text at several sizes (a height above the text's centres it), with margins and a colour of its own. A label
    QLabel must draw (a style sheet, selectable text) draws through QLabel."""
    from PySide6.QtGui import QPalette

    drawn = 0
    for margin, colour in ((0, None), (3, "#cf222e")):
        mine, qt = WrappedLabel(), QLabelMeasured()
        for label in (mine, qt):
            qtbot.addWidget(label)
            label.setTextFormat(Qt.TextFormat.RichText)
            label.setMargin(margin)
            if margin:
                label.setContentsMargins(1, 2, 3, 4)
            if colour:
                palette = label.palette()
                palette.setColor(QPalette.ColorRole.WindowText, colour)
                label.setPalette(palette)
        for text, (width, extra) in itertools.product(TEXTS[:3], ((120, 0), (400, 0), (652, 40), (900, 7))):
            for label in (mine, qt):
                label.setText(text)
                label.resize(width, label.heightForWidth(width) + extra)
            assert mine._draws_itself()
            a, b = mine.grab().toImage(), qt.grab().toImage()
            assert a.size() == b.size() and a == b, (text[:40], width, extra, margin)
            drawn += 1
    assert drawn == 2 * 3 * 4
    mine = WrappedLabel(TEXTS[0])
    qtbot.addWidget(mine)
    mine.setStyleSheet("color: #888888")
    assert not mine._draws_itself()
    mine.setStyleSheet("")
    mine.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    assert not mine._draws_itself()


def test_a_label_whose_width_its_layout_decides_hints_that_width(qtbot):
    """``hint_at_width``: with a width, the size hint is that width and the text's height at it (no guess of a
    pleasing shape); before it has one, and its minimum size hint always, QLabel's."""
    mine, qt = WrappedLabel(hint_at_width=True), QLabelMeasured()
    for label in (mine, qt):
        qtbot.addWidget(label)
        label.setTextFormat(Qt.TextFormat.RichText)
    for text in TEXTS[:3]:
        for label in (mine, qt):
            label.setText(text)
            label.resize(0, 0)
        assert mine.sizeHint() == qt.sizeHint() and mine.minimumSizeHint() == qt.minimumSizeHint()
        for width in (120, 400, 652):
            for label in (mine, qt):
                label.resize(width, 30)
            assert mine.sizeHint().toTuple() == (width, qt.heightForWidth(width)), (text[:40], width)
            assert mine.minimumSizeHint() == qt.minimumSizeHint() and mine.minimumSize() == qt.minimumSize()


def test_the_narrowest_width_is_the_width_0_layouts_without_that_layout(qtbot):
    """The minimum size hint's width is the text laid out at width 0; it is read from the document as drawn
    (``QTextLayout.minimumWidth`` of its blocks), so a new text is laid out at its width and on one line only, and
    the drawn document is still at the label's width for the paint."""
    import math

    for text, width in itertools.product(NARROWEST_KNOWN, (120, 400, 652)):
        label = WrappedLabel(hint_at_width=True)
        qtbot.addWidget(label)
        label.setTextFormat(Qt.TextFormat.RichText)
        label.setText(text)
        label.resize(width, 30)
        label.minimumSizeHint()
        narrowest = label._narrowest()
        at_zero = label._document()
        at_zero.setTextWidth(0)
        assert narrowest == math.ceil(at_zero.size().width()), (text[:40], width)
        assert label._doc_width == width  # the one-line width went to the second document
    for text in TEXTS[-3:]:  # a list, a table, an indent: not read off the layout
        label = WrappedLabel(text)
        qtbot.addWidget(label)
        label.resize(300, 30)
        label.minimumSizeHint()
        assert label._narrowest() is None, text[:30]
