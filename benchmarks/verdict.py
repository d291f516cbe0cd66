"""Each benchmark's figures beside their targets, with PASS or FAIL: one way of printing and judging them.

A benchmark declares its targets once (``Target``), prints ``target.line(figure)`` for each figure it
measures, and exits with ``exit_code(...)``: 0 when every target is met, 1 when any is missed.

    from verdict import Target, exit_code
    PLAN_MS = Target("plan, median", "<", 5.0, "ms")
    print(PLAN_MS.line(7.6))   # FAIL  plan, median: 7.60 ms (target < 5 ms)
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable
from dataclasses import dataclass

_OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


@dataclass(frozen=True)
class Target:
    """A figure's target: ``figure <op> limit`` in ``unit``."""

    what: str
    op: str
    limit: float
    unit: str = ""

    def __post_init__(self) -> None:
        if self.op not in _OPS:
            raise ValueError(f"op must be one of {sorted(_OPS)}, not {self.op!r}")

    def met(self, figure: float | None) -> bool:
        """Whether ``figure`` meets the target (a missing or NaN figure does not)."""
        return figure is not None and not math.isnan(figure) and _OPS[self.op](figure, self.limit)

    def line(self, figure: float | None, digits: int = 2, label: str = "") -> str:
        """``PASS  what: figure unit (target op limit unit)``; ``label`` names one case (a scenario, a round)."""
        unit = f" {self.unit}" if self.unit else ""
        shown = "none" if figure is None else f"{figure:.{digits}f}{unit}"
        what = f"{self.what} [{label}]" if label else self.what
        return f"{'PASS' if self.met(figure) else 'FAIL'}  {what}: {shown} (target {self.op} {self.limit:g}{unit})"


def exit_code(results: Iterable[bool]) -> int:
    """0 when every target was met, 1 otherwise."""
    return 0 if all(results) else 1
