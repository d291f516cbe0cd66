"""Typed hardware snapshots: what the backends return and what the rest of the app sees.

Every record is a frozen dataclass whose field names carry their unit (``_bytes``, ``_w``, ``_c``,
``_pct``, ``_mhz``, ``_bps`` = bytes per second, ``_j``, ``_s``). ``None`` means "not available on
this machine" (the driver said not supported, no permission, or the device is lost or asleep);
it never means zero.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

# Device states of a GPU as the monitor sees it.
GPU_OK = "ok"
GPU_LOST = "lost"  # fell off the bus or the driver lost it; stays lost until the backend is reopened
GPU_SUSPENDED = "suspended"  # laptop dGPU in runtime suspend: not polled, so it is not woken
GPU_NOT_RESPONDING = "not-responding"  # a driver call on it hung past the per-call timeout; the rest keep sampling

# What each state is called where people read it (cards, terminal table, ``advisor monitor --once --json``).
STATE_WORDS = {GPU_OK: "ok", GPU_LOST: "lost", GPU_SUSPENDED: "asleep, not woken",
               GPU_NOT_RESPONDING: "not responding"}
# The ``state`` values of the ``advisor.monitor/1`` document.
STATE_JSON = {GPU_OK: "ok", GPU_LOST: "lost", GPU_SUSPENDED: "asleep", GPU_NOT_RESPONDING: "not-responding"}

# Clock-event (throttle) reasons as every backend names them, in words for people. Names and meanings
# follow NVML's nvmlClocksEventReason* (nvml.h, NVML API reference "Clocks Event Reasons").
THROTTLE_WORDS = {
    "gpu_idle": "idle",
    "applications_clocks": "application clocks below maximum",
    "sw_power_cap": "power cap",
    "hw_slowdown": "hardware slowdown",
    "sync_boost": "sync boost",
    "sw_thermal": "thermal (software)",
    "hw_thermal": "thermal (hardware)",
    "hw_power_brake": "power brake",
    "display_clocks": "display clocks",
}
# Reasons that are faults (the banner): heat and the board's power brake. A power cap at full load is
# normal operation and goes only to the event log.
FAULT_THROTTLES = frozenset({"hw_slowdown", "sw_thermal", "hw_thermal", "hw_power_brake"})

# NVIDIA Xid error codes in words (NVIDIA, "XID Errors", docs.nvidia.com/deploy/xid-errors, r555).
XID_WORDS = {
    13: "graphics engine exception", 31: "GPU memory page fault", 43: "GPU stopped processing",
    45: "preemptive cleanup after an earlier error", 48: "double-bit ECC error", 61: "internal micro-controller halt",
    62: "internal micro-controller halt", 63: "ECC page retirement or row remapping", 64: "ECC page retirement failed",
    74: "NVLink error", 79: "GPU has fallen off the bus", 92: "high single-bit ECC error rate",
    94: "contained ECC error", 95: "uncontained ECC error", 119: "GSP RPC timeout", 120: "GSP error",
}

PCT_MAX = 100.0
TEMP_RANGE_C = (-40.0, 150.0)  # a reading outside it is a sentinel or a broken sensor


@dataclass(frozen=True)
class CpuInfo:
    """The host processor."""

    model: str
    physical_cores: int | None
    logical_cores: int
    arch: str = ""
    min_freq_mhz: float | None = None
    max_freq_mhz: float | None = None


@dataclass(frozen=True)
class MemoryInfo:
    """Host RAM and swap at detection time."""

    total_bytes: int
    available_bytes: int
    swap_total_bytes: int | None = None
    swap_used_bytes: int | None = None


@dataclass(frozen=True)
class DiskInfo:
    """One mounted file system."""

    mountpoint: str
    device: str
    fstype: str
    total_bytes: int
    free_bytes: int


@dataclass(frozen=True)
class HostInfo:
    """The static description of the host: OS, CPU, memory, disks."""

    hostname: str
    os: str
    python: str
    cpu: CpuInfo
    memory: MemoryInfo
    disks: tuple[DiskInfo, ...] = ()
    # Stable identifiers of this OS install and hardware (the raw machine id is never written out;
    # ``hw.detect.machine_id`` hashes them with the GPU UUIDs into the document's ``machine_id``).
    host_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class GpuInfo:
    """Static facts about one GPU, read once at detection (a one-shot read that may briefly wake a
    sleeping laptop GPU; the monitor's polling never does, see ``GpuBackend.runtime_status``).

    ``state`` is ``GPU_OK`` or ``GPU_LOST`` (then only index, and name/uuid when known, are filled).
    """

    index: int
    name: str
    uuid: str
    pci_bus_id: str | None = None  # NVML form, e.g. "00000000:01:00.0"
    memory_total_bytes: int | None = None
    compute_capability: tuple[int, int] | None = None
    power_limit_w: float | None = None
    max_sm_clock_mhz: float | None = None
    max_mem_clock_mhz: float | None = None
    mem_bus_width_bits: int | None = None
    cuda_cores: int | None = None  # nvmlDeviceGetNumGpuCores (SMs = cores / cores per SM of the architecture)
    boost_sm_clock_mhz: float | None = None  # rated boost clock (NVML "customer boost max"), when reported
    pcie_gen_max: int | None = None
    pcie_width_max: int | None = None
    pcie_gen_current: int | None = None
    pcie_width_current: int | None = None
    nvlink_links_active: int | None = None
    mig_enabled: bool | None = None
    ecc_enabled: bool | None = None
    fan_count: int | None = None
    state: str = GPU_OK
    vendor: str = "nvidia"  # nvidia | amd | intel | apple
    # unified or carve-out memory as each backend sees it (hw.unified.BackendMemory); empty for a discrete card
    backend_memory: tuple = ()

    @property
    def available(self) -> bool:
        return self.state == GPU_OK

    @property
    def nvml_mem_bandwidth_bps(self) -> float | None:
        """Theoretical memory bandwidth from the driver's figures, bytes/s (see ``mem_bandwidth_bps``)."""
        return mem_bandwidth_bps(self.max_mem_clock_mhz, self.mem_bus_width_bits)


def mem_bandwidth_bps(max_mem_clock_mhz: float | None, bus_width_bits: int | None) -> float | None:
    """Theoretical DRAM bandwidth in bytes/s: ``max memory clock * bus width * 2 / 8``.

    The factor 2 is double data rate on the clock NVML reports (nvidia-smi's "Max Clocks: Memory");
    for example an RTX 4090 reports 10501 MHz on a 384-bit bus: 10501e6 * 384 * 2 / 8 = 1008.1 GB/s,
    and an H100 SXM 2619 MHz on 5120 bits: 3352 GB/s. Returns None when either figure is unknown.
    """
    if not max_mem_clock_mhz or not bus_width_bits:
        return None
    return float(max_mem_clock_mhz) * 1e6 * int(bus_width_bits) * 2 / 8


@dataclass(frozen=True)
class GpuSample:
    """One reading of one GPU. Every figure is ``None`` when not available (and all are when not ``ok``)."""

    index: int
    state: str = GPU_OK
    util_pct: float | None = None  # time-occupancy figure, not SM load (NVML "utilization.gpu")
    mem_util_pct: float | None = None
    mem_used_bytes: int | None = None
    mem_total_bytes: int | None = None
    temp_c: float | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    energy_j: float | None = None  # total energy counter since driver load
    sm_clock_mhz: float | None = None
    mem_clock_mhz: float | None = None
    fan_pct: float | None = None
    pcie_rx_bps: float | None = None
    pcie_tx_bps: float | None = None
    throttle_reasons: tuple[str, ...] | None = None
    ecc_corrected: int | None = None
    ecc_uncorrected: int | None = None
    xid: int | None = None  # the newest NVIDIA Xid error since the previous sample (None: none)

    @property
    def available(self) -> bool:
        return self.state == GPU_OK


def _pct(value) -> float | None:
    return value if value is not None and math.isfinite(value) and 0 <= value <= PCT_MAX else None


def _nonneg(value):
    return value if value is not None and math.isfinite(value) and value >= 0 else None


def clean_sample(s: GpuSample) -> GpuSample:
    """The sample with driver sentinels and impossible figures turned into "not available" (None).

    Drivers answer "no value" in-band: NVML returns 0xFFFFFFFF (4294967295) for an unreadable
    utilisation or clock, sensors give NaN, and a broken memory counter reports more used than there is.
    Rules: a percentage outside 0..100, a temperature outside -40..150 °C, any NaN, infinite or negative
    figure, used memory above the total, and power more than twice the limit are None.
    """
    changes: dict = {}
    for name in ("util_pct", "mem_util_pct", "fan_pct"):
        value = getattr(s, name)
        if value is not None and _pct(value) is None:
            changes[name] = None
    for name in ("mem_used_bytes", "mem_total_bytes", "power_w", "power_limit_w", "energy_j", "sm_clock_mhz",
                 "mem_clock_mhz", "pcie_rx_bps", "pcie_tx_bps", "ecc_corrected", "ecc_uncorrected"):
        value = getattr(s, name)
        if value is not None and (_nonneg(value) is None or value >= 0xFFFFFFFF and name.endswith("_mhz")):
            changes[name] = None
    if s.temp_c is not None and not (math.isfinite(s.temp_c) and TEMP_RANGE_C[0] <= s.temp_c <= TEMP_RANGE_C[1]):
        changes["temp_c"] = None
    used = changes.get("mem_used_bytes", s.mem_used_bytes)
    total = changes.get("mem_total_bytes", s.mem_total_bytes)
    if used is not None and total is not None and used > total:
        changes["mem_used_bytes"] = None
    power = changes.get("power_w", s.power_w)
    limit = changes.get("power_limit_w", s.power_limit_w)
    if power is not None and limit and power > 2 * limit:
        changes["power_w"] = None
    return replace(s, **changes) if changes else s


@dataclass(frozen=True)
class GpuProcess:
    """A process holding memory on a GPU, as the GPU backend sees it (no name: that comes from the host)."""

    pid: int
    gpu_index: int
    gpu_mem_bytes: int | None  # None on Windows WDDM, where the driver cannot attribute memory
    kind: str = "compute"  # compute | graphics
    gpu_util_pct: float | None = None  # the process's share of the GPU's time, where the driver gives it


@dataclass(frozen=True)
class HostProcess:
    """What the host knows about a PID; every field None when the PID is not visible here (gone, or in
    another PID namespace such as a container). ``own`` is True only for the current user's processes."""

    name: str | None = None
    user: str | None = None
    cpu_pct: float | None = None
    rss_bytes: int | None = None
    cmdline: str | None = None
    started_s: float | None = None  # epoch seconds
    own: bool = False


@dataclass(frozen=True)
class ProcessSample:
    """A GPU process joined with its host name and user; ``name`` is None when the PID does not map
    (for example a process inside a container with its own PID namespace)."""

    pid: int
    gpu_index: int
    gpu_mem_bytes: int | None
    kind: str
    name: str | None
    user: str | None
    cpu_pct: float | None = None
    host_mem_bytes: int | None = None
    cmdline: str | None = None
    started_s: float | None = None  # epoch seconds
    gpu_util_pct: float | None = None
    own: bool = False  # the current user's: the only processes the app offers to stop


@dataclass(frozen=True)
class HostSample:
    """One reading of the host. Rates are averages since the previous sample (None on the first)."""

    cpu_util_pct: float | None
    per_core_util_pct: tuple[float, ...] = ()
    cpu_freq_mhz: float | None = None
    mem_used_bytes: int | None = None
    mem_total_bytes: int | None = None
    mem_available_bytes: int | None = None
    swap_used_bytes: int | None = None
    disk_read_bps: float | None = None
    disk_write_bps: float | None = None
    net_rx_bps: float | None = None
    net_tx_bps: float | None = None


@dataclass(frozen=True)
class BackendStatus:
    """Which GPU backend answered and what it says about itself (``name`` is nvml | fake | none)."""

    name: str
    status: str
    simulated: bool = False
    scenario: str | None = None
    driver_version: str | None = None
    cuda_driver_version: str | None = None
    nvml_version: str | None = None


@dataclass(frozen=True)
class FrameworkDevice:
    """One device as a framework (torch or JAX) sees it; ``uuid`` links it to the NVML device."""

    framework: str  # torch | jax
    kind: str  # cuda | rocm | mps | xpu | tpu
    index: int
    name: str
    uuid: str | None = None
    memory_total_bytes: int | None = None
    compute_capability: tuple[int, int] | None = None


@dataclass(frozen=True)
class FrameworkInfo:
    """What a framework reports: ``status`` is a sentence ("not installed", "torch 2.4 with CUDA 12.4", ...)."""

    framework: str
    installed: bool
    status: str
    version: str | None = None
    devices: tuple[FrameworkDevice, ...] = ()


@dataclass(frozen=True)
class GpuProfile:
    """A detected GPU with its catalog match and both bandwidth figures (driver-derived and catalog)."""

    info: GpuInfo
    catalog_id: str | None
    catalog_name: str | None = None
    catalog_mem_bandwidth_bps: float | None = None
    torch_device: str | None = None  # "cuda:0" when torch sees the same UUID
    accelerator: object | None = None  # the catalog ``Accelerator``, or one derived from the driver's figures

    @property
    def derived(self) -> bool:
        """True when the GPU is not in the catalog and its entry was derived from the driver's figures."""
        return bool(getattr(self.accelerator, "derived", False))

    @property
    def nvml_mem_bandwidth_bps(self) -> float | None:
        return self.info.nvml_mem_bandwidth_bps


@dataclass(frozen=True)
class MachineProfile:
    """Everything ``advisor detect`` knows. ``simulated`` is True when any part comes from a fake backend."""

    host: HostInfo
    gpus: tuple[GpuProfile, ...]
    gpu_backend: BackendStatus
    torch: FrameworkInfo
    jax: FrameworkInfo
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def simulated(self) -> bool:
        return self.gpu_backend.simulated
