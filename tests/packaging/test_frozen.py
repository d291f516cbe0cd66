"""Smoke test of the frozen (PyInstaller) app: it starts, finds its catalog and icons, and renders the GUI.

Runs only against a build named by ``ADVISOR_FROZEN_APP`` (the ``advisor`` executable);
``packaging/build_frozen.sh`` builds the app and then runs this file.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

_APP = os.environ.get("ADVISOR_FROZEN_APP")
if not _APP:
    pytest.skip("no frozen build named: packaging/build_frozen.sh builds one and sets ADVISOR_FROZEN_APP",
                allow_module_level=True)
APP = Path(_APP).resolve()
INTERNAL = APP.parent / "_internal"


def _run(args: list[str], tmp_path: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "ADVISOR_"))}
    env.update(QT_QPA_PLATFORM="offscreen", ADVISOR_HOME=str(tmp_path / "home"))
    return subprocess.run([str(APP), *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=timeout)


def _detail(proc: subprocess.CompletedProcess) -> str:
    return f"exit {proc.returncode}\n--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-3000:]}"


def test_version(tmp_path):
    from advisor import __version__

    t0 = time.perf_counter()
    proc = _run(["--version"], tmp_path)
    elapsed_s = time.perf_counter() - t0
    assert proc.returncode == 0, _detail(proc)
    assert proc.stdout.strip() == f"advisor {__version__}"
    assert elapsed_s < 10, f"--version took {elapsed_s:.1f} s"


def test_gui_launcher_is_built():
    assert (APP.parent / ("advisor-gui.exe" if os.name == "nt" else "advisor-gui")).is_file()


def test_bundle_has_catalog_and_icons_but_no_torch():
    resources = INTERNAL / "advisor" / "resources"
    for name in ("accelerators.csv", "cloud_offers.csv", "models.toml", "icons/advisor.svg", "icons/advisor-256.png"):
        assert (resources / name).is_file(), f"{name} is missing from the frozen app"
    if os.environ.get("ADVISOR_FREEZE_TORCH") != "1":
        assert not (INTERNAL / "torch").exists(), "torch was bundled; it is left out unless ADVISOR_FREEZE_TORCH=1"


def test_plan_json(tmp_path):
    if _run(["plan", "--help"], tmp_path).returncode != 0:
        pytest.skip("this build has no plan command")
    proc = _run(["plan", "--model", "gpt2", "--json"], tmp_path)
    assert proc.returncode == 0, _detail(proc)
    plan = json.loads(proc.stdout)
    assert plan["schema"] == "advisor.plan/1" and plan["options"]


def test_gui_screenshot(tmp_path):
    if _run(["gui", "--help"], tmp_path).returncode != 0:
        pytest.skip("this build has no gui command")
    shots = tmp_path / "shots"
    proc = _run(["gui", "--screenshot", str(shots)], tmp_path, timeout=240)
    assert proc.returncode == 0, _detail(proc)
    pngs = sorted(shots.glob("*.png"))
    assert pngs, f"no page rendered\n{_detail(proc)}"
    small = [p.name for p in pngs if p.stat().st_size < 2000]
    assert not small, f"nearly empty pages: {small}"


def test_desktop_entry_installs_from_the_folder(tmp_path):
    """linux/install-desktop-entry.sh in the frozen folder finds the bundled icons and runs this build's GUI."""
    script = APP.parent / "linux" / "install-desktop-entry.sh"
    assert script.is_file(), "the frozen folder lacks linux/install-desktop-entry.sh"
    proc = subprocess.run(["bash", str(script), "--prefix", str(tmp_path)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, _detail(proc)
    desktop = next((tmp_path / "share" / "applications").glob("*.desktop"))
    assert f"Exec={APP.parent / 'advisor-gui'}" in desktop.read_text().splitlines()
    assert list((tmp_path / "share" / "icons" / "hicolor").rglob("*.svg"))
