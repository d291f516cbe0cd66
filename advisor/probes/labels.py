"""How a probe's figures are named and written for people: "Host memory bandwidth (triad) 12.3 GB/s".

The probes keep short machine keys (``host-bandwidth``, ``triad``, ``mfu`` as a fraction); this module turns
them into a label and a value with its unit, and says when a kernel has nothing measured (a rate of zero or
less is "not measured", never "0.0 TFLOP/s"). Pure: no torch, no Qt.
"""

from __future__ import annotations

import math

from advisor.units import sig3

# What each probe measures, as a noun phrase; the kernel goes in brackets after it.
PROBE_NOUNS = {
    "host-bandwidth": "Host memory bandwidth",
    "device-bandwidth": "Memory bandwidth",
    "transfer": "Host-device transfer",
    "matmul": "Matmul throughput",
    "capacity": "Memory capacity",
    "disk": "Disk read",
    "allreduce": "All-reduce bandwidth",
    "train-step": "Training step",
}

KERNEL_NAMES = {
    ("train-step", "tokens_per_s"): "throughput",
    ("train-step", "achieved"): "achieved compute",
    ("train-step", "mfu"): "model FLOP utilisation",
    ("allreduce", "algbw"): "algorithm bandwidth",
    ("allreduce", "busbw"): "bus bandwidth",
    ("capacity", "usable"): "usable",
    ("capacity", "free"): "free",
    ("capacity", "total"): "total",
}


def kernel_label(probe: str, kernel: str, device: str | None = None) -> str:
    """A readable name for one measured figure.

    Args:
        probe: the probe key (``host-bandwidth``).
        kernel: the kernel key (``triad``, ``read_4``, ``fp16``, ``mfu``).
        device: ``cpu`` or ``cuda:N``; "Memory bandwidth" reads "Host memory bandwidth" on the CPU.
    Returns:
        For instance ``Host memory bandwidth (triad)`` or ``Training step (model FLOP utilisation)``.
    """
    noun = PROBE_NOUNS.get(probe, probe.replace("-", " ").capitalize())
    if probe == "device-bandwidth":
        noun = "Host memory bandwidth" if device == "cpu" else "Device memory bandwidth"
    name = KERNEL_NAMES.get((probe, kernel))
    if name is None:
        if probe == "disk" and kernel.startswith("read_"):
            n = kernel.removeprefix("read_")
            name = f"{n} reader{'s' if n != '1' else ''}"
        else:
            name = kernel.replace("_", " ")
    return f"{noun} ({name})"


def is_measured(value: float | None) -> bool:
    """Whether a probe figure is a measurement (a finite rate above zero)."""
    return value is not None and math.isfinite(value) and value > 0


def kernel_value(value: float | None, unit: str) -> str:
    """A measured figure with its unit, three significant figures; ``not measured`` when there is none.

    A ``fraction`` (MFU) is written as a percentage: 0.61 -> ``61.0 %``.
    """
    if not is_measured(value):
        return "not measured"
    if unit == "fraction":
        return f"{sig3(100 * value)} %"
    if unit in ("GB/s", "GB", "TFLOP/s", "TOP/s", "tokens/s") and value >= 1000:
        return f"{value:,.0f} {unit}"
    return f"{sig3(value)} {unit}"


def run_mode(params) -> str:
    """``quick`` or ``full``: how a probe ran (from its parameters), shown beside every stored or displayed
    figure, since a quick run uses smaller arrays and fewer repetitions and is not comparable with a full one."""
    return "quick" if (params or {}).get("quick") else "full"
