"""Qt-free data for the Compare page: which options to chart, its sentences (about those options only), the
"dearer hour" example."""

from __future__ import annotations

import html
from dataclasses import dataclass

from advisor.units import fmt_hours, fmt_usd
from advisor.untrusted import plain_text

KIND_WORDS = {"owned": "owned", "home": "home rig", "onprem": "on-prem", "cloud": "cloud"}


def option_label(o, owned_ids=()) -> str:
    """Short label of an option for chart axes: ``home 2× RTX 4090``, ``Lambda 1× H100 SXM spot``; an option off
    the job's software stack says what it needs (``GCP 1× TPU v6e spot [needs JAX/XLA]``); a purchase of the
    cards the user owns (``owned_ids``) says so (``home rig 2× RTX 4090 (cards you own)``)."""
    mark = "" if getattr(o, "stack_ok", True) else f" [{o.stack_reason}]"
    if o.kind in ("home", "onprem") and getattr(o, "accelerator", None) in owned_ids:
        mark += " (cards you own)"
    if o.kind == "cloud":
        return f"{_provider(o.provider)} {o.devices}× {short_name(o.accelerator_name)}" + (" spot" if o.spot else "") + mark
    return f"{KIND_WORDS[o.kind]} {o.devices}× {short_name(o.accelerator_name)}{mark}"


def scatter_flat_text(options) -> str | None:
    """What the time-against-cost chart says instead of its points when they lie on one line: every option takes
    the same time (a budget given in hours) or costs the same; None when the chart has something to show."""
    if not options:
        return "No option fits this job: nothing to compare."
    hours = [o.hours for o in options]
    costs = [o.cost_usd for o in options]
    if max(hours) <= min(hours) * 1.01:
        return (f"Every option that fits runs for the same {fmt_hours(hours[0])} (the job's budget is its time), "
                "so only the cost differs: see the bars above.")
    if max(costs) <= min(costs) * 1.01:
        return f"Every option that fits costs the same {fmt_usd(costs[0])}: only the time differs."
    return None


def distinct_labels(options, owned_ids=()) -> list[str]:
    """:func:`option_label` of each option, made distinct: where two offers would read alike ("RunPod 1× H100
    SXM5 80GB" for the secure and the community cloud; "GCP 8× H100 SXM spot" for a3-high and a3-mega), each
    says the words of its instance name the others lack (``· Community Cloud``, ``· a3-megagpu``)."""
    import re
    from collections import defaultdict

    labels = [option_label(o, owned_ids) for o in options]
    groups: dict[str, list[int]] = defaultdict(list)
    for i, label in enumerate(labels):
        groups[label].append(i)
    for label, idx in groups.items():
        if len(idx) < 2:
            continue
        words = [re.findall(r"[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*", getattr(options[i], "instance", "") or options[i].id)
                 for i in idx]
        common = set.intersection(*(set(w) for w in words))
        for i, w in zip(idx, words):
            own = " ".join(x for x in w if x not in common and not x.startswith("per")) or options[i].id
            labels[i] = f"{label} · {own[:24]}"
    return labels


def _provider(name: str) -> str:
    return plain_text(name.split(" (")[0][:16])  # a price list's provider: inert


def short_name(name: str) -> str:
    import re

    name = re.sub(r"\s*\(.*?\)", "", name)
    for prefix in ("NVIDIA ", "GeForce ", "AMD ", "Cloud ", "Instinct ", "Tesla "):
        name = name.replace(prefix, "")
    name = name if len(name) <= 20 else name[:19].rstrip() + "\u2026"  # cut where it shows: "RTX PRO 6000 Black…"
    return plain_text(name)  # a user catalog's name: inert


def chart_selection(result, machine_ids=(), limit: int = 8) -> list:
    """Options for the stacked cost bars: this machine's, the cheapest of each kind, then the cheapest others.

    Returns:
        At most ``limit`` fitting options, cheapest first (those off the job's software stack after).
    """
    from advisor.planner.summary import best_buy

    fitting = [o for o in result.ranked if o.fits]
    chosen: dict[str, object] = {}
    for o in fitting:
        if o.this_machine or (o.kind == "home" and o.accelerator in machine_ids):
            chosen[o.id] = o
            break
    for kind in ("owned", "home", "onprem", "cloud"):
        best = next((o for o in fitting if o.kind == kind), None)
        if best is not None:
            chosen.setdefault(best.id, best)
    buy = best_buy(result)  # the headline's purchase is in the bars the sentences talk about
    if buy is not None:
        chosen.setdefault(buy.id, buy)
    for o in fitting:
        if len(chosen) >= limit:
            break
        chosen.setdefault(o.id, o)
    return sorted(chosen.values(), key=lambda o: (not o.stack_ok, o.cost_usd))  # off the job's stack: after


def _html_label(o, mine=()) -> str:
    """``option_label`` inside the page's rich text: a catalog name cannot be a tag."""
    return html.escape(option_label(o, mine), quote=False)


def dearer_hour_example(result, shown=None) -> str | None:
    """A sentence showing a dearer hour that makes a cheaper job, from the options the bars show (``shown``;
    every option of the plan when None), or None.

    Picks the pair of fitting options with the largest ratio of hourly price (dearer) to job cost (cheaper).
    """
    cheapest: dict[tuple[str, str], object] = {}
    pool = result.ranked if shown is None else [o for o in result.ranked if o in shown]
    for o in pool:  # options that can run, sorted cheapest first: keep one per accelerator and kind
        if o.fits and o.hours > 0 and o.cost_usd > 0:
            cheapest.setdefault((o.accelerator, o.kind), o)
    priced = list(cheapest.values())
    best, score = None, 1.0
    for a in priced:
        rate_a = a.cost_usd / a.hours
        for b in priced:
            rate_b = b.cost_usd / b.hours
            if rate_a > rate_b * 1.2 and a.cost_usd < b.cost_usd:
                s = (rate_a / rate_b) * (b.cost_usd / a.cost_usd)
                if s > score:
                    best, score = (a, b), s
    if best is None:
        return None
    a, b = best
    from advisor.planner.summary import owned_accelerators

    mine = owned_accelerators(result)  # a purchase of the user's own cards is named as the bars name it
    return (f"<b>A dearer hour is often the cheaper job.</b> {_html_label(a, mine)} costs "
            f"{fmt_usd(a.cost_usd / a.hours)} per hour, {a.cost_usd / a.hours / (b.cost_usd / b.hours):.1f}× "
            f"{_html_label(b, mine)} at {fmt_usd(b.cost_usd / b.hours)} per hour, but it finishes in "
            f"{fmt_hours(a.hours)} instead of {fmt_hours(b.hours)}, so the whole job costs "
            f"<b>{fmt_usd(a.cost_usd)}</b> instead of <b>{fmt_usd(b.cost_usd)}</b>. Compare jobs, not hourly prices.")


def lead_sentences(result, shown) -> list[str]:
    """The Compare page's first sentences, in the order the user can act on (``planner.summary``): their own
    GPUs, the cheapest rent that runs the job, what to buy and whether it pays back; each about an option of
    ``shown`` (the bars), named as the bars name it. A purchase of the cards the user owns is marked so."""
    from advisor.planner.summary import best_buy, owned_accelerators, owned_option

    ids = {o.id for o in shown}
    mine = owned_accelerators(result)
    out = []
    own = owned_option(result)
    if own is not None and own.id in ids:
        out.append(f"your <b>{_html_label(own).removeprefix('owned ')}</b> runs it in {fmt_hours(own.hours)} for "
                   f"<b>{fmt_usd(own.cost_usd)}</b> of electricity.")
    elif own is not None:
        out.append(f"your {_html_label(own).removeprefix('owned ')} cannot run it ({'does not fit' if not own.fits else 'as laid out'}).")
    rent = result.best("cloud")
    if rent is not None and rent.id in ids:
        out.append(f"The cheapest rent that can run it is <b>{_html_label(rent)}</b>: {fmt_usd(rent.cost_usd)} in "
                   f"{fmt_hours(rent.hours)}.")
    buy = best_buy(result)
    if buy is not None and buy.id in ids:
        again = " (buying again the cards you own)" if buy.accelerator in mine else ""
        spend = result.cost_over_time()  # the chart's cadence, so the sentence says what the chart shows
        cadence = f"{spend.jobs_per_month:g} jobs a month" + ("" if spend.stated else " (assumed)")
        pay = (f"; against that rent at {cadence} it {spend.payback_text(buy.id)}"
               if rent is not None and any(x.option_id == buy.id for x in spend.lines) else "")
        u = buy.utilisation
        use = "" if u is None else (f" at {u.fraction:.0%} use" if u.stated else
                                    f" at an assumed {u.fraction:.0%} use (set Jobs per month on the Planner)")
        out.append(f"To buy: <b>{_html_label(buy)}</b>{again}, {fmt_usd(buy.cost_usd)} per job{use}{pay}.")
    if not out:
        out.append("nothing in the catalog can run it.")
    out[0] = out[0][:1].upper() + out[0][1:]
    return out


def options_csv(result) -> str:
    """Every option of a plan as CSV: id, kind, accelerator, devices, fits, hours, cost and its parts (USD)."""
    import csv
    import io

    parts = sorted({k for o in result.options for k in o.cost_breakdown_usd})
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["id", "kind", "accelerator", "devices", "fits", "hours", "device_hours", "tokens_per_s",
                "usd_per_device_hour", "cost_usd"] + [f"cost_{p}_usd" for p in parts])
    for o in result.options:
        w.writerow([o.id, o.kind, o.accelerator, o.devices, int(o.fits), f"{o.hours:.6g}", f"{o.device_hours:.6g}",
                    f"{o.tokens_per_s:.6g}", "" if o.usd_per_device_hour is None else f"{o.usd_per_device_hour:.6g}",
                    f"{o.cost_usd:.6g}"] + [f"{o.cost_breakdown_usd.get(p, 0.0):.6g}" for p in parts])
    return buf.getvalue()


@dataclass(frozen=True)
class FrontPoint:
    """One fitting option of a plan document for the time-against-cost chart.

    Attributes:
        option_id / label: the option's id and its short chart label.
        hours / cost_usd: its job time and total cost, as the plan priced them.
        on_front: whether the plan lists it on its Pareto front (``"pareto"`` of ``advisor.plan/1``).
    """

    option_id: str
    label: str
    hours: float
    cost_usd: float
    on_front: bool


def front_points(doc: dict) -> list[FrontPoint]:
    """The fitting options of an ``advisor.plan/1`` document with a positive time and cost, fastest first.

    Read from the document (its options and its ``pareto`` ids), never priced again.
    """
    from types import SimpleNamespace

    front = set(doc.get("pareto") or ())
    out = []
    for o in doc.get("options", ()):
        if not (o.get("fits") and o.get("hours", 0) > 0 and o.get("cost_usd", 0) > 0):
            continue
        view = SimpleNamespace(kind=o["kind"], provider=o.get("provider") or "", devices=o["devices"],
                               accelerator_name=o.get("name") or o["accelerator"], spot=bool(o.get("spot")))
        out.append(FrontPoint(o["id"], option_label(view), float(o["hours"]), float(o["cost_usd"]), o["id"] in front))
    return sorted(out, key=lambda p: (p.hours, p.cost_usd))
