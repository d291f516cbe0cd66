"""Work around a PySide6 reference-count bug that kills the process on Python before 3.12.

PySide6 6.12.0 returns ``None`` from every void C++ method without taking a reference to it
(``label.setText``, ``timer.start``, ``processEvents``...), and passes ``True`` to Python slots the
same way (a ``toggled(True)`` signal, pyqtgraph's ``setData``). Since Python 3.12 ``None``, ``True``
and ``False`` are immortal (PEP 683), so nothing happens; on 3.11 each call lowers a count by one and
after a few thousand calls the interpreter aborts with "none_dealloc: deallocating None".

:func:`guard_none_refcount` detects the bug by calling one void method and, only when the count
dropped, gives ``None`` the same very large count 3.12 gives immortal objects, so it can never reach
zero. The fix belongs in PySide6 (or in requiring Python 3.12); this keeps the app alive meanwhile.
"""

from __future__ import annotations

import ctypes
import sys

_HEADROOM = 1 << 40  # ~1e12 leaked references: centuries of calls


def _none_refcount_leaks() -> bool:
    from PySide6.QtCore import QTimer

    timer = QTimer()
    before = sys.getrefcount(None)
    for _ in range(16):
        timer.stop()
    return sys.getrefcount(None) < before


def guard_none_refcount() -> bool:
    """Make ``None``, ``True`` and ``False`` effectively immortal when PySide6 leaks references to them.

    Returns:
        True when the bug was found and the guard applied (False on Python >= 3.12 or a fixed PySide6).
    """
    if sys.version_info >= (3, 12) or getattr(guard_none_refcount, "applied", False):
        return False
    if not _none_refcount_leaks():
        return False
    # CPython layout: ob_refcnt is the first Py_ssize_t of every object, at its address (id()).
    for singleton in (None, True, False):
        refcnt = ctypes.c_ssize_t.from_address(id(singleton))
        refcnt.value += _HEADROOM
    guard_none_refcount.applied = True
    return True


def speed_up_feature_hook() -> bool:
    """Let PySide6's import hook find out whether a module uses PySide6 without ``inspect.getsource``.

    PySide6 (``shibokensupport.feature``, PYSIDE-2029) looks for the text "PySide6" in the source of every
    module imported after it, through ``inspect.getsource``: the file read, decoded, split into lines and kept
    in ``linecache``, 0.2 ms a module, a twelfth of the app's start-up for its few hundred modules. This asks
    the same question of the file's bytes ("PySide6" is ASCII, so the answer is the same for any encoding
    Python source can have); modules without a ``.py`` file go to PySide6's own check.

    Returns:
        True when the hook was replaced (False when this PySide6 has no such hook, or it was done already).
    """
    feature = sys.modules.get("shibokensupport.feature")
    upstream = getattr(feature, "_mod_uses_pyside", None)
    if upstream is None or getattr(upstream, "_advisor", False):
        return False

    def _mod_uses_pyside(module) -> bool:
        path = getattr(module, "__file__", None)
        if not isinstance(path, str) or not path.endswith(".py"):
            return upstream(module)
        try:
            with open(path, "rb") as f:
                return b"PySide6" in f.read()
        except OSError:
            return upstream(module)

    _mod_uses_pyside._advisor = True
    feature._mod_uses_pyside = _mod_uses_pyside
    return True
