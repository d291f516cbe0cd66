"""Plan against actual: every stored run with its prediction at import (kept) and now, as ``advisor.runs/1`` rows.

Used by ``advisor runs`` and the app's Runs page, so both show the same figures.
"""

from __future__ import annotations

from advisor.runs.load import compare_load
from advisor.runs.predict import compare, compared_figure, figure_label, predict, teaches

FIGURE_UNITS = {"max_concurrency": "requests at once", "kv_cache_tokens": "tokens"}  # else tokens/s


def run_entry(e, now: dict | None, here: str, teaches: bool | None = None) -> dict:
    """One element of ``runs`` in ``advisor.runs/1`` for a stored ``RunEntry``, its prediction now and whether
    the planner learns from it (``predict.teaches``)."""
    rec = e.record
    then_err, then_held = compare(rec, e.predicted_at_import)
    err, held = compare(rec, now)
    return {
        "id": e.id, "source_file": rec.source_file, "kind": rec.kind, "recorded_at": rec.recorded_at,
        "imported_at": e.imported_at, "model": rec.model, "params": rec.params, "workload": rec.workload,
        "machine": {"this_machine": bool(rec.machine_id) and rec.machine_id == here, "id": rec.machine_id,
                    "note": rec.machine_note},
        "accelerator": {"id": rec.accelerator_id, "name": rec.accelerator_name, "devices": rec.devices},
        "software": {"name": rec.software, "version": rec.software_version},
        "lengths": {"seq_len": rec.seq_len, "batch": rec.batch, "prompt_tokens": rec.prompt_tokens,
                    "output_tokens": rec.output_tokens, "tokens": rec.tokens},
        "precision": rec.precision, "quant": rec.quant,
        "measured": rec.measured.present(),
        "compared": {"figure": compared_figure(rec), "label": figure_label(rec),
                     "measured": getattr(rec.measured, compared_figure(rec)),
                     "unit": FIGURE_UNITS.get(compared_figure(rec), "tokens/s")},
        "predicted_at_import": e.predicted_at_import,
        "predicted_now": None if now is None else {k: v for k, v in now.items() if k != "load"},  # load: its own
        "error_factor": err, "range_held": held, "teaches": teaches,
        "error_factor_at_import": then_err, "range_held_at_import": then_held,
        "notes": list(rec.notes),
        **_engine_reading(rec), **_load(rec, now),
    }


def _load(rec, now: dict | None) -> dict:
    """A serving benchmark's run at its load (``runs.load``): ``{"load": {"shape": {"users", "prompts",
    "requests_per_s", "prompt_tokens", "output_tokens"}, "figures": {"tokens_per_s" | "ttft_p50_s" | "tpot_p50_s":
    {"measured", "predicted", "low", "high", "unit", "error_factor", "range_held"}}}}`` predicted now (``figures``
    None where it is not planned, and ``not_planned`` says why); {} for any other run."""
    from advisor.estimate.learned import SERVING_RUN_KINDS
    from advisor.runs.load import load_shape, run_measurement

    if rec.kind not in SERVING_RUN_KINDS:
        return {}
    load = compare_load((now or {}).get("load"))
    if load is not None:
        return {"load": load}
    why = ("its model is not resolved here (--model names it)" if run_measurement(rec) is None else
           "the serving model finds no steady state for it (a rate beyond what it says the server carries, or a "
           "setup it refuses)")
    return {"load": {"shape": load_shape(rec), "figures": None, "not_planned": why}}


def _engine_reading(rec) -> dict:
    """An engine's start-up reading (a vLLM log) with the advisor's figures for the same cache memory:
    ``{"engine_reading": {"max_model_len", "kv_cache_tokens": {"engine", "advisor"}, "max_concurrency": {...}}}``;
    {} for any other run."""
    from advisor.runs.vllm_startup import KIND, engine_reading

    if rec.kind != KIND:
        return {}
    r = engine_reading(rec)
    m = rec.measured
    if r is None:
        return {"engine_reading": {"max_model_len": rec.seq_len, "kv_cache_bytes_per_gpu": m.kv_cache_bytes,
                                   "kv_cache_tokens": {"engine": m.kv_cache_tokens, "advisor": None},
                                   "max_concurrency": {"engine": m.max_concurrency, "advisor": None}}}
    return {"engine_reading": {"max_model_len": r["max_model_len"], "kv_cache_bytes_per_gpu": m.kv_cache_bytes,
                               **{k: {"engine": r[k][0], "advisor": r[k][1]}
                                  for k in ("kv_cache_tokens", "max_concurrency")}}}


def run_entries(catalog, host=None) -> list[dict]:
    """Every stored run (oldest first) with what the planner predicts for it now (each run left out of what the
    planner learns for its own prediction).

    Raises:
        advisor.store.runs.RunStoreError: the store cannot be read.
    """
    return [row for _, row in run_entries_of(catalog, host)]


def run_entries_of(catalog, host=None, where=None) -> list[tuple]:
    """``(record, row)`` of the stored runs ``where(record)`` keeps (every one without it), each row as
    ``run_entries`` gives it: the Serve page asks for the runs of the job it sized.

    Raises:
        advisor.store.runs.RunStoreError: the store cannot be read.
    """
    from advisor.store.calibration import load_planner_calibration
    from advisor.store.runs import RunStore, this_machine_id

    with RunStore(create=False) as store:
        entries = [e for e in store.list() if where is None or where(e.record)]
    if not entries:
        return []
    calibration = load_planner_calibration()
    here = this_machine_id()
    out = []
    for e in entries:
        now = predict(e.record, catalog=catalog, calibration=calibration, host=host)
        out.append((e.record, run_entry(e, None if now is None else now.to_dict(), here, teaches(e.record, catalog))))
    return out


def _load_figure_text(f: dict) -> str:
    """One figure of a run at its load: measured, planned [80 % range], and whether the range held."""
    secs = f["unit"] == "s"

    def v(x: float | None) -> str:
        if x is None:
            return "-"
        return f"{x * 1000:,.1f} ms" if secs else f"{x:,.0f}"

    held = {True: "held", False: "missed", None: "-"}[f["range_held"]]
    return f"{v(f['measured'])} measured, {v(f['predicted'])} planned [{v(f['low'])}-{v(f['high'])}] {held}"


def load_summary(load: dict) -> str:
    """A serving run at its load (a row's ``load``) in one line: its shape, then output tokens/s, the first token
    (p50) and the time per output token (p50) measured against the plan; ``advisor runs`` and the Runs page show
    this text."""
    s = load["shape"]
    at = (f"{s['users']} user(s)" if s["users"] is not None else f"{s['requests_per_s']:g} requests/s") + (
        f", {s['prompts']} prompts" if s["prompts"] else "") + (
        f", {s['prompt_tokens'] or '?'} in / {s['output_tokens'] or '?'} out") + (
        f", {s['weight_format']}" if s.get("weight_format") else "")
    f = load["figures"]
    if not f:
        return f"at its load ({at}): not planned: {load.get('not_planned') or 'no prediction'}"
    return (f"at its load ({at}): output tokens/s {_load_figure_text(f['tokens_per_s'])}; "
            f"TTFT p50 {_load_figure_text(f['ttft_p50_s'])}; TPOT p50 {_load_figure_text(f['tpot_p50_s'])}")
