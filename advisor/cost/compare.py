"""Comparing options: ranking by job cost, the time/cost Pareto front, sensitivity, and serving cost.

Options are handled as plain points ``(hours, cost_usd, id)`` so that any caller can rank its own records.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from advisor.cost.assumptions import CostAssumptions

Point = tuple[float, float, str]  # (hours, cost_usd, option id)


def rank_by_cost(points: Iterable[Point]) -> list[str]:
    """Option ids from the cheapest job to the dearest (ties: the faster, then the id)."""
    return [p[2] for p in sorted(points, key=lambda p: (p[1], p[0], p[2]))]


def pareto_front(points: Iterable[Point]) -> list[str]:
    """Ids of the options no other option beats on both time and cost (both minimised), fastest first.

    An option is dropped when another is at least as fast and as cheap and better in one of the two; of exact
    duplicates the first id (in sort order) is kept.
    """
    front: list[str] = []
    best_cost = math.inf
    for _hours, cost, pid in sorted(points, key=lambda p: (p[0], p[1], p[2])):
        if cost < best_cost:
            front.append(pid)
            best_cost = cost
    return front


@dataclass(frozen=True)
class SensitivitySeries:
    """How option costs and the ranking move with one parameter (data for a plot).

    ``costs_usd`` holds, per option id, one cost per entry of ``values`` (NaN where the option had no figure);
    ``rankings`` the ids cheapest first at each value, ``cheapest`` the first of each ranking.
    """

    parameter: str
    unit: str
    values: tuple[float, ...]
    costs_usd: tuple[tuple[str, tuple[float, ...]], ...]
    rankings: tuple[tuple[str, ...], ...]

    @property
    def cheapest(self) -> tuple[str | None, ...]:
        return tuple(r[0] if r else None for r in self.rankings)

    def costs_for(self, option_id: str) -> tuple[float, ...]:
        """The cost series of one option id."""
        return dict(self.costs_usd)[option_id]

    def as_dict(self) -> dict[str, object]:
        """Plain data for JSON and plotting."""
        return {"parameter": self.parameter, "unit": self.unit, "values": list(self.values),
                "costs_usd": {k: list(v) for k, v in self.costs_usd}, "cheapest": list(self.cheapest),
                "rankings": [list(r) for r in self.rankings]}


def sensitivity(evaluate: Callable[[float], Iterable[Point]], parameter: str, values: Sequence[float],
                unit: str = "") -> SensitivitySeries:
    """Evaluate the options at each value of a parameter and collect the costs and rankings.

    Args:
        evaluate: returns the option points ``(hours, cost_usd, id)`` for one parameter value.
        parameter: the name to show ("tokens", "electricity_usd_per_kwh", ...).
        values: the parameter values, in plotting order.
        unit: the unit of the values.
    Returns:
        A :class:`SensitivitySeries`.
    """
    vals = tuple(float(v) for v in values)
    per_value = [list(evaluate(v)) for v in vals]
    ids: list[str] = []
    for pts in per_value:
        for _, _, pid in pts:
            if pid not in ids:
                ids.append(pid)
    costs = tuple(
        (pid, tuple(next((c for _, c, i in pts if i == pid), math.nan) for pts in per_value)) for pid in ids)
    rankings = tuple(tuple(rank_by_cost(pts)) for pts in per_value)
    return SensitivitySeries(parameter, unit, vals, costs, rankings)


def assumption_sensitivity(evaluate: Callable[[CostAssumptions], Iterable[Point]], base: CostAssumptions,
                           name: str, values: Sequence[float]) -> SensitivitySeries:
    """:func:`sensitivity` over one cost assumption (``electricity_usd_per_kwh``, ``utilisation``, ...).

    Raises:
        ValueError: for an unknown assumption or an invalid value (the message names the field).
    """
    unit = base.assumption(name).unit
    return sensitivity(lambda v: evaluate(base.with_overrides(**{name: v})), name, values, unit)


def scaled_grid(base: float, factors: Sequence[float] = (0.25, 0.5, 1.0, 2.0, 4.0)) -> tuple[float, ...]:
    """Values around a base figure (for tokens: a quarter to four times the budget)."""
    return tuple(base * f for f in factors)


def usd_per_million_tokens(hourly_price_total: float, tokens_per_s: float) -> float | None:
    """Serving cost per million generated tokens: ``hourly / (3600 * tokens_per_s) * 1e6`` (docs/method.md).

    ``hourly_price_total`` is the price of all N devices (per-device price * N); ``tokens_per_s`` the aggregate
    rate. None when nothing is generated.
    """
    _nonneg("hourly_price_total", hourly_price_total)
    _nonneg("tokens_per_s", tokens_per_s)
    return usd_per_million(hourly_price_total, tokens_per_s)


def usd_per_million_requests(hourly_price_total: float, requests_per_s: float) -> float | None:
    """Serving cost per million requests: ``hourly / (3600 * requests_per_s) * 1e6`` (docs/method.md)."""
    _nonneg("hourly_price_total", hourly_price_total)
    _nonneg("requests_per_s", requests_per_s)
    return usd_per_million(hourly_price_total, requests_per_s)


def usd_per_million(hourly_price_total: float, per_s: float) -> float | None:
    """``hourly / (3600 * per_s) * 1e6``, None when ``per_s`` is 0: the cost of a million tokens or requests
    (:func:`usd_per_million_tokens`, :func:`usd_per_million_requests`), for figures checked already (the
    planner checks a timing's rates once and prices every option of it)."""
    return None if per_s == 0 else hourly_price_total / (3600.0 * per_s) * 1e6


def requests_per_s(tokens_per_s: float, output_tokens: float, batch: int = 1, prefill_s: float = 0.0) -> float:
    """Requests completed per second by a batch: ``batch / (prefill_s + batch * output_tokens / tokens_per_s)``.

    ``tokens_per_s`` is the aggregate generation rate of the batch; each request produces ``output_tokens``;
    ``prefill_s`` is the prompt processing time of one batch (docs/method.md: output tokens plus prefill time).
    """
    _nonneg("tokens_per_s", tokens_per_s)
    _nonneg("prefill_s", prefill_s)
    if not (math.isfinite(output_tokens) and output_tokens > 0):
        raise ValueError(f"output_tokens: must be more than zero, got {output_tokens!r}")
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ValueError(f"batch: must be a whole number, 1 or more, got {batch!r}")
    if tokens_per_s == 0:
        return 0.0
    return batch / (prefill_s + batch * output_tokens / tokens_per_s)


def _nonneg(name: str, value: float) -> None:
    if value.__class__ is float and 0.0 <= value < math.inf:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{name}: must be a finite number of zero or more, got {value!r}")
