"""Per-GPU rates are GPUs of one machine, as many as the provider rents in one (issue 28): tensor parallelism
never spans GPUs rented separately, and a job larger than the machine says why, naming the limit's source."""

from __future__ import annotations

import json

from advisor.catalog.per_gpu import HGX_GPUS, per_gpu_machine
from advisor.cli import main


def _plan(capsys, *flags) -> dict:
    assert main(["plan", *flags, "--json", "--all"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_limit_comes_from_the_providers_largest_instance():
    n, source = per_gpu_machine("RunPod")
    assert n == 8 and "runpod:8x-a100-80gb" in source  # RunPod's largest rows: 8x_A100-80GB(-SXM)_SECURE
    assert per_gpu_machine("CoreWeave") == (HGX_GPUS, per_gpu_machine("CoreWeave")[1])
    assert "assumption" in per_gpu_machine("CoreWeave")[1]


def test_runpod_per_gpu_options_stay_in_one_machine(capsys):
    doc = _plan(capsys, "--model", "llama-3.1-70b", "--workload", "lora")
    runpod = [o for o in doc["options"] if o["id"].startswith("cloud:runpod:") and "per-gpu" in o["id"] and o["fits"]]
    assert runpod
    for o in runpod:
        assert o["devices"] <= 8 and o["nodes"] == 1 and o["parallelism"]["tp"] <= o["devices"]


def test_a_job_larger_than_the_machine_is_not_ranked_and_says_the_limit(capsys):
    doc = _plan(capsys, "--model", "llama-3.1-405b", "--workload", "finetune", "--accelerator", "a100-80gb-pcie")
    reasons = {x["id"]: x["reason"] for x in doc["infeasible"]}
    row = reasons["cloud:runpod:a100-pcie-80gb-community-cloud-per-gpu"]
    assert "machines of 8 devices" in row and "RunPod rents at most 8 GPUs in one machine" in row
    assert "runpod:8x-a100-80gb" in row
