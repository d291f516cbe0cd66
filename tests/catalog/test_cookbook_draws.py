"""The SGLang cookbook's random-dataset runs replayed: ``bench_serving`` seeds NumPy with ``--seed`` (1 by default)
and draws the prompts' lengths in one ``np.random.randint(1, max + 1, n)`` call, then the outputs' in another, so
the printed token totals (sgl-cookbook ``docs/autoregressive/DeepSeek/DeepSeek-V3_1.md``, lines 401 and 404,
723 and 726) are those draws, and the rows' mean lengths (the totals over the requests) are the draws' means
(docs/method.md, "What the MI300X runs' own prompts say")."""

from __future__ import annotations

import pytest

from advisor.catalog.measurements import bundled_measurements

np = pytest.importorskip("numpy")


def draws(maximum: int, n: int, output_max: int = 1000) -> tuple[list[int], list[int]]:
    np.random.seed(1)
    prompts = np.random.randint(1, maximum + 1, size=n).tolist()
    outputs = np.random.randint(1, output_max + 1, size=n).tolist()
    return prompts, outputs


def test_the_one_user_runs_draw_the_printed_totals():
    """Ten prompts of at most 1,000 tokens: 6,101 input and 4,220 generated tokens printed; of at most 8,000:
    41,941 input. The first prompt (the warm-up's) is 38 tokens, then 236, 909, ...; the 8,000-token run's 5,158."""
    p1, o1 = draws(1000, 10)
    assert sum(p1) == 6101 and sum(o1) == 4220
    assert p1 == [38, 236, 909, 73, 768, 906, 716, 646, 848, 961]
    p8, o8 = draws(8000, 10)
    assert sum(p8) == 41941 and sum(o8) == 4220
    assert p8[0] == 5158 and sorted(p8)[4:6] == [3981, 5057]


def test_the_rows_mean_lengths_are_the_draws_means():
    """The V3.1 one-user rows state 610 and 4,194 prompt tokens: 6,101 / 10 and 41,941 / 10, rounded."""
    rows = {m.row_id: m for m in bundled_measurements()
            if m.row_id.startswith("sglang-cookbook-deepseek-v3.1-mi300xx8-") and "-c1-ttft-p50" in m.row_id}
    assert rows["sglang-cookbook-deepseek-v3.1-mi300xx8-1000in-1000out-c1-ttft-p50"].prompt_tokens == round(
        sum(draws(1000, 10)[0]) / 10)
    assert rows["sglang-cookbook-deepseek-v3.1-mi300xx8-8000in-1000out-c1-ttft-p50"].prompt_tokens == round(
        sum(draws(8000, 10)[0]) / 10)
