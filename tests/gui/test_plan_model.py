"""The app's one plan model: pages observe it, invalid inputs leave a greyed-out stale plan, form edits undo."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence


@pytest.fixture(autouse=True)
def _no_modal_dialogs(monkeypatch):
    from advisor.gui import scenario_actions

    monkeypatch.setattr(scenario_actions, "_ask_unsaved", lambda _parent, _name: "discard")
    monkeypatch.setattr(scenario_actions, "_show_error", lambda _parent, _title, _message: None)


def _planner(make_window, qtbot):
    w = make_window()
    w.show_page("planner")
    page = w.page("planner")
    qtbot.waitUntil(lambda: page.is_ready() and w.ctx.last_plan is not None, timeout=10000)
    return w, page


def test_compare_plans_without_the_planner_page(make_window, qtbot):
    w = make_window()
    w.show_page("compare")
    page = w.page("compare")
    qtbot.waitUntil(page.is_ready, timeout=10000)
    assert "planner" not in w._pages  # Compare reads ctx.plan, never the Planner's widgets
    assert page.result is w.ctx.plan.result and page.result.model_name == "llama-3.1-8b"  # the default model (defaults.toml)
    w.ctx.plan.load({"model": "llama-3-70b", "workload": "inference"})
    qtbot.waitUntil(lambda: page.is_ready() and page.result.request.workload == "inference", timeout=10000)
    assert "planner" not in w._pages and "Serve llama-3-70b" in page.summary.text()


def test_machine_page_shows_the_current_job_on_this_machine(make_window, qtbot):
    w, page = _planner(make_window, qtbot)
    machine = w.page("machine")
    line = machine.current_job
    qtbot.waitUntil(lambda: page.is_ready() and page.bundle is not None, timeout=10000)
    # written when the Machine page is shown, not on each re-plan while another page is
    assert "LoRA fine-tune" not in line.text() and machine._job_line_due
    w.show_page("machine")
    assert "fits on" in line.text() and not machine._job_line_due
    assert "LoRA fine-tune llama-3.1-8b" in line.text() and "of your 2" in line.text()
    w.ctx.plan.load({"model": "llama-3-70b", "workload": "finetune"})  # planned while the Machine page shows
    qtbot.waitUntil(lambda: "finetune" not in line.text() and "Fine-tune llama-3-70b" in line.text(), timeout=10000)
    # A 70B full fine-tune does not run on two 24 GB cards: said, with the planner's reason when it gives one.
    assert any(w in line.text() for w in ("you have 2", "does not fit", "cannot run here"))


def test_invalid_input_greys_out_the_old_plan_until_valid_again(make_window, qtbot):
    w, page = _planner(make_window, qtbot)
    w.show_page("compare")
    compare = w.page("compare")
    qtbot.waitUntil(compare.is_ready, timeout=10000)
    w.show_page("planner")
    old = page.bundle
    form = page.form
    box = form.w["model"]
    box.setCurrentIndex(box.findData("custom"))
    form.w["params"].setText("abc")
    form.w["params"].textEdited.emit("abc")
    message = "params: must be a finite number between 1000000 and 1e+15, got 'abc'"
    assert str(w.ctx.plan.error) == message  # validated at once, through the schema
    assert w.ctx.plan.stale and w.ctx.last_plan is None and page.bundle is old  # the old plan stays, marked
    beside = form._errors["params"]
    assert beside.text() == message.removeprefix("params: ") and form._row_visible[beside]
    assert message in form.error.text() and not form._row_visible[form.error]  # said once: beside the field
    assert message in page.stale_label.text()
    assert page.stale_label.isVisible() and "Not current" in page.stale_label.text()
    assert page.chart.getPlotItem().opacity() < 0.5 and not page.table.isEnabled()
    assert page.answer.graphicsEffect() is not None
    assert "Not current" in compare.summary.text() and compare.scatter.getPlotItem().opacity() < 0.5
    qtbot.wait(300)  # past the debounce: nothing is planned from invalid inputs
    assert page.bundle is old

    form.w["params"].setText("7B")
    form.w["params"].textEdited.emit("7B")
    qtbot.waitUntil(lambda: not w.ctx.plan.stale and page.is_ready(), timeout=10000)
    assert page.bundle.request.params == 7e9 and w.ctx.last_plan is page.bundle.result
    assert not page.stale_label.isVisible() and page.chart.getPlotItem().opacity() == 1.0 and page.table.isEnabled()
    assert form.error.text() == "" and beside.text() == "" and not form._row_visible[beside]
    assert compare.scatter.getPlotItem().opacity() == 1.0 and page.answer.graphicsEffect() is None


def test_form_edits_undo_and_redo(make_window, qtbot):
    w, page = _planner(make_window, qtbot)
    model, form = w.ctx.plan, page.form
    start = dict(model.values)
    for v in (2, 3, 4):  # typing in one field is one step
        form.w["micro_batch"].setValue(v)
    box = form.w["workload"]
    box.setCurrentIndex(box.findData("finetune"))
    assert model.values == {**start, "micro_batch": 4, "workload": "finetune"}
    assert model.undo_stack.count() == 2
    assert page.undo_action.shortcut() == QKeySequence(QKeySequence.StandardKey.Undo)
    assert QKeySequence("Ctrl+Shift+Z") in page.redo_action.shortcuts()

    w.activateWindow()
    qtbot.waitUntil(w.isActiveWindow, timeout=3000)
    box.setFocus()
    qtbot.keyClick(box, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert model.values == {**start, "micro_batch": 4} and box.currentData() == "lora"
    page.undo_action.trigger()
    assert model.values == start and form.w["micro_batch"].value() == 1
    qtbot.keyClick(box, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    assert form.w["micro_batch"].value() == 4
    qtbot.waitUntil(lambda: page.is_ready() and page.bundle.request.micro_batch == 4, timeout=10000)
    page.redo_action.trigger()
    qtbot.waitUntil(lambda: page.is_ready() and page.bundle.request.workload == "finetune", timeout=10000)


def test_opening_a_scenario_restarts_the_undo_history(make_window, qtbot, tmp_path):
    from advisor.store.scenario import Scenario, save_scenario

    w, page = _planner(make_window, qtbot)
    page.form.w["micro_batch"].setValue(5)
    assert w.ctx.plan.undo_stack.canUndo()
    path = tmp_path / "s.toml"
    save_scenario(path, Scenario(plan={"model": "llama-3-8b", "workload": "inference", "tokens": 1e9}))
    assert w.scenarios.open_path(path, confirmed=True)
    assert not w.ctx.plan.undo_stack.canUndo()
    assert page.form.values() == {"model": "llama-3-8b", "workload": "inference", "tokens": 1e9}
    assert page.form.w["budget"].currentData() == "tokens" and page.form.is_shown("tokens")


def test_open_save_reopen_a_serving_job_with_a_token_budget_gives_the_same_plan(make_window, qtbot, tmp_path):
    """The job the form cannot lose: a serving scenario's token budget survives the app (it was dropped)."""
    from advisor.store.scenario import load_scenario
    from tests.support_json import without_sources
    from tests.test_examples import SERVING

    w, page = _planner(make_window, qtbot)
    first, second = tmp_path / "serve.toml", tmp_path / "again.toml"
    first.write_text(SERVING)
    assert w.scenarios.open_path(first, confirmed=True)
    qtbot.waitUntil(lambda: w.ctx.last_request is not None and w.ctx.last_request.tokens == 1e9
                    and w.ctx.plan.is_idle(), timeout=10000)
    before = w.ctx.last_plan.to_json()
    assert before["tokens"] == 1e9 and before["workload"] == "inference"
    assert w.scenarios.save_to(second)
    saved = load_scenario(second).plan
    assert saved == {"model": "llama-3-8b", "workload": "inference", "tokens": 1e9, "batch": 8,
                     "accelerator": ["h100-sxm", "rtx-4090"]}
    w.ctx.plan.load({"model": "gpt2"})
    qtbot.waitUntil(lambda: w.ctx.last_request is not None and w.ctx.last_request.model == "gpt2"
                    and w.ctx.plan.is_idle(), timeout=10000)
    assert w.scenarios.open_path(second, confirmed=True)
    qtbot.waitUntil(lambda: w.ctx.last_request is not None and w.ctx.last_request.model == "llama-3-8b"
                    and w.ctx.plan.is_idle(), timeout=10000)
    assert without_sources(w.ctx.last_plan.to_json()) == without_sources(before)


def test_compare_dialog_from_the_menu_shows_the_current_job_and_follows_it(make_window, qtbot, tmp_path):
    from advisor.store.scenario import Scenario, add_recent_scenario, save_scenario

    w, page = _planner(make_window, qtbot)
    other = tmp_path / "big.toml"
    save_scenario(other, Scenario(plan={"model": "llama-3-70b", "workload": "finetune"}))
    add_recent_scenario(other)
    w.ctx.plan.load({"model": "llama-3-8b", "workload": "lora"})
    qtbot.waitUntil(lambda: w.ctx.last_request is not None and w.ctx.last_request.model == "llama-3-8b"
                    and w.ctx.plan.is_idle(), timeout=10000)
    dialog = w.scenarios.open_compare(show=False)
    qtbot.waitUntil(dialog.is_ready, timeout=10000)
    assert [s.name for s in dialog.summaries] == ["current job", "big"]
    best = w.ctx.last_plan.best()
    assert (dialog.summaries[0].option_id, dialog.summaries[0].cost_usd) == (best.id, best.cost_usd)
    w.ctx.plan.load({"model": "llama-3-8b", "workload": "inference", "tokens": 1e9})
    qtbot.waitUntil(lambda: dialog.summaries[0].doc["workload"] == "inference", timeout=10000)
    assert dialog.summaries[0].cost_usd == w.ctx.last_plan.best().cost_usd and dialog.model.rowCount() == 2
    dialog.close()


def test_a_number_stepped_by_one_has_its_next_step_planned_ahead_and_never_shown(make_window, qtbot, monkeypatch):
    from advisor.gui import plan_model as pm

    w, page = _planner(make_window, qtbot)
    model = w.ctx.plan
    planned: list[int] = []
    real = pm.plan_or_error

    def spy(job, *a, **kw):
        planned.append(job.micro_batch)
        return real(job, *a, **kw)

    start = 2
    model.edit({**model.values, "micro_batch": start})  # off the default (1): a step, its next planned ahead
    model.plan_now()
    qtbot.waitUntil(lambda: model.is_idle() and model.bundle.result.request.micro_batch == start, timeout=20000)
    monkeypatch.setattr(pm, "plan_or_error", spy)
    shown: list[int] = []
    model.plan_ready.connect(lambda b: shown.append(b.result.request.micro_batch))
    model.edit({**model.values, "micro_batch": start + 1})  # a spin box's up arrow
    model.plan_now()
    qtbot.waitUntil(lambda: model.is_idle() and len(planned) == 2, timeout=20000)
    # the edit's plan is shown; the next step's is planned after it and dropped
    assert planned == [start + 1, start + 2] and shown == [start + 1]
    assert model.bundle.result.request.micro_batch == start + 1
    # a jump (not a step of one) plans nothing ahead
    planned.clear()
    model.edit({**model.values, "micro_batch": start + 5})
    model.plan_now()
    qtbot.waitUntil(lambda: model.is_idle() and bool(planned), timeout=20000)
    qtbot.wait(50)
    assert planned == [start + 5] and shown[-1] == start + 5


def test_an_edit_while_the_next_step_is_planned_ahead_is_planned_after_it(make_window, qtbot):
    w, page = _planner(make_window, qtbot)
    model = w.ctx.plan
    start = 2
    model.edit({**model.values, "micro_batch": start})
    model.plan_now()
    qtbot.waitUntil(lambda: model.is_idle() and model.bundle.result.request.micro_batch == start, timeout=20000)
    model.edit({**model.values, "micro_batch": start + 1})
    model.plan_now()
    qtbot.waitUntil(lambda: model._ahead or (model.is_idle() and model.bundle.result.request.micro_batch == start + 1),
                    timeout=20000)
    model.edit({**model.values, "micro_batch": start + 3})  # arrives while the worker may plan ahead
    model.plan_now()
    qtbot.waitUntil(lambda: model.is_idle() and model.bundle.result.request.micro_batch == start + 3, timeout=20000)
    assert not model.stale and model.result.request.micro_batch == start + 3


def test_a_step_is_read_against_the_schema_default_of_a_field_left_out():
    """The form leaves out a field at its default (``PlanFormWidget.values``): micro-batch 1 -> 2 is the spin box's
    up arrow, 2 -> 1 its down arrow; a field whose default is automatic (None) has no number to step from."""
    from advisor.gui.plan_model import _step_of

    base = {"model": "llama-3.1-8b", "workload": "lora"}
    assert _step_of(base, {**base, "micro_batch": 2}) == ("micro_batch", 1)  # default 1 (advisor.job schema)
    assert _step_of({**base, "micro_batch": 2}, base) == ("micro_batch", -1)
    assert _step_of(base, {**base, "micro_batch": 3}) is None  # a jump of two
    assert _step_of(base, {**base, "gpus": 1}) is None  # automatic before: not a number stepped
    assert _step_of(base, {**base, "micro_batch": 2, "gpus": 2}) is None  # two fields changed
    assert _step_of({**base, "micro_batch": 1}, base) is None  # the default written out: no change


def test_the_next_step_is_planned_ahead_only_once_the_plan_shown_is_painted(make_window, qtbot):
    """The worker holds the interpreter while it plans: a plan ahead started before the repaint of the plan just
    shown made the GUI thread wait for it in the middle of drawing. It starts once the answer is painted."""
    from PySide6.QtCore import QEvent, QObject

    w, page = _planner(make_window, qtbot)
    w.show()  # painted only when shown
    qtbot.waitExposed(w)
    model = w.ctx.plan
    paints = [0]

    class Count(QObject):
        def eventFilter(self, obj, event):  # noqa: N802 (Qt API)
            if event.type() == QEvent.Type.Paint:
                paints[0] += 1
            return False

    counter = Count()
    page.answer.installEventFilter(counter)
    started: list[tuple[bool, int]] = []  # (ahead, answer paints since the plan was shown) at each worker start
    real_start = model._worker.start

    def start(*args, **kw):
        started.append((model._ahead, paints[0]))
        return real_start(*args, **kw)

    model.edit({**model.values, "micro_batch": 2})
    model.plan_now()
    qtbot.waitUntil(lambda: model.is_idle() and model.bundle.result.request.micro_batch == 2, timeout=20000)
    model._worker.start = start
    model.plan_ready.connect(lambda _b: paints.__setitem__(0, 0))  # after the page drew it (connected later)
    model.edit({**model.values, "micro_batch": 3})  # the up arrow
    model.plan_now()
    qtbot.waitUntil(lambda: model.is_idle() and len(started) == 2, timeout=20000)
    assert [a for a, _ in started] == [False, True]  # the edit's plan, then the next step's
    assert started[1][1] >= 1  # the answer of the plan shown was painted before the plan ahead started
    assert model.bundle.result.request.micro_batch == 3


def test_an_edit_reads_the_form_once_and_an_undo_shows_the_values_again(make_window, qtbot):
    """The model's echo of an edit (``values_changed``) is what the form just handed it: the page does not read the
    whole form a second time to find that out. An undo's values come from the model: the form shows them."""
    w, page = _planner(make_window, qtbot)
    reads = [0]
    real_values = page.form.values

    def values():
        reads[0] += 1
        return real_values()

    page.form.values = values
    spin = page.form.w["micro_batch"]
    spin.setValue(spin.value() + 1)  # the up arrow
    assert reads[0] == 1 and page.plan.values["micro_batch"] == spin.value()
    before = spin.value() - 1
    page.plan.undo_stack.undo()
    assert spin.value() == before and real_values().get("micro_batch", 1) == before
