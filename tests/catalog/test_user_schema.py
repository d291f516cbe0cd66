"""The user catalog schema is the bundled files' columns, declared once."""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

from advisor.catalog.user_schema import AcceleratorEntry, ModelEntry, OfferEntry, validate_user_doc
from advisor.estimate.model import ModelArch

RESOURCES = Path(__file__).resolve().parents[2] / "resources"


def _header(name):
    with open(RESOURCES / name, newline="") as f:
        return next(csv.reader(f))


def test_entry_fields_are_the_bundled_columns():
    assert list(AcceleratorEntry.model_fields) == _header("accelerators.csv")
    assert list(OfferEntry.model_fields) == [*_header("cloud_offers.csv"), "withdrawn"]
    assert set(ModelEntry.model_fields) == {f.name for f in dataclasses.fields(ModelArch)} - {"id", "extra"}


def test_good_entries_pass_with_only_the_keys_written():
    doc = {"accelerators": {"x": {"memory_gb": 24, "mem_bandwidth_gbs": 1008.0}},
           "cloud_offers": {"a:b": {"spot_usd_per_hour": "", "withdrawn": False}},
           "models": {"m": {"layers": 2.0, "hidden": 64, "custom": "kept"}}}
    valid, warnings = validate_user_doc(doc, "f.toml")
    assert warnings == []
    assert valid["accelerators"]["x"] == {"memory_gb": 24.0, "mem_bandwidth_gbs": 1008.0}
    assert valid["cloud_offers"]["a:b"] == {"spot_usd_per_hour": "", "withdrawn": False}
    assert valid["models"]["m"] == {"layers": 2, "hidden": 64, "custom": "kept"}
