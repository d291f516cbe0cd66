"""Where the desktop app keeps its window state and the user's last inputs.

A ``QSettings`` INI file under ``paths.config_dir()`` (so ``ADVISOR_HOME`` redirects it in tests).
Values are read back with a type and a default, so a damaged or old file never breaks the start-up.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from PySide6.QtCore import QSettings

from advisor import paths

FILE_NAME = "gui.ini"
SCHEMA = 1


def open_settings(scratch: bool = False) -> QSettings:
    """The app's settings file, created on the first write.

    Args:
        scratch: read the user's settings but write none of them (screenshot and demo runs): a copy in a
            temporary folder that goes with the returned object.
    Returns:
        A ``QSettings`` in INI format at ``paths.config_dir() / "gui.ini"`` (or its scratch copy).
    """
    if scratch:
        import shutil
        import tempfile

        folder = tempfile.TemporaryDirectory(prefix="advisor-settings-")
        path = Path(folder.name) / FILE_NAME
        user = paths.config_dir() / FILE_NAME
        if user.is_file():
            shutil.copyfile(user, path)
        s = QSettings(str(path), QSettings.Format.IniFormat)
        s._scratch_folder = folder  # removed with the settings object
    else:
        path = paths.config_dir(create=True) / FILE_NAME
        s = QSettings(str(path), QSettings.Format.IniFormat)
    if s.value("schema") is None:
        s.setValue("schema", SCHEMA)
    return s


def read_json(s: QSettings, key: str, default: Any) -> Any:
    """A JSON value saved with :func:`write_json`; ``default`` when missing or unreadable."""
    raw = s.value(key)
    if not isinstance(raw, str):
        return default
    try:
        value = json.loads(raw)
    except ValueError:
        return default
    return value if isinstance(value, type(default)) else default


def write_json(s: QSettings, key: str, value: Any) -> None:
    """Save a JSON-able value (dicts of inputs keep their types this way, unlike INI strings)."""
    s.setValue(key, json.dumps(value, sort_keys=True))


def read_int(s: QSettings, key: str, default: int, lo: int | None = None, hi: int | None = None) -> int:
    """An integer setting clamped to ``[lo, hi]``; ``default`` when missing or not a number."""
    try:
        value = int(s.value(key, default))
    except (TypeError, ValueError):
        return default
    if lo is not None:
        value = max(lo, value)
    if hi is not None:
        value = min(hi, value)
    return value
