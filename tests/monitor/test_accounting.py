"""Per-process books on the simulated GPUs, whose power and processes are known (advisor/hw/fake.py):
an RTX 4090 draws ``25 + 425 * load`` W with ``load = 0.5 + 0.45 sin(2 pi t / 20 + i)``, so over whole 20 s
periods its energy is 237.5 W x t; its counter grows by exactly that. Each GPU runs our process at 80 x load %
and another user's at 15 x load %."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.hw.fake import FakeGpuBackend
from advisor.hw.records import ProcessSample
from advisor.monitor.accounting import J_PER_KWH, Books, gpu_energy_j, merge, shares

MEAN_POWER_W = 25.0 + (450.0 - 25.0) * 0.5


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def _procs(gpu) -> tuple[ProcessSample, ...]:
    return tuple(ProcessSample(pid=p.pid, gpu_index=p.gpu_index, gpu_mem_bytes=p.gpu_mem_bytes, kind="compute",
                               name=f"p{p.pid}", user="u", started_s=1.0, gpu_util_pct=p.gpu_util_pct)
                 for i in range(gpu.device_count()) for p in gpu.processes(i))


def _run(window_s: float, step_s: float, *, counter: bool, price: float = 0.30):
    clock = Clock()
    gpu = FakeGpuBackend("2x4090", clock=clock)
    books = Books(price)
    first = last = None
    n = round(window_s / step_s)
    for k in range(n + 1):
        clock.t = 1000.0 + k * step_s
        samples = [gpu.sample(i) for i in range(gpu.device_count())]
        if not counter:
            samples = [replace(s, energy_j=None) for s in samples]
        first = first or samples
        last = samples
        books.update(k * step_s, samples, _procs(gpu))
    return gpu, books, first, last


@pytest.mark.parametrize("counter", [True, False], ids=["energy-counter", "power-x-time"])
def test_process_energy_sums_to_the_gpus_energy_within_5_percent(counter):
    window = 60.0  # three whole periods of the simulated load
    gpu, books, first, last = _run(window, 0.5, counter=counter)
    per_gpu = {i: sum(b.energy_j for (pid, g), b in books.current().items() if g == i) for i in (0, 1)}
    for i in (0, 1):
        counted = last[i].energy_j - first[i].energy_j if counter else MEAN_POWER_W * window
        assert per_gpu[i] == pytest.approx(counted, rel=0.05)
        assert counted == pytest.approx(MEAN_POWER_W * window, rel=1e-3)
    assert books.gpu_energy_j[0] == pytest.approx(per_gpu[0], rel=1e-9)  # every joule attributed: processes ran throughout


def test_energy_is_shared_by_utilisation_and_priced():
    gpu, books, _, _ = _run(60.0, 0.5, counter=True, price=0.30)
    on_gpu1 = [b for (_pid, g), b in books.current().items() if g == 1]
    ours, theirs = sorted(on_gpu1, key=lambda b: -b.energy_j)
    # 80 : 15 of the GPU's energy at every tick (both follow the same load; utilisation is rounded to 0.1 %)
    assert ours.energy_j / theirs.energy_j == pytest.approx(80 / 15, rel=5e-3)
    assert ours.energy_j + theirs.energy_j == pytest.approx(MEAN_POWER_W * 60.0, rel=0.01)
    assert ours.cost_usd == pytest.approx(ours.energy_j / J_PER_KWH * 0.30, rel=1e-12)
    assert ours.gpu_hours == pytest.approx(60.0 / 3600.0, rel=1e-9)
    assert ours.peak_gpu_mem_bytes == gpu.gpu_info(1).memory_total_bytes // 8 // 2**20 * 2**20  # an eighth of it
    # the time-weighted mean of 80 x load over whole periods is 80 x 0.5
    assert ours.mean_util_pct == pytest.approx(40.0, abs=0.5)


def test_a_process_that_ends_is_returned_once_with_a_summary_line():
    books = Books(0.25)
    p = ProcessSample(pid=7, gpu_index=0, gpu_mem_bytes=21_300_000_000, kind="compute", name="train.py", user="u",
                      started_s=5.0, gpu_util_pct=90.0)
    g = type("G", (), {"index": 0, "energy_j": None, "power_w": 300.0})
    assert books.update(0.0, [g], [p]) == []
    assert books.update(3600.0, [g], [p]) == []
    (done,) = books.update(3601.0, [g], [])
    assert done.ended and done.energy_j == pytest.approx(300.0 * 3600.0)  # the last tick had no process
    assert done.summary() == "train.py: 1.0 h, 1.00 GPU-h, 0.3 kWh, $0.07, peak 21.3 GB, mean 90 % busy"
    assert books.update(3602.0, [g], []) == []


def test_rules_at_the_edges():
    assert shares([]) == []
    none = [type("P", (), {"gpu_util_pct": None})()] * 3
    assert shares(none) == pytest.approx([1 / 3] * 3)  # nobody reports utilisation: equal shares
    a, b = type("P", (), {"gpu_util_pct": 0.0})(), type("P", (), {"gpu_util_pct": 30.0})()
    assert shares([a, b]) == [0.0, 1.0]
    prev = type("G", (), {"energy_j": 500.0, "power_w": 100.0})
    reset = type("G", (), {"energy_j": 10.0, "power_w": 300.0})
    assert gpu_energy_j(prev, reset, 2.0) == pytest.approx(400.0)  # counter went back: trapezoid of power
    with pytest.raises(ValueError):
        Books(float("nan"))


def test_merge_adds_a_process_over_its_gpus():
    books = Books(0.3)
    g0 = type("G", (), {"index": 0, "energy_j": None, "power_w": 100.0})
    g1 = type("G", (), {"index": 1, "energy_j": None, "power_w": 200.0})
    rows = [ProcessSample(pid=9, gpu_index=i, gpu_mem_bytes=m, kind="compute", name="job", user="u", started_s=1.0,
                          gpu_util_pct=u) for i, m, u in ((0, 10, 50.0), (1, 30, 100.0))]
    books.update(0.0, [g0, g1], rows)
    books.update(10.0, [g0, g1], rows)
    merged = books.of(9)
    assert merged.gpus == (0, 1) and merged.energy_j == pytest.approx(100.0 * 10 + 200.0 * 10)
    assert merged.gpu_hours == pytest.approx(20.0 / 3600.0) and merged.peak_gpu_mem_bytes == 30
    assert merged.mean_util_pct == pytest.approx(75.0)  # equal GPU-hours on each
    assert merge([merged]) == merged

_tick = st.tuples(st.floats(0.01, 10.0), st.floats(0.0, 1000.0), st.lists(st.one_of(st.none(), st.floats(0.0, 100.0)),
                                                                            min_size=1, max_size=4))


@settings(max_examples=60, deadline=None)
@given(st.lists(_tick, min_size=2, max_size=30))
def test_property_every_joule_of_a_busy_gpu_goes_to_its_processes(ticks):
    """Whatever the power and the utilisations, the processes' energy is the GPU's energy (power x time)."""
    books = Books(0.2)
    t = 0.0
    n = len(ticks[0][2])
    for dt, power, utils in ticks:
        t += dt
        g = type("G", (), {"index": 0, "energy_j": None, "power_w": power})
        procs = [ProcessSample(pid=100 + i, gpu_index=0, gpu_mem_bytes=None, kind="compute", name=None, user=None,
                               started_s=0.0, gpu_util_pct=(utils + [None] * n)[i]) for i in range(n)]
        books.update(t, [g], procs)
    total = sum(b.energy_j for b in books.current().values())
    assert total == pytest.approx(books.gpu_energy_j[0], rel=1e-9, abs=1e-9)
    assert all(b.energy_j >= 0 and b.cost_usd >= 0 for b in books.current().values())


def test_bookkeeper_reports_a_process_once_over_all_its_gpus():
    from advisor.monitor.books import BookKeeper

    class S:
        procs: tuple = ()

        def processes(self):
            return self.procs

    sampler = S()
    ended = []
    keeper = BookKeeper(sampler, 0.2, on_end=ended.append)
    g = [type("G", (), {"index": i, "energy_j": None, "power_w": 100.0})() for i in (0, 1)]
    sampler.procs = tuple(ProcessSample(pid=5, gpu_index=i, gpu_mem_bytes=1, kind="compute", name="job", user="u",
                                        started_s=1.0, gpu_util_pct=50.0) for i in (0, 1))
    for t in (0.0, 10.0):
        keeper(type("M", (), {"time_s": t, "gpus": g})())
    assert set(keeper.current()) == {(5, 0), (5, 1)}
    sampler.procs = ()
    keeper(type("M", (), {"time_s": 11.0, "gpus": g})())
    (b,) = ended
    assert b.gpus == (0, 1) and b.energy_j == pytest.approx(2 * 100.0 * 10.0) and b.ended
    assert keeper.current() == {} and keeper.finish() == [b]  # every process seen, each once


def test_a_snapshot_handed_again_keeps_the_same_books_as_a_new_one_each_tick():
    """The sampler hands the same process snapshot (one tuple) between its refreshes, and Books works out what a
    snapshot opens once: the books equal, to the last bit, those kept from a new tuple of the same processes each
    tick, across new snapshots (a process gone, one new, utilisations moved), a list (never taken as the same
    snapshot) and a close."""
    clock = Clock()
    gpu = FakeGpuBackend("2x4090", clock=clock)
    kept, fresh = Books(0.30), Books(0.30)
    ended_kept, ended_fresh = [], []
    snapshot = _procs(gpu)
    for k in range(200):
        clock.t = 1000.0 + 0.1 * k
        gpus = [gpu.sample(i) for i in range(gpu.device_count())]
        if k in (50, 120):  # the sampler's refresh: the first process goes, a new one comes, shares move
            snapshot = (*snapshot[1:], replace(snapshot[0], pid=9000 + k, gpu_util_pct=None)) if k == 50 else \
                tuple(replace(p, gpu_util_pct=(p.gpu_util_pct or 0.0) + 5.0) for p in snapshot)
        if k == 150:
            ended_kept += kept.close()
            ended_fresh += fresh.close()
        given_kept = list(snapshot) if k % 40 == 7 else snapshot
        ended_kept += kept.update(0.1 * k, gpus, given_kept)
        ended_fresh += fresh.update(0.1 * k, gpus, tuple(list(snapshot)))  # a new tuple: worked out each tick
    assert kept.current() == fresh.current() and kept.current()
    assert ended_kept == ended_fresh and len(ended_kept) > len(snapshot)  # the one gone at 50, all at the close
    assert kept.gpu_energy_j == fresh.gpu_energy_j
