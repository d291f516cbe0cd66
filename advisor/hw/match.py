"""Match a GPU's driver name (``nvmlDeviceGetName``) to a catalog accelerator id.

Driver names do not follow the catalog's: an H100 SXM reports "NVIDIA H100 80GB HBM3", an A100
"NVIDIA A100-SXM4-80GB", a laptop part "... Laptop GPU". Known names go through an ordered rule table
(first match wins, optionally constrained by memory size); anything else is compared with the catalog
names after normalisation. A laptop part matches only a laptop entry (``_LAPTOP_RULES``), never a
desktop one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

GIB = 2**30

# (pattern on the normalised name, catalog id, (min_gib, max_gib) memory constraint or None)
_RULES: tuple[tuple[str, str, tuple[float, float] | None], ...] = (
    (r"\bgh200\b", "gh200-96gb", None),
    (r"\bh200\b", "h200", None),
    (r"\bh100\b.*\bnvl\b", "h100-nvl", None),
    (r"\bh100\b.*\bpcie\b", "h100-pcie", None),
    (r"\bh100\b", "h100-sxm", None),
    (r"\bb200\b", "b200", None),
    (r"\ba100\b.*\bpcie\b", "a100-80gb-pcie", (60, 90)),
    (r"\ba100\b", "a100-80gb-sxm", (60, 90)),
    (r"\ba100\b", "a100-40gb-sxm", (30, 50)),
    (r"\bv100\b.*\bpcie\b", "v100-pcie-16gb", (12, 20)),
    (r"\bv100\b", "v100-sxm2-32gb", (24, 40)),
    (r"\bv100\b", "v100-sxm2-16gb", (12, 20)),
    (r"\bl40s\b", "l40s", None),
    (r"\bl4\b", "l4", None),
    (r"\ba10g\b", "a10g", None),
    (r"\ba10\b", "a10", None),
    (r"\bt4\b", "t4", None),
    (r"\brtx pro 6000\b.*\bblackwell\b", "rtx-pro-6000-blackwell", None),
    (r"\brtx 6000 ada\b", "rtx-6000-ada", None),
    (r"\brtx a6000\b", "rtx-a6000", None),
    (r"\brtx 5090\b", "rtx-5090", None),
    (r"\brtx 5080\b", "rtx-5080", None),
    (r"\brtx 4090\b", "rtx-4090", None),
    (r"\brtx 4080 super\b", "rtx-4080-super", None),
    (r"\brtx 4070 ti super\b", "rtx-4070-ti-super", None),
    (r"\brtx 4060 ti\b", "rtx-4060-ti-16gb", (12, 20)),
    (r"\brtx 3090 ti\b", "rtx-3090-ti", None),
    (r"\brtx 3090\b", "rtx-3090", None),
    (r"\brtx 3060\b", "rtx-3060-12gb", (10, 14)),
    (r"\btitan rtx\b", "titan-rtx", None),
    (r"\brtx 2080 ti\b", "rtx-2080-ti", None),
    (r"\brtx 2080\b(?! super)", "rtx-2080", None),
    (r"\brtx 3060 ti\b", "rtx-3060-ti", None),
    (r"\brtx 3070 ti\b", "rtx-3070-ti", None),
    (r"\brtx 3070\b", "rtx-3070", None),
    (r"\brtx 3080 ti\b", "rtx-3080-ti", None),
    (r"\brtx 3080\b", "rtx-3080-12gb", (11, 13)),
    (r"\brtx 3080\b", "rtx-3080-10gb", (9, 11)),
    (r"\brtx 4060 ti\b", "rtx-4060-ti-8gb", (6, 10)),
    (r"\brtx 4060\b", "rtx-4060", None),
    (r"\brtx 4070 ti\b", "rtx-4070-ti", None),
    (r"\brtx 4070 super\b", "rtx-4070-super", None),
    (r"\brtx 4070\b", "rtx-4070", None),
    (r"\brtx 4080\b", "rtx-4080", None),
    (r"\brtx 5060 ti\b", "rtx-5060-ti-16gb", (12, 20)),
    (r"\brtx 5070 ti\b", "rtx-5070-ti", None),
    (r"\brtx 5070\b", "rtx-5070", None),
    (r"\brtx a4000\b", "rtx-a4000", None),
    (r"\brtx a5000\b", "rtx-a5000", None),
    # AMD (amdsmi market names: "AMD Instinct MI300X", "AMD Radeon RX 7900 XTX"), Intel (xpu-smi or the
    # PCI id table: "Intel Arc B580 Graphics"), Apple ("Apple M3 Max" from IOKit).
    (r"\bmi325x\b", "mi325x", None),
    (r"\bmi300x\b", "mi300x", None),
    (r"\bmi250x\b", "mi250x", None),
    (r"\brx 7900 xtx\b", "rx-7900-xtx", None),
    (r"\barc b580\b", "arc-b580", None),
    (r"\bapple m(\d) (max|pro|ultra)\b", r"m\1-\2", None),
    (r"\bapple m(\d)\b", r"m\1", None),
)

# Laptop parts ("... Laptop GPU"): their own entries, told apart by memory where a part has variants.
_LAPTOP_RULES: tuple[tuple[str, str, tuple[float, float] | None], ...] = (
    (r"\brtx 4090\b", "rtx-4090-laptop", None),
    (r"\brtx 4080\b", "rtx-4080-laptop", None),
    (r"\brtx 4070\b", "rtx-4070-laptop", None),
    (r"\brtx 4060\b", "rtx-4060-laptop", None),
    (r"\brtx 3080\b(?! ti)", "rtx-3080-laptop-16gb", (12, 20)),
    (r"\brtx 3080\b(?! ti)", "rtx-3080-laptop-8gb", (6, 10)),
)

_DROP = re.compile(r"\b(nvidia|geforce|tesla|quadro|amd|radeon|instinct|intel|generation)\b")


def normalise_name(name: str) -> str:
    """Lower case, vendor words dropped, punctuation turned into single spaces ("NVIDIA A100-SXM4-80GB" -> "a100 sxm4 80gb")."""
    text = re.sub(r"[^a-z0-9]+", " ", name.lower())
    text = _DROP.sub(" ", text)
    return " ".join(text.split())


def match_catalog_id(name: str, memory_total_bytes: int | None = None,
                     catalog_names: Mapping[str, str] | None = None) -> str | None:
    """The catalog id of a GPU from its driver name, or None when the catalog has no such part.

    Args:
        name: the device name as the driver reports it.
        memory_total_bytes: the device memory, used to tell memory variants apart (A100 40/80 GB ...).
        catalog_names: ``{id: name}`` of the catalog, for parts the rule table does not know
            (user-added entries); matched on the normalised name.
    Returns:
        A catalog id such as ``"rtx-4090"`` or ``"h100-sxm"``, or None.
    """
    norm = normalise_name(name)
    if not norm:
        return None
    laptop = "laptop" in norm or "mobile" in norm or norm.endswith(" max q")
    gib = None if not memory_total_bytes else memory_total_bytes / GIB
    for pattern, acc_id, mem in (_LAPTOP_RULES if laptop else _RULES):
        found = re.search(pattern, norm)
        if not found:
            continue
        if mem is not None and (gib is None or not mem[0] <= gib <= mem[1]):
            continue
        return found.expand(acc_id) if "\\" in acc_id else acc_id
    if laptop:
        return None
    for acc_id, acc_name in (catalog_names or {}).items():
        if normalise_name(acc_name) == norm or acc_id == norm.replace(" ", "-"):
            return acc_id
    return None


def accelerator_for_gpu(info, catalog):
    """The accelerator a detected GPU plans as: its catalog entry, else one derived from the driver's
    figures (``catalog.derive``, ``derived=True``), else None (nothing to derive from).

    Args:
        info: a ``GpuInfo``.
        catalog: a ``Catalog``.
    Returns:
        An ``Accelerator`` or None.
    """
    from advisor.catalog.derive import DeriveError, DriverFigures, derive_accelerator

    names = {a.id: a.name for a in catalog.accelerators.values()}
    acc_id = match_catalog_id(info.name, info.memory_total_bytes, names)
    if acc_id is not None and acc_id in catalog.accelerators:
        return catalog.accelerators[acc_id]
    if not getattr(info, "available", True):
        return None
    try:
        return derive_accelerator(DriverFigures(
            name=info.name, memory_total_bytes=info.memory_total_bytes, compute_capability=info.compute_capability,
            max_sm_clock_mhz=info.max_sm_clock_mhz, boost_sm_clock_mhz=info.boost_sm_clock_mhz,
            max_mem_clock_mhz=info.max_mem_clock_mhz, mem_bus_width_bits=info.mem_bus_width_bits,
            cuda_cores=info.cuda_cores, power_limit_w=info.power_limit_w, pcie_gen_max=info.pcie_gen_max,
            pcie_width_max=info.pcie_width_max))
    except DeriveError:
        return None
