"""How old the prices of a set of offers are (docs/method.md, "Price dates").

Each cloud offer row carries the date its price was read (``price_date``). A plan states the oldest and
newest of the offers it shows and marks the ones older than a year as of the catalog's date. A row whose
date is not an ISO date (``YYYY-MM-DD``, possibly followed by a remark) counts as undated and is reported
as such, never guessed.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Iterable
from dataclasses import dataclass

STALE_AFTER_DAYS = 365
_ISO = re.compile(r"^\s*(\d{4}-\d{2}-\d{2})")


def price_date_of(text: str) -> _dt.date | None:
    """The ISO date a ``price_date`` field starts with, or None when it has none.

    When a field names two dates (``"2026-03-13 (non-interruptible) / 2026-03-15 (interruptible)"``), the
    first one is the older by convention of the rows that do so; it is returned.
    """
    m = _ISO.match(text or "")
    if not m:
        return None
    try:
        return _dt.date.fromisoformat(m.group(1))
    except ValueError:
        return None


@dataclass(frozen=True)
class PriceAges:
    """Price dates of a set of offers.

    Attributes:
        oldest, newest: ISO dates (None when no offer is dated).
        stale_ids: offers priced more than ``STALE_AFTER_DAYS`` before ``as_of``.
        undated_ids: offers without an ISO price date.
        as_of: the date the ages are measured from (the catalog's date).
    """

    oldest: str | None
    newest: str | None
    stale_ids: tuple[str, ...]
    undated_ids: tuple[str, ...]
    as_of: str

    def summary(self) -> str:
        """One line for plans and reports."""
        if self.oldest is None:
            text = "prices undated"
        elif self.oldest == self.newest:
            text = f"prices as of {self.oldest}"
        else:
            text = f"prices from {self.oldest} to {self.newest}"
        if self.stale_ids:
            text += f"; {len(self.stale_ids)} older than a year (as of {self.as_of})"
        if self.undated_ids and self.oldest is not None:
            text += f"; {len(self.undated_ids)} undated"
        return text


def price_ages(offers: Iterable, as_of: str) -> PriceAges:
    """Oldest and newest price date of ``offers`` and the ones older than a year.

    Args:
        offers: records with ``id`` and ``price_date`` (``advisor.catalog.records.CloudOffer``).
        as_of: ISO date the ages are measured from (``Catalog.date``).
    Raises:
        ValueError: when ``as_of`` is not an ISO date.
    """
    ref = _dt.date.fromisoformat(as_of)
    dated, stale, undated = [], [], []
    for o in offers:
        d = price_date_of(o.price_date)
        if d is None:
            undated.append(o.id)
            continue
        dated.append(d)
        if (ref - d).days > STALE_AFTER_DAYS:
            stale.append(o.id)
    return PriceAges(min(dated).isoformat() if dated else None, max(dated).isoformat() if dated else None,
                     tuple(stale), tuple(undated), as_of)
