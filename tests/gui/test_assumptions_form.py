"""The assumptions form is generated from the declarations: every assumption in its group with its unit,
default and source; a reset; changed values marked; the spot box means what --spot means."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QCheckBox

from advisor.cost.assumptions import ASSUMPTION_GROUPS, CostAssumptions, assumption_group
from advisor.gui.widgets.assumptions_form import AssumptionsForm, rows_text


@pytest.fixture
def form(qtbot):
    f = AssumptionsForm()
    qtbot.addWidget(f)
    return f


def test_every_assumption_appears_with_its_unit_and_default_source(form):
    described = CostAssumptions().describe()
    rows = rows_text(form)
    assert set(rows) == set(described)  # every declared assumption, the flattened reserved discounts too
    for name, info in described.items():
        _label, unit, source = rows[name]
        assert unit == info["unit"] and unit, name
        assert source == f"default: {info['origin']}"
        assert form.widgets[name].accessibleName()
    # the groups in their order, each assumption under its own
    assert list(form.headers) == [g for g in ASSUMPTION_GROUPS if any(assumption_group(n) == g for n in described)]
    assert assumption_group("egress_usd") == "serving" and "serving" in form.headers


def test_a_change_is_marked_has_a_source_and_resets(form):
    spin = form.widgets["pue"]
    spin.setValue(1.5)
    assert form.overrides() == {"pue": 1.5}
    assert form.labels["pue"].text().endswith("•") and form.resets["pue"].isEnabled()
    assert form.sources["pue"].toolTip() == "changed from 1.2 · app setting (Compare page assumptions)"
    form.resets["pue"].click()
    assert form.overrides() == {} and not form.resets["pue"].isEnabled()
    assert not form.labels["pue"].text().endswith("•")


def test_values_from_a_scenario_keep_their_source_until_edited(form):
    form.set_overrides({"electricity_usd_per_kwh": 0.3, "reserved_years": 1}, {"electricity_usd_per_kwh":
                       "scenario file home.toml", "reserved_years": "scenario file home.toml"})
    assert form.overrides() == {"electricity_usd_per_kwh": 0.3, "reserved_years": 1}
    assert form.sources["electricity_usd_per_kwh"].toolTip() == "changed from 0.17 · scenario file home.toml"
    form.widgets["electricity_usd_per_kwh"].setValue(0.25)
    assert form.source_of("electricity_usd_per_kwh") == "app setting (Compare page assumptions)"
    assert form.source_of("reserved_years") == "scenario file home.toml"


def test_the_spot_box_is_the_cli_spot_flag(form):
    box = form.widgets["spot"]
    assert isinstance(box, QCheckBox) and "--spot" in box.text() and "Rank by spot prices" in box.text()
    assert "--spot" in box.toolTip()
    box.setChecked(True)
    assert form.overrides() == {"spot": True}
    # the same override the CLI's --spot gives (advisor plan --spot sets the assumption 'spot')
    assert CostAssumptions().with_overrides(**form.overrides()).spot is True


def test_round_trip_change_plan_save_reopen_keeps_value_and_source(make_window, qtbot, tmp_path):
    from advisor.store.scenario import load_scenario

    w = make_window()
    w.show_page("compare")
    page = w.page("compare")
    qtbot.waitUntil(lambda: page.result is not None, timeout=10000)
    # change a value in the form: the plan follows, the value comes from "app setting"
    page.assumptions.widgets["pue"].setValue(1.45)
    qtbot.waitUntil(lambda: w.ctx.last_plan is not None and w.ctx.last_plan.assumptions.pue == 1.45
                    and page.is_ready(), timeout=10000)
    described = w.ctx.last_plan.describe_assumptions()["pue"]
    assert described["value"] == 1.45 and described["origin"] == "app setting (Compare page assumptions)"
    assert described["default_value"] == 1.2
    assert page.assumptions.sources["pue"].toolTip() == "changed from 1.2 · app setting (Compare page assumptions)"
    # save a scenario, start again from the defaults, reopen it
    path = tmp_path / "pue.toml"
    assert w.scenarios.save_to(path)
    saved = load_scenario(path).assumptions["pue"]
    assert (saved.get("value") if isinstance(saved, dict) else saved) == 1.45
    w.ctx.set_assumptions({})
    qtbot.waitUntil(lambda: w.ctx.last_plan is not None and w.ctx.last_plan.assumptions.pue == 1.2, timeout=10000)
    assert page.assumptions.overrides() == {}
    assert w.scenarios.open_path(path, confirmed=True)
    qtbot.waitUntil(lambda: w.ctx.last_plan is not None and w.ctx.last_plan.assumptions.pue == 1.45
                    and page.is_ready(), timeout=10000)
    assert page.assumptions.widgets["pue"].value() == 1.45 and page.assumptions.overrides() == {"pue": 1.45}
    source = "scenario file pue.toml"
    assert w.ctx.last_plan.describe_assumptions()["pue"]["origin"] == source
    assert page.assumptions.sources["pue"].toolTip() == f"changed from 1.2 · {source}"
    assert w.ctx.last_plan.to_json()["assumptions"]["pue"]["origin"] == source  # the reports read this
