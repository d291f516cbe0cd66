"""No display, or no xcb libraries: one line naming what is missing and the packages, exit 2; never Qt's
abort (exit 134)."""

from __future__ import annotations

import os

import pytest

from advisor.display import DEBIAN_PACKAGES, _qt_dirs, display_problem, elf_needed, missing_xcb_libraries
from tests.reliability.conftest import one_line_error

MINIMAL_DEBIAN = ("libxcb-icccm.so.4", "libxcb-keysyms.so.1")  # what a minimal Debian with an X server lacks


def _env_without_display():
    return {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}


def test_no_display_is_one_line_not_an_abort(run_cli, monkeypatch):
    for key in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):
        monkeypatch.delenv(key, raising=False)
    proc = run_cli("gui", "--fake-gpu", "2x4090", env={"QT_QPA_PLATFORM": ""})
    line = one_line_error(proc)
    assert "no display" in line and "advisor plan" in line and "advisor monitor" in line


def test_missing_xcb_libraries_are_named_with_their_packages():
    line = display_problem({"DISPLAY": ":0"}, loadable=lambda soname: soname not in MINIMAL_DEBIAN, platform="linux")
    if line is None and not (_qt_dirs() and (_qt_dirs()[1] / "libQt6XcbQpa.so.6").is_file()):
        pytest.skip("this PySide6 has no xcb plugin")
    assert "libxcb-icccm.so.4" in line and "libxcb-keysyms.so.1" in line
    assert "apt install libxcb-icccm4 libxcb-keysyms1" in line
    assert "libxcb-cursor" not in line  # present: Qt's own message would have named it


def test_the_xcb_check_on_this_machine(run_cli):
    """With DISPLAY set, the libraries this machine really lacks (if any) are named before Qt loads."""
    missing = missing_xcb_libraries()
    if not missing:
        pytest.skip("every library of the xcb plugin is installed here (Qt would try to connect)")
    env = {**_env_without_display(), "DISPLAY": ":99", "QT_QPA_PLATFORM": ""}
    line = one_line_error(run_cli("gui", "--fake-gpu", "2x4090", env=env))
    assert all(s in line for s in missing)
    assert all(DEBIAN_PACKAGES[s] in line for s in missing if s in DEBIAN_PACKAGES)


def test_the_plugins_needed_libraries_are_read_from_its_elf_header():
    dirs = _qt_dirs()
    if dirs is None or not (dirs[0] / "libqxcb.so").is_file():
        pytest.skip("no xcb plugin in this PySide6")
    needed = elf_needed(dirs[0] / "libqxcb.so")
    assert "libQt6XcbQpa.so.6" in needed and "libc.so.6" in needed
    assert elf_needed(__file__) == []  # not an ELF file


@pytest.mark.parametrize("environ,platform", [({"WAYLAND_DISPLAY": "wayland-0"}, "linux"),
                                              ({"QT_QPA_PLATFORM": "offscreen"}, "linux"),
                                              ({}, "darwin"), ({}, "win32")])
def test_other_platforms_are_not_checked(environ, platform):
    assert display_problem(environ, loadable=lambda s: False, platform=platform) is None


def test_app_flags_without_a_command_open_the_app():
    from advisor.cli import _parse, build_parser

    args = _parse(build_parser(), ["-v", "--fake-gpu", "2x4090"])
    assert (args.command, args.fake_gpu, args.verbose) == ("gui", "2x4090", 1)
    assert _parse(build_parser(), []).command == "gui"
