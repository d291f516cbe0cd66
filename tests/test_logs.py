"""Logging: a rotating file in the user log directory, -v on stderr, a bug logged with its traceback and
shown to the user as one line; a log that cannot be written never breaks a command."""

from __future__ import annotations

import logging

import pytest

from advisor import cli, logs, paths


@pytest.fixture(autouse=True)
def _detach_handlers():
    yield
    root = logging.getLogger("advisor")
    for h in list(logs._handlers):
        root.removeHandler(h)
        h.close()
    logs._handlers.clear()


def test_log_dir_follows_advisor_home(advisor_home):
    assert paths.log_dir() == advisor_home / "log"
    assert logs.log_file() == advisor_home / "log" / "advisor.log"


def test_a_command_is_logged_and_v_shows_it_on_stderr(capsys, advisor_home):
    assert cli.main(["-v", "catalog", "list", "models"]) == 0
    err = capsys.readouterr().err
    assert "INFO advisor.cli: advisor" in err and "catalog list models" in err
    for h in logs._handlers:
        h.flush()
    assert "catalog list models" in logs.log_file().read_text()


def test_quiet_by_default_on_stderr(capsys):
    assert cli.main(["catalog", "list", "models"]) == 0
    assert capsys.readouterr().err == ""


def test_a_bug_is_one_line_for_the_user_and_a_traceback_in_the_log(capsys, monkeypatch):
    import advisor.commands.catalog as catalog_cmd

    def boom(args):
        raise RuntimeError("something\nbroke")

    monkeypatch.setattr(catalog_cmd, "_list", boom)
    assert cli.main(["catalog", "list"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error: RuntimeError: something broke" in err
    assert str(logs.log_file()) in err
    for h in logs._handlers:
        h.flush()
    text = logs.log_file().read_text()
    assert "Traceback (most recent call last)" in text and "RuntimeError: something" in text


def test_an_unwritable_log_does_not_break_a_command(capsys, advisor_home):
    advisor_home.mkdir(parents=True, exist_ok=True)
    (advisor_home / "log").write_text("a file where the log folder should be")
    assert cli.main(["catalog", "list", "models"]) == 0
    assert capsys.readouterr().err == ""
