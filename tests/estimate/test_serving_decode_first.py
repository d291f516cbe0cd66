"""An engine whose first token comes from the decode step after the prompt's pass (``ServerSpec.decode_first``):
TurboMind (LMDeploy v0.1.0a1, ``LlamaBatch::ContextDecode`` prefills all but each prompt's last token, then
``Generate`` decodes the whole batch, whose output is the first token). Worked by hand on test_serving_load's spec:
16 GB of weights read at 1.6e12 B/s (10 ms), 1 ms a step, 131,072 B of cache a token (81.92 ns a cached token)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from advisor.estimate.serving import Lengths, batch_prefill_s, decode_step_s
from advisor.estimate.serving_queue import serve_at, serve_together
from advisor.planner.serve_spec import serving_profile, step_family

from .test_serving_load import spec


def _step(b: int, lengths: Lengths) -> float:
    # the weights' read (10 ms; the products 2 * 8e9 * b / 4e14 are below it), each sequence's cache, 1 ms
    expected = 10e-3 + b * lengths.mean_context * 131_072 / 1.6e12 + 1e-3
    assert decode_step_s(spec(), b, lengths.mean_context) == pytest.approx(expected, rel=1e-12)
    return expected


def test_one_token_prompts_sent_by_clients_have_no_pass():
    # Four users of 1-token prompts: the first request alone (the plan's one prompt), the other three have no pass
    # (ContextDecode skips a prompt whose only token is its last) and take their first token from the decode step
    # of the four; the vLLM-like engine gives it from the step of their three prompt tokens instead.
    lengths = Lengths(1, 101)
    t1 = batch_prefill_s(spec(), 1, 1)[1]
    step4 = _step(4, lengths)
    p = serve_together(spec(decode_first=True), lengths, 4, clients=True)
    assert p.ttft_mean_s == pytest.approx((t1 + 3 * (t1 + step4)) / 4, rel=1e-12)
    assert p.ttft_p95_s == pytest.approx(t1 + step4, rel=1e-12)
    plain = serve_together(spec(), lengths, 4, clients=True)
    assert plain.ttft_mean_s == pytest.approx((t1 + 3 * (t1 + batch_prefill_s(spec(), 3, 1)[1])) / 4, rel=1e-12)


def test_the_clients_other_requests_share_the_next_iteration():
    # Prompts of 1,001 tokens: the first alone is the plan's pass of 1,001; the other three, sent while it runs, are
    # all queued when the next iteration starts (TurboMind v0.1.0a1 LlamaBatch::InternalThreadEntry: dequeue, then
    # ContextDecode of every new sequence, then one Generate step): their passes hold 1,000 tokens each, 3,000 in
    # two steps of the 2,048 budget, and every first token comes from the decode step of the four after both. The
    # published shape: LMDeploy's A100 page, Llama 2 13B at 16 users of 2,048-token prompts, least first token
    # 0.245 s (the first alone), mean 3.442 s, most 3.668 s: the other 15 within 1 % of one another.
    lengths = Lengths(1001, 101)
    t1 = batch_prefill_s(spec(), 1, 1001)[1]
    steps, t3 = batch_prefill_s(spec(), 3, 1000)
    assert steps == 2
    step4 = _step(4, lengths)
    firsts = [t1] + [t1 + t3 + step4] * 3
    p = serve_together(spec(decode_first=True), lengths, 4, clients=True)
    assert p.ttft_mean_s == pytest.approx(sum(firsts) / 4, rel=1e-12)
    assert p.ttft_p50_s == pytest.approx(firsts[-1], rel=1e-12)
    # the round: to the last first token, then 100 more decode steps of the four
    assert p.output_tokens_per_s == pytest.approx(4 * 101 / (firsts[-1] + 100 * step4), rel=1e-12)


def test_a_round_queued_at_once_is_one_iteration():
    # Every prompt queued before the iteration: all four passes (of 1,000 tokens each) before the decode step that
    # gives every first token.
    lengths = Lengths(1001, 101)
    t4 = batch_prefill_s(spec(), 4, 1000)[1]
    p = serve_together(spec(decode_first=True), lengths, 4)
    assert p.ttft_mean_s == pytest.approx(t4 + _step(4, lengths), rel=1e-12)
    assert p.ttft_p50_s == p.ttft_p95_s == p.ttft_mean_s


def test_one_user_is_the_plans_request():
    # alone, the pass and the step after it are the plan's one prompt (its last token in the pass): nothing changes
    # (its utilisation is over the most the replica serves at load, where the rule holds)
    lengths = Lengths(1000, 101, 0.5, 0.5)
    one, plain = serve_at(spec(decode_first=True), lengths, users=1), serve_at(spec(), lengths, users=1)
    assert replace(one, utilisation=0.0) == replace(plain, utilisation=0.0)
    assert serve_together(spec(decode_first=True), lengths, 1, clients=True) == serve_together(spec(), lengths, 1,
                                                                                              clients=True)


def test_users_drifted_apart_wait_for_the_batch_decode_step():
    # With others in service (a share 1 - e^-(users - 1) of the time), a new prompt's first token comes a decode
    # step of the batch after its pass, less the last token the pass leaves to that step (a 250-token prompt's last
    # token: under 1 % of its pass): later than the vLLM-like engine's by about that step (within 5 %: the loop
    # closes at a slightly other batch; 4 users: 0.95 x 11.12 ms).
    lengths = Lengths(250, 250, 1.0, 1.0)
    for users in (4, 16, 64):
        plain = serve_at(spec(), lengths, users=users)
        turbo = serve_at(spec(decode_first=True), lengths, users=users)
        busy = 1.0 - math.exp(-(users - 1))
        step = decode_step_s(spec(), users, lengths.mean_context)
        assert turbo.ttft_mean_s - plain.ttft_mean_s == pytest.approx(busy * step, rel=0.05)
        assert turbo.ttft_p50_s > plain.ttft_p50_s and turbo.ttft_p95_s > plain.ttft_p95_s


def test_lmdeploy_is_the_engine_that_does_it():
    assert serving_profile("lmdeploy").decode_first
    assert not any(serving_profile(r).decode_first for r in ("vllm", "sglang", "tensorrt-llm", "llama.cpp"))
    # its tensor-parallel step costs are fitted with vLLM's (the same A100 rows)
    assert step_family("lmdeploy") == "vllm"
