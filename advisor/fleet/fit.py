"""Where does this job fit now: the fleet's nodes ranked by the GPUs they have free for it, the choice, and
the launch lines for that choice.

The job's need is the planner's answer (``advisor plan``: memory per device for its layout, and the number of
devices); a GPU is usable when its free memory now (total less used, as its exporter reports) holds that
need. Nodes that are not up are left out (their figures are old). The choice is the best node that has
enough usable GPUs (the most free memory first, so the job lands where it disturbs least); when no node has
enough, the job spans nodes, the same number of GPUs on each (what ``torchrun --nproc-per-node`` and Slurm's
``--gres=gpu:N`` ask), fewest nodes first.

Pure: no I/O. Launch lines are argument lists joined with ``shlex.join``; node names that are not RFC 1123
host names get no launch line.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass

from advisor.fleet.model import FleetView, Node, summarise
from advisor.store.fleet_collect import HOSTNAME as _HOST  # RFC 1123, as fleet collect checks them

RDZV_PORT = 29500  # torchrun's default rendezvous port


@dataclass(frozen=True)
class NodeFit:
    """One node's answer for the job: the GPUs that can take it now (most free memory first)."""

    node: str
    host: str  # the name to launch on: the exporter's Hostname, else the host part of its address
    usable_gpus: tuple[int, ...]
    free_bytes: tuple[int, ...]  # free memory of each usable GPU, same order
    node_free_bytes: int  # free memory of the whole node (all GPUs that report it)
    gpus: int

    def fits(self, needed: int) -> bool:
        return len(self.usable_gpus) >= needed


@dataclass(frozen=True)
class FleetFit:
    """The ranking and the choice (``placement``: (host, GPU indices) per node used; empty: nowhere now)."""

    need_bytes_per_gpu: int
    gpus_needed: int
    ranked: tuple[NodeFit, ...]
    placement: tuple[tuple[str, tuple[int, ...]], ...]
    left_out: tuple[str, ...]  # nodes not up


def _host(node: Node) -> str:
    if node.reading and node.reading.hostname:
        return node.reading.hostname
    return node.name.rsplit(":", 1)[0].strip("[]")


def node_fit(node: Node, need_bytes: int) -> NodeFit:
    usable = sorted(((g.mem_free_bytes, g.index) for g in node.gpus
                     if g.mem_free_bytes is not None and g.mem_free_bytes >= need_bytes), key=lambda t: (-t[0], t[1]))
    s = summarise(node)
    return NodeFit(node.name, _host(node), tuple(i for _, i in usable), tuple(f for f, _ in usable),
                   s.mem_free_bytes or 0, s.gpus)


def fit_job(view: FleetView, need_bytes_per_gpu: int, gpus_needed: int) -> FleetFit:
    """Rank the nodes that are up for a job needing ``gpus_needed`` GPUs with ``need_bytes_per_gpu`` free each."""
    if gpus_needed < 1 or need_bytes_per_gpu < 0:
        raise ValueError("a job needs at least one GPU and a non-negative memory")
    up = [n for n in view.nodes if not n.greyed]
    fits = [node_fit(n, need_bytes_per_gpu) for n in up]
    ranked = sorted(fits, key=lambda f: (not f.fits(gpus_needed), -len(f.usable_gpus),
                                          -sum(f.free_bytes), -f.node_free_bytes, f.node))
    placement: tuple = ()
    if ranked and ranked[0].fits(gpus_needed):
        best = ranked[0]
        placement = ((best.host, tuple(sorted(best.usable_gpus[:gpus_needed]))),)
    else:
        by_usable = sorted((f for f in fits if f.usable_gpus), key=lambda f: (-len(f.usable_gpus), f.node))
        for k in range(2, len(by_usable) + 1):
            per = math.ceil(gpus_needed / k)
            if len(by_usable[k - 1].usable_gpus) >= per:
                placement = tuple((f.host, tuple(sorted(f.usable_gpus[:per]))) for f in by_usable[:k])
                break
    return FleetFit(need_bytes_per_gpu, gpus_needed, tuple(ranked), placement,
                    tuple(n.name for n in view.nodes if n.greyed))


def launch_lines(fit: FleetFit, workload: str, model: str, script: str = "train.py") -> list[str]:
    """The commands that start the job where ``fit`` placed it: the per-node line (``CUDA_VISIBLE_DEVICES``
    and ``torchrun`` or ``vllm serve``) and the Slurm one (``sbatch --nodelist --gres``). Empty when the job
    fits nowhere now or a host name is not a valid one."""
    if not fit.placement or not all(_HOST.fullmatch(h) for h, _ in fit.placement):
        return []
    hosts = [h for h, _ in fit.placement]
    per = len(fit.placement[0][1])
    nodes = len(fit.placement)
    if workload == "inference":
        cmd = ["vllm", "serve", model, "--tensor-parallel-size", str(per)]
        if nodes > 1:
            cmd += ["--pipeline-parallel-size", str(nodes)]  # across nodes: a Ray cluster over these hosts
    elif nodes == 1:
        cmd = ["torchrun", "--standalone", f"--nproc-per-node={per}", script]
    else:
        cmd = ["torchrun", f"--nnodes={nodes}", f"--nproc-per-node={per}", "--rdzv-backend=c10d",
               f"--rdzv-endpoint={hosts[0]}:{RDZV_PORT}", "--rdzv-id=advisor-job", script]
    lines = [f"# on {h}: CUDA_VISIBLE_DEVICES={','.join(map(str, gpus))} {shlex.join(cmd)}" for h, gpus in fit.placement]
    sbatch = ["sbatch", f"--nodes={nodes}", f"--nodelist={','.join(hosts)}", f"--gres=gpu:{per}",
              "--ntasks-per-node=1", f"--wrap={shlex.join(['srun', *cmd]) if nodes > 1 else shlex.join(cmd)}"]
    lines.append(shlex.join(sbatch))
    return lines


def fleet_now(view, doc: dict) -> dict:
    """Place the job of one ``advisor.plan/1`` document (its memory per device and device count) on ``view``:
    the ``"fleet_now"`` part of ``advisor plan --fleet --json`` and what the Fleet page shows."""
    memory = doc.get("memory") or {}
    need = int((memory.get("per_device_bytes") or {}).get("total") or 0)
    devices = int(memory.get("devices") or 1)
    fit = fit_job(view, need, devices)
    model = (doc.get("model") or {}).get("name") or "MODEL"
    return {
        "source": view.source, "simulated": view.simulated, "need_bytes_per_gpu": need, "gpus_needed": devices,
        "ranked": [{"node": f.node, "host": f.host, "gpus": f.gpus, "usable_gpus": list(f.usable_gpus),
                    "usable_free_bytes": list(f.free_bytes), "node_free_bytes": f.node_free_bytes,
                    "fits": f.fits(devices)} for f in fit.ranked],
        "placement": [{"host": h, "gpus": list(g)} for h, g in fit.placement],
        "left_out": list(fit.left_out),
        "launch": launch_lines(fit, doc.get("workload") or "training", model),
    }
