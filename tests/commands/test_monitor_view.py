"""The terminal monitor: a plain tab-separated layout when piped, a live view that sorts and pauses by key."""

from __future__ import annotations

import io

from rich.console import Console

from advisor.cli import main
from advisor.commands.monitor_view import SORTS, ViewState, live_view, sorted_processes
from advisor.hw.records import ProcessSample


def _p(pid, mem_gb, util, cpu, started):
    return ProcessSample(pid=pid, gpu_index=0, gpu_mem_bytes=int(mem_gb * 1e9), kind="compute", name="python",
                         user="u", cpu_pct=cpu, host_mem_bytes=int(1e9), cmdline=f"python job{pid}.py",
                         started_s=started, gpu_util_pct=util)


PROCS = [_p(11, 3.0, 10, 90, 1000.0), _p(12, 9.0, 50, 5, 3000.0), _p(13, 1.0, 95, 40, 2000.0)]


def test_piped_once_is_a_tab_separated_table_with_whole_commands(capsys):
    assert main(["monitor", "--once", "--fake-gpu", "2x4090"]) == 0  # capsys: stdout is not a terminal
    out = capsys.readouterr().out
    gpus, procs = out.strip("\n").split("\n\n")
    head, *rows = [line.split("\t") for line in gpus.splitlines()]
    assert head[:6] == ["gpu", "name", "state", "util_pct", "mem_used_GB", "mem_total_GB"]
    assert len(rows) == 2 and all(len(r) == len(head) for r in rows)
    assert rows[0][1] == "NVIDIA GeForce RTX 4090" and rows[0][5] == "25.8"  # 24564 MiB in GB, not cut to "..."
    phead, *prows = [line.split("\t") for line in procs.splitlines()]
    assert phead[0] == "pid" and phead[-1] == "command" and all(len(r) == len(phead) for r in prows)
    assert any(r[-1].startswith("python train.py --model llama-3-8b") and r[-1].endswith("--local-rank 0")
               for r in prows)
    assert "…" not in out and "..." not in out


def test_sort_keys_step_through_every_order_and_back():
    state = ViewState()
    assert [p.pid for p in sorted_processes(PROCS, state.sort)] == [12, 11, 13]  # GPU memory, largest first
    state.key("s")
    assert state.sort_name == "GPU %" and [p.pid for p in sorted_processes(PROCS, state.sort)] == [13, 12, 11]
    state.key("s")
    assert [p.pid for p in sorted_processes(PROCS, state.sort)] == [11, 13, 12]  # CPU %
    state.key("S")
    state.key("S")
    assert state.sort == 0
    for _ in SORTS:
        state.key("s")
    assert state.sort == 0
    state.sort = [n for n, *_ in SORTS].index("running time")
    assert [p.pid for p in sorted_processes(PROCS, state.sort)] == [11, 13, 12]  # longest running first
    state.sort = [n for n, *_ in SORTS].index("PID")
    assert [p.pid for p in sorted_processes(PROCS, state.sort)] == [11, 12, 13]


def test_pause_and_quit_keys_and_the_footer_says_them():
    state = ViewState()
    state.key("p")
    assert state.paused and "PAUSED" in state.footer().plain
    state.key(" ")
    assert not state.paused and "p pause" in state.footer().plain and "sorted by GPU memory" in state.footer().plain
    state.key("x")
    assert not state.quit
    state.key("q")
    assert state.quit


def test_the_live_view_shows_the_chosen_order():
    from advisor.hw.fake import FakeGpuBackend, FakeHostBackend
    from advisor.monitor import Sampler
    from advisor.monitor.snapshot import read_infos

    gpu = FakeGpuBackend("2x4090")
    sampler = Sampler(gpu, FakeHostBackend())
    sample = sampler.tick()
    state = ViewState(sort=[n for n, *_ in SORTS].index("PID"))
    buf = io.StringIO()
    Console(file=buf, width=200).print(live_view(sample, read_infos(gpu), PROCS, "banner", state))
    text = buf.getvalue()
    assert "GPU processes (by PID)" in text and text.index("job11.py") < text.index("job12.py") < text.index("job13.py")
    assert "keys: s / S sort" in text
    sampler.stop()
    gpu.close()
