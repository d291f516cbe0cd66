"""NVIDIA GPUs through NVML (package ``nvidia-ml-py``, module ``pynvml``): the only pynvml importer.

Every NVML call goes through ``nvml_query``, which turns "not supported", "no permission", "function not
found" (an older driver than the binding) and similar errors into ``None``, and a lost GPU into
``GpuLostError``, which the backend turns into a device with ``state == "lost"``. Nothing here raises
into the caller after ``NvmlBackend.open`` has succeeded.

Known traps handled here: a driver/library version mismatch after a driver upgrade (init fails with
LIB_RM_VERSION_MISMATCH: null backend with that reason); Windows WDDM, where per-process memory is not
available (``gpu_mem_bytes`` None); nvidia-ml-py 12.535.77 with drivers 535.43 to 535.86, which return
garbage process lists (process lists disabled, and implausible entries are dropped in any case); and
``nvmlDeviceGetPcieThroughput``, which blocks for about 20 ms, so only one device is asked per tick.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from advisor.hw import pcipower
from advisor.hw.records import (
    GPU_LOST,
    GPU_SUSPENDED,
    BackendStatus,
    GpuInfo,
    GpuProcess,
    GpuSample,
    clean_sample,
)

# NVML return codes (stable ABI, nvml.h); read from the module when it has them.
ERROR_NO_PERMISSION = 4
ERROR_DRIVER_NOT_LOADED = 9
ERROR_LIBRARY_NOT_FOUND = 12
ERROR_FUNCTION_NOT_FOUND = 13
ERROR_GPU_IS_LOST = 15
ERROR_RESET_REQUIRED = 16
ERROR_LIB_RM_VERSION_MISMATCH = 18
ERROR_GPU_NOT_FOUND = 28
ERROR_NOT_SUPPORTED = 3
LOST_CODES = frozenset({ERROR_GPU_IS_LOST, ERROR_RESET_REQUIRED, ERROR_GPU_NOT_FOUND})
_PERMANENT_CODES = frozenset({ERROR_NOT_SUPPORTED, ERROR_FUNCTION_NOT_FOUND})

_INIT_REASONS = {
    ERROR_LIBRARY_NOT_FOUND: "NVIDIA driver not found (libnvidia-ml is not installed)",
    ERROR_DRIVER_NOT_LOADED: "NVIDIA driver not loaded",
    ERROR_NO_PERMISSION: "no permission to open the NVIDIA driver",
    ERROR_LIB_RM_VERSION_MISMATCH: "NVIDIA driver/library version mismatch (reboot after the driver upgrade)",
    ERROR_FUNCTION_NOT_FOUND: "NVML library too old for this binding",
}

# Clock-event (throttle) reason bits, nvml.h nvmlClocksEventReason*.
THROTTLE_REASONS = (
    (0x1, "gpu_idle"), (0x2, "applications_clocks"), (0x4, "sw_power_cap"), (0x8, "hw_slowdown"),
    (0x10, "sync_boost"), (0x20, "sw_thermal"), (0x40, "hw_thermal"), (0x80, "hw_power_brake"),
    (0x100, "display_clocks"),
)
# nvidia-ml-py 12.535.77 with these drivers returns garbage process lists (nvitop and gpustat issues).
_BAD_PAIR_BINDING = "12.535.77"
_BAD_PAIR_DRIVERS = ((535, 43), (535, 86))
_NVLINK_MAX_LINKS = 18
_KIB = 1024
EVENT_XID_CRITICAL = 0x8  # nvmlEventTypeXidCriticalError (nvml.h)
_U32_UNSET = 0xFFFFFFFF  # NVML's "no value" for an unsigned figure


class NvmlUnavailable(Exception):
    """NVML cannot be used on this machine; the message is the one-line reason for the status."""


class GpuLostError(Exception):
    """A device answered GPU_IS_LOST (or similar): it fell off the bus or needs a reset."""


def nvml_query(nvml, fn_name: str, *args, errors: list[int] | None = None):
    """Call ``nvml.<fn_name>(*args)``; the one door to NVML.

    Args:
        nvml: the pynvml module (or a test stub).
        fn_name: NVML function name, e.g. ``"nvmlDeviceGetPowerUsage"``.
        errors: when given, the NVML error code of a failed call is appended to it.
    Returns:
        The call's value, or None when it is not available: not supported, no permission, function
        not found in this binding or driver, or any other NVML error that concerns one figure.
    Raises:
        GpuLostError: the device is lost or needs a reset.
    """
    fn = getattr(nvml, fn_name, None)
    if fn is None:
        if errors is not None:
            errors.append(ERROR_FUNCTION_NOT_FOUND)
        return None
    try:
        return fn(*args)
    except nvml.NVMLError as exc:
        code = getattr(exc, "value", None)
        if code in LOST_CODES:
            raise GpuLostError(str(code)) from None
        if errors is not None:
            errors.append(code if isinstance(code, int) else -1)
        return None
    except (OSError, ValueError, TypeError, UnicodeDecodeError, AttributeError, KeyError):
        if errors is not None:
            errors.append(-1)
        return None


def _text(value) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _import_pynvml():
    try:
        import pynvml
    except ImportError as exc:
        raise NvmlUnavailable(f"NVML binding not installed (nvidia-ml-py): {exc}") from None
    return pynvml


def _binding_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("nvidia-ml-py")
    except Exception:
        return None


def bad_process_pair(binding: str | None, driver: str | None) -> bool:
    """True for the nvidia-ml-py 12.535.77 + driver 535.43..535.86 pair that returns garbage process lists."""
    if binding != _BAD_PAIR_BINDING or not driver:
        return False
    try:
        parts = tuple(int(p) for p in driver.split(".")[:2])
    except ValueError:
        return False
    return _BAD_PAIR_DRIVERS[0] <= parts <= _BAD_PAIR_DRIVERS[1]


class NvmlBackend:
    """GPU backend over an initialised NVML. Create it with ``NvmlBackend.open()``.

    Args:
        nvml: the pynvml module (a stub in tests), already initialised.
        sysfs_root: the PCI sysfs directory for runtime power states.
        binding_version: the nvidia-ml-py version (read from the installed package when None).
    """

    name = "nvml"
    simulated = False

    def __init__(self, nvml, *, sysfs_root: str | Path = pcipower.SYSFS_PCI,
                 binding_version: str | None = None) -> None:
        self._nvml = nvml
        self._root = sysfs_root
        self._lock = threading.RLock()
        self._q: Callable = lambda fn, *a: nvml_query(nvml, fn, *a)
        self.driver_version = _text(self._q("nvmlSystemGetDriverVersion"))
        self.nvml_version = _text(self._q("nvmlSystemGetNVMLVersion"))
        cuda = self._q("nvmlSystemGetCudaDriverVersion_v2") or self._q("nvmlSystemGetCudaDriverVersion")
        self.cuda_driver_version = f"{cuda // 1000}.{cuda % 1000 // 10}" if isinstance(cuda, int) and cuda else None
        self.binding_version = binding_version if binding_version is not None else _binding_version()
        self.processes_supported = not bad_process_pair(self.binding_version, self.driver_version)
        count = self._q("nvmlDeviceGetCount") or 0
        self._handles: list = []
        self._lost: set[int] = set()
        for i in range(count):
            try:
                handle = self._q("nvmlDeviceGetHandleByIndex", i)
            except GpuLostError:
                handle = None
            if handle is None:
                self._lost.add(i)
            self._handles.append(handle)
        sysfs = pcipower.nvidia_display_devices(sysfs_root)
        self._bus_ids: list[str | None] = list(sysfs) if len(sysfs) == count else [None] * count
        self._info: dict[int, GpuInfo] = {}
        self._never: set[tuple] = set()  # (function, device, args) answered "not supported": not asked again
        self._calls = 0  # sample() calls, to take turns on the slow PCIe query
        self._pcie_cache: dict[int, tuple[float | None, float | None]] = {}
        # One lock per device: a call that hangs on one GPU does not hold the others' reads.
        self._device_locks = [threading.Lock() for _ in range(count)]
        self._xid: dict[int, int] = {}
        self._xid_lock = threading.Lock()
        self._events = None
        self._process_seen_us = [0] * count
        self._closed = False
        self._register_xid_events()

    @classmethod
    def open(cls, nvml=None, **kwargs) -> NvmlBackend:
        """Initialise NVML and return the backend.

        Raises:
            NvmlUnavailable: no binding, no driver, no permission, a driver/library mismatch, or no GPU;
                the message says which.
        """
        nvml = _import_pynvml() if nvml is None else nvml
        errors: list[int] = []
        try:
            nvml_query(nvml, "nvmlInit", errors=errors)
        except GpuLostError:
            errors.append(ERROR_GPU_IS_LOST)
        if errors:
            code = errors[0]
            raise NvmlUnavailable(_INIT_REASONS.get(code, f"NVML failed to initialise (error {code})"))
        backend = cls(nvml, **kwargs)
        if backend.device_count() == 0:
            backend.close()
            driver = f" (driver {backend.driver_version})" if backend.driver_version else ""
            raise NvmlUnavailable(f"NVIDIA driver loaded{driver} but no GPU found")
        return backend

    # ------------------------------------------------------------ facts
    def status(self) -> BackendStatus:
        n = len(self._handles)
        text = f"NVML: {n} GPU(s), driver {self.driver_version or '?'}, CUDA {self.cuda_driver_version or '?'}"
        if self._lost:
            text += f"; lost: {', '.join(str(i) for i in sorted(self._lost))}"
        if not self.processes_supported:
            text += "; per-process memory disabled (nvidia-ml-py 12.535.77 with this driver returns garbage)"
        return BackendStatus(name=self.name, status=text, driver_version=self.driver_version,
                             cuda_driver_version=self.cuda_driver_version, nvml_version=self.nvml_version)

    def device_count(self) -> int:
        return len(self._handles)

    def _bus_id(self, index: int) -> str | None:
        """The device's sysfs PCI address: from NVML once the device was described, before that from the
        sysfs list of NVIDIA display devices in bus order (NVML's order), so a sleeping GPU is not asked."""
        info = self._info.get(index)
        if info is not None and info.pci_bus_id:
            return pcipower.sysfs_bus_id(info.pci_bus_id)
        if self._bus_ids[index] is None and index not in self._lost:
            try:
                pci = self._q("nvmlDeviceGetPciInfo", self._handles[index])
            except GpuLostError:
                return None
            bus = _text(getattr(pci, "busId", None)) if pci is not None else None
            self._bus_ids[index] = pcipower.sysfs_bus_id(bus) if bus else None
        return self._bus_ids[index]

    def gpu_info(self, index: int) -> GpuInfo:
        with self._lock:
            if index not in self._info and self.runtime_status(index) == "suspended":
                # Any NVML query would wake it: describe it from sysfs alone until it wakes by itself.
                return GpuInfo(index=index, name="NVIDIA GPU (asleep, not woken)", uuid="",
                               pci_bus_id=self._bus_ids[index], state=GPU_SUSPENDED)
            if index in self._lost:
                old = self._info.get(index)
                return GpuInfo(index=index, name=old.name if old else "unavailable GPU",
                               uuid=old.uuid if old else "", pci_bus_id=old.pci_bus_id if old else None,
                               state=GPU_LOST)
            if index not in self._info:
                try:
                    self._info[index] = self._read_info(index)
                except GpuLostError:
                    self._lost.add(index)
                    return self.gpu_info(index)
            return self._info[index]

    def _read_info(self, index: int) -> GpuInfo:
        q, h, n = self._q, self._handles[index], self._nvml
        mem = q("nvmlDeviceGetMemoryInfo", h)
        cc = q("nvmlDeviceGetCudaComputeCapability", h)
        limit = q("nvmlDeviceGetEnforcedPowerLimit", h) or q("nvmlDeviceGetPowerManagementLimit", h)
        mig = q("nvmlDeviceGetMigMode", h)
        ecc = q("nvmlDeviceGetEccMode", h)
        links = None
        for link in range(getattr(n, "NVML_NVLINK_MAX_LINKS", _NVLINK_MAX_LINKS)):
            state = q("nvmlDeviceGetNvLinkState", h, link)
            if state is None:
                break  # links are numbered from 0; the first unsupported one ends the list
            links = (links or 0) + (1 if state else 0)
        pci = q("nvmlDeviceGetPciInfo", h)
        bus = _text(getattr(pci, "busId", None)) if pci is not None else None
        return GpuInfo(
            index=index, name=_text(q("nvmlDeviceGetName", h)) or "NVIDIA GPU",
            uuid=_text(q("nvmlDeviceGetUUID", h)) or "", pci_bus_id=bus,
            memory_total_bytes=int(mem.total) if mem is not None else None,
            compute_capability=(int(cc[0]), int(cc[1])) if cc else None,
            power_limit_w=limit / 1000 if limit else None,
            max_sm_clock_mhz=q("nvmlDeviceGetMaxClockInfo", h, getattr(n, "NVML_CLOCK_SM", 1)),
            max_mem_clock_mhz=q("nvmlDeviceGetMaxClockInfo", h, getattr(n, "NVML_CLOCK_MEM", 2)),
            mem_bus_width_bits=q("nvmlDeviceGetMemoryBusWidth", h),
            cuda_cores=q("nvmlDeviceGetNumGpuCores", h),
            boost_sm_clock_mhz=q("nvmlDeviceGetClock", h, getattr(n, "NVML_CLOCK_SM", 1),
                                 getattr(n, "NVML_CLOCK_ID_CUSTOMER_BOOST_MAX", 3)),
            pcie_gen_max=q("nvmlDeviceGetMaxPcieLinkGeneration", h),
            pcie_width_max=q("nvmlDeviceGetMaxPcieLinkWidth", h),
            pcie_gen_current=q("nvmlDeviceGetCurrPcieLinkGeneration", h),
            pcie_width_current=q("nvmlDeviceGetCurrPcieLinkWidth", h),
            nvlink_links_active=links,
            mig_enabled=bool(mig[0]) if mig else None,
            ecc_enabled=bool(ecc[0]) if ecc else None,
            fan_count=q("nvmlDeviceGetNumFans", h),
        )

    def runtime_status(self, index: int) -> str | None:
        return pcipower.runtime_status(self._bus_id(index), self._root)

    def pci_name(self, index: int) -> str | None:
        return pcipower.pci_db_name(*ids) if (ids := pcipower.pci_ids(self._bus_id(index), self._root)) else None

    # ------------------------------------------------------------ readings
    def sample(self, index: int) -> GpuSample:
        with self._device_locks[index]:
            if index in self._lost or self._closed:
                return GpuSample(index=index, state=GPU_LOST, xid=self._take_xid(index))
            try:
                self._poll_xid()
                return clean_sample(self._read_sample(index))
            except GpuLostError:
                self._lost.add(index)
                return GpuSample(index=index, state=GPU_LOST, xid=self._take_xid(index))

    def _register_xid_events(self) -> None:
        """Ask the driver to queue Xid critical errors of every device (once, at open; not supported: none)."""
        self._events = False
        evset = self._q("nvmlEventSetCreate")
        if evset is None:
            return
        registered = False
        for i, h in enumerate(self._handles):
            if h is None or self.runtime_status(i) == "suspended":
                continue  # registering is a driver call: a sleeping GPU would wake (and send no Xid then)
            errors: list[int] = []
            try:
                nvml_query(self._nvml, "nvmlDeviceRegisterEvents", h, EVENT_XID_CRITICAL, evset, errors=errors)
            except GpuLostError:
                continue
            registered = registered or not errors
        self._events = evset if registered else False

    def _poll_xid(self) -> None:
        """Collect queued Xid critical errors without waiting (any device's, told apart by handle)."""
        if not self._events or not self._xid_lock.acquire(blocking=False):
            return  # another GPU's thread is collecting them
        try:
            for _ in range(16):  # bounded: a storm of errors does not hold the tick
                data = nvml_query(self._nvml, "nvmlEventSetWait_v2", self._events, 0, errors=[])
                if data is None:
                    break  # NVML_ERROR_TIMEOUT: nothing queued
                handle = getattr(data, "device", None)
                if handle in self._handles and isinstance(getattr(data, "eventData", None), int):
                    self._xid[self._handles.index(handle)] = int(data.eventData)
        finally:
            self._xid_lock.release()

    def _take_xid(self, index: int) -> int | None:
        return self._xid.pop(index, None)

    def _device_query(self, index: int, fn: str, handle, *args):
        """``nvml_query`` for a per-sample figure, remembering the ones this device will never give."""
        key = (fn, index, args)
        if key in self._never:
            return None
        errors: list[int] = []
        value = nvml_query(self._nvml, fn, handle, *args, errors=errors)
        if errors and errors[0] in _PERMANENT_CODES:
            self._never.add(key)
        return value

    def _read_sample(self, index: int) -> GpuSample:
        h, n = self._handles[index], self._nvml

        def q(fn: str, handle, *args):
            return self._device_query(index, fn, handle, *args)

        util = q("nvmlDeviceGetUtilizationRates", h)
        mem = q("nvmlDeviceGetMemoryInfo", h)
        power = q("nvmlDeviceGetPowerUsage", h)
        limit = q("nvmlDeviceGetEnforcedPowerLimit", h)
        energy = q("nvmlDeviceGetTotalEnergyConsumption", h)
        reasons = q("nvmlDeviceGetCurrentClocksEventReasons", h)
        if reasons is None:
            reasons = q("nvmlDeviceGetCurrentClocksThrottleReasons", h)
        corrected = q("nvmlDeviceGetTotalEccErrors", h, 0, 0)  # corrected, volatile
        uncorrected = q("nvmlDeviceGetTotalEccErrors", h, 1, 0)
        count = len(self._handles)
        tick, self._calls = self._calls // count, self._calls + 1
        if tick % count == index:
            # ~20 ms per call: one device per round of samples, round robin; the others keep their figure.
            rx = q("nvmlDeviceGetPcieThroughput", h, getattr(n, "NVML_PCIE_UTIL_RX_BYTES", 1))
            tx = q("nvmlDeviceGetPcieThroughput", h, getattr(n, "NVML_PCIE_UTIL_TX_BYTES", 0))
            self._pcie_cache[index] = (None if rx is None else rx * _KIB, None if tx is None else tx * _KIB)
        rx_bps, tx_bps = self._pcie_cache.get(index, (None, None))
        sm_clock = q("nvmlDeviceGetClockInfo", h, getattr(n, "NVML_CLOCK_SM", 1))
        mem_clock = q("nvmlDeviceGetClockInfo", h, getattr(n, "NVML_CLOCK_MEM", 2))
        return GpuSample(
            index=index,
            util_pct=float(util.gpu) if util is not None else None,
            mem_util_pct=float(util.memory) if util is not None else None,
            mem_used_bytes=int(mem.used) if mem is not None else None,
            mem_total_bytes=int(mem.total) if mem is not None else None,
            temp_c=q("nvmlDeviceGetTemperature", h, getattr(n, "NVML_TEMPERATURE_GPU", 0)),
            power_w=power / 1000 if power is not None else None,
            power_limit_w=limit / 1000 if limit else None,
            energy_j=energy / 1000 if energy is not None else None,
            sm_clock_mhz=None if sm_clock == _U32_UNSET else sm_clock,
            mem_clock_mhz=None if mem_clock == _U32_UNSET else mem_clock,
            fan_pct=q("nvmlDeviceGetFanSpeed", h),
            xid=self._take_xid(index),
            pcie_rx_bps=rx_bps, pcie_tx_bps=tx_bps,
            throttle_reasons=None if reasons is None else tuple(name for bit, name in THROTTLE_REASONS if reasons & bit),
            ecc_corrected=corrected, ecc_uncorrected=uncorrected,
        )

    def _process_util(self, index: int) -> dict[int, float]:
        """Per-process SM utilisation since the last call (``nvmlDeviceGetProcessUtilization``), by PID."""
        h = self._handles[index]
        samples = self._device_query(index, "nvmlDeviceGetProcessUtilization", h, self._process_seen_us[index])
        out: dict[int, float] = {}
        for smp in samples or ():
            pid, sm, stamp = getattr(smp, "pid", None), getattr(smp, "smUtil", None), getattr(smp, "timeStamp", 0)
            if isinstance(pid, int) and isinstance(sm, (int, float)) and 0 <= sm <= 100:
                out[pid] = max(out.get(pid, 0.0), float(sm))
            if isinstance(stamp, int):
                self._process_seen_us[index] = max(self._process_seen_us[index], stamp)
        return out

    def processes(self, index: int) -> tuple[GpuProcess, ...]:
        with self._device_locks[index]:
            if index in self._lost or self._closed or not self.processes_supported:
                return ()
            h = self._handles[index]
            total = (self._info.get(index).memory_total_bytes if index in self._info else None)
            out: dict[int, GpuProcess] = {}
            try:
                for kind, fn in (("compute", "nvmlDeviceGetComputeRunningProcesses"),
                                 ("graphics", "nvmlDeviceGetGraphicsRunningProcesses")):
                    for p in self._q(fn, h) or ():
                        pid = getattr(p, "pid", None)
                        used = getattr(p, "usedGpuMemory", None)  # None on Windows WDDM
                        if not isinstance(pid, int) or pid <= 0 or pid > 2**22:
                            continue  # garbage entry (bad binding/driver pair)
                        if used is not None and (used < 0 or (total and used > total)):
                            used = None
                        if pid not in out:
                            out[pid] = GpuProcess(pid=pid, gpu_index=index, gpu_mem_bytes=used, kind=kind)
                if out:
                    util = self._process_util(index)
                    out = {pid: replace(p, gpu_util_pct=util.get(pid)) for pid, p in out.items()}
            except GpuLostError:
                self._lost.add(index)
                return ()
            return tuple(out.values())

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                try:
                    if self._events:
                        nvml_query(self._nvml, "nvmlEventSetFree", self._events)
                    nvml_query(self._nvml, "nvmlShutdown")
                except GpuLostError:
                    pass
