"""How the total job costs and the ranking move with one input: the plan made again at each value.

Each value goes through :func:`advisor.planner.service.plan`, so a sensitivity curve is priced by the
same path as the plan it varies.
"""

from __future__ import annotations

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


def _mfu_grid(request: PlanRequest, base: PlanResult) -> tuple[float, ...]:
    """Utilisations around the base one, clamped to (0, 1] (the schema's range of ``mfu``).

    Training varies the MFU of the cheapest option; inference varies the compute efficiency of the
    decode and prefill (``--mfu`` for a serving plan), starting at its prior.
    """
    if request.workload == "inference":
        start = request.mfu if request.mfu is not None else ETA_COMPUTE_PRIOR
    else:
        best = base.best()
        start = best.mfu if best else 0.3
    return tuple(dict.fromkeys(min(v, 1.0) for v in scaled_grid(start, MFU_FACTORS) if v > 0))


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
    if parameter == "tokens":
        if base.tokens is None:
            raise PlanInputError("tokens", "a plan with an --hours budget has no token budget to vary")
        grid = values or scaled_grid(base.tokens)
    elif parameter == "mfu":
        grid = values or _mfu_grid(request, base)
    elif parameter in described:
        current = getattr(base.assumptions, parameter)
        factors = (0.5, 0.75, 1.0, 1.25, 1.5) if parameter != "utilisation" else (0.25, 0.5, 0.75, 1.0)
        grid = values or tuple(min(current * f, 1.0) if parameter == "utilisation" else current * f for f in factors)
        grid = tuple(dict.fromkeys(grid))
    else:
        raise PlanInputError("sensitivity", f"cannot vary {parameter!r}; choose tokens, mfu or a cost assumption")

    def evaluate(value: float):
        if parameter == "tokens":
            update = {"tokens": value, "hours": None, "epochs": None, "dataset_tokens": None}
        elif parameter == "mfu":
            update = {"mfu": value}
        else:
            update = {"assumptions": {**request.assumptions, parameter: value}}
        try:
            changed = PlanRequest.from_mapping({**request.model_dump(), **update})
            result = plan(changed, catalog, calibration, advise=False, **plan_kw)
        except (PlanInputError, ValueError) as exc:
            raise PlanInputError(parameter, str(exc)) from None
        return [(o.hours, o.cost_usd, o.id) for o in result.options if o.id in follow]

    unit = SENSITIVITY_PARAMETERS.get(parameter) or (described[parameter]["unit"] if parameter in described else "")
    return _series(evaluate, parameter, grid, unit)
