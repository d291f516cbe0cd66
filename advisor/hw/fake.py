"""Simulated hardware: named GPU scenarios and a deterministic host, for demos, tests and benchmarks.

Readings are smooth functions of time (from an injectable clock), so a chart moves and a test can
predict every figure. Every status line and profile built from these backends says "simulated".

Scenarios (``SCENARIOS``):
    2x4090         two GeForce RTX 4090 on PCIe 4.0 x16
    8xh100-sxm     eight H100 SXM5 80GB with 18 NVLinks each
    laptop-4060    a laptop RTX 4060 in runtime suspend; polling it wakes it (``wakeups`` counts that)
    no-driver      no NVIDIA driver: zero devices
    gpu-lost       two RTX 4090; GPU 1 falls off the bus ``LOST_AFTER_S`` seconds after opening
    not-supported  an RTX 3060 whose driver reports only utilisation and memory
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from advisor.hw.records import (
    GPU_LOST,
    BackendStatus,
    CpuInfo,
    DiskInfo,
    GpuInfo,
    GpuProcess,
    GpuSample,
    HostInfo,
    HostSample,
    MemoryInfo,
)

MIB = 2**20
GIB = 2**30
LOST_AFTER_S = 2.0
WAKE_HOLD_S = 5.0  # a woken laptop GPU autosuspends again after this long


@dataclass(frozen=True)
class _Model:
    info: GpuInfo
    idle_power_w: float | None
    full_only: bool = True  # False: only utilisation and memory are reported (the rest "not supported")


_RTX4090 = GpuInfo(
    index=0, name="NVIDIA GeForce RTX 4090", uuid="", memory_total_bytes=24564 * MIB,
    compute_capability=(8, 9), power_limit_w=450.0, max_sm_clock_mhz=3120.0, max_mem_clock_mhz=10501.0,
    mem_bus_width_bits=384, cuda_cores=16384, pcie_gen_max=4, pcie_width_max=16, pcie_gen_current=4, pcie_width_current=16,
    nvlink_links_active=None, mig_enabled=None, ecc_enabled=None, fan_count=1)
_H100 = GpuInfo(
    index=0, name="NVIDIA H100 80GB HBM3", uuid="", memory_total_bytes=81559 * MIB,
    compute_capability=(9, 0), power_limit_w=700.0, max_sm_clock_mhz=1980.0, max_mem_clock_mhz=2619.0,
    mem_bus_width_bits=5120, cuda_cores=16896, pcie_gen_max=5, pcie_width_max=16, pcie_gen_current=5, pcie_width_current=16,
    nvlink_links_active=18, mig_enabled=False, ecc_enabled=True, fan_count=0)
_RTX4060_LAPTOP = GpuInfo(
    index=0, name="NVIDIA GeForce RTX 4060 Laptop GPU", uuid="", memory_total_bytes=8188 * MIB,
    compute_capability=(8, 9), power_limit_w=115.0, max_sm_clock_mhz=3105.0, max_mem_clock_mhz=8001.0,
    mem_bus_width_bits=128, cuda_cores=3072, pcie_gen_max=4, pcie_width_max=8, pcie_gen_current=1, pcie_width_current=8,
    nvlink_links_active=None, mig_enabled=None, ecc_enabled=None, fan_count=0)
_RTX3060_BARE = GpuInfo(
    index=0, name="NVIDIA GeForce RTX 3060", uuid="", memory_total_bytes=12288 * MIB,
    compute_capability=(8, 6))

_SCENARIO_GPUS: dict[str, tuple[tuple[GpuInfo, float | None, bool], ...]] = {
    "2x4090": ((_RTX4090, 25.0, True),) * 2,
    "8xh100-sxm": ((_H100, 70.0, True),) * 8,
    "laptop-4060": ((_RTX4060_LAPTOP, 3.0, True),),
    "no-driver": (),
    "gpu-lost": ((_RTX4090, 25.0, True),) * 2,
    "not-supported": ((_RTX3060_BARE, None, False),),
}
SCENARIOS: tuple[str, ...] = tuple(_SCENARIO_GPUS)


def _uuid(scenario: str, index: int) -> str:
    digest = sum(ord(c) * (k + 1) for k, c in enumerate(scenario)) & 0xFFFFFFFF
    return f"GPU-{digest:08x}-fa4e-4000-8000-{index:012x}"


class FakeGpuBackend:
    """A simulated GPU backend playing one of ``SCENARIOS``.

    Args:
        scenario: scenario name.
        clock: monotonic seconds; readings are functions of the time since the backend was opened.
    Raises:
        KeyError: unknown scenario (``advisor.hw.select_backend`` checks the name first).
    """

    name = "fake"
    simulated = True

    def __init__(self, scenario: str, clock: Callable[[], float] = time.monotonic) -> None:
        gpus = _SCENARIO_GPUS[scenario]
        self.scenario = scenario
        self._clock = clock
        self._t0 = clock()
        self._models = [
            _Model(replace(info, index=i, uuid=_uuid(scenario, i), pci_bus_id=f"00000000:{0x17 + 0x10 * i:02X}:00.0"),
                   idle, full)
            for i, (info, idle, full) in enumerate(gpus)
        ]
        self._awake_until = -math.inf  # laptop-4060: when the last wake-up wears off
        self.wakeups = 0
        self.sample_calls = 0
        self.closed = False

    def _t(self) -> float:
        return self._clock() - self._t0

    def status(self) -> BackendStatus:
        if self.scenario == "no-driver":
            text = "simulated hardware (scenario no-driver): NVIDIA driver not found"
        else:
            text = f"simulated hardware (scenario {self.scenario}): {len(self._models)} GPU(s)"
        return BackendStatus(name=self.name, status=text, simulated=True, scenario=self.scenario,
                             driver_version=None if self.scenario == "no-driver" else "550.54.15",
                             cuda_driver_version=None if self.scenario == "no-driver" else "12.4",
                             nvml_version=None if self.scenario == "no-driver" else "12.550.54.15")

    def device_count(self) -> int:
        return len(self._models)

    def _lost(self, index: int) -> bool:
        return self.scenario == "gpu-lost" and index == 1 and self._t() >= LOST_AFTER_S

    def gpu_info(self, index: int) -> GpuInfo:
        info = self._models[index].info
        return replace(info, state=GPU_LOST) if self._lost(index) else info

    def runtime_status(self, index: int) -> str | None:
        if self.scenario != "laptop-4060":
            return "active"
        return "active" if self._clock() < self._awake_until else "suspended"

    def sample(self, index: int) -> GpuSample:
        self.sample_calls += 1
        if self._lost(index):
            return GpuSample(index=index, state=GPU_LOST)
        if self.scenario == "laptop-4060" and self.runtime_status(index) == "suspended":
            self.wakeups += 1  # a real driver query would have woken the dGPU
        if self.scenario == "laptop-4060":
            self._awake_until = self._clock() + WAKE_HOLD_S
        model = self._models[index]
        info = model.info
        t = self._t()
        load = 0.5 + 0.45 * math.sin(2 * math.pi * t / 20.0 + index)  # 0.05 .. 0.95
        util = round(100 * load, 1)
        total = info.memory_total_bytes or 0
        used = int(total * (0.25 + 0.2 * math.sin(2 * math.pi * t / 60.0 + index))) // MIB * MIB
        if not model.full_only:
            return GpuSample(index=index, util_pct=util, mem_used_bytes=used, mem_total_bytes=total)
        limit = info.power_limit_w or 0.0
        idle = model.idle_power_w or 0.0
        power = round(idle + (limit - idle) * load, 2)
        mean_power = idle + (limit - idle) * 0.5
        return GpuSample(
            index=index, util_pct=util, mem_util_pct=round(util * 0.6, 1), mem_used_bytes=used, mem_total_bytes=total,
            temp_c=round(35 + 45 * load, 1), power_w=power, power_limit_w=limit,
            energy_j=round(1.0e6 * (index + 1) + mean_power * t, 3),
            sm_clock_mhz=round((info.max_sm_clock_mhz or 0) * (0.4 + 0.55 * load)),
            mem_clock_mhz=info.max_mem_clock_mhz,
            fan_pct=round(30 + 60 * load, 1) if info.fan_count else None,
            pcie_rx_bps=round(2e9 * load, 0), pcie_tx_bps=round(0.5e9 * load, 0),
            throttle_reasons=("sw_power_cap",) if load > 0.9 else (),
            ecc_corrected=0 if info.ecc_enabled else None, ecc_uncorrected=0 if info.ecc_enabled else None,
        )

    def processes(self, index: int) -> tuple[GpuProcess, ...]:
        if self._lost(index) or not self._models[index].full_only or self.runtime_status(index) == "suspended":
            return ()
        total = self._models[index].info.memory_total_bytes or 0
        # This process (it maps to a real name) and one PID from another namespace (it does not).
        return (GpuProcess(pid=os.getpid(), gpu_index=index, gpu_mem_bytes=total // 8 // MIB * MIB),
                GpuProcess(pid=4_000_000 + index, gpu_index=index, gpu_mem_bytes=total // 16 // MIB * MIB))

    def close(self) -> None:
        self.closed = True


class FakeHostBackend:
    """A deterministic host: 8 cores, 64 GiB, readings that follow the clock (for tests and benchmarks)."""

    simulated = True

    def __init__(self, clock: Callable[[], float] = time.monotonic, cores: int = 8,
                 host_ids: tuple[str, ...] = ("machine-id:5151515151515151515151515151515a",)) -> None:
        self._host_ids = host_ids
        self._clock = clock
        self._t0 = clock()
        self._cores = cores
        self.sample_calls = 0

    def info(self) -> HostInfo:
        return HostInfo(
            hostname="simulated-host", os="Linux (simulated)", python="3",
            cpu=CpuInfo(model="Simulated CPU", physical_cores=self._cores // 2, logical_cores=self._cores,
                        arch="x86_64", min_freq_mhz=800.0, max_freq_mhz=5000.0),
            memory=MemoryInfo(total_bytes=64 * GIB, available_bytes=48 * GIB, swap_total_bytes=8 * GIB,
                              swap_used_bytes=0),
            disks=(DiskInfo("/", "/dev/fake0", "ext4", 1000 * 10**9, 400 * 10**9),), host_ids=self._host_ids)

    def sample(self) -> HostSample:
        self.sample_calls += 1
        t = self._clock() - self._t0
        per_core = tuple(round(50 + 40 * math.sin(t / 10 + k), 1) for k in range(self._cores))
        return HostSample(
            cpu_util_pct=round(sum(per_core) / self._cores, 2), per_core_util_pct=per_core, cpu_freq_mhz=3000.0,
            mem_used_bytes=16 * GIB, mem_total_bytes=64 * GIB, mem_available_bytes=48 * GIB, swap_used_bytes=0,
            disk_read_bps=1e6, disk_write_bps=2e6, net_rx_bps=3e6, net_tx_bps=4e6)

    def process_details(self, pid: int) -> tuple[str | None, str | None, float | None, int | None]:
        if pid == os.getpid():
            return ("python", "user", 1.0, 100 * MIB)
        return (None, None, None, None)
