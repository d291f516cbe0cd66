"""What serving plans keep between calls (``planner.serve._kept_replicas``: each accelerator's replica, launch values
and cache per job) never changes an answer: a serving job sized after others equals the same job sized cold, byte
for byte in its ``advisor.serve/1`` JSON, whether the earlier jobs had another load, targets or hardware list, or
were other jobs; and the key a job's replicas are kept by holds every field a replica reads."""

from __future__ import annotations

from dataclasses import fields

import pytest

from advisor.estimate.serving_queue import clear_caches
from advisor.job.serve import ServeJob
from advisor.planner.owned import parse_own
from advisor.planner.request import PRICE_AND_BUDGET_FIELDS
from advisor.planner.serve import (
    _REPLICA_FIELDS,
    LOAD_AND_TARGET_FIELDS,
    ServeOption,
    forget_prices,
    forget_replicas,
    replica_key,
    serve_plan,
)
from advisor.planner.serve_advice import changes_of
from advisor.report.serve_json import serve_document, serve_json_text

PARTS = ["h100-sxm", "rtx-4090", "a100-80gb-sxm", "mi300x", "l4"]


def _json(values: dict, catalog) -> str:
    job = ServeJob.from_mapping(values)
    result = serve_plan(job, catalog, owned=tuple(parse_own(job.own, catalog)))
    return serve_json_text(serve_document(result, changes_of(result)))


def _cold(values: dict, catalog) -> str:
    forget_replicas()
    forget_prices()
    clear_caches()
    return _json(values, catalog)


FIVE = dict(model="llama-3.1-8b", quant="q4_k_m", runtime="llama.cpp", own=["2xrtx-3090"], accelerator=PARTS,
            users=5, prompt_tokens=1000, output_tokens=300, ttft_p95_s=2.0)
RATE = dict(model="llama-3-8b", runtime="vllm", accelerator=PARTS, requests_per_s=2.0, prompt_tokens=500,
            output_tokens=200, ttft_p95_s=1.0, tpot_p95_s=0.05)
# (job sized first, the job asked after it): another load (llama.cpp's slots follow the users), targets, hardware
# list or prices; another length, cache format or batch limit; another job
PAIRS = [
    (FIVE, {**FIVE, "users": 6}),
    (FIVE, {**FIVE, "ttft_p95_s": 0.5, "tokens_per_s_per_user": 20.0}),
    (FIVE, {**FIVE, "accelerator": PARTS[:2], "spot_offers": False}),
    (FIVE, {**FIVE, "prompt_tokens": 2000}),
    (FIVE, {**FIVE, "kv_cache_bits": 8}),
    (FIVE, {**FIVE, "max_seqs": 3}),
    (RATE, {**RATE, "requests_per_s": 5.0, "assumptions": {"electricity_usd_per_kwh": 0.4}}),
    (RATE, {**RATE, "assumptions": {"electricity_usd_per_kwh": 0.4, "onprem_electricity_usd_per_kwh": 0.3}}),
    (RATE, {**RATE, "prompt_spread": 1.0, "output_spread": 0.5}),
    (RATE, {**RATE, "lengths": "sharegpt"}),
    (RATE, {**RATE, "context": 8192}),
    (RATE, FIVE),
]


@pytest.mark.parametrize("first,then", PAIRS)
def test_a_serve_after_others_equals_the_serve_made_cold(catalog, first, then):
    expected = _cold(then, catalog)
    forget_replicas()
    forget_prices()
    _json(first, catalog)
    _json(then, catalog)  # twice: the second from what the first kept
    assert _json(then, catalog) == expected


def test_the_replica_key_leaves_out_only_load_targets_budget_and_prices():
    assert set(_REPLICA_FIELDS) == set(ServeJob.model_fields) - LOAD_AND_TARGET_FIELDS - PRICE_AND_BUDGET_FIELDS
    base = ServeJob.from_mapping(RATE)
    same = ServeJob.from_mapping({**RATE, "requests_per_s": 9.0, "ttft_p95_s": 3.0, "accelerator": ["l4"],
                                  "assumptions": {"electricity_usd_per_kwh": 0.4}})
    assert replica_key(same) == replica_key(base)
    for name, value in (("prompt_tokens", 900), ("output_tokens", 100), ("prompt_spread", 0.5),
                        ("output_spread", 0.5), ("lengths", "alpaca"), ("max_seqs", 7), ("kv_cache_bits", 8),
                        ("context", 4096), ("runtime", "sglang"), ("quant", "fp8"), ("tp", 2)):
        assert name in _REPLICA_FIELDS
        changed = ServeJob.from_mapping({**RATE, name: value})
        assert replica_key(changed) != replica_key(base), name


def test_a_kept_replica_is_the_one_built_cold(catalog):
    """The kept spec, launch and cache of a catalog option are those of the same option sized with nothing kept."""
    job = ServeJob.from_mapping({**RATE, "requests_per_s": 3.0})
    forget_replicas()
    cold = {o.id: o for o in serve_plan(job, catalog).options}
    warm = {o.id: o for o in serve_plan(ServeJob.from_mapping(RATE), catalog).options}
    again = {o.id: o for o in serve_plan(job, catalog).options}
    assert cold.keys() == again.keys() == warm.keys()
    for oid, o in cold.items():
        assert again[oid].spec == o.spec and again[oid].launch == o.launch, oid
        assert again[oid].kv_capacity_tokens == o.kv_capacity_tokens and again[oid].point == o.point, oid


def test_a_catalog_option_is_the_record_its_init_makes(catalog):
    """Catalog options are set from their replica's shared fields and each quote's own (``_catalog_options``): each
    equals ``ServeOption(...)`` of its fields, every field set."""
    result = serve_plan(ServeJob.from_mapping({**RATE, "accelerator": []}), catalog)
    assert len(result.options) > 150
    for o in result.options:
        made = ServeOption(**{f.name: getattr(o, f.name) for f in fields(ServeOption)})
        assert vars(made) == vars(o), o.id


def test_the_advice_sizes_its_changes_on_the_catalog_the_job_was_sized_on(catalog):
    """``serve_advice`` resizes on ``ServeResult.catalog`` (not the default catalog read again per change)."""
    result = serve_plan(ServeJob.from_mapping({**FIVE, "ttft_p95_s": 0.05}), catalog,
                        owned=tuple(parse_own(("2xrtx-3090",), catalog)))
    assert result.catalog is catalog
    changes = changes_of(result)
    assert changes and all(isinstance(c, list) for c in changes.values())


def test_serves_in_threads_give_the_answers_made_cold(catalog):
    """The app sizes in worker threads (the Serve page, its advice): the kept replicas, quotes and queues are shared,
    and every thread's answer is the one a serve made alone gives."""
    from concurrent.futures import ThreadPoolExecutor

    asks = [FIVE, {**FIVE, "users": 6}, RATE, {**RATE, "requests_per_s": 5.0}]
    expected = [_cold(a, catalog) for a in asks]
    forget_replicas()
    forget_prices()
    clear_caches()
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda a: _json(a, catalog), asks * 2))
    assert got == expected * 2


def test_step_costs_set_in_force_size_the_replicas_again(catalog):
    """A fit of the step costs set in force (bench_truth's held-out replans) is not answered from replicas kept
    under the stored one: a multi-GPU tensor-parallel replica's step changes with the per-layer time (here 1 ms a
    layer against the stored tens of microseconds: its one request slows)."""
    from advisor.catalog.runtimes import step_fit, step_fit_in_force
    from advisor.estimate.step_cost import step_name

    job = dict(model="llama-3.1-70b", runtime="vllm", accelerator=["h100-sxm"], tp=4, users=1, prompt_tokens=500,
               output_tokens=200)
    forget_replicas()
    stored = _json(job, catalog)
    slow = step_fit().with_values({step_name("tp_layer", "vllm", "cuda", "fabric"): 1e-3})
    with step_fit_in_force(slow):
        in_force = _json(job, catalog)
    assert in_force != stored
    assert _json(job, catalog) == stored  # the stored fit again: its own kept replicas
