"""A served step's per-layer costs over several devices, fitted on published serving runs (pure; docs/method.md,
"Serving under load", the step's fitted costs).

A decode step over several tensor-parallel devices pays, beyond the GPU's arithmetic and bandwidth, a time in every
layer that neither counts: the two all-reduces' small-message latency and the launches around them (NCCL over
NVLink, RCCL over XGMI, either over PCIe), in a mixture of experts the routing, the dispatch and the fused expert
kernel of each expert layer, and per running sequence what each layer's kernels add as the batch grows. Each is one
constant in seconds, named ``<what>/<family>/<backend>/<link>[/<kind>]``, where the family is the runtime whose
tensor-parallel step code a server runs (``serve_spec.RuntimeServing.step_family``: SGLang's is vLLM's):

* ``tp_layer/<family>/<backend>/<link>``: a tensor-parallel step's time per layer (``serve_spec.step_overhead_s``);
* ``moe_expert/<family>/<backend>/<link>``: a further time in each expert layer of a mixture of experts over
  several devices for each expert a token runs (its ``k`` routed and its shared ones: the fused expert kernel's
  blocks and the dispatch grow with them);
* ``prefill_kernel/<family>/<link>``: a prefill pass's host time for each kernel one device launches
  (``estimate.model.prefill_kernel_count``: the kernels of each layer's parts, counted from the server's model code)
  over several tensor-parallel devices, where the server launches a pass's kernels one by one from Python: vLLM
  and SGLang capture CUDA graphs for decode batches only, so a prefill pays the framework's dispatch of every
  kernel of every layer, its all-reduces in eager NCCL (``serve_spec.prefill_overhead_s``). A per-kernel time
  carries between models that a per-layer or per-expert one does not: a DeepSeek layer (multi-head latent
  attention, block-fp8 inputs quantised before each product, a shared expert) launches about twice a Qwen3 MoE
  layer's kernels. It is the host's work (the interpreter, the framework's dispatch, the launch call), not the
  device's, so one constant serves every backend of a family;
* ``seq_layer/<family>/<backend>/<link>/<dense|moe>``: what each running sequence beyond the first adds per layer
  (``serve_spec.per_sequence_s``);
* ``batch_mm/<runtime>/<backend>/<kernel>``: not seconds but a share: the part of the runtime profile's
  matrix-multiply efficiency (``BackendProfile.prefill_eta``) its kernels of that type (``fp8``, ``16bit`` ...)
  reach on published runs (``serve_spec.prefill_matmul_eta``: a prompt's products and a batch's alike, in the plan
  and the server), implied by throughputs at a load of users (``planner.measured.batch_mm_constant``); a row the
  share cannot meet within ``BATCH_MM_BOUNDS`` (a batch that reads memory, not one its products bind) implies
  nothing. Named by the runtime, not the step family: SGLang's kernels are not vLLM's.
* ``moe_mm/<runtime>/<backend>``: a share again, of the ``batch_mm`` share, that a mixture of experts' products
  reach (its experts' grouped kernels over the tokens routed to each, not one dense product over the batch), whatever
  the kernel type; implied by such a model's throughputs at a load of users, fitted after the dense shares.

Each published row of its kind *implies* the constant's value at which the serving model meets its figure (the
forward model run backwards: ``implied_value``), with the constants before it in ``STAGES`` at their fitted values;
a constant is the median over its sources of each source's mean implied value (a source counts once, whatever its
rows), fitted only where at least ``MIN_SOURCES`` sources have rows of its kind (else it stays ``assumed``: no source
could check it). Left out, a source's rows are planned at the constants fitted on the other sources
(``leave_one_source_out``). The fit is stored by ``benchmarks/bench_truth.py --write`` in
``resources/serving_step_fit.csv`` (``step_fit_to_csv``) and read back validated (``parse_step_fit``).
"""

from __future__ import annotations

import csv
import io
import math
import re
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from advisor.estimate.roots import illinois

# The order the constants are fitted in: the per-layer time of a dense step first (one user, dense rows' per-token
# times), then the expert layers' further time per expert a token runs (one user, MoE rows, at the fitted per-layer
# time), then a prefill pass's host time per kernel launched (one user, dense and MoE rows' first tokens, at the
# step's fitted times), then the share of the profile's matrix-multiply
# efficiency the batch's products reach (throughputs at a load of users, at all of them), then the growth with the
# batch (loaded per-token rows, at all of them).
STAGES = ("tp_layer", "moe_expert", "prefill_kernel", "batch_mm", "moe_mm", "seq_layer")
LINKS = ("fabric", "pcie")
KINDS = ("dense", "moe")
MIN_SOURCES = 2  # a constant is fitted only where a source the fit has not seen can check it
# Two all-reduces a layer at an assumed small-message latency of about 10 us over NVLink or XGMI and 30 us over
# PCIe (NCCL's small-message all-reduce latency is of this order): the per-layer time where no source checks a fit.
ALLREDUCE_LATENCY_S = {"fabric": 10e-6, "pcie": 30e-6}
# The seconds a constant is sought between (an implied value beyond is held at the bound) and the largest a stored
# fit may hold.
BOUNDS_S = (0.0, 2e-3)
# A share of the profile's matrix-multiply efficiency is sought between 0.3 and 1.5 of it (the profile's figure
# times it is held at most 1, the kernel's peak).
BATCH_MM_BOUNDS = (0.3, 1.5)
SHARES = ("batch_mm", "moe_mm")  # the stages whose constants are shares of an efficiency, sought in BATCH_MM_BOUNDS
_NAME = re.compile(r"^(tp_layer|moe_expert)/[a-z0-9.-]+/[a-z0-9]+/(fabric|pcie)$"
                   r"|^prefill_kernel/[a-z0-9.-]+/(fabric|pcie)$"
                   r"|^seq_layer/[a-z0-9.-]+/[a-z0-9]+/(fabric|pcie)/(dense|moe)$"
                   r"|^batch_mm/[a-z0-9.-]+/[a-z0-9]+/[a-z0-9_]+$"
                   r"|^moe_mm/[a-z0-9.-]+/[a-z0-9]+$")
COLUMNS = ("name", "seconds", "sources", "rows", "loso_low", "loso_high")


class StepFitError(ValueError):
    """A stored step fit that cannot be read (names the file, line and field)."""


def step_name(stage: str, family: str, backend: str, link: str = "", kind: str = "") -> str:
    """A constant's name (module docstring; a ``batch_mm`` share has no link, a ``prefill_kernel`` time no
    backend)."""
    if stage == "batch_mm":
        return f"{stage}/{family}/{backend}/{kind}"
    if stage == "moe_mm":
        return f"{stage}/{family}/{backend}"
    if stage == "prefill_kernel":
        return f"{stage}/{family}/{link}"
    base = f"{stage}/{family}/{backend}/{link}"
    return f"{base}/{kind}" if stage == "seq_layer" else base


def sibling_kind(name: str) -> str:
    """A ``seq_layer`` constant's name for the other model kind (``.../dense`` <-> ``.../moe``). What a running
    sequence adds to a tensor-parallel step per layer is the server's work around the layer's all-reduces (its
    metadata, its share of the attention, the sampler's), the same code for a dense and a mixture-of-experts model;
    where no source checks one kind on a family, backend and link, the other kind's fitted time stands for it rather
    than none (a step that grew with its sequences by their traffic alone planned vLLM's 8x MI300X Llama 3.1 70B at
    128 sequences 2.25 times the ROCm blog's throughput)."""
    head, _, kind = name.rpartition("/")
    return f"{head}/{'moe' if kind == 'dense' else 'dense'}"


# The step family whose fitted per-layer time stands for another family's on the same backend and link where no
# source checks that family's (``other_family``).
STAND_IN_FAMILY = "vllm"


def other_family(name: str) -> str:
    """A ``tp_layer`` constant's name for ``STAND_IN_FAMILY``. A tensor-parallel layer's time is its two all-reduces
    over the link and the launches and waits around them, whatever engine issues them (vLLM's custom all-reduce
    follows TensorRT-LLM's one-shot and two-shot kernels over the peers' buffers); where no two sources check a
    family's, the one fitted on other engines' runs stands for it rather than the assumed all-reduce latency alone
    (which planned TensorRT-LLM's Llama 3.1 70B on eight H100s in the ROCm blog 1.6-2.4 times as fast as it ran)."""
    stage, _, rest = name.partition("/")
    _, _, tail = rest.partition("/")
    return f"{stage}/{STAND_IN_FAMILY}/{tail}"


def assumed(name: str) -> float:
    """The value a constant has where nothing is fitted: two all-reduces' assumed latency a layer for a tensor-parallel
    step (``ALLREDUCE_LATENCY_S``), the profile's own efficiency for a ``batch_mm`` share (1), nothing for the rest
    (not modelled)."""
    stage, _, rest = name.partition("/")
    if stage in SHARES:
        return 1.0
    if stage == "tp_layer":
        return 2.0 * ALLREDUCE_LATENCY_S[rest.split("/")[2]]
    return 0.0


def bounds_of(name: str) -> tuple[float, float]:
    """The values a constant is sought and stored between: ``BATCH_MM_BOUNDS`` for a share, else ``BOUNDS_S``."""
    return BATCH_MM_BOUNDS if is_share(name) else BOUNDS_S


def is_share(name: str) -> bool:
    """Whether a constant is a share of an efficiency (``batch_mm``, ``moe_mm``), not seconds."""
    return name.partition("/")[0] in SHARES


@dataclass(frozen=True)
class Constant:
    """One fitted constant: its value, the sources and rows it was fitted on, and the least and most it took fitted
    leaving each one of those sources out."""

    name: str
    seconds: float
    sources: int
    rows: int
    loso_low: float
    loso_high: float


@dataclass(frozen=True)
class StepFit:
    """The fitted constants; any other name is ``assumed``."""

    constants: tuple[Constant, ...] = ()
    _by: dict = field(default_factory=dict, compare=False, repr=False, hash=False)

    def __post_init__(self) -> None:
        self._by.update({c.name: c.seconds for c in self.constants})

    def value(self, name: str) -> float:
        """The constant's fitted value, or, for a ``seq_layer`` time no source checks for its model kind, the other
        kind's on the same family, backend and link (``sibling_kind``), for a ``tp_layer`` time no source checks for
        its family, ``STAND_IN_FAMILY``'s on the same backend and link (``other_family``), or its assumed one."""
        v = self._by.get(name)
        if v is None and name.startswith("seq_layer/"):
            v = self._by.get(sibling_kind(name))
        if v is None and name.startswith("tp_layer/"):
            v = self._by.get(other_family(name))
        return assumed(name) if v is None else v

    def with_values(self, values: Mapping[str, float]) -> StepFit:
        """This fit with ``values`` (name -> seconds) set (no spread: a fit being built)."""
        kept = [c for c in self.constants if c.name not in values]
        return StepFit(tuple(kept) + tuple(Constant(n, float(v), 0, 0, float(v), float(v))
                                           for n, v in sorted(values.items())))

    def key(self) -> tuple[tuple[str, float], ...]:
        """The fitted values, as a hashable key."""
        return tuple(sorted(self._by.items()))


ASSUMED = StepFit()


class _NoFigure(Exception):
    """The model has no figure at a value (``implied_value``)."""


def implied_value(at: Callable[[float], float | None], measured: float,
                  bounds: tuple[float, float] = BOUNDS_S, tol: float = 1e-4) -> float | None:
    """The value ``x`` of a constant at which ``at(x)`` (a time rising with it) equals ``measured``: the root of
    ``at(x) - measured`` (``roots.illinois``), to ``tol`` of the figure; held at a bound the figure lies beyond;
    None where the model has no figure at the lower bound or on the way."""
    lo, hi = bounds
    f_lo = at(lo)
    if f_lo is None:
        return None
    f_lo -= measured
    if f_lo >= 0:
        return lo
    f_hi = at(hi)
    if f_hi is None or f_hi - measured <= 0:
        return hi

    def miss(x: float) -> float:
        v = at(x)
        if v is None:
            raise _NoFigure
        return v - measured

    try:
        a, b, f_a, f_b = illinois(miss, lo, hi, f_lo, f_hi - measured, f_tol=tol * measured)
    except _NoFigure:
        return None
    return a if abs(f_a) <= abs(f_b) else b


@dataclass(frozen=True)
class StepRow:
    """A published row that implies a constant: ``implied(fit)`` is the constant's value at which the row's figure
    is met with ``fit``'s other constants in force (None where the model has no figure)."""

    row_id: str
    source_id: str
    name: str
    implied: Callable[[StepFit], float | None] = field(compare=False, repr=False)


def fit_steps(rows: Sequence[StepRow], without: str = "", *, memo: dict | None = None) -> StepFit:
    """The constants fitted on ``rows`` less those of source ``without``, stage by stage (``STAGES``): each the
    median over its sources of each source's mean implied value; a constant whose kind fewer than ``MIN_SOURCES``
    sources have (in all of ``rows``) stays assumed. ``memo`` keeps implied values by row and fit."""
    memo = {} if memo is None else memo
    fit = ASSUMED
    for stage in STAGES:
        values: dict[str, float] = {}
        for name in sorted({r.name for r in rows if r.name.startswith(stage + "/")}):
            mine = [r for r in rows if r.name == name]
            if len({r.source_id for r in mine}) < MIN_SOURCES:
                continue
            by_source: dict[str, list[float]] = {}
            for r in mine:
                if r.source_id == without:
                    continue
                key = (r.row_id, fit.key())
                if key not in memo:
                    memo[key] = r.implied(fit)
                if memo[key] is not None:
                    by_source.setdefault(r.source_id, []).append(memo[key])
            if by_source:
                values[name] = statistics.median(statistics.fmean(v) for v in by_source.values())
        if values:
            fit = fit.with_values(values)
    return fit


def leave_one_source_out(rows: Sequence[StepRow], sources: Iterable[str]) -> tuple[StepFit, dict[str, StepFit]]:
    """``(fit, held)``: the constants fitted on every row, and for each of ``sources`` those fitted without it (the
    full fit for a source with no rows of any constant). The full fit's constants carry how many sources and rows
    each was fitted on and its least and most value over the held-out fits of its own sources."""
    memo: dict = {}
    full = fit_steps(rows, memo=memo)
    stepped = {r.source_id for r in rows}
    held = {s: (fit_steps(rows, s, memo=memo) if s in stepped else full) for s in sorted(set(sources))}
    out = []
    for c in full.constants:
        mine = [r for r in rows if r.name == c.name]
        own = sorted({r.source_id for r in mine})
        vals = [held[s].value(c.name) for s in own if s in held] or [c.seconds]
        out.append(Constant(c.name, c.seconds, len(own), len(mine), min(vals), max(vals)))
    return StepFit(tuple(out)), held


def step_fit_to_csv(fit: StepFit) -> str:
    """The stored form of a fit (``parse_step_fit`` reads it)."""
    lines = [",".join(COLUMNS)]
    for c in sorted(fit.constants, key=lambda c: c.name):
        lines.append(f"{c.name},{c.seconds!r},{c.sources},{c.rows},{c.loso_low!r},{c.loso_high!r}")
    return "\n".join(lines) + "\n"


def parse_step_fit(text: str, where: str = "serving_step_fit.csv") -> StepFit:
    """A stored fit, validated: the columns, a known constant name once each, seconds finite within ``BOUNDS_S``
    (the spread around the value), whole counts of at least ``MIN_SOURCES`` sources. Raises ``StepFitError`` naming
    the line and field; a ``batch_mm`` share within ``BATCH_MM_BOUNDS``."""
    reader = csv.DictReader(io.StringIO(text))
    if tuple(reader.fieldnames or ()) != COLUMNS:
        raise StepFitError(f"{where}: the header must be {','.join(COLUMNS)}")
    out: list[Constant] = []
    seen: set[str] = set()
    for i, row in enumerate(reader, start=2):
        name = (row.get("name") or "").strip()
        if not _NAME.match(name):
            raise StepFitError(f"{where}, line {i}: name {name!r} is not a step constant "
                               "(tp_layer or moe_expert/<family>/<backend>/<link>, prefill_kernel/<family>/<link>, "
                               "seq_layer/<family>/<backend>/<link>/<dense|moe>, batch_mm/<runtime>/<backend>/<kernel> or "
                               "moe_mm/<runtime>/<backend>)")
        if name in seen:
            raise StepFitError(f"{where}, line {i}: {name} given twice")
        seen.add(name)
        nums = {}
        for col in ("seconds", "loso_low", "loso_high"):
            try:
                v = float(row.get(col) or "")
            except ValueError:
                raise StepFitError(f"{where}, line {i}: {col} {row.get(col)!r} is not a number") from None
            lo, hi = bounds_of(name)
            if not (math.isfinite(v) and lo <= v <= hi):
                raise StepFitError(f"{where}, line {i}: {col} {v!r} is outside {lo}-{hi}")
            nums[col] = v
        if nums["loso_low"] > nums["loso_high"]:
            raise StepFitError(f"{where}, line {i}: loso_low is above loso_high")
        counts = {}
        for col in ("sources", "rows"):
            text_n = (row.get(col) or "").strip()
            if not text_n.isdigit():
                raise StepFitError(f"{where}, line {i}: {col} {text_n!r} is not a whole number")
            counts[col] = int(text_n)
        if counts["sources"] < MIN_SOURCES or counts["rows"] < counts["sources"]:
            raise StepFitError(f"{where}, line {i}: a constant is fitted on at least {MIN_SOURCES} sources and as "
                               "many rows")
        out.append(Constant(name, nums["seconds"], counts["sources"], counts["rows"], nums["loso_low"],
                            nums["loso_high"]))
    return StepFit(tuple(out))
