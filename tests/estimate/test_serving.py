"""The serving model (advisor/estimate/serving.py, serving_queue.py): capacity, step times and queues against
hand-worked values."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.estimate.serving import (
    Lengths,
    ServerSpec,
    concurrency_limit,
    decode_step_s,
    kv_capacity_tokens,
    lognormal_quantile,
    prefill_s,
    single_request,
)
from advisor.estimate.serving_queue import Targets, erlang_c, knee_curve, max_load, serve_at

GIB = 2**30
# Llama 3 8B in bf16 on one 80 GiB device: KV 2 x 32 layers x 8 heads x 128 x 2 bytes = 131,072 B/token;
# attention per (query, key) pair 4 x 32 x 32 x 128 = 524,288 FLOPs.
KV = 131_072
ATTN = 524_288


def spec(**kw) -> ServerSpec:
    base = dict(weight_bytes=16e9, devices=1, parallel_devices=1, capacity_bytes=80 * GIB, bandwidth_bps=2e12,
                eta_mem=0.8, decode_flops=5e14, prefill_flops=5e14, active_params=8e9, attn_flops_per_pair=ATTN,
                kv_bytes_per_token=KV, memory_fraction=0.9, overhead_bytes=1 * GIB, max_seqs=256, chunk_tokens=0)
    base.update(kw)
    return ServerSpec(**base)


def test_kv_capacity_follows_the_memory_utilisation_rule():
    # 0.9 x 80 GiB - 16 GB weights - 1 GiB = 60,235,669,504 bytes over 131,072 per token.
    assert kv_capacity_tokens(spec()) == 459_561
    # TensorRT-LLM: 0.9 of what is left after the weights and overhead
    trt = spec(memory_fraction=1.0, kv_free_fraction=0.9)
    assert kv_capacity_tokens(trt) == int(0.9 * (80 * GIB - 16e9 - GIB) // KV)
    # Two devices of tensor parallelism: each keeps half the weights, the pools add up.
    two = spec(devices=2, parallel_devices=2)
    assert kv_capacity_tokens(two) == int((2 * (0.9 * 80 * GIB - 8e9 - GIB)) // KV)
    assert kv_capacity_tokens(spec(capacity_bytes=16 * GIB)) == 0  # the weights leave nothing


def test_concurrency_is_the_pool_over_a_request_at_its_mean_length_or_the_slots():
    s = spec(max_seqs=1024)
    # prompt 1000 + (400 - 1) / 2 output = 1199.5 tokens held on average over the decode
    assert concurrency_limit(s, Lengths(1000, 400)) == (int(459_561 // 1199.5), "kv")
    assert concurrency_limit(spec(max_seqs=64), Lengths(1000, 400)) == (64, "seqs")
    # llama.cpp: 8 slots of 4096 tokens fit (32,768 of 459,561); 200 slots of 4096 do not: 112 fit
    slots = spec(batching="slots", memory_fraction=1.0, slot_tokens=4096, max_seqs=8)
    assert concurrency_limit(slots, Lengths(1000, 400)) == (8, "slots")
    many = spec(batching="slots", memory_fraction=1.0, slot_tokens=4096, max_seqs=200)
    pool = 80 * GIB - 16e9 - GIB
    assert concurrency_limit(many, Lengths(1000, 400)) == (int(pool // KV) // 4096, "kv")


def test_a_scheduler_that_never_pauses_a_request_reserves_its_whole_length():
    # TensorRT-LLM's default GUARANTEED_NO_EVICT admits a request only with cache for prompt + output: 1000 + 400
    # tokens each, where a cache grown block by block holds 1199.5 on average (vLLM)
    s = spec(max_seqs=1024, reserve_whole=True)
    assert concurrency_limit(s, Lengths(1000, 400)) == (459_561 // 1400, "kv")
    assert concurrency_limit(spec(max_seqs=64, reserve_whole=True), Lengths(1000, 400)) == (64, "seqs")


def test_decode_step_reads_the_weights_once_and_every_cache_at_its_mean_length():
    # weights 16e9 / (2e12 x 0.8) = 10 ms; 10 caches x 1000 tokens x 131,072 B = 1.31072e9 B -> 0.8192 ms
    assert decode_step_s(spec(), 10, 1000) == pytest.approx(0.010 + 0.00081920, rel=1e-9)
    # the cache read at its own efficiency (the 16-bit figure of the runtime): 1.31072e9 / (2e12 x 0.9)
    assert decode_step_s(spec(eta_kv=0.9), 10, 1000) == pytest.approx(0.010 + 1.31072e9 / 1.8e12, rel=1e-9)
    # at a large batch the compute bound takes over: 2 x 8e9 x 4096 + 4096 x 10 x ATTN over 5e14
    t = decode_step_s(spec(bandwidth_bps=1e15), 4096, 10)
    assert t == pytest.approx((2 * 8e9 * 4096 + 4096 * 10 * ATTN) / 5e14, rel=1e-9)
    assert decode_step_s(spec(step_overhead_s=0.002), 1, 0) == pytest.approx(0.012)


def test_prefill_is_compute_bound_and_counts_attention():
    # 2 x 8e9 x 2000 + 524,288 x 2000 x 2001 / 2 (causal: token i scores i keys) = 3.3049100288e13 FLOPs at
    # 5e14 FLOP/s = 66.1 ms, in series with one read of the weights, 16e9 B at 1.6e12 B/s = 10 ms
    # (compute.prompt_pass_s)
    assert prefill_s(spec(), 2000) == pytest.approx(3.3049100288e13 / 5e14 + 0.010, rel=1e-9)
    # attention at its own rate: the 1.049100288e12 attention FLOPs at 1e14 FLOP/s instead of 5e14
    assert prefill_s(spec(attention_flops=1e14), 2000) == pytest.approx(3.2e13 / 5e14 + 1.049100288e12 / 1e14 + 0.010,
                                                                         rel=1e-9)
    # a one-token prompt reads the weights once, 10 ms, in series with its 2 x 8e9 FLOPs of products (0.032 ms) and
    # scores one key (524,288 FLOPs)
    assert prefill_s(spec(), 1) == pytest.approx(0.010 + 1.6e10 / 5e14 + 524_288 / 5e14, rel=1e-9)


def test_erlang_c_published_values():
    assert erlang_c(1, 0.5) == pytest.approx(0.5)  # M/M/1: P(wait) = rho
    assert erlang_c(2, 1.0) == pytest.approx(1 / 3)  # B(2,1) = 0.2, C = 0.2 / (1 - 0.5 + 0.1)
    assert erlang_c(10, 12.0) == 1.0
    assert erlang_c(1000, 10.0) == 0.0


def test_lognormal_quantiles():
    assert lognormal_quantile(100, 0, 0.95) == 100
    # cv 1: sigma^2 = ln 2, the median is mean x exp(-sigma^2 / 2) = 100 / sqrt(2)
    assert lognormal_quantile(100, 1.0, 0.5) == pytest.approx(100 / math.sqrt(2))
    assert lognormal_quantile(100, 1.0, 0.95) > 200


def test_one_user_sees_the_prefill_and_its_first_token_comes_with_it():
    s = spec()
    p = serve_at(s, Lengths(2000, 200), users=1)
    step = decode_step_s(s, 1, 2000 + 199 / 2)
    assert p.tpot_p50_s == pytest.approx(step, rel=1e-3)
    # the prompt's last position gives the first token: no decode step after the prefill
    assert p.ttft_p50_s == pytest.approx(prefill_s(s, 2000), rel=1e-3)
    # Little's law: one request at a time, each lasting TTFT + 199 steps
    assert p.requests_per_s == pytest.approx(1 / (p.ttft_p50_s + 199 * p.tpot_p50_s), rel=1e-3)


def test_beyond_the_sequences_that_fit_users_wait_for_one():
    s = spec(max_seqs=4)
    inside, outside = serve_at(s, Lengths(500, 100), users=4), serve_at(s, Lengths(500, 100), users=8)
    assert outside.in_service == 4 and outside.waiting == 4 and outside.limit == "seqs"
    # the throughput is that of a full batch, so the four extra users wait one whole request each
    assert outside.requests_per_s == pytest.approx(inside.requests_per_s)
    residence = 4 / inside.requests_per_s
    assert outside.ttft_p50_s - inside.ttft_p50_s == pytest.approx(residence, rel=1e-3)


def test_an_arrival_rate_above_what_the_replica_serves_is_unstable():
    s = spec()
    most = serve_at(s, Lengths(500, 100), users=256).requests_per_s
    assert not serve_at(s, Lengths(500, 100), requests_per_s=most * 1.01).stable
    ok = serve_at(s, Lengths(500, 100), requests_per_s=most * 0.5)
    assert ok.stable and ok.ttft_p95_s >= ok.ttft_p50_s


def test_max_load_is_the_edge_of_the_target():
    s, ln = spec(), Lengths(1000, 300, 0.5, 0.5)
    t = Targets(ttft_p95_s=0.5)
    users, point = max_load(s, ln, t)
    assert users >= 1 and t.met(point)
    assert not t.met(serve_at(s, ln, users=int(users) + 1))
    rate, rpoint = max_load(s, ln, t, by="requests_per_s")
    assert rate > 0 and t.met(rpoint) and not t.met(serve_at(s, ln, requests_per_s=rate * 1.02))
    assert max_load(s, ln, Targets(ttft_p95_s=0.001)) == (0.0, None)  # not even one request


def test_slots_reserve_their_context_and_chunked_prefill_mixes_into_steps():
    slots = spec(batching="slots", memory_fraction=1.0, slot_tokens=2048, max_seqs=4, chunk_tokens=2048)
    p = serve_at(slots, Lengths(1000, 300), users=4)
    assert p.in_service == 4 and p.stable
    alone = serve_at(spec(chunk_tokens=2048), Lengths(4000, 300), users=1)
    # one user: no decode to mix with, the prompt runs on its own
    assert alone.ttft_p50_s == pytest.approx(prefill_s(spec(), 4000), rel=1e-3)


def test_knee_curve_rises_in_throughput_and_latency():
    pts = knee_curve(spec(), Lengths(500, 200))
    assert len(pts) >= 8
    tput = [p.output_tokens_per_s for p in pts]
    assert tput == sorted(tput)
    assert pts[-1].ttft_p50_s > pts[0].ttft_p50_s


@settings(max_examples=60, deadline=None)
@given(users=st.integers(1, 600), prompt=st.floats(1, 8000), output=st.floats(1, 2000),
       cv=st.floats(0, 2), eta=st.floats(0.2, 1.0))
def test_no_request_decodes_faster_than_the_bandwidth_bound_and_p95_is_above_p50(users, prompt, output, cv, eta):
    s = spec(eta_mem=eta, chunk_tokens=2048)
    p = serve_at(s, Lengths(prompt, output, cv, cv), users=users)
    bound = s.bandwidth_bps / s.weight_bytes  # batch-1 bound at efficiency 1, the most any one request sees
    assert p.per_user_tokens_per_s <= bound * (1 + 1e-9)
    assert p.output_tokens_per_s <= p.in_service * bound * (1 + 1e-9)
    assert p.ttft_p95_s >= p.ttft_p50_s > 0 and p.tpot_p95_s >= p.tpot_p50_s > 0
    assert 0 <= p.utilisation <= 1


def test_bad_specs_and_loads_are_refused():
    with pytest.raises(ValueError):
        spec(batching="static")
    with pytest.raises(ValueError):
        spec(eta_mem=1.2)
    with pytest.raises(ValueError):
        serve_at(spec(), Lengths(10, 10))
    with pytest.raises(ValueError):
        Lengths(0, 10)


def test_a_mixture_of_experts_step_reads_the_experts_its_batch_touches():
    # a quarter of the weights per token: one sequence reads 1/4 of 16e9 bytes (2.5 ms at 1.6e12 B/s),
    # two read 1 - (3/4)^2 = 7/16 of them
    moe = spec(expert_fraction=0.25)
    assert decode_step_s(moe, 1, 0) == pytest.approx(0.25 * 0.010, rel=1e-9)
    assert decode_step_s(moe, 2, 0) == pytest.approx(7 / 16 * 0.010, rel=1e-9)
    p = serve_at(moe, Lengths(100, 100), users=1)
    assert p.tpot_p50_s == pytest.approx(decode_step_s(moe, 1, 149.5), rel=1e-3)


def test_a_prompt_pipelines_over_a_layer_split():
    # 4096 tokens in 8 chunks of 512 over 2 devices: (8 + 1) / 16 of one device's compute time
    one = spec(devices=2, parallel_devices=1)
    two = spec(devices=2, parallel_devices=1, pipeline_devices=2)
    mm_att = (2 * 8e9 * 4096 + ATTN * 4096 * 4097 / 2) / 5e14
    # each in series with one read of the weights: 16e9 B at one device's 1.6e12 B/s, 10 ms
    assert prefill_s(one, 4096) == pytest.approx(mm_att + 0.010, rel=1e-9)
    assert prefill_s(two, 4096) == pytest.approx(mm_att * 9 / 16 + 0.010, rel=1e-9)


def test_prompts_on_their_own_queue_as_m_d_1_by_hand():
    # One-second prefills (2e12 FLOPs at 2e12 FLOP/s, no attention), one output token, a negligible decode: a
    # Poisson stream of 0.5 prompts/s is an M/D/1 queue with rho = 0.5, whose mean wait (Pollaczek-Khinchine)
    # is rho S / (2 (1 - rho)) = 0.5 s; the first token is that wait and the 1 s prefill that gives it.
    s = ServerSpec(weight_bytes=1e6, devices=1, parallel_devices=1, capacity_bytes=80e9, bandwidth_bps=1e12,
                   eta_mem=1.0, decode_flops=2e12, prefill_flops=2e12, active_params=1e9, attn_flops_per_pair=0.0,
                   kv_bytes_per_token=1.0, chunk_tokens=0, max_seqs=64)
    p = serve_at(s, Lengths(1000, 1), requests_per_s=0.5)
    assert p.ttft_mean_s == pytest.approx(0.5 + 1.0, rel=0.01)


def test_one_user_in_a_closed_loop_never_waits_and_two_wait_for_the_others_prompt_by_hand():
    # The same server in a closed loop of 100-token outputs: one user alone sees the 1 s prefill, no more.
    s = ServerSpec(weight_bytes=1e6, devices=1, parallel_devices=1, capacity_bytes=80e9, bandwidth_bps=1e12,
                   eta_mem=1.0, decode_flops=2e12, prefill_flops=2e12, active_params=1e9, attn_flops_per_pair=0.0,
                   kv_bytes_per_token=1.0, chunk_tokens=0, max_seqs=64)
    lengths = Lengths(1000, 100)
    one = serve_at(s, lengths, users=1)
    assert one.ttft_mean_s == pytest.approx(1.0, rel=0.001)
    # Two users: each request is R = TTFT + 99 steps; the other's prompt (half the prompt flow X) stalls those
    # steps, so a step comes every 1 ms / (1 - X / 2), X = 2 / R. The wait behind the other's prompt is the
    # M/D/1 mean of that flow: (X / 2) S^2 / 2 / (1 - X S / 2) with S = 1 s.
    two = serve_at(s, lengths, users=2)
    x = two.requests_per_s
    w = 0.5 * (x / 2) * 1.0 / (1.0 - x / 2)
    assert two.ttft_mean_s == pytest.approx(1.0 + w, rel=0.03)
    assert x == pytest.approx(2.0 / (two.ttft_mean_s + 99 * 0.001 / (1 - x / 2)), rel=0.03)


def test_a_chunked_prompt_spans_steps_that_carry_the_decode_and_its_first_token_ends_the_last_by_hand():
    # 100 GB of weights at 1 TB/s: a decode step reads them in 0.1 s. A 300-token prompt in 100-token chunks
    # (2e9 FLOPs a token at 2e12 FLOP/s: 0.1 s a chunk, no attention) rides three steps, each the decode's
    # 1 ms of multiplies plus the chunk's 0.1 s over the 0.1 s read: 0.101 s, so 0.303 s in all, when another
    # sequence decodes. One user alone: no other sequence decodes, so the prompt runs on its own, 0.3 s of
    # compute in series with a 0.1 s read (compute.prompt_pass_s; estimate.serving.single_request, what the plan
    # says of one request).
    s = ServerSpec(weight_bytes=1e11, devices=1, parallel_devices=1, capacity_bytes=200e9, bandwidth_bps=1e12,
                   eta_mem=1.0, decode_flops=2e12, prefill_flops=2e12, active_params=1e9, attn_flops_per_pair=0.0,
                   kv_bytes_per_token=1.0, chunk_tokens=100, max_seqs=64)
    one = serve_at(s, Lengths(300, 50), users=1)
    assert one.ttft_mean_s == pytest.approx(0.4, rel=0.001)
    assert one.ttft_p50_s == pytest.approx(single_request(s, 300, 50).ttft_s, rel=1e-9)
    assert one.tpot_p50_s == pytest.approx(0.1, rel=0.001)


def test_a_prefill_pass_pays_its_fixed_time_once_a_pass_by_hand():
    """``prefill_overhead_s`` (a prefill pass's kernels launched from the host: ``planner.serve_spec.
    prefill_overhead_s``) adds once to one prompt alone, once a step to prompts started together and once a chunk to
    a prompt whose chunks ride on decode steps; a decode step does not pay it."""
    from advisor.estimate.serving import (
        batch_prefill_s,
        decode_step_s,
        prefill_in_service,
        prefill_pass_overhead_s,
        prefill_s,
    )

    plain = spec(step_overhead_s=0.002, chunk_tokens=2048)
    eager = spec(step_overhead_s=0.002, chunk_tokens=2048, prefill_overhead_s=0.030)
    assert prefill_pass_overhead_s(eager) == pytest.approx(0.032)
    # one 1,000-token prompt alone: 30 ms more
    assert prefill_s(eager, 1000) - prefill_s(plain, 1000) == pytest.approx(0.030, rel=1e-9)
    # four 1,000-token prompts started together fill ceil(4000 / 2048) = 2 steps: 2 x 30 ms more
    (n0, t0), (n1, t1) = batch_prefill_s(plain, 4, 1000), batch_prefill_s(eager, 4, 1000)
    assert n0 == n1 == 2 and t1 - t0 == pytest.approx(0.060, rel=1e-9)
    # a 5,000-token prompt beside 8 decoding sequences: ceil(5000 / 2048) = 3 mixed steps, 3 x 30 ms more
    assert prefill_in_service(eager, 5000)(8, 1500) - prefill_in_service(plain, 5000)(8, 1500) \
        == pytest.approx(0.090, rel=1e-9)
    assert decode_step_s(eager, 8, 1500) == decode_step_s(plain, 8, 1500)
    with pytest.raises(ValueError):
        spec(prefill_overhead_s=-1e-3)


def test_one_user_first_token_is_the_prompt_alone_with_the_pass_time():
    """At one user the served first token is the prompt's prefill alone, the pass's fixed time included (the plan's
    one request: ``single_request``)."""
    from advisor.estimate.serving import Lengths, prefill_s, single_request
    from advisor.estimate.serving_queue import serve_at

    eager = spec(step_overhead_s=0.002, chunk_tokens=2048, prefill_overhead_s=0.030)
    lengths = Lengths(1000, 200)
    p = serve_at(eager, lengths, users=1)
    assert p.ttft_p50_s == pytest.approx(prefill_s(eager, 1000), rel=1e-9)
    assert single_request(eager, 1000, 200).ttft_s == pytest.approx(prefill_s(eager, 1000), rel=1e-12)


@settings(max_examples=60, deadline=None)
@given(users=st.integers(1, 600), prompt=st.floats(1, 4000), output=st.floats(2, 1000), host=st.floats(0, 500e-6),
       batch=st.floats(1, 2048), ctx=st.floats(0, 8000))
def test_a_host_bound_step_is_never_shorter_than_either_side_and_only_slows_the_load(users, prompt, output, host,
                                                                                     batch, ctx):
    # the host's next step overlaps the devices' (TensorRT-LLM's overlap scheduler): a step is the longer of the two,
    # so it is at least the host's time and the devices' step, and a load served with it is no faster than without
    free, bound = spec(chunk_tokens=2048), spec(chunk_tokens=2048, host_overlap_s=host)
    step = decode_step_s(bound, batch, ctx)
    assert step >= decode_step_s(free, batch, ctx) and step >= host * batch * (1 - 1e-12)
    assert step == pytest.approx(max(decode_step_s(free, batch, ctx), host * batch), rel=1e-12)
    lengths = Lengths(prompt, output, 0.5, 0.5)
    with_host, without = serve_at(bound, lengths, users=users), serve_at(free, lengths, users=users)
    # (within 0.1 %: the solve's tolerance and, for prompts of a few tokens, the first token's spread term; a
    # prompt's chunks once each took the whole of the host's slack, and a load ran 9 % faster with the host)
    assert with_host.output_tokens_per_s <= without.output_tokens_per_s * (1 + 1e-3)
    assert with_host.tpot_p50_s >= without.tpot_p50_s * (1 - 1e-3)
