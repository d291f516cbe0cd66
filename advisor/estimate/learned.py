"""What the user's own measurements teach the planner: efficiencies and their ranges (pure, no I/O).

Learning is the plan's forward model run backwards (docs/method.md, "Learning from your runs"). Each record
teaches the value of one quantity at which the planner's own function, applied to the record's own job, gives
the record's measured figure back (``solve_increasing``: bisection on a monotone function; the planner passes
the forward function, ``planner.timing.record_forward``), so importing a run and planning that job again gives
the measured figure:

* **Training** (``training_utilisation``): the model-FLOPs utilisation of a Trainer run or a monitor recording,
  through ``utilisation.training_time`` (the FLOPs it counts, fp8 split and recomputation included). A
  utilisation transfers to another size of model on the same accelerator and software by the fitted model's own
  slope (``exp(b_p * dlog10 P)``, ``utilisation.FEATURES``); raw tokens/s never does.
* **Serving** (``serving_scale``): a factor on the runtime's published speed: for a llama-bench generation test
  the decode step (its weights, its cache at the test's context, its per-step launch time), for a serving
  benchmark the decode step at its concurrency (``taught_figure``), for a prompt test the prefill kernels. The
  factor moves to another model, weight format or length by the runtime profile's own ratios.
* **The training-step probe and the device-bandwidth probe** (``advisor.store.calibration``): a measured MFU of
  a small transformer and a read-bandwidth efficiency, used where no run record matches.

Several matching records are combined by a weighted geometric mean: weight ``m / (1 + |dlog10 P| + |dlog2 s|/2)``,
``m`` = 1 on this machine and ``OTHER_MACHINE_WEIGHT`` on another with the same accelerator. The 80 % range
follows how well such transfers held on the user's own records: every ordered pair of matching records
predicts one from the other; with at least ``MIN_PAIRS`` pairs the half-width is their split-conformal 80 %
quantile (Vovk et al. 2005; floor ``MIN_WIDTH_LOG``), with fewer it is the larger of the base width and the
worst pair. Records only from other machines keep at least the full width of the figure without them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from advisor.estimate import decode
from advisor.estimate import utilisation as U
from advisor.estimate.compute import flops_per_token, recompute_factor
from advisor.estimate.run_record import RunRecord

OTHER_MACHINE_WEIGHT = 0.5
MIN_PAIRS = 4  # the conformal rule needs ceil((n+1)*0.8) <= n
MIN_WIDTH_LOG = math.log(1.05)
PAIR_RECORDS = 32  # the records whose pairs give the 80 % range (module docstring)
# The least efficiency a record or a probe teaches (utilisation or bandwidth efficiency, 0.01 %; the quick
# training-step probe of a small model on a CPU measures about 0.07 %): below it something other than the
# hardware bounded the run (offloading, swapping, contention). Every learned value lies in
# [EFFICIENCY_FLOOR, 1], so no stored record can make a plan's time overflow (advisor.runs.plausible notes
# such records at import).
EFFICIENCY_FLOOR = 1e-4
LORA = ("lora", "qlora")
SOLVE_STEPS = 100  # bisection halvings of log(hi/lo): far below a part in a million for any bracket used here

Forward = Callable[[float], float]  # the plan's figure for a record's own job at one value of the quantity


def solve_increasing(f: Forward, target: float, lo: float, hi: float) -> float | None:
    """The ``x`` in ``[lo, hi]`` where the increasing function ``f`` reaches ``target``: bisection on ``log x``
    (``f`` is the plan's forward model of a record's job, so the value learned is the one the plan needs to give
    the measured figure back). None when ``target`` lies outside ``[f(lo), f(hi)]`` (a run faster than the
    model allows at any efficiency up to ``hi``, or slower than at ``lo``); where ``f`` is flat (a prefill held
    at its weight-read floor) the smallest such ``x`` is returned.
    """
    if not (target > 0 and math.isfinite(target) and 0 < lo < hi):
        return None
    f_lo, f_hi = f(lo), f(hi)
    if not (f_lo <= target <= f_hi * (1 + 1e-9)):
        return None
    a, b = math.log(lo), math.log(hi)
    for _ in range(SOLVE_STEPS):
        mid = (a + b) / 2.0
        if f(math.exp(mid)) < target:
            a = mid
        else:
            b = mid
        if b - a < 1e-12:
            break
    return math.exp(b)


@dataclass(frozen=True)
class Learned:
    """An efficiency the planner takes from measurements.

    Attributes:
        value: the utilisation (training) or bandwidth efficiency (decode) at the target, (0, 1].
        origin: what the plan says, e.g. ``from your run of 2026-12-02 (trainer_state.json)``.
        source: ``learned`` (run records) or ``calibrated`` (a probe).
        width_log: half-width of the 80 % interval in log space.
        records: the records used (empty for a probe).
    """

    value: float
    origin: str
    source: str
    width_log: float
    records: tuple[RunRecord, ...] = ()


def training_flops_per_token(active_params: float, layers: int, hidden: int, seq_len: int, workload: str,
                             recompute: str = "none") -> float:
    """FLOPs per trained token as ``utilisation.training_time`` counts them:
    ``(f_w*P + f_a*6*L*s*h) * r`` with ``f`` 4 for LoRA (no weight gradients of the base), else 6, and ``r``
    ``compute.recompute_factor`` under full recomputation (8/6, 6/4 for LoRA)."""
    f = flops_per_token(1.0, workload)
    return (f * active_params + f * layers * seq_len * hidden) * recompute_factor(recompute, workload)


def record_utilisation(rec: RunRecord, peak_flops: float | None) -> float | None:
    """The model-FLOPs utilisation a training record achieved on devices of ``peak_flops``, or None when the
    record lacks a figure it needs."""
    m = rec.measured
    if not rec.training or not m.tokens_per_s or not peak_flops or None in (rec.params, rec.layers, rec.hidden,
                                                                              rec.seq_len):
        return None
    per_token = training_flops_per_token(rec.params, rec.layers, rec.hidden, rec.seq_len, rec.workload, rec.recompute)
    u = m.tokens_per_s * per_token / (rec.devices * peak_flops)
    return u if EFFICIENCY_FLOOR <= u <= 1.0 else None


def size_factor(model: U.UtilisationModel, params_from: float, seq_from: int, params_to: float, seq_to: int) -> float:
    """How the fitted model moves a utilisation from one size and length to another:
    ``exp(b_p * log10(P_to/P_from))`` (``utilisation.FEATURES``). The length moves the work (attention FLOPs are
    counted per token), not the utilisation: the model has no sequence term (docs/method.md,
    "No sequence term; dense or MoE before the framework")."""
    del seq_from, seq_to
    b_p = model.coefficients[U.FEATURES.index("log10_params_per_1e10")]
    return math.exp(b_p * math.log10(params_to / params_from))


def _software_matches(rec: RunRecord, software: str | None) -> bool:
    """Same framework or runtime where both are known (a record or a plan that names none matches any)."""
    if not software or not rec.software:
        return True
    a, b = rec.software.lower(), software.lower()
    return a == b or a in b or b in a


def _family(workload: str) -> str:
    return "adapter" if workload in LORA else ("inference" if workload == "inference" else "full")


def _weight(rec: RunRecord, machine_id: str | None, dsize: float, dlen: float) -> float:
    m = 1.0 if machine_id and rec.machine_id == machine_id else OTHER_MACHINE_WEIGHT
    return m / (1.0 + abs(dsize) + abs(dlen) / 2.0)


def _pair_errors(items: Sequence[tuple[float, object, RunRecord]], value: Callable[[object], float]) -> list[float]:
    """The transfer errors between records, each item ``(weight, figures, record)`` with ``value(figures)``
    such that predicting record j from record i errs by ``value_j - value_i``: every ordered pair among the
    ``PAIR_RECORDS`` records that weigh most for the target (the newest first among equals), so a plan costs
    O(n) in the n matching records, not O(n^2)."""
    newest = sorted(items, key=lambda v: v[2].recorded_at, reverse=True)
    vals = [value(f) for _, f, _ in sorted(newest, key=lambda v: -v[0])[:PAIR_RECORDS]]
    return [vj - vi for i, vi in enumerate(vals) for j, vj in enumerate(vals) if i != j]


def _width(pair_errors: Sequence[float], base: float) -> float:
    """The 80 % half-width from the transfers between the user's records (module docstring)."""
    errs = sorted(abs(e) for e in pair_errors)
    if len(errs) >= MIN_PAIRS:
        return max(MIN_WIDTH_LOG, errs[min(len(errs), math.ceil((len(errs) + 1) * U.COVERAGE)) - 1])
    return max([base, *errs])


def _origin(used: list[tuple[float, RunRecord]], machine_id: str | None, what: str, count: int | None = None) -> str:
    rec = min(used, key=lambda wr: -wr[0])[1]  # the first of the heaviest (as a stable sort's first)
    where = "" if machine_id and rec.machine_id == machine_id else ", on another machine with the same accelerator"
    n = len(used) if count is None else count
    more = f" and {n - 1} more" if n > 1 else ""
    return f"from your run of {rec.date} ({rec.file_name}){where}{more}: {what}"


def training_utilisation(calib, *, acc, workload: str, precision: str, software: str | None, active_params: float,
                         seq_len: int, model: U.UtilisationModel,
                         forward: Callable[[RunRecord], Forward | None] | None = None) -> Learned | None:
    """The utilisation of a training job on ``acc`` taught by the user's runs, else by the training-step probe.

    Args:
        calib: the planner's calibration (``advisor.store.calibration.Calibration``) or None; its ``runs`` are
            the run records, ``machine_id`` this machine's fingerprint id, ``mfu`` the probe's figure.
        acc: the target ``catalog.Accelerator``; workload, precision, software: the plan's.
        active_params, seq_len: the planned model and length (the transfer's target).
        model: the fitted utilisation model (its slopes move a record to the target size).
        forward: a record -> the plan's training tokens/s of the record's own job at a utilisation (None where it
            cannot be planned): the utilisation a record teaches is the one that gives its measured tokens/s back
            (``solve_increasing``); without it, ``record_utilisation``'s closed form.
    Returns:
        ``Learned`` or None when nothing measured applies.
    """
    if calib is None:
        return None
    machine_id = getattr(calib, "machine_id", None)
    rate = acc.peak_precision(precision)
    found: list[tuple[float, float, RunRecord]] = []  # (weight, log utilisation at the target, record)
    usable: list[tuple[float, RunRecord]] = []  # (utilisation, record), for the transfer errors
    left = getattr(calib, "left_out", None)  # a plan against actual learns nothing from the record itself
    for rec in getattr(calib, "runs", ()) or ():
        if (rec.simulated or rec.content_sha256 == left or rec.accelerator_id != acc.id or not rec.training
                or _family(rec.workload) != _family(workload)
                or not _software_matches(rec, software) or acc.peak_precision(rec.precision or "bf16") != rate):
            continue
        u = taught_value(rec, "tokens_per_s", forward, key=acc.id) if forward is not None \
            else record_utilisation(rec, acc.peak_flops(rec.precision or "bf16"))
        if u is None:
            continue
        usable.append((u, rec))
        f = size_factor(model, rec.params, rec.seq_len, active_params, seq_len)
        w = _weight(rec, machine_id, math.log10(active_params / rec.params), math.log2(seq_len / rec.seq_len))
        found.append((w, math.log(u * f), rec))
    if found:
        total = sum(w for w, _, _ in found)
        u = min(1.0, max(EFFICIENCY_FLOOR, math.exp(sum(w * lu for w, lu, _ in found) / total)))
        # record j predicted from record i: log uj - log(ui * size_factor(i -> j)), the size factor being
        # exp(b_p * dlog10 P), so each pair's error is a difference of one value per record
        b_p = model.coefficients[U.FEATURES.index("log10_params_per_1e10")]
        errors = _pair_errors([(w, (ui, ri), ri) for (w, _, _), (ui, ri) in zip(found, usable)],
                              lambda v: math.log(v[0]) - b_p * math.log10(v[1].params))
        width = _width(errors, model.half_width_calibrated_log)
        if not any(machine_id and r.machine_id == machine_id for _, _, r in found):
            width = max(width, model.half_width_log)
        what = f"utilisation {u:.3f} moved to this size by the fitted slopes"
        return Learned(u, _origin([(w, r) for w, _, r in found], machine_id, what), "learned", width,
                       tuple(r for _, _, r in found))
    mfu = getattr(calib, "mfu", None)
    if mfu and mfu >= EFFICIENCY_FLOOR and calib.applies_to(acc.id):
        return Learned(mfu, f"measured on this machine ({calib.source}, {calib.measured_at[:10]})", "calibrated",
                       model.half_width_calibrated_log)
    return None


def decode_bandwidth_efficiency(calib, *, acc, weight_format: str, format_eta: Callable[[str], float],
                                base_width_log: float) -> Learned | None:
    """The bandwidth efficiency of a decode on ``acc`` measured by the device-bandwidth probe, which replaces the
    runtime's 16-bit figure, the format keeping its ratio to it (``decode.measured_eta``); None without a probe
    of this accelerator. The user's own runs teach through ``serving_scale`` instead.

    Args:
        calib: as for ``training_utilisation``; its ``eta_mem`` is the probe's figure.
        weight_format: the plan's weight format id (``resources/runtimes.toml``).
        format_eta: a weight format id -> the runtime's published efficiency for it on this backend (a format
            it does not know reads at its 16-bit figure).
        base_width_log: the half-width of a figure measured on this machine (the probe-calibrated width).
    """
    measured = getattr(calib, "eta_mem", None)
    if calib is None or not measured or not calib.applies_to(acc.id):
        return None
    eta, note = decode.measured_eta(format_eta(weight_format), format_eta("f16"), measured)
    return Learned(eta, note, "calibrated", base_width_log)


# A runtime's step efficiencies may be scaled up to this factor (each is capped at 1 by the forward model).
MAX_SCALE = 100.0
SERVING_FIGURES = {"decode_tokens_per_s": "decode", "prefill_tokens_per_s": "prefill"}


def serving_scale(calib, *, acc, runtime: str | None, figure: str, forward: Callable[[RunRecord], Forward | None],
                  width_log: float, base_width_log: float) -> Learned | None:
    """The factor on a runtime's published speed of one part of a served request, taught by the user's runs on
    ``acc`` with that runtime: ``figure`` ``decode_tokens_per_s`` (a generation test: the factor multiplies the
    bandwidth efficiencies of the weights and cache and divides the per-step launch time, as the published
    calibration does) or ``prefill_tokens_per_s`` (a prompt test: it multiplies the prefill kernels'
    efficiencies). For each record it is the factor at which the plan of the record's own job gives its measured
    figure back (``solve_increasing``): the weights it read, its cache at its context, its per-step time, its
    prompt; several records are combined by their weighted geometric mean (module docstring). The factor moves
    to another model, weight format or length with the runtime profile's own ratios between them.

    Args:
        calib: as for ``training_utilisation``.
        runtime: the plan's runtime id.
        figure: the ``Measured`` field the records teach (``SERVING_FIGURES``).
        forward: a record -> the plan's ``figure`` for the record's own job at a factor (None where the record
            cannot be planned).
        width_log: the half-width without a record on this machine; base_width_log: with one.
    Returns:
        ``Learned`` (``value``: the factor) or None when no record teaches it.
    """
    if calib is None:
        return None
    machine_id = getattr(calib, "machine_id", None)
    runs = getattr(calib, "runs", ()) or ()
    taught = _taught_serving(runs, machine_id, acc.id, runtime, figure, forward)
    left = getattr(calib, "left_out", None)
    out = taught.by_hash.get(left) if left else None  # the record a plan against actual leaves out
    n = len(taught.found) - (1 if out is not None else 0)
    if n <= 0:
        return None
    total, wlk = taught.total_w - (out[0] if out else 0.0), taught.total_wlk - (out[0] * out[1] if out else 0.0)
    k = math.exp(wlk / total)
    heavy = [f for f in taught.heaviest if out is None or f[2] is not out[2]][:PAIR_RECORDS]
    # the pairs' width changes only where the record left out is among the heaviest: worked out once otherwise
    memo = (out[2].content_sha256 if out is not None and len(heavy) < len(taught.heaviest) else None, base_width_log)
    width = taught.widths.get(memo)
    if width is None:
        width = taught.widths[memo] = _width(_pair_errors(heavy, lambda lk: lk), base_width_log)
    here = taught.here - (1 if out is not None and machine_id and out[2].machine_id == machine_id else 0)
    if here <= 0:
        width = max(width, width_log)
    what = f"{SERVING_FIGURES[figure]} at x{k:.2f} the runtime's published speed"
    if out is None:
        used = taught.records
    else:  # the records but the one left out, copied as a slice
        i = taught.position[out[2].content_sha256]
        used = taught.records[:i] + taught.records[i + 1:]
    return Learned(k, _origin([(w, r) for w, _, r in heavy], machine_id, what, n), "learned", width, used)


@dataclass(frozen=True)
class _Taught:
    """What the records of one accelerator, runtime and figure teach, summed once (a listing plans each record
    with the others: each plan takes one record out of the sums, O(1), instead of solving them all again)."""

    runs: tuple
    found: tuple  # (weight, log factor, record)
    by_hash: dict
    total_w: float
    total_wlk: float
    heaviest: tuple  # found by weight, heaviest first (newest first among equals), for the pairs
    here: int  # records of this machine
    records: tuple = ()  # the records of ``found``, in its order
    position: dict = field(default_factory=dict)  # a record's hash -> its place in ``records``
    widths: dict = field(default_factory=dict, compare=False)  # (hash left out or None, base) -> the pairs' width


_TAUGHT_SETS: dict[tuple, _Taught] = {}


def _taught_serving(runs: tuple, machine_id: str | None, acc_id: str, runtime: str | None, figure: str,
                    forward) -> _Taught:
    key = (id(runs), machine_id, acc_id, runtime, figure)
    hit = _TAUGHT_SETS.get(key)
    if hit is not None and hit.runs is runs:
        return hit
    found = []
    for rec in runs:
        if (rec.simulated or rec.accelerator_id != acc_id or rec.workload != "inference"
                or not _software_matches(rec, runtime)):
            continue
        k = taught_value(rec, figure, forward, key=acc_id)
        if k is not None:
            found.append((_weight(rec, machine_id, 0.0, 0.0), math.log(k), rec))
    newest = sorted(found, key=lambda v: v[2].recorded_at, reverse=True)
    heaviest = tuple(sorted(newest, key=lambda v: -v[0])[:PAIR_RECORDS + 1])
    records = tuple(r for _, _, r in found)
    taught = _Taught(runs, tuple(found), {r.content_sha256: (w, lk, r) for w, lk, r in found},
                     sum(w for w, _, _ in found), sum(w * lk for w, lk, _ in found), heaviest,
                     sum(1 for _, _, r in found if machine_id and r.machine_id == machine_id), records,
                     {r.content_sha256: i for i, r in enumerate(records)})
    if len(_TAUGHT_SETS) > 64:
        _TAUGHT_SETS.clear()
    _TAUGHT_SETS[key] = taught
    return taught


SERVING_RUN_KINDS = ("vllm-bench", "sglang-bench", "guidellm")  # serving benchmarks at a stated concurrency


def taught_figure(rec: RunRecord, figure: str) -> float | None:
    """What a record measured of ``figure``: a llama-bench test's own figure, or for a serving benchmark run at
    a stated concurrency (``rec.batch``) its generated tokens/s (at an offered rate, which sets that, one over its
    time per output token p50) and its prompt tokens over its first token's p50, its load's (the forward model the
    planner passes plans that load: ``runs.load.record_forward``)."""
    value = getattr(rec.measured, figure)
    if value is not None or rec.kind not in SERVING_RUN_KINDS:
        return value
    m, at_rate = rec.measured, rec.request_rate is not None
    if figure == "decode_tokens_per_s" and at_rate:  # the rate sets its throughput: one request's decode instead
        return 1.0 / m.tpot_p50_s if m.tpot_p50_s else None
    if figure == "decode_tokens_per_s" and rec.batch:
        return m.tokens_per_s
    if figure == "prefill_tokens_per_s" and (rec.batch or at_rate) and rec.prompt_tokens and m.ttft_p50_s:
        return rec.prompt_tokens / m.ttft_p50_s  # its prompt over its first token's p50
    return None


MIN_UTILISATION = 1e-4  # the utilisations a training record is solved between: (MIN_UTILISATION, 1]


_TAUGHT: dict[tuple, float | None] = {}  # (record, figure, accelerator) -> what it teaches: solved once
TAUGHT_MAX = 8192


def taught_value(rec: RunRecord, figure: str, forward: Callable[[RunRecord], Forward | None],
                 key: str | None = None) -> float | None:
    """What one record teaches: for ``figure`` ``tokens_per_s`` of a training run its utilisation, for a serving
    figure (``SERVING_FIGURES``) the runtime's factor; the value at which ``forward`` (the plan of the record's own
    job) gives the measured figure back, or None when no value in range does (a run faster than the model allows,
    or one it cannot plan). ``key`` (the accelerator the forward model plans on) keeps the solve: a record teaches
    the same on every plan, so a listing of n records solves each once (O(n) solves, not O(n^2))."""
    memo = (rec.content_sha256, rec.measured, figure, key) if key is not None else None
    if memo is not None and memo in _TAUGHT:
        return _TAUGHT[memo]
    if figure == "tokens_per_s":
        value = _solved(forward, rec, rec.measured.tokens_per_s, MIN_UTILISATION, 1.0)
    else:
        value = _solved(forward, rec, taught_figure(rec, figure), 1.0 / MAX_SCALE, MAX_SCALE)
    if memo is not None:
        if len(_TAUGHT) >= TAUGHT_MAX:
            _TAUGHT.clear()
        _TAUGHT[memo] = value
    return value


def _solved(forward: Callable[[RunRecord], Forward | None] | None, rec: RunRecord, measured: float | None,
            lo: float, hi: float) -> float | None:
    """The value of a quantity at which the plan of ``rec``'s own job gives ``measured`` back, or None."""
    if forward is None or not measured:
        return None
    f = forward(rec)
    return None if f is None else solve_increasing(f, measured, lo, hi)


def records_matching(records: Iterable[RunRecord], accelerator_id: str) -> list[RunRecord]:
    """The records made on one accelerator (newest first)."""
    return sorted((r for r in records if r.accelerator_id == accelerator_id), key=lambda r: r.recorded_at,
                  reverse=True)
