"""Reports: every option's total, the assumptions, catalog date and probes, in every format."""

from __future__ import annotations

import csv
import io
import os
import re
import xml.etree.ElementTree as ET

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.report import ReportError, render_report, write_report
from advisor.report.chart import cost_chart_svg
from advisor.report.content import money


@pytest.mark.parametrize("fmt", ["html", "md"])
def test_text_reports_hold_every_total_and_assumption(plan_doc, tmp_path, fmt):
    path = write_report([plan_doc], tmp_path / f"r.{fmt}")
    text = path.read_text(encoding="utf-8")
    for o in plan_doc["options"]:
        assert o["id"] in text and money(o["cost_usd"]) in text
    for name, a in plan_doc["assumptions"].items():
        assert name in text and a["origin"] in text and f"{a['value']:.6g}" in text
    assert "2026-11-29" in text and "2026-03-15" in text
    assert "Probes used" in text and "priors" in text


def test_html_is_self_contained_with_an_inline_chart(plan_doc):
    html = render_report([plan_doc], "html")
    assert html.count("<svg") == 2 and "rent" in html  # the memory chart and the cost chart
    refs = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert refs == []  # nothing to fetch: no scripts, stylesheets or images by reference
    assert "<script" not in html


def test_chart_draws_the_cheapest_fitting_options_stacked_by_part(plan_doc):
    svg = cost_chart_svg(plan_doc["options"], ["rent", "storage", "spot_rework", "capex_share", "energy", "support"])
    assert "onprem:h100-sxm" in svg and "home:rtx-4090" not in svg  # the one that does not fit is left out
    assert svg.count("<rect") >= 1 + 6 + 6  # background, 6 parts in 3 bars, 6 legend keys
    import xml.etree.ElementTree as ET

    ET.fromstring(svg)  # well-formed
    assert "No option fits" in cost_chart_svg([], [])


def test_csv_report_has_raw_numbers_and_assumption_rows(plan_doc):
    rows = list(csv.DictReader(io.StringIO(render_report([plan_doc], "csv"))))
    options = {r["id"]: r for r in rows if r["record"] == "option"}
    assert set(options) == {o["id"] for o in plan_doc["options"]}
    for o in plan_doc["options"]:
        assert float(options[o["id"]]["cost_usd"]) == o["cost_usd"]
        parts = sum(float(options[o["id"]][f"cost_{k}_usd"]) for k in o["cost_breakdown_usd"])
        assert parts == pytest.approx(o["cost_usd"])
    assumptions = {r["id"]: r for r in rows if r["record"] == "assumption"}
    assert float(assumptions["electricity_usd_per_kwh"]["value"]) == 0.17
    assert assumptions["electricity_usd_per_kwh"]["unit"] == "USD/kWh"
    assert {r["id"]: r["value"] for r in rows if r["record"] == "catalog"} == {"catalog_date": "2026-11-29",
                                                                              "prices_as_of": "2026-03-15"}
    assert options["onprem:h100-sxm"]["break_even_device_hours"] == "5123.4"


def test_pdf_report_through_qt(plan_doc, tmp_path):
    path = write_report([plan_doc, plan_doc], tmp_path / "r.pdf")
    data = path.read_bytes()
    assert data.startswith(b"%PDF") and data.rstrip().endswith(b"%%EOF") and len(data) > 5000
    assert b"/Image" in data  # the chart went in as a picture


def test_comparison_of_several_plans_and_plan_sets(plan_doc):
    other = {**plan_doc, "title": "plan B", "options": plan_doc["options"][:1]}
    md = render_report([{"schema": "advisor.plan-set/1", "plans": [plan_doc, other]}], "md")
    assert "## Summary" in md and "## 2. plan B" in md and md.count("assumptions: **") == 2
    assert md.count("### All assumptions") == 2 and "## A2. plan B" in md


def test_probes_from_saved_calibration_are_stated(plan_doc):
    from advisor.store.calibration import Calibration, save_calibration

    save_calibration(Calibration(mfu=0.37, eta_mem=0.81, device="cuda:0", accelerator_id="h100-sxm",
                                 measured_at="2026-11-29T10:00:00Z", source="probe:train-step"))
    assert "MFU of a training step" not in render_report([plan_doc], "md")  # the plan says it used none
    del plan_doc["calibration"]  # a document that does not say: the machine's saved calibration
    md = render_report([plan_doc], "md")
    assert "MFU of a training step | 0.37 | probe:train-step on cuda:0 (h100-sxm)" in md
    assert "memory bandwidth efficiency | 0.81" in md
    plan_doc["calibration"] = {"mfu": 0.5, "eta_mem": None, "device": "cuda:1", "measured_at": "t",
                               "source": "probe:train-step"}
    assert "| 0.5 | probe:train-step on cuda:1" in render_report([plan_doc], "md")  # the plan's own wins


@pytest.mark.parametrize("docs, message", [
    ([{"schema": "advisor.detect/1"}], "advisor.plan/1"),
    (["text"], "advisor.plan/1"),
    ([], "no plan"),
])
def test_not_a_plan_is_refused(tmp_path, docs, message):
    with pytest.raises(ReportError, match=message):
        write_report(docs, tmp_path / "r.html")
    assert not (tmp_path / "r.html").exists()


def test_unknown_suffix_is_refused(plan_doc, tmp_path):
    with pytest.raises(ReportError, match=r"\.html, \.pdf"):
        write_report([plan_doc], tmp_path / "r.docx")
    assert write_report([plan_doc], tmp_path / "r.txt", fmt="markdown").read_text().startswith("# ")


def test_failed_write_keeps_the_old_report(plan_doc, tmp_path, monkeypatch):
    path = write_report([plan_doc], tmp_path / "r.md")
    before = path.read_bytes()

    def boom(*_a, **_k):
        raise OSError("disk full")

    with monkeypatch.context() as m:
        m.setattr(os, "replace", boom)
        for name in ("r.md", "r.pdf"):
            with pytest.raises(ReportError, match="cannot write.*disk full"):
                write_report([plan_doc], tmp_path / name)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.md"]


def test_report_of_a_real_plan_lists_every_option():
    from advisor.cli import build_parser
    from advisor.commands.plan import build_plan, request_values

    args = build_parser().parse_args(["plan", "--model", "llama-3-8b", "--workload", "lora", "--tokens", "2e8"])
    doc = build_plan(request_values(args)).to_json()
    rows = list(csv.DictReader(io.StringIO(render_report([doc], "csv"))))
    ranked = [o for o in doc["options"] if o["feasible"]]
    apart = {o["id"]: o["infeasible_reason"] for o in doc["options"] if not o["feasible"]}
    assert apart and len(ranked) + len(apart) == len(doc["options"])
    assert len([r for r in rows if r["record"] == "option"]) == len(ranked)
    assert {r["id"]: r["origin"] for r in rows if r["record"] == "infeasible"} == apart  # listed apart, with why
    md = render_report([doc], "md")
    assert all(o["id"] in md and money(o["cost_usd"]) in md for o in ranked)
    assert all(option_id in md for option_id in apart) and "cannot run as laid out" in md
    assert all(name in md for name in doc["assumptions"])
    # ranges and price dates reach the report
    best = ranked[0]
    assert f"{money(best['cost_usd_interval'][0])} to {money(best['cost_usd_interval'][1])}" in md
    dates = doc["catalog"]["price_dates"]
    assert f"{dates['oldest']}{' or earlier' if dates['oldest_bounded'] else ''} to {dates['newest']}" in md
    assert (f"{len(dates['older_than_a_year'])} over a year old" in md) == bool(dates["older_than_a_year"])


_option = st.fixed_dictionaries({
    "id": st.from_regex(r"(home|onprem|cloud):[a-z0-9.|<>&\"'-]{1,20}", fullmatch=True),
    "kind": st.sampled_from(["home", "onprem", "cloud"]),
    "accelerator": st.sampled_from(["h100-sxm", "rtx-4090"]),
    "devices": st.integers(1, 64), "fits": st.booleans(),
    "hours": st.floats(0.001, 1e5), "cost_usd": st.floats(0, 1e8),
    "cost_breakdown_usd": st.dictionaries(st.sampled_from(["rent", "energy", "capex_share"]), st.floats(0, 1e7)),
    "usd_per_device_hour": st.none() | st.floats(0, 100),
})


@settings(max_examples=40, deadline=None)
@given(st.lists(_option, min_size=0, max_size=8, unique_by=lambda o: o["id"]))
def test_any_options_appear_with_their_totals_in_every_text_format(options):
    doc = {"schema": "advisor.plan/1", "model": {"name": "m", "params": 1}, "workload": "pretrain",
           "precision": "bf16", "options": options, "assumptions": {"a": {"value": 1, "unit": "u", "origin": "o"}},
           "catalog": {"date": "2026-11-29", "prices_as_of": "2026-03-15"}, "calibration": None}
    rows = list(csv.DictReader(io.StringIO(render_report([doc], "csv"))))
    got = {r["id"]: float(r["cost_usd"]) for r in rows if r["record"] == "option"}
    assert got == {o["id"]: o["cost_usd"] for o in options}
    md = render_report([doc], "md")
    html = render_report([doc], "html")
    from html import escape

    for o in options:
        assert money(o["cost_usd"]) in md and money(o["cost_usd"]) in html
        assert escape(o["id"], quote=False).replace("|", "\\|") in md and escape(o["id"]) in html
    ET.fromstring(cost_chart_svg(options, ["rent", "energy", "capex_share"]))


def test_csv_probe_rows_name_the_probe(plan_doc):
    plan_doc["calibration"] = {"mfu": 0.42, "eta_mem": None, "device": "cuda:0", "measured_at": "2026-11-29T10:00Z",
                               "source": "probe:train-step"}
    rows = [r for r in csv.DictReader(io.StringIO(render_report([plan_doc], "csv"))) if r["record"] == "probe"]
    assert [(r["id"], r["value"]) for r in rows] == [("MFU of a training step", "0.42")]
    assert "probe:train-step" in rows[0]["origin"] and "2026-11-29T10:00Z" in rows[0]["origin"]
