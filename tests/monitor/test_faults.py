"""Faults while monitoring: a hung driver call, a lost GPU with its Xid, throttling, and sleeping GPUs
that nothing may wake (detection, app start, sampling, ``--once``)."""

from __future__ import annotations

import json
import threading

import pytest

from advisor.cli import main
from advisor.hw import GPU_LOST, GPU_OK, GPU_SUSPENDED, detect_machine
from advisor.hw.fake import LOST_AFTER_S, FakeGpuBackend, FakeHostBackend
from advisor.hw.records import GPU_NOT_RESPONDING
from advisor.monitor import Sampler
from tests.hw.nvml_stub import StubNvml, h100, rtx4090
from tests.monitor.fakeclock import FakeClock


def _sampler(gpu, clock, **kw):
    return Sampler(gpu, FakeHostBackend(clock), interval_s=0.5, clock=clock, wall_clock=lambda: 1.7e9 + clock.now,
                   wait=clock.advance, **kw)


def test_a_hung_call_marks_one_gpu_not_responding_and_the_others_keep_sampling():
    clock = FakeClock()
    gpu = FakeGpuBackend("8xh100-sxm", clock=clock)
    gpu.hang, gpu.hung = threading.Event(), {3}
    sampler = _sampler(gpu, clock, call_timeout_s=0.05)
    try:
        sampler.run(max_ticks=4)
        samples = sampler.drain()
        assert all(s.gpus[3].state == GPU_NOT_RESPONDING and s.gpus[3].util_pct is None for s in samples)
        assert all(g.state == GPU_OK and g.util_pct is not None for s in samples for g in s.gpus if g.index != 3)
        assert gpu.queries[3] == 1  # asked once; not again while that call hangs
        assert gpu.queries[0] >= 4
        gpu.hung.clear()
        gpu.hang.set()  # the call returns at last
        for _ in range(100):
            sampler.run(max_ticks=1)
            if sampler.latest().gpus[3].state == GPU_OK:
                break
        assert sampler.latest().gpus[3].state == GPU_OK
    finally:
        gpu.hang.set()
        sampler.stop()


def test_two_hung_gpus_hold_only_themselves_and_the_reads_share_one_thread():
    """The reader asks the GPUs in turn on one thread: GPUs 2 and 5 hang in the first tick, each keeps the thread
    it hangs in, and the GPUs after each are read on a new thread in the same tick; every later tick reads the
    six others on one thread, without asking 2 or 5 again while they hang."""
    clock = FakeClock()
    gpu = FakeGpuBackend("8xh100-sxm", clock=clock)
    gpu.hang, gpu.hung = threading.Event(), {2, 5}
    before = set(threading.enumerate())
    sampler = _sampler(gpu, clock, call_timeout_s=0.05)
    try:
        sampler.run(max_ticks=3)
        samples = sampler.drain()
        for s in samples:
            assert [g.state for g in s.gpus] == [GPU_OK, GPU_OK, GPU_NOT_RESPONDING, GPU_OK, GPU_OK,
                                                 GPU_NOT_RESPONDING, GPU_OK, GPU_OK]
        assert gpu.queries[2] == 1 and gpu.queries[5] == 1
        assert all(gpu.queries[i] >= 3 for i in (0, 1, 3, 4, 6, 7))
        readers = [t for t in threading.enumerate() if t.name == "advisor-gpus" and t not in before]
        assert len(readers) == 3  # one for each hung call, one reading the others
    finally:
        gpu.hang.set()
        sampler.stop()


def test_a_read_that_raises_is_raised_to_the_sampler():
    from advisor.monitor.calls import GpuReader

    def read(i):
        if i == 1:
            raise RuntimeError("driver said no")
        return i * 10

    reader = GpuReader()
    try:
        assert reader.read(lambda i: i * 10, [0, 1, 2], 1.0) == {0: 0, 1: 10, 2: 20}
        with pytest.raises(RuntimeError, match="driver said no"):
            reader.read(read, [0, 1, 2], 1.0)
    finally:
        reader.close()


def test_a_hung_nvml_call_holds_only_its_own_gpu():
    from advisor.hw.nvml import NvmlBackend

    nvml = StubNvml([rtx4090(), h100(1)])
    backend = NvmlBackend.open(nvml)
    release = threading.Event()
    nvml.hangs[1] = release
    clock = FakeClock()
    sampler = _sampler(backend, clock, call_timeout_s=0.05)
    try:
        sampler.run(max_ticks=2)
        last = sampler.latest()
        assert last.gpus[0].state == GPU_OK and last.gpus[0].util_pct == 37.0
        assert last.gpus[1].state == GPU_NOT_RESPONDING
    finally:
        release.set()
        sampler.stop()


def test_gpu_lost_mid_run_reports_xid_79_once_and_the_rest_keep_sampling():
    clock = FakeClock()
    sampler = _sampler(FakeGpuBackend("gpu-lost", clock=clock), clock)
    sampler.run(duration_s=LOST_AFTER_S + 1.5)
    samples = sampler.drain()
    xids = [(s.time_s, s.gpus[1].xid) for s in samples if s.gpus[1].xid is not None]
    assert xids == [(LOST_AFTER_S, 79)]
    assert samples[-1].gpus[1].state == GPU_LOST and samples[-1].gpus[0].util_pct is not None
    assert any("hw_thermal" in (s.gpus[0].throttle_reasons or ()) for s in samples)


# ---------------------------------------------------------------- never wake a sleeping GPU
def test_detection_and_monitoring_never_query_a_suspended_gpu(capsys):
    gpu = FakeGpuBackend("laptop-4060")
    profile = detect_machine(gpu, FakeHostBackend())
    assert profile.gpus[0].info.state == GPU_SUSPENDED and "asleep" in profile.gpus[0].info.name
    assert profile.gpus[0].catalog_id == "rtx-4060-laptop" and gpu.queries == [0]  # named without waking it
    clock = FakeClock()
    sampler = _sampler(gpu, clock)
    sampler.run(max_ticks=5)
    assert gpu.queries == [0] and gpu.wakeups == 0
    assert main(["monitor", "--once", "--json", "--fake-gpu", "laptop-4060"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["gpus"][0]["state"] == "asleep" and doc["gpus"][0]["util_pct"] is None
    assert main(["detect", "--json", "--fake-gpu", "laptop-4060"]) == 0
    assert json.loads(capsys.readouterr().out)["gpus"][0]["state"] == GPU_SUSPENDED


def test_app_start_does_not_wake_it():
    from advisor.gui.context import open_hardware

    gpu, host, profile = open_hardware("laptop-4060", None)
    try:
        assert gpu.queries == [0] and profile.gpus[0].info.state == GPU_SUSPENDED
    finally:
        gpu.close()


def test_nvml_detection_reads_sysfs_first(tmp_path):
    from advisor.hw.nvml import NvmlBackend

    root = tmp_path / "pci"
    dev = root / "0000:01:00.0"
    (dev / "power").mkdir(parents=True)
    (dev / "vendor").write_text("0x10de\n")
    (dev / "class").write_text("0x030200\n")
    (dev / "power" / "runtime_status").write_text("suspended\n")
    nvml = StubNvml([rtx4090()])
    backend = NvmlBackend.open(nvml, sysfs_root=root)
    detect_machine(backend, FakeHostBackend(), frameworks=False)
    assert backend.gpu_info(0).state == GPU_SUSPENDED
    assert nvml.device_calls(0) == 0
