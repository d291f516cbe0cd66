"""Cost assumptions live in the app context: kept across sessions, shown on Compare whoever changes them."""

from __future__ import annotations


def test_assumptions_persist_and_reach_the_planner_without_the_compare_page(make_window):
    first = make_window()
    first.ctx.set_assumptions({"electricity_usd_per_kwh": 0.42})
    first.ctx.settings.sync()
    first.close()
    second = make_window()
    assert second.ctx.assumptions == {"electricity_usd_per_kwh": 0.42}  # before the Compare page is built


def test_compare_page_shows_assumptions_set_elsewhere(make_window):
    window = make_window()
    page = window.page("compare")
    window.ctx.set_assumptions({"pue": 1.5})
    assert page.assumptions.overrides() == {"pue": 1.5}
    window.ctx.set_assumptions({})
    assert page.assumptions.overrides() == {}


def test_plan_form_keeps_every_digit_of_an_odd_token_budget(make_window):
    window = make_window()
    form = window.page("planner").form
    form.set_values({"model": "gpt2", "tokens": 123456789})
    assert form.values()["tokens"] == 123456789
    form.set_values({"model": "gpt2", "tokens": 2e8})
    assert form.values()["tokens"] == 2e8
