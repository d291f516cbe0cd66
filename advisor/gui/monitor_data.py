"""Qt-free helpers of the Monitor page: events from samples, CSV export of the recorded window."""

from __future__ import annotations

import csv
import io
import time
from dataclasses import dataclass

from advisor.monitor.columns import csv_columns
from advisor.monitor.recorder import format_cell

# NVML clocks-event reasons as the backends name them, explained for people.
THROTTLE_TEXT = {
    "gpu_idle": "idle: clocks lowered because nothing runs",
    "applications_clocks_setting": "application clocks set below the maximum",
    "sw_power_cap": "power cap: the board is at its power limit, clocks lowered to stay under it",
    "hw_slowdown": "hardware slowdown: power brake or temperature (check cooling and power supply)",
    "sync_boost": "sync boost: clocks held to match other GPUs in the group",
    "sw_thermal_slowdown": "software thermal slowdown: the GPU is hot, clocks lowered",
    "hw_thermal_slowdown": "hardware thermal slowdown: the GPU is very hot",
    "hw_power_brake_slowdown": "power brake: the system asked the GPU to slow down",
    "display_clock_setting": "clocks limited by the display",
}


@dataclass(frozen=True)
class MonitorEvent:
    """Something that changed: a throttle reason started or ended, a GPU was lost or came back."""

    wall_time_s: float
    gpu_index: int
    kind: str  # throttle | state
    text: str

    @property
    def clock(self) -> str:
        return time.strftime("%H:%M:%S", time.localtime(self.wall_time_s))


class EventTracker:
    """Turns a stream of samples into events by comparing each GPU with its previous reading."""

    def __init__(self) -> None:
        self._reasons: dict[int, frozenset[str]] = {}
        self._states: dict[int, str] = {}

    def feed(self, sample) -> list[MonitorEvent]:
        """Events of one ``MonitorSample`` (empty when nothing changed)."""
        out = []
        for g in sample.gpus:
            prev_state = self._states.get(g.index, "ok")
            if g.state != prev_state:
                text = {"lost": "GPU lost: it fell off the bus or the driver lost it; the rest keeps running",
                        "suspended": "GPU suspended (laptop power saving); not polled so it is not woken",
                        "ok": "GPU available again"}.get(g.state, g.state)
                out.append(MonitorEvent(sample.wall_time_s, g.index, "state", text))
            self._states[g.index] = g.state
            if g.throttle_reasons is None:
                continue
            now = frozenset(g.throttle_reasons) - {"gpu_idle"}
            before = self._reasons.get(g.index, frozenset())
            for r in sorted(now - before):
                out.append(MonitorEvent(sample.wall_time_s, g.index, "throttle",
                                        "started: " + THROTTLE_TEXT.get(r, r)))
            for r in sorted(before - now):
                out.append(MonitorEvent(sample.wall_time_s, g.index, "throttle", "ended: " + THROTTLE_TEXT.get(r, r)))
            self._reasons[g.index] = now
        return out


def history_csv(history, gpu_count: int, window_s: float | None) -> str:
    """The recorded window as ``advisor monitor --csv`` text (same columns, empty cells where not available).

    Args:
        history: the sampler's ``History``.
        gpu_count: GPUs in the history.
        window_s: seconds back from the newest sample, or None for everything kept.
    """
    columns = csv_columns(gpu_count)
    times, _ = history.window(columns[1], window_s)
    series = [history.window(c, window_s)[1] for c in columns[1:]]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    t0 = times[0] if len(times) else 0.0
    for i in range(len(times)):
        w.writerow([format_cell(round(float(times[i] - t0), 6))] + [format_cell(float(s[i])) for s in series])
    return buf.getvalue()


def export_csv(history, gpu_count: int, window_s: float | None, path: str):
    """Write :func:`history_csv` atomically to ``path`` (runs in a worker); yields progress, returns the row count."""
    from advisor.store.atomic import write_atomic

    yield "collecting"
    text = history_csv(history, gpu_count, window_s)
    yield "writing"
    write_atomic(path, text)
    return text.count("\n") - 1
