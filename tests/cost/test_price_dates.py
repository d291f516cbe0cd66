"""Price dates of a set of offers: oldest, newest, older than a year, undated."""

from dataclasses import dataclass

import pytest

from advisor.catalog.load import bundled_catalog
from advisor.cost.price_dates import price_ages, price_date_bound, price_date_of


@dataclass(frozen=True)
class Offer:
    id: str
    price_date: str


def test_price_date_of_reads_iso_dates_only():
    assert price_date_of("2026-03-11").isoformat() == "2026-03-11"
    assert price_date_of("2026-03-13 (non-interruptible) / 2026-03-15 (interruptible)").isoformat() == "2026-03-13"
    assert price_date_of("catalog snapshot, date not recorded (~2025)") is None
    assert price_date_of("2026-13-40") is None
    assert price_date_of("") is None


def test_oldest_newest_and_stale_by_hand():
    offers = [Offer("a", "2026-03-11"), Offer("b", "2025-01-10"), Offer("c", "2024-11-28"), Offer("d", "no date")]
    ages = price_ages(offers, "2026-11-29")
    assert (ages.oldest, ages.newest) == ("2024-11-28", "2026-03-11")
    # 2025-01-10 is 688 days and 2024-11-28 is 731 days before 2026-11-29: both older than a year
    assert ages.stale_ids == ("b", "c") and ages.undated_ids == ("d",)
    assert ages.summary() == "prices from 2024-11-28 to 2026-03-11; 2 older than a year (as of 2026-11-29); 1 undated"


def test_exactly_a_year_is_not_stale():
    assert price_ages([Offer("a", "2025-11-29")], "2026-11-29").stale_ids == ()
    assert price_ages([Offer("a", "2025-11-28")], "2026-11-29").stale_ids == ("a",)


def test_nothing_dated_says_so():
    ages = price_ages([Offer("x", "date not recorded")], "2026-11-29")
    assert ages.oldest is None and ages.summary() == "prices undated"
    with pytest.raises(ValueError):
        price_ages([], "yesterday")


def test_an_upper_bound_counts_by_its_date_and_says_so():
    assert price_date_bound("on or before 2025-06-05 (p5 at the pre-cut price)").isoformat() == "2025-06-05"
    assert price_date_bound("2025-06-05") is None and price_date_of("on or before 2025-06-05") is None
    offers = [Offer("a", "2026-03-11"), Offer("b", "on or before 2025-06-05 (evidence)"), Offer("c", "no date")]
    ages = price_ages(offers, "2026-11-29")
    # 2025-06-05 is 542 days before 2026-11-29: older than a year whatever the real date before it
    assert ages.stale_ids == ("b",) and ages.bounded_ids == ("b",) and ages.undated_ids == ("c",)
    assert ages.summary() == ("prices from 2025-06-05 or earlier to 2026-03-11; 1 older than a year "
                              "(as of 2026-11-29); 1 undated")
    # a bound newer than the oldest exact date leaves the oldest exact
    later = price_ages([Offer("a", "2024-01-01"), Offer("b", "on or before 2025-06-05")], "2026-11-29")
    assert later.oldest == "2024-01-01" and not later.oldest_bounded


def test_bundled_catalog_dates_are_reported_not_guessed():
    c = bundled_catalog()
    ages = price_ages(c.offers, c.date)
    dated = [o for o in c.offers if price_date_of(o.price_date) or price_date_bound(o.price_date)]
    assert len(dated) + len(ages.undated_ids) == len(c.offers)
    assert ages.newest == "2026-03-15"
    # the AWS snapshot with p5.48xlarge at the pre-cut $98.32/h: bounded by AWS's 2025-06-05 cut, so stale
    p5 = next(o for o in c.offers if o.id == "aws:p5.48xlarge-snapshot")
    assert p5.on_demand_usd_per_h == 98.32 and p5.id in ages.bounded_ids and p5.id in ages.stale_ids
    assert len(ages.bounded_ids) == 38


def test_a_summary_with_a_scope_says_what_it_counts():
    offers = [Offer("a", "2026-03-11"), Offer("b", "2024-11-28"), Offer("c", "")]
    ages = price_ages(offers, "2026-11-29")
    assert ages.count == 3
    assert ages.summary("the catalog's") == ("the catalog's 3 cloud offers: prices from 2024-11-28 to 2026-03-11; "
                                             "1 older than a year (as of 2026-11-29); 1 undated")
