"""PlanOption.build (the planner's fast constructor) gives the object __init__ gives, and checks the fields."""

from __future__ import annotations

import dataclasses

import pytest

from advisor.catalog import load_catalog
from advisor.planner import PlanRequest, plan
from advisor.planner.result import OwningCost, PlanOption


@pytest.fixture(scope="module", params=[
    dict(model="llama-3-8b", workload="lora", tokens=2e8),
    dict(model="mixtral-8x7b", workload="inference", batch=16, context=4096),  # serving figures on every option
    dict(model="llama-3-8b", workload="lora", assumptions={"reserved_years": 1}),  # reserved terms' notes
])
def options(request):
    cat = load_catalog(use_user_file=False)
    return plan(PlanRequest.from_mapping(request.param), catalog=cat).options


def _init_values(o: PlanOption) -> dict:
    return {f.name: getattr(o, f.name) for f in dataclasses.fields(o) if f.init}


def test_build_equals_init_for_every_option_of_a_plan(options):
    assert len(options) > 100
    for o in options:
        via_init = PlanOption(**_init_values(o))
        assert via_init == o
        assert via_init.cost_usd == o.cost_usd == o.breakdown.total_usd
        assert vars(via_init) == vars(o)


def test_owning_cost_of_equals_init_for_every_owned_option(options):
    owned = [o.owning for o in options if o.owning is not None]
    assert owned  # the catalog's rigs and servers
    for cost in owned:
        via_init = OwningCost(cost.fixed_usd_per_device, cost.variable_usd_per_device_hour, cost.holding)
        assert via_init == cost and vars(via_init) == vars(cost)
        assert vars(OwningCost.of(cost.fixed_usd_per_device, cost.variable_usd_per_device_hour)) == vars(
            OwningCost(cost.fixed_usd_per_device, cost.variable_usd_per_device_hour))


def test_build_fills_the_declared_defaults(options):
    o = options[0]
    required = {f.name for f in dataclasses.fields(o) if f.init and f.default is dataclasses.MISSING}
    values = {k: v for k, v in _init_values(o).items() if k in required}
    built = PlanOption.build({}, **values)
    assert built == PlanOption(**values)
    assert built.provider == "" and built.nodes == 1 and built.stack_ok is True


def test_build_refuses_unknown_and_missing_fields(options):
    values = _init_values(options[0])
    with pytest.raises(TypeError, match="unknown fields \\['colour'\\]"):
        PlanOption.build(values, colour="red")
    values.pop("hours")
    with pytest.raises(TypeError, match="missing \\['hours'\\]"):
        PlanOption.build(values)
