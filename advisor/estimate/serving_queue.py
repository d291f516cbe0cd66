"""Queues in front of one LLM server: the load (concurrent users or an arrival rate) gives the requests in
service, throughput, time to first token (TTFT) and time per output token (TPOT) at p50 and p95, and the highest
load within latency targets (pure; docs/method.md, "Serving under load").

Analytical, not simulated, so that a whole catalog is sized in milliseconds: a mean-value solution (Little's
law) for the batch; the first token from a step queue (the residual of the step in progress, the wait while the
prompts ahead fill the steps' prefill budget, and the prompt's own steps, the last of which gives its first token;
an exponential tail for p50, p95 and p99); admission beyond the sequences that fit as an M/M/c queue (Erlang C)
for an arrival rate, and a closed loop for concurrent users (each sends the next request when the last one ends, as
serving benchmarks count "concurrency"); a harness that holds an arrival rate's requests for batches
(``HarnessBatching``). ``tests/estimate/test_serving_des.py`` checks it against a discrete-event simulation of the
same server.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, fields
from functools import lru_cache
from statistics import NormalDist
from typing import NamedTuple

from advisor.estimate.roots import illinois
from advisor.estimate.serving import (
    Z95,
    Lengths,
    ServerSpec,
    batch_prefill_s,
    concurrency_limit,
    decode_step_s,
    held_tokens,
    kv_capacity_tokens,
    mixes_chunks,
    pipelined,
    prefill_in_service,
    prefill_s,
    prefill_spread_share,
    products_s,
    shared_pass_throughput,
    step_function,
    touched,
)

_RHO_MAX = 0.999
_TOL = 2e-4  # relative tolerance of the solves (a bracket's width, a map's change)
_INF = math.inf


# ------------------------------------------------------------------------------------------------ queues
def erlang_c(servers: int, offered: float) -> float:
    """Probability that an arrival waits in an M/M/c queue (Erlang C) with ``offered = lambda x service``.

    Far below saturation (more than six standard deviations of a Poisson load) it is taken as 0
    (Halfin-Whitt: about 1e-9 there).
    """
    c = int(servers)
    if offered <= 0:
        return 0.0
    if offered >= c:
        return 1.0
    if offered < c - 6.0 * math.sqrt(c) - 1.0:
        return 0.0
    # Erlang B = P(c) / sum_{k<=c} P(k) for a Poisson(offered) count: summed from k = c downwards as ratios to
    # P(c) (P(k-1)/P(k) = k/offered), stopping once the terms no longer count (a few sqrt(offered) below it).
    term = total = 1.0
    for k in range(c, 0, -1):
        term *= k / offered
        total += term
        if term < 1e-12 * total:
            break
    b = 1.0 / total
    rho = offered / c
    return b / (1.0 - rho + rho * b)


def _exp_tail_quantile(p_wait: float, mean_wait_if_waiting: float, q: float) -> float:
    """Quantile ``q`` of a wait that is 0 with probability ``1 - p_wait`` and else exponential."""
    tail = 1.0 - q
    if p_wait <= tail or mean_wait_if_waiting <= 0:
        return 0.0
    return mean_wait_if_waiting * math.log(p_wait / tail)


@dataclass(frozen=True)
class ServePoint:
    """The steady state of one replica at one load.

    Attributes:
        users / requests_per_s_offered: the load given (one of them).
        in_service: mean requests holding a sequence (prefilling or decoding).
        waiting: mean requests waiting for a sequence or slot.
        requests_per_s: requests completed per second.
        output_tokens_per_s: generated tokens per second, all requests together.
        ttft_p50_s / ttft_p95_s: time to first token (queue, prefill and the first step).
        tpot_p50_s / tpot_p95_s: time per output token after the first, per request.
        utilisation: throughput over the most the replica serves with its cache full of requests (the load's
            share of what it can serve).
        stable: False when an arrival rate exceeds what the replica serves (queues grow without bound).
        limit: what bounds the batch: ``kv``, ``seqs``, ``slots`` or ``""``.
        ttft_mean_s: the mean time to first token (what load generators such as AIPerf and MLPerf report).
        itl_s: a decode step with no prompt in it: the median inter-token latency (``vllm bench serve``'s median
            ITL, LMDeploy's per-token latency p50), where most steps carry no prompt.
    """

    users: int | None
    requests_per_s_offered: float | None
    in_service: float
    waiting: float
    requests_per_s: float
    output_tokens_per_s: float
    ttft_p50_s: float
    ttft_p95_s: float
    tpot_p50_s: float
    tpot_p95_s: float
    utilisation: float
    stable: bool
    limit: str
    ttft_mean_s: float = math.inf
    itl_s: float = math.inf

    @property
    def per_user_tokens_per_s(self) -> float:
        """What one request sees while it decodes: 1 / mean TPOT."""
        return 1.0 / self.tpot_p50_s if self.tpot_p50_s > 0 else 0.0

    @property
    def queue_growth_per_s(self) -> float:
        """Requests added to the queue each second: an arrival rate beyond what the replica serves (0 when stable).
        There is no steady first token then: each second of such a load adds ``wait_growth_s_per_s`` seconds to the
        wait of the request that arrives next."""
        if self.stable or self.requests_per_s_offered is None:
            return 0.0
        return max(0.0, self.requests_per_s_offered - self.requests_per_s)

    @property
    def wait_growth_s_per_s(self) -> float:
        """Seconds a new arrival's wait grows by each second of a load beyond capacity: the requests the queue gains
        a second over those the replica ends a second (infinite when it serves none; 0 when stable)."""
        growth = self.queue_growth_per_s
        if growth <= 0:
            return 0.0
        return growth / self.requests_per_s if self.requests_per_s > 0 else math.inf


_POINT_FIELDS = tuple(f.name for f in fields(ServePoint))


def _point(*values) -> ServePoint:
    """The ``ServePoint`` of ``values`` in its fields' order, made without the frozen record's per-field ``__init__``
    (a sizing makes hundreds): the same record, equal and alike in every field."""
    point = object.__new__(ServePoint)
    object.__setattr__(point, "__dict__", dict(zip(_POINT_FIELDS, values)))
    return point


def _replaced(point: ServePoint, **changes) -> ServePoint:
    """``point`` with ``changes`` to its fields, made as ``_point`` is (``dataclasses.replace`` without the init)."""
    out = object.__new__(ServePoint)
    object.__setattr__(out, "__dict__", {**point.__dict__, **changes})
    return out


class _Inner(NamedTuple):
    """The service a batch of ``batch`` requests gets (no admission queue)."""

    requests_per_s: float
    decoding: float
    rho_prefill: float
    tpot_s: float
    tpot_p95_s: float
    ttft_p50_s: float
    ttft_p95_s: float
    residence_s: float
    ttft_mean_s: float
    step_s: float = math.inf  # the decode step alone (no prompt in it)
    # what the first token's quantiles add to the prompt in service (``_ttft_p99``): the prompts alongside, the chance
    # that the step queue holds it and its mean wait then, the others decoding while the prompt prefills
    tail_s: float = 0.0
    busy: float = 0.0
    wait_cond_s: float = 0.0
    others: float = 0.0


class _Terms(NamedTuple):
    """A replica's constants of the solve (``_Replica``): the output tokens after the first, the running context,
    the decode step's terms (the weights' read, whether experts are routed, the products and the caches per sequence,
    the step's fixed and per-sequence costs), the mean prompt's prefill alone, its chunks (whether chunked, how many,
    their link time, prompts per step, each chunk's compute) and the prompt's spread squared."""

    o1: float
    ctx_run: float
    a0: float
    moe: bool
    c1: float
    kv: float
    kv_run: float
    s0: float
    hs: float
    p_mean: float
    chunked: bool
    chunks: int
    link_chunk: float
    per_step: float
    pre_chunk: float
    cv_p2: float


class _Replica:
    """One replica's spec and its requests' lengths, with what the queue needs of them worked out once (the decode
    step's terms, the mean prompt's prefill and chunks, the quantile prompts' prefill in service) and the solutions
    of its loads kept: ``solved`` by ``(batch, rate)`` (at most ``_SOLVED`` of them), ``most`` (``max_throughput``),
    ``full`` (``full_throughput``), and what an open stream's solve evaluates and its batches serve whatever the rate
    (``open_kit``, ``open_one``, ``ladder``). One per ``(spec, lengths)`` (``_replica``)."""

    __slots__ = ("spec", "lengths", "terms", "in_service50", "in_service95", "in_service99", "solved", "most", "full",
                 "open_kit", "open_one", "ladder", "pass_fixed", "decode_extra")

    def __init__(self, spec: ServerSpec, lengths: Lengths) -> None:
        self.spec, self.lengths = spec, lengths
        o1 = max(lengths.output_mean - 1.0, 0.0)
        ctx = lengths.mean_context  # the request's own mean cache
        ctx_run = lengths.running_context  # the cache of each other sequence running with it (length-biased)
        n = spec.parallel_devices
        # A decode step is two rooflines in series, each linear in the batch (``serving.decode_step_s``): the matrix
        # products, max(a0, c1 B + pre), then the attention over the caches, max(a1 B, ca B); plus s0 + hs (B - 1).
        bw = spec.bandwidth_bps * spec.eta_mem * n
        a0 = spec.read_bytes / bw
        moe = spec.expert_fraction < 1.0
        a1 = spec.kv_bytes_per_token * spec.kv_replicas / (spec.bandwidth_bps * (spec.eta_kv or spec.eta_mem) * n)
        c1 = 2.0 * spec.active_params / (spec.decode_flops * n)
        ca = spec.attn_flops_per_pair / (spec.decode_flops * n)
        kv_tok = a1 if a1 > ca else ca  # the attention over one cached token: its read, or its FLOPs
        kv = kv_tok * ctx  # the attention of the request itself over its cache
        kv_run = kv_tok * ctx_run  # and of each other running sequence (``Lengths.running_context``)
        s0 = spec.step_overhead_s
        hs = spec.per_seq_s  # each running sequence beyond the first (host time, all-reduce traffic, expert dispatch)
        p_mean = prefill_s(spec, lengths.prompt_mean)
        chunked = mixes_chunks(spec)  # else a prompt's prefill is a pass of its own the running batch waits for
        chunks = 1
        link_chunk = pre_chunk = 0.0
        # Prompts one step takes at most: as many as the prefill budget holds (a prompt longer than the budget
        # goes in ``chunks`` steps, one at a time); a runtime without chunks runs one prompt per step on its own.
        per_step = 1.0
        if chunked:  # the prompt's chunks ride on decode steps: its prefill FLOPs add to ceil(s/chunk) steps
            chunks = math.ceil(lengths.prompt_mean / spec.chunk_tokens)
            pre_total = (spec.prompt_matmul_s(lengths.prompt_mean)
                         + spec.attn_flops_per_pair * lengths.prompt_mean ** 2 / 2.0
                         / (spec.attention_flops or spec.prefill_flops)) / n * pipelined(spec, lengths.prompt_mean)
            pre_chunk = pre_total / chunks
            # its tokens through the all-reduces and dispatch, in series with the step (``serving.decode_step_s``)
            link_chunk = lengths.prompt_mean * spec.per_token_s / chunks + spec.prefill_overhead_s
            per_step = spec.chunk_tokens / (lengths.prompt_mean / chunks)
            if per_step < 1.0:
                per_step = 1.0
        # Spread of a prompt's prefill time over its mean, squared: its part that grows with the prompt
        # (serving.prefill_spread_share) spread as the prompt (log-normal spread).
        cv_p2 = (lengths.prompt_cv * prefill_spread_share(spec, lengths.prompt_mean)) ** 2
        # A prefill pass's part that does not grow with its prompts (one read of the weights, the pass's fixed
        # time: ``serving.prefill_spread_share``'s), where prefill runs in passes of their own that take every
        # prompt waiting (the prompts sharing a pass share it: ``_kit``); 0 where chunks ride on decode steps or a
        # runtime takes one prompt a pass
        self.pass_fixed = 0.0 if spec.chunk_tokens <= 0 or chunked else p_mean * (
            1.0 - prefill_spread_share(spec, lengths.prompt_mean))
        self.terms = _Terms(o1, ctx_run, a0, moe, c1, kv, kv_run, s0, hs, p_mean, chunked, chunks, link_chunk,
                            per_step, pre_chunk, cv_p2)
        # An engine whose first token comes from the decode step after the prompt's pass (``ServerSpec.
        # decode_first``): the pass leaves the prompt's last token to that step, so with others in service the
        # first token is the step beyond the pass less that token's part of it (a prompt of one token: no pass).
        self.decode_extra = -(p_mean - _pass_s(spec, lengths.prompt_mean - 1.0)) if spec.decode_first else None
        step = step_function(spec)
        self.in_service50 = prefill_in_service(spec, lengths.prompt_q(0.5), step)
        self.in_service95 = prefill_in_service(spec, lengths.prompt_q(0.95), step)
        self.in_service99 = None  # (made when a p99 is asked for: ``_ttft_p99``)
        self.solved: dict = {}
        self.most: tuple[float, int, str] | None = None
        self.full: float | None = None
        # an open stream's decode side with one sequence decoding, and what batches of 2, 4, 8, ... serve (the
        # bracket of every rate's batch starts on them): the same at every rate
        self.open_kit: tuple | None = None
        self.open_one: tuple | None = None
        self.ladder: dict[int, float] = {}


_SOLVED = 64  # solutions kept per replica (a sizing solves a few dozen loads of one)
_replica = lru_cache(maxsize=1024)(_Replica)


def _inner(q: _Replica, batch: float | None, rate: float | None) -> _Inner:
    """The solution of a batch (``_solve``), kept on its replica."""
    key = (batch, rate)
    got = q.solved.get(key)
    if got is None:
        if len(q.solved) >= _SOLVED:
            q.solved.clear()
        got = q.solved[key] = _solve(q, batch, rate)
    return got


def _kit(q: _Replica, batch: float | None) -> tuple:
    """What a solve evaluates on a replica at a batch (``batch`` None: an open stream), with its constants bound once:
    ``(share, steps_at, decode_time, first_token)``, ``share`` the prefills that hold a request up (the others').
    An open stream's are the same at every rate (kept on its replica, ``_Replica.open_kit``)."""
    (o1, _ctx_run, a0, moe, c1, kv, kv_run, s0, hs, p_mean, chunked, chunks, link_chunk, per_step, pre_chunk,
     cv_p2) = q.terms
    spec = q.spec
    host = spec.host_overlap_s
    share = (batch - 1.0) / batch if batch is not None else 1.0  # the prefills that hold a request up: the others'
    pass_fixed = q.pass_fixed
    open_long = chunks > 1 and batch is None  # an open stream's prompt longer than the budget (``first_token``)
    # the decode step after the pass gives the first token where others are in service (a lone request is the plan's)
    less_last = q.decode_extra if batch is None or batch > 1.0 else None
    room_along = per_step - 1.0  # the prompts that can share a step with a new one

    def steps_at(dec: float) -> tuple:
        """The decode side with ``dec`` sequences decoding: its step, the prompts' stall on it, a prompt's own
        service in steps, the step that carries prompts, and the throughput it serves: Little's law, ``dec = x (O - 1)
        TPOT`` with ``TPOT = step / (1 - x stall)``, so ``x = dec / ((O - 1) step + dec stall)``, explicit in the
        batch."""
        mem = a0 * touched(spec, dec) if moe else a0
        cmp_ = c1 * dec
        gpu = (mem if mem > cmp_ else cmp_) + kv + kv_run * (dec - 1.0) + s0 + hs * (dec - 1.0)
        floor = host * dec  # the host's work for the next step overlaps this one (ServerSpec.host_overlap_s)
        step = gpu if gpu > floor else floor
        # a step carrying a chunk is a prefill pass: its products in series with the weights' read
        # (serving.products_s); it holds the others up by what it adds to their step (a lone user's prompt runs on
        # its own: estimate.serving.single_request, the plan's one request), beyond its share of the time the host
        # leaves the devices idle where the host binds: the prompts' chunks a step takes share it, about
        # dec x chunks / (O - 1) of them a step in a steady state (each sequence that ends is followed by a prompt)
        if chunked and dec * share >= 0.5:
            g2 = products_s(mem, cmp_, pre_chunk)
            extra = g2 - (mem if mem > cmp_ else cmp_) + link_chunk
            if floor > gpu:
                sharing = dec * chunks / (o1 if o1 > 1.0 else 1.0)
                extra -= (floor - gpu) / (sharing if sharing > 1.0 else 1.0)
            stall = chunks * (extra if extra > 0.0 else 0.0)
            d_o = dec * share  # the others decoding in the prompt's steps (their caches; none for a lone user)
            own = g2 + link_chunk + kv_run * d_o + s0 + hs * (d_o - 1.0 if d_o > 1.0 else 0.0)
            service = chunks * (own if own > floor else floor)
            carrying = step  # a step with prompts in it: the decode's step plus their stalls
        else:  # the prompt runs on its own: every decoding request waits for its pass
            service = stall = p_mean
            carrying = 0.0
            if dec * share >= 0.5 and pass_fixed > 0.0:
                # A pass takes every prompt waiting (up to the budget): those the others sent during the pass
                # before it, k = 1 + x F of them, share its fixed time F (one read of the weights, the pass's
                # launches), each its own arithmetic v: a prompt holds the others up by v + F / k
                # (serving.shared_pass_throughput).
                v = p_mean - pass_fixed
                x_pass = shared_pass_throughput(dec, o1 * step + dec * share * v, dec * share * pass_fixed,
                                                pass_fixed * share)
                stall = v + pass_fixed / (1.0 + x_pass * pass_fixed * share)
        den = o1 * step + dec * stall * share
        return dec, step, stall, service, carrying, dec / den if den > 0.0 else math.inf

    def decode_time(x: float, state: tuple) -> tuple[float, float]:
        """``(TPOT, rho)`` at throughput ``x``: prefill takes ``rho = x stall`` of the time, so a step of the decode
        reaches a request every ``step / (1 - rho)``."""
        rho = x * state[2] * share
        if rho > _RHO_MAX:
            rho = _RHO_MAX
        return state[1] / (1.0 - rho), rho

    def first_token(x: float, tpot: float, state: tuple, busy: float) -> tuple:
        """The first token at throughput ``x`` and TPOT: the wait for the step in progress (longer while the prompts
        ahead fill the steps' prompt budget), the prompt's own steps and those of the prompts that came with it.
        ``busy``: the share of the time the others are in service, ``1 - exp(-others)``."""
        _dec, _step, stall, service, carrying, _x = state
        # The steps: T = step + (stall per chunk) x K, K the prompt chunks in it (Poisson, at most per_step).
        unit = stall / chunks
        k_mean = x * chunks * tpot * share
        room = 1.0 - k_mean / per_step
        var_t = unit * unit * k_mean * ((room if room > 0.0 else 0.0) + cv_p2)
        # (the decode's steps run only while others are in service; the prompts' spread is already per unit time)
        residual = 0.5 * (tpot * busy + var_t / tpot)
        # The prompt budget: a step that takes prompts is ``carrying`` plus the stalls of those it takes; the
        # share of the steps' room the arrivals use sets how long the prompts ahead hold a new one back.
        k_in = k_mean if k_mean > 1.0 else 1.0
        if k_in > per_step:
            k_in = per_step
        u = x * share * chunks * (carrying + unit * k_in) / per_step  # the others' prompts hold a new one back
        if u > _RHO_MAX:
            u = _RHO_MAX
        if open_long:
            # An open stream's prompt longer than the budget holds it for ``chunks`` steps: a new one waits for what
            # the prompt in prefill has left, the M/G/1 residual work x E[S^2] / 2 of prompts of S = chunks steps
            # (Pollaczek-Khinchine; log-normal spread). A closed loop's few others are closed by Little's law.
            whole = chunks * (carrying + unit)
            residual += x * whole * whole * (1.0 + cv_p2) / 2.0
        wait = residual / (1.0 - u)
        # Prompts that arrived during the step in progress share the prefill step with this one (room allowing);
        # the step that finishes the prompt gives its first token.
        along = 2.0 * x * residual
        if along > room_along:
            along = room_along
        tail = along * unit
        if less_last is not None:  # the batch's decode step after the pass, less the last token the pass leaves
            tail += busy * (_step + less_last)
        return wait + service + tail, busy, wait, tail

    return share, steps_at, decode_time, first_token


def _solve(q: _Replica, batch: float | None, rate: float | None) -> _Inner:
    """The mean-value solution of a batch: a closed loop of ``batch`` requests, or an open stream at ``rate``.

    Unknowns: throughput X, TPOT, TTFT. Little's law gives X = B / R (closed) or B = rate x R (open), with
    ``R = TTFT + (O - 1) x TPOT``; prefill takes ``rho = X x p`` of the time, so a step of the decode
    reaches a request every ``t(B_dec) / (1 - rho)`` (the mean step ``T``). All of it is explicit in the decoding
    batch ``B_dec`` (``steps_at``), which is found by regula falsi, not by iterating a fixed point. A new prompt
    waits for the step in progress (its mean residual ``E[T^2] / 2 E[T]``), longer when the steps' prompt budget is
    taken by the prompts ahead (``1 / (1 - u)``), then rides its own step(s) with the prompts that came with it; its first
    token comes out of the step that finishes its prompt (the prompt's last logits), as in vLLM, SGLang and
    TensorRT-LLM's in-flight batching (docs/method.md, "Serving under load": the step queue).
    """
    terms = q.terms
    o1, ctx_run, p_mean, cv_p2 = terms.o1, terms.ctx_run, terms.p_mean, terms.cv_p2
    if batch is not None:
        share, steps_at, decode_time, first_token = _kit(q, batch)
    else:
        kit = q.open_kit
        if kit is None:
            kit = q.open_kit = _kit(q, None)
        share, steps_at, decode_time, first_token = kit

    # a single sequence decoding: below the throughput it serves, the batch stays at one
    if batch is not None:
        one = steps_at(1.0)
    else:
        one = q.open_one
        if one is None:
            one = q.open_one = steps_at(1.0)
    x_one = one[5]
    if batch is not None:
        # A closed loop: the batch ``dec`` whose throughput and residence close Little's law x R = B. Every figure
        # is explicit in the batch (``steps_at``), and R x / B runs from below 1 with one sequence decoding to at least
        # 1 with all of them, so the root is bracketed and found by regula falsi on its log: no fixed point to
        # iterate, however steep the residence near saturation (tests/estimate/test_serving_des.py). Where the
        # prompts saturate the steps, the users wait for them: the first token is what the loop leaves.
        others = batch - 1.0  # the other users: in service all the time a closed loop runs
        busy = 1.0 - math.exp(-others) if others > 0.0 else 0.0
        log = math.log
        seen: dict = {}

        def closing(x: float, state: tuple) -> tuple:
            """``log(x R / B)`` at throughput ``x`` (``decode_time``, ``first_token``), and the figures it came
            from."""
            rho = x * state[2] * share
            if rho > _RHO_MAX:
                rho = _RHO_MAX
            tpot = state[1] / (1.0 - rho)
            ft = first_token(x, tpot, state, busy)
            return log(x * (ft[0] + o1 * tpot) / batch), (x, state, tpot, rho, ft)

        def at_batch(d: float) -> float:
            state = one if d == 1.0 else steps_at(d)
            f, seen[d] = closing(state[5], state)
            return f

        f1 = at_batch(1.0) if x_one < math.inf else math.inf
        if f1 >= 0.0 or batch <= 1.0:  # one sequence decoding at a time: the throughput closes the loop
            seen.clear()  # keyed by the throughput now

            def at_rate(x: float) -> float:
                f, seen[x] = closing(x, one)
                return f
            hi = x_one if x_one < math.inf else batch / p_mean
            f_hi = at_rate(hi)
            while f_hi < 0.0:  # (a loop that one sequence never fills: its prompts alone)
                hi *= 2.0
                f_hi = at_rate(hi)
            lo = hi * math.exp(-f_hi)
            f_lo = at_rate(lo)
            lo, hi, f_lo, f_hi = illinois(at_rate, lo, hi, f_lo, f_hi, 1e-4, _TOL)
        else:
            lo, hi, f_lo, f_hi = illinois(at_batch, 1.0, batch, f1, at_batch(batch), 1e-4, _TOL)
        key = lo if -f_lo <= f_hi else hi
        x, state, tpot, rho, (ttft, busy, wait, tail) = seen[key]
        r_loop = batch / x - o1 * tpot
        if ttft < r_loop:  # what the loop leaves waits for a step (Little's law, R = B / X)
            wait, ttft = wait + r_loop - ttft, r_loop
    else:
        x = rate
        if x <= x_one:
            state = one
        else:  # the batch at which the replica serves the rate: its throughput rises with the batch while stable
            # Doubling the batch from 2 until it serves the rate (the log of what it serves over the rate turns
            # positive where the ratio reaches 1): what batches of 2, 4, 8, ... serve is the same at every rate (kept,
            # ``ladder``).
            ladder = q.ladder  # (by the doublings k: each entry is set once, to the one value, by whichever thread)
            hi, k = 2.0, 0
            x_hi = ladder.get(0) or ladder.setdefault(0, steps_at(2.0)[5])
            while x_hi / x < 1.0 and hi < 1e7:
                hi, k = 2.0 * hi, k + 1
                x_hi = ladder.get(k) or ladder.setdefault(k, steps_at(hi)[5])
            lo, f_lo, f_hi = 0.5 * hi, math.log((ladder[k - 1] if k else x_one) / x), math.log(x_hi / x)
            if f_hi >= 0.0:
                log = math.log
                lo, hi, _fl, _fh = illinois(lambda d: log(steps_at(d)[5] / x), lo, hi, f_lo, f_hi, 1e-4, _TOL)
            state = steps_at(hi)  # (beyond what any batch serves: the most the prefill leaves the decode)
        tpot, rho = decode_time(x, state)
        ttft = p_mean
        for _ in range(8):  # the requests in service (an open stream's others) from the residence: settles at once
            others = x * (ttft + o1 * tpot)
            new, busy, wait, tail = first_token(x, tpot, state, 1.0 - math.exp(-others) if others > 0.0 else 0.0)
            done = abs(new - ttft) <= _TOL * ttft
            ttft = new
            if done:
                break
        if o1 >= 1.0:
            # A request starts decoding as its prompt leaves the prefill queue, behind the prompts that arrived
            # while it waited: x TTFT of them, their stalls still to run in its decode (distributional Little's
            # law), where a moment taken at random finds only the M/G/1 mean x E[S^2] / 2 (1 - rho) of it (the
            # time average that ``rho`` counts). The difference lands in its first steps.
            behind = x * ttft * state[2] - x * state[2] * state[2] * (1.0 + cv_p2) / (2.0 * (1.0 - rho))
            if behind > 0.0:
                tpot += behind / o1
    dec, step, stall = state[0], state[1], state[2]
    r = ttft + o1 * tpot
    # p50 and p95: the prefill of a prompt of that quantile, the steps, and the wait: none when the server is
    # idle, else exponential with the mean wait of a busy server.
    cond = wait / busy if busy > 0 else 0.0
    # the others decoding while a prompt prefills (none at one user: the prompt alone, estimate.serving.prefill_s)
    ttft95 = q.in_service95(dec * share, ctx_run) + tail + _exp_tail_quantile(busy, cond, 0.95)
    ttft50 = q.in_service50(dec * share, ctx_run) + tail + _exp_tail_quantile(busy, cond, 0.5)
    n_pref = x * o1 * tpot * share
    tpot95 = tpot + Z95 * math.sqrt(n_pref) * stall / max(1.0, o1)
    return _Inner(x, dec, rho, tpot, tpot95, ttft50, ttft95, r, ttft, step, tail, busy, cond, dec * share)


def _ttft_p99(q: _Replica, inner: _Inner) -> float:
    """The first token's 99th percentile of a batch's solution (``_solve``), as its p50 and p95 are: the prompt of
    that quantile in service, the prompts alongside, the step queue's exponential tail at 0.99."""
    if q.in_service99 is None:
        q.in_service99 = prefill_in_service(q.spec, q.lengths.prompt_q(0.99))
    return (q.in_service99(inner.others, q.terms.ctx_run) + inner.tail_s
            + _exp_tail_quantile(inner.busy, inner.wait_cond_s, 0.99))


def full_throughput(spec: ServerSpec, lengths: Lengths) -> float:
    """Requests/s with as many sequences busy as the cache holds (continuous batching: at most ``max_seqs``;
    slots: as many slots of ``slot_tokens`` as fit, whatever ``-np`` says): what a load's utilisation is
    measured against."""
    return _full(_replica(spec, lengths))


def _full(q: _Replica) -> float:
    if q.full is None:
        spec, lengths = q.spec, q.lengths
        tokens = kv_capacity_tokens(spec)
        if spec.batching == "slots":
            slot = spec.slot_tokens or math.ceil(lengths.prompt_q(0.95) + lengths.output_q(0.95))
            c = int(tokens // slot) if slot > 0 else 0
        else:
            c = min(spec.max_seqs, int(tokens // held_tokens(spec, lengths)))
        q.full = _inner(q, float(c), None).requests_per_s if c >= 1 else 0.0
    return q.full


def max_throughput(spec: ServerSpec, lengths: Lengths) -> tuple[float, int, str]:
    """Requests/s the replica serves with every sequence it fits busy: ``(requests/s, sequences, limit)``.
    Zero sequences (the cache holds no request) serves nothing."""
    return _most(_replica(spec, lengths))


def _most(q: _Replica) -> tuple[float, int, str]:
    if q.most is None:
        c, limit = concurrency_limit(q.spec, q.lengths)
        q.most = (0.0, 0, limit) if c < 1 else (_inner(q, float(c), None).requests_per_s, c, limit)
    return q.most


def serve_at(spec: ServerSpec, lengths: Lengths, *, users: int | None = None,
             requests_per_s: float | None = None) -> ServePoint:
    """The steady state of one replica at ``users`` concurrent users or ``requests_per_s`` arrivals.

    Users: a closed loop (each sends the next request when the last ends); those beyond the sequences that
    fit wait for one, ``W = users / X - R``. A rate: Poisson arrivals; beyond the sequences that fit they wait
    in an M/M/c queue (Erlang C) of ``c`` sequences each held for ``R``.

    Raises:
        ValueError: neither or both loads given, or a load out of range.
    """
    if (users is None) == (requests_per_s is None):
        raise ValueError("give users or requests_per_s")
    return _serve(_replica(spec, lengths), users, requests_per_s)


def _serve(q: _Replica, users: int | None, requests_per_s: float | None) -> ServePoint:
    """``serve_at`` on a replica (one of ``users``, ``requests_per_s`` given)."""
    lengths = q.lengths
    x_max, c, limit = _most(q)
    if c < 1:
        return ServePoint(users, requests_per_s, 0.0, 0.0, 0.0, 0.0, math.inf, math.inf, math.inf, math.inf, 0.0,
                          False, limit)
    o = lengths.output_mean
    if users is not None:
        if users < 1:
            raise ValueError("users must be at least 1")
        b = min(users, c)
        inner = _inner(q, float(b), None)
        waiting = float(users - b)
        wait = users / inner.requests_per_s - inner.residence_s if users > b else 0.0
        # The queue moves one place each time a sequence ends; the spread of output lengths spreads the wait.
        wait95 = wait * (1.0 + Z95 * lengths.output_cv / math.sqrt(max(1.0, waiting))) if wait > 0 else 0.0
        return _point(users, None, float(b), waiting, inner.requests_per_s, inner.requests_per_s * o,
                      inner.ttft_p50_s + wait, inner.ttft_p95_s + wait95, inner.tpot_s, inner.tpot_p95_s,
                      _share(inner.requests_per_s, q, x_max), True, limit if users >= c else "",
                      inner.ttft_mean_s + wait, inner.step_s)
    return _serve_rate(q, float(requests_per_s))[0]


def first_token_p99(spec: ServerSpec, lengths: Lengths, requests_per_s: float) -> float:
    """The 99th percentile of the first token at an arrival rate (``serve_at``'s queue: the prompt of that quantile,
    the step queue's and the wait for a sequence's exponential tails at 0.99); infinite beyond capacity."""
    if not requests_per_s > 0 or not math.isfinite(requests_per_s):
        raise ValueError("requests_per_s must be a positive finite number")
    return _serve_rate(_replica(spec, lengths), float(requests_per_s), True)[1]


def _serve_rate(q: _Replica, rate: float, want_p99: bool = False) -> tuple[ServePoint, float]:
    """``serve_at`` at an arrival rate on a replica, and with ``want_p99`` its first token's 99th percentile (the
    prompt of that quantile, the wait in the step queue and for a sequence at theirs, as its p50 and p95; else
    infinite)."""
    lengths = q.lengths
    x_max, c, limit = _most(q)
    o = lengths.output_mean
    if not rate > 0 or not math.isfinite(rate):
        raise ValueError("requests_per_s must be a positive finite number")
    if c < 1:
        return ServePoint(None, rate, 0.0, 0.0, 0.0, 0.0, math.inf, math.inf, math.inf, math.inf, 0.0, False,
                          limit), math.inf
    if rate >= x_max:
        return ServePoint(None, rate, float(c), math.inf, x_max, x_max * o, math.inf, math.inf, math.inf,
                          math.inf, 1.0, False, limit), math.inf
    inner = _inner(q, None, rate)
    if inner.residence_s * rate > c:  # the batch is capped at c: the service of a full batch, and a queue
        inner = _inner(q, float(c), None)
    held = inner.residence_s
    offered = rate * held
    pw = erlang_c(c, offered)
    cond = held / max(c - offered, 1e-9)
    wait_mean = pw * cond
    in_service = min(float(c), offered)
    return _point(None, rate, in_service, rate * wait_mean, rate, rate * o,
                  inner.ttft_p50_s + _exp_tail_quantile(pw, cond, 0.5),
                  inner.ttft_p95_s + _exp_tail_quantile(pw, cond, 0.95), inner.tpot_s, inner.tpot_p95_s,
                  _share(rate, q, x_max), True, limit if pw > 0.05 else "",
                  inner.ttft_mean_s + wait_mean, inner.step_s), \
        (_ttft_p99(q, inner) + _exp_tail_quantile(pw, cond, 0.99) if want_p99 else math.inf)


_NORMAL = NormalDist()
Z80 = _NORMAL.inv_cdf(0.9)  # a two-sided 80 % range's half width, in standard deviations of a normal spread


def beyond_capacity_chance(load_log: float, spread: float) -> float:
    """The chance that an arrival rate is beyond what a replica serves, its capacity the planned one times ``e^eps``
    with ``eps`` normal of sd ``spread``: ``Phi(load_log / spread)``, ``load_log`` the log of the rate over the
    planned capacity (a half at the planned capacity; 0 or 1 where the capacity is known)."""
    if spread <= 0:
        return 1.0 if load_log >= 0 else 0.0
    return _NORMAL.cdf(load_log / spread)


def capacity_log_quantile(load_log: float, spread: float, q: float = 0.5) -> float | None:
    """How much faster than planned a replica is, as a log, at quantile ``q`` of its capacity's uncertainty *given
    that it keeps up with the load*: its capacity is the planned one times ``e^eps`` with ``eps`` normal of sd
    ``spread`` (the held-out error of served throughput), and it keeps up where ``eps > load_log`` (``load_log``: the
    log of the arrival rate over the planned capacity). So ``eps_q = spread * Phi^-1(Phi(u) + q (1 - Phi(u)))`` with
    ``u = load_log / spread``: 0 at the median far below capacity, ``0.674 spread`` (the upper quartile) at the planned
    capacity, and above the load's own log beyond it. None where the chance that it keeps up is nil (below 1e-9).
    """
    if not 0.0 < q < 1.0:
        raise ValueError("q must be between 0 and 1")
    if spread <= 0:
        return 0.0 if load_log < 0 else None
    below = beyond_capacity_chance(load_log, spread)
    if 1.0 - below < 1e-9:
        return None
    return spread * _NORMAL.inv_cdf(below + q * (1.0 - below))


def serve_kept_up(spec: ServerSpec, lengths: Lengths, requests_per_s: float, spread: float, q: float = 0.5
                  ) -> ServePoint | None:
    """The steady state at an arrival rate on a replica whose capacity is uncertain by ``spread`` (the sd of its log),
    at quantile ``q`` of that uncertainty given that it keeps up with the rate (``capacity_log_quantile``): what a
    published steady run at a rate is planned as, a run that kept up (MLPerf's server scenario, whose submitters push
    the rate up to what their latency bounds allow). Near the planned capacity a queue's wait grows as
    ``1 / (1 - rho)``, so a capacity a few per cent low turns a measured 0.4 s first token into minutes: the figure
    given that it kept up is that of the capacities it can have, never one beyond them.

    A replica ``k = e^eps`` times as fast at rate ``r`` is this one at ``r / k`` with its times over ``k``
    (every step, prefill and wait scales alike), so the point is ``serve_at`` at ``r / k`` scaled by ``k``.
    None where it cannot keep up (no capacity, or no chance).
    """
    if not requests_per_s > 0 or not math.isfinite(requests_per_s):
        raise ValueError("requests_per_s must be a positive finite number")
    q_ = _replica(spec, lengths)
    x_max = _most(q_)[0]
    if x_max <= 0:
        return None
    eps = capacity_log_quantile(math.log(requests_per_s / x_max), spread, q)
    if eps is None:
        return None
    return _at_speed(q_, x_max, requests_per_s, eps)


def serve_at_speed(spec: ServerSpec, lengths: Lengths, requests_per_s: float, log_speed: float
                   ) -> ServePoint | None:
    """The steady state at an arrival rate of this replica ``e^log_speed`` times as fast: this one at ``rate / k``
    with its times over ``k`` and its rates times ``k`` (every step, prefill and wait scales alike); None where that
    replica does not keep up with the rate."""
    if not requests_per_s > 0 or not math.isfinite(requests_per_s):
        raise ValueError("requests_per_s must be a positive finite number")
    q_ = _replica(spec, lengths)
    return _at_speed(q_, _most(q_)[0], requests_per_s, log_speed)


def _at_speed(q_: _Replica, x_max: float, requests_per_s: float, log_speed: float) -> ServePoint | None:
    return _at_speed_p99(q_, x_max, requests_per_s, log_speed, False)[0]


def _at_speed_p99(q_: _Replica, x_max: float, requests_per_s: float, log_speed: float, want_p99: bool = True
                  ) -> tuple[ServePoint | None, float]:
    """``_at_speed``'s point and (with ``want_p99``) its first token's 99th percentile (``_serve_rate``), both of the
    faster replica."""
    k = math.exp(log_speed)
    if not requests_per_s / k < x_max:
        return None, math.inf
    point, p99 = _serve_rate(q_, requests_per_s / k, want_p99)
    if not point.stable:
        return None, math.inf
    return _replaced(point, **_scaled_fields(point, k, k, k), requests_per_s_offered=requests_per_s), p99 / k


_Z99_OVER_Z95 = _NORMAL.inv_cdf(0.99) / _NORMAL.inv_cdf(0.95)


def p99_of(p50: float, p95: float) -> float:
    """The 99th percentile of a latency known by its median and 95th percentile, its tail taken as log-normal:
    ``p50 (p95 / p50)^(z99 / z95)``."""
    if not 0 < p50 <= p95:
        return p95
    return p50 * (p95 / p50) ** _Z99_OVER_Z95


def _exp_plus_uniform_cdf(x: float, a: float, m: float, w: float) -> float:
    """``P(T + U <= x)`` of ``T = a + Exp(mean m)`` (``m`` 0: ``T = a``) and ``U`` uniform on ``(0, w)``, ``w > 0``:
    ``(G(x) - G(x - w)) / w`` with ``G`` the integral of ``T``'s distribution, ``G(y) = (y - a) - m (1 -
    e^(-(y - a) / m))`` above ``a``, 0 below."""

    def g(y: float) -> float:
        d = y - a
        if d <= 0.0:
            return 0.0
        return d - m * -math.expm1(-d / m) if m > 0.0 else d

    return (g(x) - g(x - w)) / w


def _exp_plus_uniform_quantile(p50: float, pq: float, q_known: float, w: float, q: float) -> float:
    """Quantile ``q`` of a first token ``T`` known by its median ``p50`` and its quantile ``q_known`` (``pq``), taken
    as a shifted exponential through the two (the queue's exponential tail, as ``serve_finite``'s steady state),
    plus a wait uniform on ``(0, w)``; by bisection on ``_exp_plus_uniform_cdf``."""
    if not (math.isfinite(p50) and math.isfinite(pq) and math.isfinite(w)):
        return math.inf
    m = max(pq - p50, 0.0) / math.log(0.5 / (1.0 - q_known))
    a = p50 - m * math.log(2.0)
    if w <= 0.0:
        return a + m * math.log(1.0 / (1.0 - q))
    lo, hi = a, a + w + m * math.log(1.0 / (1.0 - q))
    for _ in range(60):  # bisection to a relative 1e-18 of the bracket
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if _exp_plus_uniform_cdf(mid, a, m, w) >= q else (mid, hi)
    return hi


def scheduler_run_s(point: ServePoint, steps: int) -> float:
    """The longest a new request waits for the scheduler beyond the step in progress on an engine that schedules
    once every ``steps`` decode steps (vLLM's multi-step scheduling, ``--num-scheduler-steps``: the scheduler runs
    once and the model then runs ``steps`` forward passes before it runs again; vllm-project/vllm pull 7000): the
    rest of the run of ``steps`` steps in progress, ``(steps - 1)`` times a request's time per output token (the
    run's steps and the prefill passes between runs, as a request sees them). The step in progress is already in the
    first token (``_kit``'s ``first_token``: half a step on average)."""
    if steps < 1:
        raise ValueError("an engine schedules at least every step")
    tpot = point.tpot_p50_s
    return (steps - 1) * tpot if math.isfinite(tpot) and tpot > 0.0 else 0.0


def with_scheduler_steps(point: ServePoint, steps: int) -> ServePoint:
    """``point`` on an engine that schedules once every ``steps`` decode steps (``scheduler_run_s``): a request that
    arrives waits for the run in progress to end before its prompt can be scheduled, a wait uniform up to
    ``scheduler_run_s`` (an arrival at a random moment of the run), added to its first token: the mean by half of
    it, the p50 and p95 those of the sum, the first token without it taken as a shifted exponential through its p50
    and p95. One step (``steps`` 1) is ``point`` itself."""
    w = scheduler_run_s(point, steps)
    if w <= 0.0 or not (math.isfinite(point.ttft_p50_s) and math.isfinite(point.ttft_p95_s)):
        return point
    p50, p95 = point.ttft_p50_s, point.ttft_p95_s
    return _replaced(point, ttft_mean_s=point.ttft_mean_s + w / 2.0,
                     ttft_p50_s=_exp_plus_uniform_quantile(p50, p95, 0.95, w, 0.5),
                     ttft_p95_s=_exp_plus_uniform_quantile(p50, p95, 0.95, w, 0.95))


@dataclass(frozen=True)
class HarnessBatching:
    """A load generator's harness that holds the arrivals and hands them to the replicas in batches, one replica a
    batch in turn: a batch goes when it holds ``most`` requests or ``window_s`` after the last one went, to the next
    of ``replicas`` replicas (round robin). AMD's MLPerf Inference v4.1 Llama 2 70B harness (``--enable-batcher``:
    ``batch_samples_loop`` of ``VllmFp8/sync_sut.py``; ``--batcher-threshold`` 0.3 s and ``--gpu-batch-size`` 96, the
    defaults of ``mainVllmFp8_SyncServer.py``, which ``test_VllmFp8_SyncServer_perf.sh`` runs; one vLLM instance a
    GPU)."""

    window_s: float
    most: int
    replicas: int = 1

    def __post_init__(self) -> None:
        if not (math.isfinite(self.window_s) and self.window_s > 0):
            raise ValueError("a batching window must be a positive number of seconds")
        if self.most < 1 or self.replicas < 1:
            raise ValueError("a batch holds at least one request and goes to at least one replica")

    def batch(self, requests_per_s: float) -> tuple[float, int]:
        """``(seconds a request waits at most for its batch to go, requests a batch holds)`` at ``requests_per_s``
        a replica: the harness gathers ``replicas`` times that rate, and a batch goes full or at the window's end,
        whichever comes first."""
        gathered = requests_per_s * self.replicas
        hold = min(self.window_s, self.most / gathered)
        return hold, max(1, min(self.most, round(gathered * hold)))


class _Firsts(NamedTuple):
    """A first token's p50, p95, p99 and mean (seconds)."""

    p50: float
    p95: float
    p99: float
    mean: float


def _landed_wave(spec: ServerSpec, lengths: Lengths, b: int, decoding: float) -> tuple[float, dict[float, int]]:
    """``(seconds, {first token: prompts})`` of a batch of ``b`` prompts that lands on a replica with ``decoding``
    sequences decoding at the running context: the prompts go first come first served into steps of the prefill
    budget (``chunk_tokens``), each riding on a decode step of the others (``decode_step_s`` with the step's prompt
    tokens and their causal attention, plus what a prefill pass adds, ``prefill_overhead_s``), as the simulation of
    ``tests/estimate/test_serving_des.py`` runs them; a runtime without chunks runs each prompt on its own
    (``prefill_s``). A prompt's first token comes at the end of the step that holds its last token."""
    s = lengths.prompt_mean
    firsts: dict[float, int] = {}
    t = 0.0
    if spec.chunk_tokens <= 0:
        alone = prefill_s(spec, s)
        for _ in range(b):
            t += alone
            firsts[t] = 1
        return t, firsts
    ctx = lengths.running_context
    left, done_before, i = [s] * b, [0.0] * b, 0
    while i < b:
        budget, tokens, attn, ending = float(spec.chunk_tokens), 0.0, 0.0, 0
        j = i
        while j < b and budget > 0.0:
            chunk = min(budget, left[j])
            attn += spec.attn_flops_per_pair * chunk * (done_before[j] + chunk / 2.0)
            tokens += chunk
            budget -= chunk
            left[j] -= chunk
            done_before[j] += chunk
            if left[j] <= 0.0:
                ending += 1
                j += 1
            else:
                break
        # (a runtime that runs prefill passes of their own runs the batch's passes with the decode waiting)
        t += decode_step_s(spec, decoding if mixes_chunks(spec) else 0.0, ctx, tokens, attn) + spec.prefill_overhead_s
        if ending:
            firsts[t] = ending
        i = j
    return t, firsts


def _batched_first_token(q: _Replica, point: ServePoint, requests_per_s: float, speed: float,
                         batching: HarnessBatching) -> _Firsts:
    """The first token of a request that a harness holds for its batch (``HarnessBatching``) on a replica ``speed``
    times as fast as ``q``'s, whose steady state at ``requests_per_s`` is ``point`` (its times that replica's). The
    sum of:

    - the wait for the batch to go, uniform up to the hold (the harness's clock, not the replica's);
    - the wait for the replica when the batch lands: for the decode step in progress (uniform up to a step with no
      prompt in it, ``point.itl_s``), after what is left of the previous batch's prompts where they take longer than
      the time between two batches (``replicas`` holds: the batches land on a clock);
    - the request's place in its batch's prompts (``_landed_wave``), equally likely; the batch a request finds holds
      it and a Poisson count of others (a window that closes by time; ``most`` where batches fill first).

    Its quantiles by bisection on the mixture's distribution (each part's first tokens taken at the ends of the
    steps: a few values a batch)."""
    hold, _b = batching.batch(requests_per_s)
    gathered = requests_per_s * batching.replicas
    lengths, spec = q.lengths, q.spec
    decoding = point.in_service
    if gathered * batching.window_s >= batching.most:  # batches fill before the window closes
        sizes = {batching.most: 1.0}
    else:  # its own request and a Poisson count of others, at most ``most``
        m = gathered * hold
        sizes, pmf, k = {}, math.exp(-m), 0
        while k < batching.most and (k <= m or pmf > 1e-4):
            sizes[k + 1] = pmf
            k += 1
            pmf *= m / k
        last = min(k + 1, batching.most)  # the rest of the Poisson tail
        sizes[last] = sizes.get(last, 0.0) + max(0.0, 1.0 - sum(sizes.values()))
    parts: list[tuple[float, float]] = []  # (first token after landing, weight)
    wave_mean = 0.0
    for b, w in sizes.items():
        length, firsts = _landed_wave(spec, lengths, b, decoding)
        wave_mean += w * length / speed
        for f, n in firsts.items():
            parts.append((f / speed, w * n / b))
    step = point.itl_s if math.isfinite(point.itl_s) else 0.0
    left = max(0.0, wave_mean - batching.replicas * hold)  # the previous batch's prompts still to run

    def two_uniform(x: float, a: float, c: float) -> float:  # P(U(0, a) + U(0, c) <= x): a trapezoid's distribution
        lo_w, hi_w = (a, c) if a < c else (c, a)
        if x <= 0.0:
            return 0.0
        if x >= lo_w + hi_w:
            return 1.0
        if lo_w <= 0.0:
            return x / hi_w if hi_w > 0.0 else 1.0
        if x <= lo_w:
            return x * x / (2.0 * lo_w * hi_w)
        if x <= hi_w:
            return (x - lo_w / 2.0) / hi_w
        return 1.0 - (lo_w + hi_w - x) ** 2 / (2.0 * lo_w * hi_w)

    def cdf(x: float) -> float:
        return sum(w * two_uniform(x - left - f, hold, step) for f, w in parts)

    total = sum(w for _f, w in parts)

    def quantile(p: float) -> float:
        lo, hi = min(f for f, _w in parts) + left, max(f for f, _w in parts) + left + hold + step
        for _ in range(50):  # bisection to 1e-15 of the span
            mid = 0.5 * (lo + hi)
            lo, hi = (lo, mid) if cdf(mid) >= p * total else (mid, hi)
        return hi

    mean = sum(f * w for f, w in parts) / total + left + (hold + step) / 2.0
    return _Firsts(quantile(0.5), quantile(0.95), quantile(0.99), mean)


def serve_at_bounds(spec: ServerSpec, lengths: Lengths, requests_per_s: float, ttft_p99_s: float,
                    tpot_p99_s: float, batching: HarnessBatching | None = None, scheduler_steps: int = 1
                    ) -> ServePoint | None:
    """The steady state at an arrival rate a server carried within p99 latency bounds (its most, as submitted): MLPerf
    Inference's server scenario, whose score is that rate and whose run is valid only where the first token's and
    the time per output token's 99th percentiles are within the benchmark's bounds (``loadgen/mlperf.conf`` of
    mlcommons/inference: ``ttft_latency`` and ``tpot_latency`` at ``target_latency_percentile = 99``; Llama 2 70B
    and Mixtral 8x7B: 2,000 ms and 200 ms). The run met its bounds at that rate, so the rate bounds the replica's
    speed from below and no more (a submitter may stop short of the bounds: the published p99s of RedHat's L40S run
    are 0.38 and 0.72 of them, NVIDIA's H200 Mixtral run's 0.27 and 0.84, Lenovo's H100 NVL run's 0.18 and 0.43):
    planned on this replica where it meets the bounds at the rate, else on the replica ``k > 1`` times as fast
    (``serve_kept_up``'s scaling) whose larger p99 over its bound is 1 at the rate. The first token's p99 is the
    queue's own (``_serve_rate``: the prompt of that quantile, the step queue's and the wait for a sequence's
    exponential tails at 0.99), not one drawn through its p50 and p95: a wait for a sequence that one request in 50
    meets is in the p99 and not in the p95, which a log-normal through the two cannot show; the time per output
    token's p99 from p50 and p95 (``p99_of``). None where no speed meets it. ``batching``: a harness that holds the
    requests for batches (``HarnessBatching``): their first token is the batch's (``_batched_first_token``), its p99
    the mixture's own. ``scheduler_steps``: an engine that schedules once every that many decode steps
    (``with_scheduler_steps``): every first token, its p99 too, waits for the run in progress.
    """
    if not requests_per_s > 0 or not math.isfinite(requests_per_s):
        raise ValueError("requests_per_s must be a positive finite number")
    if scheduler_steps < 1:
        raise ValueError("an engine schedules at least every step")
    if not (ttft_p99_s > 0 and tpot_p99_s > 0):
        raise ValueError("latency bounds must be positive")
    q_ = _replica(spec, lengths)
    x_max = _most(q_)[0]
    if x_max <= 0:
        return None

    def miss(log_k: float) -> float:
        p, ttft99 = _at_speed_p99(q_, x_max, requests_per_s, log_k)
        if p is None or not (p.ttft_p50_s > 0 and p.tpot_p50_s > 0):
            return _INF
        if batching is not None:
            firsts = _batched_first_token(q_, p, requests_per_s, math.exp(log_k), batching)
            p50, ttft99 = firsts.p50, firsts.p99
        else:
            p50 = p.ttft_p50_s
        if scheduler_steps > 1:
            ttft99 = _exp_plus_uniform_quantile(p50, ttft99, 0.99, scheduler_run_s(p, scheduler_steps), 0.99)
        r = max(ttft99 / ttft_p99_s, p99_of(p.tpot_p50_s, p.tpot_p95_s) / tpot_p99_s)
        return math.log(r) if r > 0 else -_INF

    if miss(0.0) <= 0.0:  # this replica meets the bounds at the rate: nothing says the run's was slower
        b = 0.0
    else:  # the slowest replica faster than this one that meets them
        lo = max(0.0, math.log(requests_per_s / x_max))  # (below the rate's own capacity: past the bounds)
        hi = lo + 0.5
        f_hi = miss(hi)
        for _ in range(60):
            if f_hi < 0:
                break
            lo, hi = hi, hi + 1.0
            f_hi = miss(hi)
        else:
            return None
        _a, b, _, _ = illinois(miss, lo, hi, _INF, f_hi, f_tol=1e-3, x_tol=1e-4)
    point = _at_speed(q_, x_max, requests_per_s, b)
    if point is None:
        return None
    if batching is not None:
        point = _in_batches(q_, point, requests_per_s, math.exp(b), batching)
    return with_scheduler_steps(point, scheduler_steps)


def _in_batches(q: _Replica, point: ServePoint, requests_per_s: float, speed: float,
                batching: HarnessBatching) -> ServePoint:
    """``point`` with the first token of requests held for the harness's batches (``_batched_first_token``)."""
    firsts = _batched_first_token(q, point, requests_per_s, speed, batching)
    return _replaced(point, ttft_p50_s=firsts.p50, ttft_p95_s=firsts.p95, ttft_mean_s=firsts.mean)


def serve_batched(spec: ServerSpec, lengths: Lengths, requests_per_s: float, batching: HarnessBatching
                  ) -> ServePoint:
    """The steady state at an arrival rate (``serve_at``) whose requests a harness holds for batches it sends to the
    replicas in turn (``HarnessBatching``): the decode side as the rate's, the first token the batch's
    (``_batched_first_token``). Checked against the simulation (``tests/estimate/test_serving_des.py``)."""
    if not requests_per_s > 0 or not math.isfinite(requests_per_s):
        raise ValueError("requests_per_s must be a positive finite number")
    q_ = _replica(spec, lengths)
    point = _serve(q_, None, requests_per_s)
    return _in_batches(q_, point, requests_per_s, 1.0, batching) if point.stable else point


def serve_together(spec: ServerSpec, lengths: Lengths, users: int, *, clients: bool = False) -> ServePoint:
    """``users`` requests of one length started together, each user sending the next when the last ends: a closed
    loop of equal requests stays in step (all finish at once), as synthetic benchmarks run it (``vllm bench serve``
    and AIPerf at a fixed concurrency and lengths, LMDeploy's ``profile_generation``, a static batch, or every request
    queued at once). ``serve_at`` is the same loop once the users have drifted apart (real traffic).

    A round of ``B = min(users, sequences that fit)`` requests: their prompts in steps of the prefill budget
    (``batch_prefill_s``; a prompt's first token comes out of the step that finishes it), then ``O - 1`` decode steps
    of the whole batch at the mean context (``decode_step_s``). Throughput ``B O / T``; request ``i``'s first token at
    the end of the step holding its last prompt token, its time per output token ``(T - f_i) / (O - 1)``; users
    beyond ``B`` wait ``(users - B) / B`` rounds (docs/method.md, "Serving under load").

    ``clients``: each round's requests are sent by the users' clients one at a time as their last requests end
    (LMDeploy's ``profile_generation`` threads, each calling ``stream_infer`` again), not queued at once (a static
    batch). The round's first request then finds the engine idle and goes alone: the engine's loop blocks on an
    empty queue and runs an iteration with what is queued when it wakes (TurboMind's ``LlamaBatch::
    InternalThreadEntry``, ``request_queue.dequeue`` blocking while the batch is empty; vLLM's ``EngineCoreProc.
    _process_input_queue``, ``input_queue.get()`` while it has no work), and the others, sent while that iteration
    runs, wait for its end and are prefilled together in the next (``_round_firsts``).

    An engine whose first token comes from the decode step after the prompt's pass (``ServerSpec.decode_first``,
    TurboMind) gives a round every first token after one iteration's passes (of all but each prompt's last token) and
    the batch's decode step (``_decode_first_wave``); a round sent by clients, its first request alone and the
    others in the iteration after it.
    """
    if users < 1:
        raise ValueError("users must be at least 1")
    c, limit = concurrency_limit(spec, lengths)
    if c < 1:
        return ServePoint(users, None, 0.0, 0.0, 0.0, 0.0, math.inf, math.inf, math.inf, math.inf, 0.0, False, limit)
    b = min(users, c)
    s, o = lengths.prompt_mean, lengths.output_mean
    if clients:
        t_pre, firsts = _round_firsts(spec, lengths, b)
    elif spec.decode_first and b > 1:  # one iteration takes every queued prompt: all first tokens after its passes
        firsts = _decode_first_wave(spec, lengths, b, 0)
        t_pre = firsts[-1]
    else:
        t_pre, firsts = _wave(spec, b, s)
    step = decode_step_s(spec, float(b), lengths.mean_context)
    t_round = t_pre + max(o - 1.0, 0.0) * step
    wait = (users - b) / b * t_round
    o1 = max(o - 1.0, 1.0)
    tpots = [(t_round - f) / o1 for f in firsts]

    def q(v: list[float], p: float) -> float:
        return v[min(len(v) - 1, int(p * len(v)))]

    x = b / t_round
    mean_first = sum(firsts) / b
    return ServePoint(users, None, float(b), float(users - b), x, x * o, q(firsts, 0.5) + wait, q(firsts, 0.95) + wait,
                      sum(tpots) / b, q(sorted(tpots), 0.95), 1.0 if users >= c else b / c, True,
                      limit if users >= c else "", mean_first + wait, step)


def _round_firsts(spec: ServerSpec, lengths: Lengths, b: int, hits: int = 0) -> tuple[float, list[float]]:
    """``(seconds, first tokens)`` of ``b`` prompts that clients send one at a time to an idle engine (a round of
    ``serve_together``'s ``clients``, a finite run's first wave): the first request alone (the plan's one prompt,
    ``_wave`` of one; its last token only where its prompt is cached), the other ``b - 1`` after it, prefilled
    together (``_cached_wave``, the first ``hits - 1`` of them cached), each first token that long after the first
    request's step ends; the seconds run to the end of the last prefill step (sorted, from the start). In the later
    steps the first request decodes with them (TurboMind puts the other prompts' prefill before the step that
    decodes all of them, ``LlamaBatch::ContextDecode`` then ``Generate``), so the round's decode is the whole
    batch's, as without clients."""
    t1, _ = _wave(spec, 1, 1.0 if hits > 0 else lengths.prompt_mean)
    if b < 2:
        return t1, [t1]
    if spec.decode_first and hits <= 1:
        rest = _decode_first_wave(spec, lengths, b - 1, 1)
    else:
        rest = _cached_wave(spec, lengths, b - 1, max(hits - 1, 0))
    return t1 + rest[-1], [t1] + [t1 + f for f in rest]


def _pass_s(spec: ServerSpec, tokens: float) -> float:
    """One prompt's pass of ``tokens`` tokens alone (``prefill_s``); none below one token."""
    return prefill_s(spec, tokens) if tokens >= 1.0 else 0.0


def _decode_first_wave(spec: ServerSpec, lengths: Lengths, n: int, before: int) -> list[float]:
    """The first tokens (seconds from the start) of ``n`` prompts queued together on an engine whose first token
    comes from the decode step after the pass (``ServerSpec.decode_first``): one iteration takes every request queued
    when it starts, prefills all but each prompt's last token in passes of the prefill budget (a prompt of one token
    has no pass: TurboMind's ``ContextDecode`` skips it) and then runs one decode step of the batch (the ``before``
    sequences and the ``n``), whose output is every one of their first tokens: all ``n`` at the iteration's end.
    TurboMind v0.1.0a1 (``src/turbomind/models/llama/LlamaBatch.cc``, ``InternalThreadEntry``): ``request_queue.
    dequeue`` up to the free slots, ``ContextDecode`` of every new sequence, ``step_length_`` (1) ``Generate`` steps,
    then ``Finish`` streams the tokens. The clients' requests sent while the first request's iteration runs are all
    queued at the next one's start (LMDeploy's A100 page, Llama 2 13B at 16 users of 2,048-token prompts: first
    tokens of mean 3.442 s and at most 3.668 s, the least 0.245 s the first request alone, so the other 15 all came
    at 3.66 s)."""
    s1 = lengths.prompt_mean - 1.0
    t = (_wave(spec, n, s1)[0] if s1 >= 1.0 else 0.0) + decode_step_s(spec, float(before + n), lengths.mean_context)
    return [t] * n


def _wave(spec: ServerSpec, b: int, s: float) -> tuple[float, list[float]]:
    """``(seconds, first tokens)`` of ``b`` prompts of ``s`` tokens sent together with nothing decoding: prefilled in
    steps of the prefill budget (``batch_prefill_s``), each request's first token at the end of the step that holds
    its last prompt token (sorted, seconds from the start)."""
    steps, t_pre = batch_prefill_s(spec, b, s)
    per_step = b * s / steps  # prompt tokens a prefill step takes
    return t_pre, sorted(t_pre * math.ceil((i + 1) * s / per_step - 1e-9) / steps for i in range(b))


def serve_finite(spec: ServerSpec, lengths: Lengths, users: int, prompts: int, cached: int = 0) -> ServePoint:
    """A finite benchmark run: ``prompts`` requests sent by ``users`` users in a closed loop who all start at once,
    as ``vllm bench serve`` and SGLang's ``bench_serving`` run ``--request-rate inf --max-concurrency users
    --num-prompts prompts`` and LMDeploy's ``profile_throughput`` its request threads: the first ``users`` requests
    are sent at t = 0 and wait for each other's prompts, the rest find the users drifted apart (``serve_at``).

    The first wave: ``B = min(users, sequences that fit)`` prompts sent by the users' clients to an idle engine, the
    first alone and the others prefilled together after it in steps of the prefill budget (``_round_firsts``, as
    ``serve_together``'s rounds sent by clients; a wave of one user is the steady state's request). The first token's
    mean is the mean over all ``prompts`` requests, the wave's ``B`` and the steady state's ``prompts - B``; its
    p50 and p95 are the quantiles of that mixture, the steady state's first token taken as a shifted exponential
    through its p50 and p95 (the queue's exponential tail). Throughput and the per-token times are the steady
    state's. ``prompts`` at most ``users`` is one wave of ``prompts`` (docs/method.md, "Serving under load").

    ``cached``: the run's first requests whose prompts the server's prefix cache already holds (an earlier run on the
    same server sent them: ``_cached_in_wave``). Those of the wave compute one token each, the first alone, the
    others in the first prefill step after it; the wave's other prompts are prefilled as above.

    Raises:
        ValueError: users or prompts below 1, or cached below 0.
    """
    if users < 1 or prompts < 1:
        raise ValueError("users and prompts must be at least 1")
    if cached < 0:
        raise ValueError("cached must be at least 0")
    users = min(users, prompts)
    steady = serve_at(spec, lengths, users=users)
    c, _ = concurrency_limit(spec, lengths)
    b = min(users, c)
    if b < 2 or not steady.stable or not math.isfinite(steady.ttft_mean_s):
        return steady
    firsts = _round_firsts(spec, lengths, b, _cached_in_wave(spec, lengths, b, cached))[1]
    share = b / prompts  # the wave's share of the run's requests
    mean = share * sum(firsts) / b + (1.0 - share) * steady.ttft_mean_s
    # the steady state's first token: a + Exp(m) through its p50 and p95
    m = max(steady.ttft_p95_s - steady.ttft_p50_s, 0.0) / math.log(10.0)
    a = steady.ttft_p50_s - m * math.log(2.0)

    def cdf(x: float) -> float:
        wave = sum(1 for f in firsts if f <= x) / b
        rest = (1.0 if x >= a else 0.0) if m <= 0 else (1.0 - math.exp(-(x - a) / m) if x > a else 0.0)
        return share * wave + (1.0 - share) * rest

    def quantile(q: float) -> float:
        lo = min(firsts[0], a)
        hi = max(firsts[-1], a + m * math.log(1.0 / (1.0 - q)) if m > 0 else a)
        for _ in range(60):  # bisection to a relative 1e-18 of the bracket
            mid = 0.5 * (lo + hi)
            lo, hi = (lo, mid) if cdf(mid) >= q else (mid, hi)
        return hi

    return _replaced(steady, ttft_mean_s=mean, ttft_p50_s=quantile(0.5), ttft_p95_s=quantile(0.95))


def _cached_in_wave(spec: ServerSpec, lengths: Lengths, b: int, cached: int) -> int:
    """How many of a first wave of ``b`` requests find their whole prompt in the server's prefix cache: the run's
    first ``cached`` prompts (sent first, so the wave's first), as many of them as the cache held with the earlier
    run's requests, each its prompt and output (SGLang's radix cache keeps a finished request's tokens until the pool
    needs the room: ``mem_cache/radix_cache.py``, least recently used evicted first)."""
    if cached <= 0:
        return 0
    held = int(kv_capacity_tokens(spec) // max(1.0, lengths.prompt_mean + lengths.output_mean))
    return max(0, min(cached, held, b))


def _cached_wave(spec: ServerSpec, lengths: Lengths, b: int, hits: int) -> list[float]:
    """The first tokens (sorted, seconds from the start) of a wave of ``b`` prompts of which the first ``hits`` are
    in the prefix cache. A cached prompt computes its last token only (the scheduler matches at most all but one
    token, for the logits: SGLang's ``managers/schedule_batch.py``, ``max_prefix_len = input_len - 1``; vLLM's
    ``v1/core/kv_cache_manager.py``, ``get_computed_blocks``, its last block at most) and, sent first,
    goes into the first prefill step (first come, first served) with as much of the others' prompts as the step's
    budget leaves: its first token comes out of that step. The others are ``_wave``'s, their steps taking the
    cached prompts' few tokens as none."""
    s = lengths.prompt_mean
    cold = b - hits
    if cold <= 0:  # every prompt cached: one step of their last tokens
        return _wave(spec, b, 1.0)[1]
    _, firsts = _wave(spec, cold, s)
    if hits <= 0:
        return firsts
    steps, t_pre = batch_prefill_s(spec, cold, s)
    return sorted([t_pre / steps] * hits + firsts)


def _share(x: float, q: _Replica, x_max: float) -> float:
    """Utilisation: throughput over the most the replica serves with its cache full (at most 1)."""
    full = max(_full(q), x_max)
    return min(1.0, x / full) if full > 0 else 0.0


def scaled_point(point: ServePoint, throughput: float = 1.0, ttft: float = 1.0, tpot: float = 1.0) -> ServePoint:
    """A point with its figures times speed factors (the serving groups' calibration, ``planner.calibrated.
    serve_factors``): requests and output tokens per second times ``throughput``, the first token's times over
    ``ttft``, the per-token times (TPOT, ITL) over ``tpot``. Factors of 1 give the point itself."""
    if throughput == 1.0 and ttft == 1.0 and tpot == 1.0:
        return point
    # a copy of the frozen record without the per-field init (the sizing scales thousands of points a plan)
    return _replaced(point, **_scaled_fields(point, throughput, ttft, tpot))


def _scaled_fields(point: ServePoint, throughput: float, ttft: float, tpot: float) -> dict[str, float]:
    """The fields ``scaled_point`` changes, at those factors."""
    return dict(requests_per_s=point.requests_per_s * throughput,
                output_tokens_per_s=point.output_tokens_per_s * throughput,
                ttft_p50_s=point.ttft_p50_s / ttft, ttft_p95_s=point.ttft_p95_s / ttft,
                ttft_mean_s=point.ttft_mean_s / ttft, tpot_p50_s=point.tpot_p50_s / tpot,
                tpot_p95_s=point.tpot_p95_s / tpot, itl_s=point.itl_s / tpot)


def clear_caches() -> None:
    """Forget the memoised solutions (a benchmark measures the sizing cold)."""
    _replica.cache_clear()


# ------------------------------------------------------------------------------------------- targets
@dataclass(frozen=True)
class Targets:
    """Latency targets: p95 TTFT and p95 TPOT in seconds (None: no target)."""

    ttft_p95_s: float | None = None
    tpot_p95_s: float | None = None

    def ratio(self, point: ServePoint) -> float:
        """The largest p95 over its target (1 or less meets them; infinite for an unstable point)."""
        if not point.stable:
            return math.inf
        r = 0.0
        if self.ttft_p95_s is not None:
            r = point.ttft_p95_s / self.ttft_p95_s
        if self.tpot_p95_s is not None:
            r = max(r, point.tpot_p95_s / self.tpot_p95_s)
        return r

    def met(self, point: ServePoint) -> bool:
        """Whether a point meets every target (an unstable point meets none)."""
        if not point.stable:
            return False
        if self.ttft_p95_s is not None and not point.ttft_p95_s <= self.ttft_p95_s:
            return False
        return self.tpot_p95_s is None or point.tpot_p95_s <= self.tpot_p95_s


def max_load(spec: ServerSpec, lengths: Lengths, targets: Targets, *, by: str = "users",
             ceiling: float | None = None, shown: Callable[[ServePoint], ServePoint] | None = None
             ) -> tuple[float, ServePoint | None]:
    """The highest load one replica serves within the targets: ``(load, point at it)``; ``(0, None)`` when
    even one user (or a trickle of requests) misses them. Without a target: the sequences that fit (users),
    or just under the most it serves (a rate).

    Latency grows with the load, so the search bisects: over whole users (up to ``ceiling``; by default past
    the sequences that fit too, where the others wait for one, doubling until the target is missed), or over
    requests/s below the most it serves. ``shown``: the figure a point is shown as (its calibration,
    ``scaled_point``), which the targets are checked on and which is returned.
    """
    if by not in ("users", "requests_per_s"):
        raise ValueError("by must be 'users' or 'requests_per_s'")

    q = _replica(spec, lengths)

    def at(users: int | None = None, requests_per_s: float | None = None) -> ServePoint:
        p = _serve(q, users, requests_per_s)
        return p if shown is None else shown(p)

    x_max, c, _ = _most(q)
    if c < 1:
        return 0.0, None
    if targets.ttft_p95_s is None and targets.tpot_p95_s is None:  # no target: what it serves without a queue
        if by == "users":
            return float(c), at(users=c)
        return x_max * 0.999, at(requests_per_s=x_max * 0.999)
    if by == "users":
        lo_point = at(users=1)
        if not targets.met(lo_point):
            return 0.0, None
        lo, best = 1, lo_point
        # Up to the sequences that fit, then beyond them (the others wait for a sequence): double until missed.
        hi = int(ceiling) if ceiling is not None else c
        while True:
            top = at(users=hi)
            if not targets.met(top):
                break
            lo, best = hi, top
            if ceiling is not None or hi >= 1_000_000:
                return float(hi), top
            hi = min(2 * hi, 1_000_000)
        lo_f = _log_ratio(targets, best)
        hi_f = _log_ratio(targets, top)
        return _edge(lambda u: at(users=int(u)), targets, float(lo), float(hi), lo_f, hi_f,
                     best, whole=True)
    lo_rate = x_max * 1e-4
    best = at(requests_per_s=lo_rate)
    if not targets.met(best):
        return 0.0, None
    lo, hi = lo_rate, x_max * 0.999
    if ceiling is not None:
        hi = min(hi, ceiling)
    top = at(requests_per_s=hi)
    if targets.met(top):
        return hi, top
    return _edge(lambda r: at(requests_per_s=r), targets, lo, hi, _log_ratio(targets, best),
                 _log_ratio(targets, top), best, whole=False)


def _log_ratio(targets: Targets, point: ServePoint) -> float:
    r = targets.ratio(point)
    return math.log(r) if 0 < r < math.inf else (50.0 if r == math.inf else -50.0)


def _edge(at, targets: Targets, lo: float, hi: float, flo: float, fhi: float, best: ServePoint, *, whole: bool
          ) -> tuple[float, ServePoint]:
    """The load where the log of the miss ratio crosses zero, between ``lo`` (met) and ``hi`` (missed): regula
    falsi with the Illinois step (Dowell and Jarratt 1971), a handful of sizings where bisection takes a dozen;
    to a whole user, or to 2 % of a rate."""
    side = 0
    for _ in range(40):
        if (hi - lo <= 1.0) if whole else (hi - lo <= 0.02 * hi):
            break
        m = hi - fhi * (hi - lo) / (fhi - flo) if fhi != flo else 0.5 * (lo + hi)
        span = hi - lo
        m = min(max(m, lo + 0.02 * span), hi - 0.02 * span)  # keep inside, away from the ends
        if whole:
            m = float(min(max(math.floor(m), lo + 1.0), hi - 1.0))
        p = at(m)
        fm = _log_ratio(targets, p)
        if fm <= 0:
            lo, flo, best = m, fm, p
            if fm > -0.005 and not whole:  # within half a percent of the target
                break
            if side == -1:
                fhi *= 0.5
            side = -1
        else:
            hi, fhi = m, fm
            if side == 1:
                flo *= 0.5
            side = 1
    return lo, best


def knee_curve(spec: ServerSpec, lengths: Lengths, *, by: str = "users", points: int = 16,
               shown: Callable[[ServePoint], ServePoint] | None = None) -> list[ServePoint]:
    """Throughput against latency over loads from one user (or a trickle) to the most the replica serves:
    the chart of the knee. Users on a geometric grid up to twice the sequences that fit; rates up to 98 %.
    ``shown``: the figure a point is shown as (``max_load``)."""
    if shown is not None:
        return [shown(p) for p in knee_curve(spec, lengths, by=by, points=points)]
    q = _replica(spec, lengths)
    x_max, c, _ = _most(q)
    if c < 1:
        return []
    out = []
    if by == "users":
        top = max(2, 2 * c)
        grid = sorted({max(1, round(top ** (i / (points - 1)))) for i in range(points)})
        for u in grid:
            out.append(_serve(q, int(u), None))
    else:
        for i in range(points):
            out.append(_serve(q, None, x_max * (0.02 + 0.96 * i / (points - 1))))
    return out
