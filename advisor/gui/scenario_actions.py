"""The File menu: open and save scenario files, open recent ones, compare several, export a report, quit.

:class:`ScenarioController` is installed on the main window. It tracks the current scenario file and
whether the planner's inputs or the cost assumptions changed since it was opened or saved (the window
title then ends in ``*``); closing the window or opening another file first asks Save / Discard / Cancel.

Loading makes the file's ``[plan]`` the app's current job (``ctx.plan.load``: the Planner form, Compare
and Machine pages follow) and its ``[assumptions]`` the current ones (``AppContext.set_assumptions``).
A file that cannot be used is reported in a message box with its one-line reason and changes nothing.
Every dialog is an attribute holding a plain function, so tests answer them without a modal loop.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Qt, Slot
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QFileDialog, QMenu, QMessageBox, QWidget

from advisor.gui.report_export import ReportWriter, ask_report_path
from advisor.gui.safe_text import plain, tell
from advisor.gui.safe_text import tip as tip_text

SCENARIO_FILTER = "Scenario files (*.toml);;All files (*)"
UNSAVED_ANSWERS = ("save", "discard", "cancel")


def plain_assumptions(assumptions: dict) -> dict:
    """A scenario's ``[assumptions]`` as plain overrides (a ``{value, unit, origin}`` table becomes its value)."""
    return {k: (v.get("value") if isinstance(v, dict) else v) for k, v in assumptions.items()}


def check_scenario(scenario, catalog) -> None:
    """The checks that need the planner and the catalog, cheap enough for the GUI thread (no planning).

    Raises:
        ValueError: naming the field (an unknown preset, accelerator or assumption, a value out of range).
    """
    from advisor.cost.assumptions import CostAssumptions
    from advisor.job import Job, JobInputError
    from advisor.store.scenario import job_values

    try:
        Job.from_mapping(job_values(scenario))
        CostAssumptions().with_overrides(**plain_assumptions(scenario.assumptions))
    except JobInputError as exc:
        prefix = "" if exc.field == "assumptions" else "plan."  # the file's table, as load_scenario names it
        raise ValueError(prefix + " ".join(str(exc).split())) from None
    except TypeError as exc:
        raise ValueError(f"plan: {' '.join(str(exc).split())}") from None
    except ValueError as exc:
        raise ValueError(f"assumptions.{' '.join(str(exc).split())}") from None
    model = scenario.plan.get("model")
    spec = isinstance(model, str) and (any(c in model for c in ":/\\") or model.endswith((".gguf", ".json")))
    if model is not None and model not in catalog.models and not spec:  # a spec is resolved when planned
        raise ValueError(f"plan.model: unknown preset {model!r}")
    for acc in scenario.plan.get("accelerator", ()):
        if acc not in catalog.accelerators:
            raise ValueError(f"plan.accelerator: unknown accelerator {acc!r}")


class ScenarioController(QObject):
    """The File menu of a main window and the state of the open scenario file.

    Attributes:
        path: the current scenario file, or None before one is opened or saved.
        dirty: True when the inputs or assumptions differ from the file.
        ask_unsaved: ``f(parent, name) -> "save" | "discard" | "cancel"``.
        ask_open_path / ask_save_path / ask_report_path: ``f(parent) -> str | None``.
        show_error: ``f(parent, title, message)``.
    """

    def __init__(self, window) -> None:
        super().__init__(window)
        self.window = window
        self.ctx = window.ctx
        self.path: Path | None = None
        self.dirty = False
        self._loaded = None  # the Scenario last opened or saved (notes, extra tables, assumption units kept)
        self._baseline = None
        self._base_title = window.windowTitle()
        self.ask_unsaved = _ask_unsaved
        self.ask_open_path = _ask_open_path
        self.ask_save_path = _ask_save_path
        self.ask_report_path = ask_report_path
        self.show_error = _show_error
        self.compare_dialog = None
        self.reports = ReportWriter(self)
        self.reports.written.connect(self._on_reports_written)
        self.reports.failed.connect(self._on_reports_failed)
        self._build_menu()
        self.ctx.plan_model_ready.connect(self._on_ctx_plan_model_ready)  # not built at start-up
        self.ctx.assumptions_changed.connect(self._on_ctx_assumptions_changed)

    # ------------------------------------------------------------ menu
    def _build_menu(self) -> None:
        menu = self.window.menuBar().addMenu("&File")
        menu.setObjectName("fileMenu")
        self.menu = menu
        self.actions: dict[str, QAction] = {}
        for key, text, shortcut, slot, tip in (
                ("open", "&Open scenario…", QKeySequence.StandardKey.Open, self._on_open_triggered,
                 "Open a scenario file (TOML) into the Planner"),
                ("save", "&Save", QKeySequence.StandardKey.Save, self._on_save_triggered,
                 "Save the Planner's inputs and the cost assumptions to the current scenario file"),
                ("save_as", "Save &as…", QKeySequence("Ctrl+Shift+S"), self._on_save_as_triggered,
                 "Save the Planner's inputs and the cost assumptions to a new scenario file"),
                (None, "Open &recent", None, None, None),
                ("compare", "&Compare scenarios…", QKeySequence("Ctrl+Shift+C"), self._on_compare_triggered,
                 "Several scenario files side by side: cheapest option, time and total cost"),
                ("export", "&Export report…", QKeySequence("Ctrl+E"), self._on_export_triggered,
                 "Write the current plan's options as HTML, PDF, Markdown or CSV (by the file's suffix)"),
                ("quit", "&Quit", QKeySequence("Ctrl+Q"), self._on_quit_triggered, "Close the window")):
            if key is None:
                self.recent_menu = QMenu(text, menu)
                self.recent_menu.setObjectName("recentMenu")
                self.recent_menu.aboutToShow.connect(self._on_recent_menu_about_to_show)
                self.recent_menu.triggered.connect(self._on_recent_menu_triggered)
                menu.addMenu(self.recent_menu)
                menu.addSeparator()
                continue
            if key == "quit":
                menu.addSeparator()
            action = QAction(text, self.window)
            action.setObjectName(f"action_{key}")
            if shortcut is not None:
                action.setShortcut(shortcut)
            action.setStatusTip(tip)
            action.triggered.connect(slot)
            menu.addAction(action)
            self.actions[key] = action
        self._fill_recent()

    def _fill_recent(self) -> None:
        from advisor.store.recent import recent_scenarios

        self.recent_menu.clear()
        recent = recent_scenarios()
        for path in recent:
            action = self.recent_menu.addAction(plain(path.name))
            action.setData(str(path))
            action.setToolTip(tip_text(str(path)))
            action.setStatusTip(plain(str(path)))
        if not recent:
            self.recent_menu.addAction("(none yet)").setEnabled(False)

    @Slot()
    def _on_recent_menu_about_to_show(self) -> None:
        self._fill_recent()

    @Slot(QAction)
    def _on_recent_menu_triggered(self, action: QAction) -> None:
        if action.data():
            self.open_path(action.data())

    # ------------------------------------------------------------ the job and the state
    def current_scenario(self):
        """The current job and the assumptions as a ``Scenario`` (notes and other tables of the open file kept)."""
        from advisor.job import Job, JobInputError
        from advisor.store.scenario import Scenario, scenario_from_job

        plan = dict(self.ctx.plan.values)
        loaded = self._loaded.assumptions if self._loaded is not None else {}
        notes = dict(self._loaded.notes) if self._loaded is not None else {}
        extra = dict(self._loaded.extra) if self._loaded is not None else {}
        try:  # the whole job, every field that differs from the schema's default
            job = Job.from_mapping({**plan, "assumptions": dict(self.ctx.assumptions)})
        except JobInputError:  # not a plan yet (the Planner shows why): save the fields as they are
            assumptions = {}
            for name, value in self.ctx.assumptions.items():
                old = loaded.get(name)
                # Keep a table's unit and origin while its value is unchanged.
                assumptions[name] = old if isinstance(old, dict) and old.get("value") == value else value
            return Scenario(plan=plan, assumptions=assumptions, notes=notes, extra=extra)
        return scenario_from_job(job, notes=notes, extra=extra, assumption_tables=loaded)

    def _state(self):
        return (dict(self.ctx.plan.values), dict(self.ctx.assumptions))

    def _update_dirty(self) -> None:
        dirty = self.path is not None and self._state() != self._baseline
        if dirty != self.dirty:
            self.dirty = dirty
            self._update_title()

    def _update_title(self) -> None:
        if self.path is None:
            self.window.setWindowTitle(self._base_title)
        else:
            self.window.setWindowTitle(f"{plain(self.path.name)}{'*' if self.dirty else ''} — {self._base_title}")

    def _mark_clean(self, path: Path, scenario) -> None:
        from advisor.store.recent import add_recent_scenario

        self.path = Path(path)
        self._loaded = scenario
        self._baseline = self._state()
        self.dirty = False
        self._update_title()
        try:
            add_recent_scenario(self.path)
        except OSError:
            pass  # the recent list is a convenience; the file itself is fine
        self._fill_recent()

    @Slot(object)
    def _on_ctx_plan_model_ready(self, model) -> None:
        model.values_changed.connect(self._on_plan_values_changed)

    @Slot(dict)
    def _on_plan_values_changed(self, _values: dict) -> None:
        self._update_dirty()

    @Slot(dict)
    def _on_ctx_assumptions_changed(self, _overrides: dict) -> None:
        self._update_dirty()

    # ------------------------------------------------------------ opening
    @Slot()
    def _on_open_triggered(self) -> None:
        if not self.confirm_discard():
            return
        path = self.ask_open_path(self.window)
        if path:
            self.open_path(path, confirmed=True)

    def open_path(self, path, confirmed: bool = False) -> bool:
        """Open a scenario file into the Planner (asking about unsaved changes first, unless ``confirmed``).

        Returns:
            True when the file was applied; False when the user cancelled or the file cannot be used
            (a message box says why, and nothing changed).
        """
        from advisor.store.scenario import ScenarioError, load_scenario

        if not confirmed and not self.confirm_discard():
            return False
        try:
            scenario = load_scenario(path)
            check_scenario(scenario, self.ctx.catalog)
        except (ScenarioError, ValueError) as exc:
            message = str(exc)
            if not message.startswith(str(path)):
                message = f"{path}: {message}"
            self.show_error(self.window, "Cannot open the scenario", message)
            return False
        self.apply(scenario, f"scenario file {Path(path).name}")
        self._mark_clean(Path(path), scenario)
        not_shown = self._not_shown(scenario)
        self.window.statusBar().showMessage(plain(
            f"Opened {Path(path).name}" + (f" · not shown for this workload (planned as written): "
                                           f"{', '.join(not_shown)}" if not_shown else ""), None), 15000)
        return True

    def apply(self, scenario, source: str = "scenario file") -> None:
        """Make a scenario's plan the current job (what it leaves out at its default) and its assumptions current
        (each with ``source``, e.g. ``scenario file lora.toml``, as where its value comes from)."""
        plain = plain_assumptions(scenario.assumptions)
        self.ctx.set_assumptions(plain, dict.fromkeys(plain, source))
        self.ctx.plan.load(dict(scenario.plan))

    def _not_shown(self, scenario) -> list[str]:
        """Plan keys the Planner form does not show for the scenario's workload (they are planned as written)."""
        from advisor.job import JOB_FIELDS

        workload = scenario.plan.get("workload", JOB_FIELDS["workload"].default)
        return [k for k in scenario.plan if k in JOB_FIELDS and workload not in JOB_FIELDS[k].workloads]

    # ------------------------------------------------------------ saving
    @Slot()
    def _on_save_triggered(self) -> None:
        self.save()

    @Slot()
    def _on_save_as_triggered(self) -> None:
        self.save_as()

    def save(self) -> bool:
        """Save to the current file (or ask for one). Returns True when written."""
        if self.path is None:
            return self.save_as()
        return self.save_to(self.path)

    def save_as(self) -> bool:
        """Ask for a file name and save there. Returns True when written."""
        path = self.ask_save_path(self.window)
        if not path:
            return False
        if not Path(path).suffix:
            path = f"{path}.toml"
        return self.save_to(path)

    def save_to(self, path) -> bool:
        """Write the current inputs and assumptions to ``path`` atomically. Returns True when written."""
        from advisor.store.scenario import ScenarioError, save_scenario

        try:
            scenario = self.current_scenario()
            written = save_scenario(path, scenario)
        except (ScenarioError, ValueError, OSError) as exc:
            self.show_error(self.window, "Cannot save the scenario", f"{path}: {exc}")
            return False
        self._mark_clean(written, scenario)
        self.window.statusBar().showMessage(f"Saved {written}", 8000)
        return True

    def confirm_discard(self) -> bool:
        """Ask Save / Discard / Cancel when there are unsaved changes. Returns True when it is fine to go on."""
        self._update_dirty()
        if not self.dirty:
            return True
        answer = self.ask_unsaved(self.window, self.path.name if self.path else "the scenario")
        if answer == "save":
            return self.save()
        return answer == "discard"

    def confirm_close(self) -> bool:
        """Called by the window's ``closeEvent``: False means keep the window open."""
        if not self.ctx.screenshot_mode and not self.confirm_discard():
            return False
        if self.compare_dialog is not None:  # its threads must not outlive the window
            self.compare_dialog.close()
        self.reports.stop()
        return True

    # ------------------------------------------------------------ compare, export, quit
    @Slot()
    def _on_compare_triggered(self) -> None:
        self.open_compare()

    def open_compare(self, paths=None, show: bool = True):
        """The compare dialog (not modal), starting with ``paths`` (default: the current file and the recent
        ones, up to 4). Returns the dialog; ``show=False`` builds it without showing it (tests, screenshots)."""
        from advisor.gui.widgets.scenario_compare import ScenarioCompareDialog
        from advisor.store.recent import recent_scenarios

        current = paths is None  # from the menu: the current job beside the files
        if paths is None:
            paths = [p for p in recent_scenarios() if p != self.path]
            paths = ([self.path] if self.path and self.dirty else []) + paths  # the saved file beside its edits
            paths = paths[:4]
        if self.compare_dialog is not None:
            self.compare_dialog.close()
            self.compare_dialog.deleteLater()
        self.compare_dialog = ScenarioCompareDialog(self.ctx, paths, self.window, current=current)
        if show:
            self.compare_dialog.show()
        return self.compare_dialog

    @Slot()
    def _on_export_triggered(self) -> None:
        path = self.ask_report_path(self.window)
        if path:
            self.export_report(path)

    def export_report(self, path) -> bool:
        """Write the current plan (every option's total, assumptions, catalog date, probes) as a report, in a
        worker; ``reports.written`` or ``reports.failed`` follows.

        Returns:
            True when the writing started; False without a plan or while another report is written
            (a message box says why).
        """
        result = self.ctx.last_plan
        if result is None:
            self.show_error(self.window, "Export report", "There is no current plan to export: open the Planner "
                                                          "and give it inputs it can plan.")
            return False
        doc = result.to_json()
        if self.path is not None:
            doc["scenario"] = self.path.stem
        # the tornado (which input moves the chosen option's total most), as ``advisor plan --report --sensitivity``
        # adds it: re-planned in the report's worker, on the plan's own catalog, calibration and machine
        job = (result, self.ctx.catalog, self.ctx.plan.calibration, self.ctx.plan_kw())
        if not self.reports.start([doc], path, plans=[job]):
            self.show_error(self.window, "Export report", "A report is still being written; try again when it is done.")
            return False
        self.window.statusBar().showMessage(f"Writing {Path(path).name}…")
        return True

    @Slot(str)
    def _on_reports_written(self, path: str) -> None:
        self.window.statusBar().showMessage(f"Report written to {path}", 8000)

    @Slot(str)
    def _on_reports_failed(self, reason: str) -> None:
        self.window.statusBar().clearMessage()
        self.show_error(self.window, "Export report", f"Could not write the report: {reason}")

    @Slot()
    def _on_quit_triggered(self) -> None:
        self.window.close()


# ---------------------------------------------------------------- the real dialogs (tests replace them)
def _ask_unsaved(parent: QWidget, name: str) -> str:
    box = QMessageBox(QMessageBox.Icon.Warning, "Unsaved changes",
                      f"The inputs or assumptions changed since {plain(name)} was saved.", parent=parent)
    box.setTextFormat(Qt.TextFormat.PlainText)  # a file's name
    box.setInformativeText("Save them before going on?")
    box.setStandardButtons(QMessageBox.StandardButton.Save | QMessageBox.StandardButton.Discard
                           | QMessageBox.StandardButton.Cancel)
    box.setDefaultButton(QMessageBox.StandardButton.Save)
    answer = box.exec()
    return {QMessageBox.StandardButton.Save: "save",
            QMessageBox.StandardButton.Discard: "discard"}.get(QMessageBox.StandardButton(answer), "cancel")


def _ask_open_path(parent: QWidget) -> str | None:
    path, _ = QFileDialog.getOpenFileName(parent, "Open scenario", "", SCENARIO_FILTER)
    return path or None


def _ask_save_path(parent: QWidget) -> str | None:
    path, _ = QFileDialog.getSaveFileName(parent, "Save scenario as", "scenario.toml", SCENARIO_FILTER)
    return path or None


def _show_error(parent: QWidget, title: str, message: str) -> None:
    tell(parent, title, message)  # plain text: a message may quote the file
