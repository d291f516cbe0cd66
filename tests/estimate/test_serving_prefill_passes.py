"""Prefill passes of their own (SGLang's default): a prompt is not mixed into the running batch's decode steps
(``--enable-mixed-chunk`` off), and a new prefill batch takes every prompt waiting up to the budget, so the prompts
sent during one pass share the next pass's fixed time (``serving.shared_pass_throughput``)."""

from __future__ import annotations

import math

import pytest

from advisor.catalog.load import bundled_catalog
from advisor.catalog.measurements import bundled_measurements
from advisor.estimate.serving import Lengths, mixes_chunks, prefill_in_service, prefill_s, shared_pass_throughput
from advisor.estimate.serving_queue import serve_at
from advisor.planner.measured import serve_point_predictor
from advisor.planner.serve_spec import RUNTIME_SERVING

from .test_serving_load import spec


def test_the_closed_loop_throughput_with_shared_passes_is_the_root_worked_by_hand():
    # 10 decoding, A = 2 s, B = 1 s, F = 0.1 s: 0.2 x^2 + (2 + 1 - 1) x - 10 = 0, x = (-2 + sqrt(4 + 8)) / 0.4
    x = shared_pass_throughput(10.0, 2.0, 1.0, 0.1)
    assert x == pytest.approx((-2.0 + math.sqrt(12.0)) / 0.4, rel=1e-12)
    assert x == pytest.approx(3.660254, rel=1e-6)
    # Little's law closes: x (A + B / (1 + x F)) = 10
    assert x * (2.0 + 1.0 / (1.0 + x * 0.1)) == pytest.approx(10.0, rel=1e-12)
    # no fixed time to share: each prompt pays its own, x = d / (A + B)
    assert shared_pass_throughput(10.0, 2.0, 1.0, 0.0) == pytest.approx(10.0 / 3.0, rel=1e-12)
    assert shared_pass_throughput(0.0, 2.0, 1.0, 0.1) == 0.0


def test_a_prompt_in_a_pass_of_its_own_takes_its_prefill_alone_whatever_decodes():
    mixed, own = spec(), spec(mixed_prefill=False)
    assert mixes_chunks(mixed) and not mixes_chunks(own)
    alone = prefill_s(own, 1000)
    # riding on 50 sequences' decode steps it takes their step as well; in a pass of its own, its prefill alone
    assert prefill_in_service(own, 1000)(50.0, 1500.0) == alone
    assert prefill_in_service(mixed, 1000)(50.0, 1500.0) > alone
    assert RUNTIME_SERVING["sglang"].mixed_prefill is False and RUNTIME_SERVING["vllm"].mixed_prefill is True


def test_prompts_sharing_a_pass_hold_the_decode_up_less_than_one_pass_each():
    lengths = Lengths(1000, 200, 0.5, 0.5)
    shared = serve_at(spec(mixed_prefill=False, prefill_overhead_s=0.05), lengths, users=64)
    each = serve_at(spec(chunk_tokens=0, prefill_overhead_s=0.05), lengths, users=64)  # one prompt a pass
    free = serve_at(spec(mixed_prefill=False), lengths, users=64)  # no fixed time a pass
    assert each.output_tokens_per_s < shared.output_tokens_per_s < free.output_tokens_per_s
    assert free.tpot_p50_s < shared.tpot_p50_s < each.tpot_p50_s


def _row(row_id: str):
    return next(m for m in bundled_measurements(("ttft",)) if m.row_id == row_id)


def test_deepseek_r1_at_100_users_on_sglang_waits_about_as_long_as_one_user():
    # SGLang cookbook, DeepSeek-R1-0528 on eight B200 (TP8, sglang bench_serving, 1,000/1,000 random lengths):
    # median first token 140.8 ms at one user, 147.6 ms at 100 users (1.05 times). The one-user run's is planned
    # within 25 % with the stored fit (137 ms: the pass's 2,044 kernels at the fitted host time a kernel). At 100
    # users the figure bench_truth scores, planned at the step costs fitted without the page (resources/
    # calibration_predictions.csv, held_out: 179 ms), is within 25 % of the published 147.6 ms; with the stored fit,
    # in sample, it is 192 ms (1.30 times: the queue puts a prompt behind 1.4 one-user passes where the page measured
    # 1.05; it was 197 ms with the prompts mixed into decode steps and each paying the whole pass).
    import csv
    import io

    from advisor.catalog.load import _resource_text

    cat = bundled_catalog()
    loaded = _row("sglang-cookbook-deepseek-r1-0528-b200x8-1000in-1000out-c100-ttft-p50")
    one = _row("sglang-cookbook-deepseek-r1-0528-b200x8-1000in-1000out-c1-ttft-p50")
    acc = cat.accelerators[loaded.accelerator_id]
    at_load = serve_point_predictor(loaded, cat, acc)[0](0.0).ttft_p50_s
    at_one = serve_point_predictor(one, cat, acc)[0](0.0).ttft_p50_s
    stored = {r["row_id"]: r for r in csv.DictReader(io.StringIO(_resource_text("calibration_predictions.csv")))}
    assert loaded.value == pytest.approx(0.1476, rel=1e-3)
    assert float(stored[loaded.row_id]["predicted"]) == pytest.approx(at_load, rel=1e-9)  # the stored fit's own
    assert float(stored[loaded.row_id]["held_out"]) == pytest.approx(0.1476, rel=0.25)
    assert at_load < 1.5 * at_one  # a prompt at 100 users waits for under half a pass more than one user's
    assert one.value == pytest.approx(0.1408, rel=1e-3)
    assert at_one == pytest.approx(0.1408, rel=0.25)
