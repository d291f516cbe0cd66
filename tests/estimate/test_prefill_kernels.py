"""A prefill pass's kernels and its attention width, counted by hand from what SGLang runs for each model (the
comment above ``estimate.model.PREFILL_KERNELS`` cites the model files), and the first token of one user that the
fitted host time a kernel gives on the SGLang cookbook's B200 pages."""

from __future__ import annotations

import pytest

from advisor.catalog.load import bundled_catalog
from advisor.catalog.measurements import bundled_measurements
from advisor.catalog.runtimes import bundled_step_fit
from advisor.estimate.model import ModelArch, attention_width, prefill_kernel_count
from advisor.planner.measured import figure_at_steps


@pytest.fixture(scope="module")
def models():
    return bundled_catalog().models


def test_deepseek_v3_launches_2044_kernels_a_pass_with_its_fp8_inputs_quantised(models):
    """61 layers, 3 dense and 58 MoE: each layer's two blocks a norm and an all-reduce (4); multi-head latent
    attention at prefill 11 kernels, 4 of them linear layers; a dense feed-forward 3 (2 linear); a routed MoE 7
    (2 expert GEMMs) and its shared expert 4 (2 linear). Block fp8: one quantisation kernel before each product.
    58 x (4 + 11 + 7 + 4) + 3 x (4 + 11 + 3) = 1,508 + 54 = 1,562; quantised 58 x (4 + 15 + 9 + 6) + 3 x (4 + 15 + 5)
    = 1,972 + 72 = 2,044."""
    assert prefill_kernel_count(models["deepseek-v3"]) == 1562
    assert prefill_kernel_count(models["deepseek-v3"], quantised_inputs=True) == 2044


def test_qwen3_and_gpt_oss_and_llama_count_their_blocks(models):
    """Qwen3-235B-A22B: 94 layers of 4 + 5 (attention) + 7 (MoE, no shared expert) = 1,504. gpt-oss-120b: 36 of
    4 + 5 + 7 = 576 (sliding or full, the same kernels). Llama-3.1-70B: 80 of 4 + 5 + 3 = 960. Llama 4 Maverick:
    48 layers of 4 + 5, MoE with a shared expert in every other one (24 x 11) and a dense feed-forward in the rest
    (24 x 3): 432 + 264 + 72 = 768."""
    assert prefill_kernel_count(models["qwen3-235b-a22b-2507"]) == 94 * 16 == 1504
    assert prefill_kernel_count(models["gpt-oss-120b"]) == 36 * 16 == 576
    assert prefill_kernel_count(models["llama-3.1-70b"]) == 80 * 12 == 960
    assert prefill_kernel_count(models["llama-4-maverick"]) == 48 * 9 + 24 * 11 + 24 * 3 == 768


def test_qwen3_next_counts_its_gated_deltanet_and_gated_attention(models):
    """Qwen3-Next-80B-A3B (LLLF), counted from SGLang's models/qwen3_next.py and qwen2_moe.py at prefill: 36 gated
    DeltaNet mixers of 21 kernels (the two input projections; the reordering's four strided reshapes copied out,
    q and k flattened, the three concatenated: 7; the convolution, gating, two L2 norms, six chunked delta-rule
    kernels, the gated norm and the output projection), 12 gated attentions of 5 + 7 (q and gate cut from one
    projection and copied out, the q and k head norms with k's copy, the sigmoid and product), 48 MoE feed-forwards
    of 7 with a gated shared expert of 4 + 3 (the gate's projection, sigmoid, product), each of a layer's two blocks
    2: 36 x (4 + 21) + 12 x (4 + 12) + 48 x 14 = 900 + 192 + 672 = 1,764 (1,344 before the copies, the head norms
    and the shared gate were counted)."""
    arch = models["qwen3-next-80b-a3b"]
    assert arch.attn_gate and arch.shared_gate
    assert prefill_kernel_count(arch) == 1764


def test_a_shared_expert_without_a_gate_counts_no_gate(models):
    """DeepSeek-V3's and Llama 4's shared experts add into the routed output ungated: the same model with
    ``shared_gate`` set launches 3 kernels more in each MoE layer (58 x 3 = 174 for DeepSeek-V3)."""
    from dataclasses import replace

    v3 = models["deepseek-v3"]
    assert not v3.shared_gate
    assert prefill_kernel_count(replace(v3, shared_gate=True)) == 1562 + 58 * 3


def test_a_layer_that_is_a_mixer_or_a_feed_forward_has_one_block():
    """Nemotron-H's layers are a Mamba-2 mixer, attention or a feed-forward alone: 'LNFN' is 4 blocks of 2, a Mamba-2
    mixer of 9, attention of 5 and two feed-forwards of 3: 8 + 9 + 5 + 6 = 28; with 8-bit inputs 2 + 2 + 2 x 2 more,
    36."""
    arch = ModelArch(id="t", name="t", layers=4, hidden=1024, heads=8, kv_heads=8, ffn=4096, vocab=1000,
                     layer_pattern="LNFN", mixer_or_ffn=True, linear_kind="mamba2", linear_k_heads=1,
                     linear_v_heads=8, linear_k_dim=64, linear_v_dim=64, linear_conv=4)
    assert prefill_kernel_count(arch) == 28
    assert prefill_kernel_count(arch, quantised_inputs=True) == 36


def test_multi_head_latent_attention_attends_with_its_expanded_heads_at_prefill(models):
    """DeepSeek-V3's prompt attends as 128 heads of 192-wide keys (128 + 64 rotary) and 128-wide values: a pair costs
    2 x 128 x (192 + 128) FLOPs a layer, a width of 20,480 (its hidden 7,168 over 128 heads gave 56 a head, 7,168);
    Llama-3.1-70B's 64 heads of 128: 8,192."""
    assert attention_width(models["deepseek-v3"]) == 128 * (128 + 64 + 128) / 2 == 20480
    assert attention_width(models["llama-3.1-70b"]) == 64 * 128


def _row(row_id: str):
    return next(m for m in bundled_measurements() if m.row_id == row_id)


# SGLang cookbook, 8 x B200, TP8, one user, 1,000-token random prompts (610 tokens on average), median first tokens
# (DeepSeek-R1.md and Qwen3.md at 7b5bd9c, bench_serving output): 140.76 and 92.18 ms.
R1 = "sglang-cookbook-deepseek-r1-0528-b200x8-1000in-1000out-c1-ttft-p50"
QWEN3 = "sglang-cookbook-qwen3-235b-a22b-2507-b200x8-1000in-1000out-c1-ttft-p50"


def test_deepseek_r1_is_slower_than_qwen3_at_one_user_as_measured():
    """DeepSeek-R1 (37B active, 61 layers, fp8) takes 1.53x Qwen3-235B's (22B active, 94 layers, bf16) first token
    on the same GPUs: its pass launches 2,044 kernels against 1,504. Planned with the stored fit (in sample) each is
    within 25 % of its median and R1 the slower (the per-expert constants it replaced planned R1 at 0.6x Qwen3)."""
    cat = bundled_catalog()
    fit = bundled_step_fit()
    r1, qwen = _row(R1), _row(QWEN3)
    p_r1, p_qwen = figure_at_steps(r1, cat, fit), figure_at_steps(qwen, cat, fit)
    assert p_r1 == pytest.approx(r1.value, rel=0.25)
    assert p_qwen == pytest.approx(qwen.value, rel=0.25)
    assert p_r1 / p_qwen > 1.15


def test_qwen3_next_read_from_its_config_launches_the_presets_kernels(models):
    """The Hugging Face reader sets the gated shared expert from ``shared_expert_intermediate_size`` (Qwen3-Next's
    ``shared_expert_gate``), so the model read from its config.json counts the preset's 1,764 kernels."""
    from advisor.models.hf import arch_from_config

    from .test_layer_kinds import QWEN3_NEXT

    arch = arch_from_config(QWEN3_NEXT, "q", "q")
    assert arch.shared_gate
    assert prefill_kernel_count(arch) == prefill_kernel_count(models["qwen3-next-80b-a3b"]) == 1764
