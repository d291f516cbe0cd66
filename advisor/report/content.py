"""What every report says, taken from ``advisor.plan/1`` documents (plain dicts; the JSON of ``advisor plan --json``).

Reports work on the JSON documents, not on the planner's classes, so a saved ``--json`` output can be
turned into a report later. Each report states the options with their totals, the assumptions, the
catalog date and the probes (calibration) the plan used.
"""

from __future__ import annotations

import datetime as _dt
import math
from dataclasses import dataclass, field

from advisor.planner.summary import REACH_PREFIX
from advisor.units import fmt_mem

OPTION_COLUMNS = ("id", "kind", "accelerator", "devices", "fits", "mfu", "hours", "hours_interval", "device_hours",
                  "energy_kwh", "usd_per_device_hour", "cost_usd", "cost_usd_interval", "tokens_per_s",
                  "tokens_per_s_interval")


class ReportError(ValueError):
    """The documents cannot be reported on (not plan documents, unknown format); one line."""


@dataclass(frozen=True)
class Probe:
    """One measured figure a plan used instead of a prior."""

    name: str
    value: str
    source: str
    measured_at: str


@dataclass(frozen=True)
class PlanSection:
    """One plan of the comparison, ready to be written in any format."""

    title: str
    doc: dict
    options: tuple[dict, ...]
    assumptions: tuple[tuple[str, object, str, str], ...]  # (name, value, unit, origin)
    catalog_date: str
    prices_as_of: str
    probes: tuple[Probe, ...]
    summary: tuple[tuple[str, str], ...]
    breakdown_parts: tuple[str, ...] = field(default_factory=tuple)
    inputs: tuple[tuple[str, str, str, str], ...] = field(default_factory=tuple)  # (name, value, unit, source)
    # The scenario page: the option chosen (cheapest that fits), the next five, the assumptions whose value
    # differs from the cost model's default (name, value, unit, origin, default), the memory per device by part.
    chosen: dict | None = None
    alternatives: tuple[dict, ...] = ()
    changed_assumptions: tuple[tuple[str, object, str, str, object], ...] = ()
    memory_parts: tuple[tuple[str, int], ...] = ()
    infeasible: tuple[tuple[str, str], ...] = field(default_factory=tuple)  # (option id, reason): not ranked
    price_dates: str = ""  # oldest and newest price date of the options, and how many are older than a year
    tornado: dict | None = None  # ``advisor plan --sensitivity``'s tornado of the chosen option, when the plan has it
    memory_range: str = ""  # `` (80 %: 14.7-34.8 GB)`` of a training plan's memory per device, "" without one
    # What to change so the job fits the user's own GPUs (the plan's fit advice): (flags, memory, time, why)
    fit_advice: tuple[tuple[str, str, str, str], ...] = ()
    simulated: bool = False  # this machine's GPUs come from --fake-gpu
    mine: dict | None = None  # this machine's option (fits or not): the memory chart is of it

    @property
    def memory_note(self) -> str:
        """The memory chart's line for the range: ``80 % range of the total: 14.7-34.8 GB``."""
        return "80 % range of the total: " + self.memory_range.strip(" ()").removeprefix("80 %: ") \
            if self.memory_range else ""

    @property
    def headline(self) -> str:
        """One sentence: the cheapest option that fits, its cost and time, or that nothing fits."""
        said = self.doc.get("headline")
        if isinstance(said, list) and said and all(isinstance(x, str) for x in said):
            return " ".join(said)  # what the screen says (rendered through each format's escaping)
        c = self.chosen
        if c is None:
            return "Nothing fits: no option holds this job in memory."
        name = c.get("name") or c.get("id")
        ranges = ""
        if c.get("cost_usd_interval") and c.get("hours_interval"):
            ranges = (f" (80 % range: {cell('cost_usd_interval', c)} in {cell('hours_interval', c)})")
        return (f"Cheapest that fits: {name} ({c.get('kind', '?')}), {money(c.get('cost_usd'))} for the whole job "
                f"in {hours(c.get('hours'))}{ranges}.")


ALTERNATIVES = 5
SPEND_MONTHS = (0, 12, 24, 36, 48)


def spend_table(doc: dict) -> tuple[str, tuple[str, ...], list[tuple[str, ...]]] | None:
    """Money spent after 0 to 48 months on the user's GPUs, the purchases and the cheapest rent, read from the
    plan's ``cost_over_time`` (the Compare page's chart): ``(caption, head, rows)``, None without it."""
    spend = doc.get("cost_over_time") or {}
    lines = spend.get("lines") or ()
    if not lines:
        return None
    n = spend.get("jobs_per_month")
    caption = (f"Money spent over time at {n:g} job{'' if n == 1 else 's'} a month"
               + ("" if spend.get("stated") else " (the use the headline assumes: --jobs-per-month to state yours)"))
    head = ("option", "upfront", "a month", *[f"after {m} mo" for m in SPEND_MONTHS[1:]], "pays back")
    rows = []
    for line in lines:
        up, month = float(line.get("upfront_usd") or 0.0), float(line.get("monthly_usd") or 0.0)
        life = line.get("life_months")
        pay = line.get("payback_months")
        when = ("" if line.get("kind") not in ("home", "onprem") else "never" if pay is None else
                f"{pay:,.1f} mo" if life is None or pay <= life else f"{pay:,.0f} mo, after its life")
        rows.append((line.get("label") or line.get("id"), money(up), money(month),
                     *[money(up + month * m) for m in SPEND_MONTHS[1:]], when))
    return caption, head, rows


def _defaults() -> dict:
    """The cost model's default assumption values by name (the dataclass defaults)."""
    from dataclasses import MISSING, fields

    from advisor.cost.assumptions import CostAssumptions

    out = {}
    for f in fields(CostAssumptions):
        if f.default is not MISSING:
            out[f.name] = f.default
        elif f.default_factory is not MISSING:
            out[f.name] = f.default_factory()
    return out


def _differs(value, default) -> bool:
    if isinstance(value, (int, float)) and isinstance(default, (int, float)) and not isinstance(value, bool):
        return not math.isclose(float(value), float(default), rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(value, list) and isinstance(default, tuple):
        return [list(x) if isinstance(x, (list, tuple)) else x for x in value] != [
            list(x) if isinstance(x, (list, tuple)) else x for x in default]
    return value != default


def plan_docs(docs) -> list[dict]:
    """Plan documents from a list that may hold ``advisor.plan/1`` and ``advisor.plan-set/1`` documents.

    Raises:
        ReportError: for anything else.
    """
    if isinstance(docs, dict):
        docs = [docs]
    out = []
    for i, d in enumerate(docs):
        if isinstance(d, dict) and d.get("schema") == "advisor.plan-set/1":
            out.extend(plan_docs(d.get("plans") or []))
        elif isinstance(d, dict) and d.get("schema") == "advisor.plan/1" and isinstance(d.get("options"), list):
            out.append(d)
        else:
            schema = d.get("schema") if isinstance(d, dict) else type(d).__name__
            raise ReportError(f"document {i + 1}: schema: expected 'advisor.plan/1', got {schema!r}")
    if not out:
        raise ReportError("no plan to report on")
    return out


def _fmt_value(v) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.6g}"
    return "" if v is None else str(v)


def _calibration_probes(doc: dict) -> tuple[Probe, ...]:
    # A plan that records its calibration (null: none used) is taken at its word; older documents
    # without the key are reported against this machine's saved calibration.
    cal = doc["calibration"] if "calibration" in doc else _saved_calibration()
    if not isinstance(cal, dict) or not cal:
        return ()
    probes = []
    for key, label in (("mfu", "MFU of a training step"), ("eta_mem", "memory bandwidth efficiency")):
        value = cal.get(key)
        if value is not None:
            probes.append(Probe(name=label, value=_fmt_value(value),
                                source=f"{cal.get('source', '')} on {cal.get('device', '?')}"
                                       + (f" ({cal['accelerator_id']})" if cal.get("accelerator_id") else ""),
                                measured_at=str(cal.get("measured_at", ""))))
    return tuple(probes)


def _saved_calibration() -> dict | None:
    """The machine's saved calibration (``advisor.store.calibration``) as plain data, or None."""
    from dataclasses import asdict

    from advisor.store.calibration import load_calibration

    cal = load_calibration()
    return None if cal is None else asdict(cal)


def _title(doc: dict, i: int) -> str:
    if doc.get("title"):
        return str(doc["title"])
    model = doc.get("model") or {}
    name = model.get("name") or (f"{model['params'] / 1e9:.3g}B-parameter model" if model.get("params") else "model")
    software = doc.get("software") if isinstance(doc.get("software"), dict) else {}
    weights = doc.get("precision", "?")
    if doc.get("workload") == "inference" and software.get("weight_format"):  # the file the figures assume
        weights = f"{software['weight_format']} under {software.get('name') or software.get('id')}"
    base = f"{name}, {doc.get('workload', '?')}, {weights}"
    return f"{doc['scenario']}: {base}" if doc.get("scenario") else base


def _summary(doc: dict) -> tuple[tuple[str, str], ...]:
    model = doc.get("model") or {}
    mem = doc.get("memory") or {}
    per = mem.get("per_device_bytes") or {}
    rows = [("model", str(model.get("name") or "custom")),
            ("parameters", f"{model.get('params', 0):,}" + (f" ({model['active_params']:,} active)"
                                                           if model.get("active_params") not in (None, model.get("params"))
                                                           else "")),
            ("workload", str(doc.get("workload"))), ("precision", str(doc.get("precision")))]
    software = doc.get("software")
    if doc.get("workload") == "inference" and isinstance(software, dict) and software.get("weight_format"):
        rows[-1] = ("weights", f"{software['weight_format']} under {software.get('name') or software.get('id')}"
                    + (f" ({software['assumed']})" if software.get("assumed") else ""))
    if isinstance(software, dict) and software.get("summary"):  # the framework profile the figures assume
        rows.append(("software", str(software["summary"])))
    if doc.get("tokens") is not None:
        rows.append(("tokens", f"{doc['tokens']:.4g}"))
    if doc.get("flops_total") is not None:
        rows.append(("FLOPs (whole budget)", f"{doc['flops_total']:.4g}"))
    if doc.get("workload") == "inference" and doc.get("flops_per_token") is not None:
        rows.append(("FLOPs per generated token", f"{doc['flops_per_token']:.4g}"))
    if per.get("total") is not None:
        rows.append((f"memory per device on {mem.get('devices', 1)} device(s)", fmt_mem(per["total"])))
    inf = doc.get("inference") if isinstance(doc.get("inference"), dict) else None
    if inf and _num(inf.get("ttft_s")) < math.inf and inf.get("decode_tokens_per_s"):
        # the serving figures of the target option in one row, each with its 80 % range
        text = (f"first token {_fmt_seconds(inf['ttft_s'])}{_range_words(inf.get('ttft_s_interval'), _fmt_seconds)}"
                + (f", prefill {inf['prefill_tokens_per_s']:,.0f} tokens/s"
                   + _range_words(inf.get("prefill_tokens_per_s_interval"), lambda x: f"{x:,.0f}")
                   if inf.get("prefill_tokens_per_s") else "")
                + f", decode {inf['decode_tokens_per_s']:,.1f} tokens/s"
                + _range_words(inf.get("decode_tokens_per_s_interval"), lambda x: f"{x:,.1f}"))
        rows.append((f"serving on {inf.get('option')}", text))
    reach = doc.get("calibration_reach")
    if isinstance(reach, dict) and isinstance(reach.get("sentence"), str):
        # where the training job lies against the calibrated runs, as the plan said it (planner.summary.reach)
        rows.append(("against published runs", reach["sentence"].removeprefix(REACH_PREFIX + " ")))
    return tuple(rows)


def _fmt_seconds(x: float) -> str:
    return f"{x:.2f} s" if x < 10 else f"{x:,.0f} s"


def _range_words(pair, fmt) -> str:
    """`` (80 %: 0.21-0.48 s)`` of an interval, one unit where both ends share it; "" when there is none."""
    if not isinstance(pair, (list, tuple)) or len(pair) != 2 or not all(isinstance(v, (int, float)) for v in pair):
        return ""
    from advisor.planner.summary import range_text

    return range_text(pair, fmt)


def input_rows(doc: dict) -> tuple[tuple[str, str, str, str], ...]:
    """The inputs table: ``(name, value, unit, source)`` for each input the plan was given, in the job
    schema's order (``advisor/job/schema.py``); names the schema does not know are listed after, as given."""
    from advisor.job import JOB_FIELDS

    given = doc.get("inputs") if isinstance(doc.get("inputs"), dict) else {}
    names = [n for n in JOB_FIELDS if n in given] + [n for n in given if n not in JOB_FIELDS]
    rows = []
    for name in names:
        entry = given[name] if isinstance(given[name], dict) else {"value": given[name]}
        value = entry.get("value")
        text = ", ".join(_fmt_value(v) for v in value) if isinstance(value, list) else _fmt_value(value)
        unit = str(entry.get("unit") or (JOB_FIELDS[name].unit if name in JOB_FIELDS else ""))
        rows.append((name, text, unit, str(entry.get("source", ""))))
    return tuple(rows)


def sections(docs) -> list[PlanSection]:
    """One ``PlanSection`` per plan document (see ``plan_docs``)."""
    out = []
    for i, doc in enumerate(plan_docs(docs)):
        every = [o for o in doc["options"] if isinstance(o, dict)]
        # the plan's own ranking (this machine first, then fitting, on the job's stack, on-demand before spot, by
        # cost): the report says what the screen says
        options = tuple(o for o in every if o.get("feasible", True) is not False)
        apart = tuple((str(o.get("id")), str(o.get("infeasible_reason", ""))) for o in every
                      if o.get("feasible", True) is False)
        assumptions = []
        for name, a in (doc.get("assumptions") or {}).items():
            if isinstance(a, dict):
                assumptions.append((name, a.get("value"), str(a.get("unit", "")), str(a.get("origin", ""))))
            else:
                assumptions.append((name, a, "", ""))
        cat = doc.get("catalog") or {}
        date, as_of = cat.get("date"), cat.get("prices_as_of")
        if not date:
            try:
                from advisor.catalog import load_catalog

                c = load_catalog()
                date, as_of = c.date, as_of or c.prices_as_of
            except Exception:  # noqa: BLE001
                date = "unknown"
        parts: list[str] = []
        for o in options:
            for k in (o.get("cost_breakdown_usd") or {}):
                if k not in parts:
                    parts.append(k)
        fitting = [o for o in options if o.get("fits")]
        defaults = _defaults()
        changed = tuple((n, v, u, o, defaults[n]) for n, v, u, o in assumptions
                        if n in defaults and _differs(v, defaults[n]))
        # the user's own GPUs first when they can run it (the answer the screen leads with), else the cheapest
        mine = [o for o in fitting if o.get("kind") == "owned" and o.get("feasible", True)]
        chosen = mine[0] if mine else fitting[0] if fitting else None
        if chosen is not None:
            fitting = [chosen, *(o for o in fitting if o is not chosen)]
        # the memory chart is of the chosen option's layout; the plan's own layout (--gpus) only without one
        mine_any = next((o for o in every if o.get("id") == doc.get("this_machine")), None)
        shown = mine_any if mine_any is not None and mine_any.get("memory_per_device_parts_bytes") else chosen
        per = ((shown or {}).get("memory_per_device_parts_bytes")
               or (doc.get("memory") or {}).get("per_device_bytes") or {})
        memory_parts = tuple((k, int(v)) for k, v in per.items() if k != "total" and _finite(v))
        out.append(PlanSection(title=_title(doc, i), doc=doc, options=options, assumptions=tuple(assumptions),
                               catalog_date=str(date), prices_as_of=str(as_of or date), probes=_calibration_probes(doc),
                               summary=_summary(doc), breakdown_parts=tuple(parts),
                               chosen=chosen,
                               alternatives=tuple(fitting[1:1 + ALTERNATIVES]), changed_assumptions=changed,
                               memory_parts=memory_parts, inputs=input_rows(doc),
                               infeasible=apart, price_dates=_price_dates(doc, options),
                               tornado=doc.get("tornado") if isinstance(doc.get("tornado"), dict) else None,
                               memory_range=_range_words((doc.get("memory") or {}).get("per_device_bytes_interval"),
                                                         fmt_mem),
                               fit_advice=_fit_rows(doc), simulated=doc.get("simulated") is True, mine=shown
                               if shown is mine_any else None))
    return out


def _fit_rows(doc: dict) -> tuple[tuple[str, str, str, str], ...]:
    """The plan's fit advice as rows: the flags to change, the memory per device then, the time, why."""
    rows = []
    for a in doc.get("fit_advice") or []:
        if not isinstance(a, dict) or not isinstance(a.get("change"), dict):
            continue
        flags = " ".join(f"--{str(k).replace('_', '-')} {v}" for k, v in a["change"].items())
        mem = fmt_mem(a["memory_total_bytes"]) if _finite(a.get("memory_total_bytes")) else "-"
        time = hours(a.get("hours")) if a.get("fits") is True and _finite(a.get("hours")) else "still does not fit"
        rows.append((flags, mem, time, str(a.get("why", ""))))
    return tuple(rows)


def _price_dates(doc: dict, options) -> str:
    """The plan's price dates in a few words (``catalog.price_dates``): oldest to newest, how many offers are
    over a year old (each option marked beside its price) and how many undated."""
    dates = (doc.get("catalog") or {}).get("price_dates")
    if not isinstance(dates, dict) or not dates.get("summary"):
        return ""
    oldest, newest = dates.get("oldest"), dates.get("newest")
    if not isinstance(oldest, str) or not isinstance(newest, str):
        return str(dates["summary"])
    text = f"{oldest}{' or earlier' if dates.get('oldest_bounded') is True else ''} to {newest}"
    n = dates.get("offers")
    if isinstance(n, int) and not isinstance(n, bool):
        text = f"{n} offers: {text}"
    old = dates.get("older_than_a_year")
    extra = [f"{len(old)} over a year old (marked old)" if isinstance(old, list) and old else "",
             f"{dates['undated']} undated" if isinstance(dates.get("undated"), int) and dates["undated"] else ""]
    return text + "".join(f"; {e}" for e in extra if e)


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


SIMULATED_NOTE = "simulated (--fake-gpu): a named scenario's GPUs, not this machine's"
FIT_TITLE = "What to change to fit your GPUs"
FIT_HEAD = ("change", "memory per device", "time", "what it does")


def memory_chart_title(s: PlanSection) -> tuple[str, int | None]:
    """The memory chart's title and the capacity line to draw: of the chosen option's layout ("Memory per
    device: 4 x H100 SXM5 80GB"), or of the plan's own device count when nothing fits."""
    c = s.mine or s.chosen  # this machine's GPUs when the plan has them, whether the job fits them or not
    if c is not None and c.get("memory_per_device_parts_bytes"):
        name = c.get("name") or c.get("accelerator") or ""
        cap = c.get("capacity_bytes")
        return f"Memory per device: {c.get('devices')} x {name}", int(cap) if _finite(cap) else None
    devices = int((s.doc.get("memory") or {}).get("devices") or 1)
    return f"Memory per device on {devices} device{'s' if devices != 1 else ''} (--gpus)", None


def _num(v) -> float:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else math.inf


def generated_at() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def money(v) -> str:
    """``$1,234.56`` (cents below $100), ``-`` for missing."""
    if v is None or not isinstance(v, (int, float)) or not math.isfinite(v):
        return "-"
    return f"${v:,.2f}" if abs(v) < 1e6 else f"${v:,.0f}"


def hours(v) -> str:
    if v is None or not isinstance(v, (int, float)) or not math.isfinite(v):
        return "-"
    if v < 1:
        return f"{v * 60:.0f} min"
    if v < 48:
        return f"{v:.1f} h"
    return f"{v / 24:.1f} days"


def cell(column: str, o: dict) -> str:
    """Text of one option column, as people read it."""
    v = o.get(column)
    if column.endswith("_interval"):
        if not (isinstance(v, (list, tuple)) and len(v) == 2):
            return "-"
        fmt = {"hours_interval": hours, "cost_usd_interval": money}.get(column, lambda x: f"{x:,.1f}")
        return f"{fmt(v[0])} to {fmt(v[1])}"
    if column in ("cost_usd", "usd_per_million_tokens", "usd_per_million_requests"):
        return money(v)
    if column == "usd_per_device_hour":  # a price over a year old says so beside it (the price dates line)
        return "-" if v is None else f"{v:.2f}" + (" (old)" if o.get("price_stale") else "")
    if column == "hours":
        return hours(v)
    if column == "fits":
        return "yes" if v else "NO"
    if column in ("device_hours", "energy_kwh", "tokens_per_s"):
        return "-" if v is None else f"{v:,.1f}"
    if column == "mfu":
        return "-" if v is None else f"{v:.2f}"
    return _fmt_value(v)


COLUMN_TITLES = {"id": "option", "kind": "kind", "accelerator": "accelerator", "devices": "devices", "fits": "fits",
                 "mfu": "MFU", "hours": "time", "device_hours": "device-hours", "energy_kwh": "energy kWh",
                 "usd_per_device_hour": "$/device-h", "cost_usd": "total cost", "tokens_per_s": "tokens/s",
                 "hours_interval": "time, 80 % range", "cost_usd_interval": "total cost, 80 % range",
                 "tokens_per_s_interval": "tokens/s, 80 % range", "usd_per_million_tokens": "$/M tokens",
                 "usd_per_million_requests": "$/M requests"}
SERVING_COLUMNS = ("usd_per_million_tokens", "usd_per_million_requests")


def serving(doc: dict) -> bool:
    """Whether the plan serves a model (its options carry $ per million tokens and requests)."""
    return doc.get("workload") == "inference"


def option_columns(doc: dict) -> tuple[str, ...]:
    """The appendix's columns for this plan: :data:`OPTION_COLUMNS`, and the serving costs for a serving plan."""
    return OPTION_COLUMNS + (SERVING_COLUMNS if serving(doc) else ())



PDF_FULL_APPENDIX_ROWS = 40  # a PDF appendix lists every option up to this many, else the best per accelerator


def appendix_rows(s: PlanSection, full: bool) -> list[dict]:
    """The options a scenario's appendix lists: all of them (HTML, Markdown, CSV, and a PDF of up to
    ``PDF_FULL_APPENDIX_ROWS``), or the cheapest of each accelerator (a longer PDF)."""
    return list(s.options) if full or len(s.options) <= PDF_FULL_APPENDIX_ROWS else best_per_accelerator(s.options)


def appendix_holds(s: PlanSection, full: bool, short: bool = False) -> str:
    """What the appendix holds, in words that are true of it: ``all 15 options (12 fit)`` or ``the cheapest
    option of each of the 31 accelerators, of 242 options (the HTML and CSV reports list every one)``;
    ``short``: ``all 15 options`` or ``the cheapest of each of 31 accelerators``."""
    rows = appendix_rows(s, full)
    fit = sum(1 for o in s.options if o.get("fits"))
    if len(rows) == len(s.options):
        return f"all {len(s.options)} options" + ("" if short else f" ({fit} fit)")
    if short:
        return f"the cheapest of each of {len(rows)} accelerators"
    return (f"the cheapest option of each of the {len(rows)} accelerators, of {len(s.options)} options "
            f"({fit} fit; the HTML and CSV reports list every one with all its cost parts, here those of 2 % or "
            f"more)")


def assumptions_fact(s: PlanSection, appendix: str, i: int) -> str:
    """The scenario page's word on its assumptions, true of the report it is in: how many, how many changed,
    and where each is listed (``A2`` in HTML and Markdown, ``B`` in the PDF)."""
    where = f"appendix {appendix}{i + 1 if appendix == 'A' else ''}"
    changed = len(s.changed_assumptions)
    state = f"{changed} differ from the defaults (below)" if changed else "all at their defaults"
    return f"{len(s.assumptions)}, {state}; each with its value and origin in {where}"


def assumption_matrix(secs: list[PlanSection]) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """Every assumption of every scenario once: name, unit, its value in each scenario, and its origins (one
    origin when all scenarios share it): the PDF's appendix B, so no assumption is left out of any format."""
    names: dict[str, str] = {}
    values: list[dict[str, tuple[object, str]]] = []
    for s in secs:
        values.append({n: (v, o) for n, v, _u, o in s.assumptions})
        for n, _v, u, _o in s.assumptions:
            names.setdefault(n, u)
    head = ("name", "unit", *(f"value ({i + 1})" if len(secs) > 1 else "value" for i in range(len(secs))), "origin")
    rows = []
    for n, u in names.items():
        cells = [values[i].get(n) for i in range(len(secs))]
        origins = list(dict.fromkeys(c[1] for c in cells if c is not None))
        origin = origins[0] if len(origins) == 1 else "; ".join(
            f"({i + 1}) {c[1]}" for i, c in enumerate(cells) if c is not None)
        rows.append((n, u, *("-" if c is None else str(c[0]) for c in cells), origin))
    return head, rows


def best_per_accelerator(options) -> list[dict]:
    """The cheapest option of each accelerator, cheapest first: the PDF appendix's condensed table."""
    seen: dict[object, dict] = {}
    for o in options:
        key = o.get("accelerator")
        if key not in seen:
            seen[key] = o  # options arrive sorted: fitting first, then by cost
    return list(seen.values())
