"""``advisor probe``: JSON per the contract, history, calibration save/reset, bad input, and the planner."""

from __future__ import annotations

import dataclasses
import json

import pytest

import advisor.probes.train_step as train_step
from advisor.cli import main
from advisor.probes._transformer import TinyGptConfig
from advisor.store.calibration import load_calibration, save_calibration


def cli(capsys, *args):
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def tiny_train_step(monkeypatch):
    monkeypatch.setattr(train_step, "default_config",
                        lambda kind, quick: (TinyGptConfig(vocab=128, hidden=32, layers=1, heads=2, seq_len=16), 2))


def test_json_document_per_contract(capsys):
    code, out, _ = cli(capsys, "probe", "capacity", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["schema"] == "advisor.probe/1" and doc["probe"] == "capacity" and doc["device"] == "cpu"
    assert set(doc["results"]["usable"]) >= {"best", "median", "unit"} and "peak" in doc


def test_skipped_probe_json(capsys):
    code, out, _ = cli(capsys, "probe", "transfer", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["skipped"].startswith("host-device transfer needs a GPU") and doc["results"] == {}


@pytest.mark.parametrize("args", [
    ["probe"], ["probe", "bogus"], ["probe", "matmul", "--device", "tpu"], ["probe", "matmul", "--device", "cuda:x"],
    ["probe", "train-step", "--precision", "fp3"], ["probe", "--history", "--limit", "0"],
    ["probe", "--history", "--limit", "12345678901234567890123"],
    ["probe", "--history", "nope"], ["probe", "--compare", "1", "2"], ["probe", "--compare", "1", "x"]])
def test_bad_input_exits_2_with_one_line(capsys, args):
    code, out, err = cli(capsys, *args)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_history_lists_runs_and_compares(capsys):
    cli(capsys, "probe", "capacity")
    cli(capsys, "probe", "capacity", "--json")
    code, out, _ = cli(capsys, "probe", "--history", "--json")
    runs = json.loads(out)["runs"]
    assert code == 0 and [r["probe"] for r in runs] == ["capacity", "capacity"]
    assert runs[0]["fingerprint"]["id"] and runs[0]["result"]["schema"] == "advisor.probe/1"
    code, out, _ = cli(capsys, "probe", "--history")
    assert code == 0 and "capacity" in out and "usable" in out
    code, out, _ = cli(capsys, "probe", "--compare", str(runs[1]["id"]), str(runs[0]["id"]))
    assert code == 0 and "usable" in out
    code, out, _ = cli(capsys, "probe", "capacity", "--no-save")
    code, out, _ = cli(capsys, "probe", "--history", "--json")
    assert len(json.loads(out)["runs"]) == 2


def test_calibrate_saves_measured_mfu_and_reset_removes_it(capsys, tiny_train_step):
    code, out, err = cli(capsys, "probe", "train-step", "--quick", "--json", "--calibrate")
    doc = json.loads(out)
    cal = load_calibration()
    assert code == 0 and cal is not None and "calibration saved" in err
    assert cal.mfu == pytest.approx(doc["calibration"]["mfu"]) and cal.device == "cpu"
    assert cal.accelerator_id == "cpu" and cal.applies_to("cpu") and "for the CPU (cpu)" in err
    assert cal.source == "probe:train-step" and cal.measured_at == doc["started_at"]
    code, out, _ = cli(capsys, "probe", "--reset-calibration")
    assert code == 0 and "priors" in out and load_calibration() is None


def test_without_calibrate_nothing_is_saved(capsys, tiny_train_step):
    code, _, err = cli(capsys, "probe", "train-step", "--quick")
    assert code == 0 and load_calibration() is None and "--calibrate" in err


def _plan(capsys, *extra):
    code, out, _ = cli(capsys, "plan", "--model", "gpt2", "--accelerator", "rtx-4090", "--workload", "pretrain",
                       "--tokens", "1e9", "--json", *extra)
    assert code == 0
    doc = json.loads(out)
    return next(o for o in doc["options"] if o["id"] == "home:rtx-4090"), doc


def test_calibrated_mfu_changes_the_plan_and_reset_restores_the_prior(capsys, tiny_train_step):
    prior, doc = _plan(capsys)
    assert doc.get("calibration") is None
    cli(capsys, "probe", "train-step", "--quick", "--calibrate")
    # the probe ran on this CPU; label it as this machine's GPU so the planner applies it to that option, at a
    # fixed utilisation of 0.5 so the figures below do not hang on what a tiny step measured on a busy CPU (only a
    # value equal to the prior's, 0.327, would leave the plan unchanged)
    measured = dataclasses.replace(load_calibration(), accelerator_id="rtx-4090", device="cuda:0", mfu=0.5)
    save_calibration(measured)
    calibrated, doc = _plan(capsys)
    assert calibrated["mfu"] == pytest.approx(measured.mfu) != prior["mfu"]
    assert doc["calibration"]["mfu"] == pytest.approx(measured.mfu)
    cli(capsys, "probe", "--reset-calibration")
    # a measured utilisation is an effective one (its steps held their kernel launches and optimizer step): the
    # plan times the job as with that utilisation given by hand, and without the fitted prior's launch time
    given, _ = _plan(capsys, "--mfu", repr(measured.mfu))
    assert calibrated["hours"] == pytest.approx(given["hours"], rel=1e-9)
    assert calibrated["hours"] < prior["hours"] * prior["mfu"] / measured.mfu
    restored, doc = _plan(capsys)
    assert restored == prior and doc.get("calibration") is None


def test_compare_with_an_id_out_of_range_is_one_line(capsys):
    """Before: 'internal error: OverflowError: Python int too large to convert to SQLite INTEGER'."""
    assert main(["probe", "--compare", "12345678901234567890123", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such run: 12345678901234567890123" in err
    assert main(["probe", "--compare", "-5", "-5"]) == 2
    assert "no such run: -5" in capsys.readouterr().err
