"""A report says what the screen says: every claim a report makes is read back and checked against the plan.

Three scenarios (a hobbyist's LoRA on two RTX 4090s, an inference plan, a team's monthly 70B LoRA), each report
format (HTML, Markdown, CSV, and the PDF through the HTML it is laid out from plus its extracted text): every
assumption with its value, the appendix holding exactly what its heading says, the memory chart of the chosen
option's layout, the same price-date counts as the command line, and the chosen option with its cost.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import subprocess
import sys
import unicodedata
from html.parser import HTMLParser

import pytest

from advisor.report import render_report, write_report
from advisor.report.content import money, sections
from advisor.report.html import render_html

SCENARIOS = {
    "hobbyist-lora": ["--model", "llama-3-8b", "--workload", "lora", "--tokens", "2e7", "--fake-gpu", "2x4090"],
    "inference": ["--model", "llama-3-8b", "--workload", "inference", "--fake-gpu", "2x4090"],
    "team-70b": ["--model", "llama-3.1-70b", "--workload", "lora", "--tokens", "2e8", "--accelerator", "h100-sxm",
                 "--no-own", "--jobs-per-month", "1"],
}


class _Text(HTMLParser):
    def __init__(self):
        super().__init__()
        self.parts: list[str] = []

    def handle_data(self, data):
        self.parts.append(data)


def _html_text(html: str) -> str:
    p = _Text()
    p.feed(html)
    return " ".join(" ".join(p.parts).split())


@pytest.fixture(scope="module")
def docs():
    out = {}
    for name, args in SCENARIOS.items():
        proc = subprocess.run([sys.executable, "-m", "advisor", "plan", *args, "--json"], capture_output=True,
                              text=True, timeout=120, check=True)
        table = subprocess.run([sys.executable, "-m", "advisor", "plan", *args], capture_output=True, text=True,
                               timeout=120, check=True).stdout
        out[name] = (json.loads(proc.stdout), table)
    return out


def _value_text(v) -> str:
    return str(v)


def _check_text_claims(text: str, doc: dict, sec, *, appendix_full: bool) -> None:
    # the chosen option and its cost
    assert sec.chosen is not None and sec.chosen["id"] in text and money(sec.chosen["cost_usd"]) in text
    # every assumption, with its value
    for name, a in doc["assumptions"].items():
        assert name in text, name
        assert _value_text(a["value"]) in text, (name, a["value"])
    # the price-date counts are the command line's
    dates = doc["catalog"]["price_dates"]
    assert f"{dates['offers']} offers" in text
    if dates["older_than_a_year"]:
        assert f"{len(dates['older_than_a_year'])} over a year old" in text
    if dates["undated"]:
        assert f"{dates['undated']} undated" in text
    # the appendix holds what its heading says
    m = re.search(r"A\d\. [^:]*: (all (\d+) options|the cheapest option of each of the (\d+) accelerators, "
                  r"of (\d+) options)", text)
    assert m, "appendix heading"
    n_options = len(sec.options)
    if m.group(2):
        assert int(m.group(2)) == n_options and (appendix_full or n_options <= 40)
        listed = {o["id"] for o in sec.options}
    else:
        assert not appendix_full and int(m.group(4)) == n_options
        listed = {o["id"] for o in sec.options if o is next(p for p in sec.options
                                                            if p["accelerator"] == o["accelerator"])}
        assert int(m.group(3)) == len(listed)
    appendix = text[m.start():]
    assert all(option_id in appendix for option_id in listed)


def _check_memory_chart(html: str, sec) -> None:
    c = sec.chosen
    title = f"Memory per device: {c['devices']} x {c['name']}"
    assert title in html
    # the chart's parts are the chosen option's, which add up to its memory per device
    parts = c["memory_per_device_parts_bytes"]
    assert parts["total"] == c["memory_per_device_bytes"]


def _check_monthly_view(text: str, doc: dict) -> None:
    """The monthly view is there when the plan has owned, bought or on-prem options: each line with what it
    costs a month, and the cadence it is drawn at."""
    spend = doc.get("cost_over_time") or {}
    lines = spend.get("lines") or []
    if not any(o["kind"] in ("owned", "home", "onprem") for o in doc["options"]):
        return
    assert lines, "a plan with owned, home or on-prem options carries the monthly view"
    n = spend["jobs_per_month"]
    assert f"Money spent over time at {n:g} job" in text
    for line in lines:
        assert money(line["monthly_usd"]) in text and money(line["upfront_usd"]) in text


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_html_and_markdown_claims(docs, name):
    doc, _table = docs[name]
    (sec,) = sections([doc])
    html = render_report([doc], "html")
    _check_text_claims(_html_text(html), doc, sec, appendix_full=True)
    _check_memory_chart(html, sec)
    _check_monthly_view(_html_text(html), doc)
    md = render_report([doc], "md")
    plain = md.replace("\\", "")
    _check_text_claims(plain, doc, sec, appendix_full=True)
    _check_monthly_view(plain, doc)


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_the_cli_table_counts_the_same_prices(docs, name):
    doc, table = docs[name]
    assert doc["catalog"]["price_dates"]["summary"] in table


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_csv_claims(docs, name):
    doc, _table = docs[name]
    (sec,) = sections([doc])
    rows = list(csv.DictReader(io.StringIO(render_report([doc], "csv"))))
    assumptions = {r["id"]: r for r in rows if r["record"] == "assumption"}
    assert set(assumptions) == set(doc["assumptions"])
    for n, a in doc["assumptions"].items():
        assert assumptions[n]["origin"] == a["origin"]
    options = [r["id"] for r in rows if r["record"] == "option"]
    assert options == [o["id"] for o in sec.options]  # every option, none left out
    infeasible = {r["id"] for r in rows if r["record"] == "infeasible"}
    assert infeasible == {o["id"] for o in doc["options"] if o.get("feasible") is False}
    spend = {r["id"]: r for r in rows if r["record"] == "spend"}
    for line in (doc.get("cost_over_time") or {}).get("lines") or []:
        assert float(spend[line["id"]]["value"]) == pytest.approx(line["monthly_usd"])


def test_pdf_claims(docs, tmp_path):
    plans = [docs[n][0] for n in SCENARIOS]
    secs = sections(plans)
    html = render_html(secs, chart=lambda i, svg: svg, appendix="per_accelerator")
    text = _html_text(html)
    for doc, sec in zip(plans, secs):
        _check_memory_chart(html, sec)
        _check_monthly_view(text, doc)
        assert sec.chosen["id"] in text and money(sec.chosen["cost_usd"]) in text
        for name, a in doc["assumptions"].items():
            assert name in text and _value_text(a["value"]) in text
    # appendix B lists every assumption once with a value column per scenario
    b = text[text.index("B. All assumptions"):]
    assert all(n in b for doc in plans for n in doc["assumptions"])
    path = write_report(plans, tmp_path / "team.pdf")
    if shutil.which("pdftotext"):  # poppler-utils (.ci/run installs it): the PDF's own text, read back
        raw = subprocess.run(["pdftotext", "-layout", str(path), "-"], capture_output=True, text=True, check=True).stdout
        pdf_text = " ".join(unicodedata.normalize("NFKC", raw).split())  # the PDF's ligatures ("ﬀ") as letters
        for doc, sec in zip(plans, secs):
            assert money(sec.chosen["cost_usd"]) in pdf_text
            dates = doc["catalog"]["price_dates"]
            assert f"{dates['offers']} offers" in pdf_text
        assert "B. All assumptions" in pdf_text
        assert all(n in pdf_text for doc in plans for n in doc["assumptions"])
