"""Recorded hardware for the non-NVIDIA backends: an Intel B580 sysfs tree, Apple ioreg output, amdsmi stub."""

from __future__ import annotations

import json
import os
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"


def intel_tree(root: Path, fixture: str = "intel_b580_xe.json") -> tuple[Path, str]:
    """Build ``root/class/drm/card0`` from the recorded files; returns (drm root, xpu-smi JSON text)."""
    doc = json.loads((FIXTURES / fixture).read_text())
    dev = root / "devices" / "pci0000:00" / doc["bdf"]
    for rel, text in doc["files"].items():
        (dev / rel).parent.mkdir(parents=True, exist_ok=True)
        (dev / rel).write_text(text + "\n")
    driver = root / "bus" / "pci" / "drivers" / doc["driver"]
    driver.mkdir(parents=True)
    os.symlink(driver, dev / "driver")
    drm = root / "class" / "drm"
    (drm / "card0").mkdir(parents=True)
    os.symlink(dev, drm / "card0" / "device")
    (drm / "card0-DP-1").mkdir()  # a connector: not a card
    return drm, json.dumps(doc["xpu_smi_discovery"])


def ioreg_text() -> str:
    return (FIXTURES / "ioreg_m3_max.txt").read_text()


def apple_run(argv: list[str]) -> str | None:
    if argv[0] == "ioreg":
        return ioreg_text()
    if argv[:2] == ["sysctl", "-n"]:
        return "137438953472\n"
    return None
