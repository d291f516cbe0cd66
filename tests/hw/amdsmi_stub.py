"""A stand-in for the ``amdsmi`` module (ROCm's Python binding), shaped like its 6.x API.

Handles are device indices. A device is a dict of figures; a figure that is None makes its call raise
``AmdSmiLibraryException`` (not supported), as the library does; "N/A" strings are returned as the
library returns them. ``lose(index)`` makes every call on a device raise.
"""

from __future__ import annotations

from types import SimpleNamespace

MB = 2**20


class AmdSmiException(Exception):
    pass


class AmdSmiLibraryException(AmdSmiException):
    def __init__(self, code: int = 2) -> None:
        super().__init__(code)
        self.code = code

    def get_error_code(self) -> int:
        return self.code


def mi300x(index: int = 0, **over) -> dict:
    """Figures as ``amd-smi metric`` shows them on an MI300X (ROCm 6.2: VRAM in MB, power in W, °C)."""
    d = dict(market_name="AMD Instinct MI300X", uuid=f"4cff74a1-0000-1000-80f3-{index:012d}",
             bdf=f"0000:{0x11 + 0x10 * index:02x}:00.0", vram_total=196592, vram_used=8120, gfx=37, umc=12,
             power=412, power_cap=750_000_000, temp=61, clk=1420, max_clk=2100, mclk=1300, max_mclk=1300,
             fan="N/A", fan_max="N/A", bus_width=8192,
             procs=[{"name": "python3", "pid": 4321, "mem": 12 * 2**30,
                     "memory_usage": {"gtt_mem": 0, "cpu_mem": 0, "vram_mem": 12 * 2**30},
                     "engine_usage": {"gfx": 123456, "enc": 0}, "cu_occupancy": 40}])
    d.update(over)
    return d


class StubAmdSmi:
    """The module: ``StubAmdSmi([mi300x(), mi300x(1)])``; ``init_error`` makes ``amdsmi_init`` fail."""

    AmdSmiException = AmdSmiException
    AmdSmiLibraryException = AmdSmiLibraryException
    AmdSmiInitFlags = SimpleNamespace(INIT_AMD_GPUS=2)
    AmdSmiClkType = SimpleNamespace(GFX=0, MEM=4)
    AmdSmiTemperatureType = SimpleNamespace(EDGE=0, HOTSPOT=1)
    AmdSmiTemperatureMetric = SimpleNamespace(CURRENT=0)

    def __init__(self, devices: list[dict], init_error: bool = False) -> None:
        self.devices = devices
        self.init_error = init_error
        self.lost: set[int] = set()
        self.calls = 0
        self.shut = False

    def lose(self, index: int) -> None:
        self.lost.add(index)

    def _dev(self, h: int, key: str):
        self.calls += 1
        if h in self.lost:
            raise AmdSmiLibraryException(48)  # AMDSMI_STATUS_NOT_FOUND-like: the device is gone
        value = self.devices[h].get(key)
        if value is None:
            raise AmdSmiLibraryException(2)  # not supported
        return value

    def amdsmi_init(self, flags=None) -> None:
        if self.init_error:
            raise AmdSmiLibraryException(8)

    def amdsmi_shut_down(self) -> None:
        self.shut = True

    def amdsmi_get_lib_version(self) -> dict:
        return {"major": 24, "minor": 6, "release": 3}

    def amdsmi_get_processor_handles(self) -> list[int]:
        return list(range(len(self.devices)))

    def amdsmi_get_gpu_device_bdf(self, h):
        return self._dev(h, "bdf")

    def amdsmi_get_gpu_device_uuid(self, h):
        return self._dev(h, "uuid")

    def amdsmi_get_gpu_asic_info(self, h):
        return {"market_name": self._dev(h, "market_name"), "vendor_id": "0x1002"}

    def amdsmi_get_gpu_vram_usage(self, h):
        return {"vram_total": self._dev(h, "vram_total"), "vram_used": self._dev(h, "vram_used")}

    def amdsmi_get_gpu_vram_info(self, h):
        return {"vram_type": "HBM3", "vram_bit_width": self._dev(h, "bus_width")}

    def amdsmi_get_gpu_activity(self, h):
        return {"gfx_activity": self._dev(h, "gfx"), "umc_activity": self._dev(h, "umc"), "mm_activity": "N/A"}

    def amdsmi_get_power_info(self, h):
        return {"current_socket_power": self._dev(h, "power"), "average_socket_power": self._dev(h, "power")}

    def amdsmi_get_power_cap_info(self, h):
        return {"power_cap": self._dev(h, "power_cap")}

    def amdsmi_get_temp_metric(self, h, kind, metric):
        return self._dev(h, "temp")

    def amdsmi_get_clock_info(self, h, kind):
        if kind == self.AmdSmiClkType.MEM:
            return {"clk": self._dev(h, "mclk"), "max_clk": self._dev(h, "max_mclk")}
        return {"clk": self._dev(h, "clk"), "max_clk": self._dev(h, "max_clk")}

    def amdsmi_get_gpu_fan_speed(self, h, sensor):
        return self._dev(h, "fan")

    def amdsmi_get_gpu_fan_speed_max(self, h, sensor):
        return self._dev(h, "fan_max")

    def amdsmi_get_gpu_process_list(self, h):
        return self._dev(h, "procs")
