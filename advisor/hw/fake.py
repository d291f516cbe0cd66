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
    16xv100        sixteen Tesla V100 SXM3 32GB (a DGX-2): the many-GPU layout
    2xmi300x       two AMD Instinct MI300X (the amdsmi backend's figures)
    arc-b580       one Intel Arc B580 (sysfs/hwmon figures: no per-process memory)
    m3-max         an Apple M3 Max, unified memory (no-root figures: utilisation and memory in use;
                   power and temperature need root, so they are not available)
    hostile-names  two RTX 4090 on a shared server where everything outside the advisor's control is hostile:
                   GPU names, the driver version and other users' command lines hold rich markup, terminal
                   escapes, HTML, NUL, undecodable bytes, a bidi override and 100 kB of text (``HOSTILE_NAMES``);
                   every output must show them as inert text (``advisor.untrusted``)

Every query that would reach a driver (``gpu_info``, ``sample``, ``processes``) is counted per GPU in
``queries``; ``runtime_status`` reads "sysfs" and is not, so a test can prove a sleeping GPU got none.
Processes come from fake PIDs (3_900_000 + i: this user's training job; 4_000_000 + i: another user's
server; 4_190_000: a PID from another namespace) that ``FakeHostBackend`` describes; it never signals a
real process.
"""

from __future__ import annotations

import getpass
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
    HostProcess,
    HostSample,
    MemoryInfo,
)
from advisor.hw.unified import apple_memory

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
_RTX3090 = GpuInfo(
    index=0, name="NVIDIA GeForce RTX 3090", uuid="", memory_total_bytes=24576 * MIB,
    compute_capability=(8, 6), power_limit_w=350.0, max_sm_clock_mhz=2100.0, max_mem_clock_mhz=9751.0,
    mem_bus_width_bits=384, cuda_cores=10496, pcie_gen_max=4, pcie_width_max=16, pcie_gen_current=4, pcie_width_current=16,
    nvlink_links_active=None, mig_enabled=None, ecc_enabled=None, fan_count=2)
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
_V100 = GpuInfo(
    index=0, name="Tesla V100-SXM3-32GB", uuid="", memory_total_bytes=32768 * MIB,
    compute_capability=(7, 0), power_limit_w=350.0, max_sm_clock_mhz=1597.0, max_mem_clock_mhz=958.0,
    mem_bus_width_bits=4096, pcie_gen_max=3, pcie_width_max=16, pcie_gen_current=3, pcie_width_current=16,
    nvlink_links_active=6, mig_enabled=None, ecc_enabled=True, fan_count=0)
# AMD Instinct MI300X: 192 GB HBM3 on 8192 bits at 5.2 GT/s (memory clock given as half the data rate),
# 750 W, 2100 MHz peak engine clock (AMD Instinct MI300X data sheet, 2023).
_MI300X = GpuInfo(
    index=0, name="AMD Instinct MI300X", uuid="", memory_total_bytes=192 * 1024 * MIB, power_limit_w=750.0,
    max_sm_clock_mhz=2100.0, max_mem_clock_mhz=2600.0, mem_bus_width_bits=8192, pcie_gen_max=5,
    pcie_width_max=16, pcie_gen_current=5, pcie_width_current=16, ecc_enabled=True, fan_count=0, vendor="amd")
# Intel Arc B580: 12 GB GDDR6 on 192 bits at 19 Gbps, 190 W total board power, 2670 MHz graphics clock
# (Intel Arc B580 product specifications, ark.intel.com, December 2024).
_ARC_B580 = GpuInfo(
    index=0, name="Intel Arc B580 Graphics", uuid="", memory_total_bytes=12 * 1024 * MIB, power_limit_w=190.0,
    max_sm_clock_mhz=2670.0, max_mem_clock_mhz=9500.0, mem_bus_width_bits=192, pcie_gen_max=4, pcie_width_max=8,
    pcie_gen_current=4, pcie_width_current=8, fan_count=2, vendor="intel")
# Apple M3 Max (40-core GPU): 128 GB unified LPDDR5 on 512 bits at 6400 MT/s = 400 GB/s
# (Apple, MacBook Pro (M3 Max) technical specifications, November 2023).
_M3_MAX = GpuInfo(
    index=0, name="Apple M3 Max", uuid="", memory_total_bytes=128 * 1024 * MIB, max_mem_clock_mhz=3200.0,
    mem_bus_width_bits=512, vendor="apple", backend_memory=apple_memory(128 * 1024 * MIB))

# What a name from outside can hold: rich markup (a MarkupError, or a clickable link), terminal escapes
# (window title, clear screen), HTML (Qt reads /dev/zero as an image), NUL, undecodable bytes (as Python
# keeps them: lone surrogates), a right-to-left override and 100 kB. The last one is the long one.
HOSTILE_NAMES: tuple[str, ...] = (
    "[/data/shards]", "[link=file:///etc/passwd]x[/link]", "\x1b]0;pwned\x07", "\x1b[2J", '<img src="/dev/zero">',
    "<font size=7>big</font>", "<a href=x>link</a>", "nul\x00byte", "bad\udcff\udcfeutf8", "\u202eevil",
    "L" * 100_000)
HOSTILE_PID_BASE = 4_300_000

# Names the PCI ID database (pci-ids.ucw.cz) gives the simulated parts, by their driver name.
_PCI_DB_NAMES = {
    "NVIDIA GeForce RTX 4060 Laptop GPU": "GeForce RTX 4060 Max-Q / Mobile",  # 10de:28a0 AD107M
    "NVIDIA GeForce RTX 4090": "GeForce RTX 4090",  # 10de:2684 AD102
    "NVIDIA GeForce RTX 3090": "GeForce RTX 3090",  # 10de:2204 GA102
}

_SCENARIO_GPUS: dict[str, tuple[tuple[GpuInfo, float | None, bool], ...]] = {
    "2x4090": ((_RTX4090, 25.0, True),) * 2,
    "4090+3090": ((_RTX4090, 25.0, True), (_RTX3090, 22.0, True)),
    "8xh100-sxm": ((_H100, 70.0, True),) * 8,
    "laptop-4060": ((_RTX4060_LAPTOP, 3.0, True),),
    "no-driver": (),
    "gpu-lost": ((_RTX4090, 25.0, True),) * 2,
    "not-supported": ((_RTX3060_BARE, None, False),),
    "16xv100": ((_V100, 45.0, True),) * 16,
    "2xmi300x": ((_MI300X, 140.0, True),) * 2,
    "arc-b580": ((_ARC_B580, 20.0, True),),
    "m3-max": ((_M3_MAX, 2.0, True),),
    "hostile-names": ((replace(_RTX4090, name="NVIDIA GeForce RTX 4090 " + " ".join(HOSTILE_NAMES[:-1])), 25.0, True),
                      (replace(_RTX4090, name="NVIDIA " + HOSTILE_NAMES[-1]), 25.0, True)),
}
_DRIVERS = {"amd": ("ROCm 6.2.0 (amdgpu 6.8.5)", None), "intel": ("xe (Linux 6.12)", None),
            "apple": ("macOS 14.5", None), "nvidia": ("550.54.15", "12.4"),
            "hostile": ("550.54.15 " + " ".join(HOSTILE_NAMES[:-1]), "12.4 \x1b[2J<img src=\"/dev/zero\">")}
OWN_PID_BASE = 3_900_000
OTHER_PID_BASE = 4_000_000
FOREIGN_PID = 4_190_000
_OWN_CMD = "python train.py --model llama-3-8b --workload lora --seq-len 4096 --micro-batch 4 --local-rank {i}"
_OTHER_CMD = ("python -m vllm.entrypoints.openai.api_server --model meta-llama/Llama-3.1-8B-Instruct "
              "--gpu-memory-utilization 0.35 --port {port}")
SCENARIOS: tuple[str, ...] = tuple(_SCENARIO_GPUS)


def _user() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError, ImportError):
        return "user"


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
        self.queries = [0] * len(self._models)  # driver queries per GPU (runtime_status is not one)
        self.hung: set[int] = set()  # GPUs whose driver calls hang (tests of the per-call timeout)
        self.hang = None  # a threading.Event the hung calls wait on (set it to release them)
        self._xid_sent: set[int] = set()
        self.closed = False

    def _query(self, index: int) -> None:
        """Count a driver query; wake a sleeping laptop GPU as a real driver call would."""
        self.queries[index] += 1
        if self.scenario == "laptop-4060":
            if self.runtime_status(index) == "suspended":
                self.wakeups += 1
            self._awake_until = self._clock() + WAKE_HOLD_S
        if index in self.hung and self.hang is not None:
            self.hang.wait(30.0)

    def _t(self) -> float:
        return self._clock() - self._t0

    def status(self) -> BackendStatus:
        if self.scenario == "no-driver":
            return BackendStatus(name=self.name, simulated=True, scenario=self.scenario,
                                 status="simulated hardware (scenario no-driver): NVIDIA driver not found")
        vendor = self._models[0].info.vendor
        text = f"simulated hardware (scenario {self.scenario}): {len(self._models)} GPU(s)"
        driver, cuda = _DRIVERS["hostile" if self.scenario == "hostile-names" else vendor]
        return BackendStatus(name=self.name, status=text, simulated=True, scenario=self.scenario,
                             driver_version=driver, cuda_driver_version=cuda,
                             nvml_version="12.550.54.15" if vendor == "nvidia" else None)

    def device_count(self) -> int:
        return len(self._models)

    def _lost(self, index: int) -> bool:
        return self.scenario == "gpu-lost" and index == 1 and self._t() >= LOST_AFTER_S

    def gpu_info(self, index: int) -> GpuInfo:
        self._query(index)
        info = self._models[index].info
        return replace(info, state=GPU_LOST) if self._lost(index) else info

    def pci_name(self, index: int) -> str | None:
        # What pci.ids says for the simulated part (10de:28a0 for the laptop RTX 4060); not a driver query.
        return _PCI_DB_NAMES.get(self._models[index].info.name)

    def runtime_status(self, index: int) -> str | None:
        if self.scenario != "laptop-4060":
            return "active"
        return "active" if self._clock() < self._awake_until else "suspended"

    def sample(self, index: int) -> GpuSample:
        self.sample_calls += 1
        self._query(index)
        if self._lost(index):
            # The driver logs Xid 79 ("fallen off the bus") once when the device goes.
            xid = None if index in self._xid_sent else 79
            self._xid_sent.add(index)
            return GpuSample(index=index, state=GPU_LOST, xid=xid)
        model = self._models[index]
        info = model.info
        t = self._t()
        load = 0.5 + 0.45 * math.sin(2 * math.pi * t / 20.0 + index)  # 0.05 .. 0.95
        util = round(100 * load, 1)
        total = info.memory_total_bytes or 0
        used = int(total * (0.25 + 0.2 * math.sin(2 * math.pi * t / 60.0 + index))) // MIB * MIB
        if not model.full_only:
            return GpuSample(index=index, util_pct=util, mem_used_bytes=used, mem_total_bytes=total)
        if info.vendor == "apple":  # no-root sources: GPU residency and memory in use, nothing else
            return GpuSample(index=index, util_pct=util, mem_used_bytes=used, mem_total_bytes=total,
                             sm_clock_mhz=round(1398 * (0.3 + 0.7 * load)))
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
            throttle_reasons=self._throttle(index, load),
            ecc_corrected=0 if info.ecc_enabled else None, ecc_uncorrected=0 if info.ecc_enabled else None,
        )

    def _throttle(self, index: int, load: float) -> tuple[str, ...]:
        reasons = ("sw_power_cap",) if load > 0.9 else ()
        if self.scenario == "gpu-lost" and index == 0 and 0.5 <= self._t() < LOST_AFTER_S:
            reasons += ("hw_thermal",)  # the failing machine runs hot first
        return reasons

    def processes(self, index: int) -> tuple[GpuProcess, ...]:
        if self._lost(index) or not self._models[index].full_only or self.runtime_status(index) == "suspended":
            return ()
        self._query(index)
        info = self._models[index].info
        total = info.memory_total_bytes or 0
        if info.vendor == "apple":
            return ()  # macOS gives no per-process GPU figures without root
        per_process = info.vendor != "intel"  # the Intel sysfs backend cannot attribute memory
        load = 0.5 + 0.45 * math.sin(2 * math.pi * self._t() / 20.0 + index)
        out = [GpuProcess(pid=OWN_PID_BASE + index, gpu_index=index,
                          gpu_mem_bytes=total // 8 // MIB * MIB if per_process else None,
                          gpu_util_pct=round(80 * load, 1) if per_process else None),
               GpuProcess(pid=OTHER_PID_BASE + index, gpu_index=index,
                          gpu_mem_bytes=total // 16 // MIB * MIB if per_process else None,
                          gpu_util_pct=round(15 * load, 1) if per_process else None)]
        if index == 0 and len(self._models) > 1:
            out.append(GpuProcess(pid=FOREIGN_PID, gpu_index=0, gpu_mem_bytes=512 * MIB if per_process else None))
        if index == 0 and self.scenario == "hostile-names":  # one neighbour per hostile command line
            out += [GpuProcess(pid=HOSTILE_PID_BASE + k, gpu_index=0, gpu_mem_bytes=(k + 1) * 64 * MIB, gpu_util_pct=1.0)
                    for k in range(len(HOSTILE_NAMES))]
        return tuple(out)

    def close(self) -> None:
        self.closed = True


class FakeHostBackend:
    """A deterministic host: 8 cores, 64 GiB, readings that follow the clock (for tests and benchmarks)."""

    simulated = True

    def __init__(self, clock: Callable[[], float] = time.monotonic, cores: int = 8,
                 host_ids: tuple[str, ...] = ("machine-id:5151515151515151515151515151515a",),
                 wall_clock: Callable[[], float] = time.time) -> None:
        self._host_ids = host_ids
        self._clock = clock
        self._wall0 = wall_clock()  # simulated processes started hours before the host was opened
        self._t0 = clock()
        self._cores = cores
        self.sample_calls = 0
        self.user = _user()
        self.signals: list[tuple[int, str]] = []  # (pid, "terminate" | "kill") asked of simulated processes
        self.ended: set[int] = set()
        self.stubborn: set[int] = set()  # simulated PIDs that ignore terminate (kill still ends them)

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

    def process_details(self, pid: int) -> HostProcess:
        """The simulated processes of ``FakeGpuBackend`` (and this process); an empty record otherwise."""
        t = self._clock() - self._t0
        if pid in self.ended:
            return HostProcess()
        if OWN_PID_BASE <= pid < OWN_PID_BASE + 64:
            i = pid - OWN_PID_BASE
            return HostProcess(name="python", user=self.user, cpu_pct=round(95 + 4 * math.sin(t + i), 1),
                               rss_bytes=(6 + i % 3) * GIB, cmdline=_OWN_CMD.format(i=i),
                               started_s=self._wall0 - 3 * 3600 - 60 * i, own=True)
        if OTHER_PID_BASE <= pid < OTHER_PID_BASE + 64:
            i = pid - OTHER_PID_BASE
            return HostProcess(name="python", user="alice", cpu_pct=round(12 + 3 * math.sin(t + i), 1),
                               rss_bytes=3 * GIB, cmdline=_OTHER_CMD.format(port=8000 + i),
                               started_s=self._wall0 - 26 * 3600, own=False)
        if HOSTILE_PID_BASE <= pid < HOSTILE_PID_BASE + len(HOSTILE_NAMES):
            k = pid - HOSTILE_PID_BASE
            return HostProcess(name=HOSTILE_NAMES[k][:15], user=HOSTILE_NAMES[(k + 1) % len(HOSTILE_NAMES)][:32],
                               cpu_pct=5.0, rss_bytes=GIB, cmdline=HOSTILE_NAMES[k], started_s=self._wall0 - 600,
                               own=False)
        if pid == os.getpid():
            return HostProcess(name="python", user=self.user, cpu_pct=1.0, rss_bytes=100 * MIB,
                               cmdline="python -m advisor", started_s=self._wall0 - 60, own=True)
        return HostProcess()

    def signal_process(self, pid: int, kill: bool = False) -> str | None:
        """Record the request; a simulated process ends (unless ``stubborn`` and only asked to terminate).
        No real process is ever signalled."""
        info = self.process_details(pid)
        if info.name is None:
            return f"PID {pid} has already ended"
        if not info.own:
            return f"PID {pid} belongs to another user: only your own processes can be stopped"
        self.signals.append((pid, "kill" if kill else "terminate"))
        if kill or pid not in self.stubborn:
            self.ended.add(pid)
        return None

    def process_alive(self, pid: int) -> bool:
        return self.process_details(pid).name is not None


class SimulatedProcessHost:
    """The real host's readings with the simulated GPU processes' details (``--fake-gpu`` on a real host).

    The fake GPU backend lists fake PIDs; the host backend of this machine would not know them (and must
    never be asked to signal them). This wrapper answers ``info`` and ``sample`` from ``host`` and
    everything about processes from a ``FakeHostBackend``.
    """

    def __init__(self, host, clock: Callable[[], float] = time.monotonic) -> None:
        self._host = host
        self.fake = FakeHostBackend(clock=clock)
        self.simulated = True

    def info(self) -> HostInfo:
        return self._host.info()

    def sample(self) -> HostSample:
        return self._host.sample()

    def process_details(self, pid: int) -> HostProcess:
        return self.fake.process_details(pid)

    def signal_process(self, pid: int, kill: bool = False) -> str | None:
        return self.fake.signal_process(pid, kill)

    def process_alive(self, pid: int) -> bool:
        return self.fake.process_alive(pid)
