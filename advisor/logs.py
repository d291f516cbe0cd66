"""Logging: the standard ``logging`` module, to a rotating file in the user log directory.

``setup_logging(verbosity)`` is called once by the CLI (``advisor -v`` shows INFO on stderr, ``-vv`` DEBUG).
The file ``paths.log_dir()/advisor.log`` (1 MiB, 3 old files kept) receives INFO and above, and every
unexpected exception with its traceback; the user sees one line. A log that cannot be written (read-only or
full disk) is dropped silently: logging never breaks a command or adds to its error output.
"""

from __future__ import annotations

import logging
import logging.handlers
from pathlib import Path

LOG_FILE = "advisor.log"
MAX_BYTES = 2**20
BACKUPS = 3
FORMAT = "%(asctime)s %(levelname)s %(name)s [%(process)d]: %(message)s"

_handlers: list[logging.Handler] = []


class _QuietRotatingFile(logging.handlers.RotatingFileHandler):
    """A rotating file that drops a record it cannot write instead of printing 'Logging error' to stderr."""

    def handleError(self, record) -> None:  # noqa: N802 - logging's name
        pass


def log_file() -> Path:
    """Where the log is written (it may not exist yet)."""
    from advisor import paths

    return paths.log_dir() / LOG_FILE


def setup_logging(verbosity: int = 0) -> Path | None:
    """Send the ``advisor`` loggers to the log file (and to stderr with ``verbosity`` >= 1).

    Args:
        verbosity: 0 quiet on stderr, 1 INFO, 2 or more DEBUG.
    Returns:
        The log file, or None when it cannot be opened (the command goes on without it).
    """
    root = logging.getLogger("advisor")
    for h in _handlers:
        root.removeHandler(h)
        h.close()
    _handlers.clear()
    root.setLevel(logging.DEBUG if verbosity >= 2 else logging.INFO)
    root.propagate = False
    path: Path | None = log_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler: logging.Handler = _QuietRotatingFile(path, maxBytes=MAX_BYTES, backupCount=BACKUPS,
                                                      encoding="utf-8", delay=True)
        handler.setFormatter(logging.Formatter(FORMAT))
        handler.setLevel(logging.DEBUG if verbosity >= 2 else logging.INFO)
        _handlers.append(handler)
    except OSError:
        path = None
    if verbosity >= 1:
        stream = logging.StreamHandler()
        stream.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        stream.setLevel(logging.DEBUG if verbosity >= 2 else logging.INFO)
        _handlers.append(stream)
    for h in _handlers:
        root.addHandler(h)
    return path
