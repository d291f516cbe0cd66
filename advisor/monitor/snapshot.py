"""The ``advisor.monitor/1`` document: one sample of every GPU and GPU process (``advisor monitor --once --json``).

Every figure is in SI units (bytes, W, °C, Hz, bytes/s); a value the device does not report is None
(JSON null), and ``state`` says why a GPU has none: "ok", "asleep" (runtime suspend, deliberately not
woken), "lost", "not-responding" (a driver call hung), "not-supported" (the driver answers, but gives
none of utilisation, memory, power and temperature).
"""

from __future__ import annotations

from advisor.hw.records import GPU_OK, STATE_JSON, THROTTLE_WORDS, GpuInfo, GpuSample, ProcessSample

SCHEMA = "advisor.monitor/1"
CORE_FIGURES = ("util_pct", "mem_used_bytes", "power_w", "temp_c")


def gpu_state(sample: GpuSample) -> str:
    """The document's ``state`` of one reading."""
    if sample.state == GPU_OK and all(getattr(sample, f) is None for f in CORE_FIGURES):
        return "not-supported"
    return STATE_JSON.get(sample.state, sample.state)


def _hz(mhz: float | None) -> float | None:
    return None if mhz is None else float(mhz) * 1e6


def gpu_entry(info: GpuInfo | None, s: GpuSample) -> dict:
    """One element of ``gpus``."""
    return {
        "index": s.index, "name": info.name if info else None, "vendor": info.vendor if info else None,
        "uuid": (info.uuid or None) if info else None, "state": gpu_state(s),
        "util_pct": s.util_pct, "mem_util_pct": s.mem_util_pct,
        "mem_used_bytes": s.mem_used_bytes,
        "mem_total_bytes": s.mem_total_bytes if s.mem_total_bytes is not None else (
            info.memory_total_bytes if info else None),
        "power_w": s.power_w, "power_limit_w": s.power_limit_w, "temp_c": s.temp_c, "fan_pct": s.fan_pct,
        "sm_clock_hz": _hz(s.sm_clock_mhz), "mem_clock_hz": _hz(s.mem_clock_mhz),
        "pcie_rx_bytes_per_s": s.pcie_rx_bps, "pcie_tx_bytes_per_s": s.pcie_tx_bps, "energy_j": s.energy_j,
        "throttle_reasons": None if s.throttle_reasons is None else list(s.throttle_reasons),
        "throttle_words": None if s.throttle_reasons is None else [THROTTLE_WORDS.get(r, r) for r in s.throttle_reasons],
        "xid": s.xid,
    }


def process_entry(p: ProcessSample, books=None) -> dict:
    """One element of ``processes``; ``books`` (``accounting.ProcessBooks`` of this process on this GPU) adds
    ``gpu_hours``, ``energy_j``, ``cost_usd``, ``peak_gpu_mem_bytes`` and ``mean_util_pct`` since the monitor
    first saw it (None without books)."""
    from advisor.monitor.books import book_values

    return {"pid": p.pid, "user": p.user, "name": p.name, "cmdline": p.cmdline, "gpu": p.gpu_index,
            "gpu_mem_bytes": p.gpu_mem_bytes, "gpu_util_pct": p.gpu_util_pct, "cpu_pct": p.cpu_pct,
            "host_mem_bytes": p.host_mem_bytes, "started_s": p.started_s, "kind": p.kind, **book_values(books)}


def monitor_document(infos: list[GpuInfo | None], sample, processes: tuple[ProcessSample, ...], *,
                     backend: str, status: str, simulated: bool, books: dict | None = None) -> dict:
    """The whole ``advisor.monitor/1`` document for one ``MonitorSample``.

    Args:
        infos: ``GpuInfo`` per GPU index (None where it was not read, e.g. asleep).
        sample: the ``MonitorSample``.
        processes: the sampler's process snapshot.
        backend, status, simulated: the GPU backend's name, status line and whether it is simulated.
        books: ``{(pid, gpu): ProcessBooks}`` (``monitor.books.BookKeeper.current``), or None.
    """
    h = sample.host
    return {
        "schema": SCHEMA, "simulated": simulated, "time_s": sample.wall_time_s,
        "gpu_backend": {"name": backend, "status": status},
        "host": {"cpu_util_pct": h.cpu_util_pct, "mem_used_bytes": h.mem_used_bytes,
                 "mem_total_bytes": h.mem_total_bytes},
        "gpus": [gpu_entry(infos[g.index] if g.index < len(infos) else None, g) for g in sample.gpus],
        "processes": [process_entry(p, (books or {}).get((p.pid, p.gpu_index))) for p in processes],
    }


def read_infos(gpu) -> list[GpuInfo | None]:
    """``gpu_info`` of every GPU that is not asleep (None for a sleeping one: asking would wake it)."""
    return [None if gpu.runtime_status(i) == "suspended" else gpu.gpu_info(i) for i in range(gpu.device_count())]
