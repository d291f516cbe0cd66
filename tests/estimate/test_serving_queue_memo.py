"""What the queue keeps of a replica (``serving_queue._Queue``: the step model's constants and the fixed points by
load, found by the replica and lengths objects) never changes an answer: a point sized after others equals the
point sized cold, a replica or lengths changed in any field is sized as itself, and equal replicas share what was
found."""

from __future__ import annotations

import dataclasses

import pytest

from advisor.estimate.serving import Lengths, ServerSpec
from advisor.estimate.serving_queue import (
    Targets,
    _queue,
    clear_caches,
    full_throughput,
    knee_curve,
    max_load,
    max_throughput,
    serve_at,
)

GIB = 2**30
BASE = dict(weight_bytes=16e9, devices=2, parallel_devices=2, capacity_bytes=16 * GIB, bandwidth_bps=2e12,
            eta_mem=0.8, decode_flops=4e14, prefill_flops=4e14, active_params=8e9, attn_flops_per_pair=524_288,
            kv_bytes_per_token=131_072, memory_fraction=0.9, overhead_bytes=GIB, max_seqs=256, chunk_tokens=2048,
            step_overhead_s=1e-3, per_seq_s=2e-5, per_token_s=1e-5, expert_fraction=0.3, routed_share=0.8,
            routed_pick=0.25, kv_shards=2, pipeline_devices=2)
LENGTHS = Lengths(1000.0, 300.0, 0.8, 0.5)
# another valid value of each field (each reaches the figures of some load: the cache binds the batch here; a slot's
# size counts where the runtime batches in slots, ``WITH``)
CHANGED = dict(weight_bytes=20e9, devices=4, parallel_devices=1, capacity_bytes=40 * GIB, bandwidth_bps=1e12,
               eta_mem=0.6, decode_flops=2e14, prefill_flops=3e14, active_params=6e9, attn_flops_per_pair=262_144,
               kv_bytes_per_token=65_536, batching="slots", memory_fraction=0.8, overhead_bytes=2 * GIB, max_seqs=16,
               chunk_tokens=0, step_overhead_s=2e-3, slot_tokens=4096, attention_flops=1e14, eta_kv=0.5,
               kv_free_fraction=0.9, expert_fraction=0.5, pipeline_devices=1, pipeline_chunk=256, per_seq_s=4e-5,
               per_token_s=2e-5, reserve_whole=True, routed_share=0.5, routed_pick=0.3, kv_shards=1,
               unread_bytes=1e9)
WITH = {"slot_tokens": {"batching": "slots"}}


def _figures(spec: ServerSpec, lengths: Lengths) -> tuple:
    targets = Targets(ttft_p95_s=2.0, tpot_p95_s=0.1)
    return (max_throughput(spec, lengths), full_throughput(spec, lengths),
            serve_at(spec, lengths, users=7), serve_at(spec, lengths, users=900),
            serve_at(spec, lengths, requests_per_s=0.5), max_load(spec, lengths, targets),
            max_load(spec, lengths, targets, by="requests_per_s"), tuple(knee_curve(spec, lengths, points=6)))


def _cold(spec: ServerSpec, lengths: Lengths) -> tuple:
    clear_caches()
    return _figures(spec, lengths)


def test_every_field_is_covered_by_a_changed_value():
    assert set(CHANGED) == {f.name for f in dataclasses.fields(ServerSpec)}


@pytest.mark.parametrize("name", sorted(CHANGED))
def test_a_replica_changed_in_one_field_after_the_original_is_sized_as_itself(name):
    base = ServerSpec(**{**BASE, **WITH.get(name, {})})
    changed = dataclasses.replace(base, **{name: CHANGED[name]})
    expected = _cold(changed, LENGTHS)
    clear_caches()
    assert _figures(base, LENGTHS) != expected  # the field reaches the figures
    assert _figures(changed, LENGTHS) == expected


@pytest.mark.parametrize("lengths", [Lengths(1000.0, 300.0, 0.0, 0.5), Lengths(1000.0, 300.0, 0.8, 0.0),
                                     Lengths(500.0, 300.0, 0.8, 0.5), Lengths(1000.0, 100.0, 0.8, 0.5)])
def test_other_lengths_after_these_are_sized_as_themselves(lengths):
    spec = ServerSpec(**BASE)
    expected = _cold(spec, lengths)
    clear_caches()
    _figures(spec, LENGTHS)
    assert _figures(spec, lengths) == expected


def test_loads_asked_in_any_order_give_the_same_points():
    spec = ServerSpec(**BASE)
    loads = [dict(users=u) for u in (1, 3, 50, 400, 2)] + [dict(requests_per_s=r) for r in (0.1, 2.0, 0.7)]
    clear_caches()
    forward = [serve_at(spec, LENGTHS, **load) for load in loads]
    clear_caches()
    backward = [serve_at(spec, LENGTHS, **load) for load in reversed(loads)]
    assert forward == backward[::-1]


def test_equal_replicas_share_one_queue_and_others_have_their_own():
    clear_caches()
    spec, twin = ServerSpec(**BASE), ServerSpec(**BASE)
    assert spec is not twin and _queue(spec, LENGTHS) is _queue(twin, LENGTHS)
    assert _queue(spec, Lengths(1000.0, 300.0, 0.8, 0.5)) is _queue(spec, LENGTHS)
    assert _queue(dataclasses.replace(spec, eta_mem=0.7), LENGTHS) is not _queue(spec, LENGTHS)


def test_a_point_made_without_its_init_is_the_record_its_init_makes():
    """``serve_at``'s points are set without the frozen record's init (``_point``): its fields in their order, each
    point equal to ``ServePoint(...)`` of its values, every field set."""
    import inspect

    from advisor.estimate.serving_queue import ServePoint, _point

    names = [f.name for f in dataclasses.fields(ServePoint)]
    assert list(inspect.signature(_point).parameters) == names
    spec = ServerSpec(**BASE)
    for load in (dict(users=1), dict(users=40), dict(users=5000), dict(requests_per_s=0.3)):
        p = serve_at(spec, LENGTHS, **load)
        made = ServePoint(*(getattr(p, n) for n in names))
        assert vars(made) == vars(p) and made == p


def test_what_is_kept_is_bounded_and_forgetting_changes_no_answer(monkeypatch):
    """Past ``_SOLVED_KEPT`` fixed points every queue is forgotten at once; the points go on being the cold ones."""
    import advisor.estimate.serving_queue as sq

    spec = ServerSpec(**BASE)
    expected = _cold(spec, LENGTHS)
    monkeypatch.setattr(sq, "_SOLVED_KEPT", 5)
    clear_caches()
    assert _figures(spec, LENGTHS) == expected
    assert sq._SOLVED <= 5 and len(sq._BY_VALUE) <= 1
