"""The wheel built from the working tree, installed outside the repository, runs and finds its resources.

Slow (one sdist + wheel build and a fresh venv per session, about 10-30 s) but bounded by timeouts.
The ``plan`` and ``gui`` smoke checks skip until those commands exist, and run as soon as they do.
"""

from __future__ import annotations

import json

import pytest

from tests.packaging.support import ICON_SIZES, REPO

pytestmark = pytest.mark.slow


def _resource_files() -> list[str]:
    """Every file under resources/ as it is named inside the wheel (``advisor/resources/...``)."""
    root = REPO / "resources"
    return sorted(f"advisor/resources/{p.relative_to(root).as_posix()}" for p in root.rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc")


def _fail_output(proc) -> str:
    return f"exit {proc.returncode}\n--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-3000:]}"


def test_wheel_ships_every_resource_file(installed_wheel):
    missing = [name for name in _resource_files() if name not in installed_wheel.wheel_names]
    assert not missing, f"resources/ files missing from the wheel (check [tool.setuptools.package-data]): {missing}"
    for size in ICON_SIZES:
        assert f"advisor/resources/icons/advisor-{size}.png" in installed_wheel.wheel_names
    assert "advisor/resources/icons/advisor.svg" in installed_wheel.wheel_names


def test_sdist_ships_sources_and_resources(installed_wheel):
    if installed_wheel.sdist is None:
        pytest.skip("only a wheel was built (the 'build' front end is not installed: pip install build)")
    names = installed_wheel.sdist_names
    wanted = ["pyproject.toml", "advisor/__init__.py", "advisor/cli.py",
              *(n.replace("advisor/resources/", "resources/", 1) for n in _resource_files())]
    missing = [n for n in wanted if n not in names]
    assert not missing, f"files missing from the sdist: {missing}"


def test_installed_wheel_runs_from_its_own_environment(installed_wheel, tmp_path):
    """``advisor --version`` works, and the package, catalog and icons come from the installed wheel."""
    proc = installed_wheel.run(["advisor", "--version"], home=tmp_path / "home", cwd=tmp_path)
    assert proc.returncode == 0, _fail_output(proc)
    from advisor import __version__

    assert proc.stdout.strip() == f"advisor {__version__}"
    gui_launcher = installed_wheel.bin_dir / ("advisor-gui.exe" if installed_wheel.python.suffix else "advisor-gui")
    assert gui_launcher.is_file(), "the wheel installs no advisor-gui launcher (the desktop entry runs it)"

    script = r"""
import importlib.util, json, sys
from importlib.resources import files
import advisor
from advisor.catalog import load_catalog
res = files("advisor.resources")
icons = sorted(p.name for p in (res / "icons").iterdir())
cat = load_catalog(use_user_file=False)
print(json.dumps({
    "advisor_file": advisor.__file__,
    "resources": str(res),
    "icons": icons,
    "svg_bytes": len((res / "icons" / "advisor.svg").read_bytes()),
    "accelerators": len(cat.accelerators), "offers": len(cat.offers), "models": len(cat.models),
    "has_gpt2": "gpt2" in cat.models,
    "torch_importable": importlib.util.find_spec("torch") is not None,
    "pytest_importable": importlib.util.find_spec("pytest") is not None,
}))
"""
    proc = installed_wheel.run(["python", "-c", script], home=tmp_path / "home", cwd=tmp_path)
    assert proc.returncode == 0, _fail_output(proc)
    info = json.loads(proc.stdout)
    venv = str(installed_wheel.venv)
    assert info["advisor_file"].startswith(venv), f"advisor imported from {info['advisor_file']}, not the venv"
    assert info["resources"].startswith(venv), f"resources read from {info['resources']}, not the venv"
    assert REPO.as_posix() not in info["advisor_file"]
    assert "advisor.svg" in info["icons"] and all(f"advisor-{s}.png" in info["icons"] for s in ICON_SIZES)
    assert info["svg_bytes"] > 500
    assert info["accelerators"] > 0 and info["offers"] > 0 and info["models"] > 0
    assert info["has_gpt2"], "the bundled model presets lack gpt2"
    # The environment holds only the wheel's declared dependencies, so a hidden import would fail here.
    assert not info["torch_importable"] and not info["pytest_importable"]


def test_installed_plan_json(installed_wheel, tmp_path):
    if not installed_wheel.has_module("advisor.commands.plan"):
        pytest.skip("advisor plan is not implemented yet (advisor/commands/plan.py is not in the wheel)")
    proc = installed_wheel.run(["advisor", "plan", "--model", "gpt2", "--json"], home=tmp_path / "home",
                               cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, _fail_output(proc)
    plan = json.loads(proc.stdout)
    assert plan["schema"] == "advisor.plan/1"
    assert plan["model"]["params"] > 0
    assert plan["options"], "the installed catalog produced no hardware options"
    assert all(o["cost_usd"] >= 0 for o in plan["options"])


def test_installed_gui_screenshot(installed_wheel, tmp_path):
    if not installed_wheel.has_module("advisor.commands.gui"):
        pytest.skip("advisor gui is not implemented yet (advisor/commands/gui.py is not in the wheel)")
    shots = tmp_path / "shots"
    proc = installed_wheel.run(["advisor", "gui", "--screenshot", str(shots)], home=tmp_path / "home",
                               cwd=tmp_path, timeout=240)
    assert proc.returncode == 0, _fail_output(proc)
    pngs = sorted(shots.glob("*.png"))
    assert pngs, f"no page rendered into {shots}\n{_fail_output(proc)}"
    for png in pngs:
        head = png.read_bytes()[:8]
        assert head == b"\x89PNG\r\n\x1a\n", f"{png.name} is not a PNG"
        assert png.stat().st_size > 2000, f"{png.name} is nearly empty ({png.stat().st_size} bytes)"

