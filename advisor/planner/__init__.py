"""Planning a job, one module per step (no module imports a later step):

``request`` (the job schema's request, resolved against the catalog) -> ``layouts`` (parallelism and memory
per device) -> ``options`` (speed and the one pricing path) -> ``result`` (typed result, JSON) ->
``service`` (``plan``) -> ``sensitivity`` (the plan again at other values).

``from advisor.planner import plan, PlanRequest, PlanResult, ...`` keeps working for callers.
"""

from advisor.planner.layouts import DEVICE_COUNTS, TP_CHOICES, Parallelism
from advisor.planner.options import HOME_KINDS, ONPREM_KINDS, trains
from advisor.planner.request import (
    DEFAULT_FINETUNE_TOKENS,
    DEFAULT_INFERENCE_TOKENS,
    PlanInputError,
    PlanRequest,
    resolve_arch,
)
from advisor.planner.result import SCHEMA, OwningCost, PlanOption, PlanResult, Serving
from advisor.planner.sensitivity import SENSITIVITY_PARAMETERS, Tornado, TornadoBar, sensitivity, tornado
from advisor.planner.service import plan

__all__ = [
    "DEFAULT_FINETUNE_TOKENS", "DEFAULT_INFERENCE_TOKENS", "DEVICE_COUNTS", "HOME_KINDS", "ONPREM_KINDS", "OwningCost",
    "Parallelism", "PlanInputError", "PlanOption", "PlanRequest", "PlanResult", "SCHEMA", "SENSITIVITY_PARAMETERS",
    "Serving", "TP_CHOICES", "Tornado", "TornadoBar", "plan", "resolve_arch", "sensitivity", "tornado", "trains",
]
