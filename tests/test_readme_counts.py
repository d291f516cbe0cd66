"""The README's counts of the bundled catalog are the catalog's."""

from __future__ import annotations

import re
from pathlib import Path

from advisor.catalog import load_catalog


def test_readme_counts_are_the_catalog_s():
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    found = re.search(r"bundled catalog \((\d+) accelerators, (\d+) cloud offers, (\d+) model presets\)", readme)
    assert found, "the README states the catalog's counts"
    c = load_catalog(use_user_file=False)
    assert tuple(int(x) for x in found.groups()) == (len(c.accelerators), len(c.offers), len(c.models))
