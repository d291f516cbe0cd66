"""A finite benchmark run (``serving_queue.serve_finite``): ``N`` requests by ``C`` users who all start at once,
as ``vllm bench serve`` and SGLang's ``bench_serving`` run ``--request-rate inf --max-concurrency C --num-prompts
N``: the first wave's prompts (the first request alone, the others together after it), then the steady state;
worked by hand on one spec."""

from __future__ import annotations

import math

import pytest

from advisor.estimate.serving import Lengths, batch_prefill_s, concurrency_limit, kv_capacity_tokens
from advisor.estimate.serving_queue import serve_at, serve_finite

from .test_serving_load import GIB, spec

# Four prompts of 1,000 tokens sent by the users' clients (test_serving_load): the first alone, one step of its
# 1,000 tokens; the other three after it in two steps of 1,500 tokens (the budget of 2,048 spread evenly), the first
# of them ending in the first step, the other two in the second.
LENGTHS = Lengths(1000, 101, 0.5, 0.5)


def _wave_firsts():
    _, t1 = batch_prefill_s(spec(), 1, 1000)
    steps, t3 = batch_prefill_s(spec(), 3, 1000)
    assert steps == 2
    return [t1, t1 + t3 / 2, t1 + t3, t1 + t3]


def test_the_mean_first_token_weighs_the_first_wave_by_its_share_of_the_run():
    s = spec()
    steady = serve_at(s, LENGTHS, users=4)
    firsts = _wave_firsts()
    # 20 requests by 4 users: 4 in the wave (a fifth), 16 in the steady state
    p = serve_finite(s, LENGTHS, 4, 20)
    assert p.ttft_mean_s == pytest.approx(0.2 * sum(firsts) / 4 + 0.8 * steady.ttft_mean_s, rel=1e-12)
    # a longer run dilutes the wave: 400 requests, a hundredth of them
    q = serve_finite(s, LENGTHS, 4, 400)
    assert q.ttft_mean_s == pytest.approx(0.01 * sum(firsts) / 4 + 0.99 * steady.ttft_mean_s, rel=1e-12)
    # throughput and the per-token times are the steady state's
    for point in (p, q):
        assert point.output_tokens_per_s == steady.output_tokens_per_s
        assert point.tpot_p50_s == steady.tpot_p50_s and point.itl_s == steady.itl_s


def test_the_median_is_the_median_of_the_mixture():
    s = spec()
    steady = serve_at(s, LENGTHS, users=4)
    firsts = _wave_firsts()
    # the steady state's first token as a + Exp(m) through its p50 and p95
    m = (steady.ttft_p95_s - steady.ttft_p50_s) / math.log(10.0)
    a = steady.ttft_p50_s - m * math.log(2.0)
    assert m > 0
    for n in (8, 20, 400):
        p = serve_finite(s, LENGTHS, 4, n)
        share = 4 / n

        def cdf(x, share=share):
            wave = sum(f <= x for f in firsts) / 4
            return share * wave + (1 - share) * (1 - math.exp(-(x - a) / m) if x > a else 0.0)

        for q, got in ((0.5, p.ttft_p50_s), (0.95, p.ttft_p95_s)):
            # the quantile: the least time whose share of the run's first tokens reaches q
            assert cdf(got * (1 + 1e-9)) >= q - 1e-12
            assert cdf(got * (1 - 1e-6)) <= q + 1e-12
    # a run of many waves' worth of requests tends to the steady state's median
    far = serve_finite(s, LENGTHS, 4, 10**7)
    assert far.ttft_p50_s == pytest.approx(steady.ttft_p50_s, rel=1e-4)
    assert far.ttft_mean_s == pytest.approx(steady.ttft_mean_s, rel=1e-4)


def test_one_user_and_one_wave():
    s = spec()
    # one user waits behind no other prompt: the steady state's request, whatever the run's length
    assert serve_finite(s, LENGTHS, 1, 10) == serve_at(s, LENGTHS, users=1)
    # no more requests than users: one wave of them, all its first tokens
    p = serve_finite(s, LENGTHS, 16, 4)
    assert p.ttft_mean_s == pytest.approx(sum(_wave_firsts()) / 4, rel=1e-12)
    with pytest.raises(ValueError):
        serve_finite(s, LENGTHS, 4, 0)


def test_cached_prompts_ride_the_first_wave_s_first_prefill_step():
    s = spec()
    steady = serve_at(s, LENGTHS, users=4)
    # 2 of the 4 prompts in the prefix cache: the first, cached, alone computes one token (the weights' read, 10 ms,
    # its products 40 us and attention over one pair (0.65601536 ms / 500,500 pairs), + 1 ms); then the other two,
    # 2,000 tokens, fill one step of 2,048 (each prompt's products 40 ms and causal attention over 1000 x 1001 / 2
    # pairs 0.65601536 ms, added to the pass's one read of the weights 10 ms (compute.prompt_pass_s), + 1 ms:
    # 92.31 ms), the second cached prompt's one token in that step
    pair = 0.65601536e-3 / 500_500
    _, one = batch_prefill_s(s, 1, 1.0)
    assert one == pytest.approx(10e-3 + 40e-6 + pair + 1e-3, rel=1e-12)
    steps, t_pre = batch_prefill_s(s, 2, 1000)
    assert steps == 1 and t_pre == pytest.approx(2 * (40e-3 + 0.65601536e-3) + 10e-3 + 1e-3, rel=1e-12)
    p = serve_finite(s, LENGTHS, 4, 20, cached=2)
    assert p.ttft_mean_s == pytest.approx(0.2 * (one + 0.75 * t_pre) + 0.8 * steady.ttft_mean_s, rel=1e-12)
    # every prompt of the wave cached: the first one's step, then one step of the other three's one tokens
    _, three = batch_prefill_s(s, 3, 1.0)
    assert three == pytest.approx(10e-3 + 3 * (40e-6 + pair) + 1e-3, rel=1e-12)
    for cached in (4, 5, 20):  # (cached prompts beyond the wave are the steady state's requests)
        q = serve_finite(s, LENGTHS, 4, 20, cached=cached)
        assert q.ttft_mean_s == pytest.approx(0.2 * (one + 0.75 * three) + 0.8 * steady.ttft_mean_s, rel=1e-12)
    # none cached is the cold wave; the cache changes no steady figure
    assert serve_finite(s, LENGTHS, 4, 20, cached=0) == serve_finite(s, LENGTHS, 4, 20)
    assert (p.output_tokens_per_s, p.tpot_p50_s, p.itl_s) == (steady.output_tokens_per_s, steady.tpot_p50_s,
                                                              steady.itl_s)
    # one user is the steady state's request whatever the cache
    assert serve_finite(s, LENGTHS, 1, 10, cached=5) == serve_at(s, LENGTHS, users=1)
    with pytest.raises(ValueError):
        serve_finite(s, LENGTHS, 4, 20, cached=-1)


def test_the_cache_holds_only_the_earlier_requests_that_fit():
    # a pool of 6,000 tokens: three sequences of 1,000 prompt and 1,000 output tokens run at once (each holds its
    # running context, 1,000 + 1,000 x 1.25 / 2 = 1,625), but the earlier run's finished requests, 2,000 tokens
    # each, leave two prompts in it
    lengths = Lengths(1000, 1001, 0.5, 0.5)
    s = spec(capacity_bytes=(6000.5 * 131_072 + 16e9 + GIB) / 0.9)
    assert kv_capacity_tokens(s) == 6000 and concurrency_limit(s, lengths)[0] == 3
    steady = serve_at(s, lengths, users=3)
    steps, t_pre = batch_prefill_s(s, 1, 1000)
    assert steps == 1
    # two cached and one cold prompt: the first (cached) alone, then one step of the cold prompt with the second
    # cached one's token, both first tokens at its end
    _, one = batch_prefill_s(s, 1, 1.0)
    p = serve_finite(s, lengths, 3, 30, cached=3)
    assert p.ttft_mean_s == pytest.approx(0.1 * (one + 2 / 3 * t_pre) + 0.9 * steady.ttft_mean_s, rel=1e-12)
