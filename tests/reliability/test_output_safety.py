"""What the advisor writes cannot be turned against its reader: CSV cells are never formulas, Markdown and
HTML reports show hostile text as text."""

from __future__ import annotations

import csv
import io

from advisor.units import FORMULA_START

EVIL_NOTES = ["=HYPERLINK(\"http://evil.example\",\"x\")", "+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)", "ok"]
EVIL_NAME = "<script>alert(1)</script> [click](javascript:alert(1)) `x` *y* | z"


def _price_list(tmp_path):
    rows = "".join(f'acme:g{i},Acme,g{i},h100-sxm,1,{0.5 + i / 10},"{n.replace(chr(34), chr(34) * 2)}"\n'
                   for i, n in enumerate(EVIL_NOTES))
    path = tmp_path / "prices.csv"
    path.write_text("id,provider,instance,accelerator_id,accelerator_count,on_demand_usd_per_hour,notes\n" + rows)
    return path


def _formula_cells(text):
    return [c for row in csv.reader(io.StringIO(text)) for c in row if c.startswith(FORMULA_START)]


def test_exported_offers_hold_no_formula_and_import_back_unchanged(run_cli, tmp_path):
    from advisor.catalog.importer import read_offers_file

    assert run_cli("catalog", "import", _price_list(tmp_path), "--apply").returncode == 0
    out = tmp_path / "offers.csv"
    proc = run_cli("catalog", "export", out)
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert _formula_cells(text) == []
    assert "'=HYPERLINK(" in text
    back = {o.id: o.notes for o in read_offers_file(out).offers if o.id.startswith("acme:")}
    assert back == {f"acme:g{i}": n for i, n in enumerate(EVIL_NOTES)}


def test_bundled_offers_export_holds_no_formula(run_cli, tmp_path):
    out = tmp_path / "offers.csv"
    assert run_cli("catalog", "export", out).returncode == 0
    assert _formula_cells(out.read_text()) == []


HOSTILE = "=1+2 <script>alert(1)</script> [x](javascript:y) `z`"


def test_csv_markdown_and_html_reports_neutralise_hostile_text(tmp_path):
    """The title (a scenario name in the app), an assumption's origin and an option id are text from outside."""
    import copy

    from advisor.report import render_report
    from tests.report.conftest import PLAN

    doc = copy.deepcopy(PLAN)
    doc["title"] = HOSTILE
    doc["assumptions"]["electricity_usd_per_kwh"]["origin"] = HOSTILE
    doc["options"][0]["id"] = "-" + HOSTILE
    text = render_report([doc], "csv")
    assert _formula_cells(text) == []
    assert "'=1+2 <script>" in text and "'-=1+2" in text
    md = render_report([doc], "md")
    assert md.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 3
    assert "<script>" not in md and "[x](javascript:" not in md and " `z`" not in md
    assert "\\[x\\](javascript:y) \\`z\\`" in md  # the link and the code span are escaped: shown as text
    html = render_report([doc], "html")
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)" in html
