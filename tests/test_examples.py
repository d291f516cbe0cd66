"""The example scenarios in docs/examples plan without error and give sensible answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.cli import main

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "docs" / "examples").glob("*.toml"))


def test_there_are_examples():
    assert len(EXAMPLES) >= 3


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_plans(path, capsys):
    assert main(["plan", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert any(o["fits"] for o in doc["options"])
    assert all(o["cost_usd"] > 0 and o["hours"] > 0 for o in doc["options"])
