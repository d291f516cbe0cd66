"""vLLM's multi-step scheduling (``--num-scheduler-steps``, vllm-project/vllm pull 7000: the scheduler runs once and
the model then runs that many forward passes before it runs again): a request that arrives waits for the run in
progress to end before its prompt is scheduled (``serving_queue.with_scheduler_steps``)."""

from __future__ import annotations

import math
import random

import pytest

from advisor.estimate.serving import Lengths
from advisor.estimate.serving_queue import (
    ServePoint,
    full_throughput,
    max_throughput,
    scheduler_run_s,
    serve_at_bounds,
    serve_at_speed,
    with_scheduler_steps,
)
from tests.estimate.test_serving_des import spec


def _point(p50: float, p95: float, mean: float, tpot: float) -> ServePoint:
    return ServePoint(None, 10.0, 5.0, 0.0, 10.0, 2000.0, p50, p95, tpot, 1.2 * tpot, 0.5, True, "", mean, 0.8 * tpot)


def test_a_fixed_first_token_plus_the_run_in_progress_by_hand():
    # A first token of exactly 0.3 s (p50 = p95), 0.1 s a token, nine steps a scheduler call: the run in progress
    # has up to 8 more steps, 0.8 s, an arrival waits uniform on (0, 0.8): mean 0.3 + 0.4, p50 0.3 + 0.4,
    # p95 0.3 + 0.95 x 0.8 = 1.06
    p = _point(0.3, 0.3, 0.3, 0.1)
    assert scheduler_run_s(p, 9) == pytest.approx(0.8)
    q = with_scheduler_steps(p, 9)
    assert q.ttft_mean_s == pytest.approx(0.7)
    assert q.ttft_p50_s == pytest.approx(0.7, abs=1e-9)
    assert q.ttft_p95_s == pytest.approx(1.06, abs=1e-9)
    # the decode side does not move
    assert (q.tpot_p50_s, q.itl_s, q.output_tokens_per_s) == (p.tpot_p50_s, p.itl_s, p.output_tokens_per_s)


def test_every_step_is_the_point_itself():
    p = _point(0.3, 0.5, 0.33, 0.1)
    assert with_scheduler_steps(p, 1) is p
    with pytest.raises(ValueError):
        scheduler_run_s(p, 0)


def test_an_exponential_first_token_plus_the_wait_against_a_sampled_sum():
    # T = 0.2 + Exp(mean 0.15) (p50 0.2 + 0.15 ln 2, p95 0.2 + 0.15 ln 20), U uniform on (0, 8 x 0.12 = 0.96):
    # the quantiles of T + U from 400,000 draws within 0.5 %
    a, m, tpot = 0.2, 0.15, 0.12
    p = _point(a + m * math.log(2.0), a + m * math.log(20.0), a + m, tpot)
    q = with_scheduler_steps(p, 9)
    rng = random.Random(7)
    draws = sorted(a + rng.expovariate(1.0 / m) + rng.uniform(0.0, 8 * tpot) for _ in range(400_000))
    assert q.ttft_p50_s == pytest.approx(draws[200_000], rel=5e-3)
    assert q.ttft_p95_s == pytest.approx(draws[380_000], rel=5e-3)
    assert q.ttft_mean_s == pytest.approx(a + m + 0.48, rel=1e-9)


def test_at_its_bounds_the_wait_is_in_the_first_tokens_p99_too():
    # A replica pushed past what it carries within the bounds: with nine steps a call the first token's p99 takes
    # the run's wait as well, so the bounds bind a faster replica or the same one, and the first token is later
    s = spec(chunk_tokens=2048)
    lengths = Lengths(2000, 200, 0.5, 0.5)
    x_max = max_throughput(s, lengths)[0]
    one = serve_at_bounds(s, lengths, 2.0 * x_max, 2.0, 0.2)
    nine = serve_at_bounds(s, lengths, 2.0 * x_max, 2.0, 0.2, scheduler_steps=9)
    assert nine.tpot_p50_s <= one.tpot_p50_s * (1 + 1e-9)
    # the point is the faster replica's steady state (read back from its share of what it carries) with the wait
    k = 2.0 * x_max / (nine.utilisation * full_throughput(s, lengths))
    bare = serve_at_speed(s, lengths, 2.0 * x_max, math.log(k))
    waited = with_scheduler_steps(bare, 9)
    assert waited.ttft_mean_s == pytest.approx(nine.ttft_mean_s, rel=1e-6)
    assert nine.ttft_mean_s == pytest.approx(bare.ttft_mean_s + 4.0 * bare.tpot_p50_s, rel=1e-6)
    assert nine.ttft_mean_s > one.ttft_mean_s
    with pytest.raises(ValueError):
        serve_at_bounds(s, lengths, x_max, 2.0, 0.2, scheduler_steps=0)
