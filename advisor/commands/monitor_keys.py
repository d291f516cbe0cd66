"""Single keys for the live terminal view (``s`` sort, ``p`` pause, ``q`` quit), read without Enter.

POSIX terminals only (termios): the terminal is put in cbreak mode (no echo, no line buffering, Ctrl-C still
interrupts) for as long as the view runs and restored after, also on an error. Without a terminal on stdin, or
on Windows, there are no keys and the view runs as before.
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
import threading
from collections.abc import Callable, Iterator

POLL_S = 0.1


@contextlib.contextmanager
def keys(on_key: Callable[[str], None]) -> Iterator[bool]:
    """Call ``on_key(ch)`` from a reader thread for each key pressed while the block runs.

    Yields:
        True when keys are read (stdin is a POSIX terminal), False otherwise.
    """
    try:
        import termios
        import tty
    except ImportError:  # Windows
        yield False
        return
    stdin = sys.stdin
    if stdin is None or not stdin.isatty():
        yield False
        return
    fd = stdin.fileno()
    try:
        saved = termios.tcgetattr(fd)
    except termios.error:
        yield False
        return
    stop = threading.Event()

    def _read() -> None:
        while not stop.is_set():
            ready, _, _ = select.select([fd], [], [], POLL_S)
            if ready:
                data = os.read(fd, 32)
                if not data:
                    return
                for ch in data.decode("utf-8", "replace"):
                    on_key(ch)

    tty.setcbreak(fd)
    reader = threading.Thread(target=_read, name="advisor-monitor-keys", daemon=True)
    reader.start()
    try:
        yield True
    finally:
        stop.set()
        reader.join(1.0)
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)
