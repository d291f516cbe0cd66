"""Sentences of a plan that the CLI table and the app both show: the headline (this machine first), the fit
advice as flags, and the inference figures. Read from a ``PlanResult``; nothing is computed again.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor import units
from advisor.cost.ownership import SpendLine, monthly_spend_usd
from advisor.job import JOB_FIELDS
from advisor.planner.owned import POOL_ID_PREFIX

CHART_JOBS_PER_MONTH = 4.0  # the cadence of the cost-over-time chart when none is stated (the buy advisor's)


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


def owned_option(result):
    """The user's own hardware option: this machine's, else the first owned one (None when nothing is owned)."""
    return result.this_machine() or next((o for o in result.options if o.kind == "owned"), None)


def owned_accelerators(result) -> set[str]:
    """Accelerator ids of the hardware the user owns in this plan."""
    return {o.accelerator for o in result.options if o.kind == "owned"}


def buy_label(option, owned_ids=frozenset()) -> str:
    """A home or on-prem option in words, marked when its cards are the ones the user already owns:
    ``home rig 2 x GeForce RTX 4090 (buying again the cards you own)``."""
    where = {"home": "home rig", "onprem": "on-prem"}.get(option.kind, option.kind)
    text = f"{where} {option.devices} x {option.accelerator_name}"
    return text + (" (buying again the cards you own)" if option.accelerator in owned_ids else "")


def best_buy(result):
    """The home or on-prem option to buy that runs the job at the lowest cost per job, preferring one whose
    cards the user does not own already (None when none fits).

    Without a stated cadence (``--jobs-per-month``) each purchase is costed at an assumed use (a home rig all
    its hours, a server 80 %), which flatters a datacenter server bought for one job: then a home rig that runs
    the job comes first, and a server only when no home rig can."""
    mine = owned_accelerators(result)
    buys = [o for o in result.options if o.kind in ("home", "onprem") and o.fits and o.feasible]
    assumed = getattr(result.request, "jobs_per_month", None) is None
    return min(buys, key=lambda o: (o.accelerator in mine, assumed and o.kind != "home", not o.stack_ok, o.cost_usd,
                                    o.id), default=None)


def _use_text(o) -> str:
    u = o.utilisation
    return "" if u is None else f"; {u.text()}"


def headline_parts(result, cadence_hint: str = "--jobs-per-month") -> list[str]:
    """The answer in the order the user can act on: the GPUs they own (fits, time, cost), the cheapest rent
    that can run the job, then what to buy and whether it pays back. Each part one sentence; ``cadence_hint``
    names where to state the cadence (the flag, or the app's field)."""
    parts = []
    mine = owned_option(result)
    if mine is not None:
        who = "This machine" if mine.this_machine else ("Fleet" if mine.origin.startswith("fleet") else "Your GPUs")
        if mine.accelerator.startswith(POOL_ID_PREFIX):  # unequal cards as one pool: named by its parts, no count
            what = f"{mine.accelerator_name}, layers split over them"
        else:
            what = f"{mine.devices} x {mine.accelerator_name}" + (" (derived from the driver)" if mine.derived else "")
        if not mine.fits:
            need = units.fmt_mem(mine.memory_per_device_bytes)
            have = units.fmt_mem(mine.capacity_bytes)
            advice = " (see what to change to fit)" if result.fit_advice else ""
            parts.append(f"{who} ({what}): does not fit, needs {need} per device of {have}{advice}.")
        elif not mine.feasible:
            parts.append(f"{who} ({what}): cannot run it as laid out ({mine.infeasible_reason}).")
        else:
            paid = ", ".join(k for k, v in mine.cost_breakdown_usd.items() if v) or "energy"
            if result.request.workload == "inference":  # speed first; the budget is a stated output, not the job
                batch = result.request.batch
                per = f" in all, {mine.tokens_per_s / batch:,.1f} per request" if batch > 1 else ""
                budget = units.fmt_count(result.tokens) + " generated tokens" if result.tokens else "the hours given"
                if "default" in (result.budget_origin or ""):
                    budget = f"the default {budget}"
                rng = range_text(mine.tokens_per_s_interval, lambda x: f"{x:,.1f}")
                parts.append(f"{who} ({what}): fits, decode {mine.tokens_per_s:,.1f} tokens/s{rng}{per}; {budget} take "
                             f"{units.fmt_hours(mine.hours)}, {units.fmt_usd(mine.cost_usd)} ({paid}). For users and "
                             "latency targets: advisor serve.")
            else:
                hours = units.fmt_hours(mine.hours) + range_text(mine.hours_interval, units.fmt_hours)
                parts.append(f"{who} ({what}): fits, {hours}, {units.fmt_usd(mine.cost_usd)} ({paid}).")
    rent = result.best("cloud")
    if rent is not None:
        parts.append(f"Cheapest rent that can run it: {rent.id}, {rent.devices} x {rent.accelerator_name}, "
                     f"{units.fmt_hours(rent.hours)}, {units.fmt_usd(rent.cost_usd)}.")
    else:
        parts.append("No cloud offer in the catalog can run it.")
    buy = best_buy(result)
    if buy is not None:
        be = buy.break_even
        pay = "" if be is None or be.vs is None else f" against renting: {be.verdict()}"
        u = buy.utilisation
        share = "" if u is None else (f" at {u.jobs_per_month:g} job{'s' if u.jobs_per_month != 1 else ''} a month"
                                      if u.stated else f" at an assumed {u.fraction:.0%} use ({cadence_hint})")
        parts.append(f"To buy: {buy_label(buy, owned_accelerators(result))}, {units.fmt_usd(buy.cost_usd)} per job"
                     f"{share}{pay}.")
    elif mine is None and rent is None:
        return [_nothing_fits(result)]
    return parts


def _nothing_fits(result) -> str:
    """Why no option came back: nothing in the catalog offers the accelerators the job is restricted to (a
    laptop or a card no cloud rents: plan it as owned), or nothing that is offered fits."""
    wanted = tuple(result.request.accelerator)
    if wanted and not result.options:
        names = ", ".join(wanted)
        example = f"1x{wanted[0]}"
        return (f"No offer in the catalog has {names} (no cloud rents it and it has no purchase price); if it is yours, "
                f"plan on it with --own {example}.")
    return "Nothing in the catalog fits this job."


def headline(result) -> str:
    """:func:`headline_parts` as one paragraph (the CLI table, the Planner page)."""
    return " ".join(headline_parts(result))


def ownership_lines(result) -> list[str]:
    """For each owned, home and on-prem option shown first of its kind: how busy the hardware is behind its
    figure and, for a purchase, its break-even against a rent that can run the job."""
    lines = []
    mine = owned_accelerators(result)
    for kind in ("owned", "home", "onprem"):
        o = result.best(kind) if kind != "owned" else owned_option(result)
        if o is None or o.utilisation is None:
            continue
        label = o.id + (" (buying again the cards you own)" if kind != "owned" and o.accelerator in mine else "")
        lines.append(f"Use of {label}: {o.utilisation.text()}; {units.fmt_usd(o.cost_usd)} per job.")
        if kind != "owned" and o.break_even is not None:
            lines.append(f"Break-even: {o.break_even.sentence(label)}.")
    return ([""] + lines) if lines else []


@dataclass(frozen=True)
class CostOverTime:
    """Money spent against months for the options of a job, at one cadence (``jobs_per_month``; ``stated``
    False when the plan states none and :data:`CHART_JOBS_PER_MONTH` is drawn)."""

    jobs_per_month: float
    stated: bool
    lines: tuple[SpendLine, ...]
    months: float

    def payback_months(self, option_id: str) -> float | None:
        """Months until the purchase ``option_id`` has cost less than the rent line (where the lines cross), or
        None when it never does (or either line is missing)."""
        line = next((x for x in self.lines if x.option_id == option_id), None)
        rent = next((x for x in self.lines if x.kind == "cloud"), None)
        if line is None or rent is None or rent.monthly_usd <= line.monthly_usd:
            return None
        return line.upfront_usd / (rent.monthly_usd - line.monthly_usd)

    def payback_text(self, option_id: str) -> str:
        """``pays back after 14 months`` / ``does not pay back within its 4-year life`` / ``never pays back``,
        at this cadence."""
        line = next((x for x in self.lines if x.option_id == option_id), None)
        m = self.payback_months(option_id)
        life = (line.life_months if line is not None else None) or self.months
        if m is None:
            return "never pays back (renting costs less a month than owning costs to run)"
        if m > life:
            return f"does not pay back within its {life / 12:g}-year life ({m:,.0f} months)"
        return f"pays back after {m:,.1f} months"

    def as_dict(self) -> dict:
        return {"jobs_per_month": self.jobs_per_month, "stated": self.stated, "months": self.months,
                "lines": [dict(line.as_dict(), payback_months=self.payback_months(line.option_id))
                          if line.kind in ("home", "onprem") else line.as_dict() for line in self.lines]}


def cost_over_time(result) -> CostOverTime:
    """The user's own GPUs (running costs), the cheapest home rig and on-prem servers that run the job (bought at
    month 0, then holding and running costs), and the cheapest rent (each job rented), at the stated cadence.
    Read from the plan's options and their holdings; only options that can run the job."""
    r = result.request
    n = r.jobs_per_month if r.jobs_per_month is not None else CHART_JOBS_PER_MONTH
    other = r.other_use_hours_per_month if r.jobs_per_month is not None else 0.0
    mine = owned_accelerators(result)
    buy = best_buy(result)
    held = buy.owning.holding if buy is not None and buy.owning is not None else None
    if r.jobs_per_month is None and held is not None and buy.hours > 0:
        # no use stated: the use the headline prices the purchase at (its assumed busy hours), so the money over
        # time and the headline's price per job are one figure
        n = float(f"{held.assumed_busy_hours_per_month / buy.hours:.3g}")  # a count, to three figures
    lines = []
    own = owned_option(result)
    if own is not None and own.fits and own.feasible:
        lines.append(SpendLine(own.id, "owned", f"your {own.devices} x {own.accelerator_name}", 0.0,
                               n * own.cost_usd))
    for kind in ("home", "onprem"):
        o = buy if buy is not None and buy.kind == kind else result.best(kind)
        h = None if o is None or o.owning is None else o.owning.holding
        if h is None:
            continue
        lines.append(SpendLine(o.id, kind, buy_label(o, mine), h.upfront_usd,
                               monthly_spend_usd(h, o.hours, n, other), h.life_months))
    rent = result.best("cloud")
    if rent is not None:
        lines.append(SpendLine(rent.id, "cloud", f"rent {rent.id.removeprefix('cloud:')}", 0.0, n * rent.cost_usd))
    life = max((line.life_months or 0.0 for line in lines), default=0.0) or 48.0
    return CostOverTime(float(n), r.jobs_per_month is not None, tuple(lines), life)


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


def range_text(interval, fmt) -> str:
    """`` (80 %: 0.21-0.48 s)``: an interval in the figure's own format, "" when there is none."""
    if not interval:
        return ""
    lo, hi = fmt(interval[0]), fmt(interval[1])
    unit = lo.rpartition(" ")[2]
    if " " in lo and hi.endswith(" " + unit):  # one unit for both ends: 0.21-0.48 s
        lo = lo.rpartition(" ")[0]
    return f" (80 %: {lo}-{hi})"


def _seconds(x: float) -> str:
    return f"{x:.2f} s" if x < 10 else f"{x:,.0f} s"


def inference_sentence(result) -> str:
    """Time to first token (one request alone, and the batch arriving together), prefill, decode in all and per
    request, and the largest context that fits, on the user's GPUs when there are any ("" for training)."""
    inf = result.inference
    if not inf:
        return ""
    what = f"{inf['devices']} x {inf['accelerator_name']}" if inf.get("devices") else inf["option"]
    where = (f"this machine's {what}" if inf.get("this_machine") else f"your {what}" if inf.get("owned")
             else what) + f" ({inf['option']})"
    batch = inf.get("batch") or 1
    largest = f"the largest context that fits is {inf['largest_context']:,} tokens."
    if not inf.get("fits", True) or inf.get("decode_tokens_per_s") is None:
        return (f"On {where}: a {inf['context']:,}-token context at batch {batch} does not fit (see what to change "
                f"to fit); {largest}")
    prefill = inf["prefill_tokens_per_s"]
    prefill_text = (f"; prefill {prefill:,.0f} tokens/s"
                    + range_text(inf.get("prefill_tokens_per_s_interval"), lambda x: f"{x:,.0f}")) if prefill else ""
    ttft_range = range_text(inf.get("ttft_s_interval"), _seconds)
    decode_range = range_text(inf.get("decode_tokens_per_s_interval"), lambda x: f"{x:,.1f}")
    prompt = inf.get("prompt_tokens") or inf["context"]
    one = inf.get("ttft_single_request_s")
    sw = inf.get("software") or {}
    runtime = f" with {sw['name']} ({sw['weight_format']} weights, {sw['backend']})" if sw else ""
    out = f" over {inf['output_tokens']:,} output tokens" if inf.get("output_tokens") else ""
    if batch > 1 and one is not None:
        first = (f"first token after {one:.2f} s for one request alone, {inf['ttft_s']:.2f} s{ttft_range} when all "
                 f"{batch} arrive together ({prompt:,}-token prompts)")
        decode = (f"decode {inf['decode_tokens_per_s']:,.1f} tokens/s in all over {batch} requests{decode_range}, "
                  f"{inf['decode_tokens_per_s_per_request']:,.1f} per request{out}")
    else:
        first = f"first token after {inf['ttft_s']:.2f} s{ttft_range} for a {prompt:,}-token prompt"
        decode = f"decode {inf['decode_tokens_per_s']:,.1f} tokens/s{decode_range}{out}"
    q = inf.get("quality") or {}
    quality = ""
    if q.get("ppl_delta") is not None:
        quality = (f" {sw.get('weight_format', '').upper()} adds {q['ppl_delta']:+.2f} perplexity to {q['model']}"
                   + (f"; the next smaller file, {q['next'].upper()}, {q['next_ppl_delta']:+.2f}"
                      if q.get("next_ppl_delta") is not None else "") + " (llama-quantize's table).")
    return f"On {where}{runtime}: {first}{prefill_text}; {decode}; {largest}{quality}"


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


def reach(result):
    """``(option, Reach)``: where the plan's training job lies against the calibrated runs, on the option the plan
    names first (the cheapest that fits, else the first that runs), or None (inference, no calibration in force).
    Every surface (the table, ``--explain``, the JSON, the Planner page, the reports) states it from here."""
    best = result.best()
    candidates = ([best] if best is not None else []) + list(result.ranked)
    option = next((o for o in candidates if o.reach is not None), None)
    return None if option is None else (option, option.reach)


def reach_sentence(result) -> str | None:
    """The statement of ``reach`` as one line: ``Against published runs (cloud:...): outside the calibrated runs:
    ...``."""
    found = reach(result)
    if found is None:
        return None
    option, r = found
    return f"{REACH_PREFIX} ({option.id}): {r.text()}"


REACH_PREFIX = "Against published runs"  # the statement's lead-in (the reports' row names it otherwise)


def reach_method(result) -> str | None:
    """How the statement's range was sized (``--explain``, the reports): the slope fitted on the held-out runs and
    the wall-time allowance of published totals."""
    found = reach(result)
    if found is None:
        return None
    from advisor.catalog.training_runs import bundled_utilisation_model

    low = bundled_utilisation_model().wall_time_low
    option, r = found
    high = option.hours_interval[1] / option.hours if option.hours_interval and option.hours > 0 else 1.0
    return (f"the 80 % range grows as x (1 + {r.slope:.3f} d) with the distance d from the nearest calibrated run "
            f"(fitted on the calibration's training runs, each held out with its source); the time's upper side "
            f"allows for the published GPU-hour totals of the documented runs, which trained down to {low:.2f} of "
            f"the clean-step rate (restarts, failures and evaluation in them): x{high:.2f} the planned time here")
