"""Cost assumptions: defaults with origins, overrides and validation."""

from __future__ import annotations

import json
from dataclasses import fields

import pytest

from advisor.cost import Assumption, CostAssumptions

A = CostAssumptions()


def test_defaults_follow_estimates():
    assert A.electricity_usd_per_kwh == 0.17
    assert A.lifetime_years == 3
    assert A.onprem_server_overhead == 1.6  # midpoint of 1.54 to 1.69
    assert A.onprem_interconnect_share == 0.19
    assert A.onprem_power_factor == 1.9  # midpoint of 1.8 to 2.0
    assert A.onprem_load == 0.75
    assert A.spot is False and A.spot_rework_factor == 0.1
    assert A.reserved_discount("AWS", 1) == 0.41 and A.reserved_discount("aws", 3) == 0.64
    assert A.reserved_discount("GCP", 1) == 0.37 and A.reserved_discount("gcp", 3) == 0.56
    assert A.reserved_discount("Azure", 1) == 0.25 and A.reserved_discount("azure", 3) == 0.49
    assert A.reserved_discount("Lambda", 1) == 0.34 and A.reserved_discount("lambda", 3) == 0.56
    assert A.reserved_discount("RunPod", 1) is None
    assert A.reserved_discount("RunPod", 0) == 0.0


def test_every_default_has_a_unit_and_an_origin_and_is_json():
    d = A.describe()
    names = {f.name for f in fields(A)} - {"reserved_discounts"}
    assert names <= set(d)
    assert {"reserved_discount_aws_1y", "reserved_discount_lambda_3y"} <= set(d)
    assert d["reserved_discount_azure_3y"]["value"] == 0.49
    for name, entry in d.items():
        assert set(entry) == {"value", "unit", "origin", "help"}, name
        assert entry["origin"].strip() and entry["unit"].strip() and entry["help"].strip(), name
    json.dumps(d)
    assert "EIA" in d["electricity_usd_per_kwh"]["origin"]
    assert "Google Environmental Report" in d["pue"]["origin"]


def test_assumption_record():
    a = A.assumption("pue")
    assert a == Assumption(1.2, a.origin, "ratio", a.help)
    with pytest.raises(ValueError, match="nope"):
        A.assumption("nope")


def test_overrides_return_a_copy():
    b = A.with_overrides(electricity_usd_per_kwh=0.3, spot=True, home_gpus_per_rig=2, reserved_years=1)
    assert (b.electricity_usd_per_kwh, b.spot, b.home_gpus_per_rig, b.reserved_years) == (0.3, True, 2, 1)
    assert A.electricity_usd_per_kwh == 0.17
    assert b.describe()["electricity_usd_per_kwh"]["value"] == 0.3


@pytest.mark.parametrize("name, value", [
    ("electricity_usd_per_kwh", -0.1), ("electricity_usd_per_kwh", float("inf")), ("electricity_usd_per_kwh", "x"),
    ("electricity_usd_per_kwh", True), ("home_load_factor", 1.5), ("resale_fraction", -0.01),
    ("utilisation", 0.0), ("onprem_utilisation", 1.2), ("onprem_interconnect_share", 1.0),
    ("pue", 0.9), ("onprem_server_overhead", 0.5), ("hours_per_day", 25), ("hours_per_day", 0),
    ("lifetime_years", 0), ("home_gpus_per_rig", 0), ("home_gpus_per_rig", 2.5), ("reserved_years", 2),
    ("spot", 1), ("spot_rework_factor", -1), ("onprem_amortisation_years", -3),
    ("reserved_discounts", "aws"), ("reserved_discounts", (("aws", 0.1),)),
    ("reserved_discounts", (("aws", 0.1, 1.0),)), ("reserved_discounts", ((1, 0.1, 0.2),)),
    ("no_such_field", 1.0), ("reserved_discount_aws_2y", 0.1), ("reserved_discount_aws_1y", 1.0),
    ("reserved_discount_aws_3y", "x"),
])
def test_bad_overrides_name_the_field(name, value):
    with pytest.raises(ValueError, match=name):
        A.with_overrides(**{name: value})


def test_reserved_discounts_can_be_replaced():
    b = A.with_overrides(reserved_discounts=(("runpod", 0.1, 0.2),))
    assert b.reserved_discount("RunPod", 3) == 0.2
    assert b.reserved_discount("AWS", 1) is None
    with pytest.raises(ValueError, match="reserved_years"):
        A.reserved_discount("aws", 5)


def test_scenario_forms_are_normalised():
    # TOML gives lists and floats such as 2.0; they are stored as tuples, ints and lower-case provider names.
    b = A.with_overrides(home_gpus_per_rig=2.0, reserved_years=1.0, reserved_discounts=[["AWS", 0.5, 0.6]])
    assert b.home_gpus_per_rig == 2 and isinstance(b.home_gpus_per_rig, int)
    assert b.reserved_years == 1 and isinstance(b.reserved_years, int)
    assert b.reserved_discounts == (("aws", 0.5, 0.6),)
    hash(b)  # still a frozen, hashable record


def test_describe_table_reads_back():
    # A saved describe() table (names and values) gives the same assumptions back.
    b = A.with_overrides(electricity_usd_per_kwh=0.3, reserved_discount_aws_1y=0.5, reserved_discount_oci_3y=0.2)
    assert b.reserved_discount("AWS", 1) == 0.5 and b.reserved_discount("AWS", 3) == 0.64
    assert b.reserved_discount("OCI", 3) == 0.2 and b.reserved_discount("OCI", 1) == 0.0
    values = {name: entry["value"] for name, entry in b.describe().items()}
    assert A.with_overrides(**values) == b
    # An explicit table wins over flattened names given with it.
    c = A.with_overrides(reserved_discounts=(("gcp", 0.1, 0.2),), reserved_discount_aws_1y=0.5)
    assert c.reserved_discounts == (("gcp", 0.1, 0.2),)
