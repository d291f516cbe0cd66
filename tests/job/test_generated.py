"""What is built from the job schema, checked against it: CLI flags, scenario keys, JSON echo, report inputs."""

from __future__ import annotations

import argparse

import pytest

from advisor.job import ASSUMPTION_FLAGS, JOB_FIELDS, Job, assumption_meta


def _plan_parser():
    from advisor.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["plan"]


def test_every_schema_field_with_a_flag_is_a_plan_flag():
    actions = {s: a for a in _plan_parser()._actions for s in a.option_strings}
    for name, meta in JOB_FIELDS.items():
        if meta.flag is None:
            assert "--" + name.replace("_", "-") not in actions, name
            continue
        action = actions[meta.flag]
        assert action.dest == name, meta.flag
        assert meta.help.split(" (")[0] in action.help
    for name in ASSUMPTION_FLAGS:
        action = actions["--" + name.replace("_", "-")]
        assert action.dest == name and assumption_meta(name).unit in action.help


def test_flags_parse_to_the_schema_types():
    args = _plan_parser().parse_args(["--params", "7B", "--gpus", "8", "--zero", "3", "--accelerator", "h100-sxm",
                                      "--accelerator", "l40s", "--no-spot", "--tokens", "2e8", "--set", "pue=1.4"])
    from advisor.commands.plan import request_values

    values = request_values(args)
    job = Job.from_mapping(values)
    assert job.params == 7e9 and job.gpus == 8 and job.zero == 3 and job.accelerator == ("h100-sxm", "l40s")
    assert job.spot_offers is False and job.assumptions == {"pue": 1.4}
    assert job.sources["pue"] == "--set pue=1.4" and job.sources["gpus"] == "command line (--gpus)"


def test_json_echo_and_report_inputs_follow_the_schema():
    from advisor.planner import plan
    from advisor.report.content import sections

    job = Job.from_mapping({"model": "llama-3-8b", "workload": "inference", "tokens": 1e9, "batch": 8,
                            "context": 4096, "accelerator": ["h100-sxm"], "quant": "q4_k_m",
                            "sources": {"batch": "scenario file serve.toml"}})
    doc = plan(job).to_json()
    assert list(doc["inputs"]) == ["model", "workload", "quant", "tokens", "context", "batch", "accelerator"]
    for name, entry in doc["inputs"].items():
        assert entry["unit"] == JOB_FIELDS[name].unit
    assert doc["inputs"]["batch"] == {"value": 8, "unit": "requests", "source": "scenario file serve.toml"}
    assert doc["inputs"]["accelerator"]["value"] == ["h100-sxm"]
    rows = sections([doc])[0].inputs
    assert [r[0] for r in rows] == list(doc["inputs"])
    assert rows[-2] == ("batch", "8", "requests", "scenario file serve.toml")
    assert rows[-1][1] == "h100-sxm"


@pytest.mark.parametrize("fmt", ["md", "csv", "html"])
def test_each_report_format_shows_the_inputs_and_their_source(tmp_path, fmt):
    from advisor.planner import plan
    from advisor.report import write_report

    job = Job.from_mapping({"model": "gpt2", "workload": "lora", "tokens": 3e7, "accelerator": ["rtx-4090"],
                            "assumptions": {"pue": 1.4}, "sources": {"pue": "--set pue=1.4", "tokens": "flag"}})
    path = tmp_path / f"r.{fmt}"
    write_report([plan(job).to_json()], path)
    text = path.read_text()
    assert "3e+07" in text and "flag" in text
    assert "--set pue=1.4" in text  # the changed assumption names its own source, not the default's
