"""A stand-in for the pynvml module, configured per failure scenario (in the manner of gpustat's tests).

Handles are device indices. A device is a dict of figures; a figure that is None makes its NVML call
raise NOT_SUPPORTED, as a real driver does. ``fail(fn, code, index)`` makes one call fail with a code,
``lose(index)`` makes every call on a device raise GPU_IS_LOST, ``remove(fn)`` deletes a function (an old
driver or binding: the backend sees "function not found").
"""

from __future__ import annotations

from types import SimpleNamespace

NOT_SUPPORTED = 3
NO_PERMISSION = 4
DRIVER_NOT_LOADED = 9
LIBRARY_NOT_FOUND = 12
FUNCTION_NOT_FOUND = 13
GPU_IS_LOST = 15
LIB_RM_VERSION_MISMATCH = 18
UNKNOWN = 999
MIB = 2**20


class NVMLError(Exception):
    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.value = value


def rtx4090(**over) -> dict:
    d = dict(name="NVIDIA GeForce RTX 4090", uuid="GPU-11111111-2222-3333-4444-555555555555", bus="00000000:01:00.0",
             mem_total=24564 * MIB, mem_used=1024 * MIB, cc=(8, 9), power_mw=123456, limit_mw=450000,
             energy_mj=5_000_000, util=37, mem_util=12, temp=51, sm_clock=2520, mem_clock=10501, max_sm=3120,
             max_mem=10501, bus_width=384, cores=16384, pcie_gen_max=4, pcie_width_max=16, pcie_gen=4, pcie_width=16,
             pcie_rx_kib=2000, pcie_tx_kib=1000, fan=41, fans=1, throttle=0x4 | 0x1, nvlink=None, mig=None,
             ecc=None, ecc_corrected=None, ecc_uncorrected=None,
             procs=[SimpleNamespace(pid=1234, usedGpuMemory=512 * MIB)], gfx_procs=[])
    d.update(over)
    return d


def h100(index: int = 0, **over) -> dict:
    d = dict(name="NVIDIA H100 80GB HBM3", uuid=f"GPU-aaaaaaaa-0000-0000-0000-{index:012d}",
             bus=f"00000000:{0x18 + index:02X}:00.0", mem_total=81559 * MIB, mem_used=500 * MIB, cc=(9, 0),
             power_mw=70000, limit_mw=700000, energy_mj=1_000_000, util=0, mem_util=0, temp=30, sm_clock=345,
             mem_clock=2619, max_sm=1980, max_mem=2619, bus_width=5120, pcie_gen_max=5, pcie_width_max=16, pcie_gen=5,
             pcie_width=16, pcie_rx_kib=0, pcie_tx_kib=0, fan=None, fans=0, throttle=0x1, nvlink=[1] * 18,
             mig=(0, 0), ecc=(1, 1), ecc_corrected=0, ecc_uncorrected=0, procs=[], gfx_procs=[])
    d.update(over)
    return d


_DEVICE_FUNCS = {
    "nvmlDeviceGetName": lambda d: d["name"],
    "nvmlDeviceGetUUID": lambda d: d["uuid"],
    "nvmlDeviceGetPciInfo": lambda d: None if d["bus"] is None else SimpleNamespace(busId=d["bus"]),
    "nvmlDeviceGetMemoryInfo": lambda d: None if d["mem_total"] is None else SimpleNamespace(
        total=d["mem_total"], used=d["mem_used"], free=d["mem_total"] - d["mem_used"]),
    "nvmlDeviceGetCudaComputeCapability": lambda d: d["cc"],
    "nvmlDeviceGetPowerUsage": lambda d: d["power_mw"],
    "nvmlDeviceGetEnforcedPowerLimit": lambda d: d["limit_mw"],
    "nvmlDeviceGetPowerManagementLimit": lambda d: d["limit_mw"],
    "nvmlDeviceGetTotalEnergyConsumption": lambda d: d["energy_mj"],
    "nvmlDeviceGetUtilizationRates": lambda d: None if d["util"] is None else SimpleNamespace(
        gpu=d["util"], memory=d["mem_util"]),
    "nvmlDeviceGetTemperature": lambda d, sensor: d["temp"],
    "nvmlDeviceGetClockInfo": lambda d, clock: d["sm_clock"] if clock == 1 else d["mem_clock"],
    "nvmlDeviceGetMaxClockInfo": lambda d, clock: d["max_sm"] if clock == 1 else d["max_mem"],
    "nvmlDeviceGetMemoryBusWidth": lambda d: d["bus_width"],
    "nvmlDeviceGetNumGpuCores": lambda d: d.get("cores"),
    "nvmlDeviceGetClock": lambda d, clock, clock_id: d.get("boost_sm") if clock == 1 and clock_id == 3 else None,
    "nvmlDeviceGetMaxPcieLinkGeneration": lambda d: d["pcie_gen_max"],
    "nvmlDeviceGetMaxPcieLinkWidth": lambda d: d["pcie_width_max"],
    "nvmlDeviceGetCurrPcieLinkGeneration": lambda d: d["pcie_gen"],
    "nvmlDeviceGetCurrPcieLinkWidth": lambda d: d["pcie_width"],
    "nvmlDeviceGetPcieThroughput": lambda d, counter: d["pcie_rx_kib"] if counter == 1 else d["pcie_tx_kib"],
    "nvmlDeviceGetFanSpeed": lambda d: d["fan"],
    "nvmlDeviceGetNumFans": lambda d: d["fans"],
    "nvmlDeviceGetCurrentClocksEventReasons": lambda d: d["throttle"],
    "nvmlDeviceGetCurrentClocksThrottleReasons": lambda d: d["throttle"],
    "nvmlDeviceGetNvLinkState": lambda d, link: None if d["nvlink"] is None or link >= len(d["nvlink"])
    else d["nvlink"][link],
    "nvmlDeviceGetMigMode": lambda d: d["mig"],
    "nvmlDeviceGetEccMode": lambda d: d["ecc"],
    "nvmlDeviceGetTotalEccErrors": lambda d, kind, counter: d["ecc_corrected"] if kind == 0 else d["ecc_uncorrected"],
    "nvmlDeviceGetComputeRunningProcesses": lambda d: d["procs"],
    "nvmlDeviceGetGraphicsRunningProcesses": lambda d: d["gfx_procs"],
}


class StubNvml:
    """Looks like the ``pynvml`` module to ``advisor.hw.nvml``."""

    NVMLError = NVMLError
    NVML_CLOCK_SM = 1
    NVML_CLOCK_MEM = 2
    NVML_TEMPERATURE_GPU = 0
    NVML_PCIE_UTIL_TX_BYTES = 0
    NVML_PCIE_UTIL_RX_BYTES = 1
    NVML_NVLINK_MAX_LINKS = 18

    def __init__(self, devices: list[dict] | None = None, *, driver: str = "550.54.15", cuda: int = 12040,
                 init_error: int | None = None) -> None:
        self.devices = list(devices or [])
        self.driver = driver
        self.cuda = cuda
        self.init_error = init_error
        self.failures: dict[tuple[str, int | None], int] = {}
        self.lost: set[int] = set()
        self.removed: set[str] = set()
        self.calls: list[tuple[str, tuple]] = []
        self.initialised = False
        self.xids: list[tuple[int, int]] = []  # queued (device index, Xid code) events
        self.hangs: dict[int, object] = {}  # device index -> threading.Event its calls wait on

    # ---- events (Xid)
    def nvmlEventSetCreate(self):
        return "evset"

    def nvmlDeviceRegisterEvents(self, handle, types, evset) -> None:
        self._check("nvmlDeviceRegisterEvents", handle)

    def nvmlEventSetWait_v2(self, evset, timeout_ms):
        if not self.xids:
            raise NVMLError(10)  # NVML_ERROR_TIMEOUT
        index, code = self.xids.pop(0)
        return SimpleNamespace(device=index, eventType=0x8, eventData=code)

    # ---- configuration
    def fail(self, fn: str, code: int, index: int | None = None) -> None:
        self.failures[(fn, index)] = code

    def lose(self, index: int) -> None:
        self.lost.add(index)

    def remove(self, fn: str) -> None:
        self.removed.add(fn)

    # ---- system calls
    def _check(self, fn: str, index: int | None = None) -> None:
        self.calls.append((fn, () if index is None else (index,)))
        if index is not None and index in self.hangs:
            self.hangs[index].wait(30.0)
        if index is not None and index in self.lost:
            raise NVMLError(GPU_IS_LOST)
        code = self.failures.get((fn, index), self.failures.get((fn, None)))
        if code is not None:
            raise NVMLError(code)

    def nvmlInit(self) -> None:
        self._check("nvmlInit")
        if self.init_error is not None:
            raise NVMLError(self.init_error)
        self.initialised = True

    def nvmlShutdown(self) -> None:
        self._check("nvmlShutdown")
        self.initialised = False

    def nvmlSystemGetDriverVersion(self) -> str:
        self._check("nvmlSystemGetDriverVersion")
        return self.driver

    def nvmlSystemGetNVMLVersion(self) -> str:
        self._check("nvmlSystemGetNVMLVersion")
        return "12." + self.driver

    def nvmlSystemGetCudaDriverVersion_v2(self) -> int:
        self._check("nvmlSystemGetCudaDriverVersion_v2")
        return self.cuda

    def nvmlDeviceGetCount(self) -> int:
        self._check("nvmlDeviceGetCount")
        return len(self.devices)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        self._check("nvmlDeviceGetHandleByIndex", index)
        return index

    def __getattr__(self, name: str):
        if name in self.removed or name not in _DEVICE_FUNCS:
            raise AttributeError(name)
        impl = _DEVICE_FUNCS[name]

        def call(handle, *args):
            self._check(name, handle)
            value = impl(self.devices[handle], *args)
            if value is None:
                raise NVMLError(NOT_SUPPORTED)
            return value

        return call

    def device_calls(self, index: int) -> int:
        """How many device calls touched device ``index`` (a suspended GPU must see none)."""
        return sum(1 for fn, args in self.calls if args == (index,) and fn != "nvmlDeviceGetHandleByIndex")
