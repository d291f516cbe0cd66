"""One unit system on the command line: memory in GB (1e9 bytes) everywhere, GiB only when the setting asks.

The app reads ``display/memory_unit`` from ``gui.ini``; the command line reads the same key (advisor.store.display),
so ``advisor detect`` and the app give the same figure for the same memory. A card of 24564 MiB is 25.8 GB.
"""

from __future__ import annotations

import pytest

from advisor import units
from advisor.cli import main
from advisor.gui.settings import FILE_NAME as GUI_FILE
from advisor.store import display

COMMANDS = (
    ("detect", "--fake-gpu", "2x4090"),
    ("monitor", "--once", "--fake-gpu", "2x4090"),
    ("models", "--fake-gpu", "2x4090"),
    ("plan", "--model", "llama-3-8b", "--workload", "lora", "--tokens", "1e7", "--fake-gpu", "2x4090", "--top", "3"),
)


@pytest.fixture(autouse=True)
def _reset_unit():
    yield
    units.set_memory_binary(False)


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda a: a[0])
def test_no_output_prints_gib_unless_asked(argv, capsys):
    assert main(list(argv)) == 0
    out = capsys.readouterr().out
    assert "GiB" not in out and "MiB" not in out
    assert "GB" in out


def test_detect_gives_the_apps_figure_for_a_4090(capsys):
    assert main(["detect", "--fake-gpu", "2x4090"]) == 0
    # 24564 MiB = 25,757,220,864 bytes: 25.8 GB, what the Machine page shows
    assert "25.8 GB" in capsys.readouterr().out


def test_the_gib_setting_changes_the_command_line_too(advisor_home, capsys):
    assert display.FILE_NAME == GUI_FILE
    from advisor import paths

    (paths.config_dir(create=True) / GUI_FILE).write_text("[display]\nmemory_unit=GiB\n", encoding="utf-8")
    assert main(["detect", "--fake-gpu", "2x4090"]) == 0
    assert "24.0 GiB" in capsys.readouterr().out  # 24564 MiB / 1024


def test_a_damaged_settings_file_means_gb(advisor_home):
    from advisor import paths

    (paths.config_dir(create=True) / GUI_FILE).write_bytes(b"\xff\xfe[display\nmemory_unit")
    assert display.memory_binary() is False
