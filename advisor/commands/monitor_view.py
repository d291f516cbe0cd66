"""The live terminal view of ``advisor monitor``: a per-GPU and a per-process table drawn with rich."""

from __future__ import annotations

import time
from dataclasses import dataclass

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from advisor.commands._terminal import term_text
from advisor.hw.records import GPU_OK, STATE_WORDS, THROTTLE_WORDS
from advisor.monitor.columns import ViewColumn, fit_columns, wall_time_utc
from advisor.units import fmt_mem, mem_value, memory_unit, sig3
from advisor.untrusted import plain_text

BAR_CELLS = 10
DEFAULT_WIDTH = 120

# The GPU table's columns in display order; the priority says which go first when the width runs short (as
# nvitop's compact modes do): the bars, then the clock, the name, fan and state; the index, use, memory, power
# and temperature stay.
GPU_COLUMNS = (
    ViewColumn("GPU", 1, right=True),
    ViewColumn("name", 5, flex=True, min_width=8),
    ViewColumn("util", 1, right=True),
    ViewColumn("", 7),  # the utilisation bar
    ViewColumn("memory", 1, right=True),
    ViewColumn("", 8),  # the memory bar
    ViewColumn("power", 2, right=True),
    ViewColumn("temp", 2, right=True),
    ViewColumn("fan", 4, right=True),
    ViewColumn("clock", 6, right=True),
    ViewColumn("state", 3, flex=True, min_width=5),
)
# The process table's: PID, user, GPU, its memory and the command stay longest; the books go first.
PROCESS_COLUMNS = (
    ViewColumn("PID", 1, right=True),
    ViewColumn("user", 2, flex=True, min_width=4),
    ViewColumn("GPU", 1, right=True),
    ViewColumn("GPU mem", 1, right=True),
    ViewColumn("GPU %", 3, right=True),
    ViewColumn("CPU %", 4, right=True),
    ViewColumn("host mem", 5, right=True),
    ViewColumn("time", 4, right=True),
    ViewColumn("GPU-h", 7, right=True),
    ViewColumn("energy", 7, right=True),
    ViewColumn("cost", 6, right=True),
    ViewColumn("peak", 8, right=True),
    ViewColumn("command", 1, flex=True, min_width=16),
)


def _bar(fraction: float | None) -> Text:
    if fraction is None:
        return Text("")
    fraction = min(max(fraction, 0.0), 1.0)
    done = round(fraction * BAR_CELLS)
    style = "red" if fraction > 0.9 else "yellow" if fraction > 0.7 else "green"
    out = Text("█" * done, style=style)
    out.append("░" * (BAR_CELLS - done), style="dim")
    return out


def _num(v, fmt: str, unit: str = "") -> str:
    return "n/a" if v is None else f"{v:{fmt}}{unit}"


def short_gpu_name(name: str) -> str:
    """A GPU's name without its vendor's words (``NVIDIA GeForce RTX 4090`` -> ``RTX 4090``): the table is
    narrow, and the vendor is in ``advisor detect``."""
    words = name.split()
    while words and words[0] in ("NVIDIA", "AMD", "Intel", "Intel(R)", "GeForce", "Radeon", "Tesla"):
        words = words[1:]
    return " ".join(words) or name


def _memory(used: int | None, total: int | None) -> str:
    """``8.59 / 25.8 GB``: used and total in one unit, each to three figures."""
    if used is None or not total:
        return "n/a"
    return f"{sig3(mem_value(used))} / {fmt_mem(total)}"


def fitted_table(title: str, columns, rows: list[list], width: int) -> Table:
    """A table of the columns that fit ``width`` (``monitor.columns.fit_columns``): figures whole, names and
    commands shortened with an ellipsis where they must be."""
    natural = [max([len(c.name)] + [cell_len(r[i]) for r in rows]) for i, c in enumerate(columns)]
    widths = fit_columns(columns, natural, width)
    t = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
              padding=(0, 1), expand=False)
    for i, w in widths.items():
        c = columns[i]
        t.add_column(c.name, justify="right" if c.right else "left", no_wrap=True, width=w,
                     overflow="ellipsis" if c.flex else "crop")
    for r in rows:
        t.add_row(*[r[i] for i in widths])
    return t


def cell_len(value) -> int:
    return value.cell_len if isinstance(value, Text) else len(str(value))


def gpu_rows(sample, infos) -> list[list]:
    """The GPU table's cells, one row per GPU in ``GPU_COLUMNS`` order."""
    rows = []
    for g in sample.gpus:
        info = infos[g.index] if g.index < len(infos) else None
        name = term_text(short_gpu_name(info.name) if info else "(not read: asleep)")
        if g.state != GPU_OK:
            rows.append([str(g.index), name, "", Text(""), "", Text(""), "", "", "", "",
                         Text(STATE_WORDS.get(g.state, g.state), style="bold red")])
            continue
        used, total = g.mem_used_bytes, g.mem_total_bytes
        power = ("n/a" if g.power_w is None else f"{g.power_w:.0f}"
                 + (f" / {g.power_limit_w:.0f} W" if g.power_limit_w else " W"))
        reasons = [THROTTLE_WORDS.get(r, r) for r in (g.throttle_reasons or ()) if r != "gpu_idle"]
        rows.append([str(g.index), name, _num(g.util_pct, ".0f", " %"),
                     _bar(None if g.util_pct is None else g.util_pct / 100), _memory(used, total),
                     _bar(used / total if used is not None and total else None), power,
                     _num(g.temp_c, ".0f", " °C"), _num(g.fan_pct, ".0f", " %"), _num(g.sm_clock_mhz, ".0f", " MHz"),
                     ", ".join(reasons) or "ok"])
    return rows


def gpu_table(sample, infos, width: int = DEFAULT_WIDTH) -> Table:
    """One row per GPU: index, name, utilisation and memory (figures and bars), power against its limit,
    temperature, fan, clock and state; the columns that do not fit ``width`` are dropped by priority."""
    title = f"GPUs at {time.strftime('%H:%M:%S', time.localtime(sample.wall_time_s))}"
    return fitted_table(title, GPU_COLUMNS, gpu_rows(sample, infos), width)


def _elapsed(started_s: float | None, now_s: float) -> str:
    if started_s is None:
        return "n/a"
    s = max(0, int(now_s - started_s))
    return f"{s // 86400}d {s % 86400 // 3600:02d}h" if s >= 86400 else f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


# The live view's sort keys, in the order the ``s`` key steps through them: (name, key, largest first).
SORTS = (
    ("GPU memory", lambda p: p.gpu_mem_bytes or 0, True),
    ("GPU %", lambda p: p.gpu_util_pct or 0.0, True),
    ("CPU %", lambda p: p.cpu_pct or 0.0, True),
    ("host memory", lambda p: p.host_mem_bytes or 0, True),
    ("running time", lambda p: -(p.started_s or 0.0), True),
    ("PID", lambda p: p.pid, False),
)


@dataclass
class ViewState:
    """What the keys of the live view change: the process sort and whether the view is paused."""

    sort: int = 0
    paused: bool = False
    quit: bool = False

    def key(self, ch: str) -> None:
        """Apply one key: ``s``/``S`` next/previous sort, ``p`` or space pause, ``q`` quit."""
        if ch == "s":
            self.sort = (self.sort + 1) % len(SORTS)
        elif ch == "S":
            self.sort = (self.sort - 1) % len(SORTS)
        elif ch in ("p", " "):
            self.paused = not self.paused
        elif ch in ("q", "\x03"):
            self.quit = True

    @property
    def sort_name(self) -> str:
        return SORTS[self.sort][0]

    def footer(self) -> Text:
        state = "PAUSED (the samples go on; p resumes)" if self.paused else "p pause"
        return Text(f"sorted by {self.sort_name} · keys: s / S sort · {state} · q quit", style="dim", no_wrap=True,
                    overflow="ellipsis")


def sorted_processes(processes, sort: int = 0) -> list:
    """The processes in the order of ``SORTS[sort]`` (largest first where that is the key's sense)."""
    _name, key, largest = SORTS[sort]
    return sorted(processes, key=key, reverse=largest)


def process_rows(processes, now_s: float, sort: int = 0, books: dict | None = None) -> list[list]:
    """The process table's cells in ``PROCESS_COLUMNS`` order, sorted by ``SORTS[sort]``."""
    rows = []
    for p in sorted_processes(processes, sort):
        b = (books or {}).get((p.pid, p.gpu_index))
        rows.append([str(p.pid), term_text(p.user or "?"), str(p.gpu_index),
                     fmt_mem(p.gpu_mem_bytes) if p.gpu_mem_bytes is not None else "n/a",
                     _num(p.gpu_util_pct, ".0f"), _num(p.cpu_pct, ".0f"),
                     fmt_mem(p.host_mem_bytes) if p.host_mem_bytes is not None else "n/a",
                     _elapsed(p.started_s, now_s), *book_cells(b),
                     term_text(p.cmdline or p.name or "(another PID namespace)", max_chars=None)])
    return rows


def process_table(processes, now_s: float, width: int = DEFAULT_WIDTH, sort: int = 0, books: dict | None = None,
                  max_rows: int | None = None) -> Table:
    """One row per GPU process, in the order of ``SORTS[sort]`` (largest GPU memory first by default); with
    ``books`` ({(pid, gpu): ProcessBooks}) its GPU-hours, energy, cost and peak memory since the monitor saw it.
    The columns that do not fit ``width`` are dropped by priority; at most ``max_rows`` rows, then a line that
    says how many more."""
    rows = process_rows(processes, now_s, sort, books)
    if not rows:
        rows = [["", "", "", "", "", "", "", "", "", "", "", "", Text("no GPU process seen", style="dim")]]
    elif max_rows is not None and len(rows) > max_rows:
        more = len(rows) - max(max_rows - 1, 0)
        rows = rows[:max(max_rows - 1, 0)] + [["", "", "", "", "", "", "", "", "", "", "", "",
                                                Text(f"… {more} more (s sorts)", style="dim")]]
    return fitted_table(f"GPU processes (by {SORTS[sort][0]})", PROCESS_COLUMNS, rows, width)


def book_cells(b) -> tuple[str, str, str, str]:
    """GPU-hours, energy (Wh), cost and peak GPU memory of one process's books ("n/a" without books)."""
    if b is None:
        return ("n/a",) * 4
    peak = fmt_mem(b.peak_gpu_mem_bytes) if b.peak_gpu_mem_bytes is not None else "n/a"
    return f"{b.gpu_hours:.3f}", f"{b.energy_j / 3600.0:.1f} Wh", f"${b.cost_usd:.3f}", peak


def live_view(sample, infos, processes, banner: str, state: ViewState | None = None, books: dict | None = None,
              width: int = DEFAULT_WIDTH, height: int | None = None) -> Group:
    """Everything the live terminal view shows for one sample (with the keys' footer when ``state`` is given;
    each process's books when ``books`` is), fitted to a ``width`` x ``height`` console: each table keeps the
    columns that fit, and the process table the rows that fit under the GPU table (``height`` None: all)."""
    h = sample.host
    host = (f"CPU {_num(h.cpu_util_pct, '.0f', ' %')} · RAM {fmt_mem(h.mem_used_bytes)} / "
            f"{fmt_mem(h.mem_total_bytes)}" if h.mem_used_bytes is not None else "")
    head = term_text(banner, style="bold yellow" if "SIMULATED" in banner else "bold", max_chars=None)
    head.no_wrap, head.overflow = True, "ellipsis"
    # lines above the processes: banner, host, GPU title, header, rule, the GPUs; then the processes' title,
    # header and rule, and the footer
    rows = None if height is None else max(1, height - (6 + len(sample.gpus)) - 3 - (1 if state else 0))
    parts = [head, Text(host, no_wrap=True, overflow="ellipsis"), gpu_table(sample, infos, width),
             process_table(processes, sample.wall_time_s, width, sort=state.sort if state else 0, books=books,
                           max_rows=rows)]
    if state is not None:
        parts.append(state.footer())
    return Group(*parts)


def _cell(v, fmt: str = ".0f") -> str:
    return "" if v is None else f"{v:{fmt}}"


def plain_tables(sample, infos, processes, books: dict | None = None, simulated: bool = False) -> str:
    """``advisor monitor --once`` piped: tab-separated tables (a header row, then one row per GPU; a blank line;
    the same for processes), whole names and commands, numbers without units (the unit is in the header); each
    GPU row's ``simulated`` is 1 where the GPUs are simulated (``--fake-gpu``), as in the CSV recording."""
    unit = memory_unit()
    rows = [("gpu", "name", "state", "util_pct", f"mem_used_{unit}", f"mem_total_{unit}", "power_w", "power_limit_w",
             "temp_c", "fan_pct", "sm_clock_mhz", "simulated")]
    for g in sample.gpus:
        info = infos[g.index] if g.index < len(infos) else None
        mem = [None if b is None else mem_value(b) for b in (g.mem_used_bytes, g.mem_total_bytes)]
        rows.append((str(g.index), info.name if info else "", g.state, _cell(g.util_pct), _cell(mem[0], ".3g"),
                     _cell(mem[1], ".3g"), _cell(g.power_w), _cell(g.power_limit_w), _cell(g.temp_c),
                     _cell(g.fan_pct), _cell(g.sm_clock_mhz), str(int(bool(simulated)))))
    rows.append(())
    rows.append(("pid", "user", "gpu", f"gpu_mem_{unit}", "gpu_util_pct", "cpu_pct", f"host_mem_{unit}",
                 "started_utc", "gpu_hours", "energy_j", "cost_usd", "command"))
    for p in sorted_processes(processes):
        b = (books or {}).get((p.pid, p.gpu_index))
        rows.append((str(p.pid), p.user or "", str(p.gpu_index),
                     _cell(None if p.gpu_mem_bytes is None else mem_value(p.gpu_mem_bytes), ".3g"),
                     _cell(p.gpu_util_pct), _cell(p.cpu_pct),
                     _cell(None if p.host_mem_bytes is None else mem_value(p.host_mem_bytes), ".3g"),
                     "" if p.started_s is None else wall_time_utc(p.started_s),
                     "" if b is None else f"{b.gpu_hours:.6f}", "" if b is None else f"{b.energy_j:.3f}",
                     "" if b is None else f"{b.cost_usd:.6f}", p.cmdline or p.name or "(another PID namespace)"))
    return "\n".join("\t".join(_tsv(c) for c in r) for r in rows) + "\n"


def _tsv(text: str) -> str:
    """A cell of a tab-separated table: tabs and line breaks in it become spaces, other control characters
    are shown as escapes (``advisor.untrusted``); the text is kept whole up to 4096 characters."""
    return plain_text(" ".join(str(text).replace("\t", " ").splitlines()))
