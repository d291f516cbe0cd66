"""AMD GPUs through the ``amdsmi`` library that ROCm ships: the only amdsmi importer.

Every call goes through ``amd_query``, which turns the library's exceptions and its "N/A" strings into
None, so nothing here raises after ``AmdSmiBackend.open`` succeeded. Units moved between releases of the
binding (ROCm 6.0 gave VRAM in MB and power in W; some releases give bytes, µW and m°C), so figures are
read through ``_bytes``/``_watts``/``_celsius``, which recognise the unit by magnitude: no GPU has 16 TB of
memory, draws 10 kW or runs at 1000 °C. The runtime power state is read from sysfs first, as for NVIDIA.
"""

from __future__ import annotations

import threading
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

MIB = 2**20


class AmdUnavailable(Exception):
    """amdsmi cannot be used here; the message is the one-line reason."""


def _import_amdsmi():
    try:
        import amdsmi
    except ImportError as exc:
        raise AmdUnavailable(f"AMD SMI library not installed (amdsmi, part of ROCm): {exc}") from None
    except OSError as exc:  # the binding is there but libamd_smi.so is not
        raise AmdUnavailable(f"AMD SMI library could not load: {exc}") from None
    return amdsmi


def amd_query(lib, fn_name: str, *args):
    """``lib.<fn_name>(*args)``, or None when the function is missing, fails, or answers "N/A"."""
    fn = getattr(lib, fn_name, None)
    if fn is None:
        return None
    error = getattr(lib, "AmdSmiException", Exception)
    try:
        value = fn(*args)
    except (error, OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
    return None if value == "N/A" else value


def _num(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _field(mapping, *keys):
    if not isinstance(mapping, dict):
        return None
    for key in keys:
        value = _num(mapping.get(key))
        if value is not None:
            return value
    return None


def _bytes(value: float | None) -> int | None:
    """VRAM figures: MB in ROCm 6.0-6.2 bindings, bytes in later ones."""
    if value is None:
        return None
    return int(value * MIB) if value < 2**24 else int(value)


def _watts(value: float | None) -> float | None:
    """Power: W in ROCm 6 bindings, µW in others."""
    if value is None:
        return None
    return value / 1e6 if value > 1e4 else value


def _celsius(value: float | None) -> float | None:
    """Temperature: °C, or m°C in older bindings."""
    if value is None:
        return None
    return value / 1000 if value > 1000 else value


# PCI device ids of AMD APUs' integrated GPUs (vendor 0x1002), whose memory is a BIOS carve-out plus system RAM
# mapped through GTT (``hw.unified``), as libdrm's amdgpu.ids names them: Strix Halo (Radeon 8060S/8050S/8040S,
# 0x1586), Strix Point (890M/880M, 0x150e), Krackan Point (840M/820M, 0x1902), Phoenix and Hawk Point
# (780M/760M/740M, 0x15bf, 0x15c8, 0x1900, 0x1901), Rembrandt (680M/660M, 0x1681).
APU_DEVICE_IDS = frozenset({"0x1586", "0x150e", "0x1902", "0x15bf", "0x15c8", "0x1900", "0x1901", "0x1681"})


class AmdSmiBackend:
    """GPU backend over an initialised amdsmi. Create it with ``AmdSmiBackend.open()``.

    Args:
        lib: the amdsmi module (a stub in tests), already initialised.
        sysfs_root: the PCI sysfs directory for runtime power states.
    """

    name = "amdsmi"
    simulated = False

    def __init__(self, lib, *, sysfs_root: str | Path = pcipower.SYSFS_PCI) -> None:
        self._lib = lib
        self._root = sysfs_root
        self._handles = list(amd_query(lib, "amdsmi_get_processor_handles") or ())
        self._bdf = [str(amd_query(lib, "amdsmi_get_gpu_device_bdf", h) or "") or None for h in self._handles]
        self._info: dict[int, GpuInfo] = {}
        self._lost: set[int] = set()
        self._locks = [threading.Lock() for _ in self._handles]
        version = amd_query(lib, "amdsmi_get_lib_version")
        self.version = (".".join(str(version.get(k)) for k in ("major", "minor", "release") if k in version)
                        if isinstance(version, dict) else None)
        self._closed = False

    @classmethod
    def open(cls, lib=None, **kwargs) -> AmdSmiBackend:
        """Initialise amdsmi and return the backend.

        Raises:
            AmdUnavailable: no library, no driver, or no AMD GPU; the message says which.
        """
        lib = _import_amdsmi() if lib is None else lib
        error = getattr(lib, "AmdSmiException", Exception)
        flags = getattr(getattr(lib, "AmdSmiInitFlags", None), "INIT_AMD_GPUS", None)
        try:
            lib.amdsmi_init() if flags is None else lib.amdsmi_init(flags)
        except (error, OSError) as exc:
            raise AmdUnavailable(f"AMD SMI failed to initialise (amdgpu driver not loaded?): {exc}") from None
        backend = cls(lib, **kwargs)
        if not backend.device_count():
            backend.close()
            raise AmdUnavailable("AMD SMI loaded but no AMD GPU found")
        return backend

    def status(self) -> BackendStatus:
        text = f"AMD SMI: {len(self._handles)} GPU(s)" + (f", library {self.version}" if self.version else "")
        return BackendStatus(name=self.name, status=text, driver_version=self.version)

    def device_count(self) -> int:
        return len(self._handles)

    def runtime_status(self, index: int) -> str | None:
        return pcipower.runtime_status(self._bdf[index], self._root)

    def pci_name(self, index: int) -> str | None:
        return pcipower.pci_db_name(*ids) if (ids := pcipower.pci_ids(self._bdf[index], self._root)) else None

    def gpu_info(self, index: int) -> GpuInfo:
        if self.runtime_status(index) == "suspended" and index not in self._info:
            return GpuInfo(index=index, name="AMD GPU (asleep, not woken)", uuid="", pci_bus_id=self._bdf[index],
                           state=GPU_SUSPENDED, vendor="amd")
        if index not in self._info:
            q, h = self._q, self._handles[index]
            asic = q("amdsmi_get_gpu_asic_info", h)
            vram = q("amdsmi_get_gpu_vram_usage", h)
            cap = q("amdsmi_get_power_cap_info", h)
            clk = q("amdsmi_get_clock_info", h, self._clk("GFX"))
            mclk = q("amdsmi_get_clock_info", h, self._clk("MEM"))
            vinfo = q("amdsmi_get_gpu_vram_info", h)
            name = (asic.get("market_name") if isinstance(asic, dict) else None) or "AMD GPU"
            self._info[index] = GpuInfo(
                index=index, name=str(name), uuid=str(q("amdsmi_get_gpu_device_uuid", h) or ""),
                pci_bus_id=self._bdf[index], memory_total_bytes=_bytes(_field(vram, "vram_total")),
                power_limit_w=_watts(_field(cap, "power_cap")), max_sm_clock_mhz=_field(clk, "max_clk"),
                max_mem_clock_mhz=_field(mclk, "max_clk"), mem_bus_width_bits=_int(_field(vinfo, "vram_bit_width")),
                vendor="amd", backend_memory=self._apu_memory(index))
        info = self._info[index]
        return replace(info, state=GPU_LOST) if index in self._lost else info

    def _apu_memory(self, index: int) -> tuple:
        """An APU's memory as each backend sees it (``hw.unified.amd_apu_memory``): the BIOS carve-out and the GTT
        pool amdgpu publishes in sysfs (``mem_info_vram_total``, ``mem_info_gtt_total``); () for a discrete card
        (a PCI device id not in ``APU_DEVICE_IDS``) or when the files are missing."""
        ids = pcipower.pci_ids(self._bdf[index], self._root)
        if ids is None or ids[0] != "0x1002" or ids[1] not in APU_DEVICE_IDS:
            return ()
        carve = pcipower.sysfs_int(self._bdf[index], "mem_info_vram_total", self._root)
        gtt = pcipower.sysfs_int(self._bdf[index], "mem_info_gtt_total", self._root)
        if carve is None or gtt is None:
            return ()
        from advisor.hw.unified import amd_apu_memory

        return amd_apu_memory(carve + gtt, carve, gtt_bytes=gtt)

    def _clk(self, name: str):
        kind = getattr(self._lib, "AmdSmiClkType", None)
        return getattr(kind, name, 0 if name == "GFX" else 4)

    def _q(self, fn: str, *args):
        return amd_query(self._lib, fn, *args)

    def sample(self, index: int) -> GpuSample:
        with self._locks[index]:
            if self._closed or index in self._lost:
                return GpuSample(index=index, state=GPU_LOST)
            q, h = self._q, self._handles[index]
            activity = q("amdsmi_get_gpu_activity", h)
            if activity is None and q("amdsmi_get_gpu_device_bdf", h) is None:
                self._lost.add(index)  # the device no longer answers even its address
                return GpuSample(index=index, state=GPU_LOST)
            vram = q("amdsmi_get_gpu_vram_usage", h)
            power = q("amdsmi_get_power_info", h)
            temp_type = getattr(getattr(self._lib, "AmdSmiTemperatureType", None), "HOTSPOT", 1)
            metric = getattr(getattr(self._lib, "AmdSmiTemperatureMetric", None), "CURRENT", 0)
            clk = q("amdsmi_get_clock_info", h, self._clk("GFX"))
            mclk = q("amdsmi_get_clock_info", h, self._clk("MEM"))
            fan, fan_max = _num(q("amdsmi_get_gpu_fan_speed", h, 0)), _num(q("amdsmi_get_gpu_fan_speed_max", h, 0))
            cap = q("amdsmi_get_power_cap_info", h)
            pcie = q("amdsmi_get_gpu_pci_throughput", h)
            return clean_sample(GpuSample(
                index=index, util_pct=_field(activity, "gfx_activity"), mem_util_pct=_field(activity, "umc_activity"),
                mem_used_bytes=_bytes(_field(vram, "vram_used")), mem_total_bytes=_bytes(_field(vram, "vram_total")),
                temp_c=_celsius(_num(q("amdsmi_get_temp_metric", h, temp_type, metric))),
                power_w=_watts(_field(power, "current_socket_power", "average_socket_power")),
                power_limit_w=_watts(_field(cap, "power_cap")),
                sm_clock_mhz=_field(clk, "clk", "cur_clk"), mem_clock_mhz=_field(mclk, "clk", "cur_clk"),
                fan_pct=100 * fan / fan_max if fan is not None and fan_max else None,
                pcie_rx_bps=_field(pcie, "received"), pcie_tx_bps=_field(pcie, "sent"),
            ))

    def processes(self, index: int) -> tuple[GpuProcess, ...]:
        with self._locks[index]:
            if self._closed or index in self._lost:
                return ()
            h = self._handles[index]
            out: dict[int, GpuProcess] = {}
            for p in self._q("amdsmi_get_gpu_process_list", h) or ():
                if not isinstance(p, dict):
                    p = self._q("amdsmi_get_gpu_process_info", h, p)  # older bindings return handles
                if not isinstance(p, dict) or not isinstance(p.get("pid"), int) or p["pid"] <= 0:
                    continue
                usage = p.get("memory_usage")
                mem = _field(usage, "vram_mem") if isinstance(usage, dict) else _num(p.get("mem"))
                # cu_occupancy is a share of the compute units; engine_usage is busy time in ns, not a share.
                util = _num(p.get("cu_occupancy"))
                out.setdefault(p["pid"], GpuProcess(pid=p["pid"], gpu_index=index,
                                                    gpu_mem_bytes=None if mem is None else int(mem),
                                                    gpu_util_pct=util if util is not None and util <= 100 else None))
            return tuple(out.values())

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._q("amdsmi_shut_down")


def _int(value: float | None) -> int | None:
    return None if value is None else int(value)
