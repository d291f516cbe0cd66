"""Launch specs cannot be made to run commands: hostile ids are refused where they enter, and whatever
reaches a torchrun script, an sbatch file or a SkyPilot task is quoted (shell) or emitted (YAML)."""

from __future__ import annotations

import copy
import os
import shlex
import shutil
import stat
import subprocess

import pytest
import yaml

from advisor.report.launch import render_launch
from tests.reliability.conftest import one_line_error
from tests.report.conftest import PLAN

HOSTILE = [
    "x\ntouch pwned #",
    "x\rtouch pwned #",
    "x\u2028touch pwned",
    "$(touch pwned)",
    "`touch pwned`",
    "'; touch pwned; '",
    '"; touch pwned; "',
    "x\\\ntouch pwned",
    "x\n  run: touch pwned\n#",
]

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash to run the scripts")


def _hostile_doc(value: str, field: str) -> tuple[dict, str]:
    doc = copy.deepcopy(PLAN)
    option = doc["options"][0]
    if field == "option":
        option["id"] = value
    elif field == "model":
        doc["model"]["name"] = value
    elif field == "accelerator":
        option["accelerator"] = value
    elif field == "instance":
        option["instance"] = value
        option["provider"] = value
    elif field == "precision":
        doc["precision"] = value
    return doc, option["id"]


def _stub_bin(tmp_path):
    """Fake ``torchrun``, ``timeout``, ``srun``, ``scontrol`` that only log their arguments."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name in ("torchrun", "srun", "scontrol", "timeout"):
        stub = bindir / name
        stub.write_text('#!/bin/sh\necho "$0 $*" >> "$STUB_LOG"\n')
        stub.chmod(stub.stat().st_mode | stat.S_IXUSR)
    return bindir


def _run_bash(script_text: str, tmp_path, env_extra=None):
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    script = work / "job.sh"
    script.write_text(script_text)
    bindir = _stub_bin(tmp_path) if not (tmp_path / "bin").exists() else tmp_path / "bin"
    env = {"PATH": f"{bindir}:{os.environ['PATH']}", "STUB_LOG": str(tmp_path / "stub.log"), "HOME": str(work),
           "MASTER_ADDR": "127.0.0.1", "NODE_RANK": "0", "SLURM_JOB_NODELIST": "n1", "SLURM_NNODES": "2",
           "SLURM_JOB_ID": "1", **(env_extra or {})}
    proc = subprocess.run(["bash", str(script)], cwd=work, env=env, capture_output=True, text=True, timeout=30)
    return proc, work


@pytest.mark.parametrize("field", ["option", "model", "accelerator", "instance", "precision"])
@pytest.mark.parametrize("kind", ["torchrun", "sbatch"])
def test_hostile_values_never_run_in_shell_scripts(tmp_path, kind, field):
    for i, value in enumerate(HOSTILE):
        doc, option_id = _hostile_doc(value, field)
        text = render_launch(kind, doc, option_id)
        case = tmp_path / f"case{i}"
        case.mkdir()
        proc, work = _run_bash(text, case)
        assert proc.returncode == 0, (value, proc.stderr, text)
        assert not (work / "pwned").exists(), f"{kind} ran an injected command from {field}={value!r}:\n{text}"
        assert "torchrun" in (case / "stub.log").read_text()  # the script did run to its torchrun line
        if field == "option":  # the value reaches the job intact, as data
            assert f"\nexport ADVISOR_OPTION={shlex.quote(value)}\n" in text


@pytest.mark.parametrize("field", ["option", "model", "accelerator", "instance", "precision"])
def test_hostile_values_stay_data_in_the_skypilot_task(tmp_path, field):
    for i, value in enumerate(HOSTILE):
        doc, option_id = _hostile_doc(value, field)
        text = render_launch("skypilot", doc, option_id)
        task = yaml.safe_load(text)
        assert set(task) == {"name", "resources", "num_nodes", "envs", "setup", "run"}, text
        assert task["setup"] == "pip install torch\n"
        assert "pwned" not in task["run"] and "pwned" not in task["setup"]
        if field == "option":
            assert task["envs"]["ADVISOR_OPTION"] == value
        # the run block is what SkyPilot hands to bash, with the envs exported: nothing of the value runs
        case = tmp_path / f"case{i}"
        case.mkdir()
        envs = {k: str(v) for k, v in task["envs"].items()}
        proc, work = _run_bash(task["run"], case, {**envs, "SKYPILOT_NODE_IPS": "10.0.0.1", "SKYPILOT_NUM_NODES": "1",
                                                    "SKYPILOT_NUM_GPUS_PER_NODE": "8", "SKYPILOT_NODE_RANK": "0"})
        assert proc.returncode == 0, proc.stderr
        assert not (work / "pwned").exists()


def test_hostile_offer_id_in_a_price_list_is_refused_at_import(run_cli, tmp_path, advisor_home):
    csv_file = tmp_path / "prices.csv"
    csv_file.write_text('id,provider,instance,accelerator_id,accelerator_count,on_demand_usd_per_hour\n'
                        '"x\ntouch pwned #",Evil,tiny,h100-sxm,1,0.01\n')
    line = one_line_error(run_cli("catalog", "import", csv_file, "--apply"))
    assert "is not a valid id" in line and "row 2" in line
    assert not (advisor_home / "config").exists() or not any((advisor_home / "config").glob("catalog*.toml"))


def test_hostile_ids_in_the_user_catalog_are_skipped_with_a_warning(run_cli, tmp_path):
    from advisor import paths

    user = paths.user_catalog_file()
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text('[cloud_offers."evil:x\\ntouch pwned #"]\nprovider = "Evil"\ninstance = "x"\n'
                    'accelerator_id = "h100-sxm"\naccelerator_count = 1\non_demand_usd_per_hour = 0.01\n'
                    '[models."m\\n$(touch pwned)"]\nlayers = 2\nhidden = 64\nheads = 2\nvocab = 100\nffn = 128\n')
    proc = run_cli("plan", "--model", "llama-3-8b", "--workload", "lora", "--tokens", "1e6", "--launch", "torchrun")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("is not a valid id") == 2, proc.stderr
    assert "pwned" not in proc.stdout


def test_hostile_ids_in_a_scenario_are_refused(run_cli, tmp_path):
    scen = tmp_path / "s.toml"
    scen.write_text('schema = "advisor.scenario/1"\n[plan]\nmodel = "llama-3-8b"\nworkload = "lora"\n'
                    'accelerator = ["h100-sxm\\ntouch pwned #"]\n')
    line = one_line_error(run_cli("plan", scen))
    assert "plan.accelerator" in line and "is not a valid id" in line
