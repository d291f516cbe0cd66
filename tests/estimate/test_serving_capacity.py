"""A rate near a replica's capacity (advisor/estimate/serving_queue.py; docs/method.md, "Serving under load"): what is
shown where the wait grows as 1 / (1 - rho), given that the capacity itself is known only to its held-out error."""

from __future__ import annotations

import math

import pytest

from advisor.estimate.serving import Lengths
from advisor.estimate.serving_queue import (
    Z80,
    capacity_log_quantile,
    first_token_p99,
    full_throughput,
    max_throughput,
    p99_of,
    serve_at,
    serve_at_bounds,
    serve_kept_up,
)
from tests.estimate.test_serving_des import spec

LENGTHS = Lengths(2000, 200, 0.5, 0.5)


def test_the_capacity_quantile_given_that_it_keeps_up_by_hand():
    s = math.log(1.42) / Z80  # users/dense throughput held out within x/÷1.42: sd 0.274 of the log
    assert Z80 == pytest.approx(1.2816, abs=1e-4)
    # far below capacity (a third of it) keeping up tells nothing: the median is the plan
    assert capacity_log_quantile(math.log(1 / 3), s) == pytest.approx(0.0, abs=1e-4)
    # at the planned capacity half the capacities keep up: their median is the upper quartile, 0.6745 sd
    assert capacity_log_quantile(0.0, s) == pytest.approx(0.6745 * s, rel=1e-3)
    # 10 % beyond it: Phi(0.0953 / 0.274) = 0.636, its median 0.818 -> 0.908 sd = 0.249 (a replica 1.28x as fast)
    assert capacity_log_quantile(math.log(1.1), s) == pytest.approx(0.908 * s, rel=2e-3)
    # a known capacity: the plan below it, nothing beyond it; no chance at all: nothing
    assert capacity_log_quantile(-0.1, 0.0) == 0.0
    assert capacity_log_quantile(0.1, 0.0) is None
    assert capacity_log_quantile(3.0, 0.3) is None
    with pytest.raises(ValueError):
        capacity_log_quantile(0.0, s, 1.0)


def test_a_rate_kept_up_with_is_the_plan_far_below_capacity_and_a_faster_replica_beyond_it():
    s = spec(chunk_tokens=2048)
    x_max = max_throughput(s, LENGTHS)[0]
    low = 0.3 * x_max
    assert serve_kept_up(s, LENGTHS, low, 0.274).ttft_mean_s == pytest.approx(
        serve_at(s, LENGTHS, requests_per_s=low).ttft_mean_s, rel=1e-3)
    # 5 % beyond what the plan serves: no steady state as planned, a finite one on the capacities that keep up
    assert not serve_at(s, LENGTHS, requests_per_s=1.05 * x_max).stable
    p = serve_kept_up(s, LENGTHS, 1.05 * x_max, 0.274)
    k = math.exp(capacity_log_quantile(math.log(1.05), 0.274))
    assert p.stable and p.requests_per_s == pytest.approx(1.05 * x_max)
    assert p.requests_per_s_offered == pytest.approx(1.05 * x_max)
    # it is the plan at rate / k with its times over k
    base = serve_at(s, LENGTHS, requests_per_s=1.05 * x_max / k)
    assert p.ttft_mean_s == pytest.approx(base.ttft_mean_s / k, rel=1e-9)
    assert p.tpot_p50_s == pytest.approx(base.tpot_p50_s / k, rel=1e-9)
    assert p.utilisation == pytest.approx(base.utilisation, rel=1e-9)
    assert serve_kept_up(s, LENGTHS, 1.05 * x_max, 0.0) is None


def test_the_p99_of_a_log_normal_tail_by_hand():
    # z99 / z95 = 2.3263 / 1.6449 = 1.4143: p50 1 s, p95 2 s -> 2^1.4143 = 2.665 s
    assert p99_of(1.0, 2.0) == pytest.approx(2.665, abs=1e-3)
    assert p99_of(0.5, 0.5) == 0.5


def test_a_rate_at_its_bounds_meets_the_binding_bound_exactly():
    s = spec(chunk_tokens=2048)
    x_max = max_throughput(s, LENGTHS)[0]
    # a rate this replica cannot carry within the bounds: the replica k > 1 times as fast whose binding p99 is the
    # bound (k from its load's share, a share being the same at any speed; its first token's p99 the queue's own at
    # rate / k over k)
    for rate in (x_max, 2.0 * x_max):
        p = serve_at_bounds(s, LENGTHS, rate, 2.0, 0.2)
        assert p.stable and p.requests_per_s == pytest.approx(rate)
        k = rate / (p.utilisation * full_throughput(s, LENGTHS))
        assert k > 1.0
        ttft99 = first_token_p99(s, LENGTHS, rate / k) / k
        ratio = max(ttft99 / 2.0, p99_of(p.tpot_p50_s, p.tpot_p95_s) / 0.2)
        assert ratio == pytest.approx(1.0, abs=0.005)
    # a rate this replica carries within them (half its capacity): the run met its bounds, which says its replica
    # was at least that fast and no more, so it is this replica's own steady state at the rate (a slower replica
    # that also meets them is not taken: a submitter may stop short of the bounds)
    half = serve_at_bounds(s, LENGTHS, 0.5 * x_max, 2.0, 0.2)
    own = serve_at(s, LENGTHS, requests_per_s=0.5 * x_max)
    assert (half.ttft_p50_s, half.ttft_mean_s, half.tpot_p50_s) == pytest.approx(
        (own.ttft_p50_s, own.ttft_mean_s, own.tpot_p50_s), rel=1e-9)
    assert max(first_token_p99(s, LENGTHS, 0.5 * x_max) / 2.0, p99_of(own.tpot_p50_s, own.tpot_p95_s) / 0.2) < 1.0
    # looser bounds: the same rate tells of a slower replica (not slower than this one), so longer times
    tight = serve_at_bounds(s, LENGTHS, 2.0 * x_max, 2.0, 0.2)
    loose = serve_at_bounds(s, LENGTHS, 2.0 * x_max, 4.0, 0.4)
    assert loose.tpot_p50_s > tight.tpot_p50_s
    with pytest.raises(ValueError):
        serve_at_bounds(s, LENGTHS, x_max, 0.0, 0.2)


def test_beyond_capacity_the_queue_grows_by_the_excess_each_second():
    s = spec(chunk_tokens=2048)
    x_max = max_throughput(s, LENGTHS)[0]
    p = serve_at(s, LENGTHS, requests_per_s=2.0 * x_max)
    assert not p.stable
    assert p.queue_growth_per_s == pytest.approx(x_max)  # 2 x_max arrive a second, x_max end
    assert p.wait_growth_s_per_s == pytest.approx(1.0)  # each second adds a second to the next one's wait
    steady = serve_at(s, LENGTHS, requests_per_s=0.5 * x_max)
    assert steady.queue_growth_per_s == 0.0 and steady.wait_growth_s_per_s == 0.0


def test_the_first_tokens_p99_is_the_queues_own_at_0_99_by_hand():
    # Equal prompts (no prompt spread) far below the sequences that fit (no wait for one): the p99 is the prompt in
    # service plus the step queue's exponential tail at 0.99, as the p50 and p95 are at theirs: with the wait
    # ``busy`` x Exp(cond), the quantile q is cond ln(busy / (1 - q)), so p95 - p50 = cond ln 10 and p99 - p50 =
    # cond ln 50 (busy above a half). Near capacity, where a wait for a sequence that one request in 50 meets is in
    # the p99 and not in the p95, a log-normal drawn through the p50 and p95 gives less.
    s = spec(chunk_tokens=2048)
    lengths = Lengths(2000, 200, 0.0, 0.0)
    x_max = max_throughput(s, lengths)[0]
    p = serve_at(s, lengths, requests_per_s=0.8 * x_max)
    cond = (p.ttft_p95_s - p.ttft_p50_s) / math.log(10.0)
    assert cond > 0
    assert first_token_p99(s, lengths, 0.8 * x_max) == pytest.approx(p.ttft_p50_s + cond * math.log(50.0), rel=1e-9)
    # 16 sequences at 70 % of what they serve: the p95 (0.147 s) has no wait for a sequence, the p99 does (0.71 s
    # against 0.17 s through the p50 and p95)
    tight = spec(chunk_tokens=2048, max_seqs=16)
    x16 = max_throughput(tight, lengths)[0]
    near = serve_at(tight, lengths, requests_per_s=0.7 * x16)
    assert first_token_p99(tight, lengths, 0.7 * x16) > 3.0 * p99_of(near.ttft_p50_s, near.ttft_p95_s)
    assert first_token_p99(s, lengths, 2.0 * x_max) == math.inf
