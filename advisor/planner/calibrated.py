"""The fitted efficiencies of the calibration set applied to a plan's timings, with their 80 % ranges
(docs/method.md, "Calibration on published measurements"; ``advisor.estimate.calibration``).

Each option's speed is the project's own estimate times the efficiency fitted for its group and class
(training: pretraining or fine-tune rate by framework; serving: decode at batch 1 or a served batch,
prefill and time to first token, by runtime, backend and weight bits). The 80 % half-width of each figure
is its group's leave-one-source-out width. A figure measured on this machine (a calibrated accelerator)
or by the user's own runs, or set by the user (``--mfu``), is left as it is.

``raw_estimates()`` turns the calibration off for the code inside it (the calibration set is planned that
way, so the fit never sees its own output).
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace

from advisor.catalog.measurements import bundled_calibration_fit, bundled_reach_rows
from advisor.catalog.training_runs import bundled_utilisation_model
from advisor.estimate.calibration import (
    BACKEND_OF_VENDOR,
    UNSCALED_LOADS,
    GroupFit,
    MeasurementError,
    bits_class,
    efficiency_class,
    memory_class,
    width_class,
)
from advisor.estimate.reach import UNNAMED, Position, Reach, locate, model_family, scales
from advisor.estimate.serving_queue import Z80
from advisor.estimate.software import MFU_CEILING
from advisor.planner.request import compute_precision, request_memo, training_software

log = logging.getLogger(__name__)
_RAW: ContextVar[bool] = ContextVar("advisor_raw_estimates", default=False)
KEEP_SOURCES = ("user", "calibrated", "learned")  # figures that are not the project's estimate: never rescaled


@contextmanager
def raw_estimates() -> Iterator[None]:
    """Plan without the fitted efficiencies inside this block (the raw estimate the fit compares with)."""
    token = _RAW.set(True)
    try:
        yield
    finally:
        _RAW.reset(token)


def active_fits() -> dict[str, GroupFit]:
    """The fitted groups in force: none inside ``raw_estimates()`` or when the stored fit cannot be read."""
    if _RAW.get():
        return {}
    try:
        return bundled_calibration_fit()
    except (OSError, MeasurementError, ValueError) as exc:  # a broken file plans raw and says so in the log
        log.warning("calibration fit not used: %s", exc)
        return {}


def backend_of(acc) -> str:
    """The compute backend a part runs on by default (its vendor's: CUDA, ROCm, Metal), ``cpu`` for a CPU."""
    if getattr(acc, "kind", "") == "cpu":
        return "cpu"
    return BACKEND_OF_VENDOR.get(acc.vendor, "unknown")


def training_group(workload: str) -> str:
    """The calibration group of a training workload."""
    return "pretraining" if workload == "pretrain" else "finetune_rate"


def framework_id(req) -> str:
    """The training framework a request plans with (named or the workload's default profile)."""
    software = training_software(req)
    return software.profile.id if software is not None else "default"


def serving_class(group: str, choice, acc, load: str = "users", *, moe: bool) -> str:
    """The efficiency class of a serving option from its runtime choice (``catalog.runtimes.RuntimeChoice``) and
    the accelerator's memory; a served figure's also from its load (users or an arrival rate) and whether the model
    is a mixture of experts (``calibration.ARCHS``)."""
    return _serving_class(group, choice.runtime.id, choice.backend, choice.weight_format.bits_per_weight,
                          acc.memory_type, acc.kind, load, moe)


@functools.lru_cache(maxsize=4096)
def _serving_class(group: str, runtime: str, backend: str, bits: float, memory_type: str, kind: str, load: str,
                   moe: bool) -> str:
    """``serving_class`` of plain values, once each (a serving plan asks for every accelerator and load)."""
    return efficiency_class(group, runtime, backend, bits_class(bits), memory_class(memory_type, kind), load,
                            "moe" if moe else "dense")


# The 80 % range of a serving figure whose group has no fit (a broken or missing file, or raw estimates): the
# prior the serving model had before its groups were fitted.
SERVE_RANGE_PRIOR = {"serving": 1.3, "ttft": 1.5, "tpot": 1.3}


def serve_compute_scale(choice, acc) -> float:
    """The share of the runtime profile's compute efficiencies a served step reaches: 1. The served step is the
    model's own (``estimate.serving``, with its host time, all-reduce and dispatch traffic per sequence); the
    serving groups' fitted factors multiply its figures where they help (``serve_factors``), not its inputs
    (docs/method.md, "Serving under load")."""
    del choice, acc
    return 1.0


def serve_load(by: str, users: float | None = None) -> str:
    """The load class (``calibration.LOADS``) of a serving job's load: ``users`` or ``rate`` (``by``:
    ``requests_per_s``); ``one`` for a single user (``users`` 1 on a replica), whose figures are the one request's."""
    if by != "users":
        return "rate"
    return "one" if users is not None and users <= 1 else "users"


def serve_factors(load: str, choice, acc, moe: bool) -> tuple[float, float, float]:
    """``(throughput, first token, time per output token)``: the speed factors the serving groups' fit applies to a
    served figure at a load class (``serve_load``) for a runtime choice on an accelerator: the class factor
    (``GroupFit.factor``), 1 where the group's factors are not applied (leaving one source out showed they do not
    help: ``calibration.applies``), at one user (``calibration.UNSCALED_LOADS``) and without a fit. A time is divided
    by its factor, a rate multiplied (``serving_queue.scaled_point``); ``measured.shown_prediction`` and ``advisor
    serve`` apply the same three."""
    fits = active_fits()
    key = ("factors", load, choice.runtime.id, choice.backend, choice.weight_format.bits_per_weight,
           acc.memory_type, acc.kind, moe)
    hit = _RANGES.get(key)
    if hit is not None and hit[0] is fits:
        return hit[1]
    out = []
    for group in ("serving", "ttft", "tpot"):
        fit = fits.get(group)
        out.append(fit.factor(serving_class(group, choice, acc, load, moe=moe)) if fit is not None and fit.rows
                   else 1.0)
    _remember(key, fits, (out[0], out[1], out[2]))
    return out[0], out[1], out[2]


def serve_shown(by: str, choice, acc, moe: bool):
    """``shown(point)``: a served point as the planner shows it, its figures times the serving groups' factors at its
    load class (``serve_factors``; ``serve_load`` of ``by`` and the point's users), each class's factors found once.
    ``advisor serve`` (its points, the load it serves within the targets, the knee chart) and bench_truth's
    predictor (``measured.shown_prediction``) take their figures through it."""
    from advisor.estimate.serving_queue import scaled_point

    factors: dict[str, tuple[float, float, float]] = {}

    def shown(point):
        load = serve_load(by, point.users)
        f = factors.get(load)
        if f is None:
            f = factors[load] = serve_factors(load, choice, acc, moe)
        return scaled_point(point, *f)

    return shown


def serve_range_factors(load: str = "users", choice=None, acc=None, moe: bool = False
                        ) -> dict[str, tuple[float, str]]:
    """``{group: (x/÷ factor of the 80 % range, where it comes from)}`` for the serving groups (``serving``: the
    throughput; ``ttft``; ``tpot``) at a load of users or an arrival rate (``serve_load``): the held-out width of the
    group's figures at that kind of load (``GroupFit.width``), else a prior. With a runtime choice and accelerator,
    the width of that runtime's class and model kind (``moe``; dense or MoE runs' own width at the load, where
    each has its rows): where the fit has no published served run of the runtime, widened by the spread between
    the runtimes' factors (``GroupFit.width``: a job far from the rows), and the origin says so.
    Found once per fit, load and class (a serving plan asks for every accelerator)."""
    fits = active_fits()
    key = (load, moe, None if choice is None or acc is None else
           (choice.runtime.id, choice.backend, choice.weight_format.bits_per_weight, acc.memory_type, acc.kind))
    hit = _RANGES.get(key)
    if hit is not None and hit[0] is fits:
        return hit[1]
    out = _ranges_of(fits, load, choice, acc, moe)
    _remember(key, fits, out)
    return out


def serve_capacity_spread(choice, acc, moe: bool) -> float:
    """The standard deviation of the log of a replica's capacity, as its served throughput's held-out error says:
    the 80 % width of the throughput at a load of users (``serve_range_factors``: the runtime's class and model kind,
    widened where no published served run of the runtime is at that load) over the normal quantile it stands for
    (``serving_queue.Z80``). A served load near capacity is planned over it (``serving_queue.serve_kept_up``)."""
    f, _ = serve_range_factors("users", choice, acc, moe)["serving"]
    return math.log(f) / Z80 if f > 1.0 else 0.0


# serve_factors and serve_range_factors by load and class, each with the fit it is of (another fit in force, such as
# none inside raw_estimates, finds them again)
_RANGES: dict[tuple, tuple] = {}


def _remember(key: tuple, fits, value) -> None:
    if len(_RANGES) > 4096:
        _RANGES.clear()
    _RANGES[key] = (fits, value)


def _ranges_of(fits, load: str, choice, acc, moe: bool) -> dict[str, tuple[float, str]]:
    out = {}
    decode = fits.get("decode")
    for group, prior in SERVE_RANGE_PRIOR.items():
        if load in UNSCALED_LOADS and group in ("serving", "tpot") and decode is not None and decode.rows:
            # one user's tokens/s is the plan's calibrated decode, so its range is the plan's (calibrate_serving)
            out[group] = (math.exp(decode.half_width_log), f"one request, as the plan gives its decode: leaving one "
                          f"source out on {decode.rows} published decode rates from {decode.sources} sources")
            continue
        fit = fits.get(group)
        if fit is None or fit.rows == 0:
            out[group] = (prior, "a prior: no fit on published runs in force")
            continue
        klass = serving_class(group, choice, acc, load, moe=moe) if choice is not None and acc is not None else load
        # without a runtime: the width of the job's kind of model at its load, at the rows
        kind_width = width_class(group, klass) if klass != load else f"{load}/{'moe' if moe else 'dense'}"
        origin = f"leaving one source out on {fit.rows} published figures from {fit.sources} sources"
        if kind_width in dict(fit.class_half_widths):
            origin += f", sized on the {'MoE' if moe else 'dense'} models' at this kind of load"
        if load in UNSCALED_LOADS:
            origin += "; one request, as the plan times it"
        elif not fit.applied:
            origin += "; planned raw, as the fitted factor did not bring the figures left out closer"
        elif klass != load:
            origin += (f"; calibrated: the served speed fitted at x{fit.factor(klass):.2f} of the model's"
                       + (" (the time divided by it)" if group != "serving" else ""))
        if klass != load and not fit.seen(klass):
            origin += (f"; no published served run of {choice.runtime.id} at this kind of load, so widened by the "
                       f"spread between the runtimes' factors")
        width = fit.width(klass) if klass != load else fit.class_width(kind_width)
        out[group] = (math.exp(width), origin)
    return out


def training_class(group: str, req, moe: bool) -> str:
    """The efficiency class of a training plan: dense or MoE (the experts' dispatch and small matrix products, which
    the estimate does not model, so MoE rows never set a dense factor), then its framework, then the precision it
    computes in (which the estimate models: fp8 as Amdahl's split);
    docs/method.md, "No sequence term; dense or MoE before the framework"."""
    return efficiency_class(group, f"{'moe' if moe else 'dense'}/{framework_id(req)}/{compute_precision(req)}")


def training_position(req, acc, devices: int, tp: int, pp: int, params: float, moe: bool, seq_len: int,
                      model: str | None) -> Position:
    """A training option in the features the calibration's reach is measured in (``estimate.reach.Position``):
    the devices and layout of the option, its accelerator's generation, the model, and the request's framework,
    precision and workload, as ``calibration.position_of`` reads a published row."""
    memo = request_memo(req)
    job = memo.get(("reach_job", model))  # what the whole plan shares, once per plan
    if job is None:
        job = memo[("reach_job", model)] = (framework_id(req), model_family(model) if model else UNNAMED,
                                            compute_precision(req), req.workload)
    framework, family, precision, workload = job
    return Position(devices, float(params), seq_len, tp * pp, _generation(acc.id), framework, family, moe,
                    precision, workload)


@functools.cache
def _generation(accelerator_id: str) -> int:
    """``utilisation.generation_of`` (0 when unknown), once per part."""
    from advisor.estimate.utilisation import generation_of

    return generation_of(accelerator_id) or 0


def training_reach(fit: GroupFit, klass: str, position: Position | None) -> Reach | None:
    """Where a training option lies against the calibrated runs and the half-width it gets
    (``GroupFit.width`` at its distance), None without a position or rows."""
    if position is None:
        return None
    found = _located(position)
    if found is None:
        return None
    distance, nearest, facts, runs = found
    return Reach(distance, nearest, facts, fit.width(klass), fit.width(klass, distance), runs, fit.reach_slope)


@functools.lru_cache(maxsize=4096)
def _located(position: Position):
    """``(distance, nearest row, facts, rows)`` of a position against the stored rows, once per position (a plan
    asks for each accelerator and layout, and the app re-plans on every change); None without rows."""
    rows = bundled_reach_rows()
    return (*locate(position, rows, _reach_unit()), len(rows)) if rows else None


@functools.lru_cache(maxsize=1)
def _reach_unit() -> dict[str, float]:
    """The stored rows' feature units (``estimate.reach.scales``), once per process."""
    return scales([p for _, p in bundled_reach_rows()])


def wall_time_high_log(factor: float = 1.0) -> float:
    """The log factor by which a training run's wall time may exceed its planned clean time: the published totals of
    the documented runs (restarts, failures and evaluation in them) ran down to ``wall_time_low`` of the clean-step
    utilisation model's rate (``UtilisationModel.wall_time_low``), and the plan runs ``factor`` times that model's
    rate (its calibration on published runs), so its time may reach ``factor / low`` times the planned one."""
    low = bundled_utilisation_model().wall_time_low
    return max(0.0, math.log(factor) - math.log(low)) if 0 < low <= 1 and factor > 0 else 0.0


def calibrate_training(t, req, moe: bool = False, position: Position | None = None):
    """A training timing times its group's efficiency (by dense or MoE, framework, precision), with the interval
    width of its dense or MoE rows held out (``GroupFit.width``), grown with the option's distance from the
    calibrated runs (``position``; ``estimate.reach``); its wall time's upper side allows for what published totals
    lost to restarts and evaluation (``wall_time_high_log``)."""
    fits = active_fits()
    fit = fits.get(training_group(req.workload))
    if fit is None or t.source in KEEP_SOURCES:
        return t.with_(wall_high_log=wall_time_high_log())
    key = f"training_factor_{fit.group}_{int(moe)}"  # one lookup per plan, not per option
    memo = request_memo(req)
    hit = memo.get(key)
    if hit is None:
        klass = training_class(fit.group, req, moe)
        hit = memo[key] = (fit.factor(klass), fit.width(klass), fit.seen(klass), fit.unseen_spread(klass),
                                   klass, {})
    f, width, seen, spread, klass, reaches = hit
    reach = reaches.get(position)
    if reach is None and position is not None:
        reach = reaches[position] = training_reach(fit, klass, position)
    if reach is not None:
        width = reach.width
    if t.mfu > 0:  # the effective utilisation stays below the ceiling of a training step
        f = min(f, max(1.0, MFU_CEILING / t.mfu))
    kind = "MoE" if moe else "dense"
    note = (f"calibrated: x{f:.2f} ({fit.group}, fitted on {fit.rows} published runs from {fit.sources} sources); "
            f"80 % range x/÷{math.exp(width):.2f}, as the published {kind} runs held out source by source")
    if not seen:
        note += (f"; outside what the fit has seen: no published {kind} run of {framework_id(req)}, so the range adds "
                 f"the spread between the frameworks' factors (x/÷{math.exp(spread):.2f})")
    if reach is not None and reach.outside:
        note += f"; {reach.text()}"
    # The utilisation shown is the effective one: the speed is FLOPs over (peak x mfu), calibration included.
    return t.with_(tokens_per_s=t.tokens_per_s * f, mfu=t.mfu * f, width_log=width, reach=reach,
                   wall_high_log=wall_time_high_log(f),
                   mfu_origin=f"{t.mfu_origin}; x{f:.2f} calibrated on published runs ({fit.group})",
                   note="; ".join(filter(None, [t.note, note])))


def calibrate_serving(t, req, acc, moe: bool):
    """A serving timing times the fitted efficiencies of the decode (batch 1) or the served batch and of
    the prefill, each with its group's width; the first token follows from both (its own group sizes only its
    range); a decode never passes its bandwidth bound."""
    fits = active_fits()
    d, choice = t.decode, t.software
    decode_kept, prefill_kept = getattr(t, "measured", False), getattr(t, "prefill_measured", False)
    if not fits or d is None or choice is None or t.source in KEEP_SOURCES or (decode_kept and prefill_kept) \
            or "cpu" in (backend_of(acc), choice.backend):
        return t  # measured on this machine (runs, probe), or a CPU timed from its measured triad
    speed_group = "decode" if req.batch <= 1 else "serving"
    sfit, pfit, tfit = fits.get(speed_group), fits.get("prefill"), fits.get("ttft")
    if decode_kept:  # the decode measured here stays as it is; only the prefill takes the published fit
        sfit = None
    if prefill_kept:  # the prefill taught by the user's runs stays as it is
        pfit = None
    fs = sfit.factor(serving_class(speed_group, choice, acc, moe=moe)) if sfit else 1.0
    fp = pfit.factor(serving_class("prefill", choice, acc, moe=moe)) if pfit else 1.0
    tps = d.tokens_per_s * fs
    if t.high_cap is not None:
        tps = min(tps, t.high_cap)  # no calibrated decode beyond the bandwidth bound
    fs = tps / d.tokens_per_s if d.tokens_per_s > 0 else 1.0
    width = sfit.half_width_log if sfit else t.width_log
    speed = getattr(t, "speed", None)
    one = t.ttft_one_s
    if speed is not None:  # the runtime's numbers a serving model reuses, at the same efficiencies (capped at 1)
        speed = _copy(speed, eta_mem=min(1.0, speed.eta_mem * fs), eta_kv=min(1.0, speed.eta_kv * fs),
                      overhead_s=speed.overhead_s / fs, matmul_eta=min(1.0, speed.matmul_eta * fp),
                      attention_eta=min(1.0, speed.attention_eta * fp))
        # the request from the calibrated numbers (the serving model's one request is the same: one_request)
        decode = speed.decode(t.batch, t.mean_cache, t.prompt_tokens, t.output_tokens)
        tps = decode.tokens_per_s
        one = speed.prefill_s(t.prompt_tokens, 1)
        t = t.with_(speed=speed)
    else:  # no runtime numbers to recompute from: the estimate's own parts scaled
        prefill_s, step_s = d.prefill_s / fp, d.step_s / fs
        request_s = prefill_s + (d.request_s - d.prefill_s) / fs
        batch = d.tokens_per_s * d.step_s
        decode = _copy(d, step_s=step_s, tokens_per_s=tps, prefill_s=prefill_s, request_s=request_s,
                       requests_per_s=batch / request_s if request_s > 0 else d.requests_per_s,
                       overhead_s=d.overhead_s / fs)  # the step's launch overhead is part of the step scaled
        if one is not None and d.prefill_s + d.step_s > 0:  # one request alone: its prefill at the prefill factor
            one = one * (prefill_s + step_s) / (d.prefill_s + d.step_s)
    return t.with_(decode=decode, tokens_per_s=tps, width_log=width, ttft_one_s=one,
                   # one request's first token: the width advisor serve gives one user (the published first
                   # tokens of one request, held out, at this runtime's class), else the prefill's spread (the
                   # user's own runs taught it, or no first-token fit); under load the loaded servers' spread
                   ttft_width_log=_one_request_ttft_width(req, choice, acc, moe, pfit, tfit, t, prefill_kept),
                   prefill_width_log=pfit.half_width_log if pfit else t.prefill_width_log,
                   eta_origin=t.eta_origin + (f"; calibrated x{fs:.2f} ({speed_group})" if sfit else ""))


def _one_request_ttft_width(req, choice, acc, moe: bool, pfit, tfit, t, prefill_kept: bool) -> float | None:
    """The 80 % half-width (log) of an inference plan's first token. One request alone (batch 1) takes what
    ``advisor serve`` gives one user (``serve_range_factors("one", ...)``: one question, one range), unless the
    user's runs taught the prefill (their width) or no first-token fit is in force (the prefill's)."""
    if req.batch > 1:
        return tfit.half_width_log if tfit else None
    if prefill_kept:
        return t.prefill_width_log
    if tfit is not None and tfit.rows:
        return math.log(serve_range_factors("one", choice, acc, moe)["ttft"][0])
    return pfit.half_width_log if pfit else None


def _copy(record, **changes):
    """``dataclasses.replace`` of a frozen record whose fields are all set by its ``__init__`` as given (no
    ``__post_init__``: the decode estimate, the serving speed), without the per-field init: a serving plan
    calibrates a timing per accelerator and device count."""
    if hasattr(record, "__post_init__") or changes.keys() - record.__dict__.keys():
        return replace(record, **changes)  # its own checks run (and name an unknown field)
    out = object.__new__(type(record))
    out.__dict__.update(record.__dict__)
    out.__dict__.update(changes)
    return out


def memory_interval(total_bytes: float, workload: str) -> tuple[float, float] | None:
    """The 80 % interval of a training job's peak memory per device (the finetune_memory group), None for
    inference or without a fit. The interval is centred on the fitted ratio and always holds the estimate."""
    if workload == "inference":
        return None
    fit = active_fits().get("finetune_memory")
    if fit is None or total_bytes <= 0:
        return None
    centre = total_bytes * fit.factor()
    w = math.exp(fit.half_width_log)
    return min(total_bytes, centre / w), max(total_bytes, centre * w)
