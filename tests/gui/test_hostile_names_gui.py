"""Every page of the app shows hostile names as text (issue: hostile names).

The app runs on the ``hostile-names`` fake scenario (GPU names, driver version and other users' command
lines) with hostile model stores, a hostile user catalog and a GGUF file whose ``general.name`` is hostile
(``tests.hostile``). Every page is rendered once with all of them; then every label, tooltip, table cell,
combo-box item, tab, group title, the status bar and the window title is read back: plain text holds no raw
control character, and rich text holds no unescaped tag from a name (``<img``, ``<font``, ``<a href``).
``<img src="/dev/zero">`` read as an image takes all memory (18 GB before it was stopped): the address space
is capped while the pages render, so such a read fails the run instead of the machine.
"""

from __future__ import annotations

import contextlib
import resource

from PySide6 import QtGui
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QComboBox,
    QGroupBox,
    QHeaderView,
    QLabel,
    QMessageBox,
    QTabBar,
    QTextEdit,
    QWidget,
)

from tests.hostile import HTML_TAGS, inert, plant_everywhere

ROLES = (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole)


def _rich_leak(text: str) -> bool:
    """Qt would render ``text`` as rich text and a name's tag in it is live."""
    return QtGui.Qt.mightBeRichText(text) and any(tag in text for tag in HTML_TAGS)


def _check_text(where: str, text, rich_possible: bool, problems: list) -> None:
    if not isinstance(text, str) or not text:
        return
    if not inert(text):
        problems.append(f"{where}: raw control character in {text[:120]!r}")
    if rich_possible and _rich_leak(text):
        problems.append(f"{where}: rich text with a live tag: {text[:160]!r}")
    if len(text) > 20_000:
        problems.append(f"{where}: {len(text)} characters shown")


def _model_texts(view: QAbstractItemView, where: str, problems: list) -> None:
    model = view.model()
    if model is None:
        return
    from PySide6.QtCore import QModelIndex

    try:
        columns = model.columnCount(QModelIndex())
    except TypeError:  # a list model: one column, and PySide keeps its columnCount private
        columns = 1
    for r in range(min(model.rowCount(QModelIndex()), 200)):
        for c in range(columns):
            index = model.index(r, c)
            for role in ROLES:
                _check_text(f"{where} cell ({r}, {c})", model.data(index, role), role == ROLES[1], problems)


def audit(root: QWidget) -> list[str]:
    """What in ``root`` and its children shows a name unsafely (empty when all is inert)."""
    problems: list[str] = []
    _check_text("window title", root.windowTitle(), False, problems)
    for w in [root, *root.findChildren(QWidget)]:
        parent = w.parentWidget()
        where = f"{type(w).__name__} {w.objectName() or ''} in {type(parent).__name__} {parent.objectName() if parent else ''}"
        _check_text(f"{where} tooltip", w.toolTip(), True, problems)
        if isinstance(w, QLabel):
            _check_text(f"{where} text", w.text(), w.textFormat() != Qt.TextFormat.PlainText, problems)
        elif isinstance(w, QAbstractButton):
            _check_text(f"{where} text", w.text(), False, problems)
        elif isinstance(w, QGroupBox):
            _check_text(f"{where} title", w.title(), False, problems)
        elif isinstance(w, QComboBox):
            for i in range(w.count()):
                _check_text(f"{where} item {i}", w.itemText(i), False, problems)
                _check_text(f"{where} item {i} tip", w.itemData(i, Qt.ItemDataRole.ToolTipRole), True, problems)
        elif isinstance(w, QTabBar):
            for i in range(w.count()):
                _check_text(f"{where} tab {i}", w.tabText(i), False, problems)
                _check_text(f"{where} tab {i} tip", w.tabToolTip(i), True, problems)
        elif isinstance(w, QTextEdit):
            html = w.document().toHtml()
            if "/dev/zero" in html and "<img" in html:
                problems.append(f"{where}: an image from a name in its document")
        if isinstance(w, QAbstractItemView) and not isinstance(w, QHeaderView):  # a header shows its view's model
            _model_texts(w, where, problems)
    status = getattr(root, "statusBar", None)
    if status is not None:
        _check_text("status bar", status().currentMessage(), False, problems)
    return list(dict.fromkeys(problems))


@contextlib.contextmanager
def _address_space_capped(extra_bytes: int):
    """Cap this process's address space at its present size plus ``extra_bytes`` (Linux), then restore it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as f:
        size = int(f.read().split()[0]) * resource.getpagesize()
    resource.setrlimit(resource.RLIMIT_AS, (size + extra_bytes, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def test_the_audit_finds_a_live_tag_and_a_raw_escape(qtbot):
    ok, bad, esc = QLabel(), QLabel("<b>x</b> <font size=7>big</font>"), QLabel()
    ok.setTextFormat(Qt.TextFormat.PlainText)
    ok.setText("<img src=x>")
    esc.setText("a\x1b[2Jb")
    for w in (ok, bad, esc):
        qtbot.addWidget(w)
    assert audit(ok) == []
    assert "live tag" in audit(bad)[0] and "raw control" in audit(esc)[0]


def _select_process(panel, pid: int) -> None:
    rows = panel.model.rows()
    k = next(i for i, p in enumerate(rows) if p.pid == pid)
    panel.view.selectRow(panel.proxy.mapFromSource(panel.model.index(k, 0)).row())


def _render_every_page(window) -> None:
    """Every page built and filled as for the screenshots (``MainWindow.render_screenshots``), without the PNGs
    and without screenshot mode's seconds of monitor history."""
    from advisor.gui.main_window import PAGES

    for pid, *_ in PAGES:
        window.page(pid).prepare_screenshot()
    for pid, *_ in PAGES:
        window.show_page(pid)
        window.page(pid).wait_ready(25.0)


def _plan_model_named(window, qtbot, fragment: str) -> None:
    """Plan the listed model whose name holds ``fragment`` from the Models page (its name reaches every page)."""
    from advisor.gui.pages.models import plan_values

    window.show_page("models")
    page = window.page("models")
    qtbot.waitUntil(page.is_ready, timeout=15000)
    rows = page.table_model.rows()
    k = next(i for i, r in enumerate(rows) if fragment in r.found.name and r.found.model is not None)
    window.ctx.plan.load(plan_values(rows[k].found))  # what "Plan this model" does (tests/gui/test_models_page.py)
    window.ctx.page_requested.emit("planner")
    name = rows[k].found.name
    try:
        qtbot.waitUntil(lambda: window.ctx.last_plan is not None and window.ctx.last_plan.model_name == name,
                        timeout=30000)
    except Exception:
        last = window.ctx.last_plan
        raise AssertionError(f"not planned: {name!r}; last plan {getattr(last, 'model_name', None)!r}, "
                             f"error {window.ctx.plan.error!r}") from None


def test_every_page_shows_hostile_names_as_text(make_window, qtbot, tmp_path):
    from advisor.gui.widgets.gpu_overview import GpuOverviewWidget
    from advisor.hw.fake import HOSTILE_PID_BASE

    plant_everywhere(tmp_path)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    with _address_space_capped(4 * 2**30):
        window = make_window("hostile-names")
        _render_every_page(window)
        problems = audit(window)
        for overview in window.findChildren(GpuOverviewWidget):  # its tooltip is made on hover
            for i in range(2):
                _check_text(f"GPU overview tooltip {i}", overview.tooltip(i), True, problems)
        window.show_page("monitor")
        panel = window.page("monitor").processes
        qtbot.waitUntil(lambda: any(p.pid == HOSTILE_PID_BASE + 3 for p in panel.model.rows()), timeout=10000)
        _select_process(panel, HOSTILE_PID_BASE + 3)  # its user is '<img src="/dev/zero">'
        _check_text("stop button tooltip", panel.stop_button.toolTip(), True, problems)
        _plan_model_named(window, qtbot, '<img src="/dev/zero">')  # an LM Studio folder's name
        for page in ("planner", "compare", "machine", "buy"):
            window.show_page(page)
            window.page(page).wait_ready(15.0)
        problems += audit(window)
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before
    assert grown < 1.5 * 2**30, f"memory grew by {grown / 2**30:.1f} GiB"
    problems = list(dict.fromkeys(problems))
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems[:60])


def test_dialogs_show_a_command_line_as_plain_text(qtbot):
    from types import SimpleNamespace as Process

    from advisor.gui.safe_text import _box
    from advisor.gui.widgets.process_panel import describe
    from advisor.hw.fake import HOSTILE_NAMES

    p = Process(pid=7, gpu_index=0, cmdline='<img src="/dev/zero"> \x1b]0;pwned\x07', name="x", user="<b>root</b>")
    text = f"Terminate {describe(p)}?\n\nSIGTERM asks it to end."
    box = _box(None, QMessageBox.Icon.Question, "Terminate process 7", text, QMessageBox.StandardButton.Yes,
               QMessageBox.StandardButton.Yes)
    qtbot.addWidget(box)
    assert box.textFormat() == Qt.TextFormat.PlainText and inert(box.text())
    assert '<img src="/dev/zero"> \\x1b]0;pwned\\x07' in box.text() and "\n\nSIGTERM" in box.text()
    assert len(describe(Process(pid=8, gpu_index=0, cmdline=HOSTILE_NAMES[-1], name="x", user=None))) < 200
