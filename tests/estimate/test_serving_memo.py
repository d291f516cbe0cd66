"""The serving queue's memos and the step model's precomputed rates: a replica's constants and its solved loads
(``serving_queue._replica``) are keyed by everything they depend on (change one input and the answer is a fresh
solve's, never the one remembered for the other), and a prompt's prefill in service (``serving.prefill_in_service``)
is the step worked by hand."""

from __future__ import annotations

from dataclasses import replace

import pytest

from advisor.estimate import serving_queue as Q
from advisor.estimate.serving import Lengths, decode_step_s, prefill_in_service, prefill_s
from advisor.estimate.serving_queue import (
    Targets,
    clear_caches,
    full_throughput,
    knee_curve,
    max_load,
    max_throughput,
    serve_at,
)

from .test_serving_load import GIB, spec

LENGTHS = Lengths(1000, 300, 0.5, 0.8)
# every input of the spec the answer at 64 users or at a rate depends on for this spec (vLLM-like, chunked, one GPU)
SPEC_CHANGES = [("weight_bytes", 20e9), ("capacity_bytes", 20 * GIB), ("bandwidth_bps", 3e12), ("eta_mem", 0.7),
                ("decode_flops", 2e14), ("prefill_flops", 2e14), ("active_params", 9e9),
                ("attn_flops_per_pair", 1_048_576), ("kv_bytes_per_token", 262_144), ("memory_fraction", 0.5),
                ("overhead_bytes", 40 * GIB), ("max_seqs", 8), ("chunk_tokens", 512), ("step_overhead_s", 2e-3),
                ("attention_flops", 1e14), ("eta_kv", 0.5), ("expert_fraction", 0.5), ("per_seq_s", 40e-6),
                ("unread_bytes", 4e9), ("routed_share", 0.5), ("reserve_whole", True)]
LENGTH_CHANGES = [("prompt_mean", 2000.0), ("output_mean", 150.0), ("prompt_cv", 1.0), ("output_cv", 0.2)]


def _answers(s, lengths):
    """What the memos hold for a replica: points at 64 users and at a rate, its most and its full throughput."""
    rate = 0.5 * max_throughput(s, lengths)[0]
    return (serve_at(s, lengths, users=64), serve_at(s, lengths, requests_per_s=rate), max_throughput(s, lengths),
            full_throughput(s, lengths))


# what the base needs for the change to count: experts routed to, or a pool that bounds the batch
NEEDS = {"routed_share": dict(expert_fraction=0.5, routed_pick=0.25), "reserve_whole": dict(capacity_bytes=20 * GIB)}


@pytest.mark.parametrize("field,value", SPEC_CHANGES + [("lengths." + f, v) for f, v in LENGTH_CHANGES])
def test_a_changed_input_is_solved_afresh_not_remembered(field, value):
    base = spec(per_seq_s=20e-6, per_token_s=10e-6, **NEEDS.get(field, {}))
    if field.startswith("lengths."):
        s2, l2 = base, replace(LENGTHS, **{field.split(".")[1]: value})
    else:
        s2, l2 = replace(base, **{field: value}), LENGTHS
    clear_caches()
    fresh = _answers(s2, l2)
    clear_caches()
    remembered = _answers(base, LENGTHS)  # the memos now hold the unchanged replica's solutions
    warm = _answers(s2, l2)
    assert warm == fresh  # the changed replica's own solutions, not the ones kept for the other
    assert warm != remembered  # (and the change does move the answer: the test can fail)


def test_each_load_is_its_own_solution():
    s = spec(per_seq_s=20e-6)
    clear_caches()
    x = max_throughput(s, LENGTHS)[0]
    loads = [dict(users=u) for u in (1, 2, 63, 64, 65)] + [dict(requests_per_s=f * x) for f in (0.3, 0.3001, 0.9)]
    fresh = []
    for load in loads:
        clear_caches()
        fresh.append(serve_at(s, LENGTHS, **load))
    clear_caches()
    warm = [serve_at(s, LENGTHS, **load) for load in loads]
    assert warm == fresh and len(set(warm)) == len(loads)


def test_the_kept_solutions_are_bounded_and_stay_right():
    s = spec(per_seq_s=20e-6)
    clear_caches()
    first = serve_at(s, LENGTHS, users=3)
    for u in range(4, 4 + 2 * Q._SOLVED):  # more loads than a replica keeps
        serve_at(s, LENGTHS, users=u)
    q = Q._replica(s, LENGTHS)
    assert len(q.solved) <= Q._SOLVED
    assert serve_at(s, LENGTHS, users=3) == first
    # the sizing and the knee chart on warm memos are those on cold ones
    targets = Targets(ttft_p95_s=1.0, tpot_p95_s=0.05)
    warm = (max_load(s, LENGTHS, targets), max_load(s, LENGTHS, targets, by="requests_per_s"), knee_curve(s, LENGTHS))
    clear_caches()
    cold = (max_load(s, LENGTHS, targets), max_load(s, LENGTHS, targets, by="requests_per_s"), knee_curve(s, LENGTHS))
    assert warm == cold


def test_a_prompt_in_service_is_its_chunks_in_mixed_steps_worked_by_hand():
    s = spec()  # 16e9 bytes at 1.6e12 B/s: 10 ms a read; 4e14 FLOP/s; chunks of 2,048 tokens; 1 ms a step
    in_service = prefill_in_service(s, 1000.0)
    # 1,000 prompt tokens, one chunk: products 2 * 8e9 * 1000 / 4e14 = 40 ms, its causal attention
    # 524288 * 1000 * 1001 / 2 / 4e14 = 0.65601536 ms (as the prompt alone: compute.prefill_flops), in series with the
    # step of four sequences decoding at 1,000 tokens: their products (2 * 8e9 * 4 / 4e14 = 0.16 ms) under the 10 ms
    # read (serving.products_s) and their caches 4 * 1000 * 131072 / 1.6e12 = 0.32768 ms
    assert in_service(4.0, 1000.0) == pytest.approx(40e-3 + 0.65601536e-3 + 10e-3 + 0.32768e-3 + 1e-3, rel=1e-12)
    # the same as the step's one formula
    assert in_service(4.0, 1000.0) == decode_step_s(s, 4.0, 1000.0, 1000.0, 524_288 * 1000.0 * 1001.0 / 2.0)
    # nothing decoding: the prompt alone, its causal attention 524288 * 1000 * 1001 / 2 / 4e14 = 0.65601536 ms, in
    # series with its own read of the weights, 10 ms (compute.prompt_pass_s)
    assert in_service(0.0, 1000.0) == prefill_s(s, 1000.0) == pytest.approx(51.65601536e-3, rel=1e-12)
    # a runtime that does not chunk runs the prompt on its own whatever decodes
    assert prefill_in_service(spec(chunk_tokens=0), 1000.0)(4.0, 1000.0) == prefill_s(spec(chunk_tokens=0), 1000.0)
    # 5,000 tokens in chunks of 2,048: three chunks of 1,666.7 tokens, each over half the prompt and itself
    chunk = 5000.0 / 3
    assert prefill_in_service(s, 5000.0)(4.0, 1000.0) == pytest.approx(
        3 * (10e-3 + 2 * 8e9 * chunk / 4e14 + 524_288 * chunk * 5001.0 / 2 / 4e14 + 0.32768e-3 + 1e-3), rel=1e-12)


def test_a_point_made_fast_is_the_record_itself():
    values = (7, None, 4.0, 3.0, 1.5, 450.0, 0.25, 0.75, 0.02, 0.03, 0.5, True, "kv", 0.3, 0.019)
    fast, made = Q._point(*values), Q.ServePoint(*values)
    assert fast == made and repr(fast) == repr(made) and vars(fast) == vars(made) and hash(fast) == hash(made)
    assert fast.per_user_tokens_per_s == pytest.approx(50.0)
    with pytest.raises(AttributeError):  # frozen as the record is
        fast.users = 8


def test_an_open_streams_ladder_is_the_same_whatever_rate_fills_it():
    # the throughputs of batches 2, 4, 8, ... kept on a replica are filled by the first rates solved; any order of
    # rates gives each rate the answer it has alone
    s = spec(per_seq_s=20e-6, max_seqs=1024, capacity_bytes=400 * GIB)
    x = max_throughput(s, LENGTHS)[0]
    rates = [f * x for f in (0.9, 0.05, 0.5, 0.99, 0.2)]
    alone = []
    for r in rates:
        clear_caches()
        alone.append(serve_at(s, LENGTHS, requests_per_s=r))
    for order in (rates, rates[::-1]):
        clear_caches()
        together = {r: serve_at(s, LENGTHS, requests_per_s=r) for r in order}
        assert [together[r] for r in rates] == alone
    assert len(Q._replica(s, LENGTHS).ladder) >= 3  # (batches up to 8 at least: the test reads kept entries)
