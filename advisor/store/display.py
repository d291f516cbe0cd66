"""The display preferences the command line shares with the app, read without Qt.

The app keeps them in its ``QSettings`` INI file (``gui.ini`` under ``paths.config_dir()``); the command line
reads the same keys with :mod:`configparser`, so ``display/memory_unit = GiB`` changes every output, not only
the app's. A missing, unreadable or damaged file means the defaults.
"""

from __future__ import annotations

import configparser
import logging

from advisor import paths

log = logging.getLogger(__name__)
FILE_NAME = "gui.ini"  # advisor.gui.settings.FILE_NAME (tests/store/test_display.py checks they agree)
MAX_BYTES = 1 << 20


def memory_binary() -> bool:
    """True when the settings file asks for memory in GiB (``[display] memory_unit=GiB``)."""
    path = paths.config_dir() / FILE_NAME
    try:
        if not path.is_file() or path.stat().st_size > MAX_BYTES:
            return False
        parser = configparser.ConfigParser(interpolation=None, strict=False)
        parser.read_string(path.read_text(encoding="utf-8", errors="replace"))
        return parser.get("display", "memory_unit", fallback="GB").strip() == "GiB"
    except (OSError, configparser.Error) as exc:
        log.warning("display settings not read from %s: %s", path, exc)
        return False
