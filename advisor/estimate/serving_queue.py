"""Queues in front of one LLM server: the load (concurrent users or an arrival rate) gives the requests in
service, throughput, time to first token (TTFT) and time per output token (TPOT) at p50 and p95, and the highest
load within latency targets (pure; docs/method.md, "Serving under load").

Analytical, not simulated, so that a whole catalog is sized in milliseconds: a mean-value fixed point (Little's
law) for the batch; the first token from a step queue (the residual of the step in progress, the wait while the
prompts ahead fill the steps' prefill budget, and the prompt's own steps, the last of which gives its first token;
an exponential tail for p50 and p95); admission beyond the sequences that fit as an M/M/c queue (Erlang C) for an arrival rate, and a closed
loop for concurrent users (each sends the next request when the last one ends, as serving benchmarks count
"concurrency"). ``tests/estimate/test_serving_des.py`` checks it against a discrete-event simulation of the same
server.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from advisor.estimate.serving import (
    Z95,
    Lengths,
    ServerSpec,
    _prefill_in_service_s,
    batch_prefill_s,
    concurrency_limit,
    decode_step_s,
    held_tokens,
    kv_capacity_tokens,
    pipelined,
    prefill_s,
    touched,
)

_RHO_MAX = 0.999
_TOL = 2e-4  # relative change at which the fixed point is taken as found


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


class _Inner(NamedTuple):
    """The service a batch of ``batch`` requests gets (no admission queue; a named tuple: made for every load tried,
    a quarter of a frozen record's cost)."""

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


class _Queue:
    """One replica's queue at one set of lengths: what every load's fixed point reads that the load does not change
    (the step model's coefficients, the mean prompt's prefill, the prompt quantiles), worked out once, and the fixed
    points, the most it serves and its full throughput found on it, by load (``_queue``)."""

    def __init__(self, spec: ServerSpec, lengths: Lengths):
        self.spec, self.lengths = spec, lengths
        self.solved: dict[tuple, _Inner] = {}
        self.most: tuple[float, int, str] | None = None
        self.full: float | None = None
        o1 = max(lengths.output_mean - 1.0, 0.0)
        ctx = lengths.mean_context
        n = spec.parallel_devices
        # A decode step is two rooflines in series, each linear in the batch (``serving.decode_step_s``): the matrix
        # products, max(a0, c1 B + pre), then the attention over the caches, max(a1 B, ca B); plus s0 + hs (B - 1).
        bw = spec.bandwidth_bps * spec.eta_mem * n
        a0 = spec.read_bytes / bw
        moe = spec.expert_fraction < 1.0
        a1 = ctx * spec.kv_bytes_per_token * spec.kv_replicas / (spec.bandwidth_bps * (spec.eta_kv or spec.eta_mem) * n)
        c1 = 2.0 * spec.active_params / (spec.decode_flops * n)
        ca = ctx * spec.attn_flops_per_pair / (spec.decode_flops * n)
        kv = a1 if a1 > ca else ca  # the attention of one sequence: its cache read, or its FLOPs
        s0 = spec.step_overhead_s
        hs = spec.per_seq_s  # each running sequence beyond the first (host time, all-reduce traffic, expert dispatch)
        p_mean = prefill_s(spec, lengths.prompt_mean)
        chunked = spec.chunk_tokens > 0
        chunks = 1
        link_chunk = 0.0
        # Prompts one step takes at most: as many as the prefill budget holds (a prompt longer than the budget
        # goes in ``chunks`` steps, one at a time); a runtime without chunks runs one prompt per step on its own.
        per_step = 1.0
        if chunked:  # the prompt's chunks ride on decode steps: its prefill FLOPs add to ceil(s/chunk) steps
            chunks = math.ceil(lengths.prompt_mean / spec.chunk_tokens)
            pre_total = (2.0 * spec.active_params * lengths.prompt_mean / spec.prefill_flops
                         + spec.attn_flops_per_pair * lengths.prompt_mean ** 2 / 2.0
                         / (spec.attention_flops or spec.prefill_flops)) / n * pipelined(spec, lengths.prompt_mean)
            pre_chunk = pre_total / chunks
            # its tokens through the all-reduces and dispatch, in series with the step (``serving.decode_step_s``)
            link_chunk = lengths.prompt_mean * spec.per_token_s / chunks
            per_step = spec.chunk_tokens / (lengths.prompt_mean / chunks)
            if per_step < 1.0:
                per_step = 1.0
        # Spread of a prompt's prefill time over its mean, squared: proportional to the prompt (log-normal spread).
        cv_p2 = lengths.prompt_cv ** 2
        # (the chunks as a float: the loop's products take them with floats, which a float times a float does faster
        # and to the same bits)
        self.constants = (o1, ctx, a0, moe, c1, kv, s0, hs, p_mean, chunked, float(chunks), link_chunk, per_step,
                          pre_chunk if chunked else 0.0, cv_p2, lengths.prompt_q(0.95), lengths.prompt_q(0.5))

    def inner(self, batch: float | None, rate: float | None) -> _Inner:
        """The fixed point at a load (``_inner``), solved once."""
        key = (batch, rate)
        hit = self.solved.get(key)
        if hit is None:
            global _SOLVED
            _SOLVED += 1
            if _SOLVED > _SOLVED_KEPT:  # every queue forgotten at once (this one goes on, no longer kept)
                clear_caches()
            hit = self.solved[key] = _solve(self, batch, rate)
        return hit


_QUEUES_KEPT = 4096  # replicas' queues kept; all forgotten at once beyond it
_SOLVED_KEPT = 16384  # fixed points kept over all queues; all forgotten at once beyond it
_SOLVED = 0
# (id(spec), id(lengths)) -> (spec, lengths, queue): found by the objects themselves (holding them keeps their ids
# theirs), so that the loads tried on one replica never hash its ~30 fields again; equal objects share a queue
_BY_ID: dict[tuple[int, int], tuple] = {}
_BY_VALUE: dict[tuple[ServerSpec, Lengths], _Queue] = {}


def _queue(spec: ServerSpec, lengths: Lengths) -> _Queue:
    """The queue of a replica at these lengths (``_Queue``), made once."""
    held = _BY_ID.get((id(spec), id(lengths)))
    if held is not None and held[0] is spec and held[1] is lengths:
        return held[2]
    if len(_BY_ID) >= _QUEUES_KEPT:
        _BY_ID.clear()
        _BY_VALUE.clear()
    q = _BY_VALUE.get((spec, lengths))
    if q is None:
        q = _BY_VALUE[(spec, lengths)] = _Queue(spec, lengths)
    _BY_ID[(id(spec), id(lengths))] = (spec, lengths, q)
    return q


def _inner(spec: ServerSpec, lengths: Lengths, batch: float | None, rate: float | None) -> _Inner:
    """The mean-value fixed point of a batch: a closed loop of ``batch`` requests, or an open stream at ``rate``.

    Unknowns: throughput X, TPOT, TTFT. Little's law gives X = B / R (closed) or B = rate x R (open), with
    ``R = TTFT + (O - 1) x TPOT``; prefill takes ``rho = X x p`` of the time, so a step of the decode
    reaches a request every ``t(B_dec) / (1 - rho)`` (the mean step ``T``). A new prompt waits for the step in
    progress (its mean residual ``E[T^2] / 2 E[T]``), longer when the steps' prompt budget is taken by the
    prompts ahead (``1 / (1 - u)``), then rides its own step(s) with the prompts that came with it; its first
    token comes out of the step that finishes its prompt (the prompt's last logits), as in vLLM, SGLang and
    TensorRT-LLM's in-flight batching (docs/method.md, "Serving under load": the step queue).
    """
    return _queue(spec, lengths).inner(batch, rate)


def _solve(q: _Queue, batch: float | None, rate: float | None) -> _Inner:
    """``_inner`` solved on a replica's queue (its constants: ``_Queue``)."""
    spec = q.spec
    (o1, ctx, a0, moe, c1, kv, s0, hs, p_mean, chunked, chunks, link_chunk, per_step, pre_chunk, cv_p2, q95,
     q50) = q.constants
    b = batch if batch is not None else 1.0
    share = (batch - 1.0) / batch if batch is not None else 1.0  # the prefills that hold a request up: the others'
    m0 = a0 * touched(spec, b) if moe else a0
    tpot = (m0 if m0 > c1 * b else c1 * b) + kv * b + s0 + hs * (b - 1.0)
    ttft = p_mean
    x = rho = dec = stall = wait = busy = tail = 0.0
    step = tpot
    w, last, calm = 1.0, math.inf, 0
    closed, exp, tol = batch is not None, math.exp, _TOL
    if closed:  # the other users: in service all the time a closed loop runs (the share of time they keep it busy)
        others = batch - 1.0
        busy_closed = 1.0 - exp(-others) if others > 0.0 else 0.0
    # Plain arithmetic (no max/abs calls): this loop runs for every replica of the catalog at every load tried.
    for _it in range(60):
        r = ttft + o1 * tpot
        if closed:
            x = batch / r
        else:
            x, b = rate, rate * r
            others = b
        dec = b * o1 * tpot / r
        if dec < 1.0:
            dec = 1.0
        mem = a0 * touched(spec, dec) if moe else a0
        cmp_ = c1 * dec
        s1 = kv * dec + s0 + hs * (dec - 1.0)
        step = (mem if mem > cmp_ else cmp_) + s1
        # a chunk's compute overlaps the weights' reading: it holds the others up by the difference (a lone user's
        # prompt runs on its own: estimate.serving.single_request, the plan's one request)
        if chunked and dec * share >= 0.5:
            c2 = cmp_ + pre_chunk
            g2 = mem if mem > c2 else c2
            stall = chunks * (g2 - (mem if mem > cmp_ else cmp_) + link_chunk)
            d_o = dec * share  # the others decoding in the prompt's steps (their caches; none for a lone user)
            service = chunks * (g2 + link_chunk + kv * d_o + s0 + hs * (d_o - 1.0 if d_o > 1.0 else 0.0))
            carrying = step  # a step with prompts in it: the decode's step plus their stalls
        else:  # the prompt runs on its own: every decoding request waits for all of it
            service = stall = p_mean
            carrying = 0.0
        rho = x * stall * share
        if rho > _RHO_MAX:
            rho = _RHO_MAX
        new_tpot = step / (1.0 - rho)
        # The steps: T = step + (stall per chunk) x K, K the prompt chunks in it (Poisson, at most per_step).
        unit = stall / chunks
        k_mean = x * chunks * new_tpot * share
        room = 1.0 - k_mean / per_step
        var_t = unit * unit * k_mean * ((room if room > 0.0 else 0.0) + cv_p2)
        busy = busy_closed if closed else (1.0 - exp(-others) if others > 0.0 else 0.0)
        # (the decode's steps run only while others are in service; the prompts' spread is already per unit time)
        residual = 0.5 * (new_tpot * busy + var_t / new_tpot)
        # The prompt budget: a step that takes prompts is ``carrying`` plus the stalls of those it takes; the
        # share of the steps' room the arrivals use sets how long the prompts ahead hold a new one back.
        k_in = k_mean if k_mean > 1.0 else 1.0
        if k_in > per_step:
            k_in = per_step
        u = x * share * chunks * (carrying + unit * k_in) / per_step  # the others' prompts hold a new one back
        if u > _RHO_MAX:
            u = _RHO_MAX
        wait = residual / (1.0 - u)
        # Prompts that arrived during the step in progress share the prefill step with this one (room allowing);
        # the step that finishes the prompt gives its first token.
        along = 2.0 * x * residual
        if along > per_step - 1.0:
            along = per_step - 1.0
        tail = along * unit
        new_ttft = wait + service + tail
        d1, d2 = new_tpot - tpot, new_ttft - ttft
        e1, e2 = tol * tpot, tol * ttft
        if -e1 <= d1 <= e1 and -e2 <= d2 <= e2:
            tpot, ttft = new_tpot, new_ttft
            break
        # Steps halved when the change grows (a loop near saturation oscillates), doubled back after two that
        # shrink; neither time moves by more than a factor of two at once (the queue's wait is steep near u = 1).
        size = (d1 / tpot) ** 2 + (d2 / ttft) ** 2
        if size > last:
            w, calm = (w * 0.5 if w > 0.1 else w), 0
        else:
            calm += 1
            if calm >= 2 and w < 1.0:
                w, calm = (w * 2.0 if w < 0.5 else 1.0), 0
        last = size
        nt, nf = tpot + w * d1, ttft + w * d2
        tpot = nt if 0.5 * tpot <= nt <= 2.0 * tpot else (0.5 * tpot if nt < tpot else 2.0 * tpot)
        ttft = nf if 0.5 * ttft <= nf <= 2.0 * ttft else (0.5 * ttft if nf < ttft else 2.0 * ttft)
    r = ttft + o1 * tpot
    # p50 and p95: the prefill of a prompt of that quantile, the steps, and the wait: none when the server is
    # idle, else exponential with the mean wait of a busy server.
    cond = wait / busy if busy > 0 else 0.0
    # the others decoding while a prompt prefills (none at one user: the prompt alone, estimate.serving.prefill_s)
    prefill95 = _prefill_in_service_s(spec, q95, dec * share, ctx)
    # (prompts of one length: the median prompt is the p95 one)
    prefill50 = prefill95 if q50 == q95 else _prefill_in_service_s(spec, q50, dec * share, ctx)
    ttft95 = prefill95 + tail + _exp_tail_quantile(busy, cond, 0.95)
    ttft50 = prefill50 + tail + _exp_tail_quantile(busy, cond, 0.5)
    n_pref = x * o1 * tpot * share
    tpot95 = tpot + Z95 * math.sqrt(n_pref) * stall / max(1.0, o1)
    return _Inner(requests_per_s=x, decoding=dec, rho_prefill=rho, tpot_s=tpot, tpot_p95_s=tpot95,
                  ttft_p50_s=ttft50, ttft_p95_s=ttft95, residence_s=r, ttft_mean_s=ttft, step_s=step)


def full_throughput(spec: ServerSpec, lengths: Lengths) -> float:
    """Requests/s with as many sequences busy as the cache holds (continuous batching: at most ``max_seqs``;
    slots: as many slots of ``slot_tokens`` as fit, whatever ``-np`` says): what a load's utilisation is
    measured against."""
    return _full_throughput(_queue(spec, lengths))


def _full_throughput(q: _Queue) -> float:
    if q.full is None:
        spec, lengths = q.spec, q.lengths
        tokens = kv_capacity_tokens(spec)
        if spec.batching == "slots":
            slot = spec.slot_tokens or math.ceil(lengths.prompt_q(0.95) + lengths.output_q(0.95))
            c = int(tokens // slot) if slot > 0 else 0
        else:
            c = min(spec.max_seqs, int(tokens // held_tokens(spec, lengths)))
        q.full = q.inner(float(c), None).requests_per_s if c >= 1 else 0.0
    return q.full


def max_throughput(spec: ServerSpec, lengths: Lengths) -> tuple[float, int, str]:
    """Requests/s the replica serves with every sequence it fits busy: ``(requests/s, sequences, limit)``.
    Zero sequences (the cache holds no request) serves nothing."""
    return _max_throughput(_queue(spec, lengths))


def _max_throughput(q: _Queue) -> tuple[float, int, str]:
    if q.most is None:
        c, limit = concurrency_limit(q.spec, q.lengths)
        q.most = (0.0, 0, limit) if c < 1 else (q.inner(float(c), None).requests_per_s, c, limit)
    return q.most


def _point(users, requests_per_s_offered, in_service, waiting, requests_per_s, output_tokens_per_s, ttft_p50_s,
           ttft_p95_s, tpot_p50_s, tpot_p95_s, utilisation, stable, limit, ttft_mean_s, itl_s) -> ServePoint:
    """``ServePoint(...)`` of these fields without the frozen record's per-field init (``serve_at`` makes one for
    every load tried; tests/estimate/test_serving_queue_memo.py)."""
    point = _new(ServePoint)
    point.__dict__.update(users=users, requests_per_s_offered=requests_per_s_offered, in_service=in_service,
                          waiting=waiting, requests_per_s=requests_per_s, output_tokens_per_s=output_tokens_per_s,
                          ttft_p50_s=ttft_p50_s, ttft_p95_s=ttft_p95_s, tpot_p50_s=tpot_p50_s, tpot_p95_s=tpot_p95_s,
                          utilisation=utilisation, stable=stable, limit=limit, ttft_mean_s=ttft_mean_s, itl_s=itl_s)
    return point


_new = object.__new__


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
    q = _queue(spec, lengths)
    x_max, c, limit = _max_throughput(q)
    if c < 1:
        return ServePoint(users, requests_per_s, 0.0, 0.0, 0.0, 0.0, math.inf, math.inf, math.inf, math.inf, 0.0,
                          False, limit)
    o = lengths.output_mean
    if users is not None:
        if users < 1:
            raise ValueError("users must be at least 1")
        b = min(users, c)
        inner = q.inner(float(b), None)
        waiting = float(users - b)
        wait = users / inner.requests_per_s - inner.residence_s if users > b else 0.0
        # The queue moves one place each time a sequence ends; the spread of output lengths spreads the wait.
        wait95 = wait * (1.0 + Z95 * lengths.output_cv / math.sqrt(max(1.0, waiting))) if wait > 0 else 0.0
        return _point(users, None, float(b), waiting, inner.requests_per_s, inner.requests_per_s * o,
                          inner.ttft_p50_s + wait, inner.ttft_p95_s + wait95, inner.tpot_s, inner.tpot_p95_s,
                          _share(inner.requests_per_s, q, x_max), True, limit if users >= c else "",
                          inner.ttft_mean_s + wait, inner.step_s)
    rate = float(requests_per_s)
    if not rate > 0 or not math.isfinite(rate):
        raise ValueError("requests_per_s must be a positive finite number")
    if rate >= x_max:
        return ServePoint(None, rate, float(c), math.inf, x_max, x_max * o, math.inf, math.inf, math.inf,
                          math.inf, 1.0, False, limit)
    inner = q.inner(None, rate)
    if inner.residence_s * rate > c:  # the batch is capped at c: the service of a full batch, and a queue
        inner = q.inner(float(c), None)
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
                      inner.ttft_mean_s + wait_mean, inner.step_s)


def serve_together(spec: ServerSpec, lengths: Lengths, users: int) -> ServePoint:
    """``users`` requests of one length started together, each user sending the next when the last ends: a closed
    loop of equal requests stays in step (all finish at once), as synthetic benchmarks run it (``vllm bench serve``
    and AIPerf at a fixed concurrency and lengths, LMDeploy's ``profile_generation``, a static batch, or every request
    queued at once). ``serve_at`` is the same loop once the users have drifted apart (real traffic).

    A round of ``B = min(users, sequences that fit)`` requests: their prompts in steps of the prefill budget
    (``batch_prefill_s``; a prompt's first token comes out of the step that finishes it), then ``O - 1`` decode steps
    of the whole batch at the mean context (``decode_step_s``). Throughput ``B O / T``; request ``i``'s first token at
    the end of the step holding its last prompt token, its time per output token ``(T - f_i) / (O - 1)``; users
    beyond ``B`` wait ``(users - B) / B`` rounds (docs/method.md, "Serving under load").
    """
    if users < 1:
        raise ValueError("users must be at least 1")
    c, limit = concurrency_limit(spec, lengths)
    if c < 1:
        return ServePoint(users, None, 0.0, 0.0, 0.0, 0.0, math.inf, math.inf, math.inf, math.inf, 0.0, False, limit)
    b = min(users, c)
    s, o = lengths.prompt_mean, lengths.output_mean
    steps, t_pre = batch_prefill_s(spec, b, s)
    step = decode_step_s(spec, float(b), lengths.mean_context)
    t_round = t_pre + max(o - 1.0, 0.0) * step
    per_step = b * s / steps  # prompt tokens a prefill step takes
    firsts = sorted(t_pre * math.ceil((i + 1) * s / per_step - 1e-9) / steps for i in range(b))
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


def _share(x: float, q: _Queue, x_max: float) -> float:
    """Utilisation: throughput over the most the replica serves with its cache full (at most 1)."""
    full = max(_full_throughput(q), x_max)
    return min(1.0, x / full) if full > 0 else 0.0


def scaled_point(point: ServePoint, throughput: float = 1.0, ttft: float = 1.0, tpot: float = 1.0) -> ServePoint:
    """A point with its figures times speed factors (the serving groups' calibration, ``planner.calibrated.
    serve_factors``): requests and output tokens per second times ``throughput``, the first token's times over
    ``ttft``, the per-token times (TPOT, ITL) over ``tpot``. Factors of 1 give the point itself."""
    if throughput == 1.0 and ttft == 1.0 and tpot == 1.0:
        return point
    # a copy of the frozen record without the per-field init (the sizing scales thousands of points a plan)
    out = object.__new__(ServePoint)
    out.__dict__.update(point.__dict__)
    out.__dict__.update(requests_per_s=point.requests_per_s * throughput,
                        output_tokens_per_s=point.output_tokens_per_s * throughput,
                        ttft_p50_s=point.ttft_p50_s / ttft, ttft_p95_s=point.ttft_p95_s / ttft,
                        ttft_mean_s=point.ttft_mean_s / ttft, tpot_p50_s=point.tpot_p50_s / tpot,
                        tpot_p95_s=point.tpot_p95_s / tpot, itl_s=point.itl_s / tpot)
    return out


def clear_caches() -> None:
    """Forget the memoised fixed points (a benchmark measures the sizing cold)."""
    global _SOLVED
    _BY_ID.clear()
    _BY_VALUE.clear()
    _SOLVED = 0


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

    def at(**load) -> ServePoint:
        p = serve_at(spec, lengths, **load)
        return p if shown is None else shown(p)

    x_max, c, _ = max_throughput(spec, lengths)
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
    x_max, c, _ = max_throughput(spec, lengths)
    if c < 1:
        return []
    out = []
    if by == "users":
        top = max(2, 2 * c)
        grid = sorted({max(1, round(top ** (i / (points - 1)))) for i in range(points)})
        for u in grid:
            out.append(serve_at(spec, lengths, users=int(u)))
    else:
        for i in range(points):
            out.append(serve_at(spec, lengths, requests_per_s=x_max * (0.02 + 0.96 * i / (points - 1))))
    return out
