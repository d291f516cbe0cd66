"""CSV report: one table, one row per record.

The first column, ``record``, says what a row is: ``option`` (one hardware option of a plan, with its
figures and ``cost_<part>_usd`` columns), ``assumption`` (name in ``id``, ``value``, ``unit``, ``origin``),
``catalog`` (``catalog_date`` / ``prices_as_of`` in ``id``, the date in ``value``), ``spend`` (the monthly view of
owning, buying and renting: an option's cost a month in ``value``, its upfront cost and payback in ``origin``)
or ``probe``. Numbers
are unformatted (SI units, USD) so spreadsheets and scripts can use them. A text cell that a spreadsheet
would run as a formula (starting with ``= + - @``, tab or carriage return) is written with a leading ``'``
(``advisor.units.csv_safe``).
"""

from __future__ import annotations

import csv
import io

from advisor.report.content import OPTION_COLUMNS, PlanSection
from advisor.units import csv_safe
from advisor.untrusted import plain_text


def render_csv(secs: list[PlanSection]) -> str:
    parts: list[str] = []
    for s in secs:
        parts += [p for p in s.breakdown_parts if p not in parts]
    head = ["record", "plan", *OPTION_COLUMNS, "break_even_vs", "break_even_device_hours",
            *(f"cost_{p}_usd" for p in parts), "value", "unit", "origin"]
    out = io.StringIO()
    w = _SafeWriter(out, fieldnames=head, lineterminator="\n")
    w.writeheader()
    for s in secs:
        for o in s.options:
            row = {"record": "option", "plan": s.title, **{c: _raw(o.get(c)) for c in OPTION_COLUMNS}}
            be = o.get("break_even") or {}
            row["break_even_vs"] = _raw(be.get("vs"))
            row["break_even_device_hours"] = _raw(be.get("device_hours"))
            for p, v in (o.get("cost_breakdown_usd") or {}).items():
                row[f"cost_{p}_usd"] = _raw(v)
            w.writerow(row)
        for name, value, unit, source in s.inputs:
            w.writerow({"record": "input", "plan": s.title, "id": name, "value": value, "unit": unit,
                        "origin": source})
        for name, value, unit, origin in s.assumptions:
            w.writerow({"record": "assumption", "plan": s.title, "id": name, "value": _raw(value), "unit": unit,
                        "origin": origin})
        for name, unit, pair in _ranges(s.doc):  # the plan-level figures' 80 % intervals, "low;high"
            w.writerow({"record": "range", "plan": s.title, "id": name, "value": _raw(pair), "unit": unit,
                        "origin": "80 % interval (docs/method.md, 'Honest ranges')"})
        w.writerow({"record": "catalog", "plan": s.title, "id": "catalog_date", "value": s.catalog_date})
        w.writerow({"record": "catalog", "plan": s.title, "id": "prices_as_of", "value": s.prices_as_of})
        if s.price_dates:
            w.writerow({"record": "catalog", "plan": s.title, "id": "price_dates", "value": s.price_dates})
        spend = s.doc.get("cost_over_time") if isinstance(s.doc.get("cost_over_time"), dict) else {}
        for line in spend.get("lines") or ():  # the monthly view: what owning, buying and renting cost a month
            if isinstance(line, dict):
                pay = line.get("payback_months")
                w.writerow({"record": "spend", "plan": s.title, "id": _raw(line.get("id")),
                            "value": _raw(line.get("monthly_usd")), "unit": "USD a month",
                            "origin": f"upfront {_raw(line.get('upfront_usd'))} USD; payback "
                                      + ("none" if pay is None else f"{_raw(pay)} months")
                                      + f"; at {_raw(spend.get('jobs_per_month'))} jobs a month"})
        for option_id, reason in s.infeasible:
            w.writerow({"record": "infeasible", "plan": s.title, "id": option_id, "origin": reason})
        if s.probes:
            for p in s.probes:
                w.writerow({"record": "probe", "plan": s.title, "id": p.name, "value": p.value,
                            "origin": f"{p.source}, measured {p.measured_at}"})
        else:
            w.writerow({"record": "probe", "plan": s.title, "id": "none",
                        "origin": "no calibration saved: planner priors used"})
    return out.getvalue()


def _ranges(doc: dict) -> list[tuple[str, str, list]]:
    """``(figure, unit, [low, high])`` of the plan's memory per device and its serving figures, where given."""
    out = []
    mem = (doc.get("memory") or {}).get("per_device_bytes_interval")
    if mem:
        out.append(("memory_per_device_bytes", "bytes", mem))
    inf = doc.get("inference") if isinstance(doc.get("inference"), dict) else {}
    for key, unit in (("ttft_s_interval", "s"), ("prefill_tokens_per_s_interval", "tokens/s"),
                      ("decode_tokens_per_s_interval", "tokens/s")):
        if inf.get(key):
            out.append((key.removesuffix("_interval"), unit, inf[key]))
    return out


class _SafeWriter(csv.DictWriter):
    def writerow(self, rowdict):
        return super().writerow({k: csv_safe(plain_text(v) if isinstance(v, str) else v) for k, v in rowdict.items()})


def _raw(v):
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):  # an 80 % interval: "low;high"
        return ";".join(str(_raw(x)) for x in v)
    return repr(v) if isinstance(v, float) else v
