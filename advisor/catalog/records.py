"""Typed catalog records: accelerators and cloud offers (model presets are ``estimate.model.ModelArch``)."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

# The characters an id (accelerator, cloud offer, model preset) may hold: it starts with a letter or a
# digit, then letters, digits and ``. _ : + @ / -``, at most 128 in all. No space, quote, newline or other
# control character, so an id can never leave a comment, a quoted word or a YAML scalar it is written in.
ID_CHARS = "letters, digits and . _ : + @ / - (starting with a letter or digit, at most 128)"
ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:+@/-]{0,127}")


def check_id(value: object, what: str = "id") -> str:
    """Return ``value`` when it is a valid id (``ID_PATTERN``).

    Raises:
        ValueError: one line naming ``what`` and the allowed characters (the value is shown with ``repr``,
            so a newline in it is printed as ``\\n``).
    """
    if not isinstance(value, str) or not ID_PATTERN.fullmatch(value):
        raise ValueError(f"{what}: {value!r} is not a valid id (allowed: {ID_CHARS})")
    return value


PRECISIONS = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8", "int4")


@dataclass(frozen=True)
class Accelerator:
    """One accelerator with its peak figures. Compute peaks are DENSE tensor figures in FLOP/s."""

    id: str
    vendor: str
    name: str
    kind: str  # consumer | workstation | datacenter | tpu | aws-custom | apple
    memory_bytes: int
    memory_type: str
    mem_bandwidth_bps: float  # bytes per second (decimal)
    fp32_flops: float | None
    tf32_flops: float | None
    bf16_flops: float | None
    fp16_flops: float | None
    fp8_flops: float | None
    int8_ops: float | None
    tdp_w: float | None
    # FP4 products (NVIDIA Blackwell's NVFP4, AMD CDNA 4's MXFP4): twice the FP8 rate where the part has the units
    fp4_flops: float | None = None
    interconnect: str = ""
    interconnect_bps: float | None = None  # per direction, bytes/s
    pcie_gen: int | None = None
    launch_year: int | None = None
    launch_price_usd: float | None = None
    street_price_usd: float | None = None
    street_price_date: str = ""
    data_date: str = ""
    source: str = ""
    notes: str = ""
    # Unified memory (Apple Silicon): the share of it the GPU may use (macOS's default working-set
    # limit); ``usable_memory_bytes`` applies it. None for discrete cards (all of it).
    gpu_memory_share: float | None = None
    derived: bool = False  # True: derived from driver figures (``catalog.derive``), not a catalog row
    derivation: tuple[tuple[str, str], ...] = ()  # (figure, how it was derived) for derived entries

    @property
    def usable_memory_bytes(self) -> int:
        """Memory a job may place on the device: all of it, or the GPU share of unified memory."""
        if self.gpu_memory_share:
            return int(self.memory_bytes * self.gpu_memory_share)
        return self.memory_bytes

    @property
    def stacks(self) -> tuple[str, ...]:
        """The software stacks that run on this part, from its vendor and kind (``catalog.stacks``)."""
        return _stacks_of(self.vendor, self.kind)

    @property
    def memory_gib(self) -> float:
        return self.memory_bytes / 2**30

    @property
    def price_usd(self) -> float | None:
        """Purchase price: street price where known, else the launch price."""
        return self.street_price_usd or self.launch_price_usd

    def supports(self, precision: str) -> bool:
        """Whether the accelerator has a native matrix path for the precision."""
        if precision == "fp8":
            return bool(self.fp8_flops)
        if precision == "fp4":
            return bool(self.fp4_flops)
        if precision == "bf16":
            return bool(self.bf16_flops)
        return self.peak_flops(precision) is not None

    def peak_flops(self, precision: str) -> float | None:
        """Dense peak FLOP/s for a precision, falling back to the nearest slower path the part has.

        fp8 without support runs at the bf16/fp16 rate, fp4 without FP4 units at the fp8 rate (and on down); tf32
        falls back to fp32; int4 uses the int8 rate.
        ``peak_precision`` says which path a figure comes from. ``fp16acc`` is fp16 multiplied with fp16
        accumulation (cuBLAS ``CUBLAS_COMPUTE_16F``): half the int8 rate on NVIDIA tensor cores since Turing, which
        on GeForce parts is twice the fp16 figure the catalog lists (FP32 accumulation, half rate there) and on
        workstation and datacenter parts equal to it (NVIDIA Ampere GA102 whitepaper, 2020, RTX 3090: FP16 tensor
        142 TFLOPS with FP16 accumulate, 71 with FP32, INT8 284 TOPS; Ada AD102 whitepaper, 2022, RTX 4090: 330.3,
        165.2, 660.6; A100: 312 either way, INT8 624).
        """
        if precision == "fp16acc":
            fp16 = self.peak_flops("fp16")
            return max(fp16 or 0.0, (self.int8_ops or 0.0) / 2.0) or None
        for name in _PEAK_CHAINS[precision]:
            value = getattr(self, name)
            if value:
                return value
        return None

    def peak_precision(self, precision: str) -> str | None:
        """The path ``peak_flops(precision)`` uses: ``fp16`` for bf16 on a T4 or V100 (no bf16 units), the
        precision itself where the part has units for it, None where it has no path at all."""
        if precision == "fp16acc":
            return "fp16" if self.peak_flops(precision) else None
        for name in _PEAK_CHAINS[precision]:
            if getattr(self, name):
                return _PEAK_NAMES[name]
        return None


_PEAK_CHAINS = {
    "fp32": ("fp32_flops",),
    "tf32": ("tf32_flops", "fp32_flops"),
    "bf16": ("bf16_flops", "fp16_flops", "fp32_flops"),
    "fp16": ("fp16_flops", "bf16_flops", "fp32_flops"),
    "fp8": ("fp8_flops", "bf16_flops", "fp16_flops"),
    "fp4": ("fp4_flops", "fp8_flops", "bf16_flops", "fp16_flops"),
    "int8": ("int8_ops", "fp8_flops", "bf16_flops", "fp16_flops"),
    "int4": ("int8_ops", "fp8_flops", "bf16_flops", "fp16_flops"),
}
_PEAK_NAMES = {"fp32_flops": "fp32", "tf32_flops": "tf32", "bf16_flops": "bf16", "fp16_flops": "fp16",
               "fp8_flops": "fp8", "fp4_flops": "fp4", "int8_ops": "int8"}
# The precisions the catalog stores a peak for, in its columns' order (``Accelerator.peak_flops``).
PEAK_PRECISIONS = tuple(_PEAK_NAMES.values())


@dataclass(frozen=True)
class CloudOffer:
    """One rentable instance (or per-accelerator rate). Prices are for the whole row per hour."""

    id: str  # "<provider>:<instance>", lower case
    provider: str
    instance: str
    accelerator_id: str
    accelerator_count: int
    vcpus: float | None
    memory_gib: float | None
    region: str
    on_demand_usd_per_h: float | None
    spot_usd_per_h: float | None
    reserved_1y_usd_per_h: float | None
    price_date: str
    source: str = ""
    notes: str = ""
    inter_node_gbps: float | None = None  # fabric between instances, Gbit/s per instance as the provider states it
    inter_node_source: str = ""

    @property
    def is_price_index(self) -> bool:
        """A market price index row (provider ``market-index``): a reference price, not an instance to launch."""
        return self.id.startswith("market-index:")

    @property
    def inter_node_bps_per_device(self) -> float | None:
        """Inter-instance bandwidth per accelerator, bytes/s (None: no fabric stated, single instance only)."""
        if not self.inter_node_gbps:
            return None
        return self.inter_node_gbps * 1e9 / 8 / self.accelerator_count

    def usd_per_device_hour(self, spot: bool = False) -> float | None:
        """Instance price / accelerators per instance (an 8-GPU instance is billed once, not eight times)."""
        price = self.spot_usd_per_h if spot else self.on_demand_usd_per_h
        return None if price is None else price / self.accelerator_count


@functools.lru_cache(maxsize=256)
def _stacks_of(vendor: str, kind: str) -> tuple[str, ...]:
    """``catalog.stacks.stacks_for``, once per vendor and kind (the planner asks for every accelerator)."""
    from advisor.catalog.stacks import stacks_for

    return tuple(stacks_for(vendor, kind))
