"""Launch specs: sbatch parses with bash -n, SkyPilot YAML with a YAML parser, both carry the plan's resources."""

from __future__ import annotations

import shutil
import subprocess

import pytest
import yaml

from advisor.report.launch import LaunchError, launch_resources, render_launch, slurm_time, time_limit_s


def bash_n(tmp_path, text: str) -> None:
    if shutil.which("bash") is None:
        pytest.skip("no bash")
    path = tmp_path / "spec.sh"
    path.write_text(text)
    p = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr


def test_time_limit_has_a_margin_and_slurm_format():
    assert time_limit_s(30.5) == int(((30.5 * 1.2 + 0.5) * 3600 + 899) // 900 * 900)
    assert time_limit_s(0.01) == 2700  # 0.512 h -> 45 min
    assert slurm_time(3600) == "01:00:00" and slurm_time(2 * 86400 + 3661) == "2-01:01:01"


def test_sbatch_parses_and_carries_the_resources(plan_doc, tmp_path):
    text = render_launch("sbatch", plan_doc, "cloud:aws:p5.48xlarge")
    bash_n(tmp_path, text)
    limit = slurm_time(time_limit_s(30.5))
    for line in ("#SBATCH --nodes=2", "#SBATCH --gpus-per-node=8", f"#SBATCH --time={limit}",
                 "#SBATCH --ntasks-per-node=1"):
        assert line in text.splitlines()
    assert "--nproc-per-node=8" in text and "train.py" in text and "ADVISOR_TP=8" in text
    assert text.startswith("#!/bin/bash\n#SBATCH")  # directives before any command, or Slurm ignores them


def test_skypilot_yaml_parses_and_carries_the_resources(plan_doc):
    spec = yaml.safe_load(render_launch("skypilot", plan_doc, "cloud:aws:p5.48xlarge"))
    assert spec["resources"]["accelerators"] == "H100:8"
    assert spec["resources"]["cloud"] == "aws" and spec["resources"]["instance_type"] == "p5.48xlarge"
    assert spec["resources"]["use_spot"] is False
    assert spec["num_nodes"] == 2
    assert spec["envs"]["ADVISOR_TIME_LIMIT_S"] == str(time_limit_s(30.5))
    assert "torchrun" in spec["run"] and "$SKYPILOT_NODE_RANK" in spec["run"]


def test_spot_per_gpu_offer_is_sixteen_single_gpu_nodes(plan_doc, tmp_path):
    spec = yaml.safe_load(render_launch("skypilot", plan_doc, "cloud:lambda:gpu-1x-h100:spot"))
    assert spec["resources"]["accelerators"] == "H100:1" and spec["num_nodes"] == 16
    assert spec["resources"]["use_spot"] is True and spec["resources"]["cloud"] == "lambda"
    assert "instance_type" not in spec["resources"]
    bash_n(tmp_path, render_launch("sbatch", plan_doc, "cloud:lambda:gpu-1x-h100:spot"))


@pytest.mark.parametrize("option, nodes, per_node", [("cloud:aws:p5.48xlarge", 2, 8), ("onprem:h100-sxm", 2, 8)])
def test_torchrun_script_parses(plan_doc, tmp_path, option, nodes, per_node):
    text = render_launch("torchrun", plan_doc, option, script="pretrain.py", script_args=["--config", "a b.yaml"])
    bash_n(tmp_path, text)
    assert f"--nnodes={nodes} --nproc-per-node={per_node}" in text
    assert "pretrain.py --config 'a b.yaml'" in text


def test_single_node_torchrun_is_standalone(plan_doc, tmp_path):
    plan_doc["options"][2]["devices"] = 4
    text = render_launch("torchrun", plan_doc, "onprem:h100-sxm")
    bash_n(tmp_path, text)
    assert "torchrun --standalone --nnodes=1 --nproc-per-node=4" in text


def test_home_rigs_follow_the_rig_size_assumption(plan_doc):
    plan_doc["options"][3]["fits"] = True
    r = launch_resources(plan_doc, "home:rtx-4090")
    assert (r.nodes, r.gpus_per_node) == (4, 4)
    plan_doc["assumptions"]["home_gpus_per_rig"] = {"value": 2, "unit": "GPUs", "origin": "x"}
    assert launch_resources(plan_doc, "home:rtx-4090").nodes == 8
    assert launch_resources(plan_doc, "home:rtx-4090", gpus_per_node=16).nodes == 1


def test_default_option_is_the_cheapest_that_fits_of_the_suited_kind(plan_doc):
    assert "option onprem:h100-sxm" in render_launch("sbatch", plan_doc)  # Slurm: owned clusters first
    # the plan's own ranking: on-demand prices rank the cloud (spot after, unless the assumptions say spot)
    first_cloud = min((o for o in plan_doc["options"] if o["kind"] == "cloud" and o["fits"]
                       and o.get("feasible", True) and not o.get("reference") and not o.get("spot")),
                      key=lambda o: o["cost_usd"])["id"]
    assert f"option {first_cloud}\n" in render_launch("skypilot", plan_doc)  # the plan's first cloud option
    assert "option onprem:h100-sxm" in render_launch("torchrun", plan_doc)  # cheapest of all
    plan_doc["options"] = [o for o in plan_doc["options"] if o["kind"] == "cloud"]
    assert f"option {first_cloud}\n" in render_launch("sbatch", plan_doc)


@pytest.mark.parametrize("kind, option, message", [
    ("sbatch", "cloud:nope", "no option"),
    ("sbatch", "home:rtx-4090", "does not fit"),
    ("docker", "onprem:h100-sxm", "unknown 'docker'"),
])
def test_bad_requests_are_refused(plan_doc, kind, option, message):
    with pytest.raises(LaunchError, match=message):
        render_launch(kind, plan_doc, option)


def test_launch_specs_for_a_real_plan(tmp_path):
    from advisor.cli import build_parser
    from advisor.commands.plan import build_plan, request_values

    args = build_parser().parse_args(["plan", "--model", "llama-3-8b", "--workload", "pretrain", "--tokens", "1e9",
                                      "--gpus", "16", "--accelerator", "h100-sxm"])
    doc = build_plan(request_values(args)).to_json()
    option = next(o for o in doc["options"] if o["fits"] and o.get("instances") == 2)
    spec = yaml.safe_load(render_launch("skypilot", doc, option["id"]))
    assert spec["num_nodes"] == 2 and spec["resources"]["accelerators"] == "H100:8"
    bash_n(tmp_path, render_launch("sbatch", doc, option["id"]))
