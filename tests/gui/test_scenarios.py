"""File menu: scenario files saved and reopened, the unsaved-changes prompt, bad files, reports, comparing."""

from __future__ import annotations

import csv
import os
import random

import pytest

from advisor.planner import PlanRequest, plan
from advisor.store.scenario import Scenario, load_scenario, recent_scenarios, save_scenario
from tests.support_json import without_sources


@pytest.fixture(autouse=True)
def _no_modal_dialogs(monkeypatch):
    """A failing test must fail, not hang in a real modal dialog when its window closes at teardown."""
    from advisor.gui import scenario_actions

    monkeypatch.setattr(scenario_actions, "_ask_unsaved", lambda _parent, _name: "discard")
    monkeypatch.setattr(scenario_actions, "_show_error", lambda _parent, _title, _message: None)
    for name in ("_ask_open_path", "_ask_save_path", "ask_report_path"):
        monkeypatch.setattr(scenario_actions, name, lambda _parent: None)


def _planned(page):
    return page.is_ready() and page.bundle is not None


def _open_planner(make_window, qtbot):
    w = make_window()
    w.show_page("planner")
    page = w.page("planner")
    qtbot.waitUntil(lambda: _planned(page), timeout=10000)
    return w, page


def _wait_replanned(qtbot, page, done):
    qtbot.waitUntil(lambda: _planned(page) and page.plans_done > done, timeout=10000)


class Answers:
    """Stands in for the modal dialogs: records each question and gives the prepared answer."""

    def __init__(self, unsaved="cancel", save_path=None):
        self.unsaved = unsaved
        self.save_path = save_path
        self.asked: list[str] = []
        self.errors: list[str] = []

    def install(self, controller):
        controller.ask_unsaved = self._ask_unsaved
        controller.ask_save_path = self._ask_save_path
        controller.show_error = self._show_error
        return self

    def _ask_unsaved(self, _parent, name):
        self.asked.append(name)
        return self.unsaved

    def _ask_save_path(self, _parent):
        return self.save_path

    def _show_error(self, _parent, _title, message):
        self.errors.append(message)


def _edit_micro_batch(qtbot, page, value):
    done = page.plans_done
    page.form.w["micro_batch"].setValue(value)
    _wait_replanned(qtbot, page, done)


def test_save_and_reopen_give_the_same_plan(make_window, qtbot, tmp_path):
    w, page = _open_planner(make_window, qtbot)
    ctl = w.scenarios
    answers = Answers(save_path=str(tmp_path / "job")).install(ctl)
    done = page.plans_done
    page.form.set_values({"model": "llama-3-70b", "workload": "finetune", "gpus": 8, "tokens": 3e8})
    w.ctx.set_assumptions({"electricity_usd_per_kwh": 0.4})
    _wait_replanned(qtbot, page, done)
    before = w.ctx.last_plan.to_json()

    assert ctl.save() and not answers.errors  # no file yet: Save asks for a name, adds .toml
    path = tmp_path / "job.toml"
    assert ctl.path == path and path.exists()
    assert w.windowTitle().startswith("job.toml — ") and "*" not in w.windowTitle()
    saved = load_scenario(path)
    assert saved.plan["model"] == "llama-3-70b" and saved.plan["gpus"] == 8
    assert saved.assumptions == {"electricity_usd_per_kwh": 0.4}

    # Planned headlessly, the file gives the plan the window showed.
    mapping = {**saved.plan, "assumptions": dict(saved.assumptions)}
    headless = plan(PlanRequest.from_mapping(mapping), w.ctx.catalog, **w.ctx.plan_kw()).to_json()
    assert without_sources(headless) == without_sources(before)
    assert before["assumptions"]["electricity_usd_per_kwh"]["origin"].startswith("app setting")

    # Elsewhere entirely, then reopen: the same plan again, and not dirty.
    done = page.plans_done
    page.form.set_values({"model": "llama-3-8b", "workload": "inference", "gpus": 1})
    w.ctx.set_assumptions({})
    _wait_replanned(qtbot, page, done)
    assert ctl.dirty and w.windowTitle().startswith("job.toml* — ")
    answers.unsaved = "discard"
    done = page.plans_done
    assert ctl.open_path(path)
    _wait_replanned(qtbot, page, done)
    after = w.ctx.last_plan.to_json()
    assert without_sources(after) == without_sources(before)
    # the same value, now from the file it was read from
    assert after["assumptions"]["electricity_usd_per_kwh"]["origin"] == "scenario file job.toml"
    assert w.ctx.assumptions == {"electricity_usd_per_kwh": 0.4}
    assert not ctl.dirty and "*" not in w.windowTitle()
    assert answers.asked == ["job.toml"]


def test_opening_applies_plan_and_assumptions_and_resets_other_fields(make_window, qtbot, tmp_path):
    w, page = _open_planner(make_window, qtbot)
    _edit_micro_batch(qtbot, page, 4)
    path = tmp_path / "a.toml"
    save_scenario(path, Scenario(plan={"model": "llama-3-8b", "workload": "lora", "tokens": 2e8,
                                       "accelerator": ["h100-sxm"]},
                                 assumptions={"utilisation": {"value": 0.5, "unit": "share", "origin": "team"}},
                                 notes={"why": "kept"}))
    done = page.plans_done
    assert w.scenarios.open_path(path)
    _wait_replanned(qtbot, page, done)
    assert page.bundle.request.micro_batch == 1 and page.bundle.request.tokens == 2e8
    assert w.ctx.assumptions == {"utilisation": 0.5}
    assert w.statusBar().currentMessage() == "Opened a.toml"  # the form shows every key, accelerator too
    assert w.scenarios.save()
    again = load_scenario(path)
    assert again.plan["accelerator"] == ["h100-sxm"] and again.notes == {"why": "kept"}
    assert again.assumptions == {"utilisation": {"value": 0.5, "unit": "share", "origin": "team"}}


@pytest.mark.parametrize("answer", ["save", "discard", "cancel"])
def test_closing_with_unsaved_changes_asks(make_window, qtbot, tmp_path, answer):
    w, page = _open_planner(make_window, qtbot)
    ctl = w.scenarios
    path = tmp_path / "s.toml"
    assert ctl.save_to(path)
    original = path.read_bytes()
    answers = Answers(unsaved=answer).install(ctl)
    _edit_micro_batch(qtbot, page, 3)
    assert ctl.dirty

    w.close()
    assert answers.asked == ["s.toml"]
    assert w.isVisible() == (answer == "cancel")
    if answer == "save":
        assert load_scenario(path).plan["micro_batch"] == 3
    else:
        assert path.read_bytes() == original
    if answer == "cancel":
        answers.unsaved = "discard"  # let the fixture close it


def test_no_prompt_without_changes_or_without_a_file(make_window, qtbot, tmp_path):
    w, page = _open_planner(make_window, qtbot)
    answers = Answers(unsaved="cancel").install(w.scenarios)
    _edit_micro_batch(qtbot, page, 2)  # no file yet: nothing to lose (the inputs persist in the settings)
    assert not w.scenarios.dirty and w.scenarios.confirm_close()
    assert w.scenarios.save_to(tmp_path / "x.toml")
    _edit_micro_batch(qtbot, page, 5)
    _edit_micro_batch(qtbot, page, 2)  # back to what the file says: clean again
    assert not w.scenarios.dirty and w.scenarios.confirm_close()
    assert answers.asked == []


def test_open_with_unsaved_changes_cancel_keeps_everything(make_window, qtbot, tmp_path):
    w, page = _open_planner(make_window, qtbot)
    ctl = w.scenarios
    assert ctl.save_to(tmp_path / "first.toml")
    other = tmp_path / "second.toml"
    save_scenario(other, Scenario(plan={"model": "llama-3-70b", "workload": "inference"}))
    answers = Answers(unsaved="cancel").install(ctl)
    _edit_micro_batch(qtbot, page, 6)
    assert not ctl.open_path(other)
    assert answers.asked == ["first.toml"] and ctl.path == tmp_path / "first.toml" and ctl.dirty
    assert page.form.values()["micro_batch"] == 6
    answers.unsaved = "discard"


@pytest.mark.parametrize("content", [random.Random(600).randbytes(600), b"schema = 'advisor.scenario/1'\n[plan]\ngpus = 'eight'\n",
                                     b"schema = 'advisor.scenario/1'\n[plan]\nmodel = 'no-such-model'\n",
                                     b"schema = 'advisor.scenario/1'\n[plan]\nmodel = 'llama-3-8b'\ngpus = -3\n",
                                     b"schema = 'advisor.scenario/1'\n[plan]\nmodel = 'llama-3-8b'\n"
                                     b"[assumptions]\nno_such_assumption = 1\n"])
def test_a_bad_file_gives_a_message_and_changes_nothing(make_window, qtbot, tmp_path, content):
    w, page = _open_planner(make_window, qtbot)
    ctl = w.scenarios
    answers = Answers().install(ctl)
    before_values, before_plan, title = page.form.values(), w.ctx.last_plan, w.windowTitle()
    bad = tmp_path / "bad.toml"
    bad.write_bytes(content)
    assert not ctl.open_path(bad)
    assert len(answers.errors) == 1 and "\n" not in answers.errors[0] and str(bad) in answers.errors[0]
    qtbot.wait(250)  # a replan would have started by now
    assert page.form.values() == before_values and w.ctx.last_plan is before_plan
    assert ctl.path is None and w.windowTitle() == title and recent_scenarios() == []
    assert bad.read_bytes() == content


def test_recent_files_menu(make_window, qtbot, tmp_path):
    w, _page = _open_planner(make_window, qtbot)
    ctl = w.scenarios
    for name in ("one.toml", "two.toml"):
        assert ctl.save_to(tmp_path / name)
    assert [p.name for p in recent_scenarios()] == ["two.toml", "one.toml"]
    ctl.recent_menu.aboutToShow.emit()
    actions = [a for a in ctl.recent_menu.actions() if a.data()]
    assert [a.text() for a in actions] == ["two.toml", "one.toml"]
    actions[1].trigger()  # open "one" from the menu
    assert ctl.path == tmp_path / "one.toml"
    assert [p.name for p in recent_scenarios()] == ["one.toml", "two.toml"]
    menu_titles = [a.text() for a in ctl.menu.actions()]
    assert "&Open scenario…" in menu_titles and "Open &recent" in menu_titles


@pytest.mark.parametrize("suffix", [".html", ".md", ".csv", ".pdf"])
def test_export_report_has_every_option_total(make_window, qtbot, tmp_path, suffix):
    w, _page = _open_planner(make_window, qtbot)
    result = w.ctx.last_plan
    out = tmp_path / f"report{suffix}"
    with qtbot.waitSignal(w.scenarios.reports.written, timeout=20000) as written:
        assert w.scenarios.export_report(out)  # in a worker: a PDF takes seconds to lay out
    assert written.args == [str(out)] and out.stat().st_size > 0
    assert "Report written" in w.statusBar().currentMessage()
    if suffix == ".pdf":
        assert out.read_bytes().startswith(b"%PDF")
        return
    text = out.read_text(encoding="utf-8")
    if suffix == ".csv":
        rows = list(csv.reader(text.splitlines()))
        cells = {c for r in rows for c in r}
        ids = [o.id for o in result.options]
        assert all(i in cells for i in ids)
    else:
        from advisor.units import fmt_usd

        for o in result.options:
            assert o.id in text or o.accelerator_name in text
        assert fmt_usd(result.best().cost_usd) in text or f"{result.best().cost_usd:,.2f}" in text


def test_a_failed_export_says_why(make_window, qtbot, tmp_path):
    w, _page = _open_planner(make_window, qtbot)
    answers = Answers().install(w.scenarios)
    (tmp_path / "a-file").write_text("not a folder")
    for target in (tmp_path / "a-file" / "r.html", tmp_path / "r.txt"):
        with qtbot.waitSignal(w.scenarios.reports.failed, timeout=10000):
            assert w.scenarios.export_report(target)
    assert len(answers.errors) == 2 and all("Could not write the report" in e for e in answers.errors)
    assert ".txt" in answers.errors[1] and not (tmp_path / "r.txt").exists()


def test_compare_dialog_shows_both_scenarios(make_window, qtbot, tmp_path):
    w, _page = _open_planner(make_window, qtbot)
    a, b, bad = tmp_path / "small.toml", tmp_path / "big.toml", tmp_path / "broken.toml"
    save_scenario(a, Scenario(plan={"model": "llama-3-8b", "workload": "lora"}))
    save_scenario(b, Scenario(plan={"model": "llama-3-70b", "workload": "finetune", "tokens": 1e9}))
    dialog = w.scenarios.open_compare([a, b], show=False)  # shown offscreen, Qt warns about size hints
    qtbot.waitUntil(dialog.is_ready, timeout=10000)
    names = [s.name for s in dialog.summaries]
    assert names == ["small", "big"] and dialog.model.rowCount() == 2
    small, big = dialog.summaries
    assert not small.error and not big.error
    assert big.cost_usd > small.cost_usd > 0 and big.devices >= small.devices
    assert small.usd_per_device_h == pytest.approx(small.cost_usd / (small.devices * small.hours), rel=0.05)
    assert len(dialog._bars) == 3  # one bar series per option kind, grouped by scenario
    assert dialog.chart.getPlotItem().ctrl.logYCheck.isChecked()  # a $5 and a $50,000 job side by side
    assert dialog.scatter.getPlotItem().ctrl.logXCheck.isChecked() and not dialog.empty.isVisible()
    import math

    from advisor.gui.compare_data import front_points

    # Each scenario's front is drawn from its plan's own Pareto ids (never priced again), fastest first.
    fronts = [it for it in dialog._scatter_items if getattr(it, "opts", {}).get("pen") is not None]
    assert len(fronts) == 2
    for line, summary in zip(fronts, dialog.summaries):
        xs, ys = line.getOriginalDataset()
        ids = set(summary.doc["pareto"])
        expected = [(p.hours, p.cost_usd) for p in front_points(summary.doc) if p.option_id in ids]
        assert list(zip(xs, ys)) == expected and len(expected) == len(ids) >= 1
        assert all(b[0] >= a[0] and b[1] <= a[1] for a, b in zip(expected, expected[1:]))  # faster is dearer
    labels = [it for it in dialog._scatter_items if hasattr(it, "textItem")]
    assert labels and all(math.isfinite(lab.pos().y()) for lab in labels)

    bad.write_bytes(os.urandom(100))
    dialog.add_paths([bad])
    qtbot.waitUntil(dialog.is_ready, timeout=10000)
    assert dialog.model.rowCount() == 3 and dialog.summaries[2].error
    out = tmp_path / "comparison.md"
    with qtbot.waitSignal(dialog.reports.written, timeout=20000):
        assert dialog.export(out)
    text = out.read_text(encoding="utf-8")
    assert "small" in text and "big" in text
    dialog.close()


def test_compare_dialog_says_how_to_add_scenarios_when_empty(make_window, qtbot):
    w, _page = _open_planner(make_window, qtbot)
    dialog = w.scenarios.open_compare([], show=False)
    qtbot.waitUntil(dialog.is_ready, timeout=10000)
    assert "Add…" in dialog.empty.text() and "Save as" in dialog.empty.text()
    assert not dialog.empty.isHidden() and dialog.chart.isHidden() and dialog.scatter.isHidden()
    assert dialog.status.text() == "Add scenario files to compare them."
    dialog.close()


def test_opened_assumptions_reach_the_compare_page_built_before_or_after(make_window, qtbot, tmp_path):
    path = tmp_path / "cheap-power.toml"
    save_scenario(path, Scenario(plan={"model": "llama-3-8b", "workload": "lora"},
                                 assumptions={"electricity_usd_per_kwh": 0.05}))
    for build_compare_first in (False, True):  # this order: the first window starts without a Compare page
        w, _page = _open_planner(make_window, qtbot)
        assert ("compare" in w._pages) == build_compare_first or build_compare_first
        if build_compare_first:
            w.show_page("compare")
        else:  # the last session left other values for the Compare page to restore
            from advisor.gui import settings as settings_mod

            settings_mod.write_json(w.ctx.settings, "compare/assumptions", {"electricity_usd_per_kwh": 0.9})
        assert w.scenarios.open_path(path, confirmed=True)
        w.show_page("compare")  # built now in the second round: it must not bring back the last session's values
        editor = w.page("compare").assumptions.widgets["electricity_usd_per_kwh"]
        assert editor.value() == 0.05 and w.ctx.assumptions == {"electricity_usd_per_kwh": 0.05}
        qtbot.waitUntil(lambda w=w: w.ctx.last_plan is not None
                        and w.ctx.last_plan.assumptions.electricity_usd_per_kwh == 0.05, timeout=10000)
        w.close()


def test_report_suffix_follows_the_chosen_format():
    from advisor.gui.report_export import REPORT_FILTERS, with_report_suffix

    filters = REPORT_FILTERS.split(";;")
    assert [with_report_suffix("/tmp/r", f) for f in filters] == ["/tmp/r.html", "/tmp/r.pdf", "/tmp/r.md", "/tmp/r.csv"]
    assert with_report_suffix("/tmp/r.PDF", filters[0]) == "/tmp/r.PDF"  # a name with a known suffix wins


def test_exported_html_report_has_the_tornado(make_window, qtbot, tmp_path):
    """File > Export report adds the tornado, as ``advisor plan --report --sensitivity`` does: the chart and its
    inputs, largest swing first, with the chosen option's total at each end (re-planned in the worker)."""
    from advisor.planner import tornado

    w, _page = _open_planner(make_window, qtbot)
    result = w.ctx.last_plan
    out = tmp_path / "report.html"
    with qtbot.waitSignal(w.scenarios.reports.written, timeout=60000):
        assert w.scenarios.export_report(out)
    text = out.read_text(encoding="utf-8")
    assert "What moves the total cost most" in text
    expected = tornado(result.request, w.ctx.catalog, w.ctx.plan.calibration, base=result, **w.ctx.plan_kw())
    assert expected is not None and expected.bars
    top = expected.bars[0].parameter  # the input that moves the total most is named in the chart
    assert top.replace("_", " ") in text or top in text
