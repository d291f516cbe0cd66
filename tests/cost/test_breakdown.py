"""CostBreakdown: named parts that sum to the total."""

from __future__ import annotations

import pytest

from advisor.cost import CostBreakdown
from advisor.cost.breakdown import PART_HELP, PART_NAMES


def test_parts_total_and_order():
    b = CostBreakdown.of(rent=10.0, storage=0.5, egress=0.0)
    assert b.total_usd == pytest.approx(10.5)
    assert list(b.as_dict()) == ["rent", "storage", "egress"]
    assert b.get("storage") == 0.5 and b.get("energy") == 0.0
    assert b.scaled(2).as_dict() == {"rent": 20.0, "storage": 1.0, "egress": 0.0}


def test_total_is_exact_sum():
    # fsum: 0.1 + 0.2 + 0.3 is 0.6000000000000001 with plain sum, 0.6 exactly with fsum.
    assert CostBreakdown.of(a=0.1, b=0.2, c=0.3).total_usd == 0.6


@pytest.mark.parametrize("parts, match", [
    ((("rent", 1.0), ("rent", 2.0)), "repeat"), ((("rent", -1.0),), "rent"), ((("rent", float("nan")),), "rent"),
])
def test_invalid_parts(parts, match):
    with pytest.raises(ValueError, match=match):
        CostBreakdown(parts)


def test_bad_scale():
    with pytest.raises(ValueError, match="scale"):
        CostBreakdown.of(rent=1.0).scaled(-1)


def test_every_part_the_model_uses_is_explained():
    # The parts cloud, home, on-prem and owned quotes produce (see test_jobs, test_owned) all have a help text.
    used = {"rent", "spot_rework", "storage", "egress", "depreciation", "energy", "capex_share", "colocation",
            "support", "wear", "financing", "idle_power"}
    assert used == set(PART_NAMES) and all(PART_HELP[n].strip() for n in used)
