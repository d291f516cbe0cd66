"""Launch lines that cannot be read as options, a ``[serve]`` table that refuses what it does not use, and
one validation for the power limit's flag and JSON paths (issue 38, item 6).

A word quoted for the shell (``shlex.quote``) is still an option to the program that parses it: a model named
``--trust-remote-code`` must reach vLLM, SGLang and llama.cpp in a form their parsers read as a value.
"""

from __future__ import annotations

import json

import pytest
import yaml

from advisor.cli import main
from advisor.report.launch import LaunchError, render_launch
from advisor.report.serve_launch import render_serve_launch

EVIL = "--trust-remote-code"


@pytest.fixture
def serve_doc(capsys):
    assert main(["serve", "--model", "llama-3-8b", "--users", "50", "--prompt-tokens", "500", "--output-tokens", "200",
                 "--accelerator", "h100-sxm", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    doc["model"]["name"], doc["model"]["source"] = EVIL, ""
    return doc


def test_vllm_refuses_a_model_name_that_reads_as_an_option(serve_doc):
    with pytest.raises(LaunchError, match="starts with '-'"):
        render_serve_launch("vllm", serve_doc)


def test_sglang_and_llama_server_pass_it_as_a_value(serve_doc):
    sglang = render_serve_launch("sglang", serve_doc).splitlines()[-1]
    assert f"--model-path={EVIL}" in sglang and f" {EVIL} " not in sglang
    llama = render_serve_launch("llama-server", serve_doc).splitlines()[-1]
    assert llama.startswith(f"llama-server -m ./{EVIL}-")


def test_skypilot_run_line_is_guarded_too(serve_doc):
    cloud = [o for o in serve_doc["options"] if o.get("kind") == "cloud" and o.get("fits")]
    if not cloud:
        pytest.skip("no cloud option for this job")
    with pytest.raises(LaunchError, match="starts with '-'"):
        render_serve_launch("skypilot", serve_doc)  # vLLM's run line: refused, not a flag
    for o in serve_doc["options"]:
        o.setdefault("launch", {})["runtime"] = "llama.cpp"
    run = yaml.safe_load(render_serve_launch("skypilot", serve_doc).split("\n", 1)[1])["run"]
    assert run.startswith(f"llama-server -m ./{EVIL}-")


def test_training_launchers_pass_a_script_that_starts_with_a_dash_as_a_path(plan_doc):
    for kind in ("torchrun", "sbatch", "skypilot"):
        text = render_launch(kind, plan_doc, "cloud:aws:p5.48xlarge", script="--evil.py")
        assert " ./--evil.py" in text and " --evil.py" not in text


def test_assumptions_inside_serve_are_refused(tmp_path, capsys):
    f = tmp_path / "s.toml"
    f.write_text('schema = "advisor.scenario/1"\n[serve]\nmodel = "llama-3-8b"\nusers = 20\n'
                 '[serve.assumptions]\nelectricity_usd_per_kwh = 5.0\n')
    assert main(["serve", str(f)]) == 2
    err = capsys.readouterr().err
    assert "serve.assumptions" in err and "[assumptions]" in err and err.count("\n") == 1
    f.write_text('schema = "advisor.scenario/1"\n[serve]\nmodel = "llama-3-8b"\nusers = 20\nbogus = 1\n')
    assert main(["serve", str(f)]) == 2
    assert "serve.bogus: unknown key" in capsys.readouterr().err


@pytest.mark.parametrize("as_json", [False, True])
def test_power_limit_flag_and_json_paths_refuse_alike(capsys, as_json):
    args = ["plan", "--params", "7e9", "--workload", "inference", "--accelerator", "rtx-4090", "--power-limit-w", "1e-300"]
    assert main(args + (["--json"] if as_json else [])) == 2
    err = capsys.readouterr().err
    assert "power_limit_w" in err and err.count("\n") == 1
