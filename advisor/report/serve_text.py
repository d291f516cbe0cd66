"""A serving plan as text for people: the answer for the GPUs the user owns first (does the load meet the
target, what each user sees, what to change), then the cheapest cloud at the same target, then the table.
The app's Serve page shows the same answer lines (:func:`answer_lines`).
"""

from __future__ import annotations

import math

from advisor.estimate.serving_queue import Z80
from advisor.job.serve import assumed_load_text
from advisor.planner.serve import ServeOption, ServeResult, capacity_ranges, interval, miss_ratio, range_origin


def _s(x: float | None) -> str:
    """Seconds as people read them: 0.4 ms, 45 ms, 1.8 s, 2.3 min, 5.0 h, 3.2 days."""
    if x is None or x != x or x == float("inf"):
        return "-"
    if x < 1.0:
        return f"{x * 1e3:.2g} ms" if x < 0.01 else f"{x * 1e3:.0f} ms"
    if x < 120:
        return f"{x:.2g} s" if x < 10 else f"{x:.0f} s"
    if x < 7200:
        return f"{x / 60:.1f} min"
    return f"{x / 3600:.1f} h" if x < 172_800 else f"{x / 86400:.1f} days"


def _usd(x: float | None) -> str:
    if x is None:
        return "-"
    return f"${x:,.2f}" if x < 100 else f"${x:,.0f}"


def target_text(result: ServeResult) -> str:
    t = result.targets
    parts = []
    if t.ttft_p95_s is not None:
        parts.append(f"p95 time to first token {_s(t.ttft_p95_s)}")
    if t.tpot_p95_s is not None:
        parts.append(f"p95 time per token {_s(t.tpot_p95_s)} ({1 / t.tpot_p95_s:.3g} tokens/s per user)")
    return " and ".join(parts) or "no latency target (the load only has to be served)"


def sees_text(o: ServeOption, by: str = "users") -> str:
    """What one user sees on an option at the stated load (``by``: users or requests_per_s, for its ranges)."""
    p = o.point
    if p is None:
        return "the load is more than it serves: queues grow without bound"
    if not p.stable:
        if p.queue_growth_per_s <= 0 or not math.isfinite(p.wait_growth_s_per_s):
            return "the load is more than it serves: queues grow without bound"
        return (f"beyond what it serves ({p.requests_per_s:.3g} requests/s a replica): no steady first token; the "
                f"queue grows by {p.queue_growth_per_s * o.replicas:.3g} requests/s, each second adding "
                f"{p.wait_growth_s_per_s:.2g} s to a new request's wait")
    ttft = interval(p.ttft_p95_s, "ttft", o, by)
    rate = interval(1 / p.tpot_p50_s, "tpot", o, by, bound="rate")
    ttft_range = f"; 80 %: {_s(ttft[0])}-{_s(ttft[1])}" if ttft else ""
    rate_range = f" (80 %: {rate[0]:.3g}-{rate[1]:.3g})" if rate else ""
    return (f"first token after {_s(p.ttft_p50_s)} (p50), {_s(p.ttft_p95_s)} (p95{ttft_range}); then "
            f"{1 / p.tpot_p50_s:.3g} tokens/s{rate_range} ({_s(p.tpot_p50_s)} a token, {_s(p.tpot_p95_s)} at p95)")


def near_capacity_text(o: ServeOption) -> str:
    """At an arrival rate with a 5 % chance or more that it is beyond what a replica serves (its capacity's held-out
    error): that chance, where the wait grows as 1 / (1 - rho) and the figures of ``sees_text`` are the median's
    (its own answer line, ``Near capacity:``); empty otherwise."""
    chance = o.chance_beyond_capacity
    if chance is None or chance < 0.05 or not o.capacity_per_replica:
        return ""
    share = o.point.requests_per_s_offered / o.capacity_per_replica
    text = (f"at {100 * share:.0f} % of what a replica serves as planned, a {100 * chance:.0f} % chance the rate "
            f"is beyond it (its capacity is known within x/÷{math.exp(Z80 * o.capacity_spread):.2f})")
    over = capacity_ranges(o)
    if over is not None:
        lo, hi = over["ttft_p95_s"]
        text += f"; over that error alone the p95 first token is {_s(lo)} to {_s(hi) if hi is not None else 'beyond it'}"
    return text


def _option_name(o: ServeOption) -> str:
    n = o.devices_per_replica
    what = f"{n} x {o.accelerator_name}" if n > 1 else o.accelerator_name
    if o.replicas > 1:
        what = f"{o.replicas} replicas of {what}"
    return f"{what} ({o.id}, {o.runtime})"


def _in_use(o: ServeOption) -> str:
    """What of an owned option's GPUs the load uses where it needs fewer replicas than they make ("" where all)."""
    have = o.replicas_available or 0
    if not o.fits or have <= o.replicas:
        return ""
    n = o.devices_per_replica
    return (f"; this load uses {o.replicas} of its {have} replicas ({o.replicas * n} of {have * n} GPUs)"
            if n > 1 else f"; this load uses {o.replicas} of {have} GPUs")


def _miss(result: ServeResult, o: ServeOption) -> str:
    p, t = o.point, result.targets
    why = []
    if p is None:
        return o.note
    if t.ttft_p95_s is not None and p.ttft_p95_s > t.ttft_p95_s:
        why.append(f"p95 time to first token {_s(p.ttft_p95_s)} against {_s(t.ttft_p95_s)}")
    if t.tpot_p95_s is not None and p.tpot_p95_s > t.tpot_p95_s:
        why.append(f"p95 time per token {_s(p.tpot_p95_s)} against {_s(t.tpot_p95_s)}")
    if o.replicas_available is not None and o.max_load_per_replica > 0 and \
            o.replicas_available * o.max_load_per_replica < result.load:
        most = o.replicas_available * o.max_load_per_replica
        why.append(f"{o.replicas_available} replica{'s' if o.replicas_available != 1 else ''} serve"
                   f"{'' if o.replicas_available != 1 else 's'} at most {load_number(result, most)} "
                   f"{_unit(result, most)}")
    if not p.stable:
        why.append("the arrival rate is more than it serves")
    return "; ".join(why) or "misses it"


def load_number(result: ServeResult, value: float) -> str:
    """A load as people read it: whole users with separators, requests/s to three figures."""
    return f"{int(value):,}" if result.by == "users" else f"{value:.3g}"


def _unit(result: ServeResult, value: float | None = None) -> str:
    """``users`` (``user`` for one) or ``requests/s``."""
    if result.by != "users":
        return "requests/s"
    return "user" if value is not None and int(value) == 1 else "users"


def answer_lines(result: ServeResult, changes: dict | None = None) -> list[str]:
    """The answer first: each owned option, the cheapest cloud at the target, or the closest option."""
    changes = changes or {}
    lines = []
    for o in result.owned_options():
        lines.append(f"Your GPUs: {_option_name(o)}" + (f" [{o.origin}]" if o.origin else "") + _in_use(o))
        if not o.fits:
            lines.append(f"  {o.note}")
            lines.extend(f"  To change: {c.text}" for c in changes.get(o.id, ()))
            continue
        verdict = "meets" if o.meets_target else "does NOT meet"
        lines.append(f"  {result.load_text}: {verdict} the target" + ("" if o.meets_target else
                                                                       f" ({_miss(result, o)})"))
        lines.append(f"  Each user sees: {sees_text(o, result.by)}")
        if near := near_capacity_text(o):
            lines.append(f"  Near capacity: {near}")
        reps = o.replicas_available or o.replicas
        most = o.max_load_per_replica * reps
        split = "" if reps <= 1 else (f" ({load_number(result, o.max_load_per_replica)} a replica x {reps} replicas "
                                      f"of {o.devices_per_replica} GPU{'s' if o.devices_per_replica > 1 else ''})")
        t = result.targets
        most_text = "Most within the target" if (t.ttft_p95_s, t.tpot_p95_s) != (None, None) else \
            "Most it serves (no latency target)"
        lines.append(f"  {most_text}: {load_number(result, most)} {_unit(result, most)}{split}" if most > 0 else
                     f"  {most_text}: none (one request alone misses it)")
        for c in changes.get(o.id, ()):
            lines.append(f"  To change: {c.text}")
        if o.usd_per_million_requests is not None:
            lines.append(f"  Costs {_usd(o.usd_per_million_requests)} per million requests "
                         f"({_usd(o.usd_per_million_output_tokens)} per million output tokens) at this load: "
                         f"energy{' and wear' if result.assumptions.owned_wear_usd_per_gpu_hour else ''}, "
                         f"{_usd(o.usd_per_hour)}/h")
    lines.extend(result.learned)  # the speeds the user's own runs set
    cloud = result.cheapest("cloud")
    if cloud is not None:
        lines.append(f"Cheapest cloud at the same target: {_option_name(cloud)}: "
                     f"{_usd(cloud.usd_per_million_requests)} per million requests "
                     f"({_usd(cloud.usd_per_million_output_tokens)} per million output tokens), "
                     f"{_usd(cloud.usd_per_hour)}/h")
    if not any(o.meets_target for o in result.options):
        close = result.closest()
        if close is not None:
            lines.append(f"No option meets {target_text(result)}; the closest is {_option_name(close)} at "
                         f"{miss_ratio(close.point, result.targets):.2g}x the target: {sees_text(close, result.by)}")
        else:
            lines.append(f"No option serves {result.load_text} at {target_text(result)}.")
    return lines


def heading_lines(result: ServeResult) -> list[str]:
    """The job in words: model, weights, cache, load, lengths, target."""
    j = result.request
    m = result.model
    ln = result.lengths
    spread = (f", spread {ln.prompt_cv:g}/{ln.output_cv:g}" if ln.prompt_cv or ln.output_cv else "")
    fmt = next((o.launch.get("weight_format") for o in result.options if o.fits and o.launch), j.quant or j.precision)
    head = [f"Serve: {result.model_name} ({fmt} weights, {m.kv_bits if m else 16}-bit "
            f"KV cache) to {result.load_text}; prompts {ln.prompt_mean:,.0f} tokens, outputs {ln.output_mean:,.0f}"
            f"{spread}",
            f"Target: {target_text(result)}"]
    if result.lengths_origin != "as given":
        head.append(f"Lengths: {result.lengths_origin}")
    if assumed := assumed_load_text(j):
        head.append(f"Assumed: {assumed}")
    return head


def option_table(result: ServeResult, top: int | None = 12, id_chars: int | None = 44):
    """``(columns, rows, left out)``: the options that fit, as the table shows them (text cells)."""
    rows = [o for o in result.options if o.fits]
    shown = rows if top is None else rows[:top]
    cols = ("option", "runtime", "GPUs", "meets", f"most {_unit(result)}", "tok/s/user", "TTFT p50/p95",
            "TPOT p50/p95", "use", "$/M req", "$/M out")
    table = []
    for o in shown:
        p = o.point
        most = o.max_load_per_replica * (o.replicas_available if o.replicas_available is not None else o.replicas)
        table.append((o.id[:id_chars] if id_chars else o.id, o.runtime, f"{o.replicas}x{o.devices_per_replica}",
                      "yes" if o.meets_target else "no",
                      load_number(result, most), f"{1 / p.tpot_p50_s:.3g}" if p and p.stable and p.tpot_p50_s else "-",
                      f"{_s(p.ttft_p50_s)}/{_s(p.ttft_p95_s)}" if p else "-",
                      f"{_s(p.tpot_p50_s)}/{_s(p.tpot_p95_s)}" if p else "-",
                      f"{p.utilisation:.0%}" if p and p.stable else "-", _usd(o.usd_per_million_requests),
                      _usd(o.usd_per_million_output_tokens)))
    return cols, table, len(rows) - len(shown)


def legend_text(by: str = "users", moe: bool = False) -> str:
    """What the table's columns and the ranges (at a load of ``by``: users or requests_per_s; of a dense model or a
    mixture of experts) mean."""
    return ("GPUs: replicas x devices per replica; most: the highest load within the target on the replicas "
            "shown; use: the load's share of what they serve. Costs at the stated load, every hour of the "
            f"hardware priced (idle hours too). Ranges: {range_origin(by, moe=moe)}; wider for a runtime the "
            "published served runs do not cover.")


def render_serve_table(result: ServeResult, top: int | None = 12, changes: dict | None = None) -> str:
    """The whole text: the job, the answer, the table of options, the ranges' origin."""
    lines = heading_lines(result) + [""] + answer_lines(result, changes) + [""]
    cols, rows, more = option_table(result, top)
    table = [cols, *rows]
    widths = [max(len(str(r[i])) for r in table) for i in range(len(cols))]
    for r in table:
        lines.append("  ".join(str(v).ljust(w) for v, w in zip(r, widths)).rstrip())
    if more:
        lines.append(f"... {more} more options (--all shows every one)")
    lines.append("")
    lines.append(legend_text(result.by, result.moe))
    for w in result.warnings:
        lines.append(f"warning: {w}")
    return "\n".join(lines) + "\n"
