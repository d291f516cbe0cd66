"""The live terminal view of ``advisor monitor``: a per-GPU and a per-process table drawn with rich."""

from __future__ import annotations

import time

from rich.console import Group
from rich.table import Table
from rich.text import Text

from advisor.commands._terminal import term_text
from advisor.hw.records import GPU_OK, STATE_WORDS, THROTTLE_WORDS
from advisor.units import fmt_bytes

BAR_CELLS = 10


def _bar(fraction: float | None, label: str) -> Text:
    if fraction is None:
        return Text("n/a", style="dim")
    fraction = min(max(fraction, 0.0), 1.0)
    done = round(fraction * BAR_CELLS)
    style = "red" if fraction > 0.9 else "yellow" if fraction > 0.7 else "green"
    out = Text("█" * done, style=style)
    out.append("░" * (BAR_CELLS - done), style="dim")
    out.append(" " + label)  # our figures only
    return out


def _num(v, fmt: str, unit: str = "") -> str:
    return "n/a" if v is None else f"{v:{fmt}}{unit}"


def gpu_table(sample, infos) -> Table:
    """One row per GPU: utilisation and memory as bars, power against its limit, temperature, clocks, state."""
    t = Table(title=f"GPUs at {time.strftime('%H:%M:%S', time.localtime(sample.wall_time_s))}", expand=True,
              title_justify="left", pad_edge=False)
    for name, kw in (("GPU", {"justify": "right"}), ("name", {}), ("util", {}), ("memory", {}), ("power", {}),
                     ("temp", {"justify": "right"}), ("fan", {"justify": "right"}), ("SM clock", {"justify": "right"}),
                     ("state / throttling", {})):
        t.add_column(name, no_wrap=name != "state / throttling", **kw)
    for g in sample.gpus:
        info = infos[g.index] if g.index < len(infos) else None
        name = term_text(info.name if info else "(not read: asleep)")
        if g.state != GPU_OK:
            t.add_row(str(g.index), name, "", "", "", "", "", "", Text(STATE_WORDS.get(g.state, g.state), style="bold red"))
            continue
        used, total = g.mem_used_bytes, g.mem_total_bytes
        mem = _bar(used / total if used is not None and total else None,
                   f"{fmt_bytes(used, binary=True)} / {fmt_bytes(total, binary=True)}" if used is not None and total
                   else "")
        power = ("n/a" if g.power_w is None else f"{g.power_w:.0f}"
                 + (f" / {g.power_limit_w:.0f} W" if g.power_limit_w else " W"))
        reasons = [THROTTLE_WORDS.get(r, r) for r in (g.throttle_reasons or ()) if r != "gpu_idle"]
        t.add_row(str(g.index), name, _bar(None if g.util_pct is None else g.util_pct / 100, _num(g.util_pct, ".0f", " %")),
                  mem, power, _num(g.temp_c, ".0f", " °C"), _num(g.fan_pct, ".0f", " %"),
                  _num(g.sm_clock_mhz, ".0f", " MHz"), ", ".join(reasons) or "ok")
    return t


def _elapsed(started_s: float | None, now_s: float) -> str:
    if started_s is None:
        return "n/a"
    s = max(0, int(now_s - started_s))
    return f"{s // 86400}d {s % 86400 // 3600:02d}h" if s >= 86400 else f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def process_table(processes, now_s: float, width: int = 60) -> Table:
    """One row per GPU process, largest GPU memory first."""
    t = Table(title="GPU processes", expand=True, title_justify="left", pad_edge=False)
    for name in ("PID", "user", "GPU", "GPU mem", "GPU %", "CPU %", "host mem", "time", "command"):
        t.add_column(name, justify="left" if name in ("user", "command") else "right", no_wrap=True,
                     overflow="ellipsis", max_width=width if name == "command" else None)
    for p in sorted(processes, key=lambda p: -(p.gpu_mem_bytes or 0)):
        t.add_row(str(p.pid), term_text(p.user or "?"), str(p.gpu_index),
                  fmt_bytes(p.gpu_mem_bytes, binary=True) if p.gpu_mem_bytes is not None else "n/a",
                  _num(p.gpu_util_pct, ".0f"), _num(p.cpu_pct, ".0f"),
                  fmt_bytes(p.host_mem_bytes, binary=True) if p.host_mem_bytes is not None else "n/a",
                  _elapsed(p.started_s, now_s), term_text(p.cmdline or p.name or "(another PID namespace)", max_chars=None))
    if not processes:
        t.add_row("", "", "", "", "", "", "", "", Text("no GPU process seen", style="dim"))
    return t


def live_view(sample, infos, processes, banner: str) -> Group:
    """Everything the live terminal view shows for one sample."""
    h = sample.host
    host = (f"CPU {_num(h.cpu_util_pct, '.0f', ' %')} · RAM {fmt_bytes(h.mem_used_bytes, binary=True)} / "
            f"{fmt_bytes(h.mem_total_bytes, binary=True)}" if h.mem_used_bytes is not None else "")
    return Group(term_text(banner, style="bold yellow" if "SIMULATED" in banner else "bold", max_chars=None), Text(host),
                 gpu_table(sample, infos), process_table(processes, sample.wall_time_s))
