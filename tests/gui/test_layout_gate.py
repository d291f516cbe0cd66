"""``LayoutGate``: a label's new text lays the page out again only when the label's size changes, and the page is
laid out as with the label in the layout itself."""

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QVBoxLayout, QWidget

from advisor.gui.widgets.wrapped import LayoutGate, WrappedLabel

ONE_LINE = "<b>Fits</b> your 2× GeForce RTX 4090: 20.1 GB per device"
SAME_SIZE = "<b>Fits</b> your 2× GeForce RTX 4090: 21.3 GB per device"  # the figures of the next edit
TALLER = ONE_LINE + "<br>a second line<br>and a third"


class _Requests(QObject):
    def __init__(self) -> None:
        super().__init__()
        self.n = 0

    def eventFilter(self, obj, event):  # noqa: N802 (Qt API)
        if event.type() == QEvent.Type.LayoutRequest:
            self.n += 1
        return False


def _column(qtbot, gated: bool):
    window = QWidget()  # the page a child, not a window: its minimum size is not the window system's to honour
    qtbot.addWidget(window)
    window.resize(500, 400)
    page = QWidget(window)
    layout = QVBoxLayout(page)
    label = WrappedLabel(ONE_LINE, hint_at_width=True)
    layout.addWidget(LayoutGate(label) if gated else label)
    below = QWidget()
    below.setMinimumHeight(50)
    layout.addWidget(below, 1)
    page.resize(420, 300)
    window.show()
    qtbot.waitExposed(window)
    qtbot.wait(20)
    page.window_ = window  # kept alive with the page
    return page, label, below


def test_a_text_of_the_same_size_asks_the_page_for_no_layout_pass(qtbot):
    page, label, _below = _column(qtbot, gated=True)
    requests = _Requests()
    page.installEventFilter(requests)
    label.setText(SAME_SIZE)
    qtbot.wait(20)
    assert requests.n == 0
    label.setText(TALLER)  # three lines: the page is laid out again
    qtbot.wait(20)
    assert requests.n >= 1


def test_the_page_is_laid_out_as_with_the_label_in_the_layout(qtbot):
    for text in (ONE_LINE, TALLER, SAME_SIZE):
        geometry = []
        for gated in (False, True):
            page, label, below = _column(qtbot, gated)
            label.setText(text)
            qtbot.wait(20)
            geometry.append((label.mapTo(page, label.rect().topLeft()).toTuple(), label.size().toTuple(),
                             below.geometry().getRect(), page.minimumSizeHint().toTuple()))
            page.resize(260, 300)  # narrower: the text wraps onto more lines
            qtbot.wait(20)
            geometry.append((label.size().toTuple(), below.geometry().getRect()))
        assert geometry[:2] == geometry[2:], text
