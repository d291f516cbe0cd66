"""Used-market prices: dated, sourced rows (resources/used_prices.csv), the user's file replacing bundled rows."""

from __future__ import annotations

import pytest

from advisor.catalog import load_catalog
from advisor.catalog.load import CatalogError
from advisor.catalog.used import load_used_prices, parse_used_csv

HEAD = "accelerator_id,price_usd,price_date,condition,source,notes\n"


def test_bundled_rows_are_dated_and_sourced():
    acc = load_catalog(use_user_file=False).accelerators
    rows = {r.accelerator_id: r for r in load_used_prices(acc)}
    r = rows["rtx-3090"]
    assert r.price_usd == 650 and r.price_date == "2026" and "local-llm.net" in r.source


def test_a_row_without_date_or_source_is_refused():
    acc = load_catalog(use_user_file=False).accelerators
    with pytest.raises(CatalogError, match="row 2: a used price needs its price_date and its source"):
        parse_used_csv(HEAD + "rtx-3090,600,,used,,\n", acc)
    with pytest.raises(CatalogError, match="unknown accelerator"):
        parse_used_csv(HEAD + "no-such-gpu,600,2026,used,x,\n", acc)
    with pytest.raises(CatalogError, match="positive"):
        parse_used_csv(HEAD + "rtx-3090,-5,2026,used,x,\n", acc)


def test_the_users_file_replaces_and_adds_rows(tmp_path):
    acc = load_catalog(use_user_file=False).accelerators
    mine = tmp_path / "used_prices.csv"
    mine.write_text(HEAD + "rtx-3090,550,2026-11,used,my local listing,\nrtx-4090,1400,2026-11,used,my listing,\n")
    rows = {r.accelerator_id: r for r in load_used_prices(acc, mine)}
    assert rows["rtx-3090"].price_usd == 550 and rows["rtx-4090"].source == "my listing"
    mine.write_text("not,a,used,file\n")
    with pytest.raises(CatalogError, match="missing columns"):
        load_used_prices(acc, mine)
