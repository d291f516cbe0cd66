"""Reports answer the owner first: this machine's answer, the section its headline points to, its memory against
its own capacity, simulated hardware said so, and the plan's own ranking (on-demand before spot)."""

from __future__ import annotations

import base64
import re

from advisor.cli import main


def _report(capsys, tmp_path, *args) -> str:
    out = tmp_path / "plan.md"
    assert main(["plan", *args, "--report", str(out)]) == 0
    capsys.readouterr()
    return out.read_text(encoding="utf-8")


def test_laptop_report_leads_with_its_gpu_and_says_what_to_change(capsys, tmp_path):
    text = _report(capsys, tmp_path, "--model", "llama-3.3-70b", "--workload", "inference", "--fake-gpu",
                   "laptop-4060")
    head = text.split("### Chosen option")[0]
    assert "**This machine (1 x GeForce RTX 4060 Laptop GPU): does not fit" in head
    assert "see what to change to fit" in head and "### What to change to fit your GPUs" in head
    assert "simulated (--fake-gpu)" in head
    # the memory chart is the laptop's 44.9 GB against its own 8.59 GB, not the cheapest option's card
    svg = base64.b64decode(re.search(r"base64,([A-Za-z0-9+/=]+)", text).group(1)).decode()
    assert "capacity 8.59 GB" in svg and "RTX 4060 Laptop" in svg
    # a row that still does not fit shows no time
    rows = [ln for ln in head.splitlines() if ln.startswith("| --")]
    assert any("still does not fit" in r for r in rows)  # --quant q2_k alone: 29.6 GB
    assert "still does not fit" not in rows[0]  # the first, combined change fits


def test_report_ranks_as_the_plan_does(capsys, tmp_path):
    text = _report(capsys, tmp_path, "--model", "llama-3.3-70b", "--workload", "inference", "--fake-gpu",
                   "laptop-4060")
    table = text.split("### Chosen option")[1].split("![")[0]
    ids = [ln.split(" | ")[0].strip("| ") for ln in table.splitlines() if ln.startswith("| ") and ":" in ln]
    # on-demand prices rank the options (the assumptions say so): no spot offer above an on-demand one
    spot = [i for i, x in enumerate(ids) if x.endswith(":spot")]
    on_demand = [i for i, x in enumerate(ids) if x.startswith("cloud:") and not x.endswith(":spot")]
    assert not spot or not on_demand or min(spot) > max(on_demand)


def test_serve_report_carries_its_prices_and_assumptions(capsys, tmp_path):
    out = tmp_path / "serve.md"
    assert main(["serve", "--model", "llama-3.1-8b", "--users", "5", "--fake-gpu", "2x4090", "--set",
                 "electricity_usd_per_kwh=0.3", "--report", str(out)]) == 0
    capsys.readouterr()
    text = out.read_text(encoding="utf-8")
    assert "- Cloud prices: prices from " in text and "older than a year" in text
    assert re.search(r"- Assumptions: \d+;", text) and "changed: electricity_usd_per_kwh = 0.3 USD/kWh" in text
