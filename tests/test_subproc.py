"""``advisor.subproc``: a child's deadline holds whoever holds its pipes; its group is ended with it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from advisor.subproc import EXIT_GRACE_S, bounded_run, bounded_text

pytestmark = pytest.mark.skipif(os.name != "posix", reason="process groups are POSIX")


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def _wait_gone(pid: int, within_s: float = 2.0) -> bool:
    end = time.monotonic() + within_s
    while _alive(pid) and time.monotonic() < end:
        time.sleep(0.05)
    return not _alive(pid)


def test_plain_command_output_and_exit_status():
    done = bounded_run([sys.executable, "-c", "import sys; print('hi'); sys.stderr.write('e' * 10000); sys.exit(3)"],
                       timeout=30)
    assert done.stdout == b"hi\n" and done.returncode == 3
    assert done.stderr == b"e" * 4096  # the tail only


def test_deadline_holds_while_a_grandchild_keeps_stdout(tmp_path):
    pidfile = tmp_path / "pid"
    code = ("import subprocess, sys, time\n"
            "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
            f"open({str(pidfile)!r}, 'w').write(str(c.pid))\n"
            "print('partial', flush=True)\n"
            "time.sleep(60)\n")
    t0 = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired) as info:
        bounded_run([sys.executable, "-c", code], timeout=1.5)
    assert time.monotonic() - t0 < 3.0
    assert info.value.output == b"partial\n"  # what came before the deadline
    assert _wait_gone(int(pidfile.read_text()))


def test_child_that_exits_leaving_a_grandchild_on_the_pipe_is_an_answer(tmp_path):
    pidfile = tmp_path / "pid"
    code = ("import subprocess, sys\n"
            "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
            f"open({str(pidfile)!r}, 'w').write(str(c.pid))\n"
            "print('answer')\n")
    t0 = time.monotonic()
    done = bounded_run([sys.executable, "-c", code], timeout=30)
    assert time.monotonic() - t0 < 2.0 + EXIT_GRACE_S  # not the 30 s deadline, not the grandchild's 60 s
    assert done.stdout == b"answer\n" and done.returncode == 0
    assert _wait_gone(int(pidfile.read_text()))  # ended with the group


def test_output_over_the_bound_is_cut_and_the_child_ended():
    endless = [sys.executable, "-c", "import sys\nwhile True: sys.stdout.buffer.write(b'x' * 65536)"]
    t0 = time.monotonic()
    done = bounded_run(endless, timeout=30, max_bytes=2**20)
    assert time.monotonic() - t0 < 10
    assert 2**20 < len(done.stdout) <= 2**20 + 2**16 and done.returncode != 0


def test_bounded_text_missing_failing_and_late():
    assert bounded_text(["advisor-no-such-program-xyz"], 5) is None
    assert bounded_text([sys.executable, "-c", "import sys; sys.exit(1)"], 5) is None
    assert bounded_text([sys.executable, "-c", "import time; time.sleep(10)"], 0.5) is None
    assert bounded_text([sys.executable, "-c", "print('ok')"], 5) == "ok\n"


def test_a_child_that_closes_its_pipes_before_exiting_keeps_its_exit_status():
    code = ("import os, sys, time\n"
            "sys.stdout.write('done'); sys.stdout.flush(); os.close(1); os.close(2)\n"
            "time.sleep(0.5)\n"  # still finishing after its pipes closed: not ended by the group's signal
            "sys.exit(0)\n")
    done = bounded_run([sys.executable, "-c", code], timeout=30)
    assert done.stdout == b"done" and done.returncode == 0


def test_every_child_starts_through_this_module():
    """One helper for every program the advisor starts on a user's behalf (issue 40): no other module calls
    subprocess's starters or os.system/popen (the bounded-deadline rules hold only here)."""
    import re

    root = Path(__file__).parents[1] / "advisor"
    starter = re.compile(r"subprocess\.(run|Popen|call|check_call|check_output|getoutput)\(|os\.(system|popen)\(")
    offenders = [str(p.relative_to(root)) for p in root.rglob("*.py")
                 if p.name != "subproc.py" and starter.search(p.read_text(encoding="utf-8"))]
    assert offenders == []
