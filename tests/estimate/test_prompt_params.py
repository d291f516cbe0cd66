"""A prompt token's products: the parameters less the embedding and the head (``estimate.model.prompt_param_count``).

An embedding is a row looked up; the head makes logits only for the tokens a step samples from, the last of each
prompt (llama.cpp's graphs keep only those rows after the last layer's attention, ``inp_out_ids``). The llama.cpp
PR #16894 description's llama-batched-bench table (M2 Ultra, -fa 1, prompts not shared) times all of a step's
prompts in one decode call (T_PP); with the head counted for every prompt token the plan was 1.24-1.37x long on
each of its ten first tokens, Qwen2.5 7B (a 152,064-token vocabulary) and gpt-oss-20b (201,088) alike.
"""

from __future__ import annotations

import pytest

from advisor.catalog.load import bundled_catalog
from advisor.catalog.measurements import bundled_measurements
from advisor.estimate.model import active_param_count, prompt_param_count, prompt_share
from advisor.planner.measured import shown_prediction


def _arch(model_id: str):
    return bundled_catalog().models[model_id]


def test_llama_3_8b_by_hand():
    # 32 layers of 4,096 wide, an untied 128,256-token embedding and head, the final norm's 4,096 weights
    arch = _arch("llama-3-8b")
    assert active_param_count(arch) == 8_030_261_248  # the published count
    assert prompt_param_count(arch) == 8_030_261_248 - 2 * 128256 * 4096 - 4096  # 6,979,579,904


def test_gpt_oss_20b_against_its_model_card():
    # OpenAI gpt-oss model card (2025-08-05), table 1: 3.61B active parameters, counting the unembedding (201,088 x
    # 2,880 = 0.579B) and not the embedding: a prompt token is multiplied by the rest, 3.03B
    arch = _arch("gpt-oss-20b")
    assert prompt_param_count(arch) == pytest.approx(3.61e9 - 201088 * 2880, rel=0.01)


def test_a_tied_head_is_one_matrix_not_multiplied_by_prompt_tokens():
    # Llama 3.2 1B ties its head to the embedding (128,256 x 2,048 once): 1.236B, of which 0.263B a row looked up
    arch = _arch("llama-3.2-1b")
    assert arch.tied
    assert active_param_count(arch) - prompt_param_count(arch) == 128256 * 2048 + 2048
    assert 0 < prompt_share(arch) < 1


ROWS = ("gpt-oss-20b-pp512-tg32-b1", "gpt-oss-20b-pp512-tg32-b4", "gpt-oss-20b-pp4096-tg32-b1",
        "qwen2.5-7b-pp512-tg32-b1", "qwen2.5-7b-pp512-tg32-b4", "qwen2.5-7b-pp4096-tg32-b4")


@pytest.mark.parametrize("row", ROWS)
def test_batched_bench_first_tokens_on_an_m2_ultra(row):
    """The shown first token of the PR's prompts started together within 25 % of its T_PP (0.211-10.694 s)."""
    rid = f"llama.cpp-pr16894-m2-ultra-{row}-ttft"
    m = next(m for m in bundled_measurements() if m.row_id == rid)
    shown = shown_prediction(m, bundled_catalog())
    assert shown is not None
    value, (low, high) = shown
    assert value == pytest.approx(m.value, rel=0.25)
    assert low <= m.value <= high
