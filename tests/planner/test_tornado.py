"""Sensitivity you can see: the tornado of the chosen option, priced by the plan made again at each value."""

from __future__ import annotations

import subprocess
import sys

import pytest

from advisor.catalog import load_catalog
from advisor.planner import PlanRequest, plan, tornado

CAT = load_catalog(use_user_file=False)


@pytest.fixture(scope="module")
def lora():
    request = PlanRequest.from_mapping({"model": "llama-3-8b", "workload": "lora"})
    return request, plan(request, CAT)


def test_tokens_and_mfu_move_the_total_as_worked_out_by_hand(lora):
    request, base = lora
    t = tornado(request, CAT, base=base)
    chosen = base.best()
    assert t.option_id == chosen.id and t.base_cost_usd == pytest.approx(chosen.cost_usd)
    bars = {b.parameter: b for b in t.bars}
    # one device, no fixed cost in the job: the total is the hours times an hourly cost, so a quarter of the
    # tokens costs a quarter and four times the tokens four times (scaled_grid: 0.25x to 4x)
    tok = bars["tokens"]
    assert (tok.low_value, tok.high_value) == pytest.approx((0.25 * base.tokens, 4 * base.tokens))
    assert tok.low_cost_usd == pytest.approx(0.25 * chosen.cost_usd, rel=1e-9)
    assert tok.high_cost_usd == pytest.approx(4 * chosen.cost_usd, rel=1e-9)
    # a given MFU is an effective one (it holds the host launches and optimizer steps the estimate adds to its
    # compute): the time is FLOPs over (peak x MFU), so half the MFU costs three times what 1.5 times it does, and
    # both ends sit inside the estimate's own (half: under 2x, 1.5 times: under 1/1.5)
    mfu = bars["mfu"]
    assert mfu.low_value == pytest.approx(0.5 * chosen.mfu) and mfu.high_value == pytest.approx(1.5 * chosen.mfu)
    assert mfu.low_cost_usd == pytest.approx(3 * mfu.high_cost_usd, rel=1e-6)
    assert chosen.cost_usd < mfu.low_cost_usd <= 2 * chosen.cost_usd * (1 + 1e-9)
    assert mfu.high_cost_usd <= chosen.cost_usd / 1.5 * (1 + 1e-9)
    swings = [b.swing_usd for b in t.bars]
    assert swings == sorted(swings, reverse=True) and t.bars[0].parameter == "tokens"


def test_the_kind_of_the_chosen_option_picks_its_assumptions(lora):
    request, base = lora
    t = tornado(request, CAT, base=base)
    names = [b.parameter for b in t.bars]
    if base.best().kind == "onprem":
        assert "onprem_utilisation" in names and "electricity_usd_per_kwh" not in names
    home = tornado(request, CAT, base=base, option_id=base.best("home").id)
    names = [b.parameter for b in home.bars]
    assert {"electricity_usd_per_kwh", "utilisation", "lifetime_years"} <= set(names)
    util = next(b for b in home.bars if b.parameter == "utilisation")
    assert (util.low_value, util.high_value) == (0.25, 1.0)  # a quarter to all of the hours in use, at most 1
    # depreciation is spread over the hours in use: a quarter of the use, more cost per job
    assert util.low_cost_usd > util.high_cost_usd


def test_cli_sensitivity_prints_the_tornado_table():
    out = subprocess.run([sys.executable, "-m", "advisor", "plan", "--model", "llama-3-8b", "--workload", "lora",
                          "--sensitivity", "--top", "3"], capture_output=True, text=True, timeout=120, check=True).stdout
    table = out[out.index("Sensitivity of "):]
    lines = table.splitlines()
    assert "input" in lines[1] and "total at low" in lines[1] and "swing" in lines[1]
    # the default 1e7 fine-tuning tokens (resources/defaults.toml), a quarter to four times
    assert lines[2].split()[0] == "tokens" and "2.5M" in lines[2] and "40M" in lines[2]
    plain = subprocess.run([sys.executable, "-m", "advisor", "plan", "--model", "llama-3-8b", "--workload", "lora",
                            "--top", "3"], capture_output=True, text=True, timeout=120, check=True).stdout
    assert "Sensitivity of" not in plain
