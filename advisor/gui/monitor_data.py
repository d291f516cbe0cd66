"""Qt-free parts of the Monitor page: time windows, host chart specs, CSV export (events: ``advisor.monitor.events``)."""

from __future__ import annotations

import csv
import io

from advisor.monitor.columns import STAMP_COLUMNS, csv_columns, stamp_values
from advisor.monitor.recorder import format_cell

WINDOWS_S = (("1 min", 60), ("5 min", 300), ("15 min", 900), ("30 min", 1800), ("1 h", 3600))
MIN_Y_RANGE = {"B": 1e9, "B/s": 1e3, "W": 10.0, "°C": 10.0, "Hz": 1e8, "%": 10.0}
# (key, title, y label, unit, metrics [(metric, dashed, legend)], tooltip) of the host charts
HOST_CHARTS = (
    ("cpu", "CPU load", "load", "%", (("cpu_util_pct", False, "all cores"),),
     "mean load over all logical cores (tick 'per core' for each core)"),
    ("ram", "Host memory", "memory", "B", (("mem_used_bytes", False, "used"), ("swap_used_bytes", True, "swap")),
     "host RAM in use (solid) and swap in use (dashed)"),
    ("disk", "Disk I/O", "throughput", "B/s", (("disk_read_bps", False, "read"), ("disk_write_bps", True, "write")),
     "all disks, bytes per second"),
    ("net", "Network", "throughput", "B/s", (("net_rx_bps", False, "received"), ("net_tx_bps", True, "sent")),
     "all interfaces, bytes per second"),
)


def history_csv(history, gpu_count: int, window_s: float | None, wall_start_s: float = 0.0,
                simulated: bool = False) -> str:
    """The recorded window as ``advisor monitor --csv`` text (same columns, empty cells where not available).

    Args:
        history: the sampler's ``History``.
        gpu_count: GPUs in the history.
        window_s: seconds back from the newest sample, or None for everything kept.
        wall_start_s: the wall clock (epoch seconds) of the history's time 0 (``Sampler.wall_start_s``).
        simulated: the GPUs are simulated.
    """
    columns = csv_columns(gpu_count)
    metrics = columns[len(STAMP_COLUMNS):]
    times, series = history.windows(metrics, window_s)  # every column on the same rows
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    t0 = times[0] if len(times) else 0.0
    for i in range(len(times)):
        t = float(times[i])
        w.writerow([format_cell(v) for v in stamp_values(t - t0, wall_start_s + t, simulated)]
                   + [format_cell(float(s[i])) for s in series])
    return buf.getvalue()


def export_csv(history, gpu_count: int, window_s: float | None, path: str, wall_start_s: float = 0.0,
               simulated: bool = False):
    """Write :func:`history_csv` atomically to ``path`` (runs in a worker); yields progress, returns the row count."""
    from advisor.store.atomic import write_atomic

    yield "collecting"
    text = history_csv(history, gpu_count, window_s, wall_start_s, simulated)
    yield "writing"
    write_atomic(path, text)
    return text.count("\n") - 1
