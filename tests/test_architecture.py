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


def test_version_registers_no_command_and_a_command_only_itself():
    """``advisor --version`` imports no command module (nor the job schema and pydantic behind their flags); a
    command line registers the command it names; anything else (help, the app's flags, a typo) all of them."""
    from advisor.cli import COMMANDS, commands_for

    assert commands_for(["--version"]) == () and commands_for(["-v", "--version"]) == ()
    assert commands_for(["plan", "--model", "llama-3-8b"]) == ("plan",)
    assert commands_for(["-v", "serve", "--version"]) == ("serve",)
    for argv in ([], ["--help"], ["--fake-gpu", "2x4090"], ["plna"]):
        assert commands_for(argv) == COMMANDS
    code = ("import sys; from advisor.cli import main; "
            "sys.argv = ['advisor', '--version']\ntry:\n    main()\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('advisor.job', 'advisor.commands.plan', 'pydantic') if m in sys.modules))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().endswith("[]")
