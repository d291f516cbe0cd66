"""The Linux desktop entry and AppStream metainfo validate and agree with each other and with the package.

The validators are Debian packages (desktop-file-utils, appstream); .ci/run installs them, and a machine
without them skips only the validator runs, not the consistency checks.
"""

from __future__ import annotations

import configparser
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import PurePosixPath
from urllib.parse import urlparse

import pytest

from tests.packaging.support import APP_ID, DESKTOP_FILE, METAINFO_FILE, SCREENSHOT_DIR, read_pyproject


def _desktop_entry() -> configparser.SectionProxy:
    parser = configparser.ConfigParser(interpolation=None, strict=True)
    parser.optionxform = str  # keys are case-sensitive
    parser.read_string(DESKTOP_FILE.read_text(encoding="utf-8"))
    return parser["Desktop Entry"]


def _metainfo() -> ET.Element:
    return ET.parse(METAINFO_FILE).getroot()


def _scripts() -> set[str]:
    project = read_pyproject()["project"]
    return set(project.get("scripts", {})) | set(project.get("gui-scripts", {}))


def test_desktop_file_validates():
    exe = shutil.which("desktop-file-validate")
    if exe is None:
        pytest.skip("desktop-file-validate is not installed (Debian package desktop-file-utils; .ci/run installs it)")
    proc = subprocess.run([exe, str(DESKTOP_FILE)], capture_output=True, text=True, timeout=60)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "error:" not in output and "warning:" not in output, output


def test_metainfo_validates():
    exe = shutil.which("appstreamcli")
    if exe is None:
        pytest.skip("appstreamcli is not installed (Debian package appstream; .ci/run installs it)")
    proc = subprocess.run([exe, "validate", "--no-net", "--explain", str(METAINFO_FILE)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_desktop_file_names_the_app():
    entry = _desktop_entry()
    assert entry["Type"] == "Application"
    assert entry["Icon"] == APP_ID, "the icon is installed under the app id (hicolor/<size>/apps/<app id>.png)"
    program = entry["Exec"].split()[0]
    assert program in _scripts(), f"Exec={program} is not one of the package's scripts {_scripts()}"
    assert entry["TryExec"] == program


def test_metainfo_agrees_with_desktop_file_and_package():
    root = _metainfo()
    assert root.findtext("id") == APP_ID
    assert root.findtext("launchable") == DESKTOP_FILE.name
    assert root.findtext("icon") == _desktop_entry()["Icon"]
    license_ = read_pyproject()["project"]["license"]
    assert root.findtext("project_license") == (license_["text"] if isinstance(license_, dict) else license_)
    binaries = {b.text for b in root.iter("binary")}
    assert binaries and binaries <= _scripts(), f"<provides> names {binaries}, the package has {_scripts()}"
    from advisor import __version__

    versions = [r.get("version") for r in root.iter("release")]
    assert versions and versions[0] == __version__, (f"the newest <release> is {versions[:1]}, the package is "
                                                     f"{__version__}: add a release to the metainfo")


def test_metainfo_screenshots_exist_in_docs():
    """Each screenshot URL ends in docs/screenshots/<page>.png, a file the app rendered into the repository."""
    names = [PurePosixPath(urlparse(el.text.strip()).path) for el in _metainfo().iter("image")]
    assert names, "the metainfo lists no screenshots"
    assert all(n.parent.parts[-2:] == ("docs", "screenshots") for n in names), names
    if not any(SCREENSHOT_DIR.glob("*.png")):
        pytest.skip("no screenshots rendered yet: run packaging/update_screenshots.sh once advisor gui works")
    missing = [n.name for n in names if not (SCREENSHOT_DIR / n.name).is_file()]
    assert not missing, (f"screenshots named in the metainfo but missing from docs/screenshots/: {missing} "
                         "(run packaging/update_screenshots.sh)")



def test_install_script_puts_entry_metainfo_and_icons_in_place(tmp_path):
    """packaging/linux/install-desktop-entry.sh installs into PREFIX/share and uninstalls cleanly."""
    script = DESKTOP_FILE.parent / "install-desktop-entry.sh"
    program = tmp_path / "bin dir" / "advisor-gui"
    program.parent.mkdir()
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    proc = subprocess.run(["bash", str(script), "--prefix", str(tmp_path / "prefix"), "--exec", str(program)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    share = tmp_path / "prefix" / "share"
    desktop = share / "applications" / DESKTOP_FILE.name
    assert f'Exec="{program}"' in desktop.read_text().splitlines()
    assert (share / "metainfo" / METAINFO_FILE.name).is_file()
    assert (share / "icons" / "hicolor" / "scalable" / "apps" / f"{APP_ID}.svg").is_file()
    assert (share / "icons" / "hicolor" / "256x256" / "apps" / f"{APP_ID}.png").is_file()
    if shutil.which("desktop-file-validate"):
        check = subprocess.run(["desktop-file-validate", str(desktop)], capture_output=True, text=True, timeout=60)
        assert check.returncode == 0, check.stdout + check.stderr

    proc = subprocess.run(["bash", str(script), "--prefix", str(tmp_path / "prefix"), "--uninstall"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not desktop.exists() and not list(share.rglob(f"{APP_ID}*"))
