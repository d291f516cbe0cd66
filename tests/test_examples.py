"""The example scenarios in docs/examples plan without error and give the same figures everywhere."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.cli import main

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "docs" / "examples").glob("*.toml"))


def test_there_are_examples():
    assert len(EXAMPLES) >= 3


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_plans(path, capsys):
    assert main(["plan", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert any(o["fits"] for o in doc["options"])
    assert all(o["cost_usd"] > 0 and o["hours"] > 0 for o in doc["options"])


SERVING = ('schema = "advisor.scenario/1"\n[plan]\nmodel = "llama-3-8b"\nworkload = "inference"\ntokens = 1e9\n'
           'batch = 8\naccelerator = ["h100-sxm", "rtx-4090"]\n')


NAMES = [p.stem for p in EXAMPLES] + ["serving-with-a-token-budget"]


def _scenario_path(name: str, folder: Path) -> Path:
    path = next((p for p in EXAMPLES if p.stem == name), None)
    if path is None:
        path = folder / f"{name}.toml"
        path.write_text(SERVING)
    return path


@pytest.fixture(scope="module")
def app_plans(tmp_path_factory):
    """``advisor gui --open FILE --screenshot DIR`` for every scenario (all at once), name -> DIR/plan.json."""
    root = tmp_path_factory.mktemp("app")
    runs = {}
    for name in NAMES:
        out, home = root / name, root / f"{name}-home"
        env = dict(os.environ, ADVISOR_HOME=str(home), QT_QPA_PLATFORM="offscreen")
        cmd = [sys.executable, "-m", "advisor", "gui", "--fake-gpu", "2x4090", "--open",
               str(_scenario_path(name, root)), "--screenshot", str(out)]
        runs[name] = (out, subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    plans = {}
    for name, (out, proc) in runs.items():
        stdout, stderr = proc.communicate(timeout=180)
        assert proc.returncode == 0, stderr[-2000:]
        assert str(out / "plan.json") in stdout and (out / "planner.png").stat().st_size > 0
        plans[name] = json.loads((out / "plan.json").read_text(encoding="utf-8"))
    return plans


@pytest.mark.parametrize("name", NAMES)
def test_cli_app_compare_dialog_and_reports_give_the_same_totals(name, capsys, tmp_path, app_plans):
    """One pricing path: the CLI, the app (--open ... --screenshot: plan.json), the compare dialog's summary and
    every report format show the same total cost and time for every option."""
    from advisor.catalog import load_catalog
    from advisor.gui.widgets.scenario_compare import summarize_scenario
    from advisor.planner.machine import local_machine
    from advisor.report import render_report

    path = _scenario_path(name, tmp_path)
    assert main(["plan", str(path), "--json", "--fake-gpu", "2x4090"]) == 0  # the machine the app runs on
    doc = json.loads(capsys.readouterr().out)
    app = app_plans[name]
    assert app["schema"] == doc["schema"] == "advisor.plan/1"
    figures = [(o["id"], o["cost_usd"], o["hours"]) for o in doc["options"]]
    assert [(o["id"], o["cost_usd"], o["hours"]) for o in app["options"]] == figures
    assert (app["tokens"], app["flops_total"]) == (doc["tokens"], doc["flops_total"])
    catalog = load_catalog()
    machine = local_machine("2x4090", catalog)
    summary = summarize_scenario(path, catalog, owned=machine.owned, host=machine.host)
    assert summary.error is None
    best = next(o for o in doc["options"] if o["fits"])
    assert (summary.option_id, summary.cost_usd, summary.hours) == (best["id"], best["cost_usd"], best["hours"])
    assert [o["cost_usd"] for o in summary.doc["options"]] == [o["cost_usd"] for o in doc["options"]]
    if name.startswith("serving"):  # the token budget counts: 1e9 tokens, ten times the default
        assert doc["tokens"] == 1e9 and doc["flops_total"] == pytest.approx(2 * 8.030261248e9 * 1e9)
    csv_text = render_report([doc], "csv")
    for o in doc["options"][:5]:
        assert f"{o['id']}," in csv_text and repr(o["cost_usd"])[:8] in csv_text
    from advisor.report.content import money

    for fmt in ("md", "html"):
        text = render_report([app], fmt)  # the app's document reports the CLI's figures
        assert money(best["cost_usd"]) in text, fmt


@pytest.mark.parametrize("content, expected", [
    ('schema = "advisor.scenario/9"\n[plan]\nmodel = "llama-3-8b"\n', "newer advisor"),
    ('schema = "advisor.scenario/1"\n[plan]\nmodel = "llama-3-8b"\ngpus = -3\n', "plan.gpus"),
    ('schema = "advisor.scenario/1"\n[plan]\nworkload = "lora"\n', "plan.model"),
])
def test_gui_open_refuses_a_bad_scenario_in_one_line_before_qt(content, expected, tmp_path, capsys):
    path = tmp_path / "bad.toml"
    path.write_text(content)
    assert main(["gui", "--open", str(path), "--screenshot", str(tmp_path / "shots")]) == 2
    err = capsys.readouterr().err.strip()
    assert expected in err and "\n" not in err and not (tmp_path / "shots").exists()
