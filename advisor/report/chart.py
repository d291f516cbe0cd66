"""A cost chart as inline SVG: the cheapest options as horizontal bars stacked by cost part.

Plain SVG text (no plotting library), so HTML reports stay self-contained and the PDF export can render
the same drawing with QtSvg.
"""

from __future__ import annotations

import math

from advisor.colours import cost_part_colour, memory_part_colour, part_label
from advisor.untrusted import html_text as escape  # every name in a chart is HTML text

# Fills light enough that a value label on them is written in black.
_LIGHT_FILLS = {cost_part_colour(p) for p in ("spot_rework", "storage", "egress", "depreciation", "colocation")}


_LIGHT_MEMORY = {memory_part_colour(p) for p in ("gradients", "kv_cache", "activations")}


def _nice_max(v: float) -> float:
    if v < 0.01:  # nothing below a cent is worth an axis (and avoids 10**-324 == 0)
        return 0.01 if v > 0 else 1.0
    exp = 10 ** math.floor(math.log10(v))
    for m in (1, 2, 2.5, 5, 10):
        if m * exp >= v:
            return m * exp
    return 10 * exp


def cost_chart_svg(options, parts, *, limit: int = 15, width: int = 760, title: str = "Total job cost") -> str:
    """SVG of the ``limit`` cheapest fitting options' ``cost_usd``, stacked by ``cost_breakdown_usd`` part.

    Args:
        options: option dicts (``advisor.plan/1``), any order.
        parts: cost part names in legend order.
    Returns:
        An ``<svg>`` element (text); a short note instead of bars when no option fits.
    """
    fitting = [o for o in options if o.get("fits") and isinstance(o.get("cost_usd"), (int, float))
               and math.isfinite(o["cost_usd"])]
    fitting.sort(key=lambda o: o["cost_usd"])
    rows = fitting[:limit]
    label_w, bar_h, gap, top = min(300, int(width * 0.4)), 15, 4, 30
    shown = [p for p in parts if any((o.get("cost_breakdown_usd") or {}).get(p) for o in rows)]
    legend_rows, lx = 1, 8.0
    for part in shown:  # the legend wraps under the axis: count its rows first
        step = 24 + 7 * len(part_label(part))
        if lx + step > width and lx > 8:
            legend_rows, lx = legend_rows + 1, 8.0
        lx += step
    legend_h = 20 * legend_rows + 6
    height = top + max(len(rows), 1) * (bar_h + gap) + 30 + legend_h
    plot_w = width - label_w - 90
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12" role="img" '
           f'aria-label="{escape(title)}">',
           f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
           f'<text x="8" y="20" font-size="14" font-weight="bold">{escape(title)}</text>']
    if not rows:
        out.append(f'<text x="8" y="{top + 14}">No option fits in memory: nothing to chart.</text></svg>')
        return "".join(out)
    vmax = _nice_max(max(o["cost_usd"] for o in rows))
    colours = {p: cost_part_colour(p) for p in shown}  # the same colour per part as in the app
    for tick in range(5):
        x = label_w + plot_w * tick / 4
        out.append(f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{top + len(rows) * (bar_h + gap)}" '
                   f'stroke="#dddddd"/>')
        out.append(f'<text x="{x:.1f}" y="{top + len(rows) * (bar_h + gap) + 14}" text-anchor="middle" '
                   f'fill="#555555">{escape(_usd(vmax * tick / 4))}</text>')
    for i, o in enumerate(rows):
        y = top + i * (bar_h + gap)
        most = max(8, (label_w - 12) // 7)  # characters that fit the label column
        label = o["id"] if len(o["id"]) <= most else o["id"][:most - 1] + "\u2026"
        out.append(f'<text x="{label_w - 6}" y="{y + bar_h - 5}" text-anchor="end">{escape(label)}</text>')
        x = float(label_w)
        breakdown = o.get("cost_breakdown_usd") or {"total": o["cost_usd"]}
        for part, value in breakdown.items():
            if not isinstance(value, (int, float)) or value <= 0:
                continue
            w = plot_w * value / vmax
            colour = colours.get(part, cost_part_colour(part))
            out.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{bar_h}" fill="{colour}">'
                       f'<title>{escape(part_label(part))}: {escape(_usd(value))}</title></rect>')
            if w >= 48:  # the part's value inside its segment, where it fits
                ink = "#000000" if colour in _LIGHT_FILLS else "#ffffff"
                out.append(f'<text x="{x + w / 2:.1f}" y="{y + bar_h - 5}" text-anchor="middle" font-size="10" '
                           f'fill="{ink}">{escape(_usd(value))}</text>')
            x += w
        out.append(f'<text x="{x + 4:.1f}" y="{y + bar_h - 5}">{escape(_usd(o["cost_usd"]))}</text>')
    ly = height - legend_h + 12
    lx = 8.0
    for part, colour in colours.items():
        step = 24 + 7 * len(part_label(part))
        if lx + step > width and lx > 8:
            lx, ly = 8.0, ly + 20
        out.append(f'<rect x="{lx:.1f}" y="{ly - 10}" width="12" height="12" fill="{colour}"/>')
        out.append(f'<text x="{lx + 16:.1f}" y="{ly}">{escape(part_label(part))}</text>')
        lx += step
    out.append("</svg>")
    return "".join(out)


def _usd(v: float) -> str:
    if v >= 1e6:
        return f"${v / 1e6:.3g}M"
    if v >= 1e4:
        return f"${v / 1e3:.3g}k"
    return f"${v:,.2f}" if v < 100 else f"${v:,.0f}"


def memory_chart_svg(parts, capacity_bytes: float | None = None, *, width: int = 760,
                     title: str = "Memory per device by part", note: str = "") -> str:
    """SVG of one horizontal bar of the memory one device needs, stacked by part, each part labelled.

    Args:
        parts: ``(part name, bytes)`` pairs (``weights``, ``kv_cache``, ...), in stacking order.
        capacity_bytes: the chosen device's memory, drawn as a dashed line when given.
        note: a line under the legend (the total's 80 % range), "" for none.
    Returns:
        An ``<svg>`` element (text); colours from :mod:`advisor.colours`, memory in GB (1e9 bytes).
    """
    from advisor.units import fmt_mem

    parts = [(p, float(v)) for p, v in parts if isinstance(v, (int, float)) and v > 0]
    total = sum(v for _, v in parts)
    top = max(total, capacity_bytes or 0.0) or 1.0
    # the title and the total; a title too long for the chart ("...: 2 x H100 SXM5 80GB") goes on two lines
    head = [f"{title}: {fmt_mem(total)}"]
    if 8.5 * len(head[0]) > width - 16 and ": " in title:
        first, rest = title.split(": ", 1)
        head = [f"{first}: {fmt_mem(total)}", f"on {rest}"]
    left, bar_y, bar_h = 8, 30 + 16 * (len(head) - 1), 26
    plot_w = width - left - 16
    body = []
    x = float(left)
    lx, ly = float(left), bar_y + bar_h + 40.0
    for part, value in parts:
        w = plot_w * value / top
        colour = memory_part_colour(part)
        body.append(f'<rect x="{x:.1f}" y="{bar_y}" width="{w:.1f}" height="{bar_h}" fill="{colour}">'
                    f'<title>{escape(part_label(part))}: {escape(fmt_mem(value))}</title></rect>')
        if w >= 56:
            ink = "#000000" if colour in _LIGHT_MEMORY else "#ffffff"
            body.append(f'<text x="{x + w / 2:.1f}" y="{bar_y + 17}" text-anchor="middle" font-size="10" '
                        f'fill="{ink}">{escape(fmt_mem(value))}</text>')
        x += w
        label = f"{part_label(part)} {fmt_mem(value)}"
        step = 26 + 6.5 * len(label)
        if lx + step > width and lx > left:  # the legend wraps below the bar, never over it
            lx, ly = float(left), ly + 20
        body.append(f'<rect x="{lx:.1f}" y="{ly - 10:.0f}" width="12" height="12" fill="{colour}"/>')
        body.append(f'<text x="{lx + 16:.1f}" y="{ly:.0f}">{escape(label)}</text>')
        lx += step
    if capacity_bytes:
        cx = left + plot_w * capacity_bytes / top
        body.append(f'<line x1="{cx:.1f}" y1="{bar_y - 6}" x2="{cx:.1f}" y2="{bar_y + bar_h + 6}" stroke="#555555" '
                    f'stroke-dasharray="4 3"/>')
        anchor = "end" if cx > width / 2 else "start"
        body.append(f'<text x="{cx:.1f}" y="{bar_y + bar_h + 20}" text-anchor="{anchor}" fill="#555555">capacity '
                    f'{escape(fmt_mem(capacity_bytes))}</text>')
    if note:
        ly += 20
        body.append(f'<text x="{left}" y="{ly:.0f}" fill="#555555">{escape(note)}</text>')
    height = int(ly + 12)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12" role="img" '
           f'aria-label="{escape(title)}">',
           f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
           f'<text x="8" y="20" font-size="14" font-weight="bold">{escape(head[0])}</text>',
           *(f'<text x="8" y="{20 + 16 * k}" font-size="12">{escape(line)}</text>'
             for k, line in enumerate(head[1:], 1)),
           *body]
    out.append("</svg>")
    return "".join(out)


def tornado_chart_svg(tornado: dict, *, width: int = 760, limit: int = 5,
                      title: str = "What moves the total cost most") -> str:
    """SVG of a tornado: per input, a bar from the chosen option's total at its low value to its total at its
    high value, about the base total (a vertical line), largest swing on top.

    Args:
        tornado: the ``tornado`` of an ``advisor.plan/1`` document (``planner.sensitivity.Tornado.as_dict()``).
        limit: the inputs drawn (the largest swings; the CLI's ``--sensitivity`` table lists every one).
    Returns:
        An ``<svg>`` element (text). The low end is drawn in the colour of a lower value, the high end in that
        of a higher one (:data:`advisor.colours.TORNADO_COLOURS`), each end labelled with its total.
    """
    from advisor.colours import TORNADO_COLOURS

    bars = [b for b in tornado.get("bars") or [] if isinstance(b, dict)
            and isinstance(b.get("low_cost_usd"), (int, float)) and isinstance(b.get("high_cost_usd"), (int, float))]
    bars = bars[:limit]
    base = float(tornado.get("base_cost_usd") or 0.0)
    label_w, bar_h, gap, top = min(190, int(width * 0.36)), 11, 3, 37
    plot_l, plot_r = label_w + 48, width - 52
    height = top + max(len(bars), 1) * (bar_h + gap) + 4
    option = str(tornado.get("option", ""))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="10" role="img" '
           f'aria-label="{escape(title)}: {escape(option)}">',
           f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
           f'<text x="8" y="16" font-size="13" font-weight="bold">{escape(title)}</text>',
           f'<text x="8" y="30" fill="#555555">{escape(option)}, {escape(_usd(base))}; input at</text>']
    lx = 8 + 5.6 * (len(option) + len(_usd(base)) + 12)
    for end in ("low", "high"):  # the legend on the subtitle's line: never over a bar
        out.append(f'<rect x="{lx:.0f}" y="22" width="10" height="10" fill="{TORNADO_COLOURS[end]}"/>')
        out.append(f'<text x="{lx + 13:.0f}" y="31" fill="#555555">{end}</text>')
        lx += 45
    if not bars:
        out.append(f'<text x="8" y="{top + 12}">No input to vary.</text></svg>')
        return "".join(out)
    lo = min([base] + [min(b["low_cost_usd"], b["high_cost_usd"]) for b in bars])
    hi = max([base] + [max(b["low_cost_usd"], b["high_cost_usd"]) for b in bars])
    span = (hi - lo) or 1.0

    def x_of(v: float) -> float:
        return plot_l + (plot_r - plot_l) * (v - lo) / span

    bx = x_of(base)
    for i, b in enumerate(bars):
        y = top + i * (bar_h + gap)
        most = max(8, (label_w - 12) // 6)
        name = str(b.get("parameter", ""))
        name = name if len(name) <= most else name[:most - 1] + "\u2026"
        out.append(f'<text x="{label_w - 4}" y="{y + bar_h - 2}" text-anchor="end">{escape(name)}</text>')
        for end in ("low", "high"):
            v = float(b[f"{end}_cost_usd"])
            x0, x1 = sorted((bx, x_of(v)))
            out.append(f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 1.0):.1f}" height="{bar_h}" '
                       f'fill="{TORNADO_COLOURS[end]}"><title>{escape(name)} at {end} '
                       f'{escape(_num_text(b.get(f"{end}_value")))}: {escape(_usd(v))}</title></rect>')
        lv, hv = float(b["low_cost_usd"]), float(b["high_cost_usd"])
        left, right = (lv, hv) if lv <= hv else (hv, lv)
        out.append(f'<text x="{x_of(left) - 3:.1f}" y="{y + bar_h - 2}" text-anchor="end">{escape(_usd(left))}</text>')
        out.append(f'<text x="{x_of(right) + 3:.1f}" y="{y + bar_h - 2}">{escape(_usd(right))}</text>')
    bottom = top + len(bars) * (bar_h + gap)
    out.append(f'<line x1="{bx:.1f}" y1="{top - 3}" x2="{bx:.1f}" y2="{bottom}" stroke="#333333"/>')
    out.append("</svg>")
    return "".join(out)


def _num_text(v) -> str:
    from advisor.units import sig3

    return sig3(float(v)) if isinstance(v, (int, float)) else "-"
