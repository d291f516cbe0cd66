"""How far a training job lies from the published runs a calibration was fitted on, and how much wider its range
must be for it (docs/method.md, "Ranges that know where the data ends").

A job and each calibration row are *positions* in the features the fit and the estimate use: the device count,
the model's size, the sequence length, the model-parallel degree (tensor x pipeline), the accelerator's
generation (numeric, in doublings or generations), and the framework, model family, dense or MoE, precision and
workload (categorical). The *separation* of two positions is the sum of their differences, a numeric feature's in
units of its own spread over the calibration rows (its standard deviation, ``SCALE_FLOOR`` at least), a category
counting 1 where it differs: one standard deviation of fleet size weighs as much as another framework. A job's
*distance* is its separation from the nearest row.

The width is fitted, not guessed (``fit_reach``): leaving one source out, each row's distance to the rows of the
*other* sources is how far the fit that predicted it had to reach, and its held-out log error is how wrong it was.
The errors' mean grows with that distance as ``a + c d`` (least squares); the interval is the locally weighted
split-conformal one (Lei et al. 2018, section 5.2): ``w(d) = q * (1 + b d)``, ``b = c / a``, ``q`` the conformal
80 % quantile of ``|r_i| / (1 + b d_i)``. A job at the rows gets ``q``; one ``1 / b`` away gets twice that.

Everything here is pure: positions in, numbers out.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

# The numeric features (log2 of a count; a generation in generations) and the categorical ones.
NUMERIC = ("devices", "params", "seq_len", "model_parallel", "generation")
CATEGORICAL = ("framework", "family", "moe", "precision", "workload")
# A numeric feature's unit is its spread over the rows, but never less than this many doublings (generations):
# rows that all share one sequence length must not make the next length a hundred units away.
SCALE_FLOOR = 1.0
# The family of a model given by its size alone (no preset or file names it): unlike every row's.
UNNAMED = "unnamed"


@dataclass(frozen=True)
class Position:
    """A training job or calibration row in the features of the fit (module docstring)."""

    devices: int
    params: float
    seq_len: int
    model_parallel: int
    generation: int  # 2018, 2020, 2022, 2024; 0 when unknown
    framework: str
    family: str
    moe: bool
    precision: str
    workload: str

    def numeric(self, name: str) -> float | None:
        """A numeric feature in its unit (log2 of a count, a generation as generations), None when unknown."""
        if name == "generation":
            return self.generation / 2.0 if self.generation else None
        value = getattr(self, name)
        return math.log2(value) if value and value > 0 else None


@functools.lru_cache(maxsize=512)
def model_family(model: str) -> str:
    """The family of a model id: its name up to the first part with a digit, the trailing version stripped
    (``llama-3.1-405b`` -> ``llama``, ``qwen2.5-7b`` -> ``qwen``, ``gpt-oss-120b`` -> ``gpt-oss``, ``gpt2`` ->
    ``gpt``, ``deepseek-v3`` -> ``deepseek``); a Hugging Face id's name part."""
    name = model.lower().rsplit("/", 1)[-1].removeprefix("hf:")
    parts = []
    for i, part in enumerate(name.split("-")):
        if re.search(r"\d", part):
            if i == 0:
                parts.append(re.sub(r"[\d.]+.*$", "", part))
            break
        parts.append(part)
    return "-".join(p for p in parts if p) or name


def parallel_degree(text: str) -> int:
    """Tensor x pipeline degree of a published layout (``TP4 PP8 VP5``, ``FSDP 16 x TP 8``); 1 when none is
    named."""
    out = 1
    for axis in ("TP", "PP"):
        m = re.search(rf"\b{axis}\s*(\d+)", text.upper())
        if m:
            out *= max(1, int(m.group(1)))
    return out


def scales(rows: Sequence[Position]) -> dict[str, float]:
    """Each numeric feature's unit: its standard deviation over ``rows``, at least ``SCALE_FLOOR``."""
    out = {}
    for name in NUMERIC:
        values = [v for v in (r.numeric(name) for r in rows) if v is not None]
        if len(values) < 2:
            out[name] = SCALE_FLOOR
            continue
        mean = sum(values) / len(values)
        sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))
        out[name] = max(SCALE_FLOOR, sd)
    return out


def parts(a: Position, b: Position, unit: dict[str, float]) -> dict[str, float]:
    """The separation of two positions feature by feature (module docstring): an unknown numeric value counts 1."""
    out = {}
    for name in NUMERIC:
        x, y = a.numeric(name), b.numeric(name)
        out[name] = 1.0 if x is None or y is None else abs(x - y) / unit[name]
    for name in CATEGORICAL:
        out[name] = float(getattr(a, name) != getattr(b, name))
    return out


def separation(a: Position, b: Position, unit: dict[str, float]) -> float:
    """The sum of ``parts``."""
    return sum(parts(a, b, unit).values())


def nearest(job: Position, rows: Sequence[Position], unit: dict[str, float]) -> tuple[float, int]:
    """``(distance, index)`` of the row nearest ``job``; ``(inf, -1)`` without rows."""
    best, at = math.inf, -1
    for i, r in enumerate(rows):
        d = separation(job, r, unit)
        if d < best:
            best, at = d, i
    return best, at


def fold_distances(rows: Sequence[Position], sources: Sequence[str], unit: dict[str, float],
                   reference: Sequence[Position] = (), reference_sources: Sequence[str] = ()) -> list[float]:
    """Each row's distance to the rows of the other sources (``reference`` as well: a pool fitted together)."""
    every = [*zip(rows, sources), *zip(reference, reference_sources)]
    return [min((separation(r, p, unit) for p, sp in every if sp != s), default=math.inf)
            for r, s in zip(rows, sources)]


def reach_slope(distances: Sequence[float], abs_residuals: Sequence[float]) -> float:
    """``b`` of the width ``q (1 + b d)``: the least-squares line ``|r| = a + c d`` through the held-out errors
    against their distances, ``b = c / a``; 0 where the errors do not grow with the distance (``c <= 0``) or the
    line has no positive value at the rows (``a <= 0``: then ``c`` over the errors' mean)."""
    pts = [(d, r) for d, r in zip(distances, abs_residuals) if math.isfinite(d)]
    if len(pts) < 3:
        return 0.0
    n = len(pts)
    md = sum(d for d, _ in pts) / n
    mr = sum(r for _, r in pts) / n
    var = sum((d - md) ** 2 for d, _ in pts)
    if var <= 0:
        return 0.0
    c = sum((d - md) * (r - mr) for d, r in pts) / var
    a = mr - c * md
    if c <= 0:
        return 0.0
    return c / a if a > 0 else c / mr


def widen(distance: float, slope: float) -> float:
    """``1 + b d``: how many times the width at the rows a job at ``distance`` gets."""
    return 1.0 + slope * max(0.0, distance) if math.isfinite(distance) else 1.0


@dataclass(frozen=True)
class Fact:
    """One way a job lies outside the calibrated runs: the feature, the job's value and what the rows span."""

    feature: str
    value: str
    seen: str

    def text(self) -> str:
        return f"{self.value}, {self.seen}"


def _count(x: float) -> str:
    return f"{x:,.0f}" if x >= 10 else f"{x:g}"


def _size(x: float) -> str:
    return f"{x / 1e9:,.3g}B" if x >= 1e9 else f"{x / 1e6:,.3g}M"


def outside_facts(job: Position, rows: Sequence[Position]) -> list[Fact]:
    """The features in which ``job`` lies beyond every row: a count above the largest or below the smallest, a
    generation, framework, family, architecture, precision or workload none of them has."""
    if not rows:
        return []
    out: list[Fact] = []
    numeric = (("devices", _count, "GPUs"), ("params", _size, "parameters"), ("seq_len", _count, "tokens"),
               ("model_parallel", _count, "-way tensor x pipeline"))
    for name, fmt, unit in numeric:
        value = getattr(job, name)
        seen = [getattr(r, name) for r in rows if getattr(r, name)]
        if not value or not seen:
            continue
        lo, hi = min(seen), max(seen)
        sep = "" if unit.startswith("-") else " "
        if value > hi:
            out.append(Fact(name, f"{fmt(value)}{sep}{unit}", f"largest seen {fmt(hi)}"))
        elif value < lo:
            out.append(Fact(name, f"{fmt(value)}{sep}{unit}", f"smallest seen {fmt(lo)}"))
    gens = sorted({r.generation for r in rows if r.generation})
    if job.generation not in gens:
        span = f"{gens[0]}-{gens[-1]}" if len(gens) > 1 else (str(gens[0]) if gens else "none")
        value = f"a {job.generation}-generation accelerator" if job.generation else "an accelerator of unknown generation"
        out.append(Fact("generation", value, f"seen {span}"))
    for name, value, what in (("framework", job.framework, "framework"), ("family", job.family, "model family"),
                              ("precision", job.precision, "precision"), ("workload", job.workload, "workload")):
        seen = sorted({getattr(r, name) for r in rows})
        if value not in seen:
            said = "a model given by its size, of no named family" if value == UNNAMED else f"{what} {value}"
            out.append(Fact(name, said, "not among them (seen: " + ", ".join(seen) + ")"))
    if job.moe not in {r.moe for r in rows}:
        out.append(Fact("moe", "a mixture-of-experts model" if job.moe else "a dense model",
                        "none among them"))
    return out


@dataclass(frozen=True)
class Reach:
    """Where a job lies against the calibrated runs, and the range it gets for it."""

    distance: float  # from the nearest row (module docstring)
    nearest: str  # that row's id
    facts: tuple[Fact, ...]  # the ways it lies beyond every row (``outside_facts``)
    width_at_rows: float  # the 80 % half-width in log space a job at the rows gets
    width: float  # the half-width this job gets
    runs: int  # calibrated runs it was measured against
    slope: float = 0.0  # b of the width ``w (1 + b d)`` it was given

    @property
    def outside(self) -> bool:
        """Whether the job lies beyond the runs in some feature."""
        return bool(self.facts)

    def text(self) -> str:
        """The plan's statement: ``outside the calibrated runs: 1,024 GPUs, largest seen 512; range widened to
        x/÷1.31 (x/÷1.19 at the runs)``, or where the job lies among them."""
        now, base = math.exp(self.width), math.exp(self.width_at_rows)
        rng = (f"range widened to x/÷{now:.2f} (x/÷{base:.2f} at the runs)" if now > base * 1.005
               else f"range x/÷{now:.2f}")
        if self.facts:
            return "outside the calibrated runs: " + "; ".join(f.text() for f in self.facts) + f"; {rng}"
        return (f"like the {self.runs} published runs the speed is calibrated on (distance {self.distance:.1f} from "
                f"the nearest); {rng}")

    def to_json(self) -> dict:
        return {"outside": self.outside, "statement": self.text(), "distance": self.distance,
                "nearest_run": self.nearest, "width_factor": math.exp(self.width),
                "width_factor_at_runs": math.exp(self.width_at_rows),
                "beyond": [{"feature": f.feature, "value": f.value, "seen": f.seen} for f in self.facts]}


def locate(job: Position, rows: Sequence[tuple[str, Position]], unit: dict[str, float] | None = None
           ) -> tuple[float, str, tuple[Fact, ...]]:
    """``(distance, nearest row id, facts)`` of a job against the calibration rows ``(row id, position)``;
    ``unit``: their ``scales`` where the caller keeps them."""
    positions = [p for _, p in rows]
    unit = unit or scales(positions)
    d, i = nearest(job, positions, unit)
    return d, rows[i][0] if i >= 0 else "", tuple(outside_facts(job, positions))
