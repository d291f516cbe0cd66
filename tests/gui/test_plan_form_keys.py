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
    from advisor.job import JOB_FIELDS

    form = _form(qtbot)
    form.set_values({"model": "llama-3-8b", **extra})
    values = form.values()  # a value at the schema's default is left out
    for key, value in extra.items():
        assert values.get(key, JOB_FIELDS[key].default) == value


def test_defaults_are_left_out_and_rows_follow_the_workload(qtbot):
    form = _form(qtbot)
    form.set_values({"model": "llama-3-8b", "workload": "lora"})
    values = form.values()
    assert values == {"model": "llama-3-8b", "workload": "lora"}  # every other field is at its default
    assert form.is_shown("lora_rank") and not form.is_shown("quant")
    assert form.w["accelerator"].text() == "All accelerators"
    form.set_values({"workload": "inference", "quant": "q8_0", "lora_rank": 32})
    assert form.is_shown("quant") and not form.is_shown("lora_rank")
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
    """Every schema field has a widget of its kind, or is listed with a reason; rows follow its workloads."""
    from PySide6.QtWidgets import QCheckBox, QComboBox, QLineEdit, QSpinBox

    from advisor.gui.widgets.accelerator_picker import AcceleratorPicker
    from advisor.gui.widgets.plan_form import NOT_IN_FORM
    from advisor.job import JOB_FIELDS, Job

    form = _form(qtbot)
    assert set(form.w) - {"budget"} == set(JOB_FIELDS) - set(NOT_IN_FORM)  # budget picks tokens, epochs or hours
    assert all(n in JOB_FIELDS and len(reason) > 20 for n, reason in NOT_IN_FORM.items())  # each with its reason
    from advisor.gui.widgets.choices_picker import ChoicesPicker

    widget_of = {"choice": QComboBox, "int": QSpinBox, "number": QLineEdit, "bool": QCheckBox, "ids": AcceleratorPicker,
                 "text": QComboBox}
    assert isinstance(form.w["stack"], ChoicesPicker)  # an ids field with choices: some of a fixed list
    assert [a.data() for a in form.w["stack"].actions_.values()] == list(JOB_FIELDS["stack"].choices)
    for name, editor in form.w.items():
        if name == "budget":
            continue
        meta = JOB_FIELDS[name]
        assert isinstance(editor, ChoicesPicker if meta.kind == "ids" and meta.choices else widget_of[meta.kind]), name
        tip = editor.toolTip() if name != "accelerator" else form.form.labelForField(form.rows[name]).toolTip()
        assert meta.help[1:] in tip and meta.range_text() in tip, name
        if isinstance(editor, QSpinBox):  # the schema's range, with "auto" one below it when the default is None
            low = editor.minimum() + (1 if editor.specialValueText() else 0)
            assert (low, editor.maximum()) == (meta.minimum, min(meta.maximum, 2**31 - 1)), name
        if isinstance(editor, QComboBox) and meta.kind == "choice":
            assert [editor.itemData(i) for i in range(editor.count()) if editor.itemData(i) is not None] \
                == list(meta.choices), name
    for workload in ("pretrain", "lora", "inference"):
        form.set_values({"model": "llama-3-8b", "workload": workload, "budget": None})
        for name in form.rows:
            if name in ("budget", "tokens", "epochs", "dataset_tokens", "hours", "download") or name in \
                    ("params", "active_params", "layers", "hidden", "heads", "kv_heads", "ffn", "vocab"):
                continue  # rows of their own rule (the budget chosen, a custom size, a Hugging Face name)
            assert form.is_shown(name) == (workload in JOB_FIELDS[name].workloads), (workload, name)
    # A serving job with a token budget keeps it (it was dropped: $32.59 in the app against $326 on the CLI).
    form.set_values({"model": "llama-3-8b", "workload": "inference", "tokens": 1e9})
    assert form.is_shown("tokens") and Job.from_mapping(form.values()).tokens == 1e9
    assert not form.is_shown("download")
    form.set_values({"model": "hf:Qwen/Qwen2.5-0.5B", "download": True})  # a spec joins the model list
    assert form.is_shown("download") and form.values()["model"] == "hf:Qwen/Qwen2.5-0.5B"
    assert form.values()["download"] is True
    form.set_values({"model": "custom", "params": 7e9, "active_params": 2e9})
    assert form.is_shown("active_params") and form.values()["active_params"] == 2e9
