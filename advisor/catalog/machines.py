"""Whole machines one can buy (Apple Silicon Macs): a chip of the accelerator catalog in a configuration
with its own unified memory, GPU cores, price and wall power (``resources/machines.csv``).

A Mac is bought as one box: its price includes the rest of the system, and Apple publishes the power the whole
machine draws at the wall. The buy advisor (``advisor.cost.buy``) prices these next to GPU rigs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from advisor.catalog.load import CatalogError, _resource_text, csv_rows
from advisor.catalog.records import Accelerator

GIB = 2**30  # "32 GB" of a Mac is 32 GiB of LPDDR, as the catalog reads memory_gb
COLUMNS = ("id", "name", "accelerator_id", "memory_gb", "gpu_cores", "chip_gpu_cores", "price_usd", "price_date",
           "power_w", "source", "notes")


@dataclass(frozen=True)
class Machine:
    """One machine configuration for sale.

    Attributes:
        accelerator_id: the catalog row of its chip (bandwidth, peak per GPU core count of that row).
        memory_bytes: its unified memory.
        compute_share: its GPU cores over the catalog row's (a binned chip has fewer at the same clock).
        price_usd / price_date: the price and when it was published; ``source`` where.
        power_w: the whole machine's maximum power at the wall (the vendor's measurement).
    """

    id: str
    name: str
    accelerator_id: str
    memory_bytes: int
    compute_share: float
    price_usd: float
    price_date: str
    power_w: float
    source: str
    notes: str = ""

    def accelerator(self, chip: Accelerator) -> Accelerator:
        """The chip in this configuration: its memory (the GPU's share of it), its share of the peak, its price
        and wall power, to plan and price it as one machine."""
        share = chip.gpu_memory_share or 1.0

        def scaled(x: float | None) -> float | None:
            return None if x is None else x * self.compute_share

        return replace(chip, id=self.id, name=self.name, memory_bytes=int(self.memory_bytes * share),
                       gpu_memory_share=None, fp32_flops=scaled(chip.fp32_flops), tf32_flops=scaled(chip.tf32_flops),
                       bf16_flops=scaled(chip.bf16_flops), fp16_flops=scaled(chip.fp16_flops),
                       fp8_flops=scaled(chip.fp8_flops), fp4_flops=scaled(chip.fp4_flops),
                       int8_ops=scaled(chip.int8_ops), tdp_w=self.power_w,
                       launch_price_usd=self.price_usd, street_price_usd=None, street_price_date="",
                       source=self.source, notes=self.notes)


def parse_machines_csv(text: str, accelerators: dict[str, Accelerator], where: str = "machines.csv") -> list[Machine]:
    """Machines from CSV text, each checked against the accelerator catalog.

    Raises:
        CatalogError: a missing column, an unknown chip, or a figure that is not a positive number (names the row).
    """
    out = []
    for at, row in csv_rows(text, where, COLUMNS):
        if row["accelerator_id"] not in accelerators:
            raise CatalogError(f"{at}: unknown accelerator {row['accelerator_id']!r}")

        def number(key: str, row=row, at=at) -> float:
            try:
                value = float(row[key])
            except (TypeError, ValueError):
                raise CatalogError(f"{at}: {key} must be a number, got {row[key]!r}") from None
            if not math.isfinite(value) or value <= 0:
                raise CatalogError(f"{at}: {key} must be a positive number, got {row[key]!r}")
            return value

        cores, chip_cores = number("gpu_cores"), number("chip_gpu_cores")
        if cores > chip_cores:
            raise CatalogError(f"{at}: gpu_cores exceeds chip_gpu_cores")
        out.append(Machine(id=row["id"].strip(), name=row["name"].strip(), accelerator_id=row["accelerator_id"],
                           memory_bytes=int(number("memory_gb") * GIB), compute_share=cores / chip_cores,
                           price_usd=number("price_usd"), price_date=row["price_date"].strip(),
                           power_w=number("power_w"), source=row["source"].strip(), notes=row["notes"].strip()))
    return out


def load_machines(accelerators: dict[str, Accelerator]) -> list[Machine]:
    """The bundled machines (``resources/machines.csv``)."""
    return parse_machines_csv(_resource_text("machines.csv"), accelerators)
