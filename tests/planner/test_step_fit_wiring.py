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
