"""The live fleet's records and its ``advisor.fleet/1`` document (``advisor fleet watch --once --json``).

Figures are in SI units (bytes, W, °C, J, s); a figure a node does not report is None (JSON null).
A node's ``state``: "up" (answered within the staleness bound), "stale" (its last answer is older than
``STALE_S``), "down" (its last attempt failed or did not answer within a refresh), "waiting" (never answered
yet). The views grey every node that is not "up".
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

SCHEMA = "advisor.fleet/1"
STALE_S = 5.0  # the bound: a node's figures are at most this old, or the node is marked stale
UP, STALE, DOWN, WAITING = "up", "stale", "down", "waiting"


@dataclass(frozen=True)
class NodeGpu:
    """One GPU of a node, as its exporter reported it."""

    index: int
    name: str | None = None
    uuid: str | None = None
    vendor: str | None = None
    util_pct: float | None = None
    mem_used_bytes: int | None = None
    mem_total_bytes: int | None = None
    power_w: float | None = None
    temp_c: float | None = None
    energy_j: float | None = None

    @property
    def mem_free_bytes(self) -> int | None:
        if self.mem_used_bytes is None or self.mem_total_bytes is None:
            return None
        return max(0, self.mem_total_bytes - self.mem_used_bytes)


@dataclass(frozen=True)
class NodeProcess:
    """One process's books on one GPU (``advisor_process_*`` series; absent from a DCGM exporter)."""

    pid: int
    gpu: int | None
    user: str | None = None
    job: str | None = None
    name: str | None = None
    gpu_mem_bytes: int | None = None
    gpu_seconds: float | None = None
    energy_j: float | None = None
    cost_usd: float | None = None
    peak_gpu_mem_bytes: int | None = None
    running: bool = True


@dataclass(frozen=True)
class NodeReading:
    """What one node reported in one answer."""

    hostname: str | None
    gpus: tuple[NodeGpu, ...]
    processes: tuple[NodeProcess, ...] = ()


@dataclass(frozen=True)
class Node:
    """One node as the watcher sees it now: its last reading, how old it is and whether it answers."""

    name: str
    url: str
    state: str
    age_s: float | None
    reading: NodeReading | None
    error: str | None = None

    @property
    def gpus(self) -> tuple[NodeGpu, ...]:
        return self.reading.gpus if self.reading else ()

    @property
    def processes(self) -> tuple[NodeProcess, ...]:
        return self.reading.processes if self.reading else ()

    @property
    def greyed(self) -> bool:
        return self.state != UP


@dataclass(frozen=True)
class FleetView:
    """Every node, in the order of the source (targets as given; Prometheus instances sorted)."""

    nodes: tuple[Node, ...]
    source: str
    simulated: bool = False


def fleet_document(view: FleetView) -> dict:
    """The ``advisor.fleet/1`` document of a view."""
    return {
        "schema": SCHEMA, "source": view.source, "simulated": view.simulated,
        "nodes": [{"name": n.name, "url": n.url, "state": n.state,
                   "age_s": None if n.age_s is None else round(n.age_s, 3),
                   "hostname": n.reading.hostname if n.reading else None, "error": n.error,
                   "gpus": [{**asdict(g), "mem_free_bytes": g.mem_free_bytes} for g in n.gpus],
                   "processes": [asdict(p) for p in n.processes]} for n in view.nodes],
    }


@dataclass(frozen=True)
class NodeSummary:
    """A node's totals as every view shows them (terminal, app, the fit's ranking)."""

    gpus: int
    mem_free_bytes: int | None  # the sum over GPUs that report memory; None when none does
    mem_total_bytes: int | None
    mean_util_pct: float | None
    power_w: float | None
    processes: int


def summarise(node: Node) -> NodeSummary:
    """Totals of a node's GPUs and running processes."""
    gpus = node.gpus

    def total(values):
        values = [v for v in values if v is not None]
        return sum(values) if values else None

    utils = [g.util_pct for g in gpus if g.util_pct is not None]
    return NodeSummary(gpus=len(gpus), mem_free_bytes=total(g.mem_free_bytes for g in gpus),
                       mem_total_bytes=total(g.mem_total_bytes for g in gpus),
                       mean_util_pct=sum(utils) / len(utils) if utils else None,
                       power_w=total(g.power_w for g in gpus),
                       processes=len({p.pid for p in node.processes if p.running}))
