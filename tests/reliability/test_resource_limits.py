"""Reports under a file-size limit (RLIMIT_FSIZE, as a full disk looks to a writer): exit 2, one line, and
the previous report is kept whole."""

from __future__ import annotations

import os
import resource

import pytest

from tests.reliability.conftest import one_line_error

PLAN = ("plan", "--model", "llama-3-8b", "--workload", "lora", "--tokens", "1e9")
LIMIT_BYTES = 20_000  # every report of this plan is larger (the CSV about 60 kB, the PDF about 450 kB)


def _limited():
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT_BYTES, resource.RLIM_INFINITY))


@pytest.mark.parametrize("suffix", [".pdf", ".csv", ".html", ".md"])
def test_a_report_cut_short_by_the_size_limit_fails_and_keeps_the_old_one(run_cli, tmp_path, suffix):
    target = tmp_path / f"report{suffix}"
    target.write_bytes(b"the previous report\n")
    proc = run_cli(*PLAN, "--report", target, preexec_fn=_limited, env={"PYTHONDONTWRITEBYTECODE": "1"})
    line = one_line_error(proc)
    assert "--report" in line and "cannot write" in line and str(target) in line
    assert target.read_bytes() == b"the previous report\n"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".report")) == []  # no temp file left


def test_a_launch_file_cut_short_fails_and_keeps_the_old_one(run_cli, tmp_path):
    target = tmp_path / "job.sh"
    target.write_text("echo old\n")
    proc = run_cli(*PLAN, "--launch", "torchrun", "--launch-file", target,
                   preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (200, resource.RLIM_INFINITY)),
                   env={"PYTHONDONTWRITEBYTECODE": "1"})
    assert "--launch-file" in one_line_error(proc)
    assert target.read_text() == "echo old\n"


def test_a_report_that_fits_is_written_whole(run_cli, tmp_path):
    target = tmp_path / "report.pdf"
    proc = run_cli(*PLAN, "--report", target)
    assert proc.returncode == 0, proc.stderr
    data = target.read_bytes()
    assert data.startswith(b"%PDF-") and b"%%EOF" in data[-64:]
    assert os.stat(target).st_size == len(data)
