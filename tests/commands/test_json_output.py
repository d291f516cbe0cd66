"""Every command prints strict JSON through one function, and an unexpected error is one line, never a traceback."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from advisor import cli
from advisor.commands._json import print_json

COMMANDS = Path(cli.__file__).with_name("commands")


def test_non_finite_figures_are_refused_and_nothing_is_printed(capsys):
    with pytest.raises(cli.UsageError, match="not a finite number"):
        print_json({"a": [1.0, math.nan]})
    with pytest.raises(cli.UsageError):
        print_json({"a": math.inf})
    assert capsys.readouterr().out == ""
    print_json({"a": 1.5}, indent=None)
    assert json.loads(capsys.readouterr().out) == {"a": 1.5}


def test_no_command_prints_json_another_way():
    loose = [f"{p.name}:{i}" for p in sorted(COMMANDS.glob("*.py")) if p.name != "_json.py"
             for i, line in enumerate(p.read_text().splitlines(), 1) if re.search(r"print\(json\.dumps", line)]
    assert loose == []


def test_an_unexpected_value_error_is_one_line_exit_1(monkeypatch, capsys):
    def broken(args):
        raise ValueError("something the code did not expect")

    monkeypatch.setattr(cli, "_parse", lambda parser, argv: type("A", (), {"verbose": 0, "run": staticmethod(broken)})())
    assert cli.main(["detect"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "internal error: ValueError" in err[0]


def test_plan_without_a_hardware_library_leaves_this_machine_out(monkeypatch, capsys):
    import advisor.planner.machine as machine

    def missing(*_args, **_kw):
        raise ModuleNotFoundError("No module named 'psutil'")

    monkeypatch.setattr(machine, "local_machine", missing)
    assert cli.main(["plan", "--params", "7e9", "--json"]) == 0
    out = capsys.readouterr()
    doc = json.loads(out.out)
    assert doc["options"] and not any(o["kind"] == "owned" for o in doc["options"])
    assert "not detected" in out.err and "psutil" in out.err and len(out.err.strip().splitlines()) == 1
