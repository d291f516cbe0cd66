"""``advisor serve``'s KV pool splits the cache as the plan's memory does (``estimate.memory.kv_shards``): under tensor
parallelism into at most as many parts as KV heads, and MLA's latent cache whole on every GPU (vLLM's
``get_num_kv_heads``, ``num_kv_heads // tp`` at least 1 a rank; ``MLAAttentionSpec`` with one KV head).

DeepSeek-V3 (MLA, 61 layers of a 512 + 64 latent) in fp8 on 8 x H200: every GPU keeps the whole cache, so the pool
holds one GPU's free memory of tokens, 1/8 of what dividing by the GPU count gave. Qwen3-235B-A22B (4 KV heads) on 8 x
H100: 4 parts, half. Llama-3.1-70B (8 KV heads) on 4 x H100: 4 parts, as before.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from advisor.catalog.load import bundled_catalog
from advisor.estimate import memory
from advisor.estimate.serving import kv_pool_bytes
from advisor.job.serve import ServeJob
from advisor.planner import PlanRequest, plan
from advisor.planner.serve import serve_plan

CASES = (  # model, precision, accelerator, GPUs, parts of the cache, parts the GPU count gave
    ("deepseek-v3", "fp8", "h200", 8, 1),
    ("qwen3-235b-a22b", "fp8", "h100-sxm", 8, 4),
    ("llama-3.1-70b", "bf16", "h100-sxm", 4, 4),
)


@pytest.fixture(scope="module")
def catalog():
    return bundled_catalog()


def _both(catalog, model, precision, acc, n):
    common = dict(model=model, precision=precision, runtime="vllm", accelerator=(acc,), own=(f"{n}x{acc}",),
                  spot_offers=False, prompt_tokens=1000, output_tokens=200)
    result = plan(PlanRequest.from_mapping({**common, "workload": "inference", "gpus": n}), catalog, advise=False)
    option = next(o for o in result.options if o.devices == n and o.accelerator == acc and o.kind == "owned")
    served = serve_plan(ServeJob.from_mapping({**common, "tp": n, "users": 1}), catalog)
    serve_option = next(o for o in served.options if o.owned and o.devices_per_replica == n)
    return result, option, served, serve_option


@pytest.mark.parametrize("model,precision,acc,n,parts", CASES)
def test_plan_and_serve_split_the_cache_alike(catalog, model, precision, acc, n, parts):
    result, option, served, so = _both(catalog, model, precision, acc, n)
    arch = served.model.arch
    assert memory.kv_shards(arch, n) == parts == so.spec.kv_shards
    # one figure: the plan's largest context is serve's cache
    assert so.kv_capacity_tokens == option.serving.kv_capacity_tokens
    # the pool is one GPU's free memory times the parts, each token's cache whole (all layers) in it
    spec = so.spec
    free = spec.capacity_bytes * spec.memory_fraction - spec.weight_bytes / n - spec.overhead_bytes
    assert kv_pool_bytes(spec) == pytest.approx(free * parts * spec.kv_free_fraction, rel=1e-12)
    per_token = served.model.kv_bytes_per_token()
    assert so.kv_capacity_tokens == pytest.approx(kv_pool_bytes(spec) / per_token, abs=1.0)
    # against dividing by the GPU count: n / parts times fewer tokens where the GPUs hold copies
    spread = served.model.cache_tokens(kv_pool_bytes(replace(spec, kv_shards=0)))
    assert spread / so.kv_capacity_tokens == pytest.approx(n / parts, rel=1e-5)


def test_deepseek_v3_latent_cache_by_hand(catalog):
    """61 layers x (512 + 64) latent values, 8-bit with fp8 weights: 35,136 bytes a token, whole on each GPU."""
    _, _, served, so = _both(catalog, "deepseek-v3", "fp8", "h200", 8)
    assert served.model.kv_bytes_per_token() == 61 * (512 + 64)
    spec = so.spec
    free = spec.capacity_bytes * spec.memory_fraction - spec.weight_bytes / 8 - spec.overhead_bytes
    assert so.kv_capacity_tokens == pytest.approx(free / 35_136, abs=1.0)


def test_tensorrt_llm_moe_runs_attention_data_parallel(catalog):
    """TensorRT-LLM's documented MoE runs (perf-overview: ``enable_attention_dp`` with expert parallelism) spread the
    requests over the GPUs, each request's cache whole on its GPU: the pool is all eight GPUs' free memory, and one
    request's longest context is one GPU's, in the plan and in serve alike (Qwen3-235B-A22B fp8 on 8 x H100)."""
    common = dict(model="qwen3-235b-a22b", precision="fp8", runtime="tensorrt-llm", accelerator=("h100-sxm",),
                  own=("8xh100-sxm",), spot_offers=False, prompt_tokens=1000, output_tokens=200)
    result = plan(PlanRequest.from_mapping({**common, "workload": "inference", "gpus": 8}), catalog, advise=False)
    option = next(o for o in result.options if o.devices == 8 and o.kind == "owned")
    served = serve_plan(ServeJob.from_mapping({**common, "tp": 8, "users": 1}), catalog)
    so = next(o for o in served.options if o.owned and o.devices_per_replica == 8)
    spec = so.spec
    assert spec.kv_shards == 8
    free = spec.capacity_bytes * spec.memory_fraction - spec.weight_bytes / 8 - spec.overhead_bytes
    assert kv_pool_bytes(spec) == pytest.approx(8 * free * spec.kv_free_fraction, rel=1e-12)
    one_gpu = served.model.cache_tokens(free * spec.kv_free_fraction)
    assert so.kv_capacity_tokens == option.serving.kv_capacity_tokens
    assert so.kv_capacity_tokens == pytest.approx(one_gpu, abs=1.0)


@pytest.mark.parametrize("model,precision,acc,n,parts", CASES)
def test_each_gpu_reads_its_copy_of_a_replicated_cache(catalog, model, precision, acc, n, parts):
    """A head is not split: where the GPUs hold copies of the cache (MLA's latent, fewer KV heads than GPUs) each
    reads its whole copy, so a decode step reads n / parts times a split cache's bytes, in the plan's request and in
    serve's step model alike (DeepSeek-V3 on 8 GPUs: 8; Qwen3-235B's 4 heads on 8: 2; Llama 70B's 8 on 4: 1)."""
    result, option, served, so = _both(catalog, model, precision, acc, n)
    assert so.spec.kv_replicas == n / parts
    # the plan's one request: its decode's cache read at the replicated bytes (estimate.decode.ServingSpeed)
    from advisor.planner.request import as_run
    from advisor.planner.timing import serving_timing

    accel = catalog.accelerators[acc]
    speed = serving_timing(as_run(result.request, accel), accel, result.arch, result.params, result.active_params,
                           result.lengths, n, None).speed
    assert speed.kv_replicas == n / parts
    one = speed.decode(1, 1000.0, 1000, 200)
    split = replace(speed, kv_replicas=1.0).decode(1, 1000.0, 1000, 200)
    assert (one.tokens_per_s < split.tokens_per_s) == (parts < n)
