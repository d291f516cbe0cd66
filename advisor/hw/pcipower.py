"""PCI runtime power state from sysfs, read without touching the GPU (so a sleeping laptop dGPU stays asleep).

Linux exposes ``/sys/bus/pci/devices/<domain:bus:dev.fn>/power/runtime_status`` ("active",
"suspended", "suspending", "resuming", "unsupported"). Any NVML query to a suspended GPU wakes it, so the
monitor reads this file first. Elsewhere (Windows, macOS, no sysfs) the state is unknown (None).
"""

from __future__ import annotations

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
