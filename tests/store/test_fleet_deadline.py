"""``advisor fleet collect --timeout N`` holds its deadline when a node's ssh (or srun) leaves a child holding
its stdout open (a login script, a stuck ControlMaster, a wrapper that forks): the node is reported as
"no answer within N s", the others are collected, and no process the test started is left running."""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from pathlib import Path

import pytest

from advisor.cli import main
from advisor.store import fleet as fl

pytestmark = pytest.mark.skipif(os.name != "posix", reason="process groups are POSIX")

# Prints one detect document per node it answers for; for the node named "stuck" it forks a child that holds
# stdout open for 60 s (writing its pid to PIDS) and then waits for that child, as a hung session would.
STAND_IN = r'''
import json, os, subprocess, sys
args = sys.argv[1:]
if os.path.basename(sys.argv[0]) == "srun":
    nodes = [a.split("=", 1)[1] for a in args if a.startswith("--nodelist=")][0].split(",")
else:
    nodes = [args[args.index("--") + 1]]
for node in sorted(nodes, key=lambda n: n == "stuck"):  # srun's tasks run at once: the others answer first
    if node == "stuck":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        with open(os.environ["PIDS"], "a") as f:
            f.write(f"{os.getpid()}\n{child.pid}\n")
        sys.stdout.flush()
        child.wait()
        continue
    doc = {"schema": "advisor.detect/1", "machine_id": "m-" + node, "host": {"hostname": node},
           "cpu": {"model": "x", "logical_cores": 4}, "memory": {"total_bytes": 2**34}, "gpus": []}
    print(json.dumps(doc), flush=True)
'''


def running(pid: int) -> bool:
    """The process exists and is not a zombie waiting to be reaped."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"


@pytest.fixture
def stand_ins(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("ssh", "srun"):
        path = bin_dir / name
        path.write_text(f"#!{sys.executable}\n{STAND_IN}")
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    pids = tmp_path / "pids"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("PIDS", str(pids))
    yield pids
    left = [int(p) for p in pids.read_text().split()] if pids.exists() else []
    for pid in left:  # never leave one behind, even when an assertion failed
        if running(pid):
            os.kill(pid, 9)


def _check_none_left(pids: Path) -> None:
    started = [int(p) for p in pids.read_text().split()]
    assert len(started) == 2  # the stand-in and its child
    deadline = time.monotonic() + 2
    while any(running(p) for p in started) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [p for p in started if running(p)]


def test_ssh_node_holding_its_pipe_is_reported_within_the_deadline(stand_ins, tmp_path, capsys):
    hosts = tmp_path / "hosts.txt"
    hosts.write_text("node1\nstuck\nnode3\n")
    t0 = time.monotonic()
    assert main(["fleet", "collect", "--hosts", str(hosts), "--timeout", "5", "--json"]) == 0
    took = time.monotonic() - t0
    assert took < 7, took  # the bound: the 5 s deadline plus start-up, not the child's 60 s
    out, err = capsys.readouterr()
    assert "warning: stuck: no answer within 5 s" in err
    assert sorted(m.hostname for m in fl.load_fleet().machines) == ["node1", "node3"]
    assert json.loads(out)["schema"]
    _check_none_left(stand_ins)


def test_srun_step_holding_its_pipe_keeps_the_nodes_that_answered(stand_ins, capsys):
    t0 = time.monotonic()
    assert main(["fleet", "collect", "--slurm", "--nodes", "node1,stuck,node3", "--timeout", "5"]) == 0
    took = time.monotonic() - t0
    assert took < 7, took
    out, err = capsys.readouterr()
    assert "collected 2 machine(s)" in out
    assert "warning: stuck: no answer within 5 s" in err
    assert sorted(m.hostname for m in fl.load_fleet().machines) == ["node1", "node3"]
    _check_none_left(stand_ins)
