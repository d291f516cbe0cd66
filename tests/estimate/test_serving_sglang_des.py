"""The finite run and the steady state of a server that runs its prefill passes on their own (SGLang's default)
against a small discrete-event simulation of that scheduler (a fixed seed), at the loads of SGLang's cookbook runs
(16 to 100 users, prompts of about 500 and 4,000 tokens, 5 prompts a user): the analytical queue
(``serving_queue.serve_finite``, ``serve_at``) must agree with the process it stands for. The simulation lives here,
not in the package: it is the check, too slow to plan with (tests/estimate/test_serving_des.py simulates the
runtimes whose chunks ride on the decode steps).

The scheduler simulated, as sgl-project/sglang's ``managers/scheduler.py`` runs it (``get_next_batch_to_run``,
``get_new_batch_prefill``) with its defaults:

- while prompts wait, a new prefill batch runs before the running batch decodes again (``--enable-mixed-chunk``
  off: the decode waits for the pass);
- the batch takes the waiting prompts first come, first served (``--schedule-policy fcfs``) into the budget
  (``PrefillAdder``: ``--chunked-prefill-size``); the prompt that does not fit is cut to what the budget leaves
  and its rest goes first into the next batch (the one ``chunked_req``);
- a prompt's first token comes out of the pass that holds its last token; it decodes from the next step;
- ``bench_serving --request-rate inf --max-concurrency C --num-prompts N``: the first ``C`` requests are sent at
  once, the first reaching the idle server alone and the others while its pass runs (the wave the analytical run
  takes, ``_round_firsts``), each user sending the next when its answer ends; the run's first ``cached`` prompts
  are in the server's radix cache and compute their last token only.

A pass costs what ``serving.batch_prefill_s`` charges one: its prompt tokens' products and causal attention (each
chunk over the prompt before it), in series with one read of the weights, the link time of the tokens beyond the
first prompt's, and a pass's fixed time; a decode step is ``serving.decode_step_s`` at the running sequences' mean
cache. The run's mean and p50 are those of all its ``N`` first tokens, averaged over seeds.
"""

from __future__ import annotations

import math
import random

import pytest

from advisor.estimate import compute
from advisor.estimate.serving import Lengths, decode_step_s, pipelined, prefill_pass_overhead_s, prefill_s
from advisor.estimate.serving_queue import serve_at, serve_finite

from .test_serving_load import spec

SPREAD = 0.577  # the cookbook's random dataset: lengths uniform up to the stated maximum, sd / mean 1 / sqrt(3)


def sglang(**kw):
    """A replica that runs SGLang's passes: prompts in passes of their own, a budget of 8,192 tokens a pass, and a
    pass's fixed time (its launches from the host) beyond the step's 1 ms."""
    base = dict(chunk_tokens=8192, mixed_prefill=False, prefill_overhead_s=0.03)
    base.update(kw)
    return spec(**base)


def pass_s(s, pieces: list[tuple[float, float]]) -> float:
    """One prefill pass with nothing decoding of ``pieces``, ``(tokens, tokens of the prompt before them)`` each,
    charged as ``serving.batch_prefill_s`` charges a pass."""
    n = s.parallel_devices
    work = 0.0
    for tokens, before in pieces:
        work += (s.prompt_matmul_s(tokens) + s.attn_flops_per_pair * tokens * (before + (tokens + 1.0) / 2.0)
                 / (s.attention_flops or s.prefill_flops)) / n * pipelined(s, tokens)
    work += sum(t for t, _ in pieces[1:]) * s.per_token_s
    return compute.prompt_pass_s(work, s.read_bytes / (s.bandwidth_bps * s.eta_mem * n)) + prefill_pass_overhead_s(s)


def simulate(s, lengths: Lengths, users: int, prompts: int, cached: int = 0, seed: int = 1) -> list[float]:
    """Every request's first token (seconds from its sending), in the order they came out, of a finite run of
    ``prompts`` requests by ``users`` users (the module's scheduler)."""
    rng = random.Random(seed)

    def draw(mean: float, cv: float) -> int:
        s2 = math.log1p(cv * cv)
        return max(1, round(rng.lognormvariate(math.log(mean) - s2 / 2, math.sqrt(s2))))

    waiting: list[list] = []  # [sent, tokens left, prompt, output, tokens before]
    sent = 0

    def send(at: float) -> None:
        nonlocal sent
        p, o = draw(lengths.prompt_mean, lengths.prompt_cv), draw(lengths.output_mean, lengths.output_cv)
        left = 1 if sent < cached else p  # a cached prompt computes its last token (for the logits) only
        waiting.append([at, left, p, o, p - left])
        sent += 1

    send(0.0)
    for _ in range(min(users, prompts) - 1):
        send(1e-9)  # the others reach the server while the first one's pass runs
    t, decoding, firsts = 0.0, [], []  # decoding: [tokens left to decode, cache]
    while len(firsts) < prompts:
        ready = [w for w in waiting if w[0] <= t]
        if ready and len(decoding) < s.max_seqs:  # a prefill batch first, the decode waiting
            budget, pieces, done = s.chunk_tokens, [], []
            for w in ready:
                if budget <= 0:
                    break
                take = min(budget, w[1])
                pieces.append((take, w[4]))
                w[1], w[4], budget = w[1] - take, w[4] + take, budget - take
                if w[1] > 0:
                    break  # cut to the budget: its rest goes first into the next batch
                done.append(w)
            t += pass_s(s, pieces)
            for w in done:
                waiting.remove(w)
                firsts.append(t - w[0])
                if w[3] > 1:
                    decoding.append([w[3] - 1, w[2] + 1])
                elif sent < prompts:
                    send(t)
            continue
        if not decoding:
            t = min(w[0] for w in waiting)
            continue
        t += decode_step_s(s, len(decoding), sum(d[1] for d in decoding) / len(decoding))
        still = []
        for d in decoding:
            d[0], d[1] = d[0] - 1, d[1] + 1
            if d[0] > 0:
                still.append(d)
            elif sent < prompts:
                send(t + 1e-6)  # the user's next request reaches the server during the next step
        decoding = still
    return firsts


def run_figures(s, lengths: Lengths, users: int, prompts: int, cached: int = 0, seeds: int = 4
                ) -> tuple[float, float]:
    """``(mean, p50)`` of a simulated run's first tokens, each averaged over ``seeds`` runs."""
    means, medians = [], []
    for seed in range(1, seeds + 1):
        firsts = sorted(simulate(s, lengths, users, prompts, cached, seed))
        means.append(sum(firsts) / len(firsts))
        medians.append(firsts[len(firsts) // 2])
    return sum(means) / seeds, sum(medians) / seeds


def test_one_user_is_each_prompt_s_pass_alone():
    # the simulation charges a lone prompt what the model's prefill does (serving.prefill_s): one pass of it
    s = sglang()
    assert pass_s(s, [(1000.0, 0.0)]) == pytest.approx(prefill_s(s, 1000.0), rel=1e-12)
    # a prompt cut in two passes pays two fixed times and its causal attention over the first part in the second
    two = pass_s(s, [(500.0, 0.0)]) + pass_s(s, [(500.0, 500.0)])
    assert two > prefill_s(s, 1000.0) + prefill_pass_overhead_s(s) * 0.99
    lengths = Lengths(1000, 200, 0.0, 0.0)
    firsts = simulate(s, lengths, 1, 5)
    assert firsts == pytest.approx([prefill_s(s, 1000.0)] * 5, rel=1e-9)


# (users, prompt, output, prompts, cached, pass fixed time s, busy): SGLang's cookbook runs, 5 prompts a user after a
# run of fewer users on the same lengths (cached, the earlier run's prompts: docs/method.md, "Prompts an earlier run
# left in the cache") or cold; a pass's fixed time as a dense model's (30 ms) or as the cookbook's mixtures of
# experts' one-user first tokens imply (about 0.1 s for a short prompt on eight B200s). ``busy``: loads whose
# prompts keep the passes busy (64 users of 4,000-token prompts: passes 44 % of the time; 100 users with 0.1 s
# passes: 50 %).
FINITE = [(16, 500, 500, 80, 10, 0.03, False), (100, 500, 500, 500, 80, 0.03, False),
          (100, 500, 500, 500, 0, 0.03, False), (16, 4000, 500, 80, 10, 0.03, False),
          (64, 4000, 500, 320, 80, 0.03, True), (64, 4000, 500, 320, 0, 0.03, True),
          (100, 500, 500, 500, 80, 0.1, True), (64, 4000, 500, 320, 0, 0.1, True)]


def within(planned: float, simulated: float, busy: bool) -> bool:
    """The model's figure against the simulation's: within 12 %; where the passes keep the server busy, from 5 %
    short to 1.4 times long (the steady state's wait for the passes ahead errs long there: below)."""
    r = planned / simulated
    return 0.95 <= r <= 1.4 if busy else abs(r - 1.0) <= 0.12


@pytest.mark.parametrize("users, prompt, output, prompts, cached, fixed, busy", FINITE)
def test_a_finite_run_s_mean_and_median_agree_with_a_simulation(users, prompt, output, prompts, cached, fixed, busy):
    # The run's mean and its p50 from the one planned run (its wave and its steady state, serve_finite) against the
    # simulated run's own first tokens. Measured, model over simulation (mean / p50): 0.97 / 0.96, 0.89 / 1.09,
    # 1.00 / 1.09, 1.04 / 1.08; busy: 1.26 / 1.13, 1.00 / 1.26, 1.02 / 1.27, 1.01 / 1.33. The wave's first tokens
    # are the simulation's (a cold wave's mean within 1 %); what errs is the steady state's (below).
    s = sglang(prefill_overhead_s=fixed)
    lengths = Lengths(prompt, output, SPREAD, SPREAD)
    mean, p50 = run_figures(s, lengths, users, prompts, cached)
    planned = serve_finite(s, lengths, users, prompts, cached)
    assert within(planned.ttft_mean_s, mean, busy)
    assert within(planned.ttft_p50_s, p50, busy)


def test_a_cold_wave_is_most_of_a_long_prompt_run_s_mean():
    # 64 users of 4,000-token prompts, 320 prompts, none cached: the wave's 256,000 prompt tokens take 32 passes of
    # the budget before any of its users decodes, a fifth of the run waiting seconds for them, where the steady state's
    # first token is a pass or two: the mean is several times the median, in the model as in the simulation
    s = sglang()
    lengths = Lengths(4000, 500, SPREAD, SPREAD)
    mean, p50 = run_figures(s, lengths, 64, 320)
    planned = serve_finite(s, lengths, 64, 320)
    steady = serve_at(s, lengths, users=64)
    assert mean > 3.0 * p50 and planned.ttft_mean_s > 3.0 * planned.ttft_p50_s
    assert planned.ttft_mean_s > 3.0 * steady.ttft_mean_s
    # the cached wave (the earlier run's 80 prompts hold all 64 of it) leaves the run near its steady state, in the
    # simulation as in the model
    warm_mean, warm_p50 = run_figures(s, lengths, 64, 320, 80)
    warm = serve_finite(s, lengths, 64, 320, cached=80)
    assert warm.ttft_mean_s < 1.5 * steady.ttft_mean_s and warm_mean < 1.5 * warm_p50


# (users, prompt, output, pass fixed time s, busy): the steady state of a closed loop whose prompts run in passes of
# their own, 16 to 100 users (long runs, the first fifth of the requests dropped).
STEADY = [(16, 500, 500, 0.03, False), (100, 500, 500, 0.03, False), (64, 4000, 500, 0.03, True),
          (100, 500, 500, 0.1, True), (64, 4000, 500, 0.1, True)]


@pytest.mark.parametrize("users, prompt, output, fixed, busy", STEADY)
def test_the_steady_state_with_passes_of_their_own_agrees_with_a_simulation(users, prompt, output, fixed, busy):
    # Measured, model over simulation (mean / p50): 0.97 / 0.94, 1.06 / 1.00; busy: 1.26 / 1.19, 1.17 / 1.16,
    # 1.31 / 1.26. Where the passes keep the server busy the model's wait errs long: 64 users of 4,000-token
    # prompts, the simulation's passes hold 1.05 prompts and last 0.206 s on average, its first token 0.280 s (a
    # wait of about 0.074 s), where the model waits 0.142 s for the step in progress and the passes ahead
    # (serving_queue._kit, first_token) before the prompt's own pass of 0.211 s: on the safe side. (A prompt of a
    # closed loop is sent as an answer ends, which only a decode step does, and waits about the step after it:
    # planned so, 0.86-0.97 of the simulation at every load here; not kept, docs/method.md.)
    s = sglang(prefill_overhead_s=fixed)
    lengths = Lengths(prompt, output, SPREAD, SPREAD)
    firsts = simulate(s, lengths, users, 12 * users, seed=3)
    kept = sorted(firsts[int(0.2 * len(firsts)):])
    model = serve_at(s, lengths, users=users)
    assert within(model.ttft_mean_s, sum(kept) / len(kept), busy)
    assert within(model.ttft_p50_s, kept[len(kept) // 2], busy)
