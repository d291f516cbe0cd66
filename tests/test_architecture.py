"""The layering of the README (Development), enforced: import-linter contracts in pyproject.toml and a light CLI import."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_import_linter_contracts_are_kept():
    exe = Path(sys.executable).with_name("lint-imports")
    if not exe.exists():
        found = shutil.which("lint-imports")
        if found is None:
            pytest.fail("import-linter is not installed: pip install -e '.[test]'")
        exe = Path(found)
    p = subprocess.run([str(exe)], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert "0 broken" in p.stdout


def test_cli_and_version_import_no_heavy_modules():
    code = ("import sys, advisor.cli; advisor.cli.build_parser(); "
            "print(sorted(m for m in ('PySide6', 'torch', 'pynvml', 'pyqtgraph', 'psutil', 'numpy') if m in sys.modules))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[]"
