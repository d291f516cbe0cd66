"""The app's one current job and its plan: pages and dialogs observe :class:`PlanModel`, never each other.

The Planner form writes its values here (:meth:`PlanModel.edit`, undoable); an opened scenario or the
Models page replaces them (:meth:`PlanModel.load`). The model validates them through the job schema
(``Job.from_mapping``, with the cost assumptions of the context) on the GUI thread (well under a
millisecond), plans a valid job in a worker (``plan_service.plan_bundle``) and tells every observer:

- ``values_changed(dict)``: the form's values changed (an edit, an undo, an opened scenario);
- ``input_invalid(object)``: a :class:`JobInputError` (``.field`` and a one-line message); the last plan stays
  in :attr:`bundle` but is *stale* (``stale_changed(True)``) until the inputs are valid again;
- ``plan_ready(object)``: the :class:`PlanBundle` of the current job.

An edit during a plan waits for it and then plans the newest inputs only, so a stale result never
overwrites a newer one.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QTimer, Signal, Slot
from PySide6.QtGui import QUndoCommand, QUndoStack

from advisor.gui.plan_service import DEFAULT_INPUTS, PlanBundle, plan_bundle
from advisor.gui.workers import PooledWorker
from advisor.job import JOB_FIELDS, Job, JobInputError

DEBOUNCE_MS = 120
# The plan ahead waits one frame after the plan shown arrives: the repaint that plan asked for is queued by then and
# drawn first (a 0 ms timer could fire before it, the worker then holding the interpreter while the page draws).
AHEAD_DELAY_MS = 16
SETTINGS_KEY = "planner/inputs"


def plan_or_error(job: Job, catalog, calibration=None, **kw) -> PlanBundle | JobInputError:
    """Plan a job (runs in a worker); an input the catalog cannot honour comes back as the error, not raised.

    ``kw``: this machine's owned GPUs and host figures (``AppContext.plan_kw``)."""
    try:
        return plan_bundle(job, catalog, calibration, **kw)
    except JobInputError as exc:
        return exc


def _step_of(before: dict, after: dict) -> tuple[str, int] | None:
    """``(field, +1 or -1)`` where one whole-number field moved by one and nothing else changed, else None.

    A field left out has its schema default (the form leaves out what equals it), so a spin box stepped off or
    onto its default, micro-batch 1 to 2, is a step."""
    changed = [k for k in before.keys() | after.keys() if before.get(k) != after.get(k)]
    if len(changed) != 1:
        return None
    field = JOB_FIELDS.get(changed[0])
    default = field.default if field is not None else None
    a, b = before.get(changed[0], default), after.get(changed[0], default)
    if type(a) is not int or type(b) is not int or abs(b - a) != 1:
        return None
    return changed[0], b - a


class _EditCommand(QUndoCommand):
    """One form edit: the values before and after. Consecutive edits of the same field merge (typing)."""

    def __init__(self, model: PlanModel, before: dict, after: dict) -> None:
        changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        super().__init__(f"change {', '.join(changed) or 'inputs'}")
        self.model = model
        self.before = before
        self.after = after
        self.keys = tuple(changed)

    def id(self) -> int:  # noqa: A003 (Qt API)
        return 1 if len(self.keys) == 1 else -1

    def mergeWith(self, other) -> bool:  # noqa: N802 (Qt API)
        if not isinstance(other, _EditCommand) or other.keys != self.keys:
            return False
        self.after = other.after
        return True

    def redo(self) -> None:
        self.model._apply(self.after)

    def undo(self) -> None:
        self.model._apply(self.before)


class PlanModel(QObject):
    """The current job (form values, validated :class:`Job`) and its plan.

    Attributes:
        values: the Planner form's values (schema field names; a number field that is not a number keeps
            its text, so the schema names it).
        job: the last valid job (None before the first).
        error: the :class:`JobInputError` of the current values, or None when they are valid.
        bundle: the last plan (of :attr:`job`); stale while :attr:`error` is set.
        undo_stack: form edits (Ctrl+Z / Ctrl+Shift+Z on the Planner page).
    """

    values_changed = Signal(dict)
    input_invalid = Signal(object)
    plan_ready = Signal(object)
    stale_changed = Signal(bool)

    def __init__(self, ctx, values: dict | None = None, parent=None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.values: dict = dict(DEFAULT_INPUTS if values is None else values)
        self.job: Job | None = None
        self.error: JobInputError | None = None
        self.bundle: PlanBundle | None = None
        self.plans_done = 0
        self.undo_stack = QUndoStack(self)
        # one pooled worker for every plan (a thread started per plan cost the GUI thread ~0.6 ms an edit)
        self._worker = PooledWorker(self)
        self._worker.result_ready.connect(self._on_worker_result_ready)
        self._worker.failed.connect(self._on_worker_failed)
        self._worker.done.connect(self._on_worker_done)
        self._running = False  # a plan is in the worker (until its done arrives here)
        self._pending = False
        # a number stepped by one (a spin box's arrow, a wheel notch): (field, step); once its plan is shown the
        # worker plans the next step ahead while the user reads, so that edit finds the planner's kept work (a job
        # new to the planner takes ~10 ms, one planned before ~2 ms); what it plans ahead is never shown
        self._stepped: tuple[str, int] | None = None
        self._ahead = False  # the worker is planning ahead (its result is dropped)
        self.plan_ahead = True  # whether to (benchmarks/bench_gui.py --no-ahead times the edits without)
        # The plan ahead starts a frame after the plan (AHEAD_DELAY_MS), once the repaint it asked for is drawn:
        # the worker holds the interpreter while it plans, so started at once (as the plan's done arrives, before
        # the repaint) a job new to the planner (~10 ms) ran beside the drawing of the plan just shown and the GUI
        # thread waited for the interpreter in the middle of it (callgrind, bench_gui's first edits to
        # micro-batch 4 to 7: 53-69 M of the worker's instructions inside the edit, 8-25 M once it waits).
        self._ahead_timer = QTimer(self)
        self._ahead_timer.setSingleShot(True)
        self._ahead_timer.setInterval(AHEAD_DELAY_MS)
        self._ahead_timer.timeout.connect(self._on_ahead_timer_timeout)
        self._valid = False  # whether the current values passed the schema (the error clears with the next plan)
        self._generation = 0  # counts validations: a result of an older one is out of date
        self._planned_generation = -1
        self._calibration = None
        self._calibration_loaded = False
        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(DEBOUNCE_MS)
        self._debounce.timeout.connect(self._on_debounce_timeout)
        ctx.assumptions_changed.connect(self._on_ctx_assumptions_changed)
        ctx.calibration_changed.connect(self._on_ctx_calibration_changed)
        ctx.catalog_changed.connect(self._on_ctx_catalog_changed)
        ctx.owned_changed.connect(self._on_ctx_catalog_changed)  # this machine's GPUs or yours: plan again
        ctx.machine_ready.connect(self._on_ctx_machine_ready)
        self._validate()

    # ------------------------------------------------------------ state
    @property
    def stale(self) -> bool:
        """True while the inputs are invalid: the plan on screen is for earlier inputs."""
        return self.error is not None

    @property
    def result(self):
        """The current plan's ``PlanResult``, or None (no plan yet, or the inputs are invalid)."""
        return None if self.bundle is None or self.stale else self.bundle.result

    def is_idle(self) -> bool:
        """True when no plan is running or waiting."""
        return (not self._running and not self._debounce.isActive() and not self._pending
                and not self._ahead_timer.isActive())

    # ------------------------------------------------------------ changing the values
    def edit(self, values: dict) -> None:
        """The form's new values (undoable; consecutive edits of one field merge)."""
        values = dict(values)
        if values != self.values:
            self.undo_stack.push(_EditCommand(self, dict(self.values), values))

    def load(self, values: dict) -> None:
        """Replace the values (an opened scenario, a model from the Models page); the undo history restarts."""
        self.undo_stack.clear()
        self._apply(dict(values), force=True)

    def _apply(self, values: dict, force: bool = False) -> None:
        if values == self.values and not force:
            return
        self._stepped = None if force else _step_of(self.values, values)
        self.values = dict(values)
        self.values_changed.emit(dict(values))
        if self._validate():
            self._debounce.start()

    def _validate(self) -> bool:
        """Check the values through the schema (and the catalog's names). Returns True when valid."""
        self._generation += 1
        mapping = self.ctx.plan_values(self.values)  # the app's settings: cost assumptions, the GPUs owned
        try:
            job = Job.from_mapping(mapping)
            self._check_catalog(job)
        except JobInputError as exc:
            self._valid = False
            self._set_error(exc)
            return False
        self.job = job
        self._valid = True
        return True

    def _check_catalog(self, job: Job) -> None:
        """Accelerator ids the catalog lacks (cheap, here); a model spec is resolved by the planner in the worker
        (it may read a file), and a name it cannot resolve comes back as the error."""
        cat = self.ctx.catalog
        for acc in job.accelerator:
            if acc not in cat.accelerators:
                raise JobInputError("accelerator", f"unknown accelerator {acc!r}")

    def _set_error(self, exc: JobInputError | None) -> None:
        was = self.stale
        self.error = exc
        if exc is not None:
            self.input_invalid.emit(exc)
        if self.stale != was:
            self.stale_changed.emit(self.stale)

    # ------------------------------------------------------------ planning
    def ensure_plan(self) -> None:
        """Plan the current values unless a plan of them exists or is on its way."""
        if self.bundle is None and self.is_idle() and self._valid:
            self.plan_now()

    def plan_now(self) -> None:
        """Plan the current job in a worker now (or once the running plan is done)."""
        self._debounce.stop()
        self._ahead_timer.stop()
        if self._running:
            self._pending = True
            return
        if self.job is None or not self._valid:
            return
        if not self._calibration_loaded:
            from advisor.store.calibration import load_planner_calibration

            self._calibration, self._calibration_loaded = load_planner_calibration(), True
        self._planned_generation = self._generation
        self._running = True
        self._worker.start(plan_or_error, self.job, self.ctx.catalog, self._calibration, **self.ctx.plan_kw())

    @Slot()
    def _on_debounce_timeout(self) -> None:
        self.plan_now()

    @Slot()
    def _on_ahead_timer_timeout(self) -> None:
        if (self.plan_ahead and self._stepped is not None and self._valid and not self._running
                and not self._pending and not self._debounce.isActive()):
            self._plan_ahead()

    def _plan_ahead(self) -> None:
        """Plan the stepped field's next step in the worker (nothing shown): the planner keeps its work."""
        field, step = self._stepped
        self._stepped = None
        values = dict(self.values)
        values[field] = values[field] + step
        try:
            job = Job.from_mapping(self.ctx.plan_values(values))
            self._check_catalog(job)
        except JobInputError:
            return  # past the field's range: nothing to plan
        self._ahead = self._running = True
        self._worker.start(plan_or_error, job, self.ctx.catalog, self._calibration, **self.ctx.plan_kw())

    @Slot(object)
    def _on_worker_result_ready(self, out) -> None:
        if self._ahead or self._pending or self._planned_generation != self._generation:  # planned ahead, or
            return  # newer inputs came since
        if isinstance(out, JobInputError):
            self._set_error(out)
            return
        self.bundle = out
        self.plans_done += 1
        self._set_error(None)
        self.plan_ready.emit(out)

    @Slot(str)
    def _on_worker_failed(self, reason: str) -> None:
        if not self._ahead and not self._pending and self._planned_generation == self._generation:
            self._set_error(JobInputError("plan", reason.split(": ", 1)[-1]))

    @Slot()
    def _on_worker_done(self) -> None:
        self._running, ahead, self._ahead = False, self._ahead, False
        if self._pending:
            self._pending = False
            self.plan_now()
        elif (not ahead and self.plan_ahead and self._stepped is not None and self._valid
              and not self._debounce.isActive()):
            self._ahead_timer.start()  # once the plan is drawn (see __init__)

    # ------------------------------------------------------------ what else changes a plan
    @Slot(dict)
    def _on_ctx_assumptions_changed(self, _overrides: dict) -> None:
        if self._validate():
            self._debounce.start()

    @property
    def calibration(self):
        """The calibration the current plan was made with (None before the first plan or without one), so work
        that re-plans it (the tornado of an exported report) uses the same figures."""
        return self._calibration

    @Slot()
    def _on_ctx_calibration_changed(self) -> None:
        self._calibration_loaded = False
        if self._validate():
            self._debounce.start()

    @Slot()
    def _on_ctx_catalog_changed(self) -> None:
        if self._validate():
            self._debounce.start()

    @Slot(object)
    def _on_ctx_machine_ready(self, _profile) -> None:
        if not self.ctx.local_known:  # this machine for the planner follows; owned_changed plans then
            return
        if self._validate():  # this machine's GPUs are options now
            self._debounce.start()

    def shutdown(self) -> None:
        """Stop the timer and the running plan (idempotent)."""
        self._debounce.stop()
        self._ahead_timer.stop()
        self._pending = False
        self._worker.stop()
