"""What a plan keeps between calls (``service._Kept``: layouts, memory and timings per job) never changes an
answer: a plan made after other plans equals the same plan made cold, byte for byte in its JSON, whether the
earlier plans were of the same job with another budget or price, or of another job."""

from __future__ import annotations

import json

import pytest

from advisor.planner import PlanRequest, plan
from advisor.planner.request import PRICE_AND_BUDGET_FIELDS, request_memo, timing_key, training_software
from advisor.planner.service import forget_kept


def _json(result) -> str:
    return json.dumps(result.to_json(), sort_keys=True)


def _cold(req, catalog) -> str:
    forget_kept()
    return _json(plan(req, catalog=catalog, advise=False))


# (job planned first, the job asked after it): same job with another budget, price or use; another job
PAIRS = [
    (dict(model="llama-3-8b", workload="lora", tokens=2e8), dict(model="llama-3-8b", workload="lora", tokens=5e8)),
    (dict(model="llama-3-8b", workload="lora", tokens=2e8),
     dict(model="llama-3-8b", workload="lora", tokens=2e8, jobs_per_month=4, assumptions={"electricity_usd_per_kwh": 0.4})),
    (dict(model="llama-3-8b", workload="lora"), dict(model="llama-3-8b", workload="lora", seq_len=4096)),
    (dict(model="llama-3-8b", workload="finetune"), dict(model="llama-3-8b", workload="finetune", checkpointing="none")),
    (dict(model="mixtral-8x7b", workload="inference", batch=16, context=4096),
     dict(model="mixtral-8x7b", workload="inference", batch=8, context=4096)),
    (dict(model="mixtral-8x7b", workload="inference"), dict(model="mixtral-8x7b", workload="inference", quant="q8_0")),
    (dict(model="llama-3-70b", workload="pretrain", tokens=1e12), dict(model="llama-3-70b", workload="pretrain",
                                                                        tokens=1e12, power_limit_w=300)),
    # the groups' figures and quotes kept on a timer: another budget in hours; another spot choice, another use or
    # price of the same job and budget
    (dict(model="llama-3-8b", workload="lora", tokens=2e8), dict(model="llama-3-8b", workload="lora", hours=10.0)),
    (dict(model="llama-3-8b", workload="lora", hours=10.0), dict(model="llama-3-8b", workload="lora", hours=30.0)),
    (dict(model="mixtral-8x7b", workload="inference", batch=16, context=4096),
     dict(model="mixtral-8x7b", workload="inference", batch=16, context=4096, spot_offers=False)),
    (dict(model="mixtral-8x7b", workload="inference", batch=16, context=4096),
     dict(model="mixtral-8x7b", workload="inference", batch=16, context=4096, jobs_per_month=30,
          assumptions={"electricity_usd_per_kwh": 0.4, "onprem_electricity_usd_per_kwh": 0.3})),
    # a group's quotes kept by its hours and the use that reaches each price, its options by what they are built of:
    # another use moves a reserved term's price (its hours a month) and every rig's and server's; a use stated for the
    # first time changes a reserved term's note though its hours do not (one job a month of its own hours)
    (dict(model="mixtral-8x7b", workload="inference", batch=16, context=4096, jobs_per_month=2,
          assumptions={"reserved_years": 1}),
     dict(model="mixtral-8x7b", workload="inference", batch=16, context=4096, jobs_per_month=5,
          assumptions={"reserved_years": 1})),
    (dict(model="llama-3-8b", workload="lora", tokens=2e8, jobs_per_month=2, assumptions={"reserved_years": 3}),
     dict(model="llama-3-8b", workload="lora", tokens=2e8, jobs_per_month=2, other_use_hours_per_month=100,
          assumptions={"reserved_years": 3})),
    (dict(model="llama-3-8b", workload="lora", tokens=2e8, assumptions={"reserved_years": 1}),
     dict(model="llama-3-8b", workload="lora", tokens=2e8, jobs_per_month=1, assumptions={"reserved_years": 1})),
    (dict(model="llama-3-8b", workload="lora", tokens=2e8, jobs_per_month=3),
     dict(model="llama-3-8b", workload="lora", tokens=2e8, jobs_per_month=4)),
    (dict(model="llama-3-8b", workload="lora", tokens=2e8), dict(model="llama-3-8b", workload="lora", tokens=2e8,
                                                                 assumptions={"home_gpus_per_rig": 2})),
    # a cloud option's own fields (id, offer, instances) kept on its group by the assumptions: a reserved term names
    # the on-demand options anew (``:reserved-1y``)
    (dict(model="llama-3-70b", workload="pretrain", tokens=1e12),
     dict(model="llama-3-70b", workload="pretrain", tokens=1e12, assumptions={"reserved_years": 1})),
    # --gpu-layers: the timings with layers on the CPU kept on the timer, by the timing (the job's layers)
    (dict(model="llama-3-8b", workload="inference", gpu_layers=16),
     dict(model="llama-3-8b", workload="inference", gpu_layers=16, jobs_per_month=3)),
    (dict(model="llama-3-8b", workload="inference", gpu_layers=16),
     dict(model="llama-3-8b", workload="inference", gpu_layers=24)),
]


@pytest.mark.parametrize("first,then", PAIRS)
def test_a_plan_after_others_equals_the_plan_made_cold(catalog, first, then):
    expected = _cold(PlanRequest.from_mapping(then), catalog)
    forget_kept()
    plan(PlanRequest.from_mapping(first), catalog=catalog, advise=False)
    plan(PlanRequest.from_mapping(then), catalog=catalog, advise=False)  # twice: from what the first one kept
    assert _json(plan(PlanRequest.from_mapping(then), catalog=catalog, advise=False)) == expected


def test_options_kept_for_their_quotes_follow_the_catalog_s_stale_offers(catalog):
    """A catalog of another date (the same accelerators and offers, so every timer is kept) calls other offers stale:
    the options kept with a group's quotes are built again, as a plan made cold builds them."""
    from dataclasses import replace

    later = replace(catalog, date="2030-01-01")
    ask = PlanRequest.from_mapping(dict(model="llama-3-8b", workload="lora", tokens=2e8))
    expected = _cold(ask, later)
    forget_kept()
    plan(ask, catalog=catalog, advise=False)
    got = _json(plan(ask, catalog=later, advise=False))
    assert got == expected
    stale = [o for o in plan(ask, catalog=later, advise=False).options if o.price_stale]
    assert len(stale) > len([o for o in plan(ask, catalog=catalog, advise=False).options if o.price_stale])


def test_the_timing_key_leaves_out_only_budget_and_prices():
    base = PlanRequest.from_mapping(dict(model="llama-3-8b", workload="lora"))
    same = base.model_copy(update={"tokens": 3e9, "jobs_per_month": 2.0, "spot_offers": False})
    assert timing_key(same) == timing_key(base)
    for name, value in (("seq_len", 8192), ("micro_batch", 4), ("precision", "fp8"), ("framework", "unsloth")):
        assert name not in PRICE_AND_BUDGET_FIELDS
        assert timing_key(base.model_copy(update={name: value})) != timing_key(base), name


def test_a_copy_with_changed_fields_does_not_inherit_the_memo():
    """``model_copy`` copies ``__dict__``: what was worked out for the original must not follow the copy."""
    base = PlanRequest.from_mapping(dict(model="llama-3-8b", workload="finetune"))
    assert training_software(base).behaviours.checkpointing == "full"
    request_memo(base)["probe"] = 1
    copy = base.model_copy(update={"checkpointing": "none"})
    assert training_software(copy).behaviours.checkpointing == "none"
    assert "probe" not in request_memo(copy) and request_memo(base)["probe"] == 1


def test_each_accelerator_has_its_own_memory_rule_in_a_catalog_plan(catalog):
    """vLLM's reserve depends on the part (its batch defaults: 8192 tokens on an H100, 2048 on an A100 of the same
    80 GiB), so an option's memory in the whole catalog's plan is the one of a plan of that part alone."""
    ask = dict(model="mixtral-8x7b", workload="inference", batch=16, context=4096)
    whole = plan(PlanRequest.from_mapping(ask), catalog=catalog, advise=False)
    for acc in ("h100-sxm", "a100-80gb-sxm"):
        alone = plan(PlanRequest.from_mapping({**ask, "accelerator": [acc]}), catalog=catalog, advise=False)
        mine = {o.id: o.memory_per_device_bytes for o in whole.options if o.accelerator == acc}
        assert mine and mine == {o.id: o.memory_per_device_bytes for o in alone.options}
    h100 = next(o for o in whole.options if o.accelerator == "h100-sxm")
    a100 = next(o for o in whole.options if o.accelerator == "a100-80gb-sxm")
    assert h100.memory_per_device_bytes > a100.memory_per_device_bytes  # the larger profiled batch


def test_plans_in_threads_give_the_answers_made_cold(catalog):
    """The app plans in worker threads (Planner, Machine, Buy) at once: what they keep is shared and locked, and every
    thread's answer is the one a plan made alone gives."""
    from concurrent.futures import ThreadPoolExecutor

    asks = [dict(p) for pair in PAIRS for p in pair]
    expected = [_cold(PlanRequest.from_mapping(a), catalog) for a in asks]
    forget_kept()
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda a: _json(plan(PlanRequest.from_mapping(a), catalog=catalog, advise=False)),
                            asks * 2))
    assert got == expected * 2


def test_a_cloud_instance_shows_its_own_gpu_count_whatever_node_its_timing_is_shared_with(catalog):
    """Options timed alike share their figures across node sizes (one GPU on a 1-GPU or a 4-GPU instance): each
    instance still shows its own count, gpus_per_node (AWS g5: 1, 4 and 8 A10G; before, every one took the first
    node's 1, and plans made in threads at once, which share timings in another order, gave other counts)."""
    r = plan(PlanRequest.from_mapping(dict(model="llama-3-8b", workload="lora", tokens=2e8)), catalog=catalog,
             advise=False)
    counts = {o.id: o.accelerator_count for o in catalog.offers}
    seen = set()
    for o in r.options:
        if o.kind == "cloud" and o.devices == 1 and o.nodes == 1:
            offer = o.id.removeprefix("cloud:").removesuffix(":spot")
            assert o.gpus_per_node == counts.get(offer, counts.get(offer.rpartition(":")[0])), o.id
            seen.add(o.gpus_per_node)
    assert {1, 4, 8} <= seen


def test_an_accelerator_s_groups_kept_on_its_timer_follow_the_job_s_stacks(catalog):
    """``options._Timer.groups`` keeps the groups of the catalog's nodes by the job's stacks besides the nodes (and
    the link measured on this machine, which the nodes carry too): options made on a kept timer with other stacks
    equal those made on a new timer (a plan reaches them with a new timer too, the stacks being timing inputs; this
    keeps the groups right for any caller)."""
    from advisor.cost.assumptions import CostAssumptions
    from advisor.planner.layouts import MemoryModel
    from advisor.planner.options import options_for
    from advisor.planner.request import budget, resolve_job_model

    req = PlanRequest.from_mapping(dict(model="llama-3-8b", workload="lora", tokens=2e8))
    job = resolve_job_model(req, catalog)
    mem = MemoryModel(req, job.arch, job.params, 2048, 2048, job.weight_bytes, projector_bytes=job.projector_bytes)
    acc = catalog.accelerators["rtx-4090"]
    offers = [o for o in catalog.offers if o.accelerator_id == acc.id]
    a = CostAssumptions()

    def options(wanted, timers):
        found = options_for(req, acc, offers, mem, job.arch, job.params, job.active_params, budget(req, job.params)[0],
                            None, a, None, frozenset(), wanted, timers)
        return [(o.id, o.stack_ok, o.stack_reason, o.cost_usd) for o in found]

    timers: dict = {}
    assert len(options(("pytorch-cuda",), timers)) >= 2 and all(ok for _, ok, _, _ in options(("pytorch-cuda",), {}))
    assert not any(ok for _, ok, _, _ in options(("mlx",), {}))
    for wanted in (("mlx",), ("pytorch-cuda",), ("mlx",)):
        assert options(wanted, timers) == options(wanted, {})


def test_step_costs_set_in_force_plan_the_inference_again(catalog):
    """An inference plan kept under the stored step costs is not the answer under a fit set in force (bench_truth's
    held-out replans): a 70B model over four tensor-parallel H100s slows with 1 ms a layer of step cost."""
    from advisor.catalog.runtimes import step_fit, step_fit_in_force
    from advisor.estimate.step_cost import step_name

    req = {"model": "llama-3.1-70b", "workload": "inference", "runtime": "vllm", "accelerator": ["h100-sxm"],
           "gpus": 4}
    forget_kept()
    stored = _json(plan(PlanRequest.from_mapping(req), catalog=catalog, advise=False))
    slow = step_fit().with_values({step_name("tp_layer", "vllm", "cuda", "fabric"): 1e-3})
    with step_fit_in_force(slow):
        in_force = _json(plan(PlanRequest.from_mapping(req), catalog=catalog, advise=False))
    assert in_force != stored
    assert _json(plan(PlanRequest.from_mapping(req), catalog=catalog, advise=False)) == stored
