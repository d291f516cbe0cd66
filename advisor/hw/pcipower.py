"""PCI runtime power state from sysfs, read without touching the GPU (so a sleeping laptop dGPU stays asleep).

Linux exposes ``/sys/bus/pci/devices/<domain:bus:dev.fn>/power/runtime_status`` ("active",
"suspended", "suspending", "resuming", "unsupported"). Any NVML query to a suspended GPU wakes it, so the
monitor reads this file first. Elsewhere (Windows, macOS, no sysfs) the state is unknown (None).
"""

from __future__ import annotations

import re
from pathlib import Path

SYSFS_PCI = "/sys/bus/pci/devices"
NVIDIA_VENDOR = "0x10de"


def sysfs_bus_id(nvml_bus_id: str) -> str:
    """NVML's "00000000:01:00.0" (8-digit domain, upper case) as sysfs names it: "0000:01:00.0"."""
    text = nvml_bus_id.strip().lower()
    domain, _, rest = text.partition(":")
    if not rest:
        return text
    return f"{domain[-4:].zfill(4)}:{rest}"


def runtime_status(bus_id: str | None, root: str | Path = SYSFS_PCI) -> str | None:
    """The runtime power state of a PCI device, or None when unknown.

    Args:
        bus_id: PCI address in NVML or sysfs form.
        root: the sysfs PCI devices directory (tests point it at a temporary tree).
    """
    if not bus_id:
        return None
    try:
        return (Path(root) / sysfs_bus_id(bus_id) / "power" / "runtime_status").read_text().strip() or None
    except (OSError, UnicodeDecodeError):
        return None


#: Where Linux distributions install the PCI ID database (hwdata, pciutils); read, never downloaded.
PCI_IDS_PATHS = ("/usr/share/hwdata/pci.ids", "/usr/share/misc/pci.ids", "/usr/share/pci.ids")


def pci_ids(bus_id: str | None, root: str | Path = SYSFS_PCI) -> tuple[str, str] | None:
    """The ``(vendor, device)`` ids of a PCI device as sysfs gives them ("0x10de", "0x28a0"), or None.

    Reading these files is config-space data the kernel cached at boot: it does not wake the device.
    """
    if not bus_id:
        return None
    dev = Path(root) / sysfs_bus_id(bus_id)
    try:
        return (dev / "vendor").read_text().strip().lower(), (dev / "device").read_text().strip().lower()
    except (OSError, UnicodeDecodeError):
        return None


def pci_db_name(vendor: str, device: str, paths: tuple[str | Path, ...] = PCI_IDS_PATHS) -> str | None:
    """The device's name in the PCI ID database (the pci.ids file of https://pci-ids.ucw.cz), or None.

    A line ``\t28a0  AD107M [GeForce RTX 4060 Max-Q / Mobile]`` under vendor ``10de`` gives the text in
    brackets (the marketing name) when present, else the whole name.

    Args:
        vendor, device: ids as sysfs writes them ("0x10de") or bare hex ("10de").
        paths: candidate pci.ids files, first readable one wins.
    """
    v, d = vendor.lower().removeprefix("0x"), device.lower().removeprefix("0x")
    for path in paths:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                in_vendor = False
                for line in f:
                    if not line.strip() or line.startswith("#"):
                        continue
                    if not line.startswith("\t"):
                        if in_vendor:
                            return None
                        in_vendor = line[:4].lower() == v
                    elif in_vendor and not line.startswith("\t\t") and line[1:5].lower() == d:
                        name = line[5:].strip()
                        bracket = re.search(r"\[([^\]]+)\]", name)
                        return bracket.group(1) if bracket else name
        except OSError:
            continue
    return None


def nvidia_display_devices(root: str | Path = SYSFS_PCI) -> list[str]:
    """sysfs addresses of NVIDIA display-class devices (VGA or 3D controller), in bus order.

    NVML numbers devices in PCI bus order, so this list maps NVML indices to addresses without a driver
    call (when the lengths agree).
    """
    out = []
    try:
        entries = sorted(Path(root).iterdir())
    except OSError:
        return out
    for dev in entries:
        try:
            if (dev / "vendor").read_text().strip().lower() != NVIDIA_VENDOR:
                continue
            if not (dev / "class").read_text().strip().lower().startswith("0x03"):
                continue
        except OSError:
            continue
        out.append(dev.name)
    return out


def sysfs_int(bus_id: str | None, name: str, root: str | Path = SYSFS_PCI) -> int | None:
    """A whole number the driver publishes in the device's sysfs directory (amdgpu's ``mem_info_vram_total``,
    ``mem_info_gtt_total``: bytes), or None when absent or not a plain non-negative number below 2**50."""
    if not bus_id:
        return None
    try:
        text = (Path(root) / sysfs_bus_id(bus_id) / name).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not text.isdigit() or len(text) > 16:
        return None
    value = int(text)
    return value if value < 2**50 else None
