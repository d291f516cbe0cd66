"""Self-contained HTML report: inline CSS, charts as inline SVG, no external resources."""

from __future__ import annotations

from collections.abc import Callable

from advisor.report.chart import cost_chart_svg, memory_chart_svg, tornado_chart_svg
from advisor.report.content import (
    COLUMN_TITLES,
    FIT_HEAD,
    FIT_TITLE,
    OPTION_COLUMNS,
    SIMULATED_NOTE,
    PlanSection,
    appendix_holds,
    appendix_rows,
    assumption_matrix,
    assumptions_fact,
    cell,
    generated_at,
    memory_chart_title,
    money,
    option_columns,
    serving,
    spend_table,
)
from advisor.untrusted import html_text as escape  # every value shown is HTML text

PDF_SMALL_PART = 0.02  # the PDF lists the cost parts of 2 % of an option's total or more
_BREAK = ' style="page-break-before:always"'  # each scenario and the appendix start a new PDF page

_CSS = """
body{font-family:-apple-system,'Segoe UI',Roboto,sans-serif;margin:2em;color:#222;max-width:1200px}
h1{font-size:1.5em}h2{font-size:1.25em;margin-top:1em;border-bottom:1px solid #ccc}h3{font-size:1.05em}
table{border-collapse:collapse;margin:.5em 0;font-size:.85em}
th,td{border:1px solid #ccc;padding:2px 6px;text-align:left}
td.n{text-align:right}tr.nofit td{color:#999}tr.chosen td{font-weight:bold}.note{color:#555;font-size:.9em}
table.charts,table.charts td{border:none;padding:0}
"""


def _table(head, rows, numeric=(), classes=None, small: bool = False) -> str:
    # an inline size: Qt's rich text (the PDF) ignores descendant CSS selectors
    out = ['<table style="font-size:7pt">' if small else "<table>"]
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


def parts_text(o: dict, min_share: float = 0.0) -> str:
    """The cost parts as ``rent $3.14, ...``; parts under ``min_share`` of the total are left out (the PDF keeps
    to its pages and says so; every part is in the HTML, Markdown and CSV reports)."""
    parts = {k: v for k, v in (o.get("cost_breakdown_usd") or {}).items() if v}
    total = sum(parts.values())
    small = {k: v for k, v in parts.items() if min_share and v < min_share * total}
    text = ", ".join(f"{k} {money(v)}" for k, v in parts.items() if k not in small)
    if o.get("stack_ok", True) is False:  # runs off the job's software stack (docs/method.md, "Software stacks")
        text = f"[{o.get('stack_reason') or 'another software stack'}] {text}"
    return text


def option_rows(options, columns=OPTION_COLUMNS, min_share: float = 0.0) -> list[tuple]:
    """Table rows of options: every column of ``columns`` (:data:`OPTION_COLUMNS`) and the cost parts."""
    return [(*(cell(c, o) for c in columns), parts_text(o, min_share)) for o in options]


def option_head(columns=OPTION_COLUMNS) -> list[str]:
    return [COLUMN_TITLES[c] for c in columns] + ["cost parts"]


OPTION_HEAD = option_head()
SHORT_COLUMNS = ("id", "devices", "hours", "usd_per_device_hour", "cost_usd", "tokens_per_s")


def short_columns(doc: dict) -> tuple[str, ...]:
    """The scenario page's option columns: with $ per million tokens and requests for a serving plan."""
    return SHORT_COLUMNS + (("usd_per_million_tokens", "usd_per_million_requests") if serving(doc) else ())


def render_html(secs: list[PlanSection], *, chart: Callable[[int, str], str] | None = None,
                title: str = "Hardware Advisor: plan comparison", appendix: str = "full") -> str:
    """The report as one HTML page: a summary, one page per scenario, then the appendix.

    Each scenario page holds the headline, the chosen option, the next five, the memory chart, the cost parts,
    and the assumptions that differ from the defaults with where each came from. The appendix holds the option
    tables, all the assumptions and the probes.

    Args:
        chart: turns (chart index, SVG text) into the markup placed in the page; inline SVG by default
            (the PDF export swaps in an image reference).
        appendix: ``"full"`` (every option) or ``"per_accelerator"`` (the cheapest option of each accelerator
            and kind: the PDF's, which keeps three scenarios within eight pages).
    """
    chart = chart or (lambda _i, svg: svg)
    out = ["<!DOCTYPE html><html><head><meta charset=\"utf-8\">",
           f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>",
           f"<h1>{escape(title)}</h1>",
           f"<p class=\"note\">Generated {escape(generated_at())} by the Hardware Advisor. Estimates, not quotes: "
           "check the assumptions.</p>"]
    if len(secs) > 1:
        out.append("<h2>Summary</h2>")
        rows = [(s.title, (s.chosen.get("name") or s.chosen["id"]) if s.chosen else "nothing fits",
                 money(s.chosen.get("cost_usd")) if s.chosen else "-", cell("hours", s.chosen) if s.chosen else "-")
                for s in secs]
        out.append(_table(("scenario", "cheapest option that fits", "total cost", "time"), rows, numeric=(2, 3),
                          small=True))
    n_chart = 0
    for i, s in enumerate(secs):
        out.append(f'<div class="scenario"{_BREAK if i else ""}>')
        out.append(f"<h2>{i + 1}. {escape(s.title)}</h2>")
        out.append(f"<p><b>{escape(s.headline)}</b></p>")
        facts = [*s.summary, ("catalog dated", s.catalog_date), ("cloud prices", s.price_dates or s.prices_as_of),
                 ("assumptions", assumptions_fact(s, "A" if appendix == "full" else "B", i))]
        if s.simulated:
            facts.insert(0, ("hardware", SIMULATED_NOTE))
        out.append("<p>" + " · ".join(f"{escape(k)}: <b>{escape(v)}</b>" for k, v in facts) + "</p>")
        if s.chosen is not None:
            out.append(f"<h3>Chosen option and the next five ({escape(appendix_holds(s, appendix == 'full', short=True))}: "
                       f"appendix A{i + 1})</h3>")
            picks = [s.chosen, *s.alternatives]
            short = short_columns(s.doc)
            out.append(_table([COLUMN_TITLES[c] for c in short] + ["cost parts"],
                              [(*(cell(c, o) for c in short),
                                parts_text(o, 0.0 if appendix == "full" else PDF_SMALL_PART)) for o in picks],
                              numeric=tuple(range(1, len(short))), classes=["chosen"] + [""] * len(s.alternatives),
                              small=True))
            mem_title, capacity = memory_chart_title(s)
            # side by side, so a scenario keeps to one page (narrower, three across, with a tornado)
            narrow = bool(s.tornado)
            memory = chart(n_chart, memory_chart_svg(s.memory_parts, capacity, width=270 if narrow else 380,
                                                     title=mem_title, note=s.memory_note))
            cost = chart(n_chart + 1, cost_chart_svg(picks, s.breakdown_parts, limit=len(picks),
                                                     width=410 if narrow else 620, title="Total job cost by part"))
            n_chart += 2
            cells = [memory, cost]
            if narrow:
                cells.append(chart(n_chart, tornado_chart_svg(s.tornado, width=310)))
                n_chart += 1
            out.append('<table class="charts"><tr>' + "".join(f"<td>{c}</td>" for c in cells) + "</tr></table>")
        if s.fit_advice:  # the section the headline points to
            out.append(f"<h3>{escape(FIT_TITLE)}</h3>")
            out.append(_table(FIT_HEAD, s.fit_advice, small=True))
        if s.changed_assumptions:
            out.append("<h3>Assumptions that differ from the defaults</h3>")
            out.append(_table(("name", "value", "unit", "default", "from"),
                              [(n, v, u, d, o) for n, v, u, o, d in s.changed_assumptions], small=True))
        out.append("</div>")
    for i, s in enumerate(secs):
        out.append(f'<div class="appendix"{_BREAK if i == 0 else ""}>')
        full = appendix == "full"
        rows_of = appendix_rows(s, full)
        what = appendix_holds(s, full)
        out.append(f"<h2>A{i + 1}. {escape(s.title)}: {escape(what)}, by total job cost</h2>")
        columns = option_columns(s.doc) if full else OPTION_COLUMNS  # the PDF: serving costs on the scenario page
        head, rows = option_head(columns), option_rows(rows_of, columns, 0.0 if full else PDF_SMALL_PART)
        if not full:  # one line per option: the cost parts and the ranges are on the scenario pages
            keep = [k for k, c in enumerate(columns) if not c.endswith("_interval")]
            head, rows = [head[k] for k in keep], [tuple(r[k] for k in keep) for r in rows]
        out.append(_table(head, rows, numeric=tuple(range(3, len(head))),
                          classes=["" if o.get("fits") else "nofit" for o in rows_of], small=True))
        if s.infeasible and full:
            out.append(f"<h3>Not ranked: {len(s.infeasible)} option(s) cannot run as laid out</h3>")
            out.append(_table(("option", "reason"), s.infeasible, small=True))
        elif s.infeasible:  # the PDF keeps to its pages: the reasons are in the HTML and CSV reports
            out.append(f"<p>Not ranked: {len(s.infeasible)} option(s) cannot run as laid out (each with its reason "
                       "in the HTML and CSV reports).</p>")
        spend = spend_table(s.doc)  # the monthly view, in the PDF too: the rent-or-buy question itself
        if spend is not None:
            out.append(f"<h3>{escape(spend[0])}</h3>")
            out.append(_table(spend[1], spend[2], numeric=tuple(range(1, len(spend[1]) - 1)), small=True))
        if s.inputs:
            out.append("<h3>Inputs</h3>")
            out.append(_table(("input", "value", "unit", "source"), s.inputs, small=True))
        if full:
            out.append("<h3>All assumptions</h3>")
            out.append(_table(("name", "value", "unit", "origin"),
                              [(n, v, u, o) for n, v, u, o in s.assumptions] or [("(none recorded)", "", "", "")]))
        else:
            out.append(f"<p>All {len(s.assumptions)} assumptions of this scenario: appendix B.</p>")
        out.append("<h3>Probes used</h3>")
        if s.probes:
            out.append(_table(("figure", "value", "measured by", "at"),
                              [(p.name, p.value, p.source, p.measured_at) for p in s.probes]))
        else:
            out.append("<p>None: no calibration saved, so the planner's published priors were used "
                       "(run <code>advisor probe train-step</code> to measure this machine).</p>")
        out.append("</div>")
    if appendix != "full":  # the PDF: every assumption once, a value column per scenario
        head, rows = assumption_matrix(secs)
        out.append(f"<div{_BREAK}><h2>B. All assumptions ({len(rows)}), with their value in each scenario and "
                   "where it comes from</h2>")
        out.append(_table(head, rows, small=True))
        out.append("</div>")
    out.append("</body></html>")
    return "".join(out)
