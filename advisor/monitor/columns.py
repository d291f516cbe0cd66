"""Metric names shared by the history, the CSV recording and the GUI; the terminal view's column fitting.

A metric name is also its CSV column (the CLI contract (README, command line)): host metrics first, then per GPU
``gpu<i>_<metric>``. Per-core CPU load (``cpu<k>_util_pct``) is kept in the history for charts but not
written to the CSV, whose width should not depend on the core count.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from advisor.hw.records import GpuSample, HostSample

HOST_METRICS = ("cpu_util_pct", "cpu_freq_mhz", "mem_used_bytes", "mem_total_bytes", "swap_used_bytes",
                "disk_read_bps", "disk_write_bps", "net_rx_bps", "net_tx_bps")
GPU_METRICS = ("util_pct", "mem_util_pct", "mem_used_bytes", "mem_total_bytes", "power_w", "power_limit_w",
               "temp_c", "sm_clock_mhz", "mem_clock_mhz", "fan_pct", "pcie_rx_bps", "pcie_tx_bps", "energy_j")


def gpu_metric(index: int, metric: str) -> str:
    """``gpu_metric(0, "power_w") == "gpu0_power_w"``."""
    return f"gpu{index}_{metric}"


def metric_names(gpu_count: int, core_count: int = 0) -> tuple[str, ...]:
    """Every history metric: host, per-core CPU (``cpu<k>_util_pct``), then per GPU."""
    cores = tuple(f"cpu{k}_util_pct" for k in range(core_count))
    gpus = tuple(gpu_metric(i, m) for i in range(gpu_count) for m in GPU_METRICS)
    return HOST_METRICS + cores + gpus


# Before the metrics: seconds since the first sample, the wall-clock time of the sample (UTC, ISO 8601, so a
# recording can be joined with a training log), and 1 where the GPUs were simulated (``--fake-gpu``).
STAMP_COLUMNS = ("time_s", "wall_time_utc", "simulated")


def csv_columns(gpu_count: int) -> tuple[str, ...]:
    """The CSV header: ``STAMP_COLUMNS``, host metrics, then per-GPU metrics."""
    return STAMP_COLUMNS + HOST_METRICS + tuple(gpu_metric(i, m) for i in range(gpu_count) for m in GPU_METRICS)


def wall_time_utc(epoch_s: float) -> str:
    """Epoch seconds as ``2026-12-02T07:41:26.250Z`` (UTC, milliseconds)."""
    import datetime as _dt

    t = _dt.datetime.fromtimestamp(epoch_s, tz=_dt.UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def stamp_values(time_s: float, wall_s: float, simulated: bool) -> tuple:
    """The ``STAMP_COLUMNS`` cells of one sample."""
    return (round(time_s, 6), wall_time_utc(wall_s), int(bool(simulated)))


def host_values(host: HostSample) -> tuple:
    return tuple(getattr(host, m) for m in HOST_METRICS)


def gpu_values(gpus: tuple[GpuSample, ...]) -> tuple:
    return tuple(getattr(g, m) for g in gpus for m in GPU_METRICS)


def history_values(host: HostSample, gpus: tuple[GpuSample, ...], core_count: int) -> tuple:
    """Values in ``metric_names(len(gpus), core_count)`` order (missing cores are None)."""
    cores = tuple(host.per_core_util_pct[:core_count]) + (None,) * max(0, core_count - len(host.per_core_util_pct))
    return host_values(host) + cores + gpu_values(gpus)


# ---- the terminal view's columns: which fit a width, and how wide each is (nvitop's compact modes drop columns
# rather than cut figures; so does this). Pure: the cells' widths in, the kept columns' widths out.

COLUMN_GAP = 3  # characters between two columns of the terminal tables (padding, rule, padding)


@dataclass(frozen=True)
class ViewColumn:
    """One column of a terminal table.

    Attributes:
        name: the header.
        priority: 1 is kept longest; the highest number is dropped first when the width runs short.
        flex: text that may be shortened with an ellipsis (a GPU's name, a user, a command); never a figure.
        min_width: a flex column's narrowest width.
        right: right-justified (figures).
    """

    name: str
    priority: int
    flex: bool = False
    min_width: int = 0
    right: bool = False


def fit_columns(columns: Sequence[ViewColumn], natural: Sequence[int], width: int,
                gap: int = COLUMN_GAP) -> dict[int, int]:
    """The columns that fit ``width`` and the width of each, by index in display order.

    A figure column is as wide as its widest cell or header (``natural``), so no figure is ever cut; a flex
    column needs at least its ``min_width``. While the kept columns need more than ``width``, the one of the
    highest priority number goes (the last of equals). What is left is shared by the flex columns, the
    narrowest first, each up to its natural width.

    Args:
        columns: the columns in display order.
        natural: each column's widest cell or header, in characters.
        width: the characters available (the console's width).
        gap: characters between two columns.
    Returns:
        ``{index: width}`` of the kept columns (at least the first column of priority 1).
    """
    if len(columns) != len(natural):
        raise ValueError("one natural width per column")
    base = [min(n, c.min_width) if c.flex else n for c, n in zip(columns, natural, strict=True)]
    kept = list(range(len(columns)))

    def need(idx: list[int]) -> int:
        return sum(base[i] for i in idx) + gap * max(0, len(idx) - 1)

    while len(kept) > 1 and need(kept) > width:
        kept.remove(max(kept, key=lambda i: (columns[i].priority, i)))
    out = {i: base[i] for i in kept}
    spare = max(0, width - need(kept))
    for i in sorted((i for i in kept if columns[i].flex), key=lambda i: (natural[i], i)):
        more = min(spare, natural[i] - out[i])
        out[i] += more
        spare -= more
    return out
