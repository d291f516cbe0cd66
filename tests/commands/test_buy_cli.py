"""``advisor buy``: owned-hardware upgrades and new machines within a budget against renting, and bad input."""

from __future__ import annotations

import json

import pytest

from advisor.cli import main

LORA = """schema = "advisor.scenario/1"
[plan]
model = "llama-3.2-3b"
workload = "lora"
tokens = 1e8
"""


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def lora(tmp_path):
    path = tmp_path / "lora.toml"
    path.write_text(LORA)
    return path


def test_budget_under_two_4090s_lists_upgrades_new_machines_and_says_when_renting_wins(capsys, lora):
    code, out, err = run(capsys, "buy", "--budget", "2500", "--job", str(lora), "--jobs-per-month", "4", "--json",
                         "--fake-gpu", "2x4090")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["schema"] == "advisor.buy/1" and doc["budget_usd"] == 2500 and doc["jobs_per_month"] == 4
    assert doc["owned"] == [{"accelerator": "rtx-4090", "name": "GeForce RTX 4090", "devices": 2}]
    rows = {o["id"]: o for o in doc["options"]}
    kinds = {o["kind"] for o in doc["options"]}
    assert {"owned", "upgrade"} <= kinds and kinds & {"new", "street"}  # upgrades and new machines
    add = rows["add-street:1xrtx-4090"]
    assert add["hardware"].startswith("add 1 x GeForce RTX 4090 to this machine's 2") and add["devices"] == 3
    assert add["group"] == "upgrade" and "power supply" in add["note"]
    assert "in one machine" in doc["owned_combine"]
    assert add["upfront_usd"] == 1325 + 500  # the catalog's street price and the rig's extra per GPU
    rent = doc["rent"]
    assert rent["jobs"]["lora"]["option"].startswith("cloud:")
    life = doc["assumptions"]["lifetime_years"] * 12
    keep = 1 - doc["assumptions"]["resale_fraction"]
    for o in doc["options"]:
        assert set(o) >= {"hardware", "upfront_usd", "monthly_usd", "hours_per_job", "fits", "break_even_months"}
        assert o["upfront_usd"] <= 2500 and o["fits"] == {"lora": True}
        # the row's figures hang together: cost per job and break-even from upfront, power, idle power and rent
        assert o["usd_per_job"] == pytest.approx((o["holding_monthly_usd"] + o["monthly_usd"]) / 4)
        idle = o["holding_monthly_usd"] - o["upfront_usd"] * keep / life  # a rig's holding: depreciation + idle
        overbooked = o["busy_hours_per_month"] > o["available_hours_per_month"] * (1 + 1e-9)
        if o["kind"] in ("owned", "upgrade", "apple") or overbooked:
            assert idle == pytest.approx(0, abs=1e-9)  # sunk, a machine that idles already, a Mac, or never idle
        else:
            assert idle > 0
        saving = rent["monthly_usd"] - o["monthly_usd"] - o["rent_monthly_usd"] - idle
        if o["kind"] == "owned":
            assert o["break_even_months"] == 0
        elif saving > 0:
            assert o["break_even_months"] == pytest.approx(o["upfront_usd"] / saving)
        else:
            assert o["break_even_months"] is None
        assert o["verdict"] == ("keep renting" if o["usd_per_job"] >= rent["usd_per_job"] else
                                "overbooked" if overbooked else
                                "use what you own" if o["kind"] == "owned" else "buy")
    assert any(o["verdict"] == "keep renting" for o in doc["options"])
    assert doc["options"][0]["id"] == "owned:2xrtx-4090"  # the cards one has cost only their power
    assert doc["options"][0]["break_even_months"] == 0


def test_hours_per_job_are_the_planners(capsys, lora):
    code, out, _ = run(capsys, "buy", "--budget", "0", "--job", str(lora), "--json", "--fake-gpu", "2x4090")
    assert code == 0
    (owned,) = json.loads(out)["options"]  # a zero budget leaves the owned hardware alone
    code, out, _ = run(capsys, "plan", str(lora), "--fake-gpu", "2x4090", "--json")
    hours = next(o["hours"] for o in json.loads(out)["options"] if o["kind"] == "owned")
    assert owned["hours_per_job"]["lora"] == pytest.approx(hours)


def test_table_with_default_jobs_and_no_gpu(capsys):
    code, out, err = run(capsys, "buy", "--budget", "2500", "--fake-gpu", "no-driver")
    assert code == 0, err
    assert "qlora llama-3.1-8b" in out and "inference llama-3.1-8b" in out and "Rent (cheapest" in out
    assert "Owned: none" in out and "(owned)" not in out


def test_preset_jobs_and_own(capsys):
    code, out, err = run(capsys, "buy", "--budget", "3000", "--job", "qwen2.5-7b:inference", "--own", "1xrtx-3090",
                         "--fake-gpu", "no-driver", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert [j["name"] for j in doc["jobs"]] == ["qwen2.5-7b:inference"]
    # "add a second RTX 3090", at the used price of resources/used_prices.csv (the catalog's street price is the
    # same figure, so the used row with its date and source replaces it)
    add = next(o for o in doc["options"] if o["id"] == "add-used:1xrtx-3090")
    assert add["upfront_usd"] == 650 + 500 and add["price"]["basis"] == "used 2026"
    assert add["price"]["source"].startswith("local-llm.net/blog/rtx-3090-best-value-2026")


@pytest.mark.parametrize("args", [
    ("--budget", "-5"),
    ("--budget", "abc"),
    ("--budget", "100", "--job", "missing.toml"),
    ("--budget", "100", "--jobs-per-month", "0"),
    ("--budget", "100", "--own", "2xno-such-gpu"),
    ("--budget", "100", "--set", "lifetime_years=-1"),
    ("--budget", "100", "--job", "no-such-model:lora"),
])
def test_bad_input_exits_2_with_one_line(capsys, args):
    code, out, err = run(capsys, "buy", *args, "--fake-gpu", "no-driver")
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("error:") and "Traceback" not in err


def test_a_bad_scenario_file_is_one_line(capsys, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b"\x00\x01 not toml")
    code, out, err = run(capsys, "buy", "--budget", "100", "--job", str(bad), "--fake-gpu", "no-driver")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "bad.toml" in err


def test_a_model_spec_job_from_the_hf_cache_and_a_missing_one(capsys, tmp_path, monkeypatch):
    from tests.models import configs
    from tests.models.conftest import add_to_hf_cache, config_bytes

    hub = tmp_path / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    add_to_hf_cache(hub, "Qwen/Qwen2.5-7B", {"config.json": config_bytes(configs.QWEN25_7B)})
    code, out, err = run(capsys, "buy", "--budget", "2500", "--job", "hf:Qwen/Qwen2.5-7B:inference", "--json",
                         "--fake-gpu", "2x4090")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["jobs"][0]["model"] == "hf:Qwen/Qwen2.5-7B" and doc["options"][0]["fits"] == {
        "hf:Qwen/Qwen2.5-7B:inference": True}
    code, out, err = run(capsys, "buy", "--budget", "2500", "--job", "hf:Qwen/Missing:inference",
                         "--fake-gpu", "no-driver")
    assert code == 2 and "hf:Qwen/Missing:inference" in err and "--download" in err
    assert len(err.strip().splitlines()) == 1
