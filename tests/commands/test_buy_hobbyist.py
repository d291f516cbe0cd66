"""``advisor buy`` answers a hobbyist (issue 34, item 4): a card and the use from which it pays back, a laptop
owner's basic PC, cards added to a desktop by its supply and slots, cards off the jobs' stack ranked after, used
prices with date and source, break-even past the life in words, and a headline that agrees with the table."""

from __future__ import annotations

import json
import re

import pytest

from tests.commands.test_buy_cli import run


def _doc(capsys, *args):
    code, out, err = run(capsys, "buy", *args, "--json")
    assert code == 0, err
    return json.loads(out)


def test_2500_names_a_card_and_the_use_from_which_it_pays_back(capsys):
    code, out, err = run(capsys, "buy", "--budget", "2500", "--fake-gpu", "no-driver")
    assert code == 0, err
    head = out.splitlines()[0]
    m = re.search(r"; 1 x (.+?) \((.+?)\), \$[\d,]+, would pay back within its 3-year life from ([\d.,]+) runs/mo "
                  r"\(([\d.]+) h/day\)", head)
    assert head.startswith("Renting is cheaper at 4 runs of each job a month") and m, head
    card = m.group(1)
    # the card named is a row of the table with the same use in its "pays back from" column
    row = next(line for line in out.splitlines() if card in line and f"{m.group(3)} runs/mo" in line)
    assert f"({m.group(4)} h/day" in row
    assert "mo > life" not in out and "never within its 3-year life" in out
    doc = _doc(capsys, "--budget", "2500", "--fake-gpu", "no-driver")
    named = [o for o in doc["options"] if o["hardware"] == f"1 x {card}" and o["price"]["basis"] == m.group(2)]
    assert named and named[0]["stack_ok"] and all(named[0]["fits"].values())
    assert doc["options"][0]["verdict"] == "keep renting" and doc["headline"] == head
    # no purchase on the jobs' stack pays back at a lower use than the one named, among those that run every job
    lower = [o for o in doc["options"] if o["stack_ok"] and all(o["fits"].values()) and o["kind"] != "owned"
             and o["pays_back_from_jobs_per_month"] is not None
             and o["pays_back_from_jobs_per_month"] < named[0]["pays_back_from_jobs_per_month"] - 1e-9]
    assert lower == []


def test_at_the_use_named_the_card_pays_back(capsys):
    doc = _doc(capsys, "--budget", "2500", "--fake-gpu", "no-driver")
    cands = [o for o in doc["options"] if o["stack_ok"] and all(o["fits"].values()) and o["kind"] != "owned"
             and o["pays_back_from_jobs_per_month"] is not None]
    o = min(cands, key=lambda o: (o["pays_back_from_jobs_per_month"], o["usd_per_job"], o["id"]))
    use = o["pays_back_from_jobs_per_month"]
    hours = sum(h for h in o["hours_per_job"].values() if h) * use / (365 / 12)
    args = ["--budget", "2500", "--fake-gpu", "no-driver", "--top", "1000", "--jobs-per-month", f"{use * 1.01:.6f}"]
    if hours > 8:
        args += ["--set", "hours_per_day=24"]
    there = next(x for x in _doc(capsys, *args)["options"] if x["id"] == o["id"])
    assert there["pays_back_within_life"] and there["verdict"] == "buy"
    assert there["break_even_months"] == pytest.approx(36, rel=0.02)


def test_a_laptop_owner_with_1500_gets_a_used_3090_in_a_basic_pc(capsys):
    doc = _doc(capsys, "--budget", "1500", "--fake-gpu", "laptop-4060", "--top", "1000")
    assert doc["base"]["kind"] == "laptop" and doc["base"]["origin"] == "detected"
    rows = {o["id"]: o for o in doc["options"]}
    basic = rows["basic-used:1xrtx-3090"]
    assert basic["upfront_usd"] == 650 + 500 and basic["hardware"] == "1 x GeForce RTX 3090 in a basic PC"
    assert all(basic["fits"].values())  # 24 GB runs the QLoRA the laptop's 8 GB cannot
    assert not any(o["kind"] == "upgrade" for o in doc["options"])
    assert doc["used_prices"] == [{"accelerator": "rtx-3090", "price_usd": 650.0, "price_date": "2026",
                                   "condition": "used", "source": basic["price"]["source"]}]


def test_used_prices_are_shown_with_date_and_source(capsys):
    code, out, _ = run(capsys, "buy", "--budget", "1500", "--fake-gpu", "laptop-4060")
    assert code == 0
    line = next(line for line in out.splitlines() if line.strip().startswith("rtx-3090: $650 used, 2026,"))
    assert "local-llm.net/blog/rtx-3090-best-value-2026" in line


def test_cards_go_into_a_desktop_by_its_supply_and_free_slots(capsys):
    # A used RTX 3090 (350 W) in a desktop with a 550 W supply and one free slot: (350 + 150) x 1.25 = 625 W is
    # more than 550 W, so a new supply ($100) is counted; one slot, so one card.
    doc = _doc(capsys, "--budget", "2500", "--fake-gpu", "no-driver", "--base", "desktop", "--psu-w", "550",
               "--free-slots", "1", "--top", "1000")
    assert doc["base"] == {"kind": "desktop", "psu_w": 550.0, "free_slots": 1, "origin": "--base",
                           "text": "a desktop (550 W power supply, 1 free x16 slot)"}
    rows = {o["id"]: o for o in doc["options"]}
    add = rows["add-used:1xrtx-3090"]
    assert add["upfront_usd"] == 650 + 100 and add["hardware"] == "add 1 x GeForce RTX 3090 to your desktop"
    assert "short" in add["note"]
    assert not any(i.startswith("add-") and not i.split(":")[1].startswith("1x") for i in rows)
    roomy = _doc(capsys, "--budget", "2500", "--fake-gpu", "no-driver", "--base", "desktop", "--psu-w", "850",
                 "--top", "1000")
    assert {o["id"]: o for o in roomy["options"]}["add-used:1xrtx-3090"]["upfront_usd"] == 650


def test_cards_off_the_jobs_stack_rank_after_and_say_which(capsys):
    doc = _doc(capsys, "--budget", "2500", "--fake-gpu", "no-driver", "--top", "1000")
    ok = [o["stack_ok"] for o in doc["options"]]
    assert ok == sorted(ok, reverse=True)  # every row on the jobs' stack before any off it
    arc = next(o for o in doc["options"] if o["accelerator"] == "arc-b580")
    assert not arc["stack_ok"] and arc["stack_notes"] == ["qlora llama-3.1-8b needs PyTorch XPU or llama.cpp"]
    code, out, _ = run(capsys, "buy", "--budget", "2500", "--fake-gpu", "no-driver", "--top", "1000")
    assert "Arc B580 in a basic PC: qlora llama-3.1-8b needs PyTorch XPU" in out
    assert re.search(r"Arc B580 in a basic PC .* \(other stack\)", out)


@pytest.mark.parametrize("budget", ["300000", "2500", "20000"])
def test_the_headline_agrees_with_the_first_row(capsys, budget):
    doc = _doc(capsys, "--budget", budget, "--fake-gpu", "no-driver")
    first, head = doc["options"][0], doc["headline"]
    if first["verdict"] == "buy":
        assert head.startswith(f"Buy {first['hardware']} ({first['price']['basis']})")
    else:
        assert head.startswith("Renting is cheaper") and first["verdict"] in ("keep renting", "overbooked")
        assert not any(o["verdict"] == "buy" and o["stack_ok"] for o in doc["options"])


@pytest.mark.parametrize("args", [
    ("--base", "laptop", "--psu-w", "650"),
    ("--base", "desktop", "--free-slots", "1.5"),
    ("--base", "desktop", "--psu-w", "20"),
    ("--base", "tower"),
])
def test_a_bad_base_is_one_line(capsys, args):
    code, out, err = run(capsys, "buy", "--budget", "1000", *args, "--fake-gpu", "no-driver")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "Traceback" not in err
