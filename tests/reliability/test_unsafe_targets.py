"""Writers refuse targets that are not regular files: a FIFO, a device node, a directory, a symlink.
Nothing is followed, opened or replaced."""

from __future__ import annotations

import os
import stat

import pytest

from tests.reliability.conftest import one_line_error

PLAN = ("plan", "--model", "llama-3-8b", "--workload", "lora", "--tokens", "1e9")


def _fifo(tmp_path):
    path = tmp_path / "report.md"
    os.mkfifo(path)
    return path


def _device(tmp_path):
    path = tmp_path / "report.csv"
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # a /dev/null of our own
    except (PermissionError, OSError) as exc:
        pytest.skip(f"cannot make a device node here: {exc}")
    return path


def _symlink(tmp_path):
    target = tmp_path / "precious.txt"
    target.write_text("keep me\n")
    link = tmp_path / "report.html"
    link.symlink_to(target)
    return link


def _directory(tmp_path):
    path = tmp_path / "report.html"
    path.mkdir()
    return path


@pytest.mark.parametrize("make,what", [(_fifo, "FIFO"), (_device, "character device"), (_symlink, "symbolic link"),
                                       (_directory, "directory")])
def test_a_report_to_a_non_regular_file_is_refused(run_cli, tmp_path, make, what):
    target = make(tmp_path)
    before = os.lstat(target)
    line = one_line_error(run_cli(*PLAN, "--report", target, timeout=60))
    assert what in line and "--report" in line
    after = os.lstat(target)
    assert (after.st_mode, after.st_ino) == (before.st_mode, before.st_ino)
    if what == "symbolic link":
        assert (tmp_path / "precious.txt").read_text() == "keep me\n"


@pytest.mark.parametrize("make,what", [(_fifo, "FIFO"), (_symlink, "symbolic link")])
def test_other_writers_refuse_them_too(run_cli, tmp_path, make, what):
    target = make(tmp_path)
    for args in ((*PLAN, "--launch", "sbatch", "--launch-file", target), (*PLAN, "--save-scenario", target),
                 ("catalog", "export", target)):
        line = one_line_error(run_cli(*args))
        assert what in line, (args, line)
    assert stat.S_IFMT(os.lstat(target).st_mode) in (stat.S_IFIFO, stat.S_IFLNK)


def test_catalog_export_to_a_directory_is_one_line(run_cli, tmp_path):
    line = one_line_error(run_cli("catalog", "export", "."))
    assert "directory" in line
