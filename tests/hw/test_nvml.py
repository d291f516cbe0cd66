"""The NVML backend against a stubbed pynvml, one failure scenario per test."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest

from advisor.hw import GPU_LOST, GPU_SUSPENDED
from advisor.hw.detect import select_backend
from advisor.hw.fake import FakeHostBackend
from advisor.hw.null import NullGpuBackend
from advisor.hw.nvml import GpuLostError, NvmlBackend, NvmlUnavailable, bad_process_pair, nvml_query
from advisor.monitor import Sampler
from tests.hw import nvml_stub as stub
from tests.hw.nvml_stub import StubNvml, h100, rtx4090

MIB = 2**20


def open_stub(*devices, **kw) -> tuple[NvmlBackend, StubNvml]:
    nvml = StubNvml(list(devices), **{k: v for k, v in kw.items() if k in ("driver", "cuda", "init_error")})
    backend = NvmlBackend.open(nvml, **{k: v for k, v in kw.items() if k in ("sysfs_root", "binding_version")})
    return backend, nvml


# ---------------------------------------------------------------- opening
def test_no_binding_installed_gives_null_backend(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml -> ImportError
    with pytest.raises(NvmlUnavailable, match="nvidia-ml-py"):
        NvmlBackend.open()
    backend = select_backend(None, env={})
    assert isinstance(backend, NullGpuBackend)
    assert backend.status().name == "none"
    assert "nvidia-ml-py" in backend.status().status
    assert backend.device_count() == 0


@pytest.mark.parametrize("code, words", [
    (stub.LIBRARY_NOT_FOUND, "driver not found"),
    (stub.DRIVER_NOT_LOADED, "driver not loaded"),
    (stub.NO_PERMISSION, "no permission"),
    (stub.LIB_RM_VERSION_MISMATCH, "version mismatch"),
    (stub.UNKNOWN, "error 999"),
])
def test_init_failures_name_their_reason(code, words):
    with pytest.raises(NvmlUnavailable, match=words):
        NvmlBackend.open(StubNvml([rtx4090()], init_error=code))


def test_driver_library_mismatch_through_select_backend(monkeypatch):
    import advisor.hw.nvml as nvml_mod

    monkeypatch.setattr(nvml_mod, "_import_pynvml", lambda: StubNvml([rtx4090()], init_error=stub.LIB_RM_VERSION_MISMATCH))
    backend = select_backend(None, env={})
    assert isinstance(backend, NullGpuBackend)
    assert "reboot" in backend.status().status


def test_driver_without_gpus_is_unavailable():
    with pytest.raises(NvmlUnavailable, match="no GPU found"):
        NvmlBackend.open(StubNvml([]))


# ---------------------------------------------------------------- healthy devices
def test_rtx4090_facts_and_sample():
    backend, _ = open_stub(rtx4090(), binding_version="13.0")
    info = backend.gpu_info(0)
    assert info.name == "NVIDIA GeForce RTX 4090"
    assert info.memory_total_bytes == 24564 * MIB
    assert info.compute_capability == (8, 9)
    assert info.power_limit_w == 450.0
    assert (info.max_mem_clock_mhz, info.mem_bus_width_bits) == (10501, 384)
    assert info.nvml_mem_bandwidth_bps == pytest.approx(1008.096e9)  # 10501e6 * 384 * 2 / 8
    assert (info.pcie_gen_max, info.pcie_width_max) == (4, 16)
    assert info.nvlink_links_active is None and info.mig_enabled is None and info.ecc_enabled is None
    s = backend.sample(0)
    assert s.state == "ok"
    assert s.util_pct == 37 and s.mem_util_pct == 12
    assert s.mem_used_bytes == 1024 * MIB
    assert s.power_w == pytest.approx(123.456)
    assert s.energy_j == pytest.approx(5000.0)
    assert (s.sm_clock_mhz, s.mem_clock_mhz, s.temp_c, s.fan_pct) == (2520, 10501, 51, 41)
    assert (s.pcie_rx_bps, s.pcie_tx_bps) == (2000 * 1024, 1000 * 1024)
    assert s.throttle_reasons == ("gpu_idle", "sw_power_cap")
    assert s.ecc_corrected is None
    status = backend.status()
    assert status.name == "nvml" and not status.simulated
    assert status.driver_version == "550.54.15" and status.cuda_driver_version == "12.4"
    assert "1 GPU" in status.status


def test_h100_nvlink_mig_ecc_and_bandwidth():
    backend, _ = open_stub(*[h100(i) for i in range(8)])
    assert backend.device_count() == 8
    info = backend.gpu_info(7)
    assert info.nvml_mem_bandwidth_bps == pytest.approx(3352.32e9)  # 2619e6 * 5120 * 2 / 8
    assert info.nvlink_links_active == 18
    assert info.mig_enabled is False and info.ecc_enabled is True
    assert info.fan_count == 0
    s = backend.sample(7)
    assert s.fan_pct is None  # no fan on an SXM module: not supported, not zero
    assert s.ecc_corrected == 0 and s.ecc_uncorrected == 0


# ---------------------------------------------------------------- not available
def test_not_supported_everywhere_gives_none_not_errors():
    bare = {k: None for k in rtx4090()}
    bare.update(name="NVIDIA Jetson-like", uuid="GPU-0", procs=[], gfx_procs=[])
    backend, _ = open_stub(bare)
    info = backend.gpu_info(0)
    assert info.name == "NVIDIA Jetson-like" and info.memory_total_bytes is None
    assert info.nvml_mem_bandwidth_bps is None
    s = backend.sample(0)
    assert s.state == "ok"
    figures = [v for k, v in vars(s).items() if k not in ("index", "state")]
    assert figures == [None] * len(figures)
    assert backend.processes(0) == ()


def test_no_permission_on_one_figure():
    backend, nvml = open_stub(rtx4090())
    nvml.fail("nvmlDeviceGetPowerUsage", stub.NO_PERMISSION)
    nvml.fail("nvmlDeviceGetTotalEnergyConsumption", stub.NO_PERMISSION)
    s = backend.sample(0)
    assert s.power_w is None and s.energy_j is None
    assert s.util_pct == 37 and s.temp_c == 51


def test_function_not_found_in_old_binding_or_driver():
    backend, nvml = open_stub(rtx4090())
    nvml.remove("nvmlDeviceGetCurrentClocksEventReasons")  # an older binding: only the throttle name
    assert backend.sample(0).throttle_reasons == ("gpu_idle", "sw_power_cap")
    nvml.remove("nvmlDeviceGetCurrentClocksThrottleReasons")
    nvml.fail("nvmlDeviceGetTotalEnergyConsumption", stub.FUNCTION_NOT_FOUND)  # an older driver
    s = backend.sample(0)
    assert s.throttle_reasons is None and s.energy_j is None and s.power_w is not None


def test_nvml_query_maps_errors():
    nvml = StubNvml([rtx4090()])
    nvml.nvmlInit()
    errors: list[int] = []
    nvml.fail("nvmlDeviceGetPowerUsage", stub.UNKNOWN)
    assert nvml_query(nvml, "nvmlDeviceGetPowerUsage", 0, errors=errors) is None
    assert nvml_query(nvml, "nvmlNoSuchFunction", errors=errors) is None
    assert errors == [stub.UNKNOWN, stub.FUNCTION_NOT_FOUND]
    nvml.lose(0)
    with pytest.raises(GpuLostError):
        nvml_query(nvml, "nvmlDeviceGetTemperature", 0, 0)


# ---------------------------------------------------------------- lost GPU
def test_gpu_lost_while_monitoring_becomes_unavailable_device():
    backend, nvml = open_stub(h100(0), h100(1))
    name = backend.gpu_info(1).name
    assert backend.sample(1).state == "ok"
    nvml.lose(1)
    s = backend.sample(1)
    assert s.state == GPU_LOST and s.util_pct is None and not s.available
    calls = nvml.device_calls(1)
    assert backend.sample(1).state == GPU_LOST
    assert backend.processes(1) == ()
    assert nvml.device_calls(1) == calls  # a lost device is not asked again
    info = backend.gpu_info(1)
    assert info.state == GPU_LOST and info.name == name
    assert backend.sample(0).state == "ok"  # the other GPU carries on
    assert "lost: 1" in backend.status().status


def test_gpu_lost_at_enumeration():
    nvml = StubNvml([rtx4090(), rtx4090(uuid="GPU-2")])
    nvml.fail("nvmlDeviceGetHandleByIndex", stub.GPU_IS_LOST, index=1)
    backend = NvmlBackend.open(nvml)
    assert backend.device_count() == 2
    assert backend.gpu_info(1).state == GPU_LOST
    assert backend.sample(1).state == GPU_LOST
    assert backend.gpu_info(0).state == "ok"


# ---------------------------------------------------------------- processes
def test_wddm_per_process_memory_not_available():
    procs = [SimpleNamespace(pid=4321, usedGpuMemory=None)]  # pynvml turns WDDM's NOT_AVAILABLE into None
    backend, _ = open_stub(rtx4090(procs=procs, gfx_procs=[SimpleNamespace(pid=99, usedGpuMemory=None)]))
    out = backend.processes(0)
    assert [(p.pid, p.gpu_mem_bytes, p.kind) for p in out] == [(4321, None, "compute"), (99, None, "graphics")]


def test_garbage_process_entries_are_dropped():
    backend, _ = open_stub(rtx4090(procs=[
        SimpleNamespace(pid=0, usedGpuMemory=1), SimpleNamespace(pid=2**40, usedGpuMemory=1),
        SimpleNamespace(pid=77, usedGpuMemory=2**62), SimpleNamespace(pid=78, usedGpuMemory=256 * MIB)]))
    backend.gpu_info(0)  # memory total known: an entry above it is implausible
    out = {p.pid: p.gpu_mem_bytes for p in backend.processes(0)}
    assert out == {77: None, 78: 256 * MIB}


@pytest.mark.parametrize("binding, driver, bad", [
    ("12.535.77", "535.54.03", True), ("12.535.77", "535.43.02", True), ("12.535.77", "535.86.05", True),
    ("12.535.77", "535.104.05", False), ("12.535.133", "535.54.03", False), ("12.535.77", "530.30.02", False),
    (None, "535.54.03", False), ("12.535.77", None, False), ("12.535.77", "garbage", False),
])
def test_bad_binding_driver_pair(binding, driver, bad):
    assert bad_process_pair(binding, driver) is bad


def test_bad_pair_disables_process_lists():
    backend, _ = open_stub(rtx4090(), driver="535.54.03", binding_version="12.535.77")
    assert backend.processes(0) == ()
    assert "per-process memory disabled" in backend.status().status
    assert backend.sample(0).state == "ok"


# ---------------------------------------------------------------- PCIe round robin, close
def test_pcie_throughput_asked_of_one_device_per_round():
    backend, nvml = open_stub(h100(0, pcie_rx_kib=10), h100(1, pcie_rx_kib=20))
    first = [backend.sample(0), backend.sample(1)]
    assert first[0].pcie_rx_bps == 10 * 1024 and first[1].pcie_rx_bps is None
    second = [backend.sample(0), backend.sample(1)]
    assert second[0].pcie_rx_bps == 10 * 1024 and second[1].pcie_rx_bps == 20 * 1024
    asked = [args for fn, args in nvml.calls if fn == "nvmlDeviceGetPcieThroughput"]
    assert asked == [(0,), (0,), (1,), (1,)]  # rx and tx of one device per round


def test_close_is_idempotent():
    backend, nvml = open_stub(rtx4090())
    backend.close()
    backend.close()
    assert [fn for fn, _ in nvml.calls].count("nvmlShutdown") == 1
    assert backend.sample(0).state == GPU_LOST  # after close nothing is read


# ---------------------------------------------------------------- laptop-safe
def _sysfs(root, bus: str, status: str):
    dev = root / bus
    (dev / "power").mkdir(parents=True)
    (dev / "vendor").write_text("0x10de\n")
    (dev / "class").write_text("0x030000\n")
    (dev / "power" / "runtime_status").write_text(status + "\n")
    return dev


def test_suspended_dgpu_is_not_polled(tmp_path):
    dev = _sysfs(tmp_path, "0000:01:00.0", "suspended")
    backend, nvml = open_stub(rtx4090(name="NVIDIA GeForce RTX 4060 Laptop GPU"), sysfs_root=tmp_path)
    assert backend.runtime_status(0) == "suspended"
    sampler = Sampler(backend, FakeHostBackend(), interval_s=0.1, wait=lambda s: None)
    before = nvml.device_calls(0)
    samples = [sampler.tick() for _ in range(3)]
    assert [s.gpus[0].state for s in samples] == [GPU_SUSPENDED] * 3
    assert nvml.device_calls(0) == before  # not one NVML call reached the sleeping GPU
    (dev / "power" / "runtime_status").write_text("active\n")
    assert sampler.tick().gpus[0].state == "ok"
    assert nvml.device_calls(0) > before


def test_not_supported_figures_are_not_asked_again():
    backend, nvml = open_stub(rtx4090())  # no ECC on a GeForce card
    for _ in range(3):
        assert backend.sample(0).ecc_corrected is None
    asked = [args for fn, args in nvml.calls if fn == "nvmlDeviceGetTotalEccErrors"]
    assert len(asked) == 2  # corrected and uncorrected, once each
    nvml.fail("nvmlDeviceGetPowerUsage", stub.NO_PERMISSION)  # may change (permissions): asked every time
    backend.sample(0)
    backend.sample(0)
    assert [fn for fn, _ in nvml.calls].count("nvmlDeviceGetPowerUsage") == 5


def test_bus_id_from_nvml_once_described(tmp_path):
    _sysfs(tmp_path, "0000:01:00.0", "active")
    _sysfs(tmp_path, "0000:02:00.0", "active")
    backend, _ = open_stub(rtx4090(bus="00000000:02:00.0"), rtx4090(bus="00000000:01:00.0", uuid="GPU-2"),
                           sysfs_root=tmp_path)
    backend.gpu_info(0), backend.gpu_info(1)
    (tmp_path / "0000:02:00.0" / "power" / "runtime_status").write_text("suspended\n")
    assert [backend.runtime_status(i) for i in (0, 1)] == ["suspended", "active"]  # NVML's own addresses after
