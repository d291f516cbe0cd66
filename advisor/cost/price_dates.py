"""How old the prices of a set of offers are (docs/method.md, "Price dates").

Each cloud offer row carries the date its price was read (``price_date``). A plan states the oldest and
newest of the offers it shows and marks the ones older than a year as of the catalog's date. A row known
only to be older than some date says ``on or before YYYY-MM-DD`` (with its evidence after it): it counts
by that date, and is reported as bounded. A row whose date is neither counts as undated and is reported
as such, never guessed.
"""

from __future__ import annotations

import datetime as _dt
import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

STALE_AFTER_DAYS = 365
_ISO = re.compile(r"^\s*(\d{4}-\d{2}-\d{2})")
_BOUND = re.compile(r"^\s*on or before (\d{4}-\d{2}-\d{2})")


def _date_matched(pattern: re.Pattern, text: str) -> _dt.date | None:
    m = pattern.match(text or "")
    if not m:
        return None
    try:
        return _dt.date.fromisoformat(m.group(1))
    except ValueError:
        return None


def price_date_bound(text: str) -> _dt.date | None:
    """The date of an ``on or before YYYY-MM-DD`` field (a price known only to be that old at the least)."""
    return _date_matched(_BOUND, text)


def price_date_of(text: str) -> _dt.date | None:
    """The ISO date a ``price_date`` field starts with, or None when it has none.

    When a field names two dates (``"2026-03-13 (non-interruptible) / 2026-03-15 (interruptible)"``), the
    first one is the older by convention of the rows that do so; it is returned.
    """
    return _date_matched(_ISO, text)


def price_date_label(text: str, short: bool = False) -> str:
    """A price date in a few characters for tables: ``2026-03-11``, ``2025-06-05 or earlier`` (``short``:
    ``≤2025-06-05``), or ``undated``."""
    exact = price_date_of(text)
    if exact is not None:
        return exact.isoformat()
    bound = price_date_bound(text)
    if bound is None:
        return "undated"
    return f"≤{bound.isoformat()}" if short else f"{bound.isoformat()} or earlier"


@dataclass(frozen=True)
class PriceAges:
    """Price dates of a set of offers.

    Attributes:
        oldest, newest: ISO dates (None when no offer is dated); a bound counts as its date.
        stale_ids: offers priced more than ``STALE_AFTER_DAYS`` before ``as_of`` (a bound that old is too).
        undated_ids: offers without an ISO price date or bound.
        as_of: the date the ages are measured from (the catalog's date).
        bounded_ids: offers dated only by an upper bound (``on or before``).
        oldest_bounded: the oldest date is such a bound (the price may be older still).
    """

    oldest: str | None
    newest: str | None
    stale_ids: tuple[str, ...]
    undated_ids: tuple[str, ...]
    as_of: str
    bounded_ids: tuple[str, ...] = ()
    oldest_bounded: bool = False
    dated_count: int = 0  # offers with a date or a bound

    @property
    def count(self) -> int:
        """How many offers the figures count (dated, bounded and undated)."""
        return self.dated_count + len(self.undated_ids)

    def summary(self, scope: str = "") -> str:
        """One line for plans and reports.

        Args:
            scope: whose offers are counted (``"the catalog's"``, ``"this plan's"``): with it the line starts
                ``the catalog's 128 cloud offers:``, so two counts of different sets are never read as one.
        """
        oldest = f"{self.oldest} or earlier" if self.oldest_bounded else self.oldest
        if self.oldest is None:
            text = "prices undated"
        elif self.oldest == self.newest:
            text = f"prices as of {oldest}"
        else:
            text = f"prices from {oldest} to {self.newest}"
        if self.stale_ids:
            text += f"; {len(self.stale_ids)} older than a year (as of {self.as_of})"
        if self.undated_ids and self.oldest is not None:
            text += f"; {len(self.undated_ids)} undated"
        if scope:
            text = f"{scope} {self.count} cloud offer{'s' if self.count != 1 else ''}: {text}"
        return text


def price_ages(offers: Iterable, as_of: str) -> PriceAges:
    """Oldest and newest price date of ``offers`` and the ones older than a year.

    Args:
        offers: records with ``id`` and ``price_date`` (``advisor.catalog.records.CloudOffer``).
        as_of: ISO date the ages are measured from (``Catalog.date``).
    Raises:
        ValueError: when ``as_of`` is not an ISO date.
    """
    return price_ages_of(tuple([(o.id, o.price_date) for o in offers]), as_of)


@functools.lru_cache(maxsize=64)
def price_ages_of(rows: tuple[tuple[str, str], ...], as_of: str) -> PriceAges:
    """:func:`price_ages` of ``(id, price_date)`` pairs (kept for the same pairs: a plan and the app's pages ask
    again for the same offers on every edit).

    Raises:
        ValueError: when ``as_of`` is not an ISO date.
    """
    ref = _dt.date.fromisoformat(as_of)
    exact, bounds, stale, undated = [], [], [], []
    for oid, price_date in rows:
        d = price_date_of(price_date)
        if d is not None:
            exact.append(d)
        else:
            d = price_date_bound(price_date)
            if d is None:
                undated.append(oid)
                continue
            bounds.append((d, oid))
        if (ref - d).days > STALE_AFTER_DAYS:
            stale.append(oid)
    dated = exact + [d for d, _ in bounds]
    oldest = min(dated) if dated else None
    return PriceAges(oldest.isoformat() if oldest else None, max(dated).isoformat() if dated else None,
                     tuple(stale), tuple(undated), as_of, tuple(i for _, i in bounds),
                     oldest is not None and oldest not in exact, len(dated))


def price_summary(offers: Iterable, as_of: str, prices_as_of: str, scope: str = "the catalog's") -> str:
    """:meth:`PriceAges.summary` of ``offers`` (counted as ``scope``'s), or ``prices as of <prices_as_of>`` when
    ``as_of`` is not an ISO date (a user catalog may have none): one line for the app's status bar and pages."""
    try:
        return price_ages(offers, as_of).summary(scope)
    except ValueError:
        return f"cloud prices as of {prices_as_of}"
