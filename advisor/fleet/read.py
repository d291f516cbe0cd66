"""Exporter text and Prometheus answers -> the fleet's records. Nothing a node or a server sends is trusted.

The exposition format is parsed by ``prometheus_client.parser``; a Prometheus instant query's JSON by the
standard library's C decoder (the answer's size bounded first; too deep a nesting is refused). Both become
``(name, labels, value)`` samples, and one function turns samples into a ``NodeReading`` through the exporter's
own name mapping (``monitor.exporter.metric_names``, ``PROCESS_METRICS``), so the advisor's endpoint and NVIDIA's DCGM exporter
(``modelName`` label, no ``vendor``: NVIDIA) read the same. Every figure is checked against a physical bound
and dropped (None) outside it; names are cut to ``NAME_MAX_CHARS`` and made inert (``untrusted.plain_text``);
a node's GPUs and processes and an answer's samples are bounded in number.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from advisor.fleet.model import NodeGpu, NodeProcess, NodeReading
from advisor.untrusted import NAME_MAX_CHARS, plain_text

MAX_SCRAPE_BYTES = 4 * 2**20  # one node's /metrics: an 8-GPU node with 200 processes sends about 150 kB
MAX_QUERY_BYTES = 64 * 2**20  # a Prometheus answer for the whole fleet
MAX_SAMPLES = 200_000
MAX_GPUS_PER_NODE = 256
MAX_PROCESSES_PER_NODE = 2000
# Physical bounds of a reported figure (outside: not true, dropped). GPU memory as in store.fleet (no GPU has a TiB).
BOUNDS = {"util_pct": (0.0, 100.0), "mem_used_bytes": (0, 2**40), "mem_total_bytes": (0, 2**40),
          "mem_free_bytes": (0, 2**40), "power_w": (0.0, 10_000.0), "temp_c": (-100.0, 250.0),
          "energy_j": (0.0, 1e15)}
PROCESS_BOUNDS = {"gpu_seconds": (0.0, 1e12), "energy_j": (0.0, 1e15), "cost_usd": (0.0, 1e12),
                  "peak_gpu_mem_bytes": (0, 2**40), "gpu_mem_bytes": (0, 2**40), "running": (0, 1)}
_PROCESS_FIELDS = {"advisor_process_gpu_seconds_total": "gpu_seconds",
                   "advisor_process_energy_joules_total": "energy_j",
                   "advisor_process_cost_usd_total": "cost_usd",
                   "advisor_process_peak_memory_bytes": "peak_gpu_mem_bytes",
                   "advisor_process_memory_bytes": "gpu_mem_bytes",
                   "advisor_process_running": "running"}
PROCESS_SERIES = tuple(_PROCESS_FIELDS)
_INT_FIELDS = {"mem_used_bytes", "mem_total_bytes", "mem_free_bytes", "peak_gpu_mem_bytes", "gpu_mem_bytes"}


class FleetReadError(ValueError):
    """An answer that cannot be read at all (not the format, over a bound); one line."""


def _device_fields() -> dict[str, tuple[str, float]]:
    from advisor.monitor.exporter import metric_names

    return {m.name: (m.field, m.per_si) for m in metric_names() if m.field in BOUNDS}


def device_series() -> tuple[str, ...]:
    """The DCGM names the fleet model reads (what a Prometheus query asks for)."""
    return tuple(_device_fields())


def _text(value) -> str | None:
    return plain_text(value, NAME_MAX_CHARS) if isinstance(value, str) and value else None


def _index(value, limit: int) -> int | None:
    # ASCII digits only: str.isdigit() holds for superscripts ('²') that int() refuses
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) < 10 and int(value) < limit:
        return int(value)
    return None


def _bounded(field: str, value: float, bounds: dict) -> float | int | None:
    lo, hi = bounds[field]
    if not isinstance(value, (int, float)) or not math.isfinite(value) or not lo <= value <= hi:
        return None
    return int(round(value)) if field in _INT_FIELDS else float(value)


def reading_from_samples(samples: Iterable[tuple[str, dict, float]]) -> NodeReading:
    """One node's reading from its samples (other series are ignored)."""
    fields = _device_fields()
    gpus: dict[int, dict] = {}
    procs: dict[tuple[int, int | None], dict] = {}
    hostname = None
    for name, labels, value in samples:
        if name not in fields and name.endswith("_total") and name[:-6] in fields:
            name = name[:-6]  # a DCGM counter typed "counter": prometheus_client's parser names its sample *_total
        if name in fields:
            index = _index(labels.get("gpu"), MAX_GPUS_PER_NODE)
            if index is None:
                continue
            field, per_si = fields[name]
            g = gpus.get(index)
            if g is None:  # the labels of a GPU are read once, from its first series
                g = gpus[index] = {"index": index, "name": _text(labels.get("modelName") or labels.get("model_name")),
                                   "uuid": _text(labels.get("UUID")),
                                   "vendor": _text(labels.get("vendor")) or ("nvidia" if name.startswith("DCGM_") else None)}
                hostname = hostname or _text(labels.get("Hostname"))
            g[field] = _bounded(field, value / per_si if per_si else value, BOUNDS)
        elif name in _PROCESS_FIELDS:
            pid = _index(labels.get("pid"), 2**31)
            if not pid:
                continue
            gpu = _index(labels.get("gpu"), MAX_GPUS_PER_NODE)
            key = (pid, gpu)
            if key not in procs and len(procs) >= MAX_PROCESSES_PER_NODE:
                continue
            p = procs.get(key)
            if p is None:
                p = procs[key] = {"pid": pid, "gpu": gpu, "user": _text(labels.get("user")),
                                  "job": _text(labels.get("job")), "name": _text(labels.get("name"))}
                hostname = hostname or _text(labels.get("Hostname"))
            field = _PROCESS_FIELDS[name]
            p[field] = _bounded(field, value, PROCESS_BOUNDS)
    out_gpus = []
    for index in sorted(gpus):
        g = gpus[index]
        free = g.pop("mem_free_bytes", None)
        if g.get("mem_total_bytes") is None and free is not None and g.get("mem_used_bytes") is not None:
            g["mem_total_bytes"] = free + g["mem_used_bytes"]  # the DCGM exporter's defaults give used and free
        out_gpus.append(NodeGpu(**g))
    out_procs = []
    for key in sorted(procs, key=lambda k: (k[1] if k[1] is not None else -1, k[0])):
        p = procs[key]
        p["running"] = p.get("running") != 0
        out_procs.append(NodeProcess(**p))
    return NodeReading(hostname, tuple(out_gpus), tuple(out_procs))


def samples_from_text(raw: bytes) -> list[tuple[str, dict, float]]:
    """The samples of a ``/metrics`` answer (Prometheus text format 0.0.4).

    Raises:
        FleetReadError: over ``MAX_SCRAPE_BYTES``, or not the exposition format.
    """
    from prometheus_client.parser import text_string_to_metric_families

    if len(raw) > MAX_SCRAPE_BYTES:
        raise FleetReadError(f"an answer over {MAX_SCRAPE_BYTES / 2**20:g} MiB: refused")
    text = raw.decode("utf-8", "replace")
    out = []
    try:
        for fam in text_string_to_metric_families(text):
            for s in fam.samples:
                out.append((s.name, s.labels, s.value))
                if len(out) > MAX_SAMPLES:
                    raise FleetReadError(f"more than {MAX_SAMPLES} samples: refused")
    except FleetReadError:
        raise
    except Exception as exc:  # the parser raises ValueError, IndexError, ... on text that is not the format
        raise FleetReadError(f"not Prometheus metrics text ({type(exc).__name__})") from None
    return out


def samples_from_query(raw: bytes) -> list[tuple[str, dict, float]]:
    """The samples of a Prometheus ``/api/v1/query`` answer (an instant vector).

    Raises:
        FleetReadError: over ``MAX_QUERY_BYTES``, not JSON, an error status or not a vector.
    """
    import json

    if len(raw) > MAX_QUERY_BYTES:
        raise FleetReadError(f"an answer over {MAX_QUERY_BYTES / 2**20:g} MiB: refused")
    try:  # the C decoder, bounded by the size above; nesting too deep for it is a RecursionError
        doc = json.loads(raw.decode("utf-8", "replace"))
    except (ValueError, RecursionError) as exc:
        raise FleetReadError(f"not JSON ({type(exc).__name__})") from None
    if not isinstance(doc, dict) or doc.get("status") != "success":
        why = doc.get("error") if isinstance(doc, dict) else None
        raise FleetReadError(f"the query failed: {plain_text(why, 200) if isinstance(why, str) else 'no success status'}")
    data = doc.get("data")
    if not isinstance(data, dict) or data.get("resultType") != "vector" or not isinstance(data.get("result"), list):
        raise FleetReadError("the answer is not an instant vector")
    if len(data["result"]) > MAX_SAMPLES:
        raise FleetReadError(f"more than {MAX_SAMPLES} series: refused")
    out = []
    for item in data["result"]:
        metric = item.get("metric") if isinstance(item, dict) else None
        value = item.get("value") if isinstance(item, dict) else None
        if not isinstance(metric, dict) or not isinstance(value, list) or len(value) != 2:
            continue
        try:
            number = float(value[1])
        except (TypeError, ValueError):
            continue
        # the labels as sent: every reader of a label checks it is a string (_text, _index, the instance)
        out.append((metric.get("__name__", ""), metric, number))
    return out
