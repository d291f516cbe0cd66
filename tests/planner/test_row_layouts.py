"""Served rows whose run had its ranks run their own batches (attention data parallel ``DEP<n>``, pipeline stages
``PP<n>``) are planned as replicas of the fewest cards that hold the model (``planner.measured.row_replicas``;
docs/method.md, "Serving under load")."""

from __future__ import annotations

import pytest

from advisor.catalog.load import bundled_catalog

CAT = bundled_catalog()
def _published(row_id: str):
    from advisor.catalog.measurements import bundled_measurements

    return next(m for m in bundled_measurements() if m.row_id == row_id)


RTX = "trtllm-perf-rtxpro6000se-"


@pytest.mark.parametrize("row_id, layout, replicas", [
    (RTX + "llama-3.3-70b-1gpu-tp1-pp1-1000in-1000out", {"TP": 1, "PP": 1}, 1),
    # 42.7 GB of NVFP4 weights fit one 96 GB card: two pipeline stages are two one-card replicas
    (RTX + "llama-3.3-70b-2gpu-tp1-pp2-1000in-1000out", {"TP": 1, "PP": 2}, 2),
    # Qwen3-235B-A22B's 133 GB need two cards: DEP2 x PP2 on four is two pairs, DEP8 on eight four pairs
    (RTX + "qwen3-235b-a22b-4gpu-dep2-pp2-1000in-1000out", {"DEP": 2, "PP": 2}, 2),
    (RTX + "qwen3-235b-a22b-8gpu-dep8-pp1-1000in-1000out", {"DEP": 8, "PP": 1}, 4),
    (RTX + "qwen3-30b-a3b-8gpu-dep8-pp1-1000in-1000out", {"DEP": 8, "PP": 1}, 8),
    ("mlperf-inference-v4.1-hpe-h100x8-llama2-70b-server", {"TP": 2}, 1),  # tensor parallel: one replica, as before
])
def test_a_row_whose_ranks_ran_their_own_batches_is_planned_as_replicas_of_the_fewest_cards(row_id, layout, replicas):
    from advisor.planner.measured import row_layout, row_setup

    m = _published(row_id)
    assert row_layout(m) == layout
    acc = CAT.accelerators[m.accelerator_id]
    job, _model, _lengths, _choice, _speed, n = row_setup(m, CAT, acc)
    assert n == replicas
    if replicas > 1:  # each replica at its share of the requests queued at once
        assert job.users == m.batch // replicas


def test_a_pipeline_row_is_its_replicas_summed_by_hand():
    """Llama 3.3 70B on two cards in two pipeline stages, 3,000 requests of 1,000/1,000 tokens queued at once: two
    one-card replicas of 1,500 requests each, twice one replica's output tokens/s, the same first token."""
    import dataclasses

    from advisor.planner.measured import serve_point_predictor

    m = _published(RTX + "llama-3.3-70b-2gpu-tp1-pp2-1000in-1000out")
    acc = CAT.accelerators[m.accelerator_id]
    one = dataclasses.replace(m, devices=1, batch=m.batch // 2, parallelism="TP1,PP1")
    both, half = serve_point_predictor(m, CAT, acc)[0](0.0), serve_point_predictor(one, CAT, acc)[0](0.0)
    assert both.output_tokens_per_s == pytest.approx(2 * half.output_tokens_per_s)
    assert both.users == 2 * half.users == 3000
    assert both.ttft_mean_s == pytest.approx(half.ttft_mean_s) and both.tpot_p50_s == pytest.approx(half.tpot_p50_s)


def test_a_dep_rows_token_pays_its_expert_dispatch_over_the_link_by_hand():
    """Qwen3-30B-A3B (48 expert layers, 8 experts a token, hidden 2,048) run DEP8 on RTX PRO 6000s (PCIe 5.0 x16,
    63 GB/s): a token's dispatch and combine, 2 x 48 x 8 x 2,048 x 2 bytes = 3,145,728, of which 7/8 leave the rank:
    2,752,512 / 63e9 = 43.69 us; DEP2: half leaves, 24.97 us; a dense model's pipeline stages: none."""
    from advisor.planner.measured import dispatch_s, row_setup, row_spec
    from advisor.planner.request import resolve_job_model

    m = _published(RTX + "qwen3-30b-a3b-8gpu-dep8-pp1-1000in-1000out")
    acc = CAT.accelerators[m.accelerator_id]
    setup = row_setup(m, CAT, acc)
    arch = setup[1].arch
    assert (arch.layers - arch.dense_layers, arch.experts_per_token, arch.hidden) == (48, 8, 2048)
    assert dispatch_s(m, arch, acc) == pytest.approx(43.69e-6, rel=1e-3)
    two = _published(RTX + "qwen3-30b-a3b-2gpu-dep2-pp1-1000in-1000out")
    assert dispatch_s(two, arch, acc) == pytest.approx(24.97e-6, rel=1e-3)
    dense = _published(RTX + "llama-3.3-70b-2gpu-tp1-pp2-1000in-1000out")
    assert dispatch_s(dense, resolve_job_model(row_setup(dense, CAT, acc)[0], CAT).arch, acc) == 0.0
    # the replica's step carries it for every token, beside what a one-card replica pays already (nothing on a link)
    spec = row_spec(m, setup, acc)
    assert spec.per_token_s == pytest.approx(43.69e-6, rel=1e-3)
