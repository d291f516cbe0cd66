"""A serving report people send: what the Serve page says (the job, the answer for the user's GPUs first, the
cheapest cloud at the target), the throughput-against-latency chart of the charted options (the knee) and the
table of options, as Markdown, self-contained HTML or PDF (``advisor serve --report FILE``).

The chart is plain SVG text (as ``report.chart``): both axes logarithmic, one line per option (one replica as
the load rises), the p95 target dashed. Every name from outside (a model file, a user catalog) is escaped for
the format it lands in (``advisor.untrusted``).
"""

from __future__ import annotations

import base64
import math
from pathlib import Path

from advisor.colours import SERIES
from advisor.planner.serve import ServeResult
from advisor.report.content import ReportError, generated_at
from advisor.report.serve_text import answer_lines, heading_lines, legend_text, option_table
from advisor.untrusted import html_text, markdown_text

SERVE_FORMATS = {".md": "md", ".markdown": "md", ".html": "html", ".htm": "html", ".pdf": "pdf"}
TITLE = "Hardware Advisor: serving plan"
CHART_TITLE = "p95 first token against throughput (one replica each)"  # the Serve page's chart too
_RATE_TICKS = (1, 2, 5)  # log ticks at 1, 2 and 5 of each decade


def curve_name(o) -> str:
    """A charted option in the legend: ``yours: GeForce RTX 4090 x1 (llama.cpp)`` (the Serve page's words)."""
    return ("yours: " if o.owned else "") + f"{o.accelerator_name} ×{o.devices_per_replica} ({o.runtime})"


def _log_ticks(lo: float, hi: float) -> list[float]:
    out = []
    for e in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1):
        for m in _RATE_TICKS:
            v = m * 10.0 ** e
            if lo <= v <= hi:
                out.append(v)
    return out


def _rate_text(v: float) -> str:
    return f"{v / 1000:g}k" if v >= 1000 else f"{v:g}"


def _seconds_text(v: float) -> str:
    if v < 1.0:
        return f"{v * 1000:g} ms"
    return f"{v:g} s" if v < 120 else f"{v / 60:g} min"


def knee_chart_svg(curves, target_s: float | None = None, *, width: int = 760, height: int = 380,
                   title: str = CHART_TITLE) -> str:
    """SVG of p95 time to first token against output tokens/s (all users) for each ``(option, points)`` curve.

    Args:
        curves: ``planner.serve.knee_curves`` of a result: one replica of each charted option as the load rises.
        target_s: the p95 target, drawn dashed (None: none).
    Returns:
        An ``<svg>`` element (text); a short note instead of lines when nothing could be charted.
    """
    lines = []
    for o, points in curves:
        pts = [(p.output_tokens_per_s, p.ttft_p95_s) for p in points
               if p.stable and 0 < p.output_tokens_per_s < math.inf and 0 < p.ttft_p95_s < math.inf]
        if pts:
            lines.append((curve_name(o), pts))
    legend_h = 20 * math.ceil(max(1, len(lines)) / 2) + 8
    left, right, top, bottom = 70, 20, 34, 46 + legend_h
    pw, ph = width - left - right, height - top - bottom
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12" role="img" '
           f'aria-label="{html_text(title)}">',
           f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
           f'<text x="{width / 2:.0f}" y="20" font-size="14" font-weight="bold" text-anchor="middle">'
           f'{html_text(title)}</text>']
    if not lines:
        out.append(f'<text x="{left}" y="{top + 30}">No option fits this model: nothing to chart.</text></svg>')
        return "".join(out)
    xs = [x for _n, pts in lines for x, _y in pts]
    ys = [y for _n, pts in lines for _x, y in pts] + ([target_s] if target_s else [])
    x0, x1 = math.log10(min(xs) / 1.5), math.log10(max(xs) * 1.5)
    y0, y1 = math.log10(min(ys) / 1.5), math.log10(max(ys) * 1.5)

    def px(x: float) -> float:
        return left + (math.log10(x) - x0) / (x1 - x0) * pw

    def py(y: float) -> float:
        return top + ph - (math.log10(y) - y0) / (y1 - y0) * ph

    out.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>')
    for v in _log_ticks(10 ** x0, 10 ** x1):
        x = px(v)
        out.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + ph}" stroke="#e5e5e5"/>'
                   f'<text x="{x:.1f}" y="{top + ph + 16}" text-anchor="middle">{_rate_text(v)}</text>')
    for v in _log_ticks(10 ** y0, 10 ** y1):
        y = py(v)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + pw}" y2="{y:.1f}" stroke="#e5e5e5"/>'
                   f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{_seconds_text(v)}</text>')
    out.append(f'<text x="{left + pw / 2:.0f}" y="{top + ph + 34}" text-anchor="middle">output tokens/s, all users'
               f'</text><text x="16" y="{top + ph / 2:.0f}" text-anchor="middle" '
               f'transform="rotate(-90 16 {top + ph / 2:.0f})">p95 time to first token</text>')
    if target_s:
        y = py(target_s)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + pw}" y2="{y:.1f}" stroke="#c0392b" '
                   f'stroke-width="1.5" stroke-dasharray="6 4"/><text x="{left + pw - 4}" y="{y - 5:.1f}" '
                   f'text-anchor="end" fill="#c0392b">target {_seconds_text(target_s)}</text>')
    for i, (name, pts) in enumerate(lines):
        colour = SERIES[i % len(SERIES)]
        path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pts)
        out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        out += [f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="2.5" fill="{colour}"/>' for x, y in pts]
        lx = 8 + (i % 2) * (width / 2)
        ly = top + ph + 52 + (i // 2) * 20
        out.append(f'<rect x="{lx:.0f}" y="{ly - 9}" width="14" height="10" fill="{colour}"/>'
                   f'<text x="{lx + 20:.0f}" y="{ly}">{html_text(name, 60)}</text>')
    out.append("</svg>")
    return "".join(out)


def render_serve_markdown(result: ServeResult, changes: dict, curves, *, top: int | None = 12) -> str:
    """The report as Markdown: the job, the answer, the chart (a data URI), the table, what the figures mean."""
    esc = markdown_text
    out = [f"# {TITLE}", "", f"Generated {generated_at()} by the Hardware Advisor. Estimates, not quotes.", ""]
    out += [esc(line) + "  " for line in heading_lines(result)] + [""]
    out += [_markdown_answer(line) for line in answer_lines(result, changes)] + [""]
    svg = knee_chart_svg(curves, result.targets.ttft_p95_s)
    out += [f"![{CHART_TITLE}](data:image/svg+xml;base64,{base64.b64encode(svg.encode()).decode()})", ""]
    cols, rows, more = option_table(result, top, id_chars=None)
    out += ["| " + " | ".join(esc(c) for c in cols) + " |", "|" + "---|" * len(cols)]
    out += ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]
    if more:
        out += ["", f"{more} more options fit (advisor serve --all lists them)."]
    out += ["", esc(legend_text(result.by, result.moe))]
    out += ["", *(f"- {esc(line)}" for line in result.facts())]
    out += [f"- warning: {esc(w)}" for w in result.warnings]
    return "\n".join(out) + "\n"


def _markdown_answer(line: str) -> str:
    """An answer line as a Markdown list item (indented lines belong to the option above them)."""
    return ("  - " if line.startswith("  ") else "- ") + markdown_text(line.strip())


def render_serve_html(result: ServeResult, changes: dict, curves, *, top: int | None = 12, chart=None) -> str:
    """The report as self-contained HTML (inline CSS, the chart as inline SVG; ``chart(svg)`` replaces the
    inline SVG, as the PDF does with an image)."""
    esc = html_text
    svg = knee_chart_svg(curves, result.targets.ttft_p95_s)
    parts = ["<!DOCTYPE html><html><head><meta charset='utf-8'>", f"<title>{esc(TITLE)}</title>",
             "<style>body{font-family:sans-serif;margin:2em;color:#222;max-width:1200px}"
             "table{border-collapse:collapse;font-size:.85em}th,td{border:1px solid #ccc;padding:2px 6px}"
             ".note{color:#555;font-size:.9em}</style></head><body>",
             f"<h1>{esc(TITLE)}</h1>",
             f"<p class='note'>Generated {esc(generated_at())} by the Hardware Advisor. Estimates, not quotes.</p>",
             "<p>" + "<br>".join(esc(line) for line in heading_lines(result)) + "</p>", "<ul>"]
    nested = False
    for line in answer_lines(result, changes):
        if line.startswith("  "):
            if not nested:
                parts.append("<ul>")
                nested = True
            parts.append(f"<li>{esc(line.strip())}</li>")
        else:
            if nested:
                parts.append("</ul>")
                nested = False
            parts.append(f"<li><b>{esc(line)}</b></li>")
    parts.append("</ul></ul>" if nested else "</ul>")
    parts.append(chart(svg) if chart is not None else f"<p>{svg}</p>")
    cols, rows, more = option_table(result, top, id_chars=None)
    parts.append("<table style='border-collapse:collapse;font-size:9pt'><tr>"
                 + "".join(f"<th>{esc(c)}</th>" for c in cols) + "</tr>")
    parts += ["<tr>" + "".join(f"<td>{esc(c)}</td>" for c in r) + "</tr>" for r in rows]
    parts.append("</table>")
    if more:
        parts.append(f"<p class='note'>{more} more options fit (advisor serve --all lists them).</p>")
    parts.append(f"<p class='note'>{esc(legend_text(result.by, result.moe))}</p>")
    parts += [f"<p class='note'>{esc(line)}</p>" for line in result.facts()]
    parts += [f"<p class='note'>warning: {esc(w)}</p>" for w in result.warnings]
    parts.append("</body></html>")
    return "\n".join(parts)


def serve_report_format(path) -> str:
    """The format of a serving report from the file's suffix.

    Raises:
        ReportError: for a suffix it cannot tell.
    """
    suffix = Path(path).suffix.lower()
    if suffix not in SERVE_FORMATS:
        raise ReportError(f"report: cannot tell the format of {Path(path).name!r} from its suffix "
                          "(use .md, .html or .pdf)")
    return SERVE_FORMATS[suffix]


def write_serve_report(result: ServeResult, changes: dict, curves, path, *, top: int | None = 12) -> Path:
    """Write the serving report to ``path`` (Markdown, HTML or PDF by its suffix), atomically.

    Raises:
        ReportError: an unknown suffix, or a file that cannot be written (one line; an old file is kept).
    """
    from advisor.store.atomic import check_target, write_atomic

    path = Path(path)
    fmt = serve_report_format(path)
    try:
        check_target(path)
        if fmt == "md":
            data: str | bytes = render_serve_markdown(result, changes, curves, top=top)
        elif fmt == "html":
            data = render_serve_html(result, changes, curves, top=top)
        else:
            from advisor.report.pdf import html_pdf

            data = html_pdf(lambda chart: render_serve_html(result, changes, curves, top=top, chart=chart), TITLE)
        return write_atomic(path, data)
    except OSError as exc:
        raise ReportError(f"cannot write {path}: {exc.strerror or exc}") from None
    except RuntimeError as exc:
        raise ReportError(f"cannot write {path}: {exc}") from None
