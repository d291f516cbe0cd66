"""Scenario files: round trip, migration, bad files with one-line messages, atomic saves."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.store import scenario as sc
from advisor.store.scenario import Scenario, ScenarioError, load_scenario, save_scenario
from tests.support_json import without_sources

GOOD = Scenario(plan={"model": "llama-3-8b", "workload": "lora", "tokens": 2e8, "gpus": 8,
                      "accelerator": ["h100-sxm", "a100-80gb-sxm"], "mfu": 0.4},
                assumptions={"electricity_usd_per_kwh": 0.3,
                             "utilisation": {"value": 0.5, "unit": "", "origin": "user"}},
                notes={"text": "team A"})


def test_save_and_reopen_gives_the_same_scenario(tmp_path):
    path = save_scenario(tmp_path / "a.toml", GOOD)
    assert load_scenario(path) == GOOD
    assert 'schema = "advisor.scenario/1"' in path.read_text()


def test_unknown_tables_survive_a_save(tmp_path):
    path = tmp_path / "a.toml"
    path.write_text('schema = "advisor.scenario/1"\n[plan]\ngpus = 2\n[gui]\nwindow = "wide"\n')
    save_scenario(path, load_scenario(path))
    assert load_scenario(path).extra == {"gui": {"window": "wide"}}


def test_legacy_schema_is_migrated(tmp_path):
    path = tmp_path / "old.toml"
    path.write_text('schema = "advisor.scenario/0"\n[job]\nn_gpus = 4\nsequence_length = 4096\n'
                    'accelerator = "rtx-4090"\n')
    s = load_scenario(path)
    assert s.plan == {"gpus": 4, "seq_len": 4096, "accelerator": ["rtx-4090"]}
    assert s.schema == sc.SCHEMA



def test_old_files_are_migrated_in_memory_only_and_plan_as_before(tmp_path, capsys):
    from advisor.cli import main

    path = tmp_path / "old.toml"
    path.write_text('schema = "advisor.scenario/0"\n[job]\nmodel = "gpt2"\nworkload = "lora"\nn_gpus = 2\n'
                    'accelerator = "rtx-4090"\n')
    before = path.read_bytes()
    assert main(["plan", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["memory"]["devices"] == 2 and {o["accelerator"] for o in doc["options"]} == {"rtx-4090"}
    assert path.read_bytes() == before  # never rewritten unasked


def test_a_newer_file_is_refused_clearly(tmp_path):
    path = tmp_path / "new.toml"
    path.write_text('schema = "advisor.scenario/7"\n[plan]\nmodel = "gpt2"\n')
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert "written by a newer advisor (schema 7); upgrade to open it" in str(info.value)
    assert "corrupt" not in str(info.value)


def test_open_and_save_without_changes_gives_the_same_plan(tmp_path, capsys):
    from advisor.cli import main

    first = tmp_path / "serve.toml"
    first.write_text('schema = "advisor.scenario/1"\n[plan]\nmodel = "llama-3-8b"\nworkload = "inference"\n'
                     'tokens = 1e9\nbatch = 8\naccelerator = ["h100-sxm"]\n[assumptions]\npue = 1.3\n'
                     '[notes]\nwhy = "a serving budget"\n')
    assert main(["plan", str(first), "--save-scenario", str(tmp_path / "again.toml"), "--json"]) == 0
    a = json.loads(capsys.readouterr().out)
    again = load_scenario(tmp_path / "again.toml")
    assert again.plan == {"model": "llama-3-8b", "workload": "inference", "tokens": 1e9, "batch": 8,
                          "accelerator": ["h100-sxm"]}
    assert again.assumptions == {"pue": 1.3} and again.notes == {"why": "a serving budget"}
    assert main(["plan", str(tmp_path / "again.toml"), "--json"]) == 0
    b = json.loads(capsys.readouterr().out)
    assert without_sources(a) == without_sources(b)


@pytest.mark.parametrize("content, field", [
    (random.Random(64).randbytes(64) + b"\x00", "binary"),  # seeded: the same test on every xdist worker
    (b"\xff\xfe\xfa not utf8", "UTF-8"),
    (b"schema = \"advisor.scenario/1\"\n[plan\n", "TOML"),
    (b"[plan]\ngpus = 1\n", "schema"),
    (b"schema = \"advisor.plan/1\"\n[plan]\n", "schema"),
    (b"schema = \"advisor.scenario/9\"\n[plan]\n", "newer"),
    (b"schema = \"advisor.scenario/1\"\nplan = 3\n", "plan"),
    (b"schema = \"advisor.scenario/1\"\n", "plan"),
    (b"schema = \"advisor.scenario/1\"\n[plan]\ngpuz = 1\n", "plan.gpuz"),
    (b"schema = \"advisor.scenario/1\"\n[plan]\ngpus = \"eight\"\n", "plan.gpus"),
    (b"schema = \"advisor.scenario/1\"\n[plan]\ngpus = 2.5\n", "plan.gpus"),
    (b"schema = \"advisor.scenario/1\"\n[plan]\nmfu = true\n", "plan.mfu"),
    (b"schema = \"advisor.scenario/1\"\n[plan]\nspot_offers = 1\n", "plan.spot_offers"),
    (b"schema = \"advisor.scenario/1\"\n[plan]\ntokens = nan\n", "plan.tokens"),
    (b"schema = \"advisor.scenario/1\"\n[plan]\naccelerator = [1]\n", "plan.accelerator"),
    (b"schema = \"advisor.scenario/1\"\n[plan]\n[assumptions]\nx = [1]\n", "assumptions.x"),
    (b"schema = \"advisor.scenario/1\"\n[plan]\nmodel = \"llama", "TOML"),  # truncated mid-write
])
def test_bad_files_give_one_line_naming_the_field(tmp_path, content, field):
    path = tmp_path / "bad.toml"
    path.write_bytes(content)
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    msg = str(info.value)
    assert "\n" not in msg and str(path) in msg and field in msg
    assert path.read_bytes() == content  # nothing lost


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_never_raise_anything_but_scenario_error(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("r") / "r.toml"
    path.write_bytes(data)
    try:
        load_scenario(path)
    except ScenarioError as exc:
        assert "\n" not in str(exc)


def test_invalid_scenario_is_not_written(tmp_path):
    path = save_scenario(tmp_path / "a.toml", GOOD)
    before = path.read_bytes()
    with pytest.raises(ScenarioError):
        save_scenario(path, Scenario(plan={"gpus": "many"}))
    assert path.read_bytes() == before


def test_failed_replace_keeps_the_old_file(tmp_path, monkeypatch):
    path = save_scenario(tmp_path / "a.toml", GOOD)
    before = path.read_bytes()

    def boom(*_a, **_k):
        raise OSError("disk gone")

    with monkeypatch.context() as m:
        m.setattr(os, "replace", boom)
        with pytest.raises(OSError):
            save_scenario(path, Scenario(plan={"gpus": 1}))
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["a.toml"]  # no temp file left behind


def test_process_killed_during_save_leaves_old_file_intact(tmp_path):
    """A child process starts a save, is SIGKILLed while writing, and the old file still loads."""
    path = save_scenario(tmp_path / "a.toml", GOOD)
    before = path.read_bytes()
    script = textwrap.dedent(f"""
        import os, sys, time
        import advisor.store.atomic as atomic
        from advisor.store.scenario import Scenario, save_scenario
        real_fsync = os.fsync
        def slow_fsync(fd):
            print("writing", flush=True)
            time.sleep(30)
        atomic.os.fsync = slow_fsync
        save_scenario({str(path)!r}, Scenario(plan={{"gpus": 1}}, notes={{"big": "x" * 100000}}))
    """)
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "writing"
        child.kill()
    finally:
        child.wait(timeout=10)
    assert path.read_bytes() == before
    assert load_scenario(path) == GOOD


def test_plan_keys_are_the_job_schema():
    """Every field of the job schema is a [plan] key or a table of the file (only ``sources`` is not saved)."""
    from advisor.job import JOB_FIELDS

    assert set(sc.PLAN_KEYS) | set(sc.TABLE_KEYS) | {"sources"} == set(JOB_FIELDS)
    assert sc.TABLE_KEYS == ("assumptions", "notes")
    assert sc.PLAN_KEYS["seq_len"] == "int" and sc.PLAN_KEYS["accelerator"] == "ids"


def _plan_json(capsys, argv):
    import json

    from advisor.cli import main

    capsys.readouterr()
    assert main(["plan", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_scenario_saved_and_reopened_gives_the_same_plan_json(tmp_path, capsys):
    pytest.importorskip("advisor.planner")
    flags = ["--model", "llama-3-8b", "--workload", "lora", "--tokens", "2e8", "--gpus", "2",
             "--accelerator", "rtx-4090", "--accelerator", "h100-sxm", "--seq-len", "4096",
             "--electricity-usd-per-kwh", "0.3"]
    by_flags = _plan_json(capsys, flags)
    scenario = Scenario(plan={"model": "llama-3-8b", "workload": "lora", "tokens": 2e8, "gpus": 2,
                              "accelerator": ["rtx-4090", "h100-sxm"], "seq_len": 4096},
                        assumptions={"electricity_usd_per_kwh": 0.3}, notes={"why": "compare a home rig"})
    path = save_scenario(tmp_path / "a.toml", scenario)
    by_file = _plan_json(capsys, [str(path)])
    assert without_sources(by_file) == without_sources(by_flags)
    resaved = save_scenario(tmp_path / "b.toml", load_scenario(path))
    assert resaved.read_bytes() == path.read_bytes()
    assert without_sources(_plan_json(capsys, [str(resaved)])) == without_sources(by_flags)


def test_recent_scenarios_newest_first_and_broken_list_kept_aside(tmp_path):
    files = [save_scenario(tmp_path / f"s{i}.toml", GOOD) for i in range(12)]
    for f in files:
        sc.add_recent_scenario(f)
    sc.add_recent_scenario(files[3])
    recent = sc.recent_scenarios()
    assert recent[0] == files[3].resolve() and len(recent) == sc.RECENT_MAX
    files[11].unlink()
    assert files[11].resolve() not in sc.recent_scenarios()
    from advisor.store import recent

    recent._recent_path().write_bytes(b"\xff garbage")
    assert sc.recent_scenarios() == []
    assert any(".broken-" in p.name for p in recent._recent_path().parent.iterdir())


def test_several_scenarios_give_a_plan_set(tmp_path, capsys):
    pytest.importorskip("advisor.planner")
    a = save_scenario(tmp_path / "a.toml", Scenario(plan={"model": "llama-3-8b", "workload": "lora",
                                                          "tokens": 1e8, "accelerator": ["rtx-4090"]}))
    b = save_scenario(tmp_path / "b.toml", Scenario(plan={"model": "llama-3-8b", "workload": "inference",
                                                          "accelerator": ["h100-sxm"]}))
    both = _plan_json(capsys, [str(a), str(b)])
    assert both["schema"] == "advisor.plan-set/1"
    assert both["plans"] == [_plan_json(capsys, [str(a)]), _plan_json(capsys, [str(b)])]


def test_cli_rejects_a_bad_scenario_with_one_line(tmp_path, capsys):
    from advisor.cli import main

    path = tmp_path / "bad.toml"
    path.write_bytes(os.urandom(300) + b"\x00")
    assert main(["plan", str(path), "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and "bad.toml" in captured.err
