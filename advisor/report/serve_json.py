"""The ``advisor.serve/1`` document of a serving job (``advisor serve --json``, the app's Serve page export).

Every figure that cannot be finite (a load no replica serves) is ``null``, never NaN or infinity.
"""

from __future__ import annotations

import json
import math

from advisor.job.serve import assumed_load_text
from advisor.planner.serve import ServeOption, ServeResult, capacity_ranges, interval, range_origin

SCHEMA = "advisor.serve/1"


def _num(x):
    return x if isinstance(x, (int, float)) and math.isfinite(x) else None


def _pair(p50, p95, which: str, o: ServeOption, by: str, bound: str = "") -> tuple[dict, dict]:
    return ({"p50": _num(p50), "p95": _num(p95)},
            {"p50": interval(_num(p50), which, o, by, bound=bound), "p95": interval(_num(p95), which, o, by, bound=bound)})


def option_json(o: ServeOption, by: str, changes=()) -> dict:
    """One option as the contract names it (``id, kind, meets_target, max_users`` or ``max_requests_per_s``,
    ``replicas, devices, per_user_tokens_per_s, ttft_s, tpot_s, usd_per_million_requests,
    usd_per_million_output_tokens``) with its ranges and launch values."""
    p = o.point
    most = o.max_load_per_replica * (o.replicas_available if o.replicas_available is not None else o.replicas)
    out = {"id": o.id, "kind": o.kind, "accelerator": o.accelerator, "accelerator_name": o.accelerator_name,
           "runtime": o.runtime, "fits": o.fits, "meets_target": o.meets_target}
    if by == "users":
        out["max_users"] = int(most)
        out["max_users_per_replica"] = int(o.max_load_per_replica)
    else:
        out["max_requests_per_s"] = _num(most)
        out["max_requests_per_s_per_replica"] = _num(o.max_load_per_replica)
    out.update(replicas=o.replicas, replicas_available=o.replicas_available, devices=o.devices,
               devices_per_replica=o.devices_per_replica, tp=o.launch.get("tp") if o.launch.get("tensor_parallel")
               else 1)
    tps = 1.0 / p.tpot_p50_s if p is not None and p.tpot_p50_s and math.isfinite(p.tpot_p50_s) else None
    out["per_user_tokens_per_s"] = _num(tps)
    out["per_user_tokens_per_s_interval"] = interval(_num(tps), "tpot", o, by, bound="rate")
    ttft, ttft_iv = _pair(p.ttft_p50_s if p else None, p.ttft_p95_s if p else None, "ttft", o, by)
    tpot, tpot_iv = _pair(p.tpot_p50_s if p else None, p.tpot_p95_s if p else None, "tpot", o, by, bound="time")
    ttft["mean"] = _num(p.ttft_mean_s) if p is not None else None
    out.update(ttft_s=ttft, ttft_s_interval=ttft_iv, tpot_s=tpot, tpot_s_interval=tpot_iv)
    if p is not None:
        out.update(requests_per_s=_num(p.requests_per_s * o.replicas),
                   output_tokens_per_s=_num(p.output_tokens_per_s * o.replicas),
                   utilisation=_num(p.utilisation), in_service_per_replica=_num(p.in_service),
                   waiting_per_replica=_num(p.waiting), limit=p.limit or None)
    if by != "users" and o.capacity_per_replica is not None:  # an arrival rate against what a replica serves
        out.update(capacity_requests_per_s_per_replica=_num(o.capacity_per_replica),
                   chance_beyond_capacity=_num(o.chance_beyond_capacity),
                   beyond_capacity=p is not None and not p.stable)
        over = capacity_ranges(o)
        if over is not None:  # each time's 80 % range over the capacity's error alone (null: beyond capacity)
            out["over_capacity_s"] = {name.removesuffix("_s"): [_num(lo), _num(hi)] for name, (lo, hi) in over.items()}
        if p is not None and not p.stable:  # no steady figure: how fast the queue and a new request's wait grow
            out.update(queue_growth_requests_per_s=_num(p.queue_growth_per_s * o.replicas),
                       wait_growth_s_per_s=_num(p.wait_growth_s_per_s))
    out.update(kv_capacity_tokens=o.kv_capacity_tokens, usd_per_hour=_num(o.usd_per_hour),
               usd_per_million_requests=_num(o.usd_per_million_requests),
               usd_per_million_requests_interval=interval(_num(o.usd_per_million_requests), "throughput", o, by),
               usd_per_million_output_tokens=_num(o.usd_per_million_output_tokens),
               usd_per_million_output_tokens_interval=interval(_num(o.usd_per_million_output_tokens), "throughput",
                                                                       o, by))
    if o.kind == "cloud":
        out.update(provider=o.provider, instance=o.instance, spot=o.spot, price_date=o.price_date)
    if o.origin:
        out["origin"] = o.origin
    if o.this_machine:
        out["this_machine"] = True
    launch = {k: v for k, v in o.launch.items() if v is not None}
    out["launch"] = launch
    if o.note:
        out["note"] = o.note
    if changes:
        out["changes"] = [{"text": c.text, "meets_target": c.meets, "values": c.values} for c in changes]
    return out


def _first_format(result: ServeResult) -> str | None:
    """The weight format of the first option that fits (each option's own is in its ``launch``)."""
    return next((o.launch.get("weight_format") for o in result.options if o.fits and o.launch), None)


def serve_document(result: ServeResult, changes: dict | None = None) -> dict:
    """The whole ``advisor.serve/1`` document; ``changes``: option id -> its ``ServeChange`` list."""
    changes = changes or {}
    job = result.request
    m = result.model
    cheapest = result.cheapest("cloud")
    closest = None if any(o.meets_target for o in result.options) else result.closest()
    load = {"users": job.users} if result.by == "users" else {"requests_per_s": job.requests_per_s}
    if assumed := assumed_load_text(job):  # the job gave no load: the default serving job's, and it says so
        load["assumed"] = assumed
    return {
        "schema": SCHEMA,
        "model": {"name": result.model_name, "id": job.model, "source": m.arch.source if m else None,
                  "params": m.params if m else None,
                  "active_params": m.active_params if m else None, "kv_cache_bits": m.kv_bits if m else None,
                  "kv_bytes_per_token": m.kv_bytes_per_token() if m else None,
                  "weight_format": _first_format(result)},
        "load": load,
        "lengths": {"prompt_tokens_mean": result.lengths.prompt_mean, "prompt_spread": result.lengths.prompt_cv,
                    "output_tokens_mean": result.lengths.output_mean, "output_spread": result.lengths.output_cv,
                    "origin": result.lengths_origin},
        "targets": {"ttft_p95_s": result.targets.ttft_p95_s, "tpot_p95_s": result.targets.tpot_p95_s},
        "ranges": range_origin(result.by, moe=result.moe),
        "queue_model": "analytical: solved in the decoding batch (Little's law), a step queue for the first "
                       "token, Erlang C admission (docs/method.md, Serving under load)",
        "cheapest_cloud_meeting_target": cheapest.id if cheapest else None,
        "closest_option": closest.id if closest else None,
        "options": [option_json(o, result.by, changes.get(o.id, ())) for o in result.options],
        "warnings": list(result.warnings),
        "learned": list(result.learned),  # the speeds the user's runs set ("Speed on X (runtime): from your run ...")
        "inputs": {k: v for k, v in job.changed().items() if k not in ("workload",)},
    }


def serve_json_text(doc: dict) -> str:
    """The document as JSON text (no NaN or infinity), ending in a newline."""
    return json.dumps(doc, indent=1, allow_nan=False, default=list) + "\n"
