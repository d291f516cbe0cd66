"""The served loads of llama.cpp's pull requests (resources/measurements/{serving,ttft,tpot}.csv) checked against the
numbers their threads print.

llama.cpp PR #16894 (github.com/ggml-org/llama.cpp/pull/16894, description of 2025-10-31) posts the sample output of
``scripts/bench-models.sh --quick``: ``llama-batched-bench`` tables (``-fa 1``, n_batch = n_ubatch = 2048, prompts not
shared) of gpt-oss-20b and of a Qwen2.5 7B Q8_0 file on Metal. A row of such a table, B sequences of PP prompt and TG
generated tokens started together, gives three served figures: the output tokens over the whole of each request,
B TG / T; the first token, T_PP (the prompts of all B prefilled together); a decode step of all B, T_TG / TG =
B / S_TG. Llama.cpp PR #24843 (review of 2026-06-21) prints a slot's decode rate ``tg`` at 1, 2 and 10 parallel
requests: its time per output token is 1 / tg.
"""

from __future__ import annotations

import pytest

from advisor.catalog.measurements import bundled_measurements

# (model, PP, TG, B, T_PP s, S_PP t/s, T_TG s, S_TG t/s, T s, S t/s) as printed in PR #16894's description
PR16894 = (
    ("gpt-oss-20b", 512, 32, 1, 0.211, 2428.42, 0.241, 132.94, 0.452, 1204.73),
    ("gpt-oss-20b", 512, 32, 2, 0.374, 2738.91, 0.364, 175.77, 0.738, 1474.29),
    ("gpt-oss-20b", 512, 32, 4, 0.707, 2897.74, 0.583, 219.38, 1.290, 1686.54),
    ("gpt-oss-20b", 4096, 32, 1, 1.502, 2727.05, 0.260, 122.92, 1.762, 2342.38),
    ("qwen2.5-7b", 512, 32, 1, 0.337, 1518.90, 0.405, 79.04, 0.742, 733.22),
    ("qwen2.5-7b", 512, 32, 2, 0.639, 1603.62, 0.469, 136.37, 1.108, 982.06),
    ("qwen2.5-7b", 512, 32, 4, 1.248, 1640.90, 0.570, 224.52, 1.818, 1196.79),
    ("qwen2.5-7b", 4096, 32, 1, 2.684, 1526.12, 0.428, 74.77, 3.112, 1326.52),
    ("qwen2.5-7b", 4096, 32, 2, 5.354, 1530.08, 0.514, 124.48, 5.868, 1406.93),
    ("qwen2.5-7b", 4096, 32, 4, 10.694, 1532.06, 0.655, 195.49, 11.349, 1454.95),
)
N_BATCH = 2048  # the run's n_batch: the tokens one decode call takes
HALF_MS = 0.0005  # the tables print seconds to three places
# PR #24843, review of 2026-06-21 (RTX 5090, gpt-oss-20b): parallel requests -> a slot's printed tg (t/s)
PR24843 = {1: 396.34, 2: 263.52, 10: 91.98}


@pytest.fixture(scope="module")
def rows():
    return {(m.group, m.row_id): m for m in bundled_measurements()}


def _rid(model: str, pp: int, tg: int, b: int) -> str:
    return f"llama.cpp-pr16894-m2-ultra-{model}-pp{pp}-tg{tg}-b{b}"


@pytest.mark.parametrize("line", PR16894, ids=lambda x: f"{x[0]}-{x[1]}-b{x[3]}")
def test_the_printed_table_is_consistent_within_its_rounding(line):
    """S_TG = B TG / T_TG, S_PP = B PP / T_PP, T = T_PP + T_TG and S = B (PP + TG) / T, each within what three
    decimals of a second allow (a rate's relative error is the time's, 0.0005 s over it)."""
    _, pp, tg, b, t_pp, s_pp, t_tg, s_tg, t, s = line
    assert s_tg == pytest.approx(b * tg / t_tg, rel=HALF_MS / t_tg + 1e-4)
    assert s_pp == pytest.approx(b * pp / t_pp, rel=HALF_MS / t_pp + 1e-4)
    assert t == pytest.approx(t_pp + t_tg, abs=3 * HALF_MS)
    assert s == pytest.approx(b * (pp + tg) / t, rel=HALF_MS / t + 1e-4)


@pytest.mark.parametrize("line", PR16894, ids=lambda x: f"{x[0]}-{x[1]}-b{x[3]}")
def test_each_load_point_gives_its_three_figures_as_the_table_prints_them(line, rows):
    model, pp, tg, b, t_pp, _, _, s_tg, t, _ = line
    rid = _rid(model, pp, tg, b)
    serving, ttft, tpot = rows[("serving", rid)], rows[("ttft", rid + "-ttft")], rows[("tpot", rid + "-tpot-itl")]
    for m in (serving, ttft, tpot):
        assert (m.model, m.accelerator_id, m.devices, m.backend) == (model, "m2-ultra", 1, "metal")
        assert (m.batch, m.prompt_tokens, m.output_tokens) == (b, pp, tg)
        assert m.arrivals == "together" and m.setting("max_seqs") == str(b)
        assert m.source_id == "llama.cpp-pr16894" and m.source_url.endswith("/pull/16894")
    # output tokens over the whole of each request, prompts included: B TG / T (printed to two places)
    assert serving.unit == "tokens/s" and serving.value == pytest.approx(b * tg / t, abs=0.005)
    # the first token: T_PP (ms in the file, seconds once read)
    assert ttft.value == pytest.approx(t_pp, abs=1e-9)
    # every first token comes out of one decode call (mean = T_PP), or the last request's does (its p95)
    assert ttft.statistic == ("mean" if b * pp <= N_BATCH or b == 1 else "p95")
    # a decode step of all B sequences: B / S_TG
    assert tpot.statistic == "itl_p50" and tpot.value == pytest.approx(b / s_tg, abs=5.1e-8)  # ms to 4 places


def test_the_pr24843_slots_give_one_over_the_printed_decode_rate(rows):
    for n, tg in PR24843.items():
        m = rows[("tpot", f"llama.cpp-pr24843-rtx5090-gpt-oss-20b-np{n}-tpot-mean")]
        assert (m.batch, m.accelerator_id, m.arrivals) == (n, "rtx-5090", "together")
        assert m.value == pytest.approx(1.0 / tg, rel=1e-4)


def test_every_llama_cpp_served_row_is_checked_here(rows):
    """A llama.cpp thread's served row added without its printed numbers in this file fails here."""
    checked = {("tpot", f"llama.cpp-pr24843-rtx5090-gpt-oss-20b-np{n}-tpot-mean") for n in PR24843}
    for model, pp, tg, b, *_ in PR16894:
        rid = _rid(model, pp, tg, b)
        checked |= {("serving", rid), ("ttft", rid + "-ttft"), ("tpot", rid + "-tpot-itl")}
    served = {k for k, m in rows.items() if k[0] in ("serving", "ttft", "tpot") and m.source_id.startswith("llama.cpp")}
    assert served == checked
