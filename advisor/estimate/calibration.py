"""Calibration of the planner's figures on published measurements, with honest 80 % ranges.

Method (docs/method.md, "Calibration on published measurements"):

1. Every published figure of ``resources/measurements/`` (one CSV per group: pretraining, finetune_rate,
   finetune_memory, decode, prefill, serving, ttft) is planned with the project's own estimate; its raw
   prediction ``p`` and the measured value ``m`` give ``r = log(m / p)``.
2. The fitted efficiency of a group is ``exp(g)``, ``g = sum_s mean_s(r) / (S + 1)`` over its S *sources* (a
   source's rows share one code base, so a source with 60 rows counts once), shrunk towards the raw estimate by
   one source that agrees with it (``SHRINK_SOURCES``): a correction only one source asks for is halved.
   Classes nest (``llama.cpp``, ``llama.cpp/cuda``, ``llama.cpp/cuda/4bit``, ``llama.cpp/cuda/4bit/gddr``): each
   level is shrunk towards the level above it, the first towards ``g``; a level whose rows are all its parent's,
   or come from one source that measured fewer than ``MIN_SETUPS`` accelerator-and-model setups, takes its
   parent's factor (one configuration of one source is not evidence for a class). Within a group a *class*
   (the runtime, backend and weight-format bits of a decode; the framework of a training run) gets
   ``g + sum(r - g) / (n + K)`` over its n rows, shrunk towards the group by ``K = SHRINK_ROWS`` rows.
   The training speed groups share one fit (``POOLS``): pretraining and fine-tune rows of a framework set its
   factor together; a MoE class whose framework has no MoE level takes that framework's dense factor
   (``class_log_factor``).
3. Leave-one-source-out: each source's rows are predicted by the factors fitted on the other sources
   only. The 80 % half-width of a group is the split-conformal quantile of those absolute log residuals
   (the ``ceil((n+1) 0.8)``-th smallest, Vovk et al. 2005, Lei et al. 2018; ``utilisation._conformal_width``).
   Coverage is checked the same way: a row's interval is built from every other row's held-out residual
   (cross-conformal with the sources as folds, Barber et al. 2021; as ``utilisation.leave_one_study_out``).
   In a training group (``CLASS_WIDTH_GROUPS``) dense and MoE rows each get the width of their own held-out
   residuals (``width_class``), where the class has ``MIN_WIDTH_ROWS`` rows from two sources; a row's interval
   in the check is built from the other rows of its class.
4. A group with a single source cannot be left out source by source, so nothing fitted on it could be
   checked: its figures keep the raw estimate (factor 1), its width is the conformal quantile of the raw
   residuals, and the summary says so (``single_source``).
5. The time to first token under load is not proportional to any one efficiency: the queue in front of the
   prompts grows faster than the prefill slows (``estimate.serving_queue``). Its group (``SCALED``) fits the
   share of the runtime profile's compute efficiency a served step reaches instead: each row *implies* the
   log scale at which the serving model meets its figure (``implied_log_scale``), and those are fitted as the
   log ratios of the other groups are (step 2). Left out, a source's rows are planned again at the scale
   fitted on the others (``with_held_out``), so the check is of the figure itself, queue included.
6. A serving group (``SERVE_GROUPS``) applies its fitted factors only where leaving one source out shows they help
   (``applies``: more rows within the tolerance held out than raw); otherwise the planner shows the raw figure and
   the group's width is that of the raw residuals (``shown``), and the stored fit says which (``GroupFit.applied``).
   At one user (``UNSCALED_LOADS``) a served figure is the one request's, which no served load's factor moves.
   A served row's raw figure depends on the step costs fitted on the published per-token times
   (``estimate.step_cost``): its ``held_out`` is the figure planned at the constants fitted without its source, its
   residual held out and raw alike (``Observation.held_log_ratio``), so the width is of figures no fit on the row's
   own source has seen, and no served factor is fitted on top (it would be checked against the same residuals).

Everything here is pure: records in, numbers out. Planning a measurement is ``advisor.planner.measured``.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from advisor.estimate import reach as R
from advisor.estimate.utilisation import _conformal_width, _quantile, generation_of

GROUPS = ("pretraining", "finetune_rate", "finetune_memory", "decode", "prefill", "serving", "ttft", "tpot")
# What a group's figure is, for reports.
GROUP_FIGURES = {"pretraining": "training tokens/s per device", "finetune_rate": "fine-tune tokens/s per device",
                 "finetune_memory": "training peak memory per device", "decode": "decode tokens/s (one stream)",
                 "prefill": "prompt tokens/s", "serving": "output tokens/s of a served load",
                 "ttft": "time to first token under load", "tpot": "time per output token under load"}
# The groups planned as one replica of a server at the row's stated load (``estimate.serving_queue.serve_at``): its
# output tokens/s, first token and time per output token; the times are inverted so every factor multiplies a speed.
SERVE_GROUPS = ("serving", "ttft", "tpot")
# The load of a served figure, the first level of its class: users in a closed loop, or a Poisson arrival rate; one
# user alone (``one``) is the one request of the plan, its decode and prefill calibrated by their own groups, which no
# served load's factor rescales (``UNSCALED_LOADS``): serve at one user is the inference plan.
LOADS = ("users", "rate", "one")
# A served figure's model, the last level of its class (``efficiency_class``): its figures' errors differ in kind
# (a mixture of experts' routing, dispatch and many small expert kernels a step, which the step model does not
# count), so a served load's width is sized on each apart where each has its rows (``width_class``).
ARCHS = ("dense", "moe")
UNSCALED_LOADS = ("one",)
TIME_GROUPS = ("ttft", "tpot")
# The statistic a time is published as (a row's ``statistic`` column; the mean when empty).
# ``itl_p50``: the median interval between two tokens (a decode step with no prompt in it), not a request's mean.
STATISTICS = ("mean", "p50", "p95", "itl_p50")
# How a served load's requests arrived (a row's ``arrivals`` column): ``steady``, users or arrivals drifted apart
# (real traffic, AIPerf, MLPerf's Poisson server scenario); ``together``, equal requests started at once and kept in
# step (a static batch, LMDeploy's profile_generation, every request queued at once as trtllm-bench throughput).
ARRIVALS = ("steady", "together")
COVERAGE = 0.80
SHRINK_ROWS = 3.0
SHRINK_SOURCES = 1.0  # the group factor is shrunk towards the raw estimate by one source that agrees with it
MIN_SOURCES = 2  # a factor is fitted only where it can be checked on a source the fit has not seen
MIN_SETUPS = 4  # within one source, a class needs this many accelerator-and-model setups for a step of its own
# Groups whose first class level gets an interval width of its own (module docstring, step 3): a training speed's
# dense or MoE, whose errors differ in kind (the MoE dispatch is not modelled), so one width would be too narrow
# for the one and too wide for the other; a served load's users or arrival rate (``LOADS``), whose errors differ
# likewise (a closed loop of users slows down with the server, a fixed arrival rate near what the server serves
# turns a small error in its capacity into a large one in its latencies). The level needs MIN_WIDTH_ROWS rows from
# MIN_SOURCES sources. (Memory
# is not among them: a MoE's memory is modelled as a dense model's is, and its rows' errors are alike.)
CLASS_WIDTH_GROUPS = ("pretraining", "finetune_rate", "serving", "ttft", "tpot")
MIN_WIDTH_ROWS = 5
# Groups whose factors are fitted on one pool of rows (module docstring, step 2): a framework's efficiency on a
# dense model is one figure whether the run pretrains or fine-tunes (the same kernels; the estimate counts what
# differs: LoRA's 4 FLOPs a parameter, the frozen base, the optimizer step). Each group keeps its own widths and
# check; a source is left out of the pool whole (its pretraining and fine-tune rows together).
POOLS = {"pretraining": "training", "finetune_rate": "training"}
# Groups whose width grows with a job's distance from their rows (module docstring, step 6; ``estimate.reach``): the
# training speeds, fitted on one pool, so one slope is fitted on the pool's held-out errors relative to their width
# class's (a MoE row's errors are larger at any distance; the slope is how much more they grow with it).
REACH_GROUPS = ("pretraining", "finetune_rate")
# The distance (``estimate.reach``) below which a held-out row counts as near the other sources' rows in the check's
# coverage by reach (``GroupSummary.by_reach``): two and a half features' spread, which splits the training rows
# about in half.
NEAR_DISTANCE = 2.5
# A training row's published workload (``full`` fine-tuning) -> the planner's workload name.
TRAINING_WORKLOADS = {"pretrain": "pretrain", "full": "finetune", "lora": "lora", "qlora": "qlora"}
# Groups whose factor is an input of the model rather than a multiplier of its figure (module docstring, step 5):
# the time to first token, whose fitted factor scales the runtime's compute efficiencies in a served step.
SCALED: tuple[str, ...] = ()  # none since the serving groups are planned at their stated loads (step 5)
# The log scales an implied factor is sought between (a compute efficiency from e^-2.5 to e^1 of the profile's).
SCALE_BOUNDS = (-2.5, 1.0)
# The targets of issue 23: share within the tolerance, 80 % interval coverage, median interval width high/low.
TOLERANCE = {"finetune_memory": 0.15}
DEFAULT_TOLERANCE = 0.25
TARGET_WITHIN = 0.80
TARGET_COVERAGE = (0.75, 0.90)
TARGET_WIDTH = 2.0
# Units a measurement may be published in, to the SI unit of its group (tokens/s, seconds, bytes).
UNITS = {"tokens/s": 1.0, "tokens/s/device": 1.0, "ms": 1e-3, "s": 1.0, "bytes": 1.0, "GB": 1e9, "GiB": 2.0**30}
COLUMNS = ("row_id", "source_id", "source_title", "source_url", "source_date", "model", "params", "accelerator_id",
           "devices", "software", "backend", "weight_format", "quant", "precision", "workload", "batch",
           "prompt_tokens", "output_tokens", "seq_len", "parallelism", "checkpointing", "value", "unit", "notes",
           "excluded")  # and, optionally, "settings": job inputs the source states beyond these (name=value;...), and
# "statistic": what a time under load is (``STATISTICS``), and "arrivals" (``ARRIVALS``)


class MeasurementError(ValueError):
    """A measurement row that cannot be read (names the file, row and field)."""


@dataclass(frozen=True)
class Measurement:
    """One published figure with its setup and source (a row of ``resources/measurements/<group>.csv``).

    ``value`` is in the group's SI unit (tokens/s, seconds or bytes); ``published`` and ``unit`` are as printed.
    ``excluded`` is the reason a row is kept out of the fit (a run the source itself shows is broken), or "".
    """

    row_id: str
    group: str
    source_id: str
    source_title: str
    source_url: str
    source_date: str
    model: str
    params: float
    accelerator_id: str
    devices: int
    software: str
    backend: str
    weight_format: str
    quant: str
    precision: str
    workload: str
    batch: int
    prompt_tokens: int
    output_tokens: int
    seq_len: int
    parallelism: str
    checkpointing: str
    value: float
    published: float
    unit: str
    notes: str = ""
    excluded: str = ""
    settings: tuple[tuple[str, str], ...] = ()  # job inputs the source states beyond the columns (name, value)
    statistic: str = "mean"  # a time under load: its mean, median (p50) or 95th percentile (p95)
    arrivals: str = "steady"  # a served load's requests: drifted apart, or started together in step (ARRIVALS)

    def setting(self, name: str) -> str | None:
        """The value a ``settings`` pair gives ``name``, or None."""
        for key, value in self.settings:
            if key == name:
                return value
        return None


BACKEND_OF_VENDOR = {"NVIDIA": "cuda", "AMD": "rocm", "Apple": "metal", "Intel": "sycl"}


def bits_class(bits: float) -> str:
    """The bit class of a weight format of ``bits`` bits per weight: ``16``, ``8``, ``6`` (5 to 7) or ``4``."""
    if bits >= 12:
        return "16"
    if bits >= 7.5:
        return "8"
    if bits >= 4.9:
        return "6"
    return "4"


def format_bits(weight_format: str) -> str:
    """The bit class of a published weight format name (``F16``, ``Q4_K_M``, ``EXL2 4.0 bpw``, ``FP8``...)."""
    f = weight_format.lower()
    bpw = re.search(r"(\d+(?:\.\d+)?) ?bpw", f)
    if bpw:
        return bits_class(float(bpw.group(1)))
    if any(f.startswith(t) for t in ("q4", "q3", "q2", "iq", "nf4", "gptq", "awq", "int4", "mxfp4", "nvfp4")) \
            or "4-bit" in f:
        return "4"
    if any(t in f for t in ("q8", "fp8", "int8", "8-bit")):
        return "8"
    if any(t in f for t in ("q6", "q5")):
        return "6"
    return "16"


def memory_class(memory_type: str, kind: str = "") -> str:
    """``hbm``, ``unified`` (Apple's LPDDR) or ``gddr``: the memory a decode streams from. llama.cpp's kernels
    read GDDR cards near their peak and HBM parts well below it (XiongjieDai tables: A100 and H100 at 0.6-0.7 of
    what their bandwidth gives a GeForce card)."""
    t = (memory_type or "").upper()
    if t.startswith("HBM"):
        return "hbm"
    if kind == "apple" or t.startswith("LPDDR"):
        return "unified"
    return "gddr"


def efficiency_class(group: str, software: str, backend: str = "", bits: str = "", memory: str = "",
                     load: str = "users", arch: str = "") -> str:
    """The class a figure's efficiency is fitted in, and looked up in when planning: the runtime, backend,
    weight bits and memory kind of a decode or prefill; the load (``LOADS``), runtime, backend and model kind
    (``ARCHS``: dense or MoE, where known) of a served figure; the framework of a training run. ``software`` is
    the planner's runtime or framework name. Classes nest by ``/``: each level is shrunk towards the one above it
    (``fit_log_factors``)."""
    sw = software or "default"
    if group in ("decode", "prefill"):
        return f"{sw}/{backend or 'unknown'}/{bits or '16'}bit" + (f"/{memory}" if memory else "")
    if group in SERVE_GROUPS:
        return f"{load}/{sw}/{backend or 'unknown'}" + (f"/{arch}" if arch else "")
    return sw


def _levels(klass: str) -> list[str]:
    """``a/b/c`` -> ``["a", "a/b", "a/b/c"]``."""
    parts = klass.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]


def lookup(classes: Mapping[str, float], klass: str, default: float) -> float:
    """The log factor of the deepest fitted level of ``klass`` (``default`` when none is fitted)."""
    for level in reversed(_levels(klass)):
        if level in classes:
            return classes[level]
    return default


def _num(row: Mapping[str, str], key: str, where: str, *, default: float | None = None) -> float:
    text = (row.get(key) or "").strip()
    if not text:
        if default is None:
            raise MeasurementError(f"{where}: {key} is required")
        return default
    try:
        value = float(text)
    except ValueError:
        raise MeasurementError(f"{where}: {key} is not a number: {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise MeasurementError(f"{where}: {key} must be a finite number >= 0, got {text!r}")
    return value


def _settings(text: str, where: str) -> tuple[tuple[str, str], ...]:
    """``name=value;name=value`` (job input names, e.g. ``master_weights=bf16``) as pairs."""
    out = []
    for part in filter(None, (p.strip() for p in text.split(";"))):
        name, sep, value = part.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise MeasurementError(f"{where}: settings must be name=value pairs separated by ';', got {part!r}")
        out.append((name.strip(), value.strip()))
    return tuple(out)


def parse_measurements(text: str, group: str, where: str = "") -> tuple[Measurement, ...]:
    """Parse one group's CSV text.

    Raises:
        MeasurementError: an unknown group or unit, a missing or non-numeric field, a duplicate row id.
    """
    if group not in GROUPS:
        raise MeasurementError(f"unknown measurement group {group!r}; known: {', '.join(GROUPS)}")
    where = where or f"{group}.csv"
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or ())]
    if missing:
        raise MeasurementError(f"{where}: missing columns {', '.join(missing)}")
    out = []
    for i, row in enumerate(reader, start=2):
        at = f"{where} row {i}"
        unit = (row["unit"] or "").strip()
        if unit not in UNITS:
            raise MeasurementError(f"{at}: unit must be one of {', '.join(UNITS)}, not {unit!r}")
        published = _num(row, "value", at)
        if published <= 0:
            raise MeasurementError(f"{at}: value must be positive")
        for key in ("row_id", "source_id", "source_title", "source_url", "source_date", "model", "accelerator_id"):
            if not (row.get(key) or "").strip():
                raise MeasurementError(f"{at}: {key} is required")
        statistic = (row.get("statistic") or "").strip() or "mean"
        if statistic not in STATISTICS:
            raise MeasurementError(f"{at}: statistic must be one of {', '.join(STATISTICS)}, not {statistic!r}")
        arrivals = (row.get("arrivals") or "").strip() or "steady"
        if arrivals not in ARRIVALS:
            raise MeasurementError(f"{at}: arrivals must be one of {', '.join(ARRIVALS)}, not {arrivals!r}")
        out.append(Measurement(
            row_id=row["row_id"].strip(), group=group, source_id=row["source_id"].strip(),
            source_title=row["source_title"].strip(), source_url=row["source_url"].strip(),
            source_date=row["source_date"].strip(), model=row["model"].strip(), params=_num(row, "params", at, default=0),
            accelerator_id=row["accelerator_id"].strip(), devices=int(_num(row, "devices", at, default=1)) or 1,
            software=row["software"].strip(), backend=row["backend"].strip(), weight_format=row["weight_format"].strip(),
            quant=row["quant"].strip(), precision=row["precision"].strip(), workload=row["workload"].strip(),
            batch=int(_num(row, "batch", at, default=1)) or 1, prompt_tokens=int(_num(row, "prompt_tokens", at, default=0)),
            output_tokens=int(_num(row, "output_tokens", at, default=0)), seq_len=int(_num(row, "seq_len", at, default=0)),
            parallelism=row["parallelism"].strip(), checkpointing=row["checkpointing"].strip(),
            value=published * UNITS[unit], published=published, unit=unit, notes=(row.get("notes") or "").strip(),
            excluded=(row.get("excluded") or "").strip(), settings=_settings(row.get("settings") or "", at),
            statistic=statistic, arrivals=arrivals))
    ids = [m.row_id for m in out]
    if len(set(ids)) != len(ids):
        raise MeasurementError(f"{where}: duplicate row_id")
    return tuple(out)


def position_of(m: Measurement, klass: str) -> R.Position:
    """A training row's position (``estimate.reach.Position``): its count, size, sequence, layout and part from
    the row, its framework, precision and dense or MoE from the class it was planned in (``dense/megatron/fp8``)."""
    levels = klass.split("/")
    moe = levels[0] == "moe"
    framework = levels[1] if len(levels) > 1 else (klass or "default")
    precision = levels[2] if len(levels) > 2 else (m.precision or "bf16")
    workload = TRAINING_WORKLOADS.get(m.workload, "pretrain")
    return R.Position(m.devices, m.params, m.seq_len, R.parallel_degree(m.parallelism),
                      generation_of(m.accelerator_id) or 0, framework, R.model_family(m.model), moe, precision,
                      workload)


# ------------------------------------------------------------------ fitting
@dataclass(frozen=True)
class Observation:
    """A measurement's measured value and the project's raw prediction of it (same unit)."""

    row_id: str
    group: str
    source_id: str
    klass: str
    measured: float
    predicted: float
    setup: str = ""  # the accelerator and model measured (``rtx-4090/llama-3-8b``): independent setups within a source
    implied: float | None = None  # SCALED groups: the log scale at which the model meets the figure
    held_out: float | None = None  # SCALED groups: the prediction at the scale fitted without this source
    position: R.Position | None = None  # REACH_GROUPS: the row in the features of the fit (``position_of``)

    @property
    def log_ratio(self) -> float:
        """``log(measured / predicted)``; a time (ttft, tpot) is inverted so that every factor multiplies a speed."""
        return _log_speed_ratio(self.group, self.measured, self.predicted)

    @property
    def held_log_ratio(self) -> float:
        """``log_ratio`` against the prediction made without the row's source where there is one (``held_out``: a
        served row planned at the step costs fitted on the other sources, ``estimate.step_cost``)."""
        return _log_speed_ratio(self.group, self.measured, self.held_out if self.held_out is not None
                                else self.predicted)

    @property
    def fit_value(self) -> float:
        """What the fit averages: the implied log scale of a SCALED group's row, else ``log_ratio``."""
        return self.implied if self.implied is not None else self.log_ratio


def _log_speed_ratio(group: str, measured: float, predicted: float) -> float:
    r = math.log(measured / predicted)
    return -r if group in TIME_GROUPS else r


def implied_log_scale(at: Callable[[float], float], measured: float, bounds: tuple[float, float] = SCALE_BOUNDS
                      ) -> float:
    """The log scale ``t`` at which ``at(t)`` (a time falling as the scale rises) equals ``measured``: bisection
    on ``log(at(t) / measured)``, 40 halvings; held at a bound the figure lies beyond."""
    lo, hi = bounds
    if not at(lo) > measured:  # slower than the slowest scale gives: at the lower bound
        return lo
    if not at(hi) < measured:
        return hi
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        if at(mid) > measured:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def with_held_out(obs: Sequence[Observation], predict_at: Callable[[str, float], float | None]
                  ) -> list[Observation]:
    """A SCALED group's observations with ``held_out`` set: each row planned again (``predict_at(row_id, log
    scale)``) at the scale fitted on the other sources (the raw one for a group of one source)."""
    out = []
    fits: dict[tuple[str, str], tuple[float, dict[str, float]]] = {}
    for o in obs:
        if o.group not in SCALED:
            out.append(o)
            continue
        mine = [p for p in obs if p.group == o.group]
        if len({p.source_id for p in mine}) < MIN_SOURCES:
            t = 0.0
        else:
            key = (o.group, o.source_id)
            if key not in fits:
                fits[key] = fit_log_factors([p for p in mine if p.source_id != o.source_id])
            g, classes = fits[key]
            t = _predict_log(g, classes, o.klass)
        value = predict_at(o.row_id, t)
        out.append(replace(o, held_out=value if value is not None and value > 0 else o.predicted))
    return out


@dataclass(frozen=True)
class GroupFit:
    """A group's fitted efficiency (log factors) and the half-width of its 80 % interval in log space."""

    group: str
    log_factor: float
    class_log_factors: tuple[tuple[str, float], ...]
    half_width_log: float
    rows: int
    sources: int
    class_half_widths: tuple[tuple[str, float], ...] = ()  # width classes (``width_class``) with a width of their own
    reach_slope: float = 0.0  # REACH_GROUPS: b of the width ``w (1 + b d)`` at a distance d from the rows
    # False: the fitted factors are not applied (a serving group whose held-out figures were no closer than its raw
    # ones, ``applies``): the figure shown is the raw one, its width that of the raw residuals
    applied: bool = True

    def factor(self, klass: str | None = None) -> float:
        """The multiplicative efficiency of a class (the group's where the class was not fitted; 1 where the group's
        factors are not ``applied``); kept per class on the (frozen) fit, which a plan asks for every accelerator."""
        memo = self.__dict__.setdefault("_factors", {})
        hit = memo.get(klass)
        if hit is None:
            hit = memo[klass] = 1.0 if not self.applied else \
                math.exp(class_log_factor(dict(self.class_log_factors), klass, self.log_factor)
                         if klass else self.log_factor)
        return hit

    def width(self, klass: str | None = None, distance: float = 0.0) -> float:
        """The 80 % half-width in log space of a class's figures: its width class's own, else the group's, at the
        rows; at ``distance`` from them (``estimate.reach``) times ``1 + b d`` (``reach_slope``); for a class the fit
        has not seen (``seen``), widened by the spread between the classes it has seen (``unseen_spread``), the
        error of taking another class's factor: ``sqrt(w^2 + s^2)``."""
        w = self.class_width(width_class(self.group, klass)) if klass else self.half_width_log
        w *= R.widen(distance, self.reach_slope)
        if klass:
            if not self.seen(klass):
                return math.hypot(w, self.unseen_spread(klass))
        return w

    def class_width(self, name: str) -> float:
        """The 80 % half-width at the rows of a width class (``width_class``: ``moe``, ``users/dense``): its own
        where it has one; a served load and kind without rows enough, its load's; else the group's."""
        widths = dict(self.class_half_widths)
        while name:
            if name in widths:
                return widths[name]
            name = name.rpartition("/")[0]
        return self.half_width_log

    def seen(self, klass: str) -> bool:
        """Whether the fit has rows of this class's software (its level below the width class: a training run's
        framework, a served figure's runtime), or of the class itself where it has one level."""
        levels = _levels(klass)
        fitted = dict(self.class_log_factors)
        return (levels[1] if len(levels) > 1 else levels[0]) in fitted

    def unseen_spread(self, klass: str = "") -> float:
        """The standard deviation of the fitted factors of the software level (``seen``) around their mean, among
        the classes under the same first level as ``klass`` where it has two (a dense training run's frameworks,
        a served load's runtimes), else all: how far one runtime or framework's factor is from another's; 0 with
        fewer than two."""
        second = [(k, v) for k, v in self.class_log_factors if k.count("/") == 1]
        head = klass.split("/", 1)[0] + "/" if klass else ""
        mine = [v for k, v in second if head and k.startswith(head)]
        fitted = mine if len(mine) >= 2 else [v for _, v in second]
        if len(fitted) < 2:
            return 0.0
        mean = sum(fitted) / len(fitted)
        return math.sqrt(sum((v - mean) ** 2 for v in fitted) / (len(fitted) - 1))


def width_class(group: str, klass: str) -> str:
    """The class whose held-out residuals size a figure's interval: the first level of a training class (``dense``
    or ``moe``); a served figure's load and model kind (``users/moe``: the first and last levels) where its class
    names the kind, else its load; "" (the group's one width) for the others."""
    if group not in CLASS_WIDTH_GROUPS or not klass:
        return ""
    parts = klass.split("/")
    if group in SERVE_GROUPS and len(parts) > 1 and parts[-1] in ARCHS:
        return f"{parts[0]}/{parts[-1]}"
    return parts[0]


def _width_classes(obs: Sequence[Observation]) -> dict[str, list[int]]:
    """``{width class: row indices}`` of the classes with a width of their own (``MIN_WIDTH_ROWS`` rows from
    ``MIN_SOURCES`` sources)."""
    rows: dict[str, list[int]] = {}
    for i, o in enumerate(obs):
        name = width_class(o.group, o.klass)
        if name:
            rows.setdefault(name, []).append(i)
    return {name: idx for name, idx in rows.items()
            if len(idx) >= MIN_WIDTH_ROWS and len({obs[i].source_id for i in idx}) >= MIN_SOURCES}


def fit_log_factors(obs: Sequence[Observation]) -> tuple[float, dict[str, float]]:
    """``(g, {class: log factor})`` from observations of one group (module docstring, step 2). A served figure's
    loads (``LOADS``, the first level of its class) are fitted as groups of their own, each shrunk towards the
    raw estimate, not towards the other load's: a fixed arrival rate near capacity errs in kind, not in degree,
    from a closed loop of users (``CLASS_WIDTH_GROUPS``)."""
    if not obs:
        return 0.0, {}
    if obs[0].group in SERVE_GROUPS and all(o.group == obs[0].group for o in obs):
        g = _fit_levels([o for o in obs if o.klass.split("/", 1)[0] not in UNSCALED_LOADS])[0]
        classes: dict[str, float] = {}
        for load in sorted({o.klass.split("/", 1)[0] for o in obs}):
            if load in UNSCALED_LOADS:  # the one request's figure: no factor of the served loads (LOADS)
                classes[load] = 0.0
                continue
            g_load, sub = _fit_levels([o for o in obs if o.klass.split("/", 1)[0] == load])
            classes.update(sub)
            classes[load] = g_load if load not in sub or sub[load] == g_load else sub[load]
        return g, dict(sorted(classes.items()))
    return _fit_levels(obs)


def _fit_levels(obs: Sequence[Observation]) -> tuple[float, dict[str, float]]:
    """The source-mean group factor and the nested class factors of ``fit_log_factors``."""
    if not obs:
        return 0.0, {}
    by_source: dict[str, list[float]] = {}
    for o in obs:
        by_source.setdefault(o.source_id, []).append(o.fit_value)
    g = sum(sum(v) / len(v) for v in by_source.values()) / (len(by_source) + SHRINK_SOURCES)
    by_level: dict[str, list[float]] = {}
    sources_of: dict[str, set[str]] = {}
    setups_of: dict[str, set[tuple[str, str]]] = {}
    for o in obs:
        for level in _levels(o.klass):
            by_level.setdefault(level, []).append(o.fit_value)
            sources_of.setdefault(level, set()).add(o.source_id)
            setups_of.setdefault(level, set()).add((o.source_id, o.setup or o.row_id))
    classes: dict[str, float] = {}
    for level in sorted(by_level, key=lambda k: (k.count("/"), k)):  # parents first
        up = level.rpartition("/")[0] if "/" in level else ""
        parent = lookup(classes, up, g) if up else g
        v = by_level[level]
        if (up and len(v) == len(by_level[up])) or (len(sources_of[level]) < MIN_SOURCES
                                                     and len(setups_of[level]) < MIN_SETUPS):
            # the same rows as its parent, or one source that measured fewer than MIN_SETUPS accelerator-and-model
            # setups (one configuration, which another source could not check): no step of its own
            classes[level] = parent
            continue
        classes[level] = parent + sum(r - parent for r in v) / (len(v) + SHRINK_ROWS)
    return g, dict(sorted(classes.items()))


def _predict_log(g: float, classes: Mapping[str, float], klass: str) -> float:
    return class_log_factor(classes, klass, g)


def class_log_factor(classes: Mapping[str, float], klass: str, default: float) -> float:
    """The log factor a class is predicted with: ``lookup``, except that a MoE training class whose framework has
    no fitted MoE level takes its framework's dense factor (``dense/<framework>/<precision>``), not the MoE factor
    of other frameworks. The published MoE runs of two frameworks differ 1.4-2.6x on the same models and parts
    (NeMo Automodel against Megatron-Bridge), so the framework, not the mixture, is what carries over;
    docs/method.md, "No sequence term; dense or MoE before the framework"."""
    levels = _levels(klass)
    if levels[0] in UNSCALED_LOADS:  # one user: the one request's figure, which no served load's factor moves
        return 0.0
    if levels[0] == "moe" and len(levels) >= 2 and levels[1] not in classes:
        twin = "dense/" + klass.split("/", 1)[1]
        if any(level in classes for level in _levels(twin)[1:]):
            return lookup(classes, twin, default)
    return lookup(classes, klass, default)


@dataclass(frozen=True)
class HoldOut:
    """Held-out residuals of one group: ``log(measured / calibrated prediction)``, each without its source."""

    group: str
    row_ids: tuple[str, ...]
    source_ids: tuple[str, ...]
    log_residuals: tuple[float, ...]
    single_source: bool  # True: only one source, so rows were left out one at a time (a flattering check)
    distances: tuple[float, ...] = ()  # REACH_GROUPS: each row's distance to the other sources' rows (``reach``)


def applies(obs: Sequence[Observation], hold: HoldOut) -> bool:
    """Whether a group's fitted factors are applied at plan time: always, except in a serving group
    (``SERVE_GROUPS``), where they are applied only if leaving one source out shows they help: more of its figures
    within the tolerance held out than raw (the decision the stored fit carries, ``GroupFit.applied``)."""
    if hold.group not in SERVE_GROUPS or not obs or len(obs) != len(hold.log_residuals):
        return True
    tol = TOLERANCE.get(hold.group, DEFAULT_TOLERANCE)
    held = sum(_within(r, tol) for r in hold.log_residuals)
    raw = sum(_within(o.held_log_ratio, tol) for o in obs)
    return held > raw


def shown(obs: Sequence[Observation], hold: HoldOut) -> HoldOut:
    """The held-out residuals of the figure the planner shows: ``hold`` where the group's factors are applied
    (``applies``), else the raw residuals (nothing fitted stands between a row and its figure, so the raw residual
    is already held out)."""
    if applies(obs, hold):
        return hold
    return replace(hold, log_residuals=tuple(o.held_log_ratio for o in obs))


def pooled(group: str, obs: Iterable[Observation]) -> list[Observation]:
    """The rows of the other groups that ``group``'s factors are fitted with (``POOLS``); none for most groups."""
    pool = POOLS.get(group)
    return [o for o in obs if o.group != group and pool is not None and POOLS.get(o.group) == pool]


def leave_one_source_out(obs: Sequence[Observation], pool: Sequence[Observation] = ()) -> HoldOut:
    """Predict each source's rows with the factors fitted on the other sources (one group's observations).

    ``pool``: other groups' rows fitted with this group's (``pooled``), the held-out source's among them left out
    too. A group of one source keeps its raw estimates (module docstring, step 4): the residuals are the raw ones.
    A SCALED group's row planned again without its source (``with_held_out``) is compared as planned; one that
    was not is compared in log scale units (its implied scale against the fitted one)."""
    single = len({o.source_id for o in obs}) < MIN_SOURCES
    rows = [*obs, *pool]
    fits: dict[str, tuple[float, dict[str, float]]] = {}
    res = []
    for o in obs:
        if o.held_out is not None:
            res.append(_log_speed_ratio(o.group, o.measured, o.held_out))
            continue
        if single:
            res.append(o.log_ratio)
            continue
        if o.source_id not in fits:
            fits[o.source_id] = fit_log_factors([p for p in rows if p.source_id != o.source_id])
        g, classes = fits[o.source_id]
        res.append(o.fit_value - _predict_log(g, classes, o.klass))
    return HoldOut(obs[0].group if obs else "", tuple(o.row_id for o in obs), tuple(o.source_id for o in obs),
                   tuple(res), single, fold_distances(obs, pool))


def fold_distances(obs: Sequence[Observation], pool: Sequence[Observation] = ()) -> tuple[float, ...]:
    """Each row's distance (``estimate.reach``) to the rows of the other sources, its pool's among them: how far
    the fit that predicted it held out had to reach. Empty unless every row has a position."""
    rows = [*obs, *pool]
    if not obs or any(o.position is None for o in rows):
        return ()
    unit = R.scales([o.position for o in rows])
    return tuple(R.fold_distances([o.position for o in obs], [o.source_id for o in obs], unit,
                                  [o.position for o in pool], [o.source_id for o in pool]))


@dataclass(frozen=True)
class ReachPoint:
    """One held-out training row for the slope of the width (``fit_reach_slope``): its source, width class (its
    group's), distance from the other sources' rows and absolute held-out error over its width class's width."""

    source_id: str
    width_class: str
    distance: float
    relative_error: float


def reach_points(holds: Iterable[tuple[Sequence[Observation], HoldOut]]) -> list[ReachPoint]:
    """The held-out rows of the REACH_GROUPS as ``ReachPoint``s (a group without distances gives none)."""
    out = []
    for obs, hold in holds:
        if hold.group not in REACH_GROUPS or not hold.distances:
            continue
        classes = _width_classes(obs)
        of = {i: name for name, idx in classes.items() for i in idx}
        widths = {name: _conformal_width([abs(hold.log_residuals[i]) for i in idx]) for name, idx in classes.items()}
        whole = _conformal_width([abs(r) for r in hold.log_residuals])
        for i, (r, d) in enumerate(zip(hold.log_residuals, hold.distances)):
            name = of.get(i, "")
            w = widths.get(name, whole)
            if w > 0 and math.isfinite(d):
                out.append(ReachPoint(hold.source_ids[i], f"{hold.group}/{name}", d, abs(r) / w))
    return out


def fit_reach_slope(points: Sequence[ReachPoint], without: str = "") -> float:
    """``b`` of the width ``w (1 + b d)`` (``estimate.reach.reach_slope``) from the held-out rows, those of the
    source ``without`` left out (the check builds each source's width without it)."""
    mine = [p for p in points if p.source_id != without]
    return R.reach_slope([p.distance for p in mine], [p.relative_error for p in mine])


@dataclass(frozen=True)
class GroupSummary:
    """The check of one group against the targets (docs/method.md, "Calibration on published measurements")."""

    group: str
    rows: int
    sources: int
    tolerance: float
    within: float  # share of held-out predictions within the tolerance
    coverage: float  # share of rows inside the 80 % interval built without their source
    median_width: float  # median of high/low of those intervals
    single_source: bool
    raw_within: float  # the same share for the raw (uncalibrated) predictions
    # REACH_GROUPS: (rows, coverage) of the rows near the other sources' rows (distance < NEAR_DISTANCE) and far
    by_reach: tuple[tuple[str, int, float], ...] = ()

    @property
    def passes(self) -> dict[str, bool]:
        lo, hi = TARGET_COVERAGE
        return {"within": self.within >= TARGET_WITHIN, "coverage": lo <= self.coverage <= hi,
                "width": self.median_width < TARGET_WIDTH, "sources": not self.single_source}

    @property
    def ok(self) -> bool:
        return all(self.passes.values())


def summarise(obs: Sequence[Observation], hold: HoldOut, points: Sequence[ReachPoint] = (), *,
              grow: bool = True) -> GroupSummary:
    """Within-tolerance share, interval coverage and median width of one group's held-out residuals; with the
    REACH_GROUPS' ``points`` (``reach_points``), each row's width grows with its distance from the other sources'
    rows by the slope fitted without its source (``fit_reach_slope``), and the coverage is also given near the
    rows and far from them (``by_reach``). ``grow=False``: one width at every distance (the comparison)."""
    group = hold.group
    tol = TOLERANCE.get(group, DEFAULT_TOLERANCE)
    n = len(hold.log_residuals)
    if n == 0:
        return GroupSummary(group, 0, 0, tol, 0.0, 0.0, math.inf, True, 0.0)
    within = sum(_within(r, tol) for r in hold.log_residuals) / n
    covered, widths = 0, []
    peers = {i: set(idx) for idx in _width_classes(obs).values() for i in idx} if len(obs) == n else {}
    reach = bool(points) and len(hold.distances) == n
    slopes: dict[str, float] = {}
    strata: dict[str, list[bool]] = {"near": [], "far": []}
    for i, r in enumerate(hold.log_residuals):
        # every other row's held-out residual (its own source's rows were held out with it): the cross-conformal
        # rule of utilisation.leave_one_study_out, with sources as the folds (Barber et al. 2021, CV+); the other
        # rows of its width class where that class has a width of its own; with a reach, each residual over its
        # own widening and the quantile times this row's (locally weighted conformal, Lei et al. 2018)
        mine = peers.get(i)
        b = 0.0
        if reach:
            sid = hold.source_ids[i]
            b = slopes[sid] if sid in slopes else slopes.setdefault(sid, fit_reach_slope(points, sid) if grow else 0.0)
        d = hold.distances[i] if reach else 0.0
        others = [abs(v) / R.widen(hold.distances[j] if reach else 0.0, b) for j, v in enumerate(hold.log_residuals)
                  if j != i and (mine is None or j in mine)]
        w = _conformal_width(others) * R.widen(d, b) if others else math.inf
        covered += abs(r) <= w
        widths.append(math.exp(2.0 * w))
        if reach:
            strata["near" if d < NEAR_DISTANCE else "far"].append(abs(r) <= w)
    raw = sum(_within(o.log_ratio, tol) for o in obs) / len(obs)
    by_reach = tuple((k, len(v), sum(v) / len(v)) for k, v in strata.items() if v) if reach else ()
    return GroupSummary(group, n, len(set(hold.source_ids)), tol, within, covered / n, _quantile(widths, 0.5),
                        hold.single_source, raw, by_reach)


def _within(log_residual: float, tol: float) -> bool:
    """``|measured / predicted - 1| <= tol``."""
    return abs(math.exp(log_residual) - 1.0) <= tol + 1e-12


def fit_group(obs: Sequence[Observation], pool: Sequence[Observation] = (), slope: float = 0.0,
              hold: HoldOut | None = None) -> GroupFit:
    """The stored fit of one group: factors on all its rows and its ``pool`` (none for a single source), the width
    from the held-out residuals of its own rows, each over its widening ``1 + slope d`` at its distance from the
    other sources' rows (the width at the rows, ``GroupFit.width``)."""
    own = len({o.source_id for o in obs}) >= MIN_SOURCES
    g, classes = fit_log_factors([*obs, *pool]) if own else (0.0, {})
    if hold is None and obs:
        hold = leave_one_source_out(obs, pool)
    applied = True
    if hold is not None:
        applied = applies(obs, hold)
        hold = shown(obs, hold)  # the width of the figure shown: calibrated, or raw where the factors do not help
    scores = []
    if hold is not None:
        dist = hold.distances if len(hold.distances) == len(hold.log_residuals) else (0.0,) * len(hold.log_residuals)
        scores = [abs(r) / R.widen(d, slope) for r, d in zip(hold.log_residuals, dist)]
    width = _conformal_width(scores) if scores else 0.0
    class_widths = tuple((name, _conformal_width([scores[i] for i in idx]))
                         for name, idx in sorted(_width_classes(obs).items())) if scores else ()
    return GroupFit(obs[0].group if obs else "", g, tuple(classes.items()), width, len(obs),
                    len({o.source_id for o in obs}), class_widths, slope, applied)


def fit_all(obs: Iterable[Observation]) -> dict[str, GroupFit]:
    """One ``GroupFit`` per group present in ``obs``; the REACH_GROUPS share one slope of their widths
    (``fit_reach_slope`` on their held-out rows)."""
    by_group: dict[str, list[Observation]] = {}
    for o in obs:
        by_group.setdefault(o.group, []).append(o)
    every = [o for v in by_group.values() for o in v]
    holds = {g: leave_one_source_out(v, pooled(g, every)) for g, v in by_group.items()}
    slope = fit_reach_slope(reach_points((by_group[g], holds[g]) for g in REACH_GROUPS if g in by_group))
    return {g: fit_group(v, pooled(g, every), slope if g in REACH_GROUPS else 0.0, holds[g])
            for g, v in by_group.items()}


# ------------------------------------------------------------------ stored fit
def fits_to_csv(fits: Mapping[str, GroupFit]) -> str:
    """``group,class,log_factor,half_width_log,rows,sources,reach_slope`` text (``resources/calibration_fit.csv``);
    the row with an empty class is the group's own factor and width slope; a class row's width is that width
    class's own (at the rows: ``GroupFit.width``); a width class that is no factor's level (a served load and model
    kind, ``users/moe``) has a row of its width alone, its factor empty."""
    lines = ["group,class,log_factor,half_width_log,rows,sources,reach_slope,applied"]
    for g in GROUPS:
        f = fits.get(g)
        if f is None:
            continue
        lines.append(f"{g},,{f.log_factor!r},{f.half_width_log!r},{f.rows},{f.sources},{f.reach_slope!r},"
                     f"{int(f.applied)}")
        widths = dict(f.class_half_widths)
        lines += [f"{g},{k},{v!r},{widths[k]!r},,,," if k in widths else f"{g},{k},{v!r},,,,," for k, v in f.class_log_factors]
        factors = dict(f.class_log_factors)
        lines += [f"{g},{k},,{w!r},,,," for k, w in f.class_half_widths if k not in factors]
    return "\n".join(lines) + "\n"


def fits_from_csv(text: str) -> dict[str, GroupFit]:
    """Read ``fits_to_csv`` output back.

    Raises:
        MeasurementError: an unknown group, a value that is not finite, a class before its group row.
    """
    heads: dict[str, tuple[float, float, int, int, float, bool]] = {}
    classes: dict[str, list[tuple[str, float]]] = {}
    widths: dict[str, list[tuple[str, float]]] = {}
    for i, row in enumerate(csv.DictReader(io.StringIO(text)), start=2):
        g = (row.get("group") or "").strip()
        if g not in GROUPS:
            raise MeasurementError(f"calibration fit row {i}: unknown group {g!r}")
        k = (row.get("class") or "").strip()
        width_only = bool(k) and not (row.get("log_factor") or "").strip()  # a width class that is no factor's
        try:
            lf = math.nan if width_only else float(row["log_factor"])
        except (TypeError, ValueError):
            raise MeasurementError(f"calibration fit row {i}: log_factor is not a number") from None
        if not width_only and not math.isfinite(lf):
            raise MeasurementError(f"calibration fit row {i}: log_factor is not finite")
        if k:
            if g not in heads:
                raise MeasurementError(f"calibration fit row {i}: class {k!r} before its group row")
            if not width_only:
                classes.setdefault(g, []).append((k, lf))
            cw = _num(row, "half_width_log", f"calibration fit row {i}", default=math.nan)  # empty: no width
            if width_only and math.isnan(cw):
                raise MeasurementError(f"calibration fit row {i}: class {k!r} has neither a factor nor a width")
            if not math.isnan(cw):
                widths.setdefault(g, []).append((k, cw))
            continue
        w = float(row["half_width_log"])
        if not math.isfinite(w) or w < 0:
            raise MeasurementError(f"calibration fit row {i}: half_width_log must be finite and >= 0")
        slope = _num(row, "reach_slope", f"calibration fit row {i}", default=0.0)  # absent in older files: 0
        applied = (row.get("applied") or "1").strip()  # absent in older files: applied
        if applied not in ("0", "1"):
            raise MeasurementError(f"calibration fit row {i}: applied must be 0 or 1, not {applied!r}")
        heads[g] = (lf, w, int(row["rows"]), int(row["sources"]), slope, applied == "1")
    return {g: GroupFit(g, lf, tuple(classes.get(g, ())), w, n, s, tuple(widths.get(g, ())), b, a)
            for g, (lf, w, n, s, b, a) in heads.items()}


def interval(value: float, fit: GroupFit | None, *, inverse: bool = False) -> tuple[float, float] | None:
    """The 80 % interval ``[value / e^w, value * e^w]`` of a figure of a fitted group (None without a fit).

    The interval is symmetric in log space, so it serves speeds, times (``inverse`` only documents it) and
    bytes alike."""
    del inverse
    if fit is None or not math.isfinite(value):
        return None
    f = math.exp(fit.half_width_log)
    return value / f, value * f
