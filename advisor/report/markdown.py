"""Markdown report: tables for the options, assumptions, catalog date and probes; the chart as a data URI."""

from __future__ import annotations

import base64
import html

from advisor.report.chart import cost_chart_svg
from advisor.report.content import COLUMN_TITLES, OPTION_COLUMNS, PlanSection, cell, generated_at, money
from advisor.report.html import parts_text

_MD_SPECIAL = "\\`*[]|"  # what can start code, emphasis, a link or an image, or end a table cell


def _esc(text) -> str:
    """Text from a plan (ids, names, notes, titles) as literal Markdown: HTML ``<>&`` as entities, Markdown
    punctuation backslash-escaped, line breaks as spaces; so ``<script>`` or ``[x](javascript:...)`` stays text."""
    out = html.escape(" ".join(str(text).splitlines()), quote=False)
    return "".join("\\" + c if c in _MD_SPECIAL else c for c in out)


def _table(head, rows) -> list[str]:
    lines = ["| " + " | ".join(_esc(h) for h in head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(_esc(c) for c in r) + " |" for r in rows]
    return lines


def render_markdown(secs: list[PlanSection], *, title: str = "Hardware Advisor: plan comparison",
                    embed_chart: bool = True) -> str:
    """The report as Markdown text."""
    out = [f"# {_esc(title)}", "", f"Generated {generated_at()} by the Hardware Advisor. Estimates, not quotes: "
           "check the assumptions.", ""]
    if len(secs) > 1:
        out += ["## Summary", ""]
        rows = []
        for s in secs:
            best = next((o for o in s.options if o.get("fits")), None)
            rows.append((s.title, best["id"] if best else "nothing fits", money(best["cost_usd"]) if best else "-"))
        out += _table(("plan", "cheapest option that fits", "total cost"), rows) + [""]
    for s in secs:
        out += [f"## {_esc(s.title)}", ""]
        out += [f"- **{_esc(k)}**: {_esc(v)}" for k, v in s.summary] + [""]
        if s.inputs:
            out += ["### Inputs", ""] + _table(("input", "value", "unit", "source"), s.inputs) + [""]
        if embed_chart:
            svg = cost_chart_svg(s.options, s.breakdown_parts)
            out += [f"![Total job cost](data:image/svg+xml;base64,{base64.b64encode(svg.encode()).decode()})", ""]
        out += [f"### Options ({sum(1 for o in s.options if o.get('fits'))} of {len(s.options)} fit), "
                "by total job cost", ""]
        head = [COLUMN_TITLES[c] for c in OPTION_COLUMNS] + ["cost parts"]
        out += _table(head, [[cell(c, o) for c in OPTION_COLUMNS] + [parts_text(o)] for o in s.options]) + [""]
        out += ["### Assumptions", ""]
        out += _table(("name", "value", "unit", "origin"), s.assumptions or [("(none recorded)", "", "", "")]) + [""]
        out += [f"Catalog dated {_esc(s.catalog_date)}; cloud prices as of {_esc(s.prices_as_of)}.", "",
                "### Probes used", ""]
        if s.probes:
            out += _table(("figure", "value", "measured by", "at"),
                          [(p.name, p.value, p.source, p.measured_at) for p in s.probes]) + [""]
        else:
            out += ["None: no calibration saved, so the planner's published priors were used.", ""]
    return "\n".join(out)
