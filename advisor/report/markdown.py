"""Markdown report: tables for the options, assumptions, catalog date and probes; the chart as a data URI."""

from __future__ import annotations

import base64

from advisor.report.chart import cost_chart_svg, memory_chart_svg, tornado_chart_svg
from advisor.report.content import (
    COLUMN_TITLES,
    FIT_HEAD,
    FIT_TITLE,
    SIMULATED_NOTE,
    PlanSection,
    appendix_holds,
    assumptions_fact,
    cell,
    generated_at,
    memory_chart_title,
    money,
    option_columns,
    spend_table,
)
from advisor.report.html import option_head, option_rows, parts_text, short_columns
from advisor.untrusted import markdown_text

# Text from a plan (ids, names, notes, titles) as literal Markdown (``advisor.untrusted.markdown_text``).
_esc = markdown_text


def _table(head, rows) -> list[str]:
    lines = ["| " + " | ".join(_esc(h) for h in head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(_esc(c) for c in r) + " |" for r in rows]
    return lines


def _svg(svg: str, alt: str) -> list[str]:
    return [f"![{alt}](data:image/svg+xml;base64,{base64.b64encode(svg.encode()).decode()})", ""]


def render_markdown(secs: list[PlanSection], *, title: str = "Hardware Advisor: plan comparison",
                    embed_chart: bool = True) -> str:
    """The report as Markdown text, in the HTML report's structure: a summary, one section per scenario
    (headline, chosen option and the next five, memory and cost charts, changed assumptions), the appendix."""
    out = [f"# {_esc(title)}", "", f"Generated {generated_at()} by the Hardware Advisor. Estimates, not quotes: "
           "check the assumptions.", ""]
    if len(secs) > 1:
        out += ["## Summary", ""]
        rows = [(s.title, (s.chosen.get("name") or s.chosen["id"]) if s.chosen else "nothing fits",
                 money(s.chosen.get("cost_usd")) if s.chosen else "-", cell("hours", s.chosen) if s.chosen else "-")
                for s in secs]
        out += _table(("scenario", "cheapest option that fits", "total cost", "time"), rows) + [""]
    for i, s in enumerate(secs):
        out += [f"## {i + 1}. {_esc(s.title)}", "", f"**{_esc(s.headline)}**", ""]
        facts = [*s.summary, ("catalog dated", s.catalog_date), ("cloud prices", s.price_dates or s.prices_as_of),
                 ("assumptions", assumptions_fact(s, "A", i))]
        if s.memory_range:
            facts.insert(len(s.summary), ("memory, 80 % range", s.memory_range.strip(" ()").removeprefix("80 %: ")))
        if s.simulated:
            facts.insert(0, ("hardware", SIMULATED_NOTE))
        out += [" · ".join(f"{_esc(k)}: **{_esc(v)}**" for k, v in facts), ""]
        if s.fit_advice:  # the section the headline points to
            out += [f"### {FIT_TITLE}", ""] + _table(FIT_HEAD, s.fit_advice) + [""]
        if s.chosen is not None:
            picks = [s.chosen, *s.alternatives]
            out += [f"### Chosen option and the next five ({appendix_holds(s, True, short=True)}: appendix A{i + 1})", ""]
            short = short_columns(s.doc)
            out += _table([COLUMN_TITLES[c] for c in short] + ["cost parts"],
                          [(*(cell(c, o) for c in short), parts_text(o)) for o in picks]) + [""]
            if embed_chart:
                mem_title, capacity = memory_chart_title(s)
                out += _svg(memory_chart_svg(s.memory_parts, capacity, title=mem_title, note=s.memory_note),
                            "Memory per device")
                out += _svg(cost_chart_svg(picks, s.breakdown_parts, limit=len(picks), title="Total job cost by part"),
                            "Total job cost by part")
                if s.tornado:
                    out += _svg(tornado_chart_svg(s.tornado), "What moves the total cost most")
        if s.changed_assumptions:
            out += ["### Assumptions that differ from the defaults", ""]
            out += _table(("name", "value", "unit", "default", "from"),
                          [(n, v, u, d, o) for n, v, u, o, d in s.changed_assumptions]) + [""]

    for i, s in enumerate(secs):
        fit = sum(1 for o in s.options if o.get("fits"))
        out += [f"## A{i + 1}. {_esc(s.title)}: all {len(s.options)} options ({fit} fit), by total job cost", ""]
        columns = option_columns(s.doc)
        out += _table(option_head(columns), option_rows(s.options, columns)) + [""]
        if s.infeasible:
            out += [f"### Not ranked: {len(s.infeasible)} option(s) cannot run as laid out", ""]
            out += _table(("option", "reason"), s.infeasible) + [""]
        spend = spend_table(s.doc)
        if spend is not None:
            out += [f"### {spend[0]}", ""] + _table(spend[1], spend[2]) + [""]
        if s.inputs:
            out += ["### Inputs", ""] + _table(("input", "value", "unit", "source"), s.inputs) + [""]
        out += ["### All assumptions", ""]
        out += _table(("name", "value", "unit", "origin"), s.assumptions or [("(none recorded)", "", "", "")]) + [""]
        out += ["### Probes used", ""]
        if s.probes:
            out += _table(("figure", "value", "measured by", "at"),
                          [(p.name, p.value, p.source, p.measured_at) for p in s.probes]) + [""]
        else:
            out += ["None: no calibration saved, so the planner's published priors were used.", ""]
    return "\n".join(out)
