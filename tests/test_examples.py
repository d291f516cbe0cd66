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


SERVING = ('schema = "advisor.scenario/1"\n[plan]\nmodel = "llama-3-8b"\nworkload = "inference"\ntokens = 1e9\n'
           'batch = 8\naccelerator = ["h100-sxm", "rtx-4090"]\n')


@pytest.mark.parametrize("name", [p.stem for p in EXAMPLES] + ["serving-with-a-token-budget"])
def test_cli_compare_dialog_and_reports_give_the_same_totals(name, capsys, tmp_path):
    """One pricing path: the CLI, the compare dialog's summary and every report format show the same figures."""
    from advisor.catalog import load_catalog
    from advisor.gui.widgets.scenario_compare import summarize_scenario
    from advisor.report import render_report

    path = next((p for p in EXAMPLES if p.stem == name), None)
    if path is None:
        path = tmp_path / f"{name}.toml"
        path.write_text(SERVING)
    assert main(["plan", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    summary = summarize_scenario(path, load_catalog())
    assert summary.error is None
    best = next(o for o in doc["options"] if o["fits"])
    assert (summary.option_id, summary.cost_usd, summary.hours) == (best["id"], best["cost_usd"], best["hours"])
    assert [o["cost_usd"] for o in summary.doc["options"]] == [o["cost_usd"] for o in doc["options"]]
    if name.startswith("serving"):  # the token budget counts: 1e9 tokens, ten times the default
        assert doc["tokens"] == 1e9 and doc["flops_total"] == pytest.approx(2 * 8.030261248e9 * 1e9)
    csv_text = render_report([doc], "csv")
    for o in doc["options"][:5]:
        assert f"{o['id']}," in csv_text and repr(o["cost_usd"])[:8] in csv_text
    md = render_report([doc], "md")
    from advisor.report.content import money

    assert money(best["cost_usd"]) in md
