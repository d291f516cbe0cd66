"""A command the contract names but this advisor does not have yet is an unknown command: exit 2, one line."""

from __future__ import annotations

import pytest

from advisor.cli import _registered, build_parser
from tests.reliability.conftest import one_line_error

CONTRACT_COMMANDS = ("buy", "models")


def test_an_unknown_command_is_one_line(run_cli):
    line = one_line_error(run_cli("no-such-command"))
    assert "unknown command 'no-such-command'" in line and "plan" in line


@pytest.mark.parametrize("name", CONTRACT_COMMANDS)
def test_contract_commands_are_unknown_until_they_exist(run_cli, name):
    if name in _registered(build_parser()):
        pytest.skip(f"'advisor {name}' exists now")
    assert f"unknown command {name!r}" in one_line_error(run_cli(name))


def test_monitor_once_json_is_refused_until_it_exists(run_cli):
    monitor = dict(build_parser()._subparsers._group_actions[0].choices)["monitor"]
    if any("--once" in a.option_strings for a in monitor._actions):
        pytest.skip("'advisor monitor --once' exists now")
    assert "--once" in one_line_error(run_cli("monitor", "--once", "--json", "--fake-gpu", "2x4090"))
