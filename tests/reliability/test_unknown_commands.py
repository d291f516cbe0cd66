"""An unknown command is one line; every command the contract names is registered (none may go missing)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from advisor.cli import _registered, build_parser
from advisor.hw.fake import SCENARIOS
from tests.reliability.conftest import one_line_error

CONTRACT_COMMANDS = ("detect", "monitor", "probe", "plan", "gui", "buy", "models")


def test_an_unknown_command_is_one_line(run_cli):
    line = one_line_error(run_cli("no-such-command"))
    assert "unknown command 'no-such-command'" in line and "plan" in line


@pytest.mark.parametrize("name", CONTRACT_COMMANDS)
def test_contract_commands_exist(name):
    assert name in _registered(build_parser())


def test_monitor_has_once():
    monitor = dict(build_parser()._subparsers._group_actions[0].choices)["monitor"]
    assert any("--once" in a.option_strings for a in monitor._actions)


def test_every_simulated_scenario_is_listed_in_help_and_readme():
    monitor = dict(build_parser()._subparsers._group_actions[0].choices)["monitor"]
    help_text = "".join(monitor.format_help().split())
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"`([\w.+-]+)`", readme.split("simulates hardware:", 1)[1].split("Every output", 1)[0]))
    for name in SCENARIOS:
        assert name in help_text, name
        assert name in listed, name


@pytest.mark.parametrize("command", ["plan", "serve"])
def test_a_model_typed_as_a_scenario_file_says_how_to_name_it(run_cli, command):
    """A new user's first try, ``advisor plan llama-3.1-8b``: one line that names --model, and a missing .toml
    file is told as missing, with no hint (it is a file name)."""
    line = one_line_error(run_cli(command, "llama-3.1-8b"))
    assert "llama-3.1-8b: cannot read" in line and "give --model llama-3.1-8b" in line
    line = one_line_error(run_cli(command, "job.toml"))
    assert "job.toml: cannot read" in line and "--model" not in line
