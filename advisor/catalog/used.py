"""Used-market prices: dated, sourced rows a buyer can edit (``resources/used_prices.csv``, and the same file in
the user's config folder, whose rows replace the bundled ones of the same accelerator).

A used price is only as good as its date and source; a row without either is refused. The buy advisor prices a
used card like a new one (a new rig, or added to the owned machine) at this price.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from advisor.catalog.load import CatalogError, _resource_text, csv_rows
from advisor.catalog.records import Accelerator

COLUMNS = ("accelerator_id", "price_usd", "price_date", "condition", "source", "notes")
FILE_NAME = "used_prices.csv"


@dataclass(frozen=True)
class UsedPrice:
    """One used-market price of a card: what it sold or was offered for, when and where that was published."""

    accelerator_id: str
    price_usd: float
    price_date: str
    condition: str
    source: str
    notes: str = ""


def parse_used_csv(text: str, accelerators: dict[str, Accelerator], where: str = FILE_NAME) -> list[UsedPrice]:
    """Rows of CSV text, each checked (a known accelerator, a positive price, a date and a source).

    Raises:
        CatalogError: a missing column or a bad row (names the row and why).
    """
    out = []
    for at, row in csv_rows(text, where, COLUMNS):
        acc = (row["accelerator_id"] or "").strip()
        if acc not in accelerators:
            raise CatalogError(f"{at}: unknown accelerator {acc!r}")
        try:
            price = float(row["price_usd"])
        except (TypeError, ValueError):
            raise CatalogError(f"{at}: price_usd must be a number, got {row['price_usd']!r}") from None
        if not math.isfinite(price) or price <= 0:
            raise CatalogError(f"{at}: price_usd must be a positive number, got {row['price_usd']!r}")
        date, source = (row["price_date"] or "").strip(), (row["source"] or "").strip()
        if not date or not source:
            raise CatalogError(f"{at}: a used price needs its price_date and its source")
        out.append(UsedPrice(acc, price, date, (row["condition"] or "used").strip(), source,
                             (row["notes"] or "").strip()))
    return out


def load_used_prices(accelerators: dict[str, Accelerator], user_file: Path | None = None) -> list[UsedPrice]:
    """The bundled rows, with those of ``user_file`` (when it exists) replacing the same accelerator's.

    Raises:
        CatalogError: a bad row in either file (one line naming it).
    """
    rows = {r.accelerator_id: r for r in parse_used_csv(_resource_text(FILE_NAME), accelerators)}
    if user_file is not None and user_file.is_file():
        try:
            text = user_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CatalogError(f"{user_file.name}: cannot read: {exc}") from None
        rows.update({r.accelerator_id: r for r in parse_used_csv(text, accelerators, user_file.name)})
    return list(rows.values())
