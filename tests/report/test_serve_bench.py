"""``advisor serve --bench``: a runnable command measuring the plan (its lengths, a ladder around its knee, its
target), each word quoted for the shell; its results are what ``advisor runs import`` reads back."""

from __future__ import annotations

import json
import shlex

import pytest

from advisor.report.serve_bench import ladder

ASK = ["serve", "--model", "llama-3.1-8b", "--accelerator", "h100-sxm", "--users", "20", "--prompt-tokens", "1000",
       "--output-tokens", "300", "--ttft-p95", "0.5", "--fake-gpu", "no-driver"]


def test_ladder_by_hand():
    # a knee of 718 users: 1, 718/4 = 179.5 -> 180, 359, 718, 1436
    assert ladder(718) == [1, 180, 359, 718, 1436]
    assert ladder(1) == [1, 2] and ladder(0.3) == [1, 2]


def _run(capsys, *args) -> str:
    from advisor.cli import main

    assert main([*ASK, *args]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("tool", ["vllm", "llama-server", "sglang"])
def test_bench_lines_measure_the_plans_lengths_ladder_and_target(capsys, tool):
    doc = json.loads(_run(capsys, "--json"))
    opt = next(o for o in doc["options"] if o["fits"] and o.get("meets_target") and o["kind"] == "cloud")
    text = _run(capsys, "--bench", tool, "--option", opt["id"])
    lines = [shlex.split(ln) for ln in text.splitlines() if ln and not ln.startswith("#")]
    rungs = ladder(opt["max_users_per_replica"])
    assert len(lines) == len(rungs)
    for words, c in zip(lines, rungs):
        flag = dict(zip(words, words[1:]))
        assert flag["--random-input-len"] == "1000" and flag["--random-output-len"] == "300"
        assert flag["--max-concurrency"] == str(c) and flag["--model"] == "meta-llama/Llama-3.1-8B"
        assert int(flag["--num-prompts"]) == max(50, 10 * c)
        if tool != "sglang":
            assert flag["--goodput"] == "ttft:500" and "--save-result" in words  # the target, in milliseconds
    assert words[:3] == (["python", "-m", "sglang.bench_serving"] if tool == "sglang" else ["vllm", "bench", "serve"])


def test_guidellm_runs_the_ladder_as_one_concurrent_sweep(capsys):
    doc = json.loads(_run(capsys, "--json"))
    opt = next(o for o in doc["options"] if o["fits"] and o.get("meets_target") and o["kind"] == "cloud")
    (words,) = [shlex.split(ln) for ln in _run(capsys, "--bench", "guidellm", "--option", opt["id"]).splitlines()
                if ln and not ln.startswith("#")]
    flag = dict(zip(words, words[1:]))
    assert words[:2] == ["guidellm", "benchmark"] and flag["--rate-type"] == "concurrent"
    assert flag["--rate"] == ",".join(map(str, ladder(opt["max_users_per_replica"])))
    assert flag["--data"] == "prompt_tokens=1000,output_tokens=300"


def test_an_unknown_option_is_one_line_exit_2(capsys):
    from advisor.cli import main

    assert main([*ASK, "--bench", "vllm", "--option", "no-such"]) == 2
    assert "no option" in capsys.readouterr().err


@pytest.mark.parametrize("spread", [0.0, 0.3, 0.577])
def test_the_random_lengths_each_tool_draws_have_the_plans_mean_and_spread(spread):
    """Each tool's uniform draw, worked from its own rule (``random_lengths``): vLLM on [L(1-r), L(1+r)], SGLang on
    [L r, L]; the mean and the coefficient of variation of the draw are the plan's (1,000 and 300 tokens)."""
    import math

    from advisor.report.serve_bench import random_lengths

    for kind in ("vllm", "sglang"):
        flag = dict(zip(*[iter(random_lengths(kind, 1000, 300, spread))] * 2))
        r, top = float(flag["--random-range-ratio"]), int(flag["--random-input-len"])
        lo, hi = (top * (1 - r), top * (1 + r)) if kind == "vllm" else (top * r, top)
        mean, cv = (lo + hi) / 2, (hi - lo) / math.sqrt(12) / ((lo + hi) / 2)
        # vLLM's ratio stays below 1: a spread past 0.99 / sqrt 3 = 0.5716 is drawn at that
        want = min(spread, 0.99 / math.sqrt(3)) if kind == "vllm" else spread
        assert mean == pytest.approx(1000, rel=2e-3) and cv == pytest.approx(want, abs=2e-3)
        out = int(flag["--random-output-len"])
        assert ((out * (1 - r) + out * (1 + r)) / 2 if kind == "vllm" else (out * r + out) / 2) == pytest.approx(300, rel=5e-3)
    # fixed lengths: vLLM's ratio 0, SGLang's 1 (its 0 would draw every length from 1 up)
    assert random_lengths("sglang", 1000, 300, 0.0)[-1] == "1" and random_lengths("vllm", 1000, 300, 0.0)[-1] == "0"


@pytest.mark.parametrize("tool", ["vllm", "llama-server", "sglang", "guidellm"])
def test_the_bench_says_the_import_that_reads_its_results_back(capsys, tool):
    """The comment names the exact ``advisor runs import`` of the files the rungs save, with the plan's model, the
    option's part and devices; llama-server's results say the runtime (the client saves its own backend)."""
    doc = json.loads(_run(capsys, "--json"))
    opt = next(o for o in doc["options"] if o["fits"] and o.get("meets_target") and o["kind"] == "cloud")
    text = _run(capsys, "--bench", tool, "--option", opt["id"])
    then = next(ln for ln in text.splitlines() if ln.startswith("# then, to learn from your box: "))
    words = shlex.split(then.split(": ", 1)[1])
    saved = [w for ln in text.splitlines() if not ln.startswith("#") for w in shlex.split(ln)
             if w.endswith((".json", ".jsonl")) and not w.startswith("-")]
    assert words[:3] == ["advisor", "runs", "import"] and words[3:3 + len(saved)] == saved
    flag = dict(zip(words, words[1:]))
    assert flag["--model"] == doc["model"]["id"] and flag["--accelerator"] == opt["accelerator"]
    assert flag["--devices"] == str(opt["devices_per_replica"])
    assert (flag.get("--software") == "llama.cpp") == (tool == "llama-server")
