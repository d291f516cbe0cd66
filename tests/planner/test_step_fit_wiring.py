"""The fitted step costs (``estimate.step_cost``, ``resources/serving_step_fit.csv``) are what the plan and ``advisor
serve`` both plan with: one request of DeepSeek-R1-0528 (DeepSeek-V3's architecture, fp8) with SGLang on eight B200s,
1,000-token prompts and answers, as SGLang's cookbook page measured it (9.15 ms a token at one user, bench_serving;
sgl-project/sgl-cookbook docs/autoregressive/DeepSeek/DeepSeek-R1.md, in resources/measurements/tpot.csv)."""

from __future__ import annotations

import json

import pytest

from advisor.catalog.runtimes import bundled_step_fit
from advisor.cli import main

ASK = ("--model", "deepseek-v3", "--precision", "fp8", "--runtime", "sglang", "--accelerator", "b200",
       "--prompt-tokens", "1000", "--output-tokens", "1000", "--no-own", "--json")
MEASURED_S = 9.15e-3  # SGLang cookbook, DeepSeek-R1-0528 on 8 x B200, one user, median time per output token


def _json(capsys, *args) -> dict:
    code = main(list(args))
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def test_one_request_on_eight_b200s_is_the_same_in_plan_and_serve_and_near_the_published_time(capsys):
    fit = bundled_step_fit()
    assert fit.value("tp_layer/vllm/cuda/fabric") > 20e-6  # fitted above the assumed two all-reduces a layer
    inf = _json(capsys, "plan", *ASK, "--gpus", "8", "--workload", "inference")["inference"]
    serve = _json(capsys, "serve", *ASK, "--tp", "8", "--users", "1")
    one = next(o for o in serve["options"] if o["devices_per_replica"] == 8 and o["id"] == inf["option"])
    assert one["per_user_tokens_per_s"] == pytest.approx(inf["decode_tokens_per_s"], rel=1e-9)
    assert one["ttft_s"]["p50"] == pytest.approx(inf["ttft_single_request_s"], rel=1e-9)
    # the published figure is in the fit's rows (in sample): within 25 %, where the assumed step planned 3.6 ms
    assert 1.0 / inf["decode_tokens_per_s"] == pytest.approx(MEASURED_S, rel=0.25)


FIRST_TOKEN_P50_S = 0.1408  # the same page, one user, 1,000-token random prompts: median first token (bench_serving)


def test_one_request_first_token_on_eight_b200s_takes_the_fitted_prefill_pass(capsys):
    """The plan's first token and serve's at one user are one figure, with a prefill pass's fitted time (kernels
    launched from the host: SGLang captures CUDA graphs for decode batches only) in it: within 25 % of the page's
    median first token (in sample), where the step without the prefill constants planned about 20 ms."""
    fit = bundled_step_fit()
    assert fit.value("prefill_kernel/vllm/fabric") > 0.0
    inf = _json(capsys, "plan", *ASK, "--gpus", "8", "--workload", "inference")["inference"]
    serve = _json(capsys, "serve", *ASK, "--tp", "8", "--users", "1")
    one = next(o for o in serve["options"] if o["devices_per_replica"] == 8 and o["id"] == inf["option"])
    assert one["ttft_s"]["p50"] == pytest.approx(inf["ttft_single_request_s"], rel=1e-9)
    assert inf["ttft_single_request_s"] == pytest.approx(FIRST_TOKEN_P50_S, rel=0.25)
    # the pass's fitted time is what closes the gap: its 2,044 kernels (inputs quantised to fp8 before each product)
    from advisor.catalog.load import bundled_catalog
    from advisor.catalog.runtimes import choose
    from advisor.planner.serve_spec import prefill_overhead_s

    cat = bundled_catalog()
    acc = cat.accelerators["b200"]
    extra = prefill_overhead_s(cat.models["deepseek-v3"], choose("sglang", "fp8", None, 16, acc.vendor, acc.kind),
                               acc, 8)
    assert extra == pytest.approx(2044 * fit.value("prefill_kernel/vllm/fabric"), rel=1e-12)
    assert inf["ttft_single_request_s"] - extra < 0.25 * FIRST_TOKEN_P50_S
