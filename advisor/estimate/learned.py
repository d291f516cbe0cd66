"""What the user's own measurements teach the planner: efficiencies and their ranges (pure, no I/O).

Two kinds of evidence, one path (docs/method.md, "Learning from your runs"):

* **Run records** (``advisor.estimate.run_record.RunRecord``) of real jobs: a training run gives its model-FLOPs
  utilisation ``u = tokens/s * (f_w*P + f_a*6*L*s*h) * r / (N * peak)`` (the FLOPs ``utilisation.training_time``
  counts), a decode benchmark its bandwidth efficiency ``eta = tokens/s * weight_bytes / (N * BW)`` (the batch-1
  roofline, ``compute.decode_estimate``). Utilisation and bandwidth efficiency transfer to another size of
  model on the same accelerator and software; raw tokens/s does not, so a record is never copied as a speed.
  Training utilisation is moved to the target's size by the fitted model's own slope
  (``exp(b_p * dlog10 P)``, ``utilisation.FEATURES``); a decode efficiency by the published
  ratio of the two weight formats' efficiencies on the runtime (``resources/runtimes.toml``).
* **The training-step probe and the device-bandwidth probe** (``advisor.store.calibration``): a measured MFU of
  a small transformer and a read-bandwidth efficiency, used where no run record matches.

Several matching records are combined by a weighted geometric mean: weight ``m / (1 + |dlog10 P| + |dlog2 s|/2)``,
``m`` = 1 on this machine and ``OTHER_MACHINE_WEIGHT`` on another with the same accelerator. The 80 % range
follows how well such transfers held on the user's own records: every ordered pair of matching records
predicts one from the other (among the ``PAIR_RECORDS`` that weigh most for the target, so that a plan
costs O(n) in the records); with at least ``MIN_PAIRS`` pairs the half-width is their split-conformal 80 %
quantile (Vovk et al. 2005; floor ``MIN_WIDTH_LOG``), with fewer it is the larger of the fitted model's
within-study width and the worst pair. Records only from other machines keep at least the fitted model's
full width.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

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


def _origin(used: list[tuple[float, RunRecord]], machine_id: str | None, what: str) -> str:
    rec = min(used, key=lambda wr: -wr[0])[1]  # the first of the heaviest (as a stable sort's first)
    where = "" if machine_id and rec.machine_id == machine_id else ", on another machine with the same accelerator"
    more = f" and {len(used) - 1} more" if len(used) > 1 else ""
    return f"from your run of {rec.date} ({rec.file_name}){where}{more}: {what}"


def training_utilisation(calib, *, acc, workload: str, precision: str, software: str | None, active_params: float,
                         seq_len: int, model: U.UtilisationModel) -> Learned | None:
    """The utilisation of a training job on ``acc`` taught by the user's runs, else by the training-step probe.

    Args:
        calib: the planner's calibration (``advisor.store.calibration.Calibration``) or None; its ``runs`` are
            the run records, ``machine_id`` this machine's fingerprint id, ``mfu`` the probe's figure.
        acc: the target ``catalog.Accelerator``; workload, precision, software: the plan's.
        active_params, seq_len: the planned model and length (the transfer's target).
        model: the fitted utilisation model (its slopes move a record to the target size).
    Returns:
        ``Learned`` or None when nothing measured applies.
    """
    if calib is None:
        return None
    machine_id = getattr(calib, "machine_id", None)
    rate = acc.peak_precision(precision)
    found: list[tuple[float, float, RunRecord]] = []  # (weight, log utilisation at the target, record)
    usable: list[tuple[float, RunRecord]] = []  # (utilisation, record), for the transfer errors
    for rec in getattr(calib, "runs", ()) or ():
        if (rec.simulated or rec.accelerator_id != acc.id or not rec.training or _family(rec.workload) != _family(workload)
                or not _software_matches(rec, software) or acc.peak_precision(rec.precision or "bf16") != rate):
            continue
        u = record_utilisation(rec, acc.peak_flops(rec.precision or "bf16"))
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


def record_bandwidth_efficiency(rec: RunRecord, mem_bandwidth_bps: float | None) -> float | None:
    """The read-bandwidth efficiency a decode benchmark achieved: ``tg tokens/s * weight_bytes / (N * BW)``
    (batch 1, short context: the weights dominate the bytes read), or None."""
    tg = rec.measured.decode_tokens_per_s
    if rec.workload != "inference" or not tg or not rec.weight_bytes or not mem_bandwidth_bps:
        return None
    eta = tg * rec.weight_bytes / (rec.devices * mem_bandwidth_bps)
    return eta if EFFICIENCY_FLOOR <= eta <= 1.0 else None


def decode_bandwidth_efficiency(calib, *, acc, runtime: str | None, weight_format: str,
                                format_eta: Callable[[str], float], width_log: float,
                                base_width_log: float) -> Learned | None:
    """The bandwidth efficiency of a decode on ``acc`` taught by the user's decode benchmarks (moved to the
    target's weight format by the runtime's ratio of the two formats' efficiencies), else by the
    device-bandwidth probe (which replaces the runtime's 16-bit figure, the format keeping its ratio to it).

    Args:
        calib: as for ``training_utilisation``; its ``eta_mem`` is the probe's figure.
        runtime, weight_format: the plan's runtime id and weight format id (``resources/runtimes.toml``).
        format_eta: a weight format id -> the runtime's published efficiency for it on this backend (a format
            it does not know reads at its 16-bit figure).
        width_log: the half-width the planner would use without records (the documented decode range);
            base_width_log: the half-width of one record on this machine (the probe-calibrated width).
    """
    if calib is None:
        return None
    machine_id = getattr(calib, "machine_id", None)
    format_eta = functools.lru_cache(maxsize=None)(format_eta)  # a few formats, asked once a record
    found, usable = [], []
    for rec in getattr(calib, "runs", ()) or ():
        if rec.accelerator_id != acc.id:
            continue
        eta, fmt = _decode_facts(rec, acc.mem_bandwidth_bps)
        if eta is None or not _software_matches(rec, runtime):
            continue
        ratio = format_eta(weight_format) / format_eta(fmt)
        usable.append((eta, fmt, rec))
        w = _weight(rec, machine_id, 0.0, 0.0)  # bandwidth efficiency does not depend on the model's size
        found.append((w * (1.0 if fmt == weight_format else 0.5), math.log(eta * ratio), rec))
    if found:
        total = sum(w for w, _, _ in found)
        eta = min(1.0, max(EFFICIENCY_FLOOR, math.exp(sum(w * le for w, le, _ in found) / total)))
        # record j predicted from record i: log ej - log(ei * format_eta(fj) / format_eta(fi))
        errors = _pair_errors([(w, (ei, fi), ri) for (w, _, _), (ei, fi, ri) in zip(found, usable)],
                              lambda v: math.log(v[0]) - math.log(format_eta(v[1])))
        width = _width(errors, base_width_log)
        if not any(machine_id and r.machine_id == machine_id for _, _, r in found):
            width = max(width, width_log)
        what = f"bandwidth efficiency {eta:.2f}"
        return Learned(eta, _origin([(w, r) for w, _, r in found], machine_id, what), "learned", width,
                       tuple(r for _, _, r in found))
    measured = getattr(calib, "eta_mem", None)
    if measured and measured >= EFFICIENCY_FLOOR and calib.applies_to(acc.id):
        eta, note = decode.measured_eta(format_eta(weight_format), format_eta("f16"), measured)
        return Learned(eta, note, "calibrated", base_width_log)
    return None


_FACTS: dict[tuple[int, float], tuple] = {}  # (id(record), bandwidth) -> (record, eta, format)


def _decode_facts(rec: RunRecord, mem_bandwidth_bps: float) -> tuple[float | None, str]:
    """``(eta, weight format)`` of a decode record usable for learning (eta None when it is not), worked out
    once per record and bandwidth: a listing plans every stored record against all the others, so this is
    asked n^2 times (the record is kept with its figures, so its id cannot be reused while cached)."""
    key = (id(rec), mem_bandwidth_bps)
    hit = _FACTS.get(key)
    if hit is not None and hit[0] is rec:
        return hit[1], hit[2]
    eta = None if rec.simulated or rec.workload != "inference" else record_bandwidth_efficiency(rec, mem_bandwidth_bps)
    fmt = _record_format(rec)
    if len(_FACTS) > 100_000:
        _FACTS.clear()
    _FACTS[key] = (rec, eta, fmt)
    return eta, fmt


def _record_format(rec: RunRecord) -> str:
    """The weight format id of a record: its quantisation (``q4_k_m``), else ``f16`` for a 16-bit run, ``fp8``
    or ``int8`` for those (the ids of ``resources/runtimes.toml``; a caller's ``format_eta`` reads an id it does
    not know at the 16-bit figure)."""
    if rec.quant:
        return rec.quant.lower()
    return {"fp8": "fp8", "int8": "int8"}.get((rec.precision or "").lower(), "f16")


def records_matching(records: Iterable[RunRecord], accelerator_id: str) -> list[RunRecord]:
    """The records made on one accelerator (newest first)."""
    return sorted((r for r in records if r.accelerator_id == accelerator_id), key=lambda r: r.recorded_at,
                  reverse=True)
