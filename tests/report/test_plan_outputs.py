"""The --report / --launch / --save-scenario / --fleet outputs of advisor plan."""

from __future__ import annotations

import argparse
import csv
import json

import pytest
import yaml

from advisor.report import ReportError
from advisor.report import plan_outputs as po
from advisor.store.scenario import load_scenario


def ns(**kw):
    base = {"report": [], "launch": None, "option": None, "launch_file": None, "save_scenario": None,
            "fleet": False, "json": False}
    return argparse.Namespace(**{**base, **kw})


def test_flags_are_added():
    p = argparse.ArgumentParser()
    po.add_output_flags(p)
    args = p.parse_args(["--report", "a.html", "--report", "a.csv", "--launch", "sbatch", "--option", "x",
                         "--save-scenario", "s.toml", "--fleet"])
    assert args.report == ["a.html", "a.csv"] and args.launch == "sbatch" and args.fleet


def test_reports_launch_file_and_scenario(plan_doc, tmp_path, capsys):
    values = {"model": "llama-3-70b", "workload": "pretrain", "tokens": 1e10, "gpus": 16,
              "accelerator": ("h100-sxm",), "mfu": None, "assumptions": {"electricity_usd_per_kwh": 0.3}}
    args = ns(report=[str(tmp_path / "r.html"), str(tmp_path / "r.md")], launch="skypilot",
              option="cloud:aws:p5.48xlarge", launch_file=str(tmp_path / "task.yaml"),
              save_scenario=str(tmp_path / "s.toml"), json=True)
    assert po.write_outputs(args, [plan_doc], [values], [None]) is None
    assert "cloud:aws:p5.48xlarge" in (tmp_path / "r.html").read_text()
    assert (tmp_path / "r.md").exists()
    assert yaml.safe_load((tmp_path / "task.yaml").read_text())["num_nodes"] == 2
    s = load_scenario(tmp_path / "s.toml")
    # Every input that differs from the job schema's default (pretrain is the default workload).
    assert s.plan == {"model": "llama-3-70b", "tokens": 1e10, "gpus": 16, "accelerator": ["h100-sxm"]}
    assert s.assumptions == {"electricity_usd_per_kwh": 0.3}
    assert capsys.readouterr().out == ""  # stdout stays free for the JSON document


def test_launch_to_stdout_without_json(plan_doc):
    assert po.write_outputs(ns(launch="sbatch"), [plan_doc], [{}]).startswith("#!/bin/bash\n#SBATCH")


@pytest.mark.parametrize("kw, n, message", [
    ({"launch": "sbatch", "json": True}, 1, "--launch-file"),
    ({"launch": "sbatch"}, 2, "single plan"),
    ({"launch": "sbatch", "option": "cloud:nope"}, 1, "no option"),
    ({"option": "x"}, 1, "only with --launch"),
    ({"save_scenario": "x.toml"}, 2, "one scenario"),
    ({"report": ["x.docx"]}, 1, "suffix"),
    ({"report": ["x.html"], "save_scenario": "s.toml", "launch": "sbatch", "option": "home:rtx-4090"}, 1,
     "does not fit"),  # checked before anything is written
    ({"report": ["x.html", "y.doc"]}, 1, "suffix"),
    ({"save_scenario": "s.toml", "report": ["x.md"]}, 1, "plan.gpus"),
])
def test_flags_that_cannot_be_honoured(plan_doc, tmp_path, monkeypatch, kw, n, message):
    monkeypatch.chdir(tmp_path)
    values = {"gpus": "many"} if "plan.gpus" in message else {}
    with pytest.raises(ReportError, match=message):
        po.write_outputs(ns(**kw), [plan_doc] * n, [values] * n)
    assert list(tmp_path.iterdir()) == []


def test_fleet_restricts_the_accelerators(tmp_path):
    from advisor.store import fleet as fl

    with pytest.raises(ReportError, match="fleet"):
        po.prepare_values(ns(fleet=True), {"model": "x"})
    doc = {"schema": "advisor.detect/1", "host": {"hostname": "n1"}, "cpu": {"logical_cores": 8},
           "memory": {"total_bytes": 1}, "gpus": [{"index": i, "name": "H100", "memory_total_bytes": 1,
                                                   "catalog_id": "h100-sxm"} for i in range(8)]}
    (tmp_path / "n1.json").write_text(json.dumps(doc))
    fl.import_detect_files([tmp_path / "n1.json"])
    assert po.prepare_values(ns(fleet=True), {"model": "x"})["accelerator"] == ["h100-sxm"]
    assert po.prepare_values(ns(), {"model": "x"}) == {"model": "x"}
    with pytest.raises(ReportError, match="none of rtx-4090"):
        po.prepare_values(ns(fleet=True), {"accelerator": ["rtx-4090"]})


def test_plan_command_end_to_end(tmp_path, capsys):
    """advisor plan with --report/--save-scenario/--launch: the files appear, stdout holds only the spec."""
    from advisor.cli import main

    pytest.importorskip("advisor.planner")
    flags = ["--model", "llama-3-8b", "--workload", "lora", "--tokens", "2e8", "--accelerator", "h100-sxm",
             "--gpus", "8"]
    assert main(["plan", *flags, "--report", str(tmp_path / "r.md"), "--save-scenario", str(tmp_path / "s.toml"),
                 "--launch", "sbatch"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("#!/bin/bash\n#SBATCH") and "--gpus-per-node=8" in out  # on-prem: one node of 8
    assert "onprem:h100-sxm" in (tmp_path / "r.md").read_text()
    assert main(["plan", str(tmp_path / "s.toml"), "--json", "--launch", "skypilot",
                 "--launch-file", str(tmp_path / "t.yaml")]) == 0
    doc = json.loads(capsys.readouterr().out)
    task = yaml.safe_load((tmp_path / "t.yaml").read_text())
    assert task["resources"]["accelerators"].startswith("H100:")
    assert doc["options"][0]["accelerator"] == "h100-sxm"
    assert main(["plan", *flags, "--json", "--launch", "sbatch"]) == 2
    assert capsys.readouterr().out == ""


def test_report_of_a_calibrated_plan_names_the_probe(tmp_path, capsys):
    from advisor.cli import main
    from advisor.store.calibration import Calibration, save_calibration

    pytest.importorskip("advisor.planner")
    save_calibration(Calibration(mfu=0.33, eta_mem=None, device="cuda:0", accelerator_id="rtx-4090",
                                 measured_at="2026-11-29T22:00:00Z", source="probe:train-step"))
    assert main(["plan", "--model", "llama-3-8b", "--workload", "lora", "--tokens", "1e8", "--accelerator",
                 "rtx-4090", "--report", str(tmp_path / "r.csv"), "--report", str(tmp_path / "r.html")]) == 0
    rows = [r for r in csv.DictReader(open(tmp_path / "r.csv")) if r["record"] == "probe"]
    assert [(r["id"], r["value"]) for r in rows] == [("MFU of a training step", "0.33")]
    html = (tmp_path / "r.html").read_text()
    assert "probe:train-step on cuda:0 (rtx-4090)" in html and "2026-11-29T22:00:00Z" in html
