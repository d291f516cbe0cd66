"""Keyboard and screen-reader access: every control has an accessible name and takes Tab focus; every menu
action and page has a shortcut; splitters and the window keep their place between sessions."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QSplitter

from advisor.gui.main_window import PAGES


@pytest.mark.parametrize("pid", [p[0] for p in PAGES])
def test_every_control_is_named_and_reachable_by_tab(make_window, pid):
    w = make_window()
    page = w.page(pid)
    controls = page.controls()
    assert controls or pid == "machine"  # the Machine page only shows figures
    unnamed = [f"{type(c).__name__} {c.objectName()!r}" for c in controls if not c.accessibleName()]
    assert not unnamed
    no_tab = [f"{type(c).__name__} {c.accessibleName()!r}" for c in controls
              if not (c.focusPolicy() & Qt.FocusPolicy.TabFocus)]
    assert not no_tab


def test_menu_actions_have_shortcuts(make_window):
    w = make_window()
    actions = [a for a in w.scenarios.menu.actions() if not a.isSeparator() and a.menu() is None]
    assert len(actions) >= 6
    assert [a.text() for a in actions if a.shortcut().isEmpty()] == []
    assert w.scenarios.menu.title().startswith("&")  # Alt+F opens it, and the recent files submenu with it


def test_splitter_positions_are_remembered(make_window, qtbot):
    w = make_window()
    w.show_page("planner")
    split = w.page("planner").findChildren(QSplitter)[0]
    total = sum(split.sizes())
    split.setSizes([total - 700, 700])
    wanted = split.sizes()
    w.close()
    w2 = make_window()
    w2.show_page("planner")
    split2 = w2.page("planner").findChildren(QSplitter)[0]
    qtbot.waitUntil(lambda: split2.sizes()[1] > 0, timeout=3000)
    assert abs(split2.sizes()[1] - wanted[1]) <= 2
