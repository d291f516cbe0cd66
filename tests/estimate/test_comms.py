"""Communication terms against hand-worked cases."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from advisor.estimate.comms import (
    Links,
    all_to_all_s,
    bubble_fraction,
    ring_allreduce_s,
    training_step_split,
)

NODE8 = Links(intra_node_bps=300e9, inter_node_bps=25e9, devices_per_node=8)


def test_ring_allreduce_by_hand():
    # 1 GB over 8 devices at 100 GB/s: 2 * 7/8 * 1e9 / 1e11 = 0.0175 s
    assert ring_allreduce_s(1e9, 8, 100e9) == pytest.approx(0.0175)
    assert ring_allreduce_s(1e9, 1, 100e9) == 0.0
    # two devices: each sends and receives half twice, 1 * bytes / bw
    assert ring_allreduce_s(1e9, 2, 1e9) == pytest.approx(1.0)


def test_all_to_all_by_hand():
    assert all_to_all_s(8e6, 8, 1e9) == pytest.approx(7e-3)


def test_bubble_fraction_by_hand():
    assert bubble_fraction(4, 12) == pytest.approx(3 / 15)
    assert bubble_fraction(1, 1) == 0.0
    with pytest.raises(ValueError):
        bubble_fraction(0, 4)


def test_data_parallel_across_nodes_by_hand():
    # 7e9 bf16 gradients = 14e9 B, dp=16 over two nodes at 25 GB/s: 2*15/16*14e9/25e9 = 1.05 s;
    # 80 % of it (0.84 s) hides behind a backward of 2/3 * 10 s
    split = training_step_split(10.0, params=7e9, layers=32, hidden=4096, seq_len=4096, micro_batch=1,
                                microbatches=4, links=NODE8, dp=16)
    assert split.data_parallel_total_s == pytest.approx(1.05)
    assert split.data_parallel_s == pytest.approx(0.21)
    assert split.step_s == pytest.approx(10.21)


def test_data_parallel_inside_a_node_uses_nvlink():
    split = training_step_split(10.0, params=7e9, layers=32, hidden=4096, seq_len=4096, micro_batch=1,
                                microbatches=4, links=NODE8, dp=8, overlap=0.0)
    assert split.data_parallel_s == pytest.approx(2 * 7 / 8 * 14e9 / 300e9)


def test_sharded_data_parallel_moves_one_and_a_half_times():
    kw = dict(params=7e9, layers=32, hidden=4096, seq_len=4096, micro_batch=1, microbatches=4, links=NODE8, dp=16,
              overlap=0.0)
    assert (training_step_split(10.0, sharded=True, **kw).data_parallel_s
            == pytest.approx(1.5 * training_step_split(10.0, **kw).data_parallel_s))


def test_overlap_cannot_hide_more_than_the_backward():
    # 1.05 s of traffic, compute 0.3 s: at most 2/3 * 0.3 = 0.2 s is hidden
    split = training_step_split(0.3, params=7e9, layers=32, hidden=4096, seq_len=4096, micro_batch=1,
                                microbatches=1, links=NODE8, dp=16, overlap=1.0)
    assert split.data_parallel_s == pytest.approx(1.05 - 0.2)


def test_tensor_parallel_by_hand():
    # activations 1*2048*8192*2 B = 33.55 MB; ring over 8 at 300 GB/s = 1.957e-4 s; 4 per layer, 80 layers
    split = training_step_split(1.0, params=70e9, layers=80, hidden=8192, seq_len=2048, micro_batch=1,
                                microbatches=1, links=NODE8, tp=8)
    assert split.tensor_parallel_s == pytest.approx(4 * 80 * 2 * 7 / 8 * 2048 * 8192 * 2 / 300e9)
    assert split.tensor_parallel_s == pytest.approx(0.06263, rel=1e-3)


def test_pipeline_bubble_share_in_the_split():
    split = training_step_split(12.0, params=70e9, layers=80, hidden=8192, seq_len=2048, micro_batch=1,
                                microbatches=12, links=NODE8, pp=4)
    assert split.bubble_s == pytest.approx(3.0)
    assert split.shares["bubble"] == pytest.approx(bubble_fraction(4, 12))


def test_moe_all_to_all_by_hand():
    # 1*4096 tokens * 2 experts * 4096 * 2 B = 67.1 MB, 7/8 leaves at 300 GB/s, 4 times per layer, 32 layers
    split = training_step_split(1.0, params=47e9, layers=32, hidden=4096, seq_len=4096, micro_batch=1,
                                microbatches=1, links=NODE8, moe_layers=32, top_k=2, ep=8)
    assert split.moe_s == pytest.approx(4 * 32 * 7 / 8 * 4096 * 2 * 4096 * 2 / 300e9)


def test_groups_that_cannot_be_placed_are_refused():
    with pytest.raises(ValueError, match="does not fit in one node"):
        training_step_split(1.0, params=7e9, layers=32, hidden=4096, seq_len=2048, micro_batch=1, microbatches=1,
                            links=NODE8, tp=16)
    lonely = Links(intra_node_bps=31e9, inter_node_bps=None, devices_per_node=1)
    with pytest.raises(ValueError, match="no inter-node fabric"):
        training_step_split(1.0, params=7e9, layers=32, hidden=4096, seq_len=2048, micro_batch=1, microbatches=1,
                            links=lonely, dp=4)


@given(st.integers(1, 8), st.integers(1, 16), st.integers(1, 64), st.floats(0.0, 1.0), st.floats(1e-3, 100.0))
def test_shares_sum_to_one_and_step_is_at_least_compute(tp, pp, m, overlap, compute):
    split = training_step_split(compute, params=7e9, layers=96, hidden=4096, seq_len=2048, micro_batch=1,
                                microbatches=m, links=NODE8, tp=tp, pp=pp, dp=4, overlap=overlap)
    assert sum(split.shares.values()) == pytest.approx(1.0)
    assert split.step_s >= compute
    assert 0.0 < split.efficiency <= 1.0


def test_link_slowdown_is_one_on_the_reference_links_and_above_one_on_pcie():
    from advisor.estimate.comms import REFERENCE_INTER_NODE_BPS, link_slowdown

    layout = dict(params=7e9, layers=32, hidden=4096, seq_len=4096, micro_batch=1, microbatches=4, dp=8, overlap=0.0)
    ref = Links(intra_node_bps=300e9, inter_node_bps=REFERENCE_INTER_NODE_BPS, devices_per_node=8)
    assert link_slowdown(10.0, links=ref, **layout) == pytest.approx(1.0)
    pcie = Links(intra_node_bps=31e9, inter_node_bps=None, devices_per_node=8)
    # 8 GPUs over PCIe 4.0: 2*7/8*14e9/31e9 = 0.790 s against 0.0817 s on NVLink
    want = (10.0 + 2 * 7 / 8 * 14e9 / 31e9) / (10.0 + 2 * 7 / 8 * 14e9 / 300e9)
    assert link_slowdown(10.0, links=pcie, **layout) == pytest.approx(want)
