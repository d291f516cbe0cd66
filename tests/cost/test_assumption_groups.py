"""Every cost assumption sits in exactly one group of the app's form (home, owned, on-prem, cloud, serving)."""

from __future__ import annotations

from dataclasses import fields

import pytest

from advisor.cost.assumptions import ASSUMPTION_GROUP_TITLES, ASSUMPTION_GROUPS, CostAssumptions, assumption_group


def test_each_field_in_one_group():
    grouped = [n for names in ASSUMPTION_GROUPS.values() for n in names]
    assert sorted(grouped) == sorted(f.name for f in fields(CostAssumptions))
    assert len(grouped) == len(set(grouped))
    assert tuple(ASSUMPTION_GROUPS) == tuple(ASSUMPTION_GROUP_TITLES) == ("home", "owned", "onprem", "cloud", "serving")


def test_flattened_names_have_a_group():
    for name in CostAssumptions().describe():
        assert assumption_group(name) in ASSUMPTION_GROUPS
    assert assumption_group("reserved_discount_aws_3y") == "cloud"
    with pytest.raises(KeyError):
        assumption_group("colour")
