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
