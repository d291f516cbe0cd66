"""A root of a function of one variable, bracketed (pure): regula falsi with the Illinois step (Dowell and Jarratt
1971), shared by the serving queue's solves (``estimate.serving_queue``) and the step costs a published row implies
(``estimate.step_cost.implied_value``)."""

from __future__ import annotations

import math
from collections.abc import Callable

_INF = math.inf


def illinois(f: Callable[[float], float], lo: float, hi: float, f_lo: float, f_hi: float, f_tol: float = 0.0,
             x_tol: float = 0.0) -> tuple[float, float, float, float]:
    """A bracket ``(lo, hi, f(lo), f(hi))`` of the root of ``f`` to a relative ``x_tol`` (or a point where ``|f|`` is
    within ``f_tol``), from one where ``f`` changes sign: regula falsi with the Illinois step (Dowell and Jarratt
    1971); an infinite value (a load the server cannot carry) is bisected away. Where ``f`` jumps across zero, the
    bracket closes on the jump."""
    if -f_tol <= f_lo <= f_tol:
        return lo, lo, f_lo, f_lo
    if -f_tol <= f_hi <= f_tol:
        return hi, hi, f_hi, f_hi
    w_lo, w_hi = f_lo, f_hi  # the values the Illinois step weighs (halved on a side that keeps its end)
    side = 0
    for _ in range(100):
        if hi - lo <= x_tol * abs(hi):
            break
        if -_INF < w_hi < _INF and -_INF < w_lo < _INF and w_hi != w_lo:  # (both finite)
            m = hi - w_hi * (hi - lo) / (w_hi - w_lo)
            span = hi - lo
            if not lo + 1e-3 * span < m < hi - 1e-3 * span:
                m = 0.5 * (lo + hi)
        else:
            m = 0.5 * (lo + hi)
        fm = f(m)
        if -f_tol <= fm <= f_tol:
            return m, m, fm, fm
        if (fm < 0.0) == (f_lo < 0.0):
            lo, f_lo, w_lo = m, fm, fm
            if side == -1 and -_INF < w_hi < _INF:
                w_hi *= 0.5
            side = -1
        else:
            hi, f_hi, w_hi = m, fm, fm
            if side == 1 and -_INF < w_lo < _INF:
                w_lo *= 0.5
            side = 1
    return lo, hi, f_lo, f_hi
