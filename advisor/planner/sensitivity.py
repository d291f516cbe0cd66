"""How the total job costs and the ranking move with one input: the plan made again at each value.

Each value goes through :func:`advisor.planner.service.plan`, so a sensitivity curve is priced by the
same path as the plan it varies.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from advisor.catalog import Catalog, load_catalog
from advisor.cost.compare import SensitivitySeries, scaled_grid
from advisor.cost.compare import sensitivity as _series
from advisor.estimate.priors import ETA_COMPUTE_PRIOR
from advisor.planner.request import PlanInputError, PlanRequest
from advisor.planner.result import PlanResult
from advisor.planner.service import plan

SENSITIVITY_PARAMETERS = {
    "tokens": "tokens",
    "mfu": "fraction of dense peak",
    "electricity_usd_per_kwh": "USD/kWh",
    "utilisation": "fraction of owned hours used",
}
MFU_FACTORS = (0.5, 0.75, 1.0, 1.25, 1.5)
# The tornado's assumptions by option kind, after tokens and MFU (those that price that kind of option).
TORNADO_PARAMETERS = {
    "home": ("electricity_usd_per_kwh", "utilisation", "hours_per_day", "lifetime_years", "resale_fraction"),
    "onprem": ("onprem_electricity_usd_per_kwh", "onprem_utilisation", "onprem_amortisation_years",
               "onprem_server_overhead", "pue"),
    "cloud": ("spot_rework_factor",),
    "owned": ("electricity_usd_per_kwh", "home_load_factor", "owned_wear_usd_per_gpu_hour"),
}
_SHARES = ("utilisation", "onprem_utilisation")  # fractions of hours in use: varied a quarter to all, at most 1
_CAPS = {"hours_per_day": 24.0, "onprem_hours_per_day": 24.0, "resale_fraction": 0.95, "spot_rework_factor": 1.0}


def _mfu_grid(request: PlanRequest, base: PlanResult) -> tuple[float, ...]:
    """Utilisations around the base one, clamped to (0, 1] (the schema's range of ``mfu``).

    Training varies the MFU of the cheapest option; inference varies the compute efficiency of the
    decode and prefill (``--mfu`` for a serving plan), starting at the cheapest option's runtime's figure.
    """
    if request.workload == "inference":
        best = base.best()
        sw = best.serving.software if best is not None and best.serving is not None else None
        prior = ETA_COMPUTE_PRIOR if sw is None else (
            sw.profile.prefill_eta_quantized if sw.weight_format.quantised else sw.profile.prefill_eta)
        start = request.mfu if request.mfu is not None else prior
    else:
        best = base.best()
        start = best.mfu if best else 0.3
    return tuple(dict.fromkeys(min(v, 1.0) for v in scaled_grid(start, MFU_FACTORS) if v > 0))


def default_grid(request: PlanRequest, parameter: str, base: PlanResult) -> tuple[float, ...]:
    """The values a parameter is varied over, around the base plan's value, in increasing order.

    Tokens: a quarter to four times the budget; MFU: half to 1.5 times (at most 1); a cost assumption: half
    to 1.5 times, utilisation a quarter to all of its value (at most 1).

    Raises:
        PlanInputError: an unknown parameter, or ``tokens`` on a plan with an hours budget.
    """
    described = base.assumptions.describe()
    if parameter == "tokens":
        if base.tokens is None:
            raise PlanInputError("tokens", "a plan with an --hours budget has no token budget to vary")
        return scaled_grid(base.tokens)
    if parameter == "mfu":
        return _mfu_grid(request, base)
    if parameter in described:
        current = getattr(base.assumptions, parameter)
        if isinstance(current, bool) or not isinstance(current, (int, float)):
            raise PlanInputError("sensitivity", f"cannot vary {parameter!r}: it is not a number")
        factors = (0.25, 0.5, 0.75, 1.0) if parameter in _SHARES else (0.5, 0.75, 1.0, 1.25, 1.5)
        cap = 1.0 if parameter in _SHARES else _CAPS.get(parameter, math.inf)
        grid = tuple(min(current * f, cap) for f in factors)
        if isinstance(current, int):
            grid = tuple(max(1, round(v)) for v in grid)
        return tuple(v for v in dict.fromkeys(grid) if _allowed(base.assumptions, parameter, v))
    raise PlanInputError("sensitivity", f"cannot vary {parameter!r}; choose tokens, mfu or a cost assumption")


def _allowed(assumptions, name: str, value: float) -> bool:
    """Whether the assumption's declared rule (``cost/assumptions.py``) accepts the value."""
    try:
        assumptions.with_overrides(**{name: value})
    except (TypeError, ValueError):
        return False
    return True


@dataclass(frozen=True)
class TornadoBar:
    """One assumption of a tornado: its low and high values and the chosen option's total cost at each.

    Attributes:
        parameter / unit: the assumption and the unit of its values.
        low_value / high_value: the ends of its default grid (:func:`default_grid`).
        low_cost_usd / high_cost_usd: the option's total job cost with the assumption at each end
            (None where the option is not in the plan made at that value).
    """

    parameter: str
    unit: str
    low_value: float
    high_value: float
    low_cost_usd: float | None
    high_cost_usd: float | None

    @property
    def swing_usd(self) -> float:
        """How far the total moves between the two ends (0 when one end has no cost)."""
        if self.low_cost_usd is None or self.high_cost_usd is None:
            return 0.0
        return abs(self.high_cost_usd - self.low_cost_usd)


@dataclass(frozen=True)
class Tornado:
    """Which assumption moves the chosen option's total cost most: bars largest swing first."""

    option_id: str
    base_cost_usd: float
    bars: tuple[TornadoBar, ...]

    def as_dict(self) -> dict:
        """Plain data (JSON key ``tornado`` of ``advisor plan --json --sensitivity``; the reports read it)."""
        return {"option": self.option_id, "base_cost_usd": self.base_cost_usd,
                "bars": [{"parameter": b.parameter, "unit": b.unit, "low_value": b.low_value,
                          "high_value": b.high_value, "low_cost_usd": b.low_cost_usd,
                          "high_cost_usd": b.high_cost_usd, "swing_usd": b.swing_usd} for b in self.bars]}


def tornado(request: PlanRequest, catalog: Catalog | None = None, calibration=None, base: PlanResult | None = None,
            option_id: str | None = None, parameters=None, **plan_kw) -> Tornado | None:
    """The tornado of one option (the plan's best by default): each parameter at the ends of its grid.

    Every cost comes from :func:`sensitivity`, so from the plan made again at that value (one pricing path).

    Args:
        request / catalog / calibration / base: as for :func:`sensitivity`.
        option_id: the option to follow (default ``base.best()``).
        plan_kw: what the base plan was given besides the request (``owned``, ``host``, ``limits``).
        parameters: names to vary (default tokens, MFU and the option kind's ``TORNADO_PARAMETERS``; tokens is
            skipped for an hours budget).
    Returns:
        A :class:`Tornado`, or None when the plan has no option that fits.
    Raises:
        PlanInputError: an unknown parameter or a bad value.
    """
    catalog = catalog or load_catalog()
    base = base or plan(request, catalog, calibration, advise=False, **plan_kw)
    chosen = base.option(option_id) if option_id else base.best()
    if chosen is None or not chosen.fits:
        return None
    bars = []
    for name in parameters or ("tokens", "mfu", *TORNADO_PARAMETERS.get(chosen.kind, ())):
        if name == "tokens" and base.tokens is None:
            continue
        grid = default_grid(request, name, base)
        low, high = min(grid), max(grid)
        if low == high:  # a zero default (no wear, no egress) has no range to vary
            continue
        series = sensitivity(request, name, values=(low, high), catalog=catalog, calibration=calibration,
                             top=len(base.options), base=base, **plan_kw)
        costs = dict(series.costs_usd).get(chosen.id, (math.nan, math.nan))
        bars.append(TornadoBar(name, series.unit, low, high, *(None if math.isnan(c) else c for c in costs)))
    bars.sort(key=lambda b: -b.swing_usd)
    return Tornado(chosen.id, chosen.cost_usd, tuple(bars))


def sensitivity(request: PlanRequest, parameter: str, values=None, catalog: Catalog | None = None,
                calibration=None, top: int = 10, base: PlanResult | None = None, **plan_kw) -> SensitivitySeries:
    """How the total job costs and the ranking of the best options move with one parameter.

    Args:
        request: the base plan's request.
        parameter: ``tokens`` (the budget), ``mfu`` (utilisation of the devices), or a cost assumption such as
            ``electricity_usd_per_kwh`` or ``utilisation`` (fraction of owned hours in use).
        values: the parameter values; by default a grid around the base value (a quarter to four times).
        top: follow the ``top`` cheapest fitting options of the base plan.
        base: the plan of ``request`` when the caller has it already (saves planning it again).
        plan_kw: what the base plan was given besides the request (``owned``, ``host``, ``limits``).
    Returns:
        A ``cost.compare.SensitivitySeries`` (plain data via ``as_dict()``) for plotting.
    Raises:
        PlanInputError: an unknown parameter or a bad value.
    """
    catalog = catalog or load_catalog()
    base = base or plan(request, catalog, calibration, advise=False, **plan_kw)
    follow = [o.id for o in base.options if o.fits][:top]
    described = base.assumptions.describe()
    grid = tuple(values) if values else default_grid(request, parameter, base)

    def evaluate(value: float):
        if parameter == "tokens":
            update = {"tokens": value, "hours": None, "epochs": None, "dataset_tokens": None}
        elif parameter == "mfu":
            update = {"mfu": value}
        else:
            update = {"assumptions": {**request.assumptions, parameter: value}}
        try:
            changed = PlanRequest.from_mapping({**request.model_dump(exclude_unset=True), **update})
            result = plan(changed, catalog, calibration, advise=False, **plan_kw)
        except (PlanInputError, ValueError) as exc:
            raise PlanInputError(parameter, str(exc)) from None
        return [(o.hours, o.cost_usd, o.id) for o in result.options if o.id in follow]

    unit = SENSITIVITY_PARAMETERS.get(parameter) or (described[parameter]["unit"] if parameter in described else "")
    return _series(evaluate, parameter, grid, unit)
