"""The defaults people run: the runtime's usual file when no format is named, one default job per workload, and
the quant ladder (with what each step costs in quality) before layers go to the CPU."""

from __future__ import annotations

import json

import pytest

from advisor.catalog import load_catalog
from advisor.catalog.defaults import DefaultsError, default_job, parse_defaults
from advisor.catalog.quant_quality import LADDER, next_smaller, quality
from advisor.cli import main
from advisor.planner import PlanRequest, plan
from advisor.planner.machine import local_machine

CAT = load_catalog(use_user_file=False)


def _json(capsys, *args) -> dict:
    assert main([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(("runtime", "fmt"), [(None, "q4_k_m"), ("ollama", "q4_k_m"), ("lm-studio", "q4_k_m"),
                                              ("vllm", "bf16"), ("mlx", "mlx-4bit")])
def test_no_format_takes_the_runtime_s_usual_file(capsys, runtime, fmt):
    args = ["plan", "--model", "llama-3.1-8b", "--workload", "inference", "--fake-gpu", "2x4090"]
    if runtime:
        args += ["--runtime", runtime]
    doc = _json(capsys, *args)
    assert doc["software"]["weight_format"] == fmt
    assert "assumed" in doc["software"]  # the document says it was assumed
    # a precision given is honoured: bf16 weights, nothing assumed
    given = _json(capsys, *args, "--precision", "bf16")
    assert given["software"]["weight_format"] == "bf16" and "assumed" not in given["software"]


def test_a_datacenter_part_runs_vllm_on_the_checkpoint_dtype():
    r = plan(PlanRequest.from_mapping({"model": "llama-3.1-8b", "workload": "inference",
                                       "accelerator": ["h100-sxm", "rtx-4090"]}), CAT)
    by = {o.accelerator: o.serving.software for o in r.options}
    assert by["h100-sxm"].runtime.id == "vllm" and by["h100-sxm"].weight_format.id == "bf16"
    assert by["rtx-4090"].runtime.id == "llama.cpp" and by["rtx-4090"].weight_format.id == "q4_k_m"


def test_one_default_job_per_workload_everywhere():
    # the plan's budget of each workload is the table's
    for workload in ("pretrain", "lora", "qlora", "inference"):
        r = plan(PlanRequest.from_mapping({"model": "llama-3.1-8b", "workload": workload,
                                           "accelerator": ["h100-sxm"]}), CAT)
        assert r.tokens == pytest.approx(default_job(workload).budget(r.params))
    assert default_job("pretrain").budget(8.03e9) == pytest.approx(20 * 8.03e9)  # Chinchilla
    assert default_job("inference").tokens == 1e6
    # the app's Planner starts from the table's model
    from advisor.gui.plan_service import DEFAULT_INPUTS

    assert DEFAULT_INPUTS["model"] == "llama-3.1-8b"


@pytest.mark.parametrize("text, message", [
    ('model = "x"\n[jobs.pretrain]\ntokens = -1\nsource = "s"', "positive"),
    ('[jobs.pretrain]\ntokens = 1\nsource = "s"', "model"),
    ('model = "x"\n[jobs.pretrain]\ntokens = 1\ntokens_per_param = 2\nsource = "s"', "one of them"),
])
def test_a_broken_defaults_file_is_one_line(text, message):
    with pytest.raises(DefaultsError, match=message):
        parse_defaults(text)


def test_quality_of_each_step_is_llama_quantize_s_published_figure():
    # llama.cpp tools/quantize/quantize.cpp: Q4_K_M 4.58G +0.1754 ppl @ Llama-3-8B; Q3_K_M +0.6569; Q8_0 +0.0026
    assert quality("q4_k_m").ppl_delta == 0.1754 and quality("q3_k_m").ppl_delta == 0.6569
    assert quality("iq4_xs") is None  # no figure published there: absent, not guessed
    assert next_smaller("q4_k_m") == "q4_k_s" and next_smaller("q2_k") is None
    deltas = [quality(f).ppl_delta for f in LADDER if quality(f)]
    assert deltas == sorted(deltas)  # down the ladder, quality only gets worse


def test_the_answer_names_the_file_and_what_the_next_smaller_costs(capsys):
    doc = _json(capsys, "plan", "--model", "llama-3.1-8b", "--workload", "inference", "--fake-gpu", "laptop-4060")
    q = doc["inference"]["quality"]
    assert q == {"format": "q4_k_m", "ppl_delta": 0.1754, "model": "Llama-3-8B", "source": q["source"],
                 "next": "q4_k_s", "next_ppl_delta": 0.2689}
    assert main(["plan", "--model", "llama-3.1-8b", "--workload", "inference", "--fake-gpu", "laptop-4060"]) == 0
    assert "Q4_K_M adds +0.18 perplexity" in capsys.readouterr().out


def test_fit_advice_walks_the_quant_ladder_from_the_file_planned():
    # 8B in its usual Q4_K_M file with a 32,768-token cache does not fit an 8 GB laptop GPU: the smaller files are
    # tried from the one planned (never the q8_0/q6_k steps above it)
    m = local_machine("laptop-4060", CAT)
    r = plan(PlanRequest.from_mapping({"model": "llama-3.1-8b", "workload": "inference", "context": 32768}), CAT,
             owned=m.owned, host=m.host)
    quants = [a.change.get("quant") for a in r.fit_advice if "quant" in a.change]
    assert quants and all(LADDER.index(q) > LADDER.index("q4_k_m") for q in quants)


def test_a_serving_job_without_a_load_takes_the_default_serving_job_everywhere(capsys):
    # resources/defaults.toml [serve]: 8 users, 2 s to the first token at p95; the app's Serve page starts there and
    # `advisor serve` takes it when given no load, and says so in its text and JSON
    from advisor.catalog.defaults import defaults
    from advisor.gui.serve_data import DEFAULT_VALUES

    d = defaults().serve
    assert (d.users, d.ttft_p95_s) == (8, 2.0)
    assert (DEFAULT_VALUES["users"], DEFAULT_VALUES["ttft_p95_s"]) == (d.users, d.ttft_p95_s)
    args = ["serve", "--model", "llama-3.1-8b", "--fake-gpu", "2x4090"]
    doc = _json(capsys, *args)
    assert doc["load"]["users"] == 8 and doc["targets"]["ttft_p95_s"] == 2.0
    assert "default serving job" in doc["load"]["assumed"]
    # the same job given by hand gives the same options, and nothing is assumed
    given = _json(capsys, *args, "--users", "8", "--ttft-p95", "2")
    assert "assumed" not in given["load"]
    assert given["options"] == doc["options"]
    # a target given is kept: only the load is the default's
    tpot = _json(capsys, *args, "--tpot-p95", "0.05")
    assert tpot["load"]["users"] == 8 and tpot["targets"] == {"ttft_p95_s": None, "tpot_p95_s": 0.05}
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "Assumed: 8 users at once" in out and "--users N or --requests-per-s R" in out


@pytest.mark.parametrize("table, message", [
    ("", "no \\[serve\\]"),
    ("[serve]\nusers = 0\nttft_p95_s = 2.0\nsource = \"s\"", "serve.users"),
    ("[serve]\nusers = 8\nttft_p95_s = -1\nsource = \"s\"", "serve.ttft_p95_s"),
    ("[serve]\nusers = 8\nttft_p95_s = 2.0", "serve.source"),
])
def test_a_broken_serve_default_is_one_line(table, message):
    jobs = "".join(f'[jobs.{w}]\ntokens = 1\nsource = "s"\n' for w in ("pretrain", "finetune", "lora", "qlora",
                                                                      "inference"))
    with pytest.raises(DefaultsError, match=message):
        parse_defaults(f'model = "x"\n{jobs}{table}')
