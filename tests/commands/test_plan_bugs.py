"""Bugs seen in ``advisor plan`` (issue: one job model), each pinned by a test."""

from __future__ import annotations

import json

import pytest

from advisor.cli import main


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("extra", [["--workload", "inference"], ["--workload", "lora", "--mfu", "0.9"]])
def test_sensitivity_works_for_inference_and_clamps_the_utilisation(capsys, extra):
    code, out, err = run(capsys, "plan", "--model", "llama-3-8b", *extra, "--accelerator", "h100-sxm",
                         "--sensitivity", "--json")
    assert code == 0, err
    mfu = json.loads(out)["sensitivity"]["mfu"]["values"]
    assert max(mfu) <= 1.0 and min(mfu) > 0
    if "0.9" in extra:  # 0.9 x (0.5, 0.75, 1, 1.25, 1.5), the last two clamped to 1
        assert mfu == pytest.approx([0.45, 0.675, 0.9, 1.0])


@pytest.mark.parametrize("args, field", [
    (["--model", "llama-3-8b", "--workload", "lora", "--tokens", "1e300"], "tokens"),
    (["--params", "0.5"], "params"),
    (["--model", "llama-3-8b", "--tokens", "1e308"], "tokens"),
    (["--model", "llama-3-8b", "--hours", "1e308"], "hours"),
    (["--model", "llama-3-8b", "--set", "pue=1e308"], "pue"),
    (["--model", "llama-3-8b", "--lifetime-years", "1e-308"], "lifetime_years"),
    (["--model", "llama-3-8b", "--workload", "inference", "--batch", "1e300"], "batch"),
    (["--model", "llama-3-8b", "--top", "-1"], "top"),
    (["--model", "llama-3-8b", "--gpus", "12345678901234567890123"], "gpus"),
    (["--model", "llama-3-8b", "--context", "1e400"], "context"),
])
def test_out_of_range_inputs_exit_2_with_one_line_naming_the_field(capsys, args, field):
    code, out, err = run(capsys, "plan", *args, "--json")
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert field in err


def test_a_changed_value_carries_its_own_source(capsys, tmp_path):
    code, out, _ = run(capsys, "plan", "--model", "llama-3-8b", "--accelerator", "rtx-4090", "--set", "pue=1.4",
                       "--explain")
    assert code == 0
    line = next(ln for ln in out.splitlines() if ln.strip().startswith("pue ="))
    assert "[--set pue=1.4; default 1.2: PUE 1.1 to 1.25" in line
    f = tmp_path / "home.toml"
    f.write_text('schema = "advisor.scenario/1"\n[plan]\nmodel = "llama-3-8b"\naccelerator = ["rtx-4090"]\n'
                 '[assumptions]\nelectricity_usd_per_kwh = 0.3\n')
    code, out, _ = run(capsys, "plan", str(f), "--json")
    e = json.loads(out)["assumptions"]["electricity_usd_per_kwh"]
    assert e["value"] == 0.3 and e["origin"] == "scenario file home.toml"
    assert "US residential" not in e["origin"] and "US residential" in e["default_origin"]
    code, out, _ = run(capsys, "plan", str(f), "--report", str(tmp_path / "r.md"))
    assert "scenario file home.toml" in (tmp_path / "r.md").read_text()


def test_catalog_alone_shows_the_user_catalog_place(capsys):
    from advisor.paths import user_catalog_file

    code, out, err = run(capsys, "catalog")
    assert code == 0 and str(user_catalog_file()) in out


def test_a_context_longer_than_the_model_warns_with_its_maximum(capsys):
    code, out, err = run(capsys, "plan", "--model", "llama-3-8b", "--workload", "inference", "--context", "200000",
                         "--accelerator", "h100-sxm", "--json")
    assert code == 0
    assert "context 200,000 is longer than llama-3-8b supports: its maximum is 8,192 tokens" in err
    assert any("8,192" in w for w in json.loads(out)["warnings"])
