"""The monitor's Prometheus endpoint (``advisor monitor --serve-metrics [HOST:]PORT``): a ``prometheus_client``
collector over the monitor's snapshots.

Device series carry the NVIDIA DCGM exporter's names, units and labels (``resources/dcgm_metrics.csv``, after
the exporter's ``etc/default-counters.csv`` and ``dcp-metrics-included.csv``: framebuffer in MiB, energy in mJ,
clocks in MHz) for every vendor the monitor reads, plus a ``vendor`` label; a figure the device does not report
is absent, never zero. Labels: ``gpu`` (index), ``UUID``, ``device`` (``nvidia0``, ``amd0`` ...), ``model_name``,
``Hostname``, ``vendor``. Two departures from the DCGM exporter make the output pass ``promtool check metrics``
(which flags the DCGM exporter's own output on both): the GPU's model is ``model_name`` (promtool refuses the
camelCase ``modelName``; one Prometheus relabel rule restores it, README "Fleets"), and the energy counter is
exposed untyped (a counter must end in ``_total``, and the DCGM name does not). Queries are unchanged.

Each process's books (``monitor.books.BookKeeper``) are ``advisor_process_*`` series labelled ``pid``, ``user``,
``job`` (``SLURM_JOB_ID`` from the process's environment where this user may read it, else ``--job``), ``gpu``,
``name`` and ``Hostname``; at most ``MAX_PROCESSES`` processes (the running ones with the most GPU memory
first), and a process that ended stays ``KEEP_ENDED_S`` seconds (``advisor_process_running`` 0) and is then
dropped. Command lines are exported only when asked (``command`` label, cut to 200 characters). A job the
monitor follows with its plan (``--plan FILE --job NAME``) exports the plan's peak memory per device and rate
(``advisor_plan_*``, labels ``job``, ``option``) beside the observed books of the processes with that job label.

The collector only reads the latest snapshot under a lock (the sampler thread writes it): a scrape costs the
exposition of a few hundred series and never touches the hardware.
"""

from __future__ import annotations

import csv
import io
import math
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache

from advisor.untrusted import NAME_MAX_CHARS, plain_text

MAX_PROCESSES = 200  # process series sets (one per process and GPU): bounds the scrape whatever runs
KEEP_ENDED_S = 300.0  # an ended process's final books stay this long, then its series go
UNIT_PER_SI = {"%": 1.0, "MiB": 1.0 / 2**20, "W": 1.0, "mJ": 1e3, "C": 1.0, "MHz": 1e-6, "B/s": 1.0, "": 1.0}
MODEL_LABEL = "model_name"
GPU_LABELS = ("gpu", "UUID", "device", MODEL_LABEL, "Hostname", "vendor")
PROCESS_LABELS = ("pid", "user", "job", "gpu", "name", "Hostname")
_JOB_ID = re.compile(rb"(?:^|\x00)SLURM_JOB_ID=([0-9]{1,20})(?:\x00|$)")
MAX_ENVIRON_BYTES = 1 << 20


@dataclass(frozen=True)
class MetricName:
    """One device series: its DCGM name and type, the ``advisor.monitor/1`` field it reads, and the unit."""

    name: str
    type: str  # gauge | counter
    field: str
    unit: str
    help: str

    @property
    def per_si(self) -> float:
        """The DCGM value of one SI unit of the field (bytes -> MiB: 1/2**20)."""
        return UNIT_PER_SI[self.unit]


@dataclass(frozen=True)
class ProcessMetric:
    name: str
    type: str
    help: str


# The books as series: one name each, the same for the exporter and the fleet's reader.
PROCESS_METRICS = (
    ProcessMetric("advisor_process_gpu_seconds_total", "counter", "GPU time the process has held (s; GPU-hours x 3600)."),
    ProcessMetric("advisor_process_energy_joules_total", "counter", "GPU energy attributed to the process (J)."),
    ProcessMetric("advisor_process_cost_usd_total", "counter", "Cost of that energy at the electricity price (USD)."),
    ProcessMetric("advisor_process_peak_memory_bytes", "gauge", "Largest GPU memory the process held (bytes)."),
    ProcessMetric("advisor_process_memory_bytes", "gauge", "GPU memory the process holds now (bytes)."),
    ProcessMetric("advisor_process_running", "gauge", "1 while the process runs, 0 in the minutes after it ended."),
)


@lru_cache(maxsize=1)
def metric_names() -> tuple[MetricName, ...]:
    """The device series, from ``resources/dcgm_metrics.csv`` (one declaration for exporter and reader)."""
    from advisor.catalog.load import _resource_text

    rows = csv.DictReader(io.StringIO(_resource_text("dcgm_metrics.csv")))
    out = tuple(MetricName(r["name"], r["type"], r["field"], r["unit"], r["help"]) for r in rows)
    for m in out:
        if m.type not in ("gauge", "counter") or m.unit not in UNIT_PER_SI:
            raise ValueError(f"dcgm_metrics.csv: {m.name}: type {m.type!r} or unit {m.unit!r} unknown")
    return out


def slurm_job_of(pid: int) -> str | None:
    """The ``SLURM_JOB_ID`` in a process's environment (Linux ``/proc/PID/environ``), or None when it has
    none or this user may not read it."""
    try:
        with open(f"/proc/{int(pid)}/environ", "rb") as f:
            raw = f.read(MAX_ENVIRON_BYTES)
    except (OSError, ValueError):
        return None
    m = _JOB_ID.search(raw)
    return m.group(1).decode() if m else None


def parse_listen(text: str) -> tuple[str, int]:
    """``[HOST:]PORT`` -> (host, port); 127.0.0.1 unless a host is named; ``[::1]:9400`` for IPv6.

    Raises:
        ValueError: one line naming what is wrong.
    """
    text = (text or "").strip()
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", text
    host = host.strip("[]") if host.startswith("[") and host.endswith("]") else host
    if not (port.isascii() and port.isdigit()) or not 0 <= int(port) <= 65535:
        raise ValueError(f"{text!r}: the port must be a number from 0 to 65535 ([HOST:]PORT)")
    if not host or not re.fullmatch(r"[A-Za-z0-9.:_-]{1,253}", host):
        raise ValueError(f"{text!r}: {host!r} is not a host name or address")
    return host, int(port)


@dataclass(frozen=True)
class PlannedJob:
    """What the planner predicted for the job this monitor follows (``--plan FILE``): exported beside the
    observed books as ``advisor_plan_peak_memory_bytes`` and ``advisor_plan_tokens_per_second``."""

    job: str
    option: str
    peak_memory_bytes: float | None  # per device
    tokens_per_s: float | None


PLAN_METRICS = (
    ProcessMetric("advisor_plan_peak_memory_bytes", "gauge", "Planned peak memory per device of the followed job (bytes)."),
    ProcessMetric("advisor_plan_tokens_per_second", "gauge", "Planned rate of the followed job (tokens per second)."),
)


def planned_job(doc, job: str | None) -> PlannedJob:
    """The prediction of an ``advisor.plan/1`` document for this machine's option (``"this_machine"``), else its
    first option; checked like any file from outside.

    Raises:
        ValueError: not a plan document, or figures that are not positive finite numbers.
    """
    if not isinstance(doc, dict) or doc.get("schema") != "advisor.plan/1":
        raise ValueError("not an advisor.plan/1 document (advisor plan ... --json)")
    options = [o for o in doc.get("options") or [] if isinstance(o, dict)]
    chosen = next((o for o in options if o.get("id") == doc.get("this_machine")), options[0] if options else None)
    if chosen is None:
        raise ValueError("the plan has no option")

    def figure(value, what):
        if value is None:
            return None
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or not 0 < value < 1e18:
            raise ValueError(f"{what}: {value!r} is not a positive number")
        return float(value)

    peak = figure(chosen.get("memory_per_device_bytes"), "memory_per_device_bytes")
    rate = figure(chosen.get("decode_tokens_per_s") if doc.get("workload") == "inference" else chosen.get("tokens_per_s"),
                  "tokens_per_s")
    name = job or (doc.get("model") or {}).get("name") or "planned"
    return PlannedJob(plain_text(str(name), NAME_MAX_CHARS), plain_text(str(chosen.get("id") or ""), NAME_MAX_CHARS),
                      peak, rate)


@dataclass
class _Kept:
    labels: tuple[str, ...]
    books: object  # accounting.ProcessBooks
    mem_bytes: int | None
    ended_at: float | None = None  # monotonic time it was last seen running


class MetricsExporter:
    """A sampler listener (after the ``BookKeeper``) and a ``prometheus_client`` collector.

    Args:
        sampler: the ``monitor.Sampler`` (its ``processes()`` snapshot is read on each sample).
        keeper: the ``monitor.books.BookKeeper`` listening before this exporter.
        infos: ``GpuInfo`` per GPU index (None where not read), for names, UUIDs and vendors.
        hostname: the ``Hostname`` label.
        job: the ``job`` label of processes whose environment names no Slurm job (``--job``).
        read_environ: read ``SLURM_JOB_ID`` from ``/proc`` (False for simulated processes).
        export_cmdline: add each process's command line as a ``command`` label.
        clock: monotonic seconds (tests).
        plan: the planned job this monitor follows (``--plan``), exported beside the observed books.
    """

    def __init__(self, sampler, keeper, infos, hostname: str, *, job: str | None = None, read_environ: bool = True,
                 export_cmdline: bool = False, clock: Callable[[], float] = time.monotonic,
                 keep_ended_s: float = KEEP_ENDED_S, max_processes: int = MAX_PROCESSES,
                 plan: PlannedJob | None = None) -> None:
        self.sampler, self.keeper, self.infos = sampler, keeper, list(infos)
        self.hostname = plain_text(hostname, NAME_MAX_CHARS)
        self.job = "" if job is None else plain_text(job, NAME_MAX_CHARS)
        self.read_environ, self.export_cmdline = read_environ, export_cmdline
        self.clock, self.keep_ended_s, self.max_processes = clock, keep_ended_s, max_processes
        self.plan = plan
        self._lock = threading.Lock()
        self._gpus: list[tuple[tuple[str, ...], dict]] = []
        self._kept: dict[tuple, _Kept] = {}
        self._jobs: dict[tuple, str] = {}

    # ------------------------------------------------------------ the sampler side
    def __call__(self, sample) -> None:
        from advisor.monitor.snapshot import gpu_entry

        gpus = []
        for g in sample.gpus:
            info = self.infos[g.index] if g.index < len(self.infos) else None
            entry = gpu_entry(info, g)
            used, total = entry["mem_used_bytes"], entry["mem_total_bytes"]
            entry["mem_free_bytes"] = None if used is None or total is None else max(0, total - used)
            vendor = entry["vendor"] or "unknown"
            gpus.append(((str(g.index), entry["uuid"] or "", f"{vendor}{g.index}",
                          plain_text(entry["name"] or "", NAME_MAX_CHARS), self.hostname, vendor), entry))
        books = self.keeper.current()
        now = self.clock()
        with self._lock:
            self._gpus = gpus
            seen = set()
            for p in self.sampler.processes():
                key = (p.pid, p.started_s, p.gpu_index)
                b = books.get((p.pid, p.gpu_index))
                if b is None:
                    continue
                seen.add(key)
                kept = self._kept.get(key)
                labels = kept.labels if kept else self._labels(p)
                self._kept[key] = _Kept(labels, b, p.gpu_mem_bytes)
            for key, kept in list(self._kept.items()):
                if key in seen:
                    continue
                if kept.ended_at is None:
                    kept.ended_at, kept.mem_bytes = now, None
                elif now - kept.ended_at > self.keep_ended_s:
                    del self._kept[key]
                    self._jobs.pop(key[:2], None)

    def _labels(self, p) -> tuple[str, ...]:
        job = self._jobs.get((p.pid, p.started_s))
        if job is None:
            job = (slurm_job_of(p.pid) if self.read_environ else None) or self.job
            self._jobs[(p.pid, p.started_s)] = job
        labels = (str(p.pid), plain_text(p.user or "", NAME_MAX_CHARS), job, str(p.gpu_index),
                  plain_text(p.name or "", NAME_MAX_CHARS), self.hostname)
        if self.export_cmdline:
            labels += (plain_text(p.cmdline or "", NAME_MAX_CHARS),)
        return labels

    # ------------------------------------------------------------ the scrape side
    def describe(self):
        return []  # registering must not run a collection

    def collect(self) -> Iterator:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, UnknownMetricFamily

        with self._lock:
            gpus = list(self._gpus)
            kept = list(self._kept.values())
        for m in metric_names():
            # A DCGM counter keeps its name: untyped (a typed counter must end in _total; the DCGM one does not).
            fam = (UnknownMetricFamily if m.type == "counter" else GaugeMetricFamily)(m.name, m.help, labels=GPU_LABELS)
            for labels, entry in gpus:
                value = entry.get(m.field)
                if isinstance(value, (int, float)) and math.isfinite(value):
                    fam.add_metric(labels, value * m.per_si)
            if fam.samples:
                yield fam
        running = sorted((k for k in kept if k.ended_at is None), key=lambda k: -(k.mem_bytes or 0))
        ended = sorted((k for k in kept if k.ended_at is not None), key=lambda k: -k.ended_at)
        shown = (running + ended)[: self.max_processes]
        labels = PROCESS_LABELS + (("command",) if self.export_cmdline else ())
        values = {
            "advisor_process_gpu_seconds_total": lambda k: k.books.gpu_hours * 3600.0,
            "advisor_process_energy_joules_total": lambda k: k.books.energy_j,
            "advisor_process_cost_usd_total": lambda k: k.books.cost_usd,
            "advisor_process_peak_memory_bytes": lambda k: k.books.peak_gpu_mem_bytes,
            "advisor_process_memory_bytes": lambda k: k.mem_bytes,
            "advisor_process_running": lambda k: 0 if k.ended_at is not None else 1,
        }
        if self.plan is not None:
            for pm, value in zip(PLAN_METRICS, (self.plan.peak_memory_bytes, self.plan.tokens_per_s)):
                if value is not None:
                    fam = GaugeMetricFamily(pm.name, pm.help, labels=("job", "option", "Hostname"))
                    fam.add_metric((self.plan.job, self.plan.option, self.hostname), value)
                    yield fam
        for pm in PROCESS_METRICS:
            cls = CounterMetricFamily if pm.type == "counter" else GaugeMetricFamily
            name = pm.name.removesuffix("_total") if pm.type == "counter" else pm.name  # the library adds it
            fam = cls(name, pm.help, labels=labels)
            for k in shown:
                v = values[pm.name](k)
                if v is not None:
                    fam.add_metric(k.labels, v)
            if fam.samples:
                yield fam


def serve(exporter: MetricsExporter, host: str, port: int):
    """Serve ``/metrics`` for ``exporter`` on ``host:port`` in a daemon thread.

    Returns:
        (server, thread); ``server.server_address[1]`` is the port (``port`` 0 picks a free one).
    Raises:
        OSError: the address cannot be bound.
    """
    from prometheus_client import CollectorRegistry, start_http_server

    registry = CollectorRegistry(auto_describe=False)
    registry.register(exporter)
    return start_http_server(port, addr=host, registry=registry)


def exposition(exporter: MetricsExporter) -> bytes:
    """The exporter's ``/metrics`` text now (tests, benchmarks and the simulated fleet)."""
    from prometheus_client import CollectorRegistry, generate_latest

    registry = CollectorRegistry(auto_describe=False)
    registry.register(exporter)
    return generate_latest(registry)
