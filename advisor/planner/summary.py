"""Sentences of a plan that the CLI table and the app both show: the headline (this machine first), the fit
advice as flags, and the inference figures. Read from a ``PlanResult``; nothing is computed again.
"""

from __future__ import annotations

from advisor import units
from advisor.job import JOB_FIELDS


def change_flags(change: dict) -> str:
    """``{"checkpointing": "full", "optimizer_offload": True}`` -> ``--checkpointing full --optimizer-offload``."""
    parts = []
    for name, value in change.items():
        meta = JOB_FIELDS.get(name)
        flag = (meta.flag if meta is not None and meta.flag else "--" + name.replace("_", "-"))
        if value is True:
            parts.append(flag)
        elif value is False:
            parts.append(flag if flag.startswith("--no-") else f"{flag}=false")
        else:
            parts.append(f"{flag} {value:g}" if isinstance(value, float) else f"{flag} {value}")
    return " ".join(parts)


def cheapest_rent(result):
    """The cheapest fitting cloud option (what renting would cost), or None."""
    return result.best("cloud")


def headline(result) -> str:
    """One sentence that starts with this machine (or the owned hardware): fits or not, time, cost, and the
    cheapest rent; the cheapest option when nothing is owned."""
    mine = result.this_machine() or next((o for o in result.options if o.kind == "owned"), None)
    rent = cheapest_rent(result)
    rent_text = (f"cheapest rent {rent.id}: {units.fmt_hours(rent.hours)}, {units.fmt_usd(rent.cost_usd)}"
                 if rent is not None else "no cloud offer fits")
    if mine is None:
        best = result.best()
        if best is None:
            return "Nothing in the catalog fits this job."
        return f"Cheapest: {best.id}, {best.devices} x {best.accelerator_name}, {units.fmt_hours(best.hours)}, " \
               f"{units.fmt_usd(best.cost_usd)}; {rent_text}."
    who = "This machine" if mine.this_machine else ("Fleet" if mine.origin.startswith("fleet") else "Owned")
    what = f"{mine.devices} x {mine.accelerator_name}" + (" (derived from the driver)" if mine.derived else "")
    if not mine.fits:
        need = units.fmt_mem(mine.memory_per_device_bytes)
        have = units.fmt_mem(mine.capacity_bytes)
        advice = " (see what to change to fit)" if result.fit_advice else ""
        return f"{who} ({what}): does not fit, needs {need} per device of {have}{advice}; {rent_text}."
    cost = units.fmt_usd(mine.cost_usd)
    parts = ", ".join(k for k, v in mine.cost_breakdown_usd.items() if v) or "energy"
    vs = ""
    if rent is not None:
        vs = (f"; renting ({rent.id}) costs {units.fmt_usd(rent.cost_usd)} and takes "
              f"{units.fmt_hours(rent.hours)}")
    return f"{who} ({what}): fits, {units.fmt_hours(mine.hours)}, {cost} ({parts}){vs}."


def lost_text(hours_lost: float | None) -> str:
    """`` (+2.0 days)`` for time lost, `` (4.5 h faster)`` for time won, "" for none."""
    if not hours_lost:
        return ""
    if hours_lost > 0:
        return f" (+{units.fmt_hours(hours_lost)})"
    return f" ({units.fmt_hours(-hours_lost)} faster)"


def fit_advice_rows(result) -> list[dict]:
    """The changes that make the job fit, as rows for people: flags, memory, hours and hours lost, cost and
    cost added, why. Advice that still does not fit is left out (``fit_advice_closest`` gives the nearest)."""
    return [{"flags": change_flags(a.change), "change": dict(a.change), "memory": units.fmt_mem(a.memory_total_bytes),
             "fits": a.fits, "hours": a.hours, "hours_lost": a.hours_lost, "why": a.why,
             "host_ram_bytes": a.host_ram_bytes, "cost_usd": a.cost_usd, "cost_added_usd": a.cost_added_usd}
            for a in result.fit_advice if a.fits]


def fit_advice_closest(result) -> dict | None:
    """When no change makes the job fit: the one that comes closest (least memory), as a row; else None."""
    advice = getattr(result, "fit_advice", ())
    if not advice or any(a.fits for a in advice):
        return None
    a = min(advice, key=lambda x: x.memory_total_bytes)
    return {"flags": change_flags(a.change), "memory": units.fmt_mem(a.memory_total_bytes), "why": a.why}


def cost_text(cost_usd: float | None, added_usd: float | None) -> str:
    """``$41.20 (+$3.10)`` for a job's cost with a change and what the change adds; "" when not known."""
    if cost_usd is None:
        return ""
    if not added_usd or abs(added_usd) < 0.005:
        return f"${cost_usd:,.2f}"
    return f"${cost_usd:,.2f} ({'+' if added_usd > 0 else '-'}${abs(added_usd):,.2f})"


def inference_sentence(result) -> str:
    """Time to first token, prefill and decode tokens/s and the largest context that fits ("" for training)."""
    inf = result.inference
    if not inf:
        return ""
    prefill = inf["prefill_tokens_per_s"]
    prefill_text = f", prefill {prefill:,.0f} tokens/s" if prefill else ""
    batch = result.request.batch
    one = inf.get("ttft_single_request_s")
    together = (f" ({batch} requests arriving together; {one:.2f} s for one alone)"
                if batch > 1 and one is not None else "")
    sw = inf.get("software") or {}
    runtime = f" with {sw['name']} ({sw['weight_format']} weights, {sw['backend']})" if sw else ""
    return (f"On {inf['option']}{runtime}: first token after {inf['ttft_s']:.2f} s for a "
            f"{inf['prompt_tokens'] or inf['context']:,}-token prompt{together}{prefill_text}, decode "
            f"{inf['decode_tokens_per_s']:,.1f} tokens/s over {inf['output_tokens']:,} output tokens; the largest "
            f"context that fits is {inf['largest_context']:,} tokens.")


def learned_lines(result) -> list[str]:
    """One line per accelerator whose speed comes from the user's own runs (``estimate.learned``):
    "Speed on X: from your run of DATE (FILE) ..."."""
    seen, out = set(), []
    for o in result.options:
        if o.accelerator not in seen and "from your run of" in o.mfu_origin:
            seen.add(o.accelerator)
            origin = o.mfu_origin[o.mfu_origin.index("from your run of"):].rstrip(")")
            out.append(f"Speed on {o.accelerator_name}: {origin} (advisor runs)")
    return out
