"""Light and dark palettes that follow the system colour scheme, and the chart colours.

Qt reports the system scheme through ``QStyleHints.colorScheme`` (light when unknown, as on the
offscreen platform). The Fusion style takes our palette on every platform, so both look the same.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QGuiApplication, QPalette

from advisor import colours


@dataclass(frozen=True)
class Theme:
    """Colours every page and chart share. Series colours come from :mod:`advisor.colours`."""

    dark: bool
    background: str
    surface: str
    text: str
    muted: str
    grid: str
    accent: str
    good: str
    bad: str
    warn: str
    series: tuple[str, ...]


_SERIES = colours.SERIES  # the same colours in both themes: a colour keeps its meaning

LIGHT = Theme(False, "#ffffff", "#f4f5f7", "#1d1f23", "#5f6570", "#d9dce1", "#1f6feb", "#1a7f37",
              "#cf222e", "#9a6700", _SERIES)
DARK = Theme(True, "#1e1f22", "#2a2c30", "#e6e6e6", "#a0a6b0", "#3c3f45", "#4c8dff", "#3fb950",
             "#ff6b6b", "#d29922", _SERIES)


_override: str | None = None  # "light", "dark" or None (follow the system)


def set_override(scheme: str | None) -> None:
    """Force the light or dark theme (``advisor gui --theme``, screenshots); None follows the system.

    Raises:
        ValueError: a scheme other than "light", "dark" or None.
    """
    global _override
    if scheme not in (None, "light", "dark"):
        raise ValueError(f"unknown theme {scheme!r}: use light or dark")
    _override = scheme


def get_override() -> str | None:
    """The forced scheme ("light" or "dark"), or None when the theme follows the system."""
    return _override


def system_is_dark() -> bool:
    """Whether the desktop asks for a dark scheme (False when Qt cannot tell)."""
    app = QGuiApplication.instance()
    if app is None:
        return False
    return QGuiApplication.styleHints().colorScheme() == Qt.ColorScheme.Dark


def current() -> Theme:
    """The theme forced by :func:`set_override`, else the one of the current system scheme."""
    if _override is not None:
        return DARK if _override == "dark" else LIGHT
    return DARK if system_is_dark() else LIGHT


def palette_for(theme: Theme) -> QPalette:
    """A full QPalette for the theme (used with the Fusion style)."""
    p = QPalette()
    bg, surface, text = QColor(theme.background), QColor(theme.surface), QColor(theme.text)
    role = QPalette.ColorRole
    p.setColor(role.Window, surface)
    p.setColor(role.WindowText, text)
    p.setColor(role.Base, bg)
    p.setColor(role.AlternateBase, surface.darker(104) if not theme.dark else surface.lighter(112))
    p.setColor(role.Text, text)
    p.setColor(role.Button, surface)
    p.setColor(role.ButtonText, text)
    p.setColor(role.ToolTipBase, QColor("#ffffdc") if not theme.dark else QColor("#3a3d42"))
    p.setColor(role.ToolTipText, QColor("#1d1f23") if not theme.dark else text)
    p.setColor(role.PlaceholderText, QColor(theme.muted))
    p.setColor(role.Highlight, QColor(theme.accent))
    p.setColor(role.HighlightedText, QColor("#ffffff"))
    p.setColor(role.Link, QColor(theme.accent))
    p.setColor(role.Mid, QColor(theme.grid))
    for r in (role.WindowText, role.Text, role.ButtonText):
        p.setColor(QPalette.ColorGroup.Disabled, r, QColor(theme.muted))
    return p


def apply(app) -> Theme:
    """Give ``app`` the Fusion style and the palette of the system scheme; returns the theme used."""
    theme = current()
    app.setStyle("Fusion")
    app.setPalette(palette_for(theme))
    return theme
