"""A small, explainable utilisation model fitted on documented training runs, with 80 % intervals.

Method (docs/method.md, "Utilisation fitted on documented runs"):

1. Each run's published figure becomes a model-FLOPs utilisation ``MFU = 6 * P_act * tokens/s / peak``
   (``observed_mfu``); published GPU-hours give an *effective* MFU that includes lost time (goodput).
2. Runs with full activation recomputation did 8PD of work for 6PD of model FLOPs; their MFU is multiplied
   by 8/6 so the fitted figure is the clean-step utilisation the planner divides by its own recompute factor.
3. ``log(u) = b0 + b_gen + b_p * log10(P_act / 1e10) + b_g * [published total]``
   fitted by ridge regression (penalties in ``PENALTIES``); ``exp(b_g)`` is the goodput of published totals.
4. Leave-one-out residuals give the error figures and an 80 % interval: the 80th percentile of the absolute
   log residuals by the split-conformal rule, ``[u / e^w, u * e^w]``. A machine calibrated by the training-step probe gets the spread
   left within one study (same cluster and code, other sizes), which is narrower.

Everything here is pure: records in, numbers out.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from advisor.estimate.compute import exposed_host_seconds, flops_per_token, recompute_factor

FEATURES = ("intercept", "gen_2018", "gen_2022", "gen_2024", "log10_params_per_1e10", "published_total")
# Ridge penalties per feature (0 = free). A generation offset is shrunk by half a run's weight: a generation seen
# in one run is fitted to two thirds of that run's residual, not to all of it (docs/method.md, "Utilisation fitted on documented runs").
PENALTIES = (0.0, 0.5, 0.5, 0.5, 0.2, 0.5)
COVERAGE = 0.80
FITTED_TARGETS = ("gpu_hours", "tokens_per_s", "mfu", "tflops_megatron")

_GENERATION_PREFIXES = (
    (2024, ("b200", "b100", "gb200", "rtx-50", "rtx-pro-6000-blackwell", "tpu-v6", "trainium3", "arc-b", "m4-")),
    (2022, ("h100", "h200", "gh200", "h800", "h20", "mi300", "mi325", "tpu-v5", "l40", "l20", "rtx-40", "rtx-6000-ada",
            "gaudi3", "trainium2", "inferentia2", "rx-7900", "l4", "arc-a", "m2-", "m3-")),
    (2020, ("a100", "a800", "a10", "a30", "a40", "mi250", "tpu-v4", "rtx-30", "rtx-a6000", "rtx-a4000", "rtx-a5000",
            "gaudi2", "trainium1", "m1-")),
    (2018, ("v100", "t4", "tpu-v3", "p100", "rtx-20", "titan-rtx")),
)


def generation_of(accelerator_id: str) -> int | None:
    """Generation class of an accelerator id (2018, 2020, 2022, 2024), or None when unknown."""
    for year, prefixes in _GENERATION_PREFIXES:
        if any(accelerator_id.startswith(p) for p in prefixes):
            return year
    return None


def megatron_tokens_per_s(tflops_per_device: float, layers: int, hidden: int, seq_len: int, vocab: int) -> float:
    """Tokens/s per GPU from Megatron-LM's hardware TFLOP/s.

    Narayanan et al. 2021, eq. (3): an iteration of batch B costs ``96*B*s*l*h^2*(1 + s/(6h) + V/(16*l*h))``
    FLOPs (full recomputation included), so one token costs ``96*l*h^2*(1 + s/(6h) + V/(16*l*h))``.
    """
    per_token = 96.0 * layers * hidden**2 * (1.0 + seq_len / (6.0 * hidden) + vocab / (16.0 * layers * hidden))
    return tflops_per_device * 1e12 / per_token


def observed_mfu(run, peak_flops: float | None) -> float | None:
    """The model-FLOPs utilisation (6 * P_act per token) a run's published figure implies.

    Args:
        run: an ``advisor.catalog.training_runs.TrainingRun``.
        peak_flops: dense peak FLOP/s of one device at the run's precision (needed except for ``mfu`` targets).
    Returns:
        MFU as a fraction, or None when the run has no fitted target or the peak is unknown. For published
        GPU-hours it is the effective MFU over the whole run, restarts and evaluation included.
    """
    if run.target == "mfu":
        return run.mfu
    if run.target not in FITTED_TARGETS or not peak_flops:
        return None
    if run.target == "gpu_hours":
        return 6.0 * run.active_params * run.tokens / (run.gpu_hours * 3600.0 * peak_flops)
    if run.target == "tokens_per_s":
        tps = run.tokens_per_s_per_device
    else:
        tps = megatron_tokens_per_s(run.tflops_per_device, run.layers, run.hidden, run.seq_len, run.vocab)
    return 6.0 * run.active_params * tps / peak_flops


def clean_utilisation(mfu: float, recompute: str, *, active_params: float, layers: int, hidden: int,
                      seq_len: int, mfu_convention: str = "6nd") -> float:
    """The utilisation the model fits: attention FLOPs counted, the recomputation penalty removed.

    ``u = MFU * (1 + 6*L*s*h / (6*P_act)) * (8/6 if full recomputation)``: causal attention adds about
    ``6*L*s*h`` FLOPs per token (docs/method.md), and a fully recomputed run did 8/6 of its model FLOPs.
    An MFU published with PaLM's convention already counts ``12*L*h*s`` attention FLOPs per token
    (Chowdhery et al. 2022, appendix B); it is rescaled to the ``6*L*s*h`` used here.
    The planner then divides by ``(6*P_act + 6*L*s*h)`` and its own recompute factor.
    """
    ratio = layers * seq_len * hidden / active_params
    attention = (1.0 + ratio) / (1.0 + 2.0 * ratio) if mfu_convention == "palm" else 1.0 + ratio
    return mfu * attention * recompute_factor(recompute)


def features(generation: int, active_params: float, seq_len: int, published_total: bool) -> tuple[float, ...]:
    """The feature vector of ``FEATURES`` (generation 2020 is the reference class).

    The sequence length has no term of its own: its attention FLOPs are counted in the work (``6*L*s*h`` a token,
    ``clean_utilisation``), and the published runs at 8,192 tokens reach the utilisation of those at 2,048 once
    they are (docs/method.md, "No sequence term; dense or MoE before the framework"). ``seq_len`` is accepted so
    callers need not know that."""
    del seq_len
    return (1.0, float(generation == 2018), float(generation == 2022), float(generation >= 2024),
            math.log10(active_params / 1e10), float(published_total))


@dataclass(frozen=True)
class Observation:
    """One fitted point: the run, its features and its clean-step (or effective) utilisation."""

    run_id: str
    group: str
    x: tuple[float, ...]
    utilisation: float


def observations(runs: Iterable, peak_of: Callable[[str, str], float | None]) -> list[Observation]:
    """The runs that carry a fitted target, as observations.

    Args:
        runs: ``TrainingRun`` records.
        peak_of: ``(accelerator_id, precision) -> dense peak FLOP/s`` or None (usually from the catalog).
    """
    out = []
    for run in runs:
        mfu = observed_mfu(run, peak_of(run.accelerator_id, run.precision))
        if mfu is None:
            continue
        out.append(Observation(run.run_id, run.group,
                               features(run.generation, run.active_params, run.seq_len, run.target == "gpu_hours"),
                               clean_utilisation(mfu, run.recompute, active_params=run.active_params,
                                                 layers=run.layers, hidden=run.hidden, seq_len=run.seq_len,
                                                 mfu_convention=run.mfu_convention or "6nd")))
    return out


def _solve(a: list[list[float]], b: list[float]) -> list[float]:
    """Gaussian elimination with partial pivoting for the small normal equations."""
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(m[r][col]))
        m[col], m[pivot] = m[pivot], m[col]
        if abs(m[col][col]) < 1e-15:
            raise ValueError("singular system")
        for r in range(n):
            if r != col:
                f = m[r][col] / m[col][col]
                for c in range(col, n + 1):
                    m[r][c] -= f * m[col][c]
    return [m[i][n] / m[i][i] for i in range(n)]


def ridge(obs: Sequence[Observation], penalties: Sequence[float] = PENALTIES) -> tuple[float, ...]:
    """Ridge least squares of ``log(utilisation)`` on the features: ``(X'X + diag(penalties)) b = X'y``."""
    k = len(FEATURES)
    a = [[sum(o.x[i] * o.x[j] for o in obs) + (penalties[i] if i == j else 0.0) for j in range(k)] for i in range(k)]
    b = [sum(o.x[i] * math.log(o.utilisation) for o in obs) for i in range(k)]
    return tuple(_solve(a, b))


def _predict_log(coef: Sequence[float], x: Sequence[float]) -> float:
    return sum(c * v for c, v in zip(coef, x))


def _conformal_width(abs_residuals: Sequence[float], q: float = COVERAGE) -> float:
    """Half-width that covers a new run with probability at least ``q``: the ``ceil((n+1)q)``-th smallest
    absolute residual of n (split-conformal rule; Vovk et al. 2005, Lei et al. 2018)."""
    s = sorted(abs_residuals)
    k = min(len(s), math.ceil((len(s) + 1) * q))
    return s[k - 1]


def _quantile(values: Sequence[float], q: float) -> float:
    """Empirical quantile with linear interpolation (type 7)."""
    s = sorted(values)
    pos = q * (len(s) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


@dataclass(frozen=True)
class LooResult:
    """Leave-one-out figures of the fit (error factor = max(pred/obs, obs/pred))."""

    run_ids: tuple[str, ...]
    log_residuals: tuple[float, ...]  # log(obs / pred), each predicted without its own run
    median_error_factor: float
    share_within_25pct: float
    interval_coverage: float  # share of runs inside the 80 % interval built without them


def leave_one_out(obs: Sequence[Observation], penalties: Sequence[float] = PENALTIES) -> LooResult:
    """Refit without each run in turn and predict it; the interval for run i uses the other runs' residuals."""
    res = []
    for i, o in enumerate(obs):
        coef = ridge([p for j, p in enumerate(obs) if j != i], penalties)
        res.append(math.log(o.utilisation) - _predict_log(coef, o.x))
    factors = [math.exp(abs(r)) for r in res]
    covered = 0
    for i, r in enumerate(res):
        width = _conformal_width([abs(v) for j, v in enumerate(res) if j != i])
        covered += abs(r) <= width
    return LooResult(tuple(o.run_id for o in obs), tuple(res), _quantile(factors, 0.5),
                     sum(f <= 1.25 for f in factors) / len(factors), covered / len(res))


def leave_one_study_out(obs: Sequence[Observation], penalties: Sequence[float] = PENALTIES) -> LooResult:
    """The stricter check: refit without the whole study (``group``) of each run, then predict the run.

    Runs of one study share a cluster and a code base, so leave-one-out can lean on a run's siblings;
    leaving the study out measures how the model does on a new cluster. Intervals use the same widths
    as ``leave_one_out`` (conformal over the other runs' study-out residuals).
    """
    res = []
    for o in obs:
        coef = ridge([p for p in obs if p.group != o.group], penalties)
        res.append(math.log(o.utilisation) - _predict_log(coef, o.x))
    factors = [math.exp(abs(r)) for r in res]
    covered = sum(abs(r) <= _conformal_width([abs(v) for j, v in enumerate(res) if j != i]) for i, r in enumerate(res))
    return LooResult(tuple(o.run_id for o in obs), tuple(res), _quantile(factors, 0.5),
                     sum(f <= 1.25 for f in factors) / len(factors), covered / len(res))


@dataclass(frozen=True)
class UtilisationModel:
    """Fitted coefficients (per ``FEATURES``) and the half-widths of the 80 % interval in log space."""

    coefficients: tuple[float, ...]
    half_width_log: float  # uncalibrated: conformal 80 % width of |leave-one-out log residual|
    half_width_calibrated_log: float  # calibrated machine: within-study spread
    runs: int
    wall_time_low: float = 1.0  # the lowest published total over the clean-step rate (``wall_time_ratios``)

    @property
    def goodput(self) -> float:
        """Fraction of a published total that is clean training time (exp of the published-total term)."""
        return math.exp(self.coefficients[FEATURES.index("published_total")])


def _within_study_half_width(obs: Sequence[Observation], coef: Sequence[float]) -> float:
    """Conformal 80 % width of in-sample residuals centred on their study's mean (studies with 3 or more runs)."""
    groups: dict[str, list[float]] = {}
    for o in obs:
        groups.setdefault(o.group, []).append(math.log(o.utilisation) - _predict_log(coef, o.x))
    centred = [r - sum(rs) / len(rs) for rs in groups.values() if len(rs) >= 3 for r in rs]
    return _conformal_width([abs(r) for r in centred])


def wall_time_ratios(obs: Sequence[Observation], penalties: Sequence[float] = PENALTIES
                     ) -> list[tuple[str, float]]:
    """``(run id, ratio)`` of each published total (GPU-hours, restarts and evaluation in them): its effective
    utilisation over the clean-step utilisation the model fitted on the *clean* runs of the other studies predicts
    for it (the published-total term held at 0). A ratio below 1 is the share of the wall time that trained."""
    gi = FEATURES.index("published_total")
    clean = [o for o in obs if not o.x[gi]]
    out = []
    for o in obs:
        if not o.x[gi]:
            continue
        mine = [p for p in clean if p.group != o.group]
        if len(mine) < len(FEATURES):
            continue
        x = tuple(0.0 if i == gi else v for i, v in enumerate(o.x))
        out.append((o.run_id, o.utilisation / math.exp(_predict_log(ridge(mine, penalties), x))))
    return out


def wall_time_low(ratios: Sequence[float]) -> float:
    """The lowest ratio of ``wall_time_ratios`` (1 at most; 1 without any): of n published totals, a new run's ratio
    lies below the lowest with probability ``1 / (n + 1)`` (the conformal rank rule), so a wall time up to
    ``1 / low`` times the clean time is the upper side of its range (one-sided ``n / (n + 1)``: 6/7 with six)."""
    return min(1.0, min(ratios, default=1.0))


def fit_utilisation(obs: Sequence[Observation], penalties: Sequence[float] = PENALTIES) -> UtilisationModel:
    """Fit the model and its interval widths on all observations."""
    coef = ridge(obs, penalties)
    loo = leave_one_out(obs, penalties)
    return UtilisationModel(coef, _conformal_width([abs(r) for r in loo.log_residuals]),
                            _within_study_half_width(obs, coef), len(obs),
                            wall_time_low([r for _, r in wall_time_ratios(obs, penalties)]))


@dataclass(frozen=True)
class UtilisationEstimate:
    """A predicted clean-step MFU with its 80 % interval and the factor each term contributes."""

    mfu: float
    low: float
    high: float
    terms: tuple[tuple[str, float], ...]  # (feature, multiplicative factor) for features that act
    origin: str


def predict_utilisation(model: UtilisationModel, *, generation: int, active_params: float, seq_len: int,
                        published_total: bool = False) -> UtilisationEstimate:
    """The fitted clean-step MFU (or effective MFU of a published total) for a run.

    Args:
        generation: ``generation_of(accelerator_id)``.
        active_params: parameters active per token.
        seq_len: training sequence length.
        published_total: include the goodput factor (compare with a published GPU-hour total).
    Returns:
        The estimate, capped at 0.95, with its 80 % interval (uncalibrated width).
    """
    x = features(generation, active_params, seq_len, published_total)
    mfu = min(0.95, math.exp(_predict_log(model.coefficients, x)))
    w = model.half_width_log
    terms = tuple((name, math.exp(c * v)) for name, c, v in zip(FEATURES, model.coefficients, x) if v != 0.0)
    return UtilisationEstimate(mfu, mfu / math.exp(w), min(1.0, mfu * math.exp(w)), terms,
                               f"fitted on {model.runs} documented runs (docs/method.md)")


def interval_80(value: float, model: UtilisationModel, *, calibrated: bool = False) -> tuple[float, float]:
    """80 % interval ``(low, high)`` of a time, throughput or cost that scales with 1/MFU or MFU.

    The interval is symmetric in log space, so the same call serves hours, tokens/s and cost. A machine
    calibrated by the training-step probe gets the narrower within-study width.
    """
    w = model.half_width_calibrated_log if calibrated else model.half_width_log
    return value / math.exp(w), value * math.exp(w)


# ------------------------------------------------------------------ stored coefficients
def model_to_csv(model: UtilisationModel) -> str:
    """The fitted model as ``name,value`` CSV text (``resources/utilisation_fit.csv``)."""
    lines = ["name,value"]
    lines += [f"{name},{value!r}" for name, value in zip(FEATURES, model.coefficients)]
    lines += [f"half_width_log,{model.half_width_log!r}",
              f"half_width_calibrated_log,{model.half_width_calibrated_log!r}", f"runs,{model.runs}",
              f"wall_time_low,{model.wall_time_low!r}"]
    return "\n".join(lines) + "\n"


def model_from_csv(text: str) -> UtilisationModel:
    """Read ``model_to_csv`` output back.

    Raises:
        ValueError: when a name is missing or a value is not finite.
    """
    values = {}
    for line in text.strip().splitlines()[1:]:
        name, _, value = line.partition(",")
        number = float(value)
        if not math.isfinite(number):
            raise ValueError(f"utilisation fit: {name} is not finite")
        values[name.strip()] = number
    if not 0.0 < values.get("wall_time_low", 1.0) <= 1.0:
        raise ValueError("utilisation fit: wall_time_low must be in (0, 1]")
    try:
        return UtilisationModel(tuple(values[n] for n in FEATURES), values["half_width_log"],
                                values["half_width_calibrated_log"], int(values["runs"]),
                                values.get("wall_time_low", 1.0))
    except KeyError as exc:
        raise ValueError(f"utilisation fit: missing {exc}") from None


# ------------------------------------------------------------------ the planner's call
def fp8_work_per_token(flops_per_token: float, fp8_flops_per_token: float, gemm_speedup: float) -> float:
    """The work of a token in 16-bit FLOPs when part of it runs in fp8 (Amdahl's law).

    fp8 training (Transformer Engine in Megatron-LM and NeMo, torchao Float8 in torchtitan) runs the linear
    layers of the transformer blocks in fp8; the attention scores and values (FlashAttention), the embedding and
    output layer, norms and the loss stay in bf16. Those ``fp8_flops_per_token`` run ``gemm_speedup`` (the fp8
    peak over the 16-bit peak: 2 on H100 and B200) times faster, the rest at the 16-bit rate:
    ``W = F - F_8 + F_8 / S``. A Llama 3 8B token at 8,192 tokens: F = 54.6 GFLOP, F_8 = 41.9 GFLOP, S = 2 gives
    W = 33.7 GFLOP, 1.62 times faster, not 2.
    """
    if gemm_speedup <= 0:
        raise ValueError("gemm_speedup must be positive")
    fp8 = min(max(fp8_flops_per_token, 0.0), flops_per_token)
    return flops_per_token - fp8 + fp8 / gemm_speedup


@dataclass(frozen=True)
class TrainingTime:
    """Wall time and throughput of a training job from the fitted (or calibrated) utilisation, with 80 % intervals."""

    hours: float
    hours_interval: tuple[float, float]
    tokens_per_s: float
    tokens_per_s_interval: tuple[float, float]
    mfu: float
    flops: float  # hardware FLOPs of the job: model FLOPs with attention, times the recomputation factor
    origin: str


def training_time(model: UtilisationModel, *, generation: int, active_params: float, layers: int, hidden: int,
                  seq_len: int, tokens: float, devices: int, peak_flops: float, workload: str = "pretrain",
                  recompute: str = "selective", slowdown: float = 1.0, calibrated_mfu: float | None = None,
                  fp8_params: float = 0.0, gemm_speedup: float = 1.0, host_s: float = 0.0,
                  optimizer_s: float = 0.0) -> TrainingTime:
    """Time a training job with the fitted utilisation (docs/method.md, "Utilisation fitted on documented runs").

    ``T = tokens * W * r / (N * peak * u) * slowdown`` with the work per token
    ``W = f_w * (P_act - P_8) + f_w * P_8 / S + f_a * 6*L*s*h`` (``fp8_work_per_token``), ``f_w`` 6 (4 for LoRA and
    QLoRA, no weight gradients of the base), ``f_a`` 1 (4/6 for LoRA), ``r`` the full recomputation's one more
    forward, ``(f + 2) / f`` (``compute.recompute_factor``: 8/6, or 6/4 for LoRA). ``peak``
    is the 16-bit peak; in fp8 training only the ``P_8`` parameters' matrix products run at ``S`` times it.

    Args:
        generation: ``generation_of(accelerator_id)``.
        active_params, layers, hidden, seq_len: the model and its training sequence length.
        tokens: training tokens; devices: accelerators; peak_flops: dense peak per device at the precision.
        workload: ``pretrain``, ``full`` (fine-tuning), ``lora`` or ``qlora``.
        recompute: ``full`` for full activation recomputation.
        slowdown: ``comms.link_slowdown`` of the option's links against the fitted clusters' (1 = same links).
        calibrated_mfu: a training-step calibration of this device; it replaces the fitted utilisation and the
            interval narrows to the within-study width.
        fp8_params, gemm_speedup: parameters whose matrix products run in fp8, and the fp8 peak over ``peak_flops``
            (``fp8_work_per_token``); 0 and 1 for 16-bit training.
        host_s, optimizer_s: time of the job that does not scale with the FLOPs (``compute.host_seconds``, the host
            issuing each layer's kernels, of which ``compute.exposed_host_seconds`` shows; ``compute.optimizer_seconds``,
            the memory-bound optimizer steps), added to the compute time; the utilisation reported stays the one of
            the compute (the origin says what share the rest takes).
    """
    f = flops_per_token(1.0, workload)
    per_token = f * active_params + f * layers * seq_len * hidden
    r = recompute_factor(recompute, workload)
    flops = tokens * per_token * r
    work = tokens * fp8_work_per_token(per_token, f * fp8_params, gemm_speedup) * r
    if calibrated_mfu is not None:
        u, origin = calibrated_mfu, "measured on this machine by the training-step probe"
    else:
        est = predict_utilisation(model, generation=generation, active_params=active_params, seq_len=seq_len)
        u, origin = est.mfu, est.origin
    compute_s = work / (devices * peak_flops * u) * slowdown
    seconds = compute_s + exposed_host_seconds(host_s, compute_s) + max(0.0, optimizer_s)
    if seconds > compute_s * 1.005:
        origin = f"{origin}; {1.0 - compute_s / seconds:.0%} of the time is kernel launches and the optimizer step"
    hours = seconds / 3600.0
    tps = tokens / seconds
    calibrated = calibrated_mfu is not None
    return TrainingTime(hours, interval_80(hours, model, calibrated=calibrated), tps,
                        interval_80(tps, model, calibrated=calibrated), u, flops, origin)
