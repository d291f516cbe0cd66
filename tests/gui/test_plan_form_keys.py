"""Planner form fields for accelerator, lora_rank, quant and spot_offers: shown, read back, planned, saved."""

from __future__ import annotations

import pytest

from advisor.store.scenario import Scenario, load_scenario, save_scenario


@pytest.fixture(autouse=True)
def _no_modal_dialogs(monkeypatch):
    from advisor.gui import scenario_actions

    monkeypatch.setattr(scenario_actions, "_ask_unsaved", lambda _parent, _name: "discard")
    monkeypatch.setattr(scenario_actions, "_show_error", lambda _parent, _title, _message: None)
    for name in ("_ask_open_path", "_ask_save_path", "ask_report_path"):
        monkeypatch.setattr(scenario_actions, name, lambda _parent: None)


def _form(qtbot):
    from advisor.catalog import load_catalog
    from advisor.gui.widgets.plan_form import PlanFormWidget

    cat = load_catalog()
    form = PlanFormWidget(sorted(cat.models), accelerators=[(a.id, a.name, a.memory_bytes)
                                                           for a in cat.accelerators.values()])
    qtbot.addWidget(form)
    return form


@pytest.mark.parametrize("extra", [{"workload": "lora", "lora_rank": 64}, {"workload": "qlora", "lora_rank": 8},
                                   {"workload": "inference", "quant": "q4_k_m"},
                                   {"workload": "inference", "quant": "nf4"},
                                   {"workload": "pretrain", "spot_offers": False},
                                   {"workload": "lora", "accelerator": ["rtx-4090", "h100-sxm"]},
                                   {"workload": "inference", "accelerator": ["h200"]}])
def test_each_key_is_shown_and_read_back(qtbot, extra):
    form = _form(qtbot)
    form.set_values({"model": "llama-3-8b", **extra})
    values = form.values()
    for key, value in extra.items():
        assert values[key] == value


def test_defaults_are_left_out_and_rows_follow_the_workload(qtbot):
    form = _form(qtbot)
    form.set_values({"model": "llama-3-8b", "workload": "lora"})
    values = form.values()
    assert not {"accelerator", "lora_rank", "quant", "spot_offers"} & set(values)
    rows = form.form
    assert rows.isRowVisible(form.w["lora_rank"]) and not rows.isRowVisible(form.w["quant"])
    assert form.w["accelerator"].text() == "All accelerators"
    form.set_values({"workload": "inference", "quant": "q8_0", "lora_rank": 32})
    assert rows.isRowVisible(form.w["quant"]) and not rows.isRowVisible(form.w["lora_rank"])
    assert form.values()["quant"] == "q8_0" and "lora_rank" not in form.values()
    form.set_values({"workload": "pretrain"})
    assert "quant" not in form.values()  # quantisation is for serving only


def test_picker_summarises_and_clears(qtbot):
    form = _form(qtbot)
    picker = form.w["accelerator"]
    with qtbot.waitSignal(form.inputs_changed):
        form.set_values({"accelerator": ["h100-sxm", "h200", "rtx-4090", "no-such-gpu"]})
    assert picker.text() == "3 accelerators" and picker.selection() == ["h100-sxm", "h200", "rtx-4090"]
    checked = [picker.list.item(i) for i in range(picker.list.count())
               if picker.list.item(i).checkState().name == "Checked"]
    assert len(checked) == 3
    with qtbot.waitSignal(form.inputs_changed):  # unchecking an item in the list edits the form
        next(i for i in checked if "(h200)" in i.text()).setCheckState(checked[0].checkState().Unchecked)
    assert form.values()["accelerator"] == ["h100-sxm", "rtx-4090"] and picker.text() == "2 accelerators"
    form.set_values({"accelerator": ["h200"]})
    assert picker.text() == form.w["accelerator"]._names["h200"]
    with qtbot.waitSignal(form.inputs_changed):
        picker.clear_button.click()
    assert "accelerator" not in form.values() and picker.text() == "All accelerators"


def _open_planner(make_window, qtbot):
    w = make_window()
    w.show_page("planner")
    page = w.page("planner")
    qtbot.waitUntil(lambda: page.is_ready() and w.ctx.last_plan is not None, timeout=10000)
    return w, page


def test_restricting_accelerators_restricts_the_plan(make_window, qtbot):
    w, page = _open_planner(make_window, qtbot)
    assert len({o.accelerator for o in w.ctx.last_plan.options}) > 3
    page.form.set_values({"accelerator": ["rtx-4090", "h100-sxm"], "spot_offers": False})
    qtbot.waitUntil(lambda: w.ctx.last_request is not None and w.ctx.last_request.accelerator
                    == ("rtx-4090", "h100-sxm") and page.is_ready(), timeout=10000)
    result = w.ctx.last_plan
    assert {o.accelerator for o in result.options} == {"rtx-4090", "h100-sxm"}
    assert not any(o.spot for o in result.options) and w.ctx.last_request.spot_offers is False
    # The table lists the two chosen accelerators, and this machine's GPUs first whatever is chosen.
    assert [r["where"] for r in page.model.rows()][0] == "owned:rtx-4090" and page.model.rowCount() == 3


def test_scenario_with_the_keys_round_trips_through_the_file_menu(make_window, qtbot, tmp_path):
    w, page = _open_planner(make_window, qtbot)
    ctl = w.scenarios
    plan = {"model": "llama-3-8b", "workload": "inference", "quant": "q4_k_m", "spot_offers": False,
            "accelerator": ["rtx-4090", "rtx-3090", "h100-sxm"]}
    path = tmp_path / "serve.toml"
    save_scenario(path, Scenario(plan=plan))
    assert ctl.open_path(path)
    assert "accelerator" not in w.statusBar().currentMessage()
    assert "Planner page does not apply" not in w.statusBar().currentMessage()
    qtbot.waitUntil(lambda: w.ctx.last_request is not None and w.ctx.last_request.quant == "q4_k_m"
                    and page.is_ready(), timeout=10000)
    req = w.ctx.last_request
    assert req.accelerator == ("rtx-4090", "rtx-3090", "h100-sxm") and req.spot_offers is False
    assert {o.accelerator for o in w.ctx.last_plan.options} == set(plan["accelerator"])
    assert page.form.w["accelerator"].text() == "3 accelerators"

    # Saved back unchanged, then a LoRA scenario without the keys resets them (no stale restriction).
    assert ctl.save() and not ctl.dirty
    again = load_scenario(path).plan
    assert {k: again[k] for k in plan} == plan
    other = tmp_path / "lora.toml"
    save_scenario(other, Scenario(plan={"model": "llama-3-8b", "workload": "lora", "lora_rank": 64}))
    assert ctl.open_path(other)
    qtbot.waitUntil(lambda: w.ctx.last_request is not None and w.ctx.last_request.lora_rank == 64
                    and page.is_ready(), timeout=10000)
    req = w.ctx.last_request
    assert req.accelerator == () and req.spot_offers is True and req.quant is None
    assert "Planner page does not apply" not in w.statusBar().currentMessage()
    # Saved: every input that differs from the job schema's default.
    assert ctl.save() and load_scenario(other).plan == {"model": "llama-3-8b", "workload": "lora", "lora_rank": 64}


def test_form_fields_are_job_schema_fields(qtbot):
    from advisor.job import JOB_FIELDS, Job

    form = _form(qtbot)
    keys = set(form.w) - {"budget"}  # budget picks which of tokens, epochs, hours is read
    assert keys <= set(JOB_FIELDS)
    missing = {n for n, m in JOB_FIELDS.items() if m.kind != "table"} - keys
    # Until the form is built from the schema; the fit-advice flags reach the plan through the advice's Apply
    # button, the GPUs owned through the Machine page's setting.
    assert missing == {"active_params", "grad_accum", "optimizer_offload", "kv_cache_bits", "gpu_layers", "own",
                       "owned_options"}
    # A serving job with a token budget keeps it (it was dropped: $32.59 in the app against $326 on the CLI).
    form.set_values({"model": "llama-3-8b", "workload": "inference", "tokens": 1e9})
    assert Job.from_mapping(form.values()).tokens == 1e9
