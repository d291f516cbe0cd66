"""The serving step as engines run it, worked by hand: the matrix products and the attention in series, what each
further running sequence adds (host time, tensor-parallel all-reduce traffic, expert dispatch), a batch of equal
requests started together, and the analytical queue against a simulation at high load with those costs in it."""

from __future__ import annotations

import dataclasses
import math

import pytest

from advisor.catalog import load_catalog
from advisor.estimate import calibration as C
from advisor.estimate.model import ModelArch
from advisor.estimate.serving import Lengths, ServerSpec, batch_prefill_s, decode_step_s
from advisor.estimate.serving_queue import serve_at, serve_together
from advisor.planner.placement import intra_node_bps
from advisor.planner.serve_spec import RUNTIME_SERVING, per_sequence_s, per_token_traffic_s

from .test_serving_des import simulate

GIB = 2**30


def spec(**kw) -> ServerSpec:
    base = dict(weight_bytes=16e9, devices=1, parallel_devices=1, capacity_bytes=80 * GIB, bandwidth_bps=2e12,
                eta_mem=0.8, decode_flops=4e14, prefill_flops=4e14, active_params=8e9, attn_flops_per_pair=524_288,
                kv_bytes_per_token=131_072, memory_fraction=0.9, overhead_bytes=GIB, max_seqs=256, chunk_tokens=2048,
                step_overhead_s=1e-3)
    base.update(kw)
    return ServerSpec(**base)


def test_a_decode_step_runs_its_matrix_products_then_its_attention():
    s = spec(per_seq_s=20e-6)
    # one sequence at 1,000 cached tokens: weights 16e9 / 1.6e12 = 10 ms, its cache 1000 * 131072 / 1.6e12
    # = 0.08192 ms; the arithmetic is far below both: the single-request step, no per-sequence cost
    assert decode_step_s(s, 1, 1000) == pytest.approx(10e-3 + 0.08192e-3 + 1e-3, rel=1e-12)
    # 512 sequences: products max(10 ms, 2 * 8e9 * 512 / 4e14 = 20.48 ms); attention max(512 * 0.08192 ms
    # = 41.94 ms, 512 * 1000 * 524288 / 4e14 = 0.671 ms); + 1 ms + 511 * 20 us
    expected = 20.48e-3 + 512 * 0.08192e-3 + 1e-3 + 511 * 20e-6
    assert decode_step_s(s, 512, 1000) == pytest.approx(expected, rel=1e-12)


def test_prompts_started_together_fill_the_prefill_budget_step_by_step():
    s = spec()
    # 4 prompts of 1,000 tokens in steps of 2,048: ceil(4000 / 2048) = 2 steps; each prompt's products 2 * 8e9 *
    # 1000 / 4e14 = 40 ms and causal attention 524288 * 1000 * 1001 / 2 / 4e14 = 0.65602 ms, spread evenly: 81.31 ms a
    # step,
    # in series with the step's read of the weights, 16e9 B at 1.6e12 B/s = 10 ms (compute.prompt_pass_s)
    steps, t = batch_prefill_s(s, 4, 1000)
    per = 4 * (40e-3 + 0.65601536e-3) / 2
    assert steps == 2 and t == pytest.approx(2 * (per + 10e-3 + 1e-3), rel=1e-12)


def test_prompt_tokens_at_load_pay_the_link_time_a_decode_token_does():
    # 20 us of tensor-parallel all-reduce a token (its part of the 30 us a further sequence adds): 512 prompt tokens
    # in a step add 512 x 20 us = 10.24 ms to it, in series with the kernels
    s = spec(per_seq_s=30e-6, per_token_s=20e-6)
    plain = spec(per_seq_s=30e-6)
    # the four tokens' products (0.16 ms) under the 10 ms read, the prompt's 2 * 8e9 * 512 / 4e14 = 20.48 ms in series
    # with them (serving.products_s)
    extra = 10e-3 + 2.0 * 8e9 * 512 / 4e14
    assert decode_step_s(s, 4, 1000, 512) - decode_step_s(plain, 4, 1000, 512) == pytest.approx(512 * 20e-6)
    assert decode_step_s(plain, 4, 1000, 512) == pytest.approx(
        extra + 4 * 1000 * 131_072 / 1.6e12 + 1e-3 + 3 * 30e-6, rel=1e-12)
    # four prompts started together: the three beyond the first pay it (one prompt alone is the plan's prefill)
    _, t4 = batch_prefill_s(s, 4, 1000)
    _, p4 = batch_prefill_s(plain, 4, 1000)
    assert t4 - p4 == pytest.approx(3 * 1000 * 20e-6, rel=1e-9)
    assert batch_prefill_s(s, 1, 1000) == batch_prefill_s(plain, 1, 1000)
    with pytest.raises(ValueError):
        spec(per_seq_s=10e-6, per_token_s=20e-6)  # a token's link time is part of a sequence's


def test_equal_requests_started_together_finish_together():
    s, lengths = spec(), Lengths(1000, 101)
    p = serve_together(s, lengths, 4)
    steps, t_pre = batch_prefill_s(s, 4, 1000)
    t_round = t_pre + 100 * decode_step_s(s, 4, lengths.mean_context)
    assert p.output_tokens_per_s == pytest.approx(4 * 101 / t_round, rel=1e-12)
    # prompts 1 and 2 end in the first step (2,048 tokens hold 2.048 prompts), 3 and 4 in the second
    firsts = [t_pre / 2, t_pre / 2, t_pre, t_pre]
    assert p.ttft_mean_s == pytest.approx(sum(firsts) / 4, rel=1e-12)
    assert p.tpot_p50_s == pytest.approx(sum((t_round - f) / 100 for f in firsts) / 4, rel=1e-12)
    assert p.itl_s == pytest.approx(decode_step_s(s, 4, lengths.mean_context), rel=1e-12)
    # twice the users of the sequences that fit: the other half waits a round
    q = serve_together(spec(max_seqs=4), lengths, 8)
    assert q.ttft_mean_s == pytest.approx(p.ttft_mean_s + t_round, rel=1e-12)
    assert q.output_tokens_per_s == pytest.approx(p.output_tokens_per_s, rel=1e-12)


def test_a_round_sent_by_clients_starts_with_its_first_request_alone():
    # LMDeploy's profile_generation threads each send the next request as their last one ends: the round's first
    # request wakes the idle engine alone (its plan's one prompt), the other three wait for that step and are then
    # prefilled together, their first tokens that much later
    s, lengths = spec(), Lengths(1000, 101)
    _, t1 = batch_prefill_s(s, 1, 1000)
    steps, t3 = batch_prefill_s(s, 3, 1000)
    # 3,000 tokens in two steps of 1,500 each (the budget of 2,048 spread evenly): the first of the three ends in the
    # first step, the other two in the second
    assert steps == 2
    firsts = [t1, t1 + t3 / 2, t1 + t3, t1 + t3]
    p = serve_together(s, lengths, 4, clients=True)
    assert p.ttft_mean_s == pytest.approx(sum(firsts) / 4, rel=1e-12)
    t_round = t1 + t3 + 100 * decode_step_s(s, 4, lengths.mean_context)
    assert p.output_tokens_per_s == pytest.approx(4 * 101 / t_round, rel=1e-12)
    assert p.tpot_p50_s == pytest.approx(sum((t_round - f) / 100 for f in firsts) / 4, rel=1e-12)
    assert p.itl_s == serve_together(s, lengths, 4).itl_s  # the decode steps are the batch's either way
    # one user: the plan's own request whoever sends it
    assert serve_together(s, lengths, 1, clients=True) == serve_together(s, lengths, 1)


def test_one_token_prompts_at_load_wait_for_the_first_request_s_step():
    # 1-token prompts (LMDeploy's 1/128 rows): queued at once, the round's 16 prompts are one step, the one-user
    # figure whatever the load; sent by clients, 15 of them wait for the first one's step and take the next one
    s, lengths = spec(), Lengths(1, 128)
    _, t1 = batch_prefill_s(s, 1, 1)
    _, t15 = batch_prefill_s(s, 15, 1)
    assert serve_together(s, lengths, 16).ttft_mean_s == pytest.approx(batch_prefill_s(s, 16, 1)[1], rel=1e-12)
    p = serve_together(s, lengths, 16, clients=True)
    assert p.ttft_mean_s == pytest.approx((t1 + 15 * (t1 + t15)) / 16, rel=1e-12)
    # each step the weights' read (16 GB at 0.8 x 2 TB/s: 10 ms), its fixed 1 ms and, added (compute.prompt_pass_s),
    # each prompt token's products (2 x 8e9 FLOPs at 4e14: 40 us; one attention pair, 524,288 FLOPs, is 1.3 ns):
    # one step for the first request, two for the other fifteen
    t_one, t_fifteen = 11e-3 + 40e-6, 11e-3 + 15 * 40e-6
    assert p.ttft_mean_s == pytest.approx((t_one + 15 * (t_one + t_fifteen)) / 16, rel=1e-6)


def test_each_further_sequence_adds_host_time_and_its_traffic():
    cat = load_catalog(use_user_file=False)
    h100 = cat.accelerators["h100-sxm"]
    arch = ModelArch("m", "m", layers=80, hidden=8192, heads=64, kv_heads=8, ffn=28672, vocab=128256)
    link = intra_node_bps(h100)
    # one device: only the server's host time (llama.cpp's 0.105 ms a slot, PR #24843; vLLM's unmeasured: 0)
    assert per_sequence_s(arch, 1, link, RUNTIME_SERVING["llama.cpp"]) == pytest.approx(0.105e-3)
    assert per_sequence_s(arch, 1, link, RUNTIME_SERVING["vllm"]) == 0.0
    # two tensor-parallel devices: 2 all-reduces a layer of 8192 bf16 values, a ring moves 2 (d-1)/d of them
    tp = 2 * 80 * 8192 * 2 * (2 * 1 / 2) / link
    assert per_sequence_s(arch, 2, link, RUNTIME_SERVING["vllm"]) == pytest.approx(tp, rel=1e-12)
    # a mixture of experts run expert-parallel (TensorRT-LLM): its token to 8 experts' devices and back, each
    # of 94 expert layers, (d-1)/d of it leaving the device; the step's tokens are spread over the 8 devices, each
    # sending its eighth over its own link at once, so a token of the step costs an eighth of that link time
    moe = ModelArch("q", "q", layers=94, hidden=4096, heads=64, kv_heads=4, ffn=12288, vocab=151936, experts=128,
                    experts_per_token=8, moe_ffn=1536)
    ring = 2 * 94 * 4096 * 2 * (2 * 7 / 8) / link
    dispatch = 2 * 94 * 8 * 4096 * 2 * (7 / 8) / link / 8
    assert per_sequence_s(moe, 8, link, RUNTIME_SERVING["tensorrt-llm"]) == pytest.approx(ring + dispatch, rel=1e-12)
    assert per_sequence_s(moe, 8, link, RUNTIME_SERVING["vllm"]) == pytest.approx(ring, rel=1e-12)
    # the link part alone, which a prompt token pays too: no host time in it
    assert per_token_traffic_s(arch, 1, link, RUNTIME_SERVING["llama.cpp"]) == 0.0
    assert per_token_traffic_s(moe, 8, link, RUNTIME_SERVING["tensorrt-llm"]) == pytest.approx(ring + dispatch,
                                                                                                 rel=1e-12)


@pytest.mark.parametrize("users, seqs", [(200, 256), (400, 256)])
def test_the_queue_agrees_with_a_simulation_at_high_load_with_per_sequence_costs(users, seqs):
    # 200 and 400 users of 1,000-token prompts and 300-token answers, 40 us a further sequence: the step grows with
    # the batch and the prompts fill most of the prefill budget; beyond the sequences that fit the others wait.
    # 4,000 requests, so the steady state is measured: with 800 the first wave of 200 prompts started together
    # is still in the kept fifths and the simulated first token is 4x the steady one (serve_together's regime).
    s = spec(max_seqs=seqs, per_seq_s=40e-6)
    lengths = Lengths(1000, 300, 0.5, 0.5)
    sim = simulate(s, lengths, users, requests=4000)
    model = serve_at(s, lengths, users=users)
    assert model.requests_per_s == pytest.approx(sim["requests_per_s"], rel=0.10)
    assert model.tpot_p50_s == pytest.approx(sim["tpot_s"], rel=0.15)
    assert model.ttft_mean_s == pytest.approx(sim["ttft_s"], rel=0.30)


def test_a_time_under_load_names_its_statistic_and_how_its_requests_arrived():
    head = ",".join(C.COLUMNS) + ",statistic,arrivals"
    row = ("r1,s,t,u,2024,m,1e9,h100-sxm,1,vllm,cuda,BF16,,bf16,inference,8,100,100,,none,,{v},ms,,,{stat},{arr}")
    m = C.parse_measurements(f"{head}\n{row.format(v=20, stat='itl_p50', arr='together')}\n", "tpot")[0]
    assert (m.statistic, m.arrivals, m.value) == ("itl_p50", "together", pytest.approx(0.02))
    plain = C.parse_measurements(f"{head}\n{row.format(v=20, stat='', arr='')}\n", "ttft")[0]
    assert (plain.statistic, plain.arrivals) == ("mean", "steady")
    with pytest.raises(C.MeasurementError, match="statistic"):
        C.parse_measurements(f"{head}\n{row.format(v=20, stat='p99', arr='')}\n", "tpot")
    with pytest.raises(C.MeasurementError, match="arrivals"):
        C.parse_measurements(f"{head}\n{row.format(v=20, stat='', arr='burst')}\n", "tpot")
    # a time is inverted like the first token's, so every factor multiplies a speed
    assert C.Observation("r", "tpot", "s", "k", 2.0, 1.0).log_ratio == pytest.approx(-math.log(2))


def test_the_serving_set_is_large_and_broad():
    from advisor.catalog.measurements import bundled_measurements

    rows = bundled_measurements(C.SERVE_GROUPS)
    sources = {m.source_id for m in rows}
    assert len(rows) >= 300 and len(sources) >= 10
    accs = {m.accelerator_id for m in rows}
    assert {"mi300x", "rtx-5090", "h100-sxm", "a100-80gb-sxm"} <= accs
    assert {"qwen3-235b-a22b", "gpt-oss-20b"} <= {m.model for m in rows}  # mixtures of experts
    assert all(m.source_url.startswith("https://") for m in rows)


def test_a_class_the_fit_has_not_seen_gets_the_spread_between_classes_it_has():
    # two runtimes fitted at log factors 0.1 and 0.5 (sd 0.2828); the group's width 0.3
    fit = C.GroupFit("serving", 0.3, (("users", 0.3), ("users/a", 0.1), ("users/b", 0.5)), 0.3, 10, 3)
    assert fit.seen("users/a/cuda") and not fit.seen("users/c/cuda")
    assert fit.unseen_spread("users/c/cuda") == pytest.approx(math.sqrt(0.08))
    assert fit.width("users/a/cuda") == pytest.approx(0.3)
    assert fit.width("users/c/cuda") == pytest.approx(math.sqrt(0.09 + 0.08))


def test_each_load_of_a_served_figure_is_fitted_towards_the_raw_estimate_on_its_own():
    # users rows of sources a and b at 1x; rate rows of c and d at 2x: the users' level stays at the raw estimate
    # (its two sources agree with it) instead of being pulled towards the rate rows' 2x through the group factor
    obs = [C.Observation("a", "tpot", "a", "users/vllm/cuda", 1.0, 1.0),
           C.Observation("b", "tpot", "b", "users/vllm/cuda", 1.0, 1.0),
           C.Observation("c", "tpot", "c", "rate/vllm/cuda", 1.0, 2.0),  # a time: measured half the planned
           C.Observation("d", "tpot", "d", "rate/vllm/cuda", 1.0, 2.0)]
    g, classes = C.fit_log_factors(obs)
    assert g == pytest.approx(2 * math.log(2) / 5)  # the group's own: four sources and one agreeing
    assert classes["users"] == pytest.approx(0.0) and classes["users/vllm/cuda"] == pytest.approx(0.0)
    # the rate level: its two sources' mean log 2 over 3, then its rows shrunk towards it
    g_rate = 2 * math.log(2) / 3
    assert classes["rate"] == pytest.approx(g_rate + 2 * (math.log(2) - g_rate) / (2 + C.SHRINK_ROWS))


def test_vllm_keeps_its_profiled_peak_activation_from_the_cache():
    # vLLM issue 10517's startup log, Llama-3.1-8B on an RTX 3090 (V0, no chunked prefill: the profile runs
    # max_model_len = 20,000 tokens in max_num_seqs = 256 sequences): weights 14.9888 GiB, peak 17.06 GiB, outside
    # PyTorch 0.35 GiB, cache 3.81 GiB of 0.90 x 23.58 GiB
    from advisor.planner.serve_spec import VLLM_NON_TORCH_BYTES, vllm_activation_peak_bytes

    cat = load_catalog(use_user_file=False)
    arch = cat.model("llama-3.1-8b")
    peak = vllm_activation_peak_bytes(arch, 20_000, 256, 1)
    # 20,000 x (2 x 4,096 + 3 x 14,336) x 2 B + 256 x 128,256 x 4 B = 2,179,334,144 B
    assert peak == 20_000 * (2 * 4096 + 3 * 14336) * 2 + 256 * 128_256 * 4
    assert peak / GIB == pytest.approx(17.06 - 14.9888, rel=0.03)
    cache = 0.90 * 23.58 * GIB - 14.9888 * GIB - peak - VLLM_NON_TORCH_BYTES
    assert cache / GIB == pytest.approx(3.81, rel=0.02)
    # tensor parallelism splits the feed-forward's width, not the residual stream or the logits
    assert vllm_activation_peak_bytes(arch, 2048, 256, 2) == 2048 * (2 * 4096 + 1.5 * 14336) * 2 + 256 * 128_256 * 4


def test_a_batch_of_a_mixture_of_experts_reads_the_experts_its_tokens_pick():
    from advisor.estimate.serving import touched
    from advisor.planner.serve_spec import routed_experts

    # a tenth of the weights a token, nine tenths in routed experts of which a token picks 8 of 128 (k/E = 0.0625):
    # always read 0.1 - 0.9 x 0.0625 = 0.04375; at 16 tokens 0.9 x (1 - 0.9375^16) = 0.9 x 0.64393 of them more
    s = spec(expert_fraction=0.1, routed_share=0.9, routed_pick=0.0625)
    assert touched(s, 1) == pytest.approx(0.1, rel=1e-12)
    assert touched(s, 16) == pytest.approx(0.04375 + 0.9 * (1 - 0.9375**16), rel=1e-12)
    assert touched(s, 16) == pytest.approx(0.62329, abs=1e-5)
    # the old rule, every weight routed with k/E = f, reads more at the same batch: 1 - 0.9^16 = 0.8147
    assert touched(spec(expert_fraction=0.1), 16) == pytest.approx(1 - 0.9**16, rel=1e-12)
    assert touched(s, 10_000) == pytest.approx(0.04375 + 0.9, rel=1e-9)
    # Qwen3-235B-A22B: 128 experts, 8 a token, 94 layers of 3 x 4,096 x 1,536 each
    cat = load_catalog(use_user_file=False)
    arch = cat.model("qwen3-235b-a22b")
    share, pick = routed_experts(arch, 235e9, 22e9)
    assert pick == 8 / 128
    assert share == pytest.approx(94 * 128 * 3 * 4096 * 1536 / 235e9, rel=0.02)
    assert routed_experts(cat.model("llama-3.1-8b"), 8e9, 8e9) == (0.0, 0.0)


def test_attention_data_parallel_keeps_the_weights_outside_the_routed_experts_whole():
    # TensorRT-LLM's MoE runs expert-parallel with attention data parallelism: on 8 devices each keeps the
    # attention, embeddings and router whole and an eighth of the routed experts. Qwen3-235B-A22B's experts: 94
    # layers of 128 experts of 3 x 4096 x 1536 = 2,415,919,104 routed parameters a layer, 227.1e9 in all
    from advisor.catalog.runtimes import choose
    from advisor.estimate.model import param_count
    from advisor.planner.serve_spec import replicated_bytes

    moe = ModelArch("q", "q", layers=94, hidden=4096, heads=64, kv_heads=4, ffn=12288, vocab=151936, experts=128,
                    experts_per_token=8, moe_ffn=1536)
    routed = 94 * 128 * 3 * 4096 * 1536
    assert routed == pytest.approx(227.1e9, rel=1e-3)
    weights = 235e9  # bytes of fp8 weights
    kept = (1 - routed / param_count(moe)) * weights * 7 / 8
    trt = choose("tensorrt-llm", "fp8", None, 16, "NVIDIA", "datacenter")
    assert replicated_bytes(trt, moe, weights, 8) == pytest.approx(kept, rel=1e-12)
    # the rest by hand (heads of 64 dimensions here): attention 2 x 4096^2 + 2 x 4096 x 256 a layer, 3.351e9 in 94,
    # embeddings and head 2 x 151936 x 4096 = 1.245e9, 4.6e9 of 231.7e9: each device keeps 7/8 of 2 % of 235 GB more
    assert 3.9e9 < replicated_bytes(trt, moe, weights, 8) < 4.3e9
    # one device, a dense model, or a runtime whose MoE runs tensor-parallel: nothing kept whole
    dense = ModelArch("m", "m", layers=80, hidden=8192, heads=64, kv_heads=8, ffn=28672, vocab=128256)
    vllm = choose("vllm", "fp8", None, 16, "NVIDIA", "datacenter")
    assert replicated_bytes(trt, moe, weights, 1) == 0.0
    assert replicated_bytes(trt, dense, 140e9, 8) == 0.0
    assert replicated_bytes(vllm, moe, weights, 8) == 0.0


def test_tensorrt_llm_s_step_takes_at_least_its_host_s_time_for_the_requests_a_rank_runs():
    # TensorRT-LLM's PyTorch executor prepares the next step on the host while the GPU runs this one: 45.11 ms an
    # iteration at 1,536 requests a rank (PR #10273), 29.37 us a request. Qwen3-30B-A3B's 3 B active parameters at
    # 2,048 requests on one B200: the GPU's step is shorter than the host's 2,048 x 29.37 us = 60.1 ms
    from advisor.catalog.runtimes import choose
    from advisor.planner.serve_spec import model_serving, replica_spec

    cat = load_catalog(use_user_file=False)
    b200 = cat.accelerators["b200"]
    arch = cat.model("qwen3-30b-a3b")
    trt = choose("tensorrt-llm", "fp8", None, 16, "NVIDIA", "datacenter")
    model = model_serving(arch, 30.5e9, 3.3e9, "fp8", 8)
    lengths = Lengths(128, 128)
    s, _ = replica_spec(model, b200, 1, trt, max_seqs=2048, lengths=lengths)
    assert s.host_overlap_s == pytest.approx(45.11e-3 / 1536, rel=1e-12)
    assert decode_step_s(s, 2048, 192) == pytest.approx(2048 * 45.11e-3 / 1536, rel=1e-12)
    # a lone request's step is the GPU's (one user is the plan's request, whatever the host's overlap)
    assert decode_step_s(s, 1, 192) == decode_step_s(dataclasses.replace(s, host_overlap_s=0.0), 1, 192)
    # on eight devices with attention data parallel each rank's host runs an eighth of the requests
    s8, _ = replica_spec(model, b200, 8, trt, max_seqs=2048, lengths=lengths)
    assert s8.host_overlap_s == pytest.approx(45.11e-3 / 1536 / 8, rel=1e-12)
    # a runtime without a published figure has none
    vllm = choose("vllm", "fp8", None, 16, "NVIDIA", "datacenter")
    assert replica_spec(model, b200, 1, vllm, max_seqs=2048, lengths=lengths)[0].host_overlap_s == 0.0
