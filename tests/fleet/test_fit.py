"""Where does this job fit now: nodes ranked by the GPUs free for the job, one node or several, the launch line."""

from __future__ import annotations

import json

import pytest

from advisor.cli import main
from advisor.fleet.fit import fit_job, launch_lines
from advisor.fleet.model import DOWN, UP, FleetView, Node, NodeGpu, NodeReading

GB = 10**9


def _node(name, free_gb, state=UP, total_gb=80):
    gpus = tuple(NodeGpu(index=i, mem_total_bytes=total_gb * GB, mem_used_bytes=(total_gb - f) * GB)
                 for i, f in enumerate(free_gb))
    return Node(name, f"http://{name}:9400/metrics", state, 0.5, NodeReading(name, gpus))


def test_best_node_is_the_one_with_enough_gpus_and_most_free_memory():
    view = FleetView((_node("n1", [70, 10, 70, 70]), _node("n2", [75, 75, 5, 75]), _node("n3", [79, 79, 79, 79], DOWN),
                      _node("n4", [40, 40])), "scrape")
    fit = fit_job(view, 60 * GB, 3)
    assert [f.node for f in fit.ranked] == ["n2", "n1", "n4"]  # both fit with 3 usable; n2 has more free on them
    assert fit.ranked[0].usable_gpus == (0, 1, 3) and fit.ranked[1].usable_gpus == (0, 2, 3)
    assert fit.placement == (("n2", (0, 1, 3)),)
    assert fit.left_out == ("n3",)  # down: its figures are old
    assert launch_lines(fit, "finetune", "llama-3-8b") == [
        "# on n2: CUDA_VISIBLE_DEVICES=0,1,3 torchrun --standalone --nproc-per-node=3 train.py",
        "sbatch --nodes=1 --nodelist=n2 --gres=gpu:3 --ntasks-per-node=1 "
        "'--wrap=torchrun --standalone --nproc-per-node=3 train.py'"]


def test_a_job_too_big_for_one_node_spans_nodes_with_equal_gpus_each():
    view = FleetView((_node("a", [70, 70, 70, 10]), _node("b", [70, 70, 70, 70]), _node("c", [70, 0, 0, 0])), "scrape")
    fit = fit_job(view, 60 * GB, 6)  # 6 GPUs: no node has 6; b (4 usable) and a (3 usable) give 3 + 3
    assert fit.placement == (("b", (0, 1, 2)), ("a", (0, 1, 2)))
    lines = launch_lines(fit, "pretrain", "m")
    assert lines[0] == ("# on b: CUDA_VISIBLE_DEVICES=0,1,2 torchrun --nnodes=2 --nproc-per-node=3 --rdzv-backend=c10d "
                        "--rdzv-endpoint=b:29500 --rdzv-id=advisor-job train.py")
    assert lines[-1].startswith("sbatch --nodes=2 --nodelist=b,a --gres=gpu:3 --ntasks-per-node=1 '--wrap=srun torchrun")
    assert launch_lines(fit, "inference", "m")[0] == (
        "# on b: CUDA_VISIBLE_DEVICES=0,1,2 vllm serve m --tensor-parallel-size 3 --pipeline-parallel-size 2")


def test_nowhere_now_and_hostile_names():
    view = FleetView((_node("a", [10, 10]),), "scrape")
    fit = fit_job(view, 60 * GB, 1)
    assert fit.placement == () and launch_lines(fit, "inference", "m") == []
    bad = FleetView((_node("a;rm -rf /", [70]),), "scrape")
    fit = fit_job(bad, 60 * GB, 1)
    assert fit.placement and launch_lines(fit, "inference", "m") == []  # not a host name: no line to paste


def test_plan_fleet_on_a_simulated_live_fleet(monkeypatch, capsys):
    """``advisor plan --fleet --scrape ...`` end to end, the fleet's answers from simulated nodes (8xh100-sxm has
    8 x 80 GB, each about 7/8 free; 2x4090 about 13 GB free of 24 GB each)."""
    from advisor.commands import fleet_watch
    from advisor.fleet.simulated import simulated_fleet
    from advisor.fleet.sources import SimulatedSource

    nodes = simulated_fleet({"gpu-a": "2x4090", "gpu-b": "8xh100-sxm"})
    monkeypatch.setattr(fleet_watch, "source_from_args", lambda args: SimulatedSource(nodes, dead=["gpu-c"]))
    assert main(["plan", "--model", "llama-3-8b", "--workload", "inference", "--json", "--fleet",
                 "--scrape", "http://gpu-a:9400"]) == 0
    doc = json.loads(capsys.readouterr().out)
    part = doc["fleet_now"]
    assert part["gpus_needed"] == doc["memory"]["devices"] == 1
    assert part["need_bytes_per_gpu"] == doc["memory"]["per_device_bytes"]["total"]
    assert [r["node"] for r in part["ranked"]] == ["gpu-b", "gpu-a"] and part["left_out"] == ["gpu-c"]
    assert part["placement"][0]["host"] == "gpu-b"
    assert part["launch"][0].startswith("# on gpu-b: CUDA_VISIBLE_DEVICES=")
    assert "vllm serve llama-3-8b --tensor-parallel-size 1" in part["launch"][0]


def test_live_source_needs_fleet(capsys):
    assert main(["plan", "--model", "llama-3-8b", "--scrape", "http://a:9400"]) == 2
    assert "only with --fleet" in capsys.readouterr().err


@pytest.mark.parametrize("need, n", [(-1, 1), (1, 0)])
def test_bad_needs(need, n):
    with pytest.raises(ValueError):
        fit_job(FleetView((), "x"), need, n)
