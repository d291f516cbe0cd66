"""``advisor fleet collect``: commands as argument lists, validated names, fake srun/sinfo/ssh on PATH."""

from __future__ import annotations

import json
import os
import stat
import sys

import pytest

from advisor.cli import main
from advisor.store import fleet as fl
from advisor.store import fleet_collect as fc

ADVISOR = [sys.executable, "-m", "advisor"]


def _tool(folder, name: str, body: str) -> None:
    path = folder / name
    path.write_text(f"#!{sys.executable}\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.fixture
def fake_cluster(tmp_path, monkeypatch):
    """sinfo lists three nodes; srun runs the command once per node with a distinct machine id (as
    three machines would), logging its arguments; ssh does the same for one host."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls.jsonl"
    _tool(bin_dir, "sinfo", f"""
import json, sys
open({str(log)!r}, "a").write(json.dumps(sys.argv) + "\\n")
print("node1\\nnode2\\nnode3\\nnode1")
""")
    runner = f"""
import json, os, subprocess, sys
open({str(log)!r}, "a").write(json.dumps(sys.argv) + "\\n")
args = sys.argv[1:]
nodes = ["local"]
if sys.argv[0].endswith("srun"):
    nodes = [a.split("=", 1)[1] for a in args if a.startswith("--nodelist=")][0].split(",")
    while args[0].startswith("--"):
        args = args[1:]
else:
    args = args[args.index("--") + 2:]
for i, node in enumerate(nodes):
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    doc = json.loads(out)
    doc["host"]["hostname"] = "worker"  # every node reports the same name
    doc["machine_id"] = "m-%016x" % (i + 1 + len(sys.argv[0]))
    print(json.dumps(doc))
"""
    _tool(bin_dir, "srun", runner)
    _tool(bin_dir, "ssh", runner)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("ADVISOR_FAKE_GPU", "2x4090")
    return log


def _calls(log):
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_collect_slurm_through_srun_imports_every_node(fake_cluster, capsys):
    assert main(["fleet", "collect", "--slurm", "--partition", "gpu", "--advisor", " ".join(ADVISOR)]) == 0
    out = capsys.readouterr().out
    assert "collected 3 machine(s) with 6 GPU(s)" in out
    fleet = fl.load_fleet()
    assert [m.hostname for m in fleet.machines] == ["worker"] * 3  # same name, three machines
    assert fl.fleet_accelerators(fleet) == {"rtx-4090": 6}
    sinfo, srun = _calls(fake_cluster)
    assert sinfo[1:] == ["--noheader", "--Node", "--format=%N", "--partition=gpu"]
    assert srun[1:5] == ["--nodes=3", "--ntasks-per-node=1", "--nodelist=node1,node2,node3", "--partition=gpu"]
    assert srun[5:] == [*ADVISOR, "detect", "--json", "--no-frameworks"]


def test_collect_hosts_over_ssh(fake_cluster, tmp_path, capsys):
    hosts = tmp_path / "hosts.txt"
    hosts.write_text("# lab machines\nws1.lab.example\n\nws2 # the old one\n")
    assert main(["fleet", "collect", "--hosts", str(hosts), "--advisor", " ".join(ADVISOR)]) == 0
    calls = _calls(fake_cluster)
    assert sorted(c[1:7] for c in calls) == [["-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "--", h]
                                             for h in ("ws1.lab.example", "ws2")]  # asked at once, in any order
    assert len(fl.load_fleet().machines) == 1  # the fake ssh gives both hosts the same machine id


@pytest.mark.parametrize("line", ["-oProxyCommand=touch pwned", "host;rm", "a b", "$(id)", "x" * 300, "host\\n"])
def test_hostnames_are_validated(tmp_path, capsys, line):
    hosts = tmp_path / "hosts.txt"
    hosts.write_text(f"good\n{line}\n")
    assert main(["fleet", "collect", "--hosts", str(hosts)]) == 2
    err = capsys.readouterr().err.strip()
    assert "line 2" in err and "not a valid host name" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize("args, message", [
    (["--slurm", "--partition", "gpu;reboot"], "partition"),
    (["--slurm", "--advisor", "advisor; reboot"], "--advisor"),
    (["--slurm", "--nodes", "n1,-x"], "not a valid host name"),
    (["--hosts", "/nonexistent/hosts"], "cannot read"),
    (["--hosts", "h", "--allreduce"], "--allreduce"),
])
def test_bad_arguments_one_line(capsys, args, message):
    assert main(["fleet", "collect", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_no_srun_says_so(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert main(["fleet", "collect", "--slurm", "--nodes", "n1"]) == 2
    assert "srun not found" in capsys.readouterr().err


def test_failed_host_is_reported_and_others_kept():
    def run(cmd, **kw):
        import subprocess

        host = cmd[cmd.index("--") + 1]
        if host == "down":
            return subprocess.CompletedProcess(cmd, 255, "", "ssh: connect to host down port 22: refused\n")
        doc = {"schema": "advisor.detect/1", "machine_id": f"m-{host}", "host": {"hostname": host},
               "cpu": {"model": "x", "logical_cores": 4}, "memory": {"total_bytes": 2**34}, "gpus": []}
        return subprocess.CompletedProcess(cmd, 0, json.dumps(doc), "")

    r = fc.collect_hosts(["up", "down"], run=run)
    assert [m.hostname for m in r.machines] == ["up"]
    assert r.failures == ("down: ssh exited 255: ssh: connect to host down port 22: refused",)


def test_allreduce_command_and_result():
    cmd = fc.allreduce_command(["n1", "n2"], "gpu", ["python3", "-m", "advisor"])
    assert cmd[:5] == ["srun", "--nodes=2", "--ntasks-per-node=1", "--nodelist=n1,n2", "--partition=gpu"]
    assert "--rdzv-endpoint=n1:29511" in cmd and cmd[-5:] == ["probe", "allreduce", "--json", "--no-save", "--quick"]
    assert cmd[cmd.index("-m", 6) + 1] == "torch.distributed.run"

    def run(c, **kw):
        import subprocess

        doc = {"schema": "advisor.probe/1", "probe": "allreduce", "results": {"busbw": {"best": 11.5}}}
        return subprocess.CompletedProcess(c, 0, "noise\n" + json.dumps(doc, indent=2) + "\n", "")

    inter = fc.measure_allreduce(["n1", "n2"], run=run)
    assert inter["busbw_gbps"] == 11.5 and inter["nodes"] == 2
    fleet = fl.import_machines([], inter_node=inter)
    assert fl.load_fleet().inter_node["busbw_gbps"] == 11.5 and fleet.inter_node == inter
