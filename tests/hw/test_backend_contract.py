"""One contract, every backend: the fake scenarios, the null backend, NVML over a stub, AMD SMI over a stub,
Intel over a recorded sysfs tree, Apple over recorded ioreg output, and real NVML (``--run-gpu``).
Whatever the hardware, a backend answers with typed records and never raises."""

from __future__ import annotations

import dataclasses
import math

import pytest

from advisor.hw import GPU_LOST, GPU_OK, GPU_SUSPENDED, BackendStatus, GpuBackend, GpuInfo, GpuProcess, GpuSample
from advisor.hw.fake import SCENARIOS, FakeGpuBackend, FakeHostBackend
from advisor.hw.host import PsutilHostBackend
from advisor.hw.null import NullGpuBackend
from advisor.hw.records import GPU_NOT_RESPONDING, HostInfo, HostProcess, HostSample
from tests.hw.amdsmi_stub import StubAmdSmi, mi300x
from tests.hw.nvml_stub import StubNvml, h100, rtx4090
from tests.hw.vendor_fixtures import apple_run, intel_tree

STATES = {GPU_OK, GPU_LOST, GPU_SUSPENDED, GPU_NOT_RESPONDING}
NAMES = ("nvml", "amdsmi", "intel", "apple", "fake", "none")
VENDORS = ("nvidia", "amd", "intel", "apple")


def _nvml_stub():
    from advisor.hw.nvml import NvmlBackend

    return NvmlBackend.open(StubNvml([rtx4090(), h100(1)]))


def _amd_stub():
    from advisor.hw.amd import AmdSmiBackend

    return AmdSmiBackend.open(StubAmdSmi([mi300x(), mi300x(1)]))


def _intel_recorded(tmp_path):
    from advisor.hw.intel import IntelSysfsBackend

    drm, xpu = intel_tree(tmp_path)
    return IntelSysfsBackend.open(drm, run=lambda argv: xpu)


def _apple_recorded():
    from advisor.hw.apple import AppleGpuBackend

    return AppleGpuBackend.open(apple_run, system="Darwin", machine="arm64")


def _nvml_real():
    from advisor.hw.nvml import NvmlBackend

    return NvmlBackend.open()


BACKENDS = [pytest.param(lambda name=name: FakeGpuBackend(name), id=f"fake-{name}") for name in SCENARIOS] + [
    pytest.param(lambda: NullGpuBackend("no driver"), id="null"),
    pytest.param(_nvml_stub, id="nvml-stub"),
    pytest.param(_amd_stub, id="amdsmi-stub"),
    pytest.param(_intel_recorded, id="intel-recorded"),
    pytest.param(_apple_recorded, id="apple-recorded"),
    pytest.param(_nvml_real, id="nvml-real", marks=pytest.mark.gpu),
]


@pytest.fixture(params=BACKENDS)
def backend(request, tmp_path):
    factory = request.param
    b = factory(tmp_path) if factory is _intel_recorded else factory()
    yield b
    b.close()


def _check_figure(name: str, value) -> None:
    if value is None:
        return
    assert isinstance(value, (int, float)) and not isinstance(value, bool), name
    assert math.isfinite(value) and value >= 0, f"{name} = {value}"
    if name.endswith("_pct"):
        assert value <= 100, f"{name} = {value}"


def test_is_a_gpu_backend(backend):
    assert isinstance(backend, GpuBackend)
    assert backend.name in NAMES
    assert backend.simulated == (backend.name == "fake")


def test_status_says_what_and_whether_simulated(backend):
    status = backend.status()
    assert isinstance(status, BackendStatus)
    assert status.name == backend.name and status.status.strip()
    assert status.simulated == backend.simulated
    if backend.simulated:
        assert "simulated" in status.status


def test_gpu_info_is_typed_and_frozen(backend):
    for i in range(backend.device_count()):
        info = backend.gpu_info(i)
        assert isinstance(info, GpuInfo) and info.index == i
        assert isinstance(info.name, str) and info.name
        assert info.state in STATES and info.vendor in VENDORS
        with pytest.raises(dataclasses.FrozenInstanceError):
            info.name = "x"
        if info.memory_total_bytes is not None:
            assert info.memory_total_bytes > 2**30
        bw = info.nvml_mem_bandwidth_bps
        assert bw is None or 1e11 < bw < 2e13


def test_samples_are_plausible_and_never_raise(backend):
    for _ in range(3):
        for i in range(backend.device_count()):
            s = backend.sample(i)
            assert isinstance(s, GpuSample) and s.index == i and s.state in STATES
            for f in dataclasses.fields(GpuSample):
                if f.name not in ("index", "state", "throttle_reasons"):
                    _check_figure(f.name, getattr(s, f.name))
            if s.state != GPU_OK:
                assert s.util_pct is None and s.power_w is None and s.mem_used_bytes is None
            if s.mem_used_bytes is not None and s.mem_total_bytes is not None:
                assert s.mem_used_bytes <= s.mem_total_bytes
            assert s.throttle_reasons is None or all(isinstance(r, str) for r in s.throttle_reasons)


def test_processes_and_runtime_status(backend):
    for i in range(backend.device_count()):
        procs = backend.processes(i)
        assert isinstance(procs, tuple)
        for p in procs:
            assert isinstance(p, GpuProcess) and p.pid > 0 and p.gpu_index == i
            assert p.gpu_mem_bytes is None or p.gpu_mem_bytes >= 0
        rs = backend.runtime_status(i)
        assert rs is None or isinstance(rs, str)


def test_out_of_range_device_count_is_zero_or_more(backend):
    assert backend.device_count() >= 0
    backend.close()
    backend.close()  # idempotent


# ---------------------------------------------------------------- host backends
@pytest.fixture(params=[pytest.param(PsutilHostBackend, id="psutil"), pytest.param(FakeHostBackend, id="fake")])
def host(request):
    return request.param()


def test_host_contract(host):
    info = host.info()
    assert isinstance(info, HostInfo)
    assert info.cpu.logical_cores >= 1 and info.cpu.model
    assert info.memory.total_bytes >= info.memory.available_bytes > 0
    host.sample()
    s = host.sample()
    assert isinstance(s, HostSample)
    assert 0 <= s.cpu_util_pct <= 100
    assert len(s.per_core_util_pct) == info.cpu.logical_cores
    assert 0 < s.mem_used_bytes <= s.mem_total_bytes
    for name in ("disk_read_bps", "disk_write_bps", "net_rx_bps", "net_tx_bps"):
        value = getattr(s, name)
        assert value is None or value >= 0


def test_host_process_details(host):
    import os

    me = host.process_details(os.getpid())
    assert isinstance(me, HostProcess) and me.name and me.user and me.rss_bytes > 0 and me.own
    assert me.cmdline and me.started_s > 1e9
    assert host.process_details(2**22 + 12345) == HostProcess()  # not a PID here
    assert host.signal_process(2**22 + 12345) is not None and not host.process_alive(2**22 + 12345)
