"""Typed hardware snapshots: what the backends return and what the rest of the app sees.

Every record is a frozen dataclass whose field names carry their unit (``_bytes``, ``_w``, ``_c``,
``_pct``, ``_mhz``, ``_bps`` = bytes per second, ``_j``, ``_s``). ``None`` means "not available on
this machine" (the driver said not supported, no permission, or the device is lost or asleep);
it never means zero.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Device states of a GPU as the monitor sees it.
GPU_OK = "ok"
GPU_LOST = "lost"  # fell off the bus or the driver lost it; stays lost until the backend is reopened
GPU_SUSPENDED = "suspended"  # laptop dGPU in runtime suspend: not polled, so it is not woken


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

    @property
    def available(self) -> bool:
        return self.state == GPU_OK


@dataclass(frozen=True)
class GpuProcess:
    """A process holding memory on a GPU, as the GPU backend sees it (no name: that comes from the host)."""

    pid: int
    gpu_index: int
    gpu_mem_bytes: int | None  # None on Windows WDDM, where the driver cannot attribute memory
    kind: str = "compute"  # compute | graphics


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
