"""The sampler on a fake clock: drift-free schedule, pause/resume, interval changes, lost and sleeping GPUs."""

from __future__ import annotations

import math
import threading
import time

import numpy as np
import pytest

from advisor.hw import GPU_LOST, GPU_SUSPENDED
from advisor.hw.fake import LOST_AFTER_S, FakeGpuBackend, FakeHostBackend
from advisor.monitor import Sampler, check_interval
from tests.monitor.fakeclock import FakeClock


class CostlyHost(FakeHostBackend):
    """A host whose every reading takes ``cost_s`` of (fake) time."""

    def __init__(self, clock: FakeClock, cost_s: float) -> None:
        super().__init__(clock)
        self._fake = clock
        self.cost_s = cost_s

    def sample(self):
        s = super().sample()
        self._fake.now += self.cost_s
        return s


def make(scenario="2x4090", interval=0.5, clock=None, host=None, wait=None, **kw):
    clock = clock or FakeClock()
    gpu = FakeGpuBackend(scenario, clock=clock)
    sampler = Sampler(gpu, host or FakeHostBackend(clock), interval_s=interval, clock=clock,
                      wall_clock=lambda: 1.7e9 + clock.now, wait=wait or clock.advance, **kw)
    return sampler, gpu, clock


def times(sampler, metric="cpu_util_pct"):
    return list(sampler.history.window(metric)[0])


# ---------------------------------------------------------------- schedule
def test_ticks_on_the_grid():
    sampler, _, _ = make(interval=0.5)
    sampler.run(max_ticks=7)
    assert times(sampler) == [0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0]


def test_drift_free_when_reads_cost_time():
    clock = FakeClock()
    sampler, _, _ = make(interval=0.5, clock=clock, host=CostlyHost(clock, 0.2))
    sampler.run(max_ticks=5)
    assert times(sampler) == [0.0, 0.5, 1.0, 1.5, 2.0]  # not 0, 0.7, 1.4 ...
    assert all(w == pytest.approx(0.3) for w in clock.waits)


def test_overlong_reads_skip_ticks_instead_of_bunching():
    clock = FakeClock()
    sampler, _, _ = make(interval=0.5, clock=clock, host=CostlyHost(clock, 0.7))
    sampler.run(max_ticks=4)
    assert times(sampler) == [0.0, 1.0, 2.0, 3.0]


def test_duration_includes_the_last_tick():
    sampler, _, _ = make(interval=0.5)
    sampler.run(duration_s=3.0)
    assert times(sampler) == [0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0]


def test_pause_and_resume():
    clock = FakeClock()

    def wait(seconds):  # stands for the GUI thread, which resumes at t = 5 s
        clock.advance(seconds)
        if clock.now - 1000.0 >= 5.0 and sampler.paused:
            sampler.resume()

    sampler, _, _ = make(interval=0.5, clock=clock, wait=wait)
    sampler.add_listener(lambda s: sampler.pause() if s.time_s == 2.0 else None)
    sampler.run(duration_s=7.0)
    assert times(sampler) == [0.0, 0.5, 1.0, 1.5, 2.0, 5.0, 5.5, 6.0, 6.5, 7.0]


def test_set_interval_takes_effect_from_the_next_tick():
    sampler, _, _ = make(interval=0.5)
    sampler.add_listener(lambda s: sampler.set_interval(2.0) if s.seq == 2 else None)
    sampler.run(max_ticks=5)
    assert times(sampler) == [0.0, 0.5, 1.0, 3.0, 5.0]
    assert sampler.interval_s == 2.0


@pytest.mark.parametrize("bad", [0.0, 0.09, 10.5, -1, math.nan, math.inf, "abc", None])
def test_interval_range(bad):
    with pytest.raises(ValueError, match="interval"):
        check_interval(bad)
    sampler, _, _ = make()
    with pytest.raises(ValueError):
        sampler.set_interval(bad)


def test_interval_bounds_accepted():
    assert check_interval(0.1) == 0.1 and check_interval("10") == 10.0


# ---------------------------------------------------------------- data
def test_history_values_follow_the_fake_scenario():
    sampler, gpu, _ = make("8xh100-sxm", interval=1.0)
    sampler.run(max_ticks=10)
    t, power = sampler.history.window("gpu3_power_w")
    assert len(t) == 10
    assert np.all((power >= 70) & (power <= 700))
    assert sampler.history.latest("gpu7_mem_total_bytes") == 81559 * 2**20
    assert sampler.gpu_count == 8 and gpu.sample_calls == 80
    last = sampler.latest()
    assert last.seq == 9 and last.wall_time_s == pytest.approx(1.7e9 + 1009.0)
    assert last.gpus[3].power_w == sampler.history.latest("gpu3_power_w")
    assert sampler.history.latest("cpu5_util_pct") == last.host.per_core_util_pct[5]


def test_drain_returns_each_sample_once_and_is_bounded():
    sampler, _, _ = make(interval=0.5, capacity=4)
    sampler.run(max_ticks=3)
    assert [s.seq for s in sampler.drain()] == [0, 1, 2]
    assert sampler.drain() == []
    sampler.run(max_ticks=10)
    assert [s.seq for s in sampler.drain(max_items=2)] == [9, 10]  # only the newest 4 were kept
    assert [s.seq for s in sampler.drain()] == [11, 12]
    assert len(sampler.history) == 4


def test_gpu_lost_while_monitoring():
    sampler, _, _ = make("gpu-lost", interval=0.5)
    sampler.run(duration_s=4.0)
    t, util = sampler.history.window("gpu1_util_pct")
    assert np.all(np.isfinite(util[t < LOST_AFTER_S])) and np.all(np.isnan(util[t >= LOST_AFTER_S]))
    assert np.all(np.isfinite(sampler.history.window("gpu0_util_pct")[1]))
    assert sampler.latest().gpus[1].state == GPU_LOST
    assert {p.gpu_index for p in sampler.processes()} == {0}


def test_laptop_safe_mode_does_not_wake_a_suspended_gpu():
    sampler, gpu, _ = make("laptop-4060", interval=1.0)
    sampler.run(max_ticks=5)
    assert gpu.wakeups == 0 and gpu.sample_calls == 0
    assert all(s.gpus[0].state == GPU_SUSPENDED for s in sampler.drain())
    assert np.all(np.isnan(sampler.history.window("gpu0_util_pct")[1]))


def test_unsafe_mode_wakes_it():
    sampler, gpu, _ = make("laptop-4060", interval=1.0, laptop_safe=False)
    sampler.run(max_ticks=5)
    assert gpu.wakeups == 1 and gpu.sample_calls == 5  # woken once, then kept awake by polling
    assert sampler.history.latest("gpu0_util_pct") is not None


def test_not_supported_figures_are_nan_in_history():
    sampler, _, _ = make("not-supported", interval=1.0)
    sampler.run(max_ticks=3)
    assert sampler.history.latest("gpu0_power_w") is None
    assert sampler.history.latest("gpu0_util_pct") is not None


def test_process_snapshot_joins_host_names():
    from advisor.hw.fake import FOREIGN_PID, OTHER_PID_BASE, OWN_PID_BASE

    sampler, _, clock = make("2x4090", interval=0.5, process_interval_s=2.0)
    sampler.run(max_ticks=1)
    procs = {p.pid: p for p in sampler.processes()}
    mine = [procs[OWN_PID_BASE], procs[OWN_PID_BASE + 1]]
    assert [p.gpu_index for p in mine] == [0, 1] and all(p.own and p.name == "python" for p in mine)
    assert mine[0].gpu_mem_bytes == 24564 * 2**20 // 8 // 2**20 * 2**20
    assert mine[1].cmdline.startswith("python train.py") and mine[1].cmdline.endswith("--local-rank 1")
    assert time.time() - mine[0].started_s == pytest.approx(3 * 3600, abs=60)  # started 3 h before the host opened
    assert 0 <= mine[0].gpu_util_pct <= 80 and mine[0].cpu_pct > 90 and mine[0].host_mem_bytes == 6 * 2**30
    other = procs[OTHER_PID_BASE]
    assert other.user == "alice" and not other.own and "vllm" in other.cmdline
    foreign = procs[FOREIGN_PID]
    assert foreign.name is None and foreign.cmdline is None and not foreign.own  # another PID namespace


def test_a_broken_listener_does_not_stop_sampling():
    sampler, _, _ = make()

    def broken(sample):
        raise RuntimeError("boom")

    sampler.add_listener(broken)
    sampler.run(max_ticks=3)
    assert len(sampler.history) == 3 and "boom" in sampler.last_error
    sampler.remove_listener(broken)
    sampler.remove_listener(broken)


# ---------------------------------------------------------------- the thread
def test_thread_start_stop_real_clock():
    gpu = FakeGpuBackend("2x4090")
    sampler = Sampler(gpu, FakeHostBackend(), interval_s=0.1)
    got = threading.Event()
    sampler.add_listener(lambda s: got.set() if s.seq >= 2 else None)
    with sampler:
        assert sampler.running
        with pytest.raises(RuntimeError):
            sampler.start()
        assert got.wait(5.0)
    assert not sampler.running
    assert not [t for t in threading.enumerate() if t.name == "advisor-sampler"]
    n = len(sampler.history)
    time.sleep(0.15)
    assert len(sampler.history) == n and n >= 3
    t = sampler.history.window("cpu_util_pct")[0]
    assert np.all(np.abs(np.diff(t) - 0.1) < 0.09)


def test_stop_interrupts_a_long_wait():
    sampler = Sampler(FakeGpuBackend("2x4090"), FakeHostBackend(), interval_s=10.0)
    sampler.start()
    deadline = time.monotonic() + 5
    while sampler.latest() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    began = time.monotonic()
    sampler.stop()
    assert time.monotonic() - began < 1.0 and not sampler.running
