"""Intel GPUs (Arc, Data Center GPU) through the kernel's sysfs and hwmon files, and xpu-smi where installed.

Nothing is imported and no daemon is needed: the DRM device directory gives the PCI id (named from a
table of Intel's device ids), the runtime power state (read first, so a sleeping GPU is not woken), the
actual and maximum graphics clock (``xe``: ``tile0/gt0/freq0/act_freq``; ``i915``: ``gt_act_freq_mhz``),
and its hwmon directory the energy counter (µJ; power is its rate between two samples), the power limit
(``power1_max``, µW), temperature and fan. Memory size and the marketing name come from
``xpu-smi discovery -j`` when xpu-smi is installed. Utilisation and memory in use are not in sysfs:
they are not available (None) from this backend.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from advisor.hw.records import GPU_LOST, GPU_SUSPENDED, BackendStatus, GpuInfo, GpuProcess, GpuSample, clean_sample
from advisor.subproc import bounded_text

SYSFS_DRM = "/sys/class/drm"
INTEL_VENDOR = "0x8086"
# PCI device ids of discrete Intel GPUs (Linux kernel drivers/gpu/drm/xe/xe_pci.c and include/drm/intel/pciids.h).
DEVICE_NAMES = {
    "0xe20b": "Intel Arc B580 Graphics", "0xe20c": "Intel Arc B570 Graphics",
    "0x56a0": "Intel Arc A770 Graphics", "0x56a1": "Intel Arc A750 Graphics", "0x56a5": "Intel Arc A380 Graphics",
    "0x0bd5": "Intel Data Center GPU Max 1550", "0x0bda": "Intel Data Center GPU Max 1100",
}
XPU_SMI_TIMEOUT_S = 5.0


class IntelUnavailable(Exception):
    """No Intel GPU in sysfs; the message is the one-line reason."""


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def _float(path: Path) -> float | None:
    text = _read(path)
    try:
        return None if text is None else float(text)
    except ValueError:
        return None


def find_cards(root: str | Path = SYSFS_DRM) -> list[Path]:
    """``/sys/class/drm/cardN`` directories of Intel display devices, in card order (not connectors)."""
    out = []
    try:
        entries = sorted(Path(root).iterdir(), key=lambda p: (len(p.name), p.name))
    except OSError:
        return out
    for card in entries:
        if not card.name.startswith("card") or "-" in card.name:
            continue
        dev = card / "device"
        if (_read(dev / "vendor") or "").lower() == INTEL_VENDOR and (_read(dev / "class") or "").startswith("0x03"):
            out.append(card)
    return out


def _xpu_smi(run: Callable[[list[str]], str | None]) -> list[dict]:
    text = run(["xpu-smi", "discovery", "-j"])
    try:
        doc = json.loads(text) if text else {}
    except ValueError:
        return []
    devices = doc.get("device_list") if isinstance(doc, dict) else None
    return [d for d in devices if isinstance(d, dict)] if isinstance(devices, list) else []


def _run(argv: list[str]) -> str | None:
    if shutil.which(argv[0]) is None:
        return None
    return bounded_text(argv, XPU_SMI_TIMEOUT_S)


class IntelSysfsBackend:
    """GPU backend over sysfs/hwmon. Create it with ``IntelSysfsBackend.open()``.

    Args:
        cards: the DRM card directories (``find_cards()``).
        run: runs a command and returns its stdout or None (xpu-smi; a recording in tests).
        clock: monotonic seconds, for power from the energy counter.
    """

    name = "intel"
    simulated = False

    def __init__(self, cards: list[Path], *, run: Callable[[list[str]], str | None] = _run,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._cards = cards
        self._clock = clock
        self._xpu = _xpu_smi(run)
        self._energy: dict[int, tuple[float, float]] = {}
        self._info: dict[int, GpuInfo] = {}

    @classmethod
    def open(cls, root: str | Path = SYSFS_DRM, **kwargs) -> IntelSysfsBackend:
        """Raises IntelUnavailable when sysfs lists no Intel display device."""
        cards = find_cards(root)
        if not cards:
            raise IntelUnavailable("no Intel GPU in sysfs")
        return cls(cards, **kwargs)

    def status(self) -> BackendStatus:
        drivers = sorted({Path(_link(c / "device" / "driver")).name for c in self._cards} - {""})
        text = f"Intel sysfs: {len(self._cards)} GPU(s)" + (f", driver {', '.join(drivers)}" if drivers else "")
        text += "; xpu-smi found" if self._xpu else "; xpu-smi not installed (utilisation and memory not available)"
        return BackendStatus(name=self.name, status=text, driver_version=", ".join(drivers) or None)

    def device_count(self) -> int:
        return len(self._cards)

    def runtime_status(self, index: int) -> str | None:
        return _read(self._cards[index] / "device" / "power" / "runtime_status")

    def pci_name(self, index: int) -> str | None:
        return None  # named from sysfs/xpu-smi in gpu_info, which does not wake an Intel card

    def _hwmon(self, index: int) -> Path | None:
        try:
            return next(iter(sorted((self._cards[index] / "device" / "hwmon").iterdir())), None)
        except OSError:
            return None

    def _xpu_dev(self, index: int) -> dict:
        bdf = Path(_link(self._cards[index] / "device")).name
        for d in self._xpu:
            if str(d.get("pci_bdf_address", "")).lower() == bdf.lower() or d.get("device_id") == index:
                return d
        return {}

    def gpu_info(self, index: int) -> GpuInfo:
        dev = self._cards[index] / "device"
        bdf = Path(_link(dev)).name or None
        if not dev.exists():
            return GpuInfo(index=index, name="Intel GPU", uuid="", pci_bus_id=bdf, state=GPU_LOST, vendor="intel")
        if self.runtime_status(index) == "suspended":
            name = DEVICE_NAMES.get((_read(dev / "device") or "").lower(), "Intel GPU")
            return GpuInfo(index=index, name=name, uuid="", pci_bus_id=bdf, state=GPU_SUSPENDED, vendor="intel")
        if index not in self._info:
            x = self._xpu_dev(index)
            hw = self._hwmon(index)
            limit = _float(hw / "power1_max") if hw else None
            size = x.get("memory_physical_size_byte")
            self._info[index] = GpuInfo(
                index=index, name=_clean_name(x.get("device_name"))
                or DEVICE_NAMES.get((_read(dev / "device") or "").lower(), "Intel GPU"),
                uuid=str(x.get("uuid") or ""), pci_bus_id=bdf,
                memory_total_bytes=int(size) if isinstance(size, (int, str)) and str(size).isascii() and str(size).isdigit() else None,
                power_limit_w=limit / 1e6 if limit else None, max_sm_clock_mhz=self._freq(index, "max"),
                pcie_width_max=_int(_float(dev / "max_link_width")), pcie_width_current=_int(_float(dev / "current_link_width")),
                fan_count=sum(1 for _ in hw.glob("fan*_input")) if hw else None, vendor="intel")
        return self._info[index]

    def _freq(self, index: int, which: str) -> float | None:
        card = self._cards[index]
        xe = card / "device" / "tile0" / "gt0" / "freq0" / f"{which}_freq"
        return _float(xe) if xe.exists() else _float(card / f"gt_{which}_freq_mhz")

    def sample(self, index: int) -> GpuSample:
        dev = self._cards[index] / "device"
        if not (dev / "vendor").exists():
            return GpuSample(index=index, state=GPU_LOST)
        hw = self._hwmon(index)
        power = None
        energy = _float(hw / "energy1_input") if hw else None
        now = self._clock()
        if energy is not None:
            then = self._energy.get(index)
            if then is not None and now > then[0] and energy >= then[1]:
                power = (energy - then[1]) / 1e6 / (now - then[0])
            self._energy[index] = (now, energy)
        limit = _float(hw / "power1_max") if hw else None
        temps = [t for t in (_float(p) for p in sorted(hw.glob("temp*_input"))) if t is not None] if hw else []
        return clean_sample(GpuSample(
            index=index, power_w=power, power_limit_w=limit / 1e6 if limit else None,
            energy_j=None if energy is None else energy / 1e6,
            temp_c=max(temps) / 1000 if temps else None, sm_clock_mhz=self._freq(index, "act"),
            mem_total_bytes=self.gpu_info(index).memory_total_bytes,
        ))

    def processes(self, index: int) -> tuple[GpuProcess, ...]:
        return ()  # per-process use needs DRM fdinfo of every process (root for others'): not read here

    def close(self) -> None:
        pass


def _link(path: Path) -> str:
    try:
        return str(path.resolve())
    except OSError:
        return ""


def _clean_name(name) -> str | None:
    """xpu-smi's "Intel(R) Arc(TM) B580 Graphics" as "Intel Arc B580 Graphics"."""
    return " ".join(re.sub(r"\((R|TM|C)\)", " ", str(name)).split()) if name else None


def _int(value: float | None) -> int | None:
    return None if value is None else int(value)

