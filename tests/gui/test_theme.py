"""Light and dark palettes follow the system colour scheme, charts included.

The offscreen platform has no desktop theme and ignores ``setColorScheme``, so the test plays the
desktop: it makes the scheme read dark and calls the slot connected to ``colorSchemeChanged``.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication


def test_palette_and_charts_follow_the_colour_scheme(make_window, monkeypatch):
    from advisor.gui import theme
    from advisor.gui.widgets import plots

    w = make_window()
    w.show_page("planner")
    chart = w.page("planner").chart
    follower = QApplication.instance()._advisor_scheme_follower
    assert QGuiApplication.palette().color(QPalette.ColorRole.Window).lightness() > 200
    try:
        monkeypatch.setattr(theme, "system_is_dark", lambda: True)
        follower.on_scheme_changed(Qt.ColorScheme.Dark)
        assert QGuiApplication.palette().color(QPalette.ColorRole.Window).lightness() < 80
        assert plots.theme() is theme.DARK
        assert chart.backgroundBrush().color().lightness() < 80
    finally:
        monkeypatch.setattr(theme, "system_is_dark", lambda: False)
        follower.on_scheme_changed(Qt.ColorScheme.Light)
    assert plots.theme() is theme.LIGHT


def test_theme_override_wins_over_the_system(monkeypatch):
    import pytest

    from advisor.gui import theme

    monkeypatch.setattr(theme, "system_is_dark", lambda: False)
    try:
        theme.set_override("dark")
        assert theme.current() is theme.DARK
        theme.set_override("light")
        monkeypatch.setattr(theme, "system_is_dark", lambda: True)
        assert theme.current() is theme.LIGHT
        with pytest.raises(ValueError):
            theme.set_override("purple")
    finally:
        theme.set_override(None)
    assert theme.current() is theme.DARK  # the system's again

