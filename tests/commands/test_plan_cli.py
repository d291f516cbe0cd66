"""``advisor plan`` as scripts use it: JSON on stdout, scenario files, exit 2 with one line for bad input."""

from __future__ import annotations

import json
import os
import re

import pytest

from advisor.cli import main
from tests.support_json import without_sources


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_json_contract_fields(capsys):
    code, out, err = run(capsys, "plan", "--model", "llama-3-8b", "--workload", "lora", "--tokens", "2e8", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["schema"] == "advisor.plan/1"
    assert set(doc["memory"]["per_device_bytes"]) >= {"weights", "gradients", "optimizer", "activations",
                                                       "kv_cache", "overhead", "total"}
    opt = doc["options"][0]
    for key in ("id", "kind", "accelerator", "devices", "fits", "mfu", "hours", "device_hours", "energy_kwh",
                "usd_per_device_hour", "cost_usd", "cost_breakdown_usd", "tokens_per_s"):
        assert key in opt
    owned = [o for o in doc["options"] if o["kind"] in ("home", "onprem")]
    assert owned and all("vs" in o["break_even"] and "device_hours" in o["break_even"] for o in owned)


def test_scenario_file_and_flags_give_the_same_json(capsys, tmp_path):
    f = tmp_path / "job.toml"
    f.write_text('schema = "advisor.scenario/1"\n[plan]\nmodel = "llama-3-8b"\nworkload = "lora"\ntokens = 2e8\n'
                 'accelerator = ["rtx-4090", "h100-sxm"]\n[assumptions]\nelectricity_usd_per_kwh = 0.30\n')
    _, from_file, _ = run(capsys, "plan", str(f), "--json")
    _, from_flags, _ = run(capsys, "plan", "--model", "llama-3-8b", "--workload", "lora", "--tokens", "2e8",
                           "--accelerator", "rtx-4090", "--accelerator", "h100-sxm",
                           "--electricity-usd-per-kwh", "0.30", "--json")
    a, b = json.loads(from_file), json.loads(from_flags)
    # Identical but for where the values came from, which each document names (issue: values carry their source).
    electricity = (a["assumptions"]["electricity_usd_per_kwh"], b["assumptions"]["electricity_usd_per_kwh"])
    assert electricity[0]["origin"] == "scenario file job.toml"
    assert electricity[1]["origin"] == "command line (--electricity-usd-per-kwh)"
    assert a["inputs"]["tokens"] == {"value": 2e8, "unit": "tokens", "source": "scenario file job.toml"}
    assert b["inputs"]["tokens"]["source"] == "command line (--tokens)"
    assert without_sources(a) == without_sources(b)
    assert electricity[0]["value"] == 0.30 and electricity[0]["default_value"] == 0.17
    assert "EIA" in electricity[0]["default_origin"]



def test_flags_override_the_scenario(capsys, tmp_path):
    f = tmp_path / "job.toml"
    f.write_text('schema = "advisor.scenario/1"\n[plan]\nmodel = "gpt2"\ngpus = 4\n')
    _, out, _ = run(capsys, "plan", str(f), "--gpus", "2", "--json", "--accelerator", "a100-80gb-sxm")
    assert json.loads(out)["memory"]["devices"] == 2


def test_electricity_price_moves_the_home_cost(capsys):
    costs = []
    for price in ("0.10", "0.40"):
        _, out, _ = run(capsys, "plan", "--model", "gpt2", "--tokens", "1e9", "--accelerator", "rtx-4090",
                        "--electricity-usd-per-kwh", price, "--json")
        home = next(o for o in json.loads(out)["options"] if o["id"] == "home:rtx-4090")
        costs.append(home["cost_breakdown_usd"]["energy"])
    assert costs[1] == pytest.approx(4 * costs[0])


def test_no_spot_removes_spot_options(capsys):
    _, out, _ = run(capsys, "plan", "--model", "gpt2", "--accelerator", "rtx-4090", "--no-spot", "--json")
    assert not any(o["id"].endswith(":spot") for o in json.loads(out)["options"])


def test_set_assumption(capsys):
    _, out, _ = run(capsys, "plan", "--model", "gpt2", "--accelerator", "rtx-4090", "--set", "lifetime_years=5",
                    "--json")
    assert json.loads(out)["assumptions"]["lifetime_years"]["value"] == 5


def test_table_shows_assumptions_with_origin(capsys):
    code, out, _ = run(capsys, "plan", "--model", "llama-3-8b", "--workload", "lora", "--accelerator", "rtx-4090")
    assert code == 0
    assert "Memory per device" in out and "home:rtx-4090" in out
    # by default one line on the assumptions; --explain lists each with its origin
    assert re.search(r"Assumptions: \d+, all at their defaults \(--explain", out)
    assert "electricity_usd_per_kwh" not in out
    code, out, _ = run(capsys, "plan", "--model", "llama-3-8b", "--workload", "lora", "--accelerator", "rtx-4090",
                       "--explain")
    assert "electricity_usd_per_kwh = 0.17 USD/kWh  [" in out
    # the break-even names a rent that can run the job, or says there is none; never "vs -"
    assert "Break-even: home:rtx-4090" in out and "vs -" not in out
    line = next(x for x in out.splitlines() if x.startswith("Break-even: home:rtx-4090"))
    assert " against cloud:" in line or "no cloud option that can run this job" in line


def test_table_shows_use_and_payback_at_the_stated_cadence(capsys):
    args = ("plan", "--model", "llama-3-8b", "--workload", "qlora", "--accelerator", "rtx-4090", "--no-own",
            "--tokens", "1e8")
    code, out, _ = run(capsys, *args, "--jobs-per-month", "3")
    assert code == 0
    assert "Use of home:rtx-4090: busy" in out and "%), 3 jobs a month" in out
    assert "does not pay back within its 3-year life" in out and "jobs a month" in out
    code, out, _ = run(capsys, *args, "--jobs-per-month", "20")
    assert "Break-even: home:rtx-4090 against cloud:" in out and "pays back after" in out


@pytest.mark.parametrize("args", [
    ["--params", "-5"], ["--params", "abc"], ["--params", "7e9", "--gpus", "0"], ["--params", "7e9", "--precision", "fp3"],
    ["--params", "7e9", "--tokens", "nan"], ["--model", "nope"], ["--params", "7e9", "--accelerator", "nope"],
    ["--params", "7e9", "--set", "pue"], ["--params", "7e9", "--set", "pue=-1"], ["--params", "7e9", "--bogus"],
])
def test_bad_input_exits_2_with_one_line(capsys, args):
    code, out, err = run(capsys, "plan", *args, "--json")
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_bad_scenario_files_exit_2(capsys, tmp_path):
    junk = tmp_path / "junk.toml"
    junk.write_bytes(os.urandom(2048))
    wrong = tmp_path / "wrong.toml"
    wrong.write_text('schema = "advisor.scenario/1"\n[plan]\nmodel = 7\n')
    for path in (junk, wrong, tmp_path / "missing.toml"):
        code, out, err = run(capsys, "plan", str(path), "--json")
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1


def test_a_purchase_of_the_cards_you_own_is_marked(capsys):
    code, out, _ = run(capsys, "plan", "--model", "llama-3-8b", "--workload", "lora", "--fake-gpu", "2x4090",
                       "--all")
    assert code == 0
    row = next(line for line in out.splitlines() if line.strip().startswith("home:rtx-4090 "))
    assert "[buying again the cards you own]" in row
    code, out, _ = run(capsys, "plan", "--model", "llama-3-8b", "--workload", "lora", "--fake-gpu", "2x4090", "--json")
    doc = json.loads(out)
    assert [o["id"] for o in doc["options"] if o.get("buys_owned_cards")] == ["home:rtx-4090"]
    assert doc["options"][0]["utilisation"]["stated"] is False  # the owned option: the busy hours behind it


def test_several_notes_are_numbered_and_say_their_shared_clauses_once():
    from types import SimpleNamespace as O

    from advisor.commands.plan import option_notes

    a = "prior kept (consumer parts; no runs); calibrated: x1.08; range x/÷1.19"
    b = "prior kept (QLoRA); calibrated: x1.08; range x/÷1.18"
    marks, lines = option_notes([O(note=a), O(note=b), O(note=None), O(note=a)])
    assert marks == {a: "(*1)", b: "(*2)"}
    assert lines == ["  (*) on every marked option: calibrated: x1.08",
                     "  (*1) prior kept (consumer parts; no runs); range x/÷1.19 (2 option(s) above)",  # "; " in brackets kept
                     "  (*2) prior kept (QLoRA); range x/÷1.18 (1 option(s) above)"]
    assert option_notes([O(note=a), O(note=a)]) == ({a: "(*)"}, [f"  (*) {a} (2 option(s) above)"])
    assert option_notes([O(note="")]) == ({}, [])


def test_each_option_row_carries_the_mark_of_its_own_note(capsys):
    assert main(["plan", "--model", "qwen2.5-32b", "--workload", "qlora", "--fake-gpu", "2x4090"]) == 0
    out = capsys.readouterr().out
    notes = [line.strip() for line in out.splitlines() if line.strip().startswith("(*") and "option(s) above" in line]
    marked = {m.group(1) for m in re.finditer(r"  \(\*(\d+)\)$", out, re.M)}  # the table rows' marks
    assert len(notes) >= 2 and all(n.startswith(f"(*{i})") for i, n in enumerate(notes, 1))
    assert marked == {str(i) for i in range(1, len(notes) + 1)}
