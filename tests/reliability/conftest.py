"""Shared helpers of the reliability suite: run the CLI of this tree in a scratch home (ADVISOR_HOME)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def run_cli(advisor_home, tmp_path):
    """Run ``python -m advisor ARGS`` in ``tmp_path`` with the scratch home; returns the CompletedProcess."""

    def run(*args, stdin=None, env=None, timeout=60, cwd=None, preexec_fn=None):
        full_env = {**os.environ, "ADVISOR_HOME": str(advisor_home), "PYTHONPATH": str(ROOT),
                    "QT_QPA_PLATFORM": "offscreen", **(env or {})}
        return subprocess.run([sys.executable, "-m", "advisor", *map(str, args)], input=stdin, capture_output=True,
                              text=True, env=full_env, timeout=timeout, cwd=cwd or tmp_path, preexec_fn=preexec_fn)

    return run


def one_line_error(proc) -> str:
    """The error of a refused command: exit 2, one line on stderr, no traceback."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    return lines[0]
