"""The terminal view fits 80x24 and 120x40 (issue 34, item 5): columns drop by priority, as nvitop's compact modes
do; the GPU index, temperature and fan have widths; the process table shows PID, user, memory and command; no
figure is cut ("3.2…", "$…"); the process rows stop at the screen's height; simulated hardware is marked."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from advisor.cli import main
from advisor.commands.monitor_view import (
    GPU_COLUMNS,
    PROCESS_COLUMNS,
    ViewState,
    _memory,
    live_view,
    sorted_processes,
)
from advisor.monitor.columns import COLUMN_GAP, ViewColumn, fit_columns

BANNER = "SIMULATED HARDWARE - GPU backend [fake]: simulated hardware (scenario {}): {} GPU(s)"


def test_fit_columns_by_hand():
    cols = [ViewColumn("GPU", 1, right=True), ViewColumn("name", 3, flex=True, min_width=8),
            ViewColumn("clock", 4, right=True), ViewColumn("temp", 2, right=True)]
    natural = [3, 20, 8, 5]
    # everything: 3 + 20 + 8 + 5 + 3 gaps of 3 = 45
    assert fit_columns(cols, natural, 45) == {0: 3, 1: 20, 2: 8, 3: 5}
    # 40: the name gives way first (a flex column, down to 8 of its 20): 3 + 15 + 8 + 5 + 9 = 40
    assert fit_columns(cols, natural, 40) == {0: 3, 1: 15, 2: 8, 3: 5}
    # 32: 3 + 8 + 8 + 5 + 9 = 33 does not fit: the clock (priority 4) goes; 3 + 8 + 5 + 6 = 22, 10 to the name
    assert fit_columns(cols, natural, 32) == {0: 3, 1: 18, 3: 5}
    # 15: the name goes next (priority 3): 3 + 5 + 3 = 11
    assert fit_columns(cols, natural, 15) == {0: 3, 3: 5}
    assert fit_columns(cols, natural, 2) == {0: 3}  # the first column always stays
    with pytest.raises(ValueError):
        fit_columns(cols, natural[:2], 40)


def _screen(scenario: str, width: int, height: int) -> tuple[str, object, list]:
    from advisor.hw.fake import FakeGpuBackend, FakeHostBackend
    from advisor.monitor import Sampler
    from advisor.monitor.books import BookKeeper
    from advisor.monitor.snapshot import read_infos

    gpu = FakeGpuBackend(scenario)
    sampler = Sampler(gpu, FakeHostBackend())
    keeper = BookKeeper(sampler, 0.17)
    sampler.add_listener(keeper)
    sampler.tick()
    sample = sampler.tick()
    infos = read_infos(gpu)
    procs = sampler.processes()
    buf = io.StringIO()
    banner = BANNER.format(scenario, len(sample.gpus))
    Console(file=buf, width=width, height=height, color_system=None).print(
        live_view(sample, infos, procs, banner, ViewState(), keeper.current(), width=width, height=height))
    sampler.stop()
    gpu.close()
    return buf.getvalue(), sample, procs


CUT = re.compile(r"[\d$.,]…|…\s*(?:GB|W|°C|%|MHz|Wh)\b")


@pytest.mark.parametrize("scenario", ["2x4090", "8xh100-sxm"])
@pytest.mark.parametrize("width, height", [(80, 24), (120, 40)])
def test_the_view_fits_and_cuts_no_figure(scenario, width, height):
    text, sample, procs = _screen(scenario, width, height)
    lines = text.rstrip("\n").splitlines()
    assert max(len(line) for line in lines) <= width
    assert len(lines) <= height
    assert lines[0].startswith("SIMULATED HARDWARE")
    assert not CUT.search(text), CUT.search(text)
    gpu_head = next(line for line in lines if line.lstrip().startswith("GPU ") and "name" in line)
    for name in ("GPU", "util", "memory", "power", "temp"):
        assert re.search(rf"\b{name}\b", gpu_head)
    for g in sample.gpus:  # every GPU's memory and temperature whole, in its row
        row = next(line for line in lines if re.match(rf"\s*{g.index}\s{{3}}", line) and "/" in line)
        assert _memory(g.mem_used_bytes, g.mem_total_bytes) in row and f"{g.temp_c:.0f} °C" in row
    proc_head = next(line for line in lines if "PID" in line)
    assert re.search(r"PID\s+user\s+GPU\s+GPU mem\b", proc_head) and proc_head.rstrip().endswith("command")
    shown = [line for line in lines if re.match(r"\s*\d{5,}\s", line)]
    assert [line.split()[0] for line in shown] == [str(p.pid) for p in sorted_processes(procs)[:len(shown)]]
    if len(shown) < len(procs):  # the rest of the processes, counted
        assert f"… {len(procs) - len(shown)} more (s sorts)" in text


def test_columns_drop_by_priority_between_120_and_80():
    wide, _, _ = _screen("2x4090", 120, 40)
    narrow, _, _ = _screen("2x4090", 80, 24)
    def heads(text):
        lines = text.splitlines()
        return [next(x for x in lines if x.lstrip().startswith("GPU ") and "name" in x),
                next(x for x in lines if x.lstrip().startswith("PID ") and "command" in x)]

    wide_heads, narrow_heads = heads(wide), heads(narrow)
    # at 120 every GPU column and the books; at 80 the bars, the clock, host memory and the books go first
    assert "clock" in wide_heads[0] and "█" in wide and "energy" in wide_heads[1] and "cost" in wide_heads[1]
    assert "clock" not in narrow_heads[0] and "█" not in narrow
    assert not any(w in narrow_heads[1] for w in ("host mem", "GPU-h", "energy", "cost", "peak"))
    assert all(w in narrow_heads[0] for w in ("GPU", "name", "util", "memory", "power", "temp", "fan"))
    for head, columns in zip(narrow_heads, (GPU_COLUMNS, PROCESS_COLUMNS), strict=True):
        shown = set(re.split(r"\s{2,}", head.strip()))
        kept = [c.priority for c in columns if c.name in shown]
        dropped = [c.priority for c in columns if c.name and c.name not in shown]
        assert dropped and max(kept) <= min(dropped)  # nothing kept is less important than what went


def test_a_column_fits_its_widest_figure():
    # the figure columns' natural width is the widest of header and cells, so rich never has to cut one
    cols = [c for c in GPU_COLUMNS if not c.flex]
    natural = [max(len(c.name), 14) for c in cols]
    widths = fit_columns(cols, natural, sum(natural) + COLUMN_GAP * (len(cols) - 1))
    assert list(widths.values()) == natural


def test_once_marks_simulated_hardware_piped_and_on_a_terminal(capsys, monkeypatch):
    assert main(["monitor", "--once", "--fake-gpu", "2x4090"]) == 0
    gpus = capsys.readouterr().out.split("\n\n")[0].splitlines()
    head = gpus[0].split("\t")
    assert head[-1] == "simulated" and all(r.split("\t")[-1] == "1" for r in gpus[1:])
    import sys

    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert main(["monitor", "--once", "--fake-gpu", "2x4090"]) == 0
    assert re.sub(r"\x1b\[[0-9;]*m", "", capsys.readouterr().out).lstrip().startswith("SIMULATED HARDWARE")
