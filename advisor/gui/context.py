"""What the pages share: the catalog, the hardware backends, the current plan and the settings.

Pages never call each other; they read :class:`AppContext` and listen to its signals
(``calibration_changed`` from the probes re-plans, ``catalog_changed`` after the user edits overrides).
The current job and its plan live in ``ctx.plan`` (:class:`advisor.gui.plan_model.PlanModel`, built on first
use so start-up does not import the planner): the Planner, Compare and Machine pages and the File menu observe it.
"""

from __future__ import annotations

import gc
import os
import threading
import time

from PySide6.QtCore import QObject, QSettings, QTimer, Signal, Slot

from advisor.catalog import Catalog, load_catalog

ASSUMPTIONS_KEY = "compare/assumptions"
ASSUMPTION_SOURCES_KEY = "compare/assumption_sources"
APP_SOURCE = "app setting (Compare page assumptions)"  # where an assumption edited in the app comes from
OWN_KEY = "planner/own"  # the GPUs the user owns besides this machine's, as --own specs ("2xrtx-3090")


class AppContext(QObject):
    """Shared state of one main window.

    Args:
        fake_gpu: a fake-hardware scenario name (``--fake-gpu`` or ``ADVISOR_FAKE_GPU``), or None.
        settings: the app's QSettings.
        catalog: a preloaded catalog (tests), or None to load bundled data plus the user's file.
    """

    plan_model_ready = Signal(object)  # the PlanModel, once built (observers that must not build it wait for it)
    assumptions_changed = Signal(dict)  # cost-assumption overrides edited on the Compare page
    calibration_changed = Signal()
    catalog_changed = Signal()
    machine_ready = Signal(object)  # MachineProfile once detection finished
    hardware_failed = Signal(str)  # detection could not run (the reason, one line)
    probe_result = Signal(object)  # a ProbeResult finished on the Probes page
    gpu_events = Signal(object)  # list[MonitorEvent]: a GPU lost/asleep/back, an Xid error, throttling
    page_requested = Signal(str)  # a page asks the window to show another page (by id), e.g. Models -> Planner
    owned_changed = Signal()  # the GPUs the user owns (a setting) or this machine's changed: plan again
    local_ready = Signal()  # ``local`` (this machine for the planner) is read, or ``local_error`` says why not
    sampler_ready = Signal()  # ``sampler`` is running (just after machine_ready: it waits for numpy's import)

    def __init__(self, fake_gpu: str | None, settings: QSettings, catalog: Catalog | None = None,
                 parent=None) -> None:
        super().__init__(parent)
        self.fake_gpu = fake_gpu if fake_gpu is not None else (os.environ.get("ADVISOR_FAKE_GPU") or None)
        self.settings = settings
        # Loaded by the detection worker at start-up (off the GUI thread); read first on the GUI thread (a page
        # restored before detection finished), it is loaded there, once, under the lock.
        self._catalog: Catalog | None = catalog
        self._catalog_lock = threading.Lock()
        self._plan = None
        self.screenshot_keep_inputs = False  # --open FILE --screenshot: show the file's job, not the demo inputs
        from advisor.gui import settings as settings_mod

        # The cost-assumption overrides of the last session (edited on Compare, or from an opened scenario).
        self.assumptions: dict = settings_mod.read_json(settings, ASSUMPTIONS_KEY, {})
        # Where each override came from ("scenario file x.toml", or the app setting), by name.
        sources = settings_mod.read_json(settings, ASSUMPTION_SOURCES_KEY, {})
        self.assumption_sources: dict[str, str] = {
            k: v for k, v in (sources.items() if isinstance(sources, dict) else ())
            if k in self.assumptions and isinstance(v, str)}
        self.own_specs: list[str] = [x for x in settings_mod.read_json(settings, OWN_KEY, []) if isinstance(x, str)]
        self.local = None  # planner.machine.LocalMachine: this machine's GPUs as owned hardware, host figures
        self.local_error: str | None = None  # why ``local`` could not be read (one line)
        self.machine = None
        self.gpu = None
        self.host = None
        self.sampler = None
        self.books = None  # the processes' books (monitor.books.BookKeeper), fed by the sampler
        self.hardware_error: str | None = None
        self.probe_results: dict = {}  # (probe, device) -> the latest ProbeResult of this session
        self.screenshot_mode = False
        self._detect_worker = None
        self._local_worker = None
        self._shut_down = False
        self.event_log: list = []  # every MonitorEvent of this session, oldest first (bounded)
        self._event_bridge = _EventBridge(self)
        self._event_bridge.events_found.connect(self._on_event_bridge_events_found)

    @property
    def catalog(self) -> Catalog:
        """The catalog: bundled data plus the user's overrides (loaded once, from whichever thread asks first)."""
        with self._catalog_lock:
            if self._catalog is None:
                self._catalog = load_catalog()
            return self._catalog

    @catalog.setter
    def catalog(self, value: Catalog) -> None:
        with self._catalog_lock:
            self._catalog = value

    @property
    def catalog_loaded(self) -> bool:
        """Whether the catalog is in memory (reading :attr:`catalog` then does not block)."""
        return self._catalog is not None

    @property
    def simulated(self) -> bool:
        """True when the GPUs shown come from a fake scenario."""
        return bool(self.fake_gpu)

    def reload_catalog(self) -> None:
        """Load the catalog again (after the user's overrides changed) and tell the pages."""
        self.catalog = load_catalog()
        self.catalog_changed.emit()

    @property
    def plan(self):
        """The app's current job and plan (:class:`PlanModel`), built on first use from the last session's inputs."""
        if self._plan is None:
            from advisor.gui import settings as settings_mod
            from advisor.gui.plan_model import SETTINGS_KEY, PlanModel
            from advisor.gui.plan_service import DEFAULT_INPUTS

            values = settings_mod.read_json(self.settings, SETTINGS_KEY, dict(DEFAULT_INPUTS))
            self._plan = PlanModel(self, values if isinstance(values, dict) else dict(DEFAULT_INPUTS), parent=self)
            self.plan_model_ready.emit(self._plan)
        return self._plan

    @property
    def has_plan_model(self) -> bool:
        return self._plan is not None

    @property
    def last_plan(self):
        """The current plan's ``PlanResult`` (None before the first, or while the inputs are invalid)."""
        return None if self._plan is None else self._plan.result

    @property
    def last_request(self):
        """The job of :attr:`last_plan` (None with it)."""
        return None if self.last_plan is None else self._plan.bundle.request

    def save_plan_inputs(self) -> None:
        """Keep the current job's values for the next session."""
        if self._plan is not None:
            from advisor.gui import settings as settings_mod
            from advisor.gui.plan_model import SETTINGS_KEY

            settings_mod.write_json(self.settings, SETTINGS_KEY, self._plan.values)

    def set_assumptions(self, overrides: dict, sources: dict | None = None) -> None:
        """New cost-assumption overrides (Compare page or a scenario): kept for the next session, and every
        page that shows or uses them hears ``assumptions_changed``.

        Args:
            sources: where each value comes from (``"scenario file x.toml"``), by name; None (an edit in the
                app): a value that changed is an app setting, an unchanged one keeps its source.
        """
        from advisor.gui import settings as settings_mod

        if sources is None:
            old = self.assumptions
            sources = {k: self.assumption_sources.get(k, APP_SOURCE) if old.get(k) == v else APP_SOURCE
                       for k, v in overrides.items()}
        self.assumptions = dict(overrides)
        self.assumption_sources = {k: sources.get(k, APP_SOURCE) for k in overrides}
        settings_mod.write_json(self.settings, ASSUMPTIONS_KEY, self.assumptions)
        settings_mod.write_json(self.settings, ASSUMPTION_SOURCES_KEY, self.assumption_sources)
        self.assumptions_changed.emit(dict(overrides))

    def set_own(self, specs: list[str]) -> None:
        """The GPUs the user owns besides this machine's (``--own`` specs), kept for the next session.

        Raises:
            ValueError: a spec that is not COUNTxACCELERATOR or names no catalog accelerator (one line).
        """
        from advisor.gui import settings as settings_mod
        from advisor.job import Job
        from advisor.planner.owned import parse_own

        specs = [x.strip() for x in specs if x.strip()]
        parse_own(Job.from_mapping({"model": "x", "own": specs}).own, self.catalog)
        self.own_specs = specs
        settings_mod.write_json(self.settings, OWN_KEY, specs)
        self.owned_changed.emit()

    def plan_kw(self) -> dict:
        """What the planner is given besides the request: this machine's GPUs and host figures."""
        if self.local is None:
            return {}
        return {"owned": self.local.owned, "host": self.local.host}

    def plan_values(self, values: dict) -> dict:
        """Form values with the app's settings added: cost assumptions and the GPUs the user owns."""
        out = dict(values)
        out["assumptions"] = dict(self.assumptions)
        sources = {k: self.assumption_sources.get(k, APP_SOURCE) for k in self.assumptions}
        if self.own_specs and "own" not in out:
            out["own"] = list(self.own_specs)
            sources["own"] = "app setting (Machine page: GPUs you own)"
        out["sources"] = {**sources, **out.get("sources", {})}
        return out

    def load_probe_results(self, entries=None) -> None:
        """Seed ``probe_results`` with the newest stored result per probe and device (once).

        Args:
            entries: the history rows, newest first, when the start-up worker read them already (opening the
                SQLite file, and creating it on a first start, costs tens of ms: not on the GUI thread); None
                reads them here.
        """
        if getattr(self, "_history_loaded", False):
            return
        self._history_loaded = True
        from advisor.gui.probe_runner import history_entries
        from advisor.probes import ProbeResult

        if entries is None:
            entries = history_entries(limit=200)
        for entry in reversed(entries):  # oldest first, so the newest wins
            if entry.skipped:
                continue
            try:
                result = ProbeResult.from_dict(entry.result)
            except (KeyError, TypeError, ValueError):
                continue
            self.probe_results[(result.probe, result.device)] = result

    def add_probe_result(self, result) -> None:
        """Keep a probe's result for the Machine page and tell the pages."""
        self.probe_results[(result.probe, result.device)] = result
        self.probe_result.emit(result)

    # ------------------------------------------------------------ hardware
    def start_hardware(self) -> None:
        """Open the backends and detect the machine off the GUI thread (idempotent).

        When done, ``machine_ready`` carries the ``MachineProfile`` and ``self.sampler`` is running. Then a second
        worker reads this machine for the planner (``planner.machine.from_profile``, which imports the planner
        and the job schema: a fifth of a second the Machine page does not wait for) and ``local_ready`` and
        ``owned_changed`` follow. torch and JAX are not queried here (that would import torch at start-up); the
        Machine page offers it.
        """
        if self._detect_worker is not None or self.machine is not None:
            return
        from advisor.gui.workers import GeneratorWorker

        self._detect_worker = GeneratorWorker(_start_up, self.fake_gpu, type(self).catalog.fget, self, parent=self)
        self._detect_worker.result_ready.connect(self._on_detect_result_ready)
        self._detect_worker.failed.connect(self._on_detect_failed)
        self._detect_worker.start()

    @Slot(object)
    def _on_detect_result_ready(self, result) -> None:
        (self.gpu, self.host, self.machine), history = result
        self.load_probe_results(history)
        gc.freeze()  # start-up objects are long-lived: keep them out of full collections (see MainWindow.page)
        self.machine_ready.emit(self.machine)
        QTimer.singleShot(0, self._read_local)  # after the pages have drawn the machine (see _read_local)

    def electricity_usd_per_kwh(self) -> float:
        """The home electricity price of the cost assumptions (with the app's overrides), for the books."""
        from advisor.cost.assumptions import CostAssumptions

        try:
            return CostAssumptions().with_overrides(**self.assumptions).electricity_usd_per_kwh
        except (TypeError, ValueError):
            return CostAssumptions().electricity_usd_per_kwh

    def _start_sampler(self) -> None:
        """Start sampling this machine (``advisor.monitor``, imported by the second worker: numpy with it)."""
        if self.sampler is not None or self._shut_down:
            return
        from advisor.monitor import Sampler
        from advisor.monitor.events import EventTracker

        interval = _float(self.settings.value("monitor/interval_s", 1.0), 1.0, 0.1, 10.0)
        tracker = EventTracker()
        bridge = self._event_bridge

        def _find_events(sample) -> None:  # on the sampler thread: quick, and a signal only when something changed
            events = tracker.feed(sample)
            if events:
                bridge.events_found.emit(events)

        from advisor.monitor.books import BookKeeper

        def _process_ended(books) -> None:  # on the sampler thread: one event, the books' summary line
            from advisor.monitor.events import MonitorEvent

            bridge.events_found.emit([MonitorEvent(time.time(), books.gpus[0] if books.gpus else 0, "process",
                                                   f"process ended: {books.summary()}")])

        self.books = BookKeeper(None, self.electricity_usd_per_kwh(), on_end=_process_ended)
        if self.screenshot_mode and self.simulated:
            self.sampler = demo_sampler(self.fake_gpu, seconds=300, listener=_find_events, books=self.books)
        else:
            # Capacity for an hour at 0.1 s, so the 1 h window shows all of it at any interval.
            self.sampler = Sampler(self.gpu, self.host, interval_s=0.2 if self.screenshot_mode else interval,
                                   capacity=36000)
            self.books.sampler = self.sampler
            self.sampler.add_listener(self.books)
            self.sampler.add_listener(_find_events)
            self.sampler.start()
        self.sampler_ready.emit()

    def _read_local(self) -> None:
        """This machine for the planner, off the GUI thread, once the event loop has drawn the machine: started
        from the ``machine_ready`` slot itself, its imports (the planner, the job schema, pyqtgraph) held the GIL
        while the Machine page waited to paint."""
        from advisor.gui.workers import GeneratorWorker

        if self._shut_down or self._local_worker is not None:
            return
        self._local_worker = GeneratorWorker(_local_of, self.machine, parent=self)
        self._local_worker.progressed.connect(self._on_local_worker_progressed)
        self._local_worker.result_ready.connect(self._on_local_worker_result_ready)
        self._local_worker.failed.connect(self._on_local_worker_failed)
        self._local_worker.start()

    @property
    def local_known(self) -> bool:
        """Whether reading this machine for the planner has ended (``local`` set, or ``local_error``)."""
        return self.local is not None or self.local_error is not None

    @Slot(object)
    def _on_local_worker_progressed(self, step) -> None:
        if step == "monitor imported":
            self._start_sampler()
        elif isinstance(step, tuple) and step[0] == "local":
            self.local = step[1]
            self.local_ready.emit()
            self.owned_changed.emit()

    @Slot(object)
    def _on_local_worker_result_ready(self, _result) -> None:
        self._start_sampler()  # no-op unless a step was missed
        gc.freeze()  # the planner's and pyqtgraph's modules are long-lived too (see _on_detect_result_ready)

    @Slot(str)
    def _on_local_worker_failed(self, reason: str) -> None:
        self._start_sampler()  # the monitor does not need the planner
        self.local_error = reason
        self.local_ready.emit()
        self.owned_changed.emit()  # plan without this machine

    def refresh_local(self) -> None:
        """Read this machine's host figures again (after a host-bandwidth probe) and tell the planner."""
        if self.machine is not None:
            from advisor.planner.machine import from_profile

            self.local = from_profile(self.machine)
            self.owned_changed.emit()

    @Slot(object)
    def _on_event_bridge_events_found(self, events) -> None:
        self.event_log = (self.event_log + list(events))[-2000:]
        self.gpu_events.emit(events)

    @Slot(str)
    def _on_detect_failed(self, reason: str) -> None:
        self.hardware_error = reason
        self.hardware_failed.emit(reason)

    def shutdown(self) -> None:
        """Stop the sampler and the detection, close the backends (idempotent)."""
        self._shut_down = True
        for worker in (self._detect_worker, self._local_worker):
            if worker is not None:
                worker.stop()
        if self._plan is not None:
            self._plan.shutdown()
        if self.sampler is not None:
            self.sampler.stop()
            self.sampler = None
        if self.gpu is not None:
            try:
                self.gpu.close()
            finally:
                self.gpu = None


def _start_up(fake_gpu, catalog_of, ctx):
    """The start-up work of the detection worker: load the catalog, detect the machine, read the probe history.

    ``catalog_of(ctx)`` reads the context's catalog under its lock (plain Python, no Qt object touched).

    Returns:
        ``((gpu_backend, host_backend, MachineProfile), history entries newest first)``.
    """
    from advisor.gui.probe_runner import history_entries

    catalog = catalog_of(ctx)
    result = open_hardware(fake_gpu, catalog)
    history = history_entries(limit=200)
    return result, history


def _local_of(profile):
    """The work after the Machine page has drawn the machine, in the order the app needs it: the monitor's
    modules (numpy; the GUI thread starts the sampler on the step ``"monitor imported"``), then this machine for
    the planner (step ``("local", LocalMachine)``: its GPUs as owned hardware, its host figures; the planner and
    the job schema are imported for it), then pyqtgraph (a quarter of a second the start-up does not wait for),
    so the first page with a chart opens without that pause.
    """
    import advisor.monitor  # noqa: F401

    yield "monitor imported"
    from advisor.planner.machine import from_profile

    yield ("local", from_profile(profile))
    import pyqtgraph  # noqa: F401
def open_hardware(fake_gpu, catalog):
    """Open the GPU and host backends and describe the machine (runs in a worker thread).

    Returns:
        ``(gpu_backend, host_backend, MachineProfile)``.
    """
    from advisor.hw import detect_machine, select_backend, select_host_backend

    gpu = select_backend(fake_gpu)
    host = select_host_backend(gpu)
    profile = detect_machine(gpu, host, frameworks=False, catalog=catalog)
    return gpu, host, profile


class _EventBridge(QObject):
    """Carries events found on the sampler thread to the GUI thread (a queued signal)."""

    events_found = Signal(object)


def demo_sampler(scenario: str, seconds: int = 300, listener=None, books=None):
    """A sampler already holding ``seconds`` of a fake scenario at 1 Hz, on a virtual clock (screenshots).

    Its thread is not started: the history is complete when this returns. ``listener`` hears every sample;
    ``books`` (a ``monitor.books.BookKeeper``) keeps the processes' books over them.
    """
    from advisor.hw.fake import FakeGpuBackend, FakeHostBackend
    from advisor.monitor import Sampler

    now = [0.0]

    def clock() -> float:
        return now[0]

    host = FakeHostBackend(clock=clock, wall_clock=lambda: 1.7e9 + now[0])
    sampler = Sampler(FakeGpuBackend(scenario, clock=clock), host, interval_s=1.0,
                      capacity=36000, clock=clock, wall_clock=lambda: 1.7e9 + now[0], process_interval_s=0.0,
                      call_timeout_s=None)
    if books is not None:
        books.sampler = sampler
        sampler.add_listener(books)
    if listener is not None:
        sampler.add_listener(listener)
    for _ in range(seconds):
        sampler.tick()
        now[0] += 1.0
    return sampler


def _float(value, default: float, lo: float, hi: float) -> float:
    try:
        return min(hi, max(lo, float(value)))
    except (TypeError, ValueError):
        return default
