"""A serving benchmark's run at its load, planned as a published served row of the same shape is planned.

A ``vllm bench serve``, SGLang ``bench_serving`` or GuideLLM run measured output tokens/s, the first token (p50)
and the time per output token (p50) at a load: its users (``--max-concurrency``, GuideLLM's streams), the
requests it sent (``--num-prompts``) or the rate it offered, and its mean lengths. ``run_measurement`` writes that
run as the calibration set's row of a served load (``estimate.calibration.Measurement``: the model, accelerator,
devices, runtime, format, lengths, users, and the ``prompts`` or ``requests_per_s`` setting), and ``served_load``
plans it with ``planner.measured.shown_figures``: the function bench_truth's rows of the serving groups are
planned with (``shown_prediction``), the serving model at that load (a finite run of N prompts by C users who
start together: ``estimate.serving_queue.serve_finite``) with the figures as the planner shows them and each
group's 80 % range. The one difference is the calibration: a run is planned with the user's runs of its
accelerator (itself left out: plan against actual), as ``advisor serve`` plans with them.
"""

from __future__ import annotations

import math

from advisor.estimate.learned import SERVING_RUN_KINDS
from advisor.estimate.run_record import RunRecord

# The figures of a served load: (calibration group, the ``Measured`` field the run holds, unit).
LOAD_FIGURES = (("serving", "tokens_per_s", "tokens/s"), ("ttft", "ttft_p50_s", "s"), ("tpot", "tpot_p50_s", "s"))
SOURCE_ID = "your-run"


def model_spec(rec: RunRecord) -> str | None:
    """The model spec of a serving run's model as the serving job resolves it: a spec as given (a preset, ``hf:``,
    a local file), else the preset whose model card is the file's Hugging Face id (``serving_result.model_spec_of``).
    """
    from advisor.runs.serving_result import model_spec_of

    name = (rec.model or "").strip()
    if not name:
        return None
    if name.startswith("hf:") or name.endswith((".json", ".gguf")):
        return name
    return model_spec_of(name)


def _rate_text(rate: float) -> str:
    """A rate as the text of a row's setting (``measured.serve_job_values`` reads a number with a point as a
    float)."""
    text = f"{rate:.12f}".rstrip("0")
    return text if text != "0." else "0.0"


def format_fields(rec: RunRecord, weight_format: str | None) -> tuple[str, str]:
    """``(quant, precision)`` of a run's row: the record's where its file or the user said them, else the weight
    format its own plan assumed (``weight_format``: the planned option's, the runtime's usual format), so that
    the run's load and its rule-1 figure are one job: a 16-bit float as the precision, fp8 as both, any other
    format as the quant."""
    if rec.quant or not weight_format:
        return rec.quant or "", rec.precision or ""
    if weight_format in ("bf16", "f16", "fp16"):
        return "", "bf16" if weight_format == "bf16" else "fp16"
    if weight_format == "fp8":
        return "fp8", "fp8"
    return weight_format, rec.precision or ""


def run_measurement(rec: RunRecord, group: str = "serving", weight_format: str | None = None) -> object | None:
    """The calibration row (``estimate.calibration.Measurement``) a serving run would be, of ``group``
    (``serving``, ``ttft`` or ``tpot``; the times at their p50), or None: not a serving run, or without a model,
    accelerator or lengths. ``weight_format``: the format the run's own plan assumed (``format_fields``)."""
    from advisor.estimate.calibration import Measurement
    from advisor.planner.measured import RUN_SETTING

    if rec.kind not in SERVING_RUN_KINDS or rec.training or not rec.accelerator_id or not rec.params:
        return None
    spec = model_spec(rec)
    if spec is None or not rec.output_tokens:
        return None
    if rec.request_rate is not None:  # arrivals at a rate (Poisson), as a published rate's row states it
        settings: tuple[tuple[str, str], ...] = (("requests_per_s", _rate_text(rec.request_rate)),)
    elif rec.prompts is not None:  # a finite run of its prompts by its users, who start together
        settings = ((RUN_SETTING, str(rec.prompts)),)
    else:
        settings = ()
    field, unit = next((f, u) for g, f, u in LOAD_FIGURES if g == group)
    value = getattr(rec.measured, field) or 0.0
    quant, precision = format_fields(rec, weight_format)
    return Measurement(
        row_id=f"run-{rec.content_sha256[:12]}", group=group, source_id=SOURCE_ID, source_title=rec.file_name,
        source_url="", source_date=rec.date, model=spec, params=float(rec.params), accelerator_id=rec.accelerator_id,
        devices=rec.devices, software=rec.software or "", backend="", weight_format=quant, quant=quant,
        precision=precision, workload="inference", batch=rec.batch or 1,
        prompt_tokens=rec.prompt_tokens or 1, output_tokens=rec.output_tokens, seq_len=0, parallelism="",
        checkpointing="", value=value, published=value, unit=unit, settings=settings, statistic="p50")


def at_load(rec: RunRecord) -> bool:
    """Whether ``rec`` is a serving benchmark's run at a load of its own (users at once: ``--max-concurrency``,
    GuideLLM's streams; or an offered rate): its generated tokens/s is its load's, which the load's plan gives
    (``served_load``) and which ``advisor runs`` compares it on."""
    return (rec.kind in SERVING_RUN_KINDS and not rec.training and (bool(rec.batch) or rec.request_rate is not None)
            and bool(rec.output_tokens) and bool(rec.accelerator_id) and bool(rec.params))


def plan_format(rec: RunRecord, acc) -> str | None:
    """The weight format the plan of ``rec``'s own job assumes on ``acc``, as its planned option's software names
    it: the request as it runs there (``planner.request.as_run``: the runtime's usual file where the record names no
    format, Q4_K_M under llama.cpp) and the runtime's choice for it (``runtime_choice``); None where the job cannot
    be planned or ``acc`` is None (the CPU). Both the learner's forward model and ``runs.predict`` take it."""
    from advisor.planner.record_job import record_job
    from advisor.planner.request import as_run, runtime_choice

    job = None if acc is None else record_job(rec)
    if job is None:
        return None
    try:
        return runtime_choice(as_run(job.request, acc), acc).weight_format.id
    except (ValueError, KeyError):
        return None


# The alternating solve of a serving run's two factors (``learned_pair``): rounds at most, and the share of each
# measured figure the plan may miss it by once solved (a round moves the other factor's figure a little).
PAIR_ROUNDS = 8
PAIR_TOLERANCE = 1e-3
_TAUGHT: dict[tuple, tuple] = {}  # key -> (its catalog, the load's figures, the pair): worked out once a record


def _load_figures(rec: RunRecord, acc, catalog):
    """``f(decode, prefill)``: the run's load planned at those factors on the runtime's published speed
    (``shown_figures``; a prefill of None: its published fit) as ``(speed, first token p50)``, the speed the figure a
    serving run teaches its decode with (``estimate.learned.taught_figure``): a run of users its output tokens/s, a
    run at an offered rate one request's tokens/s, one over its time per output token p50 (the rate sets its
    throughput). None where the load is not planned."""
    from advisor.planner.measured import shown_figures

    m = run_measurement(rec, weight_format=plan_format(rec, acc))
    if m is None or shown_figures(m, catalog, ("serving",)) is None:
        return None
    at_rate = rec.request_rate is not None

    def f(decode: float, prefill: float | None) -> tuple[float, float]:
        got = shown_figures(m, catalog, ("serving", "ttft", "tpot"), decode_scale=decode, prefill_scale=prefill)
        if got is None:
            return 0.0, math.inf
        return (1.0 / got["tpot"][0] if at_rate else got["serving"][0]), got["ttft"][0]

    return f


def _solve_pair(rec: RunRecord, figures) -> tuple[float, float | None] | None:
    """The pair of ``learned_pair`` on the load's ``figures`` (``_load_figures``)."""
    from advisor.estimate.learned import MAX_SCALE, solve_increasing, taught_figure

    speed, ttft, prompt = taught_figure(rec, "decode_tokens_per_s"), rec.measured.ttft_p50_s, rec.prompt_tokens
    lo, hi = 1.0 / MAX_SCALE, MAX_SCALE
    if figures is None or not speed:
        return None
    kd = solve_increasing(lambda k: figures(k, None)[0], speed, lo, hi)
    if kd is None or not (ttft and prompt):
        return None if kd is None else (kd, None)
    alone = (kd, None)  # the decode at the published prefill, where no prefill factor gives the first token
    for _ in range(PAIR_ROUNDS):
        kp = solve_increasing(lambda k, d=kd: prompt / figures(d, k)[1], prompt / ttft, lo, hi)
        kd = None if kp is None else solve_increasing(lambda k, p=kp: figures(k, p)[0], speed, lo, hi)
        if kd is None:
            return alone
        got_speed, got_ttft = figures(kd, kp)
        if abs(got_speed / speed - 1.0) <= PAIR_TOLERANCE and abs(got_ttft / ttft - 1.0) <= PAIR_TOLERANCE:
            return kd, kp
    return alone


def _taught_load(rec: RunRecord, acc, catalog) -> tuple:
    """``(figures, pair)`` of a serving run's load (``_load_figures``, ``learned_pair``), worked out once a record
    and catalog: the learner's forward models and ``learned_pair`` read the same."""
    key = (rec.content_sha256, rec.measured, acc.id, id(catalog))
    hit = _TAUGHT.get(key)
    if hit is not None and hit[0] is catalog:  # the same catalog, not another one at a reused address
        return hit[1], hit[2]
    figures = _load_figures(rec, acc, catalog)
    pair = _solve_pair(rec, figures)
    if len(_TAUGHT) > 4096:
        _TAUGHT.clear()
    _TAUGHT[key] = (catalog, figures, pair)
    return figures, pair


def learned_pair(rec: RunRecord, acc, catalog) -> tuple[float, float | None] | None:
    """``(decode, prefill)``: the factors on the runtime's published speed at which the load's plan gives both the run's
    speed (``_load_figures``: its output tokens/s, or at an offered rate its time per output token) and its first
    token's p50 (rule 1 for both figures), solved in turns (the decode from the speed at the prefill so far, the
    prefill from the first token at that decode, ``PAIR_ROUNDS`` at most); the prefill None where the run measured no
    first token or no factor up to the hardware's limits gives it (then the decode alone, at the published prefill);
    None where no decode factor gives the speed. Solved once a record."""
    return _taught_load(rec, acc, catalog)[1]


def record_forward(rec: RunRecord, acc, what: str, catalog=None):
    """The forward model the learner inverts for ``rec`` (``estimate.learned``): for a serving benchmark's run at
    its load (``at_load``), ``what`` ``decode``: the load's generated tokens/s as ``served_load`` plans it,
    one request's decode at the factor (``planner.measured.shown_figures``' ``decode_scale``) and its prefill at the
    factor the run teaches with it (at an offered rate, which sets the throughput where the server keeps up, one over
    its time per output token p50 instead); ``prefill``: the prompt's tokens over the load's first token p50 at a
    prefill factor, the decode at its own (``learned_pair``: both solved so that the run imported and its load planned
    again gives its speed and first token back); None for a job that cannot be planned; otherwise the plan of the
    record's own job (``planner.timing.record_forward``).

    Args:
        catalog: the catalog the load is planned with (default: ``load_catalog()``).
    """
    from advisor.planner.timing import record_forward as job_forward

    if what not in ("decode", "prefill") or not at_load(rec):
        return job_forward(rec, acc, what)
    if catalog is None:
        from advisor.catalog import load_catalog

        catalog = load_catalog()
    figures, pair = _taught_load(rec, acc, catalog)
    if figures is None:
        return None
    if what == "decode":  # its speed at the prefill the run teaches with it (its published fit where it teaches none)
        prefill = None if pair is None else pair[1]
        return lambda k: figures(k, prefill)[0]
    if pair is None or pair[1] is None or not rec.prompt_tokens:
        return None
    decode, prompt = pair[0], rec.prompt_tokens
    return lambda k: prompt / figures(decode, k)[1]  # prompt tokens over the first token, as taught_figure reads it


def run_runtime(rec: RunRecord) -> str | None:
    """The runtime a serving run is planned with (the runtime its row names: ``measured.serve_job_values``), or
    None: not a serving run, or software the planner has no profile of (the runtime needs no weight format)."""
    from advisor.planner.measured import serve_job_values

    m = run_measurement(rec)
    return None if m is None else serve_job_values(m).get("runtime")


def load_shape(rec: RunRecord, weight_format: str | None = None) -> dict:
    """The load a serving run was measured at: ``{"users", "prompts", "requests_per_s", "prompt_tokens",
    "output_tokens", "weight_format"}`` (users None for a run at a rate; the weight format the record names, else
    the one its plan assumed, None where neither is known)."""
    return {"users": None if rec.request_rate is not None else (rec.batch or 1), "prompts": rec.prompts,
            "requests_per_s": rec.request_rate, "prompt_tokens": rec.prompt_tokens,
            "output_tokens": rec.output_tokens, "weight_format": rec.quant or weight_format}


def served_load(rec: RunRecord, catalog, calibration=None, weight_format: str | None = None) -> dict | None:
    """The run's load planned (``planner.measured.shown_figures`` on ``run_measurement``) against what it measured:
    ``{"shape": load_shape, "figures": {field: {"measured", "predicted", "low", "high", "unit"}}}`` for output
    tokens/s, the first token's p50 and the time per output token's p50 (``measured`` None where the file gave
    none); None where the load is not planned (not a serving run, an unknown model, no steady state).

    Args:
        calibration: the planner's calibration with the user's runs (``predict`` passes it with ``rec`` left out).
        weight_format: the weight format the run's own plan assumed (``predict``: its planned option's).
    """
    from advisor.planner.measured import shown_figures

    m = run_measurement(rec, weight_format=weight_format)
    if m is None:
        return None
    figures = shown_figures(m, catalog, tuple(g for g, _, _ in LOAD_FIGURES), calibration)
    if figures is None:
        return None
    out = {}
    for group, field, unit in LOAD_FIGURES:
        value, (low, high) = figures[group]
        out[field] = {"measured": getattr(rec.measured, field), "predicted": value, "low": low, "high": high,
                      "unit": unit}
    return {"shape": load_shape(rec, weight_format), "figures": out}


def compare_load(load: dict | None) -> dict | None:
    """``load`` (``served_load``) with each figure's ``error_factor`` (predicted / measured) and ``range_held``
    (the measured figure inside the plan's 80 % range), None where the run did not measure it."""
    if not load:
        return None
    figures = {}
    for field, f in load["figures"].items():
        got = f.get("measured")
        ok = bool(got) and f.get("predicted") is not None
        figures[field] = {**f, "error_factor": f["predicted"] / got if ok else None,
                          "range_held": (f["low"] <= got <= f["high"]) if ok else None}
    return {"shape": load["shape"], "figures": figures}
