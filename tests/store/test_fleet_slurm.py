"""``advisor fleet collect --slurm`` against a real single-node Slurm (Debian's slurm-wlm and munge).

The fixture starts a private munged, slurmctld and slurmd (its own socket, ports and state folder) and
stops them afterwards; it skips with the reason when it is not root, the daemons are not installed
(``.ci/run`` installs them), or the node does not come up.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time

import pytest

from advisor.cli import main
from advisor.store import fleet as fl

DAEMONS = ("munged", "slurmctld", "slurmd", "srun", "sinfo")


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    missing = [d for d in DAEMONS if shutil.which(d) is None]
    if missing:
        pytest.skip(f"Slurm not installed ({', '.join(missing)} missing): apt-get install slurm-wlm munge")
    if os.geteuid() != 0:
        pytest.skip("starting slurmctld and slurmd for the test needs root")
    if not os.path.exists("/etc/munge/munge.key"):
        pytest.skip("no /etc/munge/munge.key (the munge package creates it)")
    d = tmp_path_factory.mktemp("slurm")
    host = socket.gethostname().split(".")[0]
    port = random.randint(20000, 30000)
    conf = d / "slurm.conf"
    conf.write_text("\n".join([
        "ClusterName=advisortest", f"SlurmctldHost={host}", f"SlurmctldPort={port}", f"SlurmdPort={port + 1}",
        "AuthType=auth/munge", f"AuthInfo=socket={d}/munge.socket", "CredType=cred/munge",
        "SlurmUser=root", "SlurmdUser=root", f"StateSaveLocation={d}/state", f"SlurmdSpoolDir={d}/spool",
        f"SlurmctldPidFile={d}/slurmctld.pid", f"SlurmdPidFile={d}/slurmd.pid",
        f"SlurmctldLogFile={d}/slurmctld.log", f"SlurmdLogFile={d}/slurmd.log",
        "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "SchedulerType=sched/builtin",
        "SelectType=select/cons_tres", "ReturnToService=2", "MpiDefault=none",
        "JobAcctGatherType=jobacct_gather/none", "AccountingStorageType=accounting_storage/none",
        f"NodeName={host} CPUs={os.cpu_count() or 1} RealMemory=1000 State=UNKNOWN",
        f"PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP", ""]))
    (d / "state").mkdir()
    (d / "spool").mkdir()
    env = {**os.environ, "SLURM_CONF": str(conf)}
    started = []
    try:
        for cmd in (["munged", "--force", f"--socket={d}/munge.socket", f"--pid-file={d}/munged.pid",
                     f"--log-file={d}/munged.log", f"--seed-file={d}/munge.seed"],
                    ["slurmctld", "-f", str(conf)], ["slurmd", "-f", str(conf)]):
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=30)
            if proc.returncode != 0:
                pytest.skip(f"{cmd[0]} did not start: {(proc.stderr or proc.stdout).strip()[-200:]}")
            started.append(cmd[0])
        deadline = time.monotonic() + 30
        while True:
            state = subprocess.run(["sinfo", "--noheader", "--format=%t"], env=env, capture_output=True, text=True)
            if state.returncode == 0 and state.stdout.strip() in ("idle", "mix", "alloc"):
                break
            if time.monotonic() > deadline:
                pytest.skip(f"the Slurm node did not come up: {state.stdout.strip() or state.stderr.strip()}")
            time.sleep(0.5)
        yield {"conf": str(conf), "host": host, "dir": d}
    finally:
        for name in ("slurmd", "slurmctld", "munged"):  # stop the daemons this fixture started, by pid file
            pid_file = d / f"{name}.pid"
            if name in started and pid_file.exists():
                try:
                    os.kill(int(pid_file.read_text().strip()), signal.SIGTERM)
                except (ProcessLookupError, ValueError):
                    pass


def test_collect_through_real_srun(slurm, monkeypatch, capsys):
    monkeypatch.setenv("SLURM_CONF", slurm["conf"])
    monkeypatch.setenv("ADVISOR_FAKE_GPU", "2x4090")
    advisor = f"{sys.executable} -m advisor"
    assert main(["fleet", "collect", "--slurm", "--partition", "debug", "--advisor", advisor]) == 0
    assert "collected 1 machine(s) with 2 GPU(s)" in capsys.readouterr().out
    fleet = fl.load_fleet()
    assert [m.hostname for m in fleet.machines] == [socket.gethostname()]
    assert fl.fleet_accelerators(fleet) == {"rtx-4090": 2}
    assert main(["fleet", "collect", "--slurm", "--advisor", advisor]) == 0  # again: the same machine id
    assert len(fl.load_fleet().machines) == 1
