"""Paths and names shared by the packaging tests."""

from __future__ import annotations

import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PYPROJECT = REPO / "pyproject.toml"
APP_ID = "org.hardwareadvisor.HardwareAdvisor"
LINUX_DIR = REPO / "packaging" / "linux"
DESKTOP_FILE = LINUX_DIR / f"{APP_ID}.desktop"
METAINFO_FILE = LINUX_DIR / f"{APP_ID}.metainfo.xml"
ICON_DIR = REPO / "resources" / "icons"
ICON_SIZES = (16, 24, 32, 48, 64, 128, 256, 512)
SCREENSHOT_DIR = REPO / "docs" / "screenshots"


def read_pyproject() -> dict:
    """The parsed pyproject.toml of the repository."""
    return tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
