"""Self-contained HTML report: inline CSS, charts as inline SVG, no external resources."""

from __future__ import annotations

from collections.abc import Callable
from html import escape

from advisor.report.chart import cost_chart_svg
from advisor.report.content import COLUMN_TITLES, OPTION_COLUMNS, PlanSection, cell, generated_at, money

_CSS = """
body{font-family:-apple-system,'Segoe UI',Roboto,sans-serif;margin:2em;color:#222;max-width:1200px}
h1{font-size:1.5em}h2{font-size:1.25em;margin-top:1.6em;border-bottom:1px solid #ccc}h3{font-size:1.05em}
table{border-collapse:collapse;margin:.5em 0;font-size:.85em}
th,td{border:1px solid #ccc;padding:2px 6px;text-align:left}
td.n{text-align:right}tr.nofit td{color:#999}.note{color:#555;font-size:.9em}
"""


def _table(head, rows, numeric=(), classes=None) -> str:
    out = ["<table>"]
    if head:
        out += ["<thead><tr>", *(f"<th>{escape(h)}</th>" for h in head), "</tr></thead>"]
    out.append("<tbody>")
    for k, cells in enumerate(rows):
        cls = classes[k] if classes else ""
        out.append(f'<tr class="{cls}">' if cls else "<tr>")
        for i, c in enumerate(cells):
            out.append(f'<td class="n">{escape(str(c))}</td>' if i in numeric else f"<td>{escape(str(c))}</td>")
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def parts_text(o: dict) -> str:
    return ", ".join(f"{k} {money(v)}" for k, v in (o.get("cost_breakdown_usd") or {}).items() if v)


def render_html(secs: list[PlanSection], *, chart: Callable[[int, str], str] | None = None,
                title: str = "Hardware Advisor: plan comparison") -> str:
    """The report as one HTML page.

    Args:
        chart: turns (section index, SVG text) into the markup placed in the page; inline SVG by default
            (the PDF export swaps in an image reference).
    """
    chart = chart or (lambda _i, svg: svg)
    out = ["<!DOCTYPE html><html><head><meta charset=\"utf-8\">",
           f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>",
           f"<h1>{escape(title)}</h1>",
           f"<p class=\"note\">Generated {escape(generated_at())} by the Hardware Advisor. Estimates, not quotes: "
           "check the assumptions below.</p>"]
    if len(secs) > 1:
        out.append("<h2>Summary</h2>")
        rows = []
        for s in secs:
            best = next((o for o in s.options if o.get("fits")), None)
            rows.append((s.title, best["id"] if best else "nothing fits", money(best.get("cost_usd")) if best else "-",
                         cell("hours", best) if best else "-"))
        out.append(_table(("plan", "cheapest option that fits", "total cost", "time"), rows, numeric=(2, 3)))
    for i, s in enumerate(secs):
        out.append(f"<h2>{escape(s.title)}</h2>")
        out.append(_table(None, s.summary))
        if s.inputs:
            out.append("<h3>Inputs</h3>")
            out.append(_table(("input", "value", "unit", "source"), s.inputs))
        out.append(chart(i, cost_chart_svg(s.options, s.breakdown_parts)))
        out.append(f"<h3>Options ({sum(1 for o in s.options if o.get('fits'))} of {len(s.options)} fit), "
                   "by total job cost</h3>")
        head = [COLUMN_TITLES[c] for c in OPTION_COLUMNS] + ["cost parts"]
        rows = [(*(cell(c, o) for c in OPTION_COLUMNS), parts_text(o)) for o in s.options]
        out.append(_table(head, rows, numeric=tuple(range(3, len(OPTION_COLUMNS))),
                          classes=["" if o.get("fits") else "nofit" for o in s.options]))
        out.append("<h3>Assumptions</h3>")
        out.append(_table(("name", "value", "unit", "origin"),
                          [(n, v, u, o) for n, v, u, o in s.assumptions] or [("(none recorded)", "", "", "")]))
        out.append(f"<p>Catalog dated {escape(s.catalog_date)}; cloud prices as of {escape(s.prices_as_of)}.</p>")
        out.append("<h3>Probes used</h3>")
        if s.probes:
            out.append(_table(("figure", "value", "measured by", "at"),
                              [(p.name, p.value, p.source, p.measured_at) for p in s.probes]))
        else:
            out.append("<p>None: no calibration saved, so the planner's published priors were used "
                       "(run <code>advisor probe train-step</code> to measure this machine).</p>")
    out.append("</body></html>")
    return "".join(out)
