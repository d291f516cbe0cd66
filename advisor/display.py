"""Can the desktop app open a window here? Checked before Qt is imported, because Qt aborts the process
(``qt.qpa.plugin: Could not load the Qt platform plugin "xcb"``, exit 134) when it cannot, and its message
names one library (often one that is present) instead of those that are missing.

``display_problem()`` returns one line saying what is missing (no display at all; or which libraries the
X11 plugin links to, with the Debian/Ubuntu packages that hold them), or None when the app can start.
Linux only; other systems, and the ``offscreen``/``minimal``/``vnc`` platforms, are not checked.
No Qt import: the plugin's needed libraries are read from its ELF dynamic section.
"""

from __future__ import annotations

import os
import struct
import sys
from collections.abc import Callable
from pathlib import Path

TERMINAL_HINT = "'advisor plan', 'advisor detect' and 'advisor monitor' work in a terminal"

# soname -> Debian/Ubuntu package (packages.debian.org, bookworm). What Qt 6's xcb plugin links to.
DEBIAN_PACKAGES = {
    "libxcb-cursor.so.0": "libxcb-cursor0", "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-util.so.1": "libxcb-util1", "libxcb-image.so.0": "libxcb-image0",
    "libxcb-keysyms.so.1": "libxcb-keysyms1", "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-render.so.0": "libxcb-render0", "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-shape.so.0": "libxcb-shape0", "libxcb-shm.so.0": "libxcb-shm0", "libxcb-sync.so.1": "libxcb-sync1",
    "libxcb.so.1": "libxcb1", "libxcb-xfixes.so.0": "libxcb-xfixes0", "libxcb-xkb.so.1": "libxcb-xkb1",
    "libxkbcommon.so.0": "libxkbcommon0", "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libX11-xcb.so.1": "libx11-xcb1", "libX11.so.6": "libx11-6", "libGL.so.1": "libgl1",
    "libEGL.so.1": "libegl1", "libOpenGL.so.0": "libopengl0", "libglib-2.0.so.0": "libglib2.0-0",
    "libgthread-2.0.so.0": "libglib2.0-0", "libfontconfig.so.1": "libfontconfig1",
    "libfreetype.so.6": "libfreetype6", "libdbus-1.so.3": "libdbus-1-3", "libxcb-glx.so.0": "libxcb-glx0",
    "libSM.so.6": "libsm6", "libICE.so.6": "libice6",
}
_UNCHECKED_PLATFORMS = ("offscreen", "minimal", "vnc", "linuxfb", "eglfs", "minimalegl", "vkkhrdisplay")
_LIBC = ("libc.so", "libm.so", "libstdc++.so", "libgcc_s.so", "libpthread.so", "libdl.so", "librt.so", "ld-linux")


def elf_needed(path: str | os.PathLike) -> list[str]:
    """The ``DT_NEEDED`` sonames of a 64-bit little-endian ELF shared object ([] when it is not one).

    Source: the System V ABI (ELF-64 Object File Format, the dynamic section and ``DT_NEEDED`` = 1,
    ``DT_STRTAB`` = 5), read through the program headers (``PT_DYNAMIC`` = 2, ``PT_LOAD`` = 1).
    """
    data = Path(path).read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return []
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    loads, dynamic = [], None
    for i in range(phnum):
        p_type, _flags, p_offset, p_vaddr, _paddr, p_filesz, _memsz, _align = struct.unpack_from(
            "<IIQQQQQQ", data, phoff + i * phentsize)
        if p_type == 1:
            loads.append((p_vaddr, p_offset, p_filesz))
        elif p_type == 2:
            dynamic = (p_offset, p_filesz)
    if dynamic is None:
        return []

    def file_offset(vaddr: int) -> int:
        for v, off, size in loads:
            if v <= vaddr < v + size:
                return off + vaddr - v
        return vaddr

    needed, strtab = [], None
    for off in range(dynamic[0], dynamic[0] + dynamic[1], 16):
        tag, value = struct.unpack_from("<qQ", data, off)
        if tag == 0:
            break
        if tag == 1:
            needed.append(value)
        elif tag == 5:
            strtab = file_offset(value)
    if strtab is None:
        return []
    return [data[strtab + n:data.index(b"\0", strtab + n)].decode("ascii", "replace") for n in needed]


def _qt_dirs() -> tuple[Path, Path] | None:
    """(plugins/platforms, lib) of the installed PySide6, found without importing Qt."""
    import importlib.util

    spec = importlib.util.find_spec("PySide6")
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(list(spec.submodule_search_locations)[0]) / "Qt"
    return root / "plugins" / "platforms", root / "lib"


def _loadable(soname: str) -> bool:
    import ctypes

    try:
        ctypes.CDLL(soname)
    except OSError:
        return False
    return True


def missing_xcb_libraries(loadable: Callable[[str], bool] = _loadable) -> list[str]:
    """System libraries Qt's xcb plugin needs that cannot be loaded here (Qt's own libraries are skipped)."""
    dirs = _qt_dirs()
    if dirs is None:
        return []
    platforms, lib = dirs
    objects = [platforms / "libqxcb.so", lib / "libQt6XcbQpa.so.6"]
    seen: list[str] = []
    for obj in objects:
        if not obj.is_file():
            continue
        for soname in elf_needed(obj):
            if soname.startswith("libQt6") or soname.startswith(_LIBC) or soname in seen:
                continue
            seen.append(soname)
    return [s for s in seen if not loadable(s)]


def display_problem(environ=None, loadable: Callable[[str], bool] = _loadable, platform: str | None = None) -> str | None:
    """One line naming why the app cannot open a window here, or None when it can (or is not checked).

    Args:
        environ: the environment (``os.environ`` by default).
        loadable: tells whether a library can be loaded (tests pass a fake).
        platform: ``sys.platform`` by default.
    """
    env = os.environ if environ is None else environ
    if not (platform or sys.platform).startswith("linux"):
        return None
    qpa = (env.get("QT_QPA_PLATFORM") or "").split(";")[0].split(":")[0].strip().lower()
    if qpa in _UNCHECKED_PLATFORMS:
        return None
    wayland, x11 = bool(env.get("WAYLAND_DISPLAY")), bool(env.get("DISPLAY"))
    if not wayland and not x11:
        return ("no display: neither DISPLAY nor WAYLAND_DISPLAY is set, so the desktop app cannot open a "
                f"window; {TERMINAL_HINT}")
    if wayland and qpa != "xcb":
        return None  # Qt uses its Wayland plugin
    if not x11:
        return f"no X11 display: QT_QPA_PLATFORM=xcb but DISPLAY is not set; {TERMINAL_HINT}"
    missing = missing_xcb_libraries(loadable)
    if not missing:
        return None
    packages = sorted({DEBIAN_PACKAGES[s] for s in missing if s in DEBIAN_PACKAGES})
    install = f"; on Debian/Ubuntu: sudo apt install {' '.join(packages)}" if packages else ""
    return (f"the desktop app cannot start: Qt's X11 plugin needs {', '.join(missing)}, not installed here"
            f"{install}; {TERMINAL_HINT}")
