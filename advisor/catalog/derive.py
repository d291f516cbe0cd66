"""An accelerator entry derived from what the driver reports, for a GPU the catalog does not hold
(docs/method.md, "Accelerators derived from the driver").

NVIDIA GPUs only (compute capability names the architecture). The driver gives the memory size,
the memory clock and bus width (bandwidth), the CUDA core count (SMs) and the SM clocks; the
architecture gives the work per SM per clock of each precision. Every figure carries how it was
derived (``Accelerator.derivation``); the probes replace them once run (``refine_with_probes``).

Per-SM rates (FLOP per clock per SM, dense, no 2:4 sparsity), from NVIDIA's architecture whitepapers
(Volta V100 2017, Turing 2018, Ampere A100 2020 and GA102 2020, Ada 2022, Hopper H100 2022,
Blackwell 2024/2025). ``fp16_acc16`` is the FP16 tensor rate with FP16 accumulate; GeForce boards
run FP16/BF16 with FP32 accumulate at half of it, workstation and datacenter boards at the full rate;
TF32 runs at half and FP8 at twice that FP32-accumulate rate, INT8 at twice the FP16-accumulate rate, and
Blackwell's FP4 (NVFP4, FP32 accumulate) at four times it on every board (RTX 5090: 170 SM x 2.41 GHz x 1024 x 4 =
1,676 TFLOPS dense, half its 3,352 "AI TOPS"; B200 9 PFLOPS dense, twice its FP8).
The rule reproduces published figures: RTX 4090 128 SM x 2.52 GHz x 1024 = 330.3 TFLOPS (165.2 with
FP32 accumulate), H100 SXM 132 SM x 1.83 GHz x 4096 = 989 TFLOPS, A100 108 x 1.41 x 2048 = 312.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from advisor.catalog.records import PEAK_PRECISIONS, Accelerator

GIB = 2**30


@dataclass(frozen=True)
class Arch:
    """Per-SM throughput of one NVIDIA architecture (compute capability)."""

    name: str
    fp32_cores_per_sm: int
    fp16_acc16_per_sm: int  # dense FP16 tensor FLOP/clk/SM, FP16 accumulate
    bf16: bool  # a BF16 tensor path
    tf32: bool  # a TF32 path, at half the FP16/BF16 (FP32-accumulate) rate
    fp8: bool  # an FP8 path, at twice the FP16/BF16 (FP32-accumulate) rate
    int8_ratio: float  # INT8 rate / fp16_acc16 rate
    fp4_ratio: float = 0.0  # FP4 rate / fp16_acc16 rate (0: no FP4 tensor path)


ARCHS: dict[tuple[int, int], Arch] = {
    (7, 0): Arch("Volta", 64, 1024, False, False, False, 0.0),
    (7, 5): Arch("Turing", 64, 1024, False, False, False, 2.0),
    (8, 0): Arch("Ampere (GA100)", 64, 2048, True, True, False, 2.0),
    (8, 6): Arch("Ampere (GA10x)", 128, 1024, True, True, False, 2.0),
    (8, 7): Arch("Ampere (Orin)", 128, 1024, True, True, False, 2.0),
    (8, 9): Arch("Ada Lovelace", 128, 1024, True, True, True, 2.0),
    (9, 0): Arch("Hopper", 128, 4096, True, True, True, 2.0),
    (10, 0): Arch("Blackwell (GB100)", 128, 8192, True, True, True, 2.0, 4.0),
    (12, 0): Arch("Blackwell (GB20x)", 128, 1024, True, True, True, 2.0, 4.0),
}

# GeForce drivers report as "max SM clock" the top of the voltage/frequency curve, above the rated
# boost clock that peak figures use: RTX 4090 3120 MHz against 2520 rated (0.81), RTX 4060 Laptop
# 3105 against 2370 at 115 W (0.76), RTX 3090 2100 against 1695 (0.81) (nvidia-smi -q "Max Clocks"
# against NVIDIA's specification pages). Datacenter boards report their boost clock as the maximum.
GEFORCE_MAX_TO_BOOST = 0.81


class DeriveError(ValueError):
    """The driver did not give enough to derive an entry (the message says which figure is missing)."""


@dataclass(frozen=True)
class DriverFigures:
    """What the driver reports about one GPU, in the driver's units (MHz, bits, bytes, W)."""

    name: str
    memory_total_bytes: int | None
    compute_capability: tuple[int, int] | None
    max_sm_clock_mhz: float | None = None
    boost_sm_clock_mhz: float | None = None  # rated boost (NVML customer boost max) when reported
    max_mem_clock_mhz: float | None = None
    mem_bus_width_bits: int | None = None
    cuda_cores: int | None = None
    sm_count: int | None = None
    power_limit_w: float | None = None
    pcie_gen_max: int | None = None
    pcie_width_max: int | None = None


def is_geforce(name: str) -> bool:
    """A GeForce board (half-rate FP32 accumulate): "GeForce" or an "RTX nnnn" without a workstation
    letter. TITAN boards run the full rate (Turing whitepaper: TITAN RTX 130.5 TFLOPS FP16/FP32-acc)."""
    n = name.lower()
    if "titan" in n:
        return False
    return "geforce" in n or bool(re.search(r"\brtx [2-5]0[5-9]0\b", n))


def spec_peaks(compute_capability: tuple[int, int], sms: int, cores: int, clock_hz: float, *,
               half_rate_fp32_accumulate: bool) -> dict[str, float | None]:
    """Dense peak FLOP/s per precision from the SM count, core count and clock (the ``ARCHS`` rates).

    Args:
        compute_capability: (major, minor), a key of ``ARCHS``.
        sms: streaming multiprocessors.
        cores: FP32 CUDA cores.
        clock_hz: the boost clock.
        half_rate_fp32_accumulate: GeForce boards (FP16/BF16 with FP32 accumulate at half rate).
    Returns:
        ``{"fp32", "tf32", "bf16", "fp16", "fp8", "fp4", "int8"}`` -> FLOP/s or None (no such path).
    Raises:
        DeriveError: unknown compute capability.
    """
    arch = ARCHS.get(tuple(compute_capability))
    if arch is None:
        raise DeriveError(f"unknown compute capability {compute_capability}")
    dense16 = sms * clock_hz * arch.fp16_acc16_per_sm
    acc32 = dense16 / 2 if half_rate_fp32_accumulate else dense16
    return {
        "fp32": cores * 2 * clock_hz,
        "tf32": acc32 / 2 if arch.tf32 else None,
        "bf16": acc32 if arch.bf16 else None,
        "fp16": acc32,
        "fp8": acc32 * 2 if arch.fp8 else None,
        "fp4": dense16 * arch.fp4_ratio if arch.fp4_ratio else None,
        "int8": dense16 * arch.int8_ratio if arch.int8_ratio else None,
    }


def slug(name: str) -> str:
    """A catalog-style id from a driver name: "NVIDIA GeForce RTX 4060 Laptop GPU" -> "rtx-4060-laptop"."""
    text = re.sub(r"\b(nvidia|geforce|gpu|tesla|generation)\b", " ", name.lower())
    return "-".join(re.findall(r"[a-z0-9]+", text)) or "gpu"


def derive_accelerator(fig: DriverFigures) -> Accelerator:
    """A catalog entry from driver figures, ``derived=True`` and the derivation of each figure.

    Formulas: bandwidth = memory clock x bus width x 2 / 8 (double data rate on NVML's memory clock);
    FP32 = CUDA cores x 2 FLOP (FMA) x clock; tensor = SMs x clock x per-SM rate of the architecture
    (table ``ARCHS``), halved for FP32 accumulate on GeForce boards. Clock = the rated boost clock when
    the driver reports it, else the driver's maximum SM clock (x ``GEFORCE_MAX_TO_BOOST`` on GeForce).

    Args:
        fig: the driver's figures.
    Returns:
        An ``Accelerator`` with id ``derived:<slug>``, kind ``consumer``/``workstation``/``datacenter``.
    Raises:
        DeriveError: no memory size, no bandwidth figures, or an unknown compute capability.
    """
    if not fig.memory_total_bytes:
        raise DeriveError(f"{fig.name}: the driver reports no memory size")
    how: dict[str, str] = {"memory": "driver memory total"}
    if not fig.max_mem_clock_mhz or not fig.mem_bus_width_bits:
        raise DeriveError(f"{fig.name}: the driver reports no memory clock or bus width")
    bw = float(fig.max_mem_clock_mhz) * 1e6 * int(fig.mem_bus_width_bits) * 2 / 8
    how["mem_bandwidth"] = (f"{fig.max_mem_clock_mhz:.0f} MHz x {fig.mem_bus_width_bits} bit x 2 / 8 "
                            f"= {bw / 1e9:.0f} GB/s")
    arch = ARCHS.get(tuple(fig.compute_capability)) if fig.compute_capability else None
    geforce = is_geforce(fig.name)
    consumer_clocks = geforce or "titan" in fig.name.lower()
    fp32 = tf32 = bf16 = fp16 = fp8 = fp4 = int8 = None
    if arch is None:
        how["compute"] = f"not derived: unknown compute capability {fig.compute_capability}"
    else:
        sms = fig.sm_count or (fig.cuda_cores // arch.fp32_cores_per_sm if fig.cuda_cores else None)
        if fig.boost_sm_clock_mhz:
            clock_hz, clk_how = fig.boost_sm_clock_mhz * 1e6, f"rated boost {fig.boost_sm_clock_mhz:.0f} MHz"
        elif fig.max_sm_clock_mhz:
            factor = GEFORCE_MAX_TO_BOOST if consumer_clocks else 1.0
            clock_hz = fig.max_sm_clock_mhz * 1e6 * factor
            clk_how = (f"max SM clock {fig.max_sm_clock_mhz:.0f} MHz x {factor} = {clock_hz / 1e6:.0f} MHz"
                       if factor != 1.0 else f"max SM clock {fig.max_sm_clock_mhz:.0f} MHz")
        else:
            clock_hz, clk_how = None, ""
        if not sms or not clock_hz:
            how["compute"] = "not derived: the driver reports no core count or SM clock"
        else:
            cores = fig.cuda_cores or sms * arch.fp32_cores_per_sm
            peaks = spec_peaks(fig.compute_capability, sms, cores, clock_hz, half_rate_fp32_accumulate=geforce)
            fp32, tf32, bf16, fp16, fp8, fp4, int8 = (peaks[k] for k in PEAK_PRECISIONS)
            how["fp32"] = f"{cores} cores x 2 x {clk_how}"
            how["tensor"] = (f"{sms} SM x {clk_how} x {arch.fp16_acc16_per_sm} FLOP/clk/SM ({arch.name})"
                             + (", halved for FP32 accumulate (GeForce)" if geforce else ""))
    kind = "consumer" if consumer_clocks else ("workstation" if re.search(r"\brtx\b|quadro", fig.name.lower())
                                       else "datacenter")
    gen, width = fig.pcie_gen_max, fig.pcie_width_max
    pcie_bps = None
    if gen and width:
        per_lane = {3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563}.get(int(gen))  # GB/s per lane after encoding
        pcie_bps = None if per_lane is None else per_lane * width * 1e9
    notes = "DERIVED from driver figures: " + "; ".join(f"{k}: {v}" for k, v in how.items())
    return Accelerator(
        id=f"derived:{slug(fig.name)}", vendor="NVIDIA", name=fig.name, kind=kind,
        memory_bytes=int(fig.memory_total_bytes), memory_type="", mem_bandwidth_bps=bw,
        fp32_flops=fp32, tf32_flops=tf32, bf16_flops=bf16, fp16_flops=fp16, fp8_flops=fp8, fp4_flops=fp4, int8_ops=int8,
        tdp_w=fig.power_limit_w,
        interconnect=f"PCIe {gen}.0 x{width}" if gen and width else "", interconnect_bps=pcie_bps,
        pcie_gen=gen, source="derived from the driver's figures", notes=notes,
        derived=True, derivation=tuple(how.items()),
    )


def refine_with_probes(acc: Accelerator, *, mem_bandwidth_bps: float | None = None,
                       matmul_flops: dict[str, float] | None = None) -> Accelerator:
    """The derived entry with measured figures in place of the derived ones.

    Args:
        acc: a derived (or catalog) entry.
        mem_bandwidth_bps: the device-bandwidth probe's figure.
        matmul_flops: the matmul probe's achieved FLOP/s per precision ("fp32", "bf16", "fp16", "fp8", "tf32").
    Returns:
        A copy whose refined figures say "measured" in ``derivation``.
    """
    changes: dict = {}
    how = dict(acc.derivation)
    if mem_bandwidth_bps and mem_bandwidth_bps > 0:
        changes["mem_bandwidth_bps"] = float(mem_bandwidth_bps)
        how["mem_bandwidth"] = f"measured {mem_bandwidth_bps / 1e9:.0f} GB/s (device-bandwidth probe)"
    field_of = {"fp32": "fp32_flops", "tf32": "tf32_flops", "bf16": "bf16_flops", "fp16": "fp16_flops",
                "fp8": "fp8_flops"}
    for precision, value in (matmul_flops or {}).items():
        if precision in field_of and value and value > 0:
            changes[field_of[precision]] = float(value)
            how[precision] = f"measured {value / 1e12:.1f} TFLOP/s (matmul probe)"
    return replace(acc, derivation=tuple(how.items()), **changes)
