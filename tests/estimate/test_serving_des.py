"""The analytical queue of advisor/estimate/serving.py against a small discrete-event simulation of the same
server (a fixed seed), step by step: the approximation the planner uses must agree with the process it stands
for. The simulation lives here, not in the package: it is the check, too slow to size a catalog with.
"""

from __future__ import annotations

import math
import random

import pytest

from advisor.estimate.serving import Lengths, ServerSpec, decode_step_s, held_tokens, prefill_s
from advisor.estimate.serving_queue import HarnessBatching, max_throughput, serve_at, serve_batched

GIB = 2**30


def spec(**kw) -> ServerSpec:
    base = dict(weight_bytes=16e9, devices=1, parallel_devices=1, capacity_bytes=80 * GIB, bandwidth_bps=2e12,
                eta_mem=0.8, decode_flops=4e14, prefill_flops=4e14, active_params=8e9, attn_flops_per_pair=524_288,
                kv_bytes_per_token=131_072, memory_fraction=0.9, overhead_bytes=GIB, max_seqs=256, chunk_tokens=0)
    base.update(kw)
    return ServerSpec(**base)


def simulate(s: ServerSpec, lengths: Lengths, users: int | None = None, requests: int = 500, seed: int = 7,
             rate: float | None = None, warm: float = 0.2, batching: HarnessBatching | None = None) -> dict:
    """A closed loop of ``users``: each sends its next request when the last one's final token arrives, a moment
    after the step that carried it ended, so the next step has already started without it. Or, with ``rate``, an
    open stream: Poisson arrivals (MLPerf's server scenario), the server idle until the next when it has nothing.

    Each step takes waiting prompts first come first served into the prefill budget: without chunking, the
    oldest prompt on its own (no decode in that step); chunked, up to ``chunk_tokens`` prompt tokens (a prompt
    split across steps where it does not fit) riding on the decode step of the sequences already decoding.
    A request's first token comes with the step that finishes its prompt (the prompt's last logits). Lengths are drawn log-normal.
    With ``batching`` (and ``rate``, a replica's share) the arrivals of ``batching.replicas`` such replicas gather in a
    harness that sends a batch when it holds ``most`` or ``window_s`` after the last batch went, each batch to the next
    replica in turn (AMD's MLPerf harness, ``serving_queue.HarnessBatching``): this replica gets every
    ``replicas``-th batch, its requests waiting from their arrival.
    Returns the means over the requests after the first ``warm`` share (warm-up): TTFT, TPOT, throughput; and the
    first token's p50, p95 and p99 and the time per output token's p99 over the requests.
    """
    rng = random.Random(seed)

    def draw(mean: float, cv: float) -> int:
        if cv <= 0:
            return max(1, round(mean))
        s2 = math.log1p(cv * cv)
        return max(1, round(rng.lognormvariate(math.log(mean) - s2 / 2, math.sqrt(s2))))

    t = 0.0
    # [arrival, prompt left, prompt, output, at the server]: requests admitted at the start of the step after they
    # reach the server (as they arrive, or when the harness sends their batch)
    queue = [[0.0, p, p, draw(lengths.output_mean, lengths.output_cv), 0.0]
             for p in (draw(lengths.prompt_mean, lengths.prompt_cv) for _ in range(users or 0))]
    arrival = [rng.expovariate(rate)] if rate and batching is None else [math.inf]

    def batches():
        """``(sent, arrivals)`` of the batches the harness sends this replica, in order."""
        gathered = rate * batching.replicas
        start, k, nxt = 0.0, 0, rng.expovariate(gathered)
        while True:
            members = []
            while len(members) < batching.most and nxt <= start + batching.window_s:
                members.append(nxt)
                nxt += rng.expovariate(gathered)
            sent = members[-1] if len(members) >= batching.most else start + batching.window_s
            if k % batching.replicas == 0 and members:
                yield sent, members
            k, start = k + 1, sent

    sent_batches = batches() if rate and batching is not None else None
    batch = next(sent_batches) if sent_batches is not None else (math.inf, [])
    decoding = []  # [arrival, first token time, tokens left, context, output]
    done = []

    def first(q, at, into):
        """The prompt's last piece ran: its first token comes with that step (the prompt's last logits)."""
        d = [q[0], at, q[3] - 1, q[2] + 1, q[3]]
        if at is not None and d[2] <= 0:
            finish(d, at)
        else:
            into.append(d)

    def finish(d, at):
        done.append((d[0], d[1], at, d[4]))
        if rate:
            return
        p = draw(lengths.prompt_mean, lengths.prompt_cv)
        queue.append([at + 1e-6, p, p, draw(lengths.output_mean, lengths.output_cv), at + 1e-6])
    while len(done) < requests:
        while arrival[0] <= t:  # an open stream's arrivals up to now
            p = draw(lengths.prompt_mean, lengths.prompt_cv)
            queue.append([arrival[0], p, p, draw(lengths.output_mean, lengths.output_cv), arrival[0]])
            arrival[0] += rng.expovariate(rate)
        while batch[0] <= t:  # the harness's batches sent up to now
            for a in batch[1]:
                p = draw(lengths.prompt_mean, lengths.prompt_cv)
                queue.append([a, p, p, draw(lengths.output_mean, lengths.output_cv), batch[0]])
            batch = next(sent_batches)
        if not queue and not decoding:  # idle until the next arrival
            t = min(arrival[0], batch[0])
            continue
        start = t
        ctx = sum(d[3] for d in decoding) / len(decoding) if decoding else 0.0
        ready = [q for q in queue if q[4] <= start]
        room = s.max_seqs - len(decoding)
        joining = []
        if ready and room > 0 and (s.chunk_tokens <= 0 or not decoding):
            q = ready[0]  # a prompt on its own (no chunking, or nothing decoding)
            t += prefill_s(s, q[2])
            queue.remove(q)
            first(q, t, decoding)
            continue
        budget, extra, attn = s.chunk_tokens, 0.0, 0.0
        for q in ready[:room]:
            if budget <= 0:
                break
            chunk = min(budget, q[1])
            before = q[2] - q[1]
            attn += s.attn_flops_per_pair * chunk * (before + chunk / 2)
            extra += chunk
            budget -= chunk
            q[1] -= chunk
            if q[1] <= 0:
                queue.remove(q)
                first(q, None, joining)  # its first token comes with this step; it decodes from the next
        t += decode_step_s(s, len(decoding), ctx, extra, attn) if decoding else prefill_s(s, extra)
        still = []
        for d in decoding:
            d[2] -= 1
            d[3] += 1
            if d[2] <= 0:
                finish(d, t)
            else:
                still.append(d)
        for j in joining:
            j[1] = t
            if j[2] <= 0:
                finish(j, t)
            else:
                still.append(j)
        decoding = still
    kept = sorted(done[int(len(done) * warm):], key=lambda r: r[2])
    span = kept[-1][2] - kept[0][2]
    ttft = sum(f - a for a, f, _e, _o in kept) / len(kept)
    firsts = sorted(f - a for a, f, _e, _o in kept)
    return {"ttft_s": ttft, "requests_per_s": (len(kept) - 1) / span,
            "ttft_p50_s": firsts[len(firsts) // 2], "ttft_p95_s": firsts[int(0.95 * len(firsts))],
            "ttft_p99_s": firsts[int(0.99 * len(firsts))],
            "tpot_p99_s": sorted((e - f) / max(1, o - 1) for _a, f, e, o in kept)[int(0.99 * len(kept))],
            "tpot_s": sum(e - f for _a, f, e, _o in kept) / (len(kept) * max(1.0, lengths.output_mean - 1))}


# (prefill chunk, users, prompt, output, sequences that fit): prompts alone or in chunks, decode-bound and
# prefill-bound, and more users than sequences (the others wait for one). Lengths spread 0.5.
CASES = [(0, 1, 2000, 200, 256), (0, 4, 2000, 200, 256), (0, 16, 2000, 200, 256), (0, 64, 2000, 200, 256),
         (2048, 4, 2000, 200, 256), (2048, 16, 2000, 200, 256), (2048, 64, 2000, 200, 256),
         (2048, 8, 8000, 100, 256), (2048, 32, 8000, 100, 256), (0, 16, 1000, 300, 8), (2048, 48, 500, 500, 16),
         (8192, 50, 5000, 500, 256)]


# Closed loops whose prompts saturate the steps' budget (8,000-token prompts in 2,048-token chunks, four steps
# each): past about 24 users the throughput stays at what the prefill allows and the users queue for it, the first
# token growing by about 1 / X a user (the analytical queue once lost its fixed point here: 2.28 requests/s at 32
# users, 2.63 at 28, TPOT 0.067 s at 36 against 0.11 s at 32).
SATURATED = [(2048, 24, 8000, 100, 256), (2048, 36, 8000, 100, 256), (2048, 48, 8000, 100, 256)]


@pytest.mark.parametrize("chunk, users, prompt, output, seqs", CASES + SATURATED)
def test_the_analytical_queue_agrees_with_a_simulation(chunk, users, prompt, output, seqs):
    s = spec(chunk_tokens=chunk, max_seqs=seqs)
    lengths = Lengths(prompt, output, 0.5, 0.5)
    sim = simulate(s, lengths, users)
    model = serve_at(s, lengths, users=users)
    assert model.requests_per_s == pytest.approx(sim["requests_per_s"], rel=0.10)
    assert model.tpot_p50_s == pytest.approx(sim["tpot_s"], rel=0.15)
    assert model.ttft_mean_s == pytest.approx(sim["ttft_s"], rel=0.30)


@pytest.mark.parametrize("users", [64, 256])
def test_a_host_bound_step_agrees_with_a_simulation(users):
    # TensorRT-LLM's overlap scheduler: the host prepares the next step while the GPU runs this one, so a step takes
    # the larger of the two, a prompt's chunk adding only what it takes beyond the host's time. At 400 us a request
    # the host binds from about 35 running requests on (the GPU's step at 64: 13.7 ms; the host's 25.6 ms): the
    # simulation's 5.98 and 6.33 requests/s, the queue's 5.95 and 6.27
    s = spec(chunk_tokens=2048, host_overlap_s=400e-6)
    lengths = Lengths(500, 400, 0.5, 0.5)
    sim = simulate(s, lengths, users)
    model = serve_at(s, lengths, users=users)
    assert model.requests_per_s == pytest.approx(sim["requests_per_s"], rel=0.10)
    assert model.tpot_p50_s == pytest.approx(sim["tpot_s"], rel=0.15)
    free = serve_at(spec(chunk_tokens=2048), lengths, users=users)
    assert model.requests_per_s < 0.7 * free.requests_per_s  # the floor binds at both loads


def test_where_the_host_binds_only_steps_without_prompts_the_prompts_share_its_slack():
    # 326 users of 2,304-token prompts (two 2,048-token chunks) and 147-token answers at 360 us a request: 191 in
    # service, a decode-only step shorter than the host's 69 ms, a step with a chunk longer. The simulation serves
    # 8.62 requests/s with the host as without it; the queue once gave each chunk the whole of the host's slack and
    # planned 9.40 (9 % faster than without the host); its chunks now share it, about 191 x 2 / 146 a step: 8.61
    s = spec(chunk_tokens=2048, host_overlap_s=360e-6)
    lengths = Lengths(2304, 147, 0.5, 0.5)
    sim = simulate(s, lengths, 326, requests=3000)
    model = serve_at(s, lengths, users=326)
    assert model.requests_per_s == pytest.approx(sim["requests_per_s"], rel=0.03)
    assert model.requests_per_s <= serve_at(spec(chunk_tokens=2048), lengths, users=326).requests_per_s


def test_where_whole_prompts_dominate_a_small_closed_loop_the_wait_errs_long():
    # 8 users with 8,000-token prompts run on their own: the wait behind the prompts ahead is an open stream's,
    # which overstates a closed loop of 8 (docs/method.md, "Serving under load"): on the safe side, within 1.8x
    s = spec(chunk_tokens=0)
    lengths = Lengths(8000, 100, 0.5, 0.5)
    sim, model = simulate(s, lengths, 8), serve_at(s, lengths, users=8)
    assert sim["ttft_s"] <= model.ttft_mean_s <= 1.8 * sim["ttft_s"]
    assert model.requests_per_s == pytest.approx(sim["requests_per_s"], rel=0.10)


def test_past_saturation_more_users_only_wait_longer_for_their_first_token():
    # the prefill-bound loop: its throughput flat within 2 %, its first token longer by about one request's share of
    # the throughput (1 / X) for each user added, as the simulation gives (2.25 requests/s, TTFT 3.1 / 4.9 / 10.2 s)
    s = spec(chunk_tokens=2048)
    lengths = Lengths(8000, 100, 0.5, 0.5)
    points = [serve_at(s, lengths, users=u) for u in (32, 36, 40, 48)]
    xs = [p.requests_per_s for p in points]
    assert max(xs) <= 1.02 * min(xs)
    for a, b, du in zip(points, points[1:], (4, 4, 8)):
        assert b.ttft_mean_s - a.ttft_mean_s == pytest.approx(du / b.requests_per_s, rel=0.25)


# (prefill chunk, prompt, output, share of the most the replica serves): Poisson arrivals (an open stream).
OPEN = [(2048, 2000, 200, 0.5), (2048, 2000, 200, 0.8), (8192, 500, 300, 0.8), (0, 1000, 300, 0.8),
        (2048, 8000, 100, 0.5)]


@pytest.mark.parametrize("chunk, prompt, output, load", OPEN)
def test_an_open_stream_agrees_with_a_simulation_up_to_four_fifths_of_capacity(chunk, prompt, output, load):
    s = spec(chunk_tokens=chunk)
    lengths = Lengths(prompt, output, 0.5, 0.5)
    rate = load * max_throughput(s, lengths)[0]
    sim = simulate(s, lengths, rate=rate, requests=2000)
    model = serve_at(s, lengths, requests_per_s=rate)
    assert model.requests_per_s == pytest.approx(sim["requests_per_s"], rel=0.10)
    assert model.tpot_p50_s == pytest.approx(sim["tpot_s"], rel=0.30)
    assert model.ttft_mean_s == pytest.approx(sim["ttft_s"], rel=0.30)


def test_an_open_stream_near_capacity_errs_short_within_a_bound():
    # At 90 % of what the replica serves, prompts arriving in bursts keep the prefill busy while the requests they
    # leave behind decode (more than the left-behind prompts the model adds), so the simulation's TPOT and first
    # token are longer than the mean-value queue's: 0.049 s against 0.061 s, 0.24 s against 0.35 s
    # (docs/method.md, "Serving under load"), short by less than a factor 1.7.
    s = spec(chunk_tokens=2048)
    lengths = Lengths(2000, 200, 0.5, 0.5)
    rate = 0.9 * max_throughput(s, lengths)[0]
    sim = simulate(s, lengths, rate=rate, requests=2000)
    model = serve_at(s, lengths, requests_per_s=rate)
    assert sim["tpot_s"] / 1.7 <= model.tpot_p50_s <= sim["tpot_s"]
    assert sim["ttft_s"] / 1.7 <= model.ttft_mean_s <= sim["ttft_s"]


def test_the_running_sequences_are_the_long_ones_by_hand():
    # outputs of mean 200 and spread 1.0: E[O^2] / E[O] = 200 (1 + 1) = 400, so a running sequence holds
    # 100 + (400 - 1) / 2 = 299.5 tokens on average, where a request's own mean is 100 + 199 / 2 = 199.5
    lengths = Lengths(100, 200, 0.5, 1.0)
    assert lengths.mean_context == 199.5
    assert lengths.running_context == 299.5
    assert Lengths(100, 200).running_context == Lengths(100, 200).mean_context  # equal lengths: no bias
    # a pool that reserves whole requests holds 100 + 400 tokens a running one (TensorRT-LLM's GUARANTEED_NO_EVICT)
    assert held_tokens(spec(reserve_whole=True), lengths) == 500.0
    assert held_tokens(spec(), lengths) == 299.5


@pytest.mark.parametrize("users", [64, 128])
def test_a_batch_of_sharegpt_lengths_reads_the_running_caches_as_a_simulation_does(users):
    # Llama 2 7B's shape on an A100-like part (13.5 GB of weights, 0.5 MiB of cache a token), ShareGPT's lengths
    # (265 / 249 tokens, spread 1.0): the caches read each step are the running sequences', longer than a request's
    # own mean. The simulation: 12.9 and 16.1 requests/s; with each request's own mean the model gave 14.9 and 18.9.
    s = spec(kv_bytes_per_token=524_288, chunk_tokens=2048, weight_bytes=13.5e9, active_params=6.7e9,
             bandwidth_bps=2.0e12)
    lengths = Lengths(265, 249, 1.0, 1.0)
    sim = simulate(s, lengths, users, requests=3000, warm=0.4)
    model = serve_at(s, lengths, users=users)
    assert model.requests_per_s == pytest.approx(sim["requests_per_s"], rel=0.05)
    assert model.tpot_p50_s == pytest.approx(sim["tpot_s"], rel=0.05)


def test_a_request_decodes_behind_the_prompts_that_arrived_while_it_waited():
    # 8,000-token prompts in 2,048-token chunks at 95 % of what the replica serves: a request starts decoding with
    # the prompts that came during its own wait still to prefill, their chunks in its first steps. Planned at the
    # simulation's own arrival rate (at this load a few per cent of rate moves the queue): 0.112 s a token against
    # the simulation's 0.112 s; without the prompts left behind the model gave 0.086 s.
    s = spec(chunk_tokens=2048)
    lengths = Lengths(8000, 100, 0.5, 0.5)
    sim = simulate(s, lengths, rate=0.95 * max_throughput(s, lengths)[0], requests=4000)
    model = serve_at(s, lengths, requests_per_s=sim["requests_per_s"])
    assert model.tpot_p50_s == pytest.approx(sim["tpot_s"], rel=0.15)


# (prefill chunk, prompt, output, share of the most the replica serves, harness window s, most a batch, replicas):
# Poisson arrivals held by a harness for batches dealt to the replicas in turn (AMD's MLPerf Llama 2 70B harness:
# 0.3 s or 96 requests, eight single-GPU instances), equal lengths as the MLPerf rows are planned.
BATCHED = [(2048, 2000, 200, 0.5, 0.3, 96, 8), (2048, 2000, 200, 0.85, 0.3, 96, 8), (2048, 2000, 200, 0.85, 0.3, 96, 1),
           (8192, 512, 294, 0.85, 0.3, 96, 8), (8192, 512, 294, 0.85, 0.1, 16, 4)]


@pytest.mark.parametrize("chunk, prompt, output, load, window, most, replicas", BATCHED)
def test_a_harness_that_batches_the_arrivals_agrees_with_a_simulation(chunk, prompt, output, load, window, most,
                                                                      replicas):
    # The first token of a request held for its batch: the hold, the step in progress when the batch lands, the
    # batch's prompts in steps of the budget riding on the decode (its size the request and a Poisson count of
    # others). Against the simulation of the same harness (3,000 requests): p50, p95 and mean within 20 % (measured:
    # 0.86-1.10x), where the rate's own first token (no harness) is 2-4x shorter with eight replicas.
    s = spec(chunk_tokens=chunk)
    lengths = Lengths(prompt, output, 0.0, 0.0)
    rate = load * max_throughput(s, lengths)[0]
    batching = HarnessBatching(window, most, replicas)
    sim = simulate(s, lengths, rate=rate, requests=3000, batching=batching, warm=0.3)
    model = serve_batched(s, lengths, rate, batching)
    assert model.ttft_p50_s == pytest.approx(sim["ttft_p50_s"], rel=0.20)
    assert model.ttft_p95_s == pytest.approx(sim["ttft_p95_s"], rel=0.20)
    assert model.ttft_mean_s == pytest.approx(sim["ttft_s"], rel=0.20)
    plain = serve_at(s, lengths, requests_per_s=rate)
    assert model.tpot_p50_s == plain.tpot_p50_s and model.requests_per_s == plain.requests_per_s
    if replicas == 8:
        assert model.ttft_mean_s > 2.0 * plain.ttft_mean_s


def test_a_batch_of_one_prompt_is_its_step_and_two_uniform_waits_by_hand():
    # Batches that fill at one request (most 1): each goes at once after 1 / (rate x replicas) of the harness's
    # clock, so a request waits U(0, hold) for it, U(0, step) for the decode step in progress, then its prompt's
    # step (one 2,048-token chunk riding on the decode of the others). The sum of two uniforms is symmetric:
    # p50 = mean = f + (hold + step) / 2; its top 5 % is the trapezoid's corner: p95 = f + hold + step - sqrt(0.1
    # hold step) (where the smaller wait is over a tenth of the larger).
    s = spec(chunk_tokens=2048)
    lengths = Lengths(1000, 200, 0.0, 0.0)
    rate = 0.5 * max_throughput(s, lengths)[0]
    batching = HarnessBatching(10.0, 1, 2)
    hold, b = batching.batch(rate)
    assert b == 1 and hold == pytest.approx(1.0 / (2.0 * rate))
    plain = serve_at(s, lengths, requests_per_s=rate)
    step = plain.itl_s
    ctx = lengths.running_context
    f = decode_step_s(s, plain.in_service, ctx, 1000, 524_288 * 1000 * 500) + s.prefill_overhead_s
    point = serve_batched(s, lengths, rate, batching)
    assert point.ttft_p50_s == pytest.approx(f + (hold + step) / 2.0, rel=1e-6)
    assert point.ttft_mean_s == pytest.approx(f + (hold + step) / 2.0, rel=1e-9)
    assert min(hold, step) > 0.1 * max(hold, step)
    assert point.ttft_p95_s == pytest.approx(f + hold + step - math.sqrt(0.1 * hold * step), rel=1e-6)


def test_a_harness_batch_goes_full_or_at_its_window():
    # 9.2 requests/s a GPU on eight GPUs (AMD's MLPerf v4.1 run): 73.7 a second gathered, a 0.3 s window holds 22;
    # at 50 a GPU (400 gathered) 96 fill in 0.24 s
    assert HarnessBatching(0.3, 96, 8).batch(9.2075) == (0.3, 22)
    hold, b = HarnessBatching(0.3, 96, 8).batch(50.0)
    assert (hold, b) == (pytest.approx(0.24), 96)
    for bad in ((0.0, 96, 8), (math.inf, 96, 8), (0.3, 0, 8), (0.3, 96, 0)):
        with pytest.raises(ValueError):
            HarnessBatching(*bad)
