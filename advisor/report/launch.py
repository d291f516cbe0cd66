"""Launch specs for a chosen plan option: a torchrun command, a Slurm sbatch script, a SkyPilot task.

Each spec carries the planned resources: the accelerator, devices per node, nodes, and a time limit of
the estimated hours times ``margin`` plus ``extra_hours`` (start-up, checkpoints), rounded up to 15 minutes.
The training script is a placeholder (``train.py``) to replace with your own; the plan's parallelism and
precision are passed to it as ``ADVISOR_*`` environment variables.

Works on the ``advisor.plan/1`` JSON document (a dict), not on the planner's classes.

Nothing from the document is pasted into a script as text: shell words go through ``shlex.quote``,
comment lines keep printable characters only (a newline cannot end a comment and start a command),
and the SkyPilot task is written by a YAML emitter (``yaml.safe_dump``). Ids are also checked where
they enter the advisor (``advisor.catalog.records.check_id``); this is the second line of defence.
"""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass

from advisor.report.launch_text import (  # noqa: F401 (LaunchError: this module's API too)
    SKYPILOT_ACCELERATORS,
    SKYPILOT_CLOUDS,
    LaunchError,
    comment_text,
    path_word,
    yaml_text,
)

KINDS = ("torchrun", "sbatch", "skypilot")
MASTER_PORT = 29500

_INSTANCE_TYPE_CLOUDS = ("aws", "gcp", "azure")
_MAX_PER_NODE = {"owned": 8, "home": 4, "onprem": 8, "cloud": 8}


@dataclass(frozen=True)
class LaunchResources:
    """What a launch spec asks for."""

    option_id: str
    kind: str
    accelerator: str
    devices: int
    nodes: int
    gpus_per_node: int  # accelerators asked for per node: a cloud instance's real count
    hours: float
    time_limit_s: int
    spot: bool
    provider: str | None
    instance: str | None
    job_name: str
    env: tuple[tuple[str, str], ...]
    procs_per_node: int = 0  # training processes per node (the plan's devices); 0: gpus_per_node

    @property
    def procs(self) -> int:
        return self.procs_per_node or self.gpus_per_node


def _option(doc: dict, option_id: str) -> dict:
    if not isinstance(doc, dict) or doc.get("schema") != "advisor.plan/1":
        raise LaunchError("launch: the document is not an advisor.plan/1 plan")
    for o in doc.get("options") or []:
        if isinstance(o, dict) and o.get("id") == option_id:
            return o
    raise LaunchError(f"launch: option: no option {option_id!r} in the plan (see the ids in 'advisor plan --json')")


# Which kinds of option each spec suits best: Slurm runs on owned clusters, SkyPilot rents clouds.
_PREFERRED_KINDS = {"sbatch": ("onprem", "home"), "skypilot": ("cloud",), "torchrun": ()}


def best_option_id(doc: dict, kind: str | None = None) -> str:
    """Id of the first option that fits in the plan's ranking, among the option kinds that suit the spec ``kind``
    when there are any (sbatch: on-prem, then home; skypilot: cloud), else among all.

    Raises:
        LaunchError: when no option fits.
    """
    fitting = [o for o in doc.get("options") or [] if o.get("fits") and _can_run(o)
               and isinstance(o.get("cost_usd"), (int, float))]
    if not fitting:
        raise LaunchError("launch: option: no option fits in memory and can run as laid out, nothing to launch")
    # the plan's ranking (on the job's stack, on-demand before spot unless the assumptions say spot, then by
    # cost), so the launch line is for the option the plan's headline names
    spot = (doc.get("assumptions") or {}).get("spot")
    late_spot = not (spot.get("value") if isinstance(spot, dict) else spot)

    def rank(o: dict) -> tuple:
        return o.get("stack_ok") is False, bool(late_spot and o.get("spot")), o["cost_usd"]

    for preferred in _PREFERRED_KINDS.get(kind or "", ()):
        suited = [o for o in fitting if o.get("kind") == preferred]
        if suited:
            return min(suited, key=rank)["id"]
    return min(fitting, key=rank)["id"]


def _can_run(o: dict) -> bool:
    """An option that can run as laid out and is a real offer (not a price index's reference price)."""
    return o.get("feasible", True) is not False and not o.get("reference", False)


def _split_nodes(devices: int, max_per_node: int) -> tuple[int, int]:
    """(nodes, devices per node) with the same count on every node (torchrun needs that)."""
    nodes = max(1, math.ceil(devices / max_per_node))
    while devices % nodes:
        nodes += 1
    return nodes, devices // nodes


def time_limit_s(hours: float, margin: float = 1.2, extra_hours: float = 0.5) -> int:
    """Estimated hours x ``margin`` + ``extra_hours``, in seconds, rounded up to 15 minutes."""
    seconds = (hours * margin + extra_hours) * 3600
    return int(math.ceil(seconds / 900) * 900)


def slurm_time(seconds: int) -> str:
    """Slurm ``--time`` text: ``HH:MM:SS`` or ``D-HH:MM:SS``."""
    days, rest = divmod(int(seconds), 86400)
    h, rest = divmod(rest, 3600)
    m, s = divmod(rest, 60)
    return f"{days}-{h:02d}:{m:02d}:{s:02d}" if days else f"{h:02d}:{m:02d}:{s:02d}"


def launch_resources(doc: dict, option_id: str, *, gpus_per_node: int | None = None, margin: float = 1.2,
                     extra_hours: float = 0.5) -> LaunchResources:
    """The resources of one option of a plan document.

    Nodes: the option's cloud ``instances`` when given; else at most ``gpus_per_node`` devices per node
    (default: the rig size assumption for home options, 8 otherwise).
    Raises:
        LaunchError: unknown option, an option that does not fit, or no time estimate.
    """
    o = _option(doc, option_id)
    if not o.get("fits", False):
        raise LaunchError(f"launch: option {option_id!r} does not fit in memory; choose one that fits")
    if not _can_run(o):
        why = o.get("infeasible_reason") or "a reference price, not an instance to launch"
        raise LaunchError(f"launch: option {option_id!r} cannot run as planned: {' '.join(str(why).split())}")
    devices = o.get("devices")
    if isinstance(devices, bool) or not isinstance(devices, int) or devices < 1:
        raise LaunchError(f"launch: option {option_id!r}: field 'devices' must be a positive integer")
    hours = o.get("hours")
    if not isinstance(hours, (int, float)) or not math.isfinite(hours) or hours <= 0:
        raise LaunchError(f"launch: option {option_id!r}: field 'hours' has no finite estimate")
    kind = str(o.get("kind", "cloud"))
    instances = o.get("instances")
    planned_nodes, planned_per_node = o.get("nodes"), o.get("gpus_per_node")
    procs = 0
    if gpus_per_node is not None:
        nodes, per_node = _split_nodes(devices, gpus_per_node)
    elif (_whole(planned_nodes) and _whole(planned_per_node) and devices % planned_nodes == 0
          and devices <= planned_nodes * planned_per_node):  # the plan's nodes: an instance's real accelerator count
        nodes, per_node, procs = planned_nodes, planned_per_node, devices // planned_nodes
    elif isinstance(instances, int) and instances >= 1 and devices % instances == 0:
        nodes, per_node = instances, devices // instances
    else:
        cap = _MAX_PER_NODE.get(kind, 8)
        if kind == "home":
            rig = ((doc.get("assumptions") or {}).get("home_gpus_per_rig") or {})
            value = rig.get("value") if isinstance(rig, dict) else rig
            cap = int(value) if isinstance(value, (int, float)) and value >= 1 else cap
        nodes, per_node = _split_nodes(devices, cap)
    parts = option_id.split(":")
    provider = str(o.get("provider") or (parts[1] if kind == "cloud" and len(parts) > 2 else "")) or None
    spot = bool(o.get("spot", option_id.endswith(":spot")))
    model = (doc.get("model") or {}).get("name") or "model"
    job = re.sub(r"[^a-z0-9-]+", "-", f"advisor-{model}-{doc.get('workload', 'job')}".lower()).strip("-")[:60]
    par = o.get("parallelism") or (doc.get("memory") or {}).get("parallelism") or {}
    env = [("ADVISOR_OPTION", option_id), ("ADVISOR_MODEL", str(model)),
           ("ADVISOR_WORKLOAD", str(doc.get("workload", ""))), ("ADVISOR_PRECISION", str(doc.get("precision", "")))]
    for key in ("tp", "pp", "dp", "zero"):
        if par.get(key) is not None:
            env.append((f"ADVISOR_{key.upper()}", str(par[key])))
    for key in ("seq_len", "tokens"):
        if doc.get(key) is not None:
            value = doc[key]
            env.append((f"ADVISOR_{key.upper()}", str(int(value)) if float(value).is_integer() else str(value)))
    limit = time_limit_s(float(hours), margin, extra_hours)
    env.append(("ADVISOR_TIME_LIMIT_S", str(limit)))
    return LaunchResources(option_id=option_id, kind=kind, accelerator=str(o.get("accelerator", "")), devices=devices,
                           nodes=nodes, gpus_per_node=per_node, hours=float(hours), time_limit_s=limit, spot=spot,
                           provider=provider, instance=o.get("instance"), job_name=job or "advisor-job",
                           env=tuple(env), procs_per_node=procs if procs != per_node else 0)


def _whole(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 1


def _header(r: LaunchResources, doc: dict, comment: str = "#") -> list[str]:
    model = (doc.get("model") or {}).get("name") or "custom model"
    return [comment_text(line) for line in _header_lines(r, doc, model, comment)]


def _header_lines(r: LaunchResources, doc: dict, model: str, comment: str) -> list[str]:
    return [f"{comment} Generated by the Hardware Advisor for option {r.option_id}",
            f"{comment} {model}, {doc.get('workload')}, {doc.get('precision')}: {r.devices} x {r.accelerator} "
            f"on {r.nodes} node(s) of {r.gpus_per_node}"
            + (f" ({r.procs} used per node, as planned)" if r.procs != r.gpus_per_node else ""),
            f"{comment} estimated {r.hours:.2f} h; time limit {slurm_time(r.time_limit_s)} "
            "(estimate x 1.2 + 30 min, rounded up to 15 min)",
            f"{comment} replace train.py with your training script",
            f"{comment} advisor-resources: accelerator={r.accelerator} devices={r.devices} nodes={r.nodes} "
            f"gpus_per_node={r.gpus_per_node} time_limit_s={r.time_limit_s}"]


def _script(script: str, script_args) -> str:
    return " ".join(shlex.quote(a) for a in (path_word(script), *script_args))


def render_torchrun(doc: dict, option_id: str, *, script: str = "train.py", script_args=(), **kw) -> str:
    """A bash script running torchrun on one node, or on each node of a multi-node job."""
    r = launch_resources(doc, option_id, **kw)
    lines = ["#!/usr/bin/env bash", *_header(r, doc), "set -euo pipefail"]
    lines += [f"export {k}={shlex.quote(v)}" for k, v in r.env]
    if r.nodes == 1:
        lines.append(f"timeout {r.time_limit_s}s torchrun --standalone --nnodes=1 --nproc-per-node={r.procs} "
                     f"{_script(script, script_args)}")
    else:
        lines += [f"# run this on each of the {r.nodes} nodes with NODE_RANK=0..{r.nodes - 1} and MASTER_ADDR "
                  "set to node 0's address",
                  ': "${MASTER_ADDR:?set MASTER_ADDR to the address of node 0}"',
                  f': "${{NODE_RANK:?set NODE_RANK to the rank of this node, 0..{r.nodes - 1}}}"',
                  f"timeout {r.time_limit_s}s torchrun --nnodes={r.nodes} --nproc-per-node={r.procs} "
                  f'--node-rank="$NODE_RANK" --master-addr="$MASTER_ADDR" --master-port={MASTER_PORT} '
                  f"{_script(script, script_args)}"]
    return "\n".join(lines) + "\n"


def render_sbatch(doc: dict, option_id: str, *, script: str = "train.py", script_args=(), **kw) -> str:
    """A Slurm batch script: one task per node, each starting torchrun with the node's GPUs."""
    r = launch_resources(doc, option_id, **kw)
    lines = ["#!/bin/bash",
             f"#SBATCH --job-name={shlex.quote(r.job_name)}",
             f"#SBATCH --nodes={r.nodes}",
             "#SBATCH --ntasks-per-node=1",
             f"#SBATCH --gpus-per-node={r.gpus_per_node}",
             f"#SBATCH --time={slurm_time(r.time_limit_s)}",
             "#SBATCH --output=%x-%j.out",
             *_header(r, doc),
             "set -euo pipefail"]
    lines += [f"export {k}={shlex.quote(v)}" for k, v in r.env]
    lines += ['head_node=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)',
              f"srun torchrun --nnodes=\"$SLURM_NNODES\" --nproc-per-node={r.procs} "
              f'--rdzv-id="$SLURM_JOB_ID" --rdzv-backend=c10d --rdzv-endpoint="$head_node:{MASTER_PORT}" '
              f"{_script(script, script_args)}"]
    return "\n".join(lines) + "\n"


def render_skypilot(doc: dict, option_id: str, *, script: str = "train.py", script_args=(),
                    setup: str = "pip install torch", **kw) -> str:
    """A SkyPilot task YAML (``sky launch task.yaml``, or ``sky jobs launch`` for spot)."""
    r = launch_resources(doc, option_id, **kw)
    procs = '"$SKYPILOT_NUM_GPUS_PER_NODE"' if r.procs == r.gpus_per_node else str(r.procs)
    accel = SKYPILOT_ACCELERATORS.get(r.accelerator, r.accelerator.upper())
    resources: dict = {"accelerators": f"{accel}:{r.gpus_per_node}"}
    cloud = SKYPILOT_CLOUDS.get((r.provider or "").lower()) if r.kind == "cloud" else None
    if cloud:
        resources["cloud"] = cloud
        if cloud in _INSTANCE_TYPE_CLOUDS and r.instance and re.fullmatch(r"[A-Za-z0-9._-]+", str(r.instance)):
            resources["instance_type"] = str(r.instance)
    resources["use_spot"] = bool(r.spot)
    run = "\n".join([
        "set -euo pipefail",
        'MASTER_ADDR=$(echo "$SKYPILOT_NODE_IPS" | head -n 1)',
        f'timeout "$ADVISOR_TIME_LIMIT_S"s torchrun --nnodes="$SKYPILOT_NUM_NODES" '
        f'--nproc-per-node={procs} --node-rank="$SKYPILOT_NODE_RANK" '
        f'--master-addr="$MASTER_ADDR" --master-port={MASTER_PORT} {_script(script, script_args)}',
    ]) + "\n"
    task = {"name": r.job_name, "resources": resources, "num_nodes": r.nodes, "envs": dict(r.env),
            "setup": str(setup) + "\n", "run": run}
    return "\n".join(_header(r, doc)) + "\n" + yaml_text(task)


def render_launch(kind: str, doc: dict, option_id: str | None = None, **kw) -> str:
    """A launch spec for one option of a plan document.

    Args:
        kind: ``torchrun``, ``sbatch`` or ``skypilot``; for an ``advisor.serve/1`` document ``vllm``,
            ``llama-server``, ``sglang`` or ``skypilot`` (``report.serve_launch``).
        doc: the ``advisor.plan/1`` (or ``advisor.serve/1``) document.
        option_id: the option to launch; when None, the cheapest that fits of the kind the spec suits
            (see ``best_option_id``).
        kw: ``script``, ``script_args``, ``gpus_per_node``, ``margin``, ``extra_hours`` (``setup`` for skypilot).
    Raises:
        LaunchError: unknown kind or option, an option that does not fit, no time estimate.
    """
    if isinstance(doc, dict) and doc.get("schema") == "advisor.serve/1":  # a serving plan: the server's line
        from advisor.report.serve_launch import render_serve_launch

        return render_serve_launch(kind, doc, option_id)
    renderers = {"torchrun": render_torchrun, "sbatch": render_sbatch, "skypilot": render_skypilot}
    if kind not in renderers:
        raise LaunchError(f"launch: kind: unknown {kind!r} (torchrun, sbatch, skypilot)")
    return renderers[kind](doc, option_id or best_option_id(doc, kind), **kw)
