"""A cost made of named parts, so every figure can show what it is made of."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

# Part names used by the cost model, in display order, with what each one is (for tables and tooltips).
PART_HELP = {
    "rent": "cloud instances billed for the job's hours (whole instances, after any reserved discount)",
    "spot_rework": "extra spot hours paid to redo work lost to preemption",
    "storage": "storage billed per instance-hour",
    "egress": "data transfer out, once per job",
    "capex_share": "on-prem capex (servers and network) a month, spread over the month's hours of use",
    "depreciation": "home hardware price less resale a month, spread over the month's hours of use",
    "financing": "interest on a loan or lease for the hardware, a month's worth spread over the month's use",
    "idle_power": "electricity while the hardware is on but idle, a month's worth spread over the month's use",
    "energy": "electricity for the job's hours",
    "wear": "wear of owned GPUs per hour of use (only when a wear rate is set)",
    "colocation": "data-centre space, cooling and network per kW, spread over the hours of use",
    "support": "staff and support per GPU-year, spread over the hours of use",
}
PART_NAMES = tuple(PART_HELP)


def _checked_total(parts: tuple[tuple[str, float], ...]) -> float:
    """The sum of the amounts, each checked finite and zero or more (ValueError naming the first that is not)."""
    amounts = [usd for _, usd in parts]
    total = math.fsum(amounts)
    # a NaN or an infinite part makes the sum NaN or infinite (or fsum raises); a negative one is the least
    if not (total < math.inf and (not amounts or min(amounts) >= 0.0)):
        for name, usd in parts:
            if not (0.0 <= usd < math.inf):
                raise ValueError(f"cost part {name!r} must be a finite amount of zero or more, got {usd!r}")
    return total


@dataclass(frozen=True)
class CostBreakdown:
    """A total cost in USD as a tuple of ``(part name, usd)`` pairs; the total is their sum.

    Parts keep their order; a name appears at most once. Zero parts are kept so that every option of a
    kind shows the same columns.
    """

    parts: tuple[tuple[str, float], ...]
    # The sum of the parts (``math.fsum``, so the sum matches the parts to the last digit), computed once: the
    # planner reads it for every option it sorts and checks.
    total_usd: float = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        parts = self.parts
        if len({name for name, _ in parts}) != len(parts):
            raise ValueError(f"cost parts repeat a name: {[name for name, _ in parts]}")
        for name, usd in parts:
            if usd.__class__ is not float and (isinstance(usd, bool) or not isinstance(usd, (int, float))):
                raise ValueError(f"cost part {name!r} must be a finite amount of zero or more, got {usd!r}")
        object.__setattr__(self, "total_usd", _checked_total(parts))

    @classmethod
    def of(cls, **parts: float) -> CostBreakdown:
        """Build a breakdown from keyword parts, in the order given (the planner's path: the names are unique
        as keywords are, the amounts floats; only their range is checked)."""
        items = tuple([(name, float(usd)) for name, usd in parts.items()])
        breakdown = object.__new__(cls)
        object.__setattr__(breakdown, "parts", items)
        object.__setattr__(breakdown, "total_usd", _checked_total(items))
        return breakdown

    @classmethod
    def of_floats(cls, parts: tuple[tuple[str, float], ...]) -> CostBreakdown:
        """:meth:`of` for ``(name, usd)`` pairs whose names are distinct and amounts floats already (the pricing
        path's own parts): only their range is checked."""
        breakdown = object.__new__(cls)
        object.__setattr__(breakdown, "parts", parts)
        object.__setattr__(breakdown, "total_usd", _checked_total(parts))
        return breakdown

    @classmethod
    def of_four(cls, n1: str, a1: float, n2: str, a2: float, n3: str, a3: float, n4: str,
                a4: float) -> CostBreakdown:
        """:meth:`of_floats` of four distinct named floats (a cloud quote's parts: two hundred a plan), their range
        checked without building a list; the same total and the same error as :meth:`of_floats`."""
        total = math.fsum((a1, a2, a3, a4))
        parts = ((n1, a1), (n2, a2), (n3, a3), (n4, a4))
        if not (total < math.inf and a1 >= 0.0 and a2 >= 0.0 and a3 >= 0.0 and a4 >= 0.0):
            total = _checked_total(parts)  # raises, naming the part
        breakdown = object.__new__(cls)
        object.__setattr__(breakdown, "parts", parts)
        object.__setattr__(breakdown, "total_usd", total)
        return breakdown

    def as_dict(self) -> dict[str, float]:
        """The parts as a plain ``{name: usd}`` dict (for JSON ``cost_breakdown_usd``)."""
        return dict(self.parts)

    def get(self, name: str) -> float:
        """One part in USD, 0.0 when the breakdown has no such part."""
        return dict(self.parts).get(name, 0.0)

    def scaled(self, factor: float) -> CostBreakdown:
        """Every part multiplied by ``factor`` (for example the cost of several runs)."""
        if not math.isfinite(factor) or factor < 0:
            raise ValueError(f"scale factor must be finite and zero or more, got {factor!r}")
        return CostBreakdown(tuple((name, usd * factor) for name, usd in self.parts))
