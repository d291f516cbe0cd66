"""Planner page: inputs on the left, re-planned as they change; memory per device and a table of accelerators.

Edits restart a short debounce timer; when it fires the request is validated on the GUI thread (cheap)
and planned in a worker (about 25 ms). An edit during a plan waits for it and then plans the newest
inputs only, so the GUI thread never waits and stale results never overwrite new ones.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Slot
from PySide6.QtWidgets import QHBoxLayout, QLabel, QScrollArea, QSplitter, QVBoxLayout, QWidget

from advisor.colours import memory_part_colour
from advisor.gui import settings as settings_mod
from advisor.gui import theme as themes
from advisor.gui.pages.base import Page
from advisor.gui.plan_service import CAPACITY_CANDIDATES, DEFAULT_INPUTS, per_accelerator, plan_bundle
from advisor.gui.widgets import plots
from advisor.gui.widgets.context_plot import ContextSweepWidget
from advisor.gui.widgets.fit_advice import FitAdviceWidget
from advisor.gui.widgets.plan_form import RESET, PlanFormWidget
from advisor.gui.widgets.tables import Column, RecordTableModel, fit_columns, make_proxy, make_view
from advisor.gui.workers import GeneratorWorker, release
from advisor.store.calibration import load_calibration
from advisor.units import fmt_count, fmt_hours, fmt_mem, fmt_usd, mem_value, memory_unit, sig3

DEBOUNCE_MS = 120
MEMORY_PARTS = (("weights", "weights_bytes"), ("gradients", "gradients_bytes"), ("optimizer", "optimizer_bytes"),
                ("activations", "activations_bytes"), ("KV cache", "kv_cache_bytes"), ("overhead", "overhead_bytes"))


def _table_columns(machine_ids) -> list[Column]:
    t = themes.current()

    def fit_color(r):
        return t.good if r["fits"] else t.bad

    return [
        Column("accelerator", lambda r: r["name"] + ("  ← this machine" if r["accelerator"] in machine_ids else ""),
               cell_tip=lambda r: r["accelerator"], tip="catalog accelerator; ← marks the GPUs in this machine"),
        Column(f"memory ({memory_unit()})", lambda r: mem_value(r["capacity_bytes"]), sig3, align_right=True,
               tip="memory of one device"),
        Column("fits", lambda r: r["fits"], lambda v: "yes" if v else "no", color=fit_color,
               tip="whether the job fits in device memory at that device count"),
        Column("devices", lambda r: r["devices"], align_right=True,
               tip="devices needed: the fewest that fit, or the count you set"),
        Column(f"per device ({memory_unit()})", lambda r: mem_value(r["memory_per_device_bytes"]), sig3,
               align_right=True, tip="memory each device needs at that count, GB = 1e9 bytes"),
        Column("time", lambda r: r["hours"], fmt_hours, align_right=True, tip="wall-clock time of the job"),
        Column("tokens/s", lambda r: r["tokens_per_s"], lambda v: f"{v:,.0f}", align_right=True,
               tip="training: tokens trained per second; inference: tokens generated per second for the batch"),
        Column("MFU", lambda r: r["mfu"], lambda v: f"{100 * v:.0f} %", align_right=True,
               cell_tip=lambda r: r["mfu_origin"], tip="model FLOPs utilisation assumed (hover a cell for its source)"),
        Column("cheapest job", lambda r: r["cost_usd"], fmt_usd, align_right=True,
               cell_tip=lambda r: f"{r['where']} ({r['kind']})",
               tip="cost of the whole job the cheapest way on this accelerator (home, on-prem or cloud; hover a "
                   "cell for which), USD"),
    ]


class PlannerPage(Page):
    """Plan a job: inputs, memory chart, accelerator table, and a one-line answer."""

    page_id = "planner"
    title = "Planner"

    def __init__(self, ctx, parent=None) -> None:
        super().__init__(ctx, parent)
        self._worker: GeneratorWorker | None = None
        self._pending = False
        self._bars: list = []
        self._cap_lines: list = []
        self.bundle = None
        self.plans_done = 0
        self._drawn = None  # the bundle on screen (drawing waits while the page is hidden)
        self._columns_for: tuple | None = None  # machine ids the table columns and capacity lines were built for
        self._calibration = load_calibration()

        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        split = QSplitter(Qt.Orientation.Horizontal)
        layout.addWidget(split)

        left = QScrollArea()
        left.setWidgetResizable(True)
        left.setMinimumWidth(300)
        form_host = QWidget()
        form_layout = QVBoxLayout(form_host)
        form_layout.setContentsMargins(16, 12, 8, 12)
        form_layout.addWidget(QLabel("<h2 style='margin:0'>Plan a job</h2>"))
        self.form = PlanFormWidget(sorted(ctx.catalog.models), form_host, accelerators=_accelerators(ctx.catalog))
        form_layout.addWidget(self.form)
        form_layout.addStretch(1)
        left.setWidget(form_host)
        split.addWidget(left)

        right = QWidget()
        rl = QVBoxLayout(right)
        rl.setContentsMargins(8, 12, 16, 8)
        self.answer = QLabel("Planning…")
        self.answer.setObjectName("planAnswer")
        self.answer.setWordWrap(True)
        self.answer.setTextFormat(Qt.TextFormat.RichText)
        rl.addWidget(self.answer)
        self.fit_advice = FitAdviceWidget()
        self.fit_advice.setVisible(False)
        self.fit_advice.apply_requested.connect(self._on_fit_advice_apply_requested)
        rl.addWidget(self.fit_advice)
        self.extra = QLabel()  # applied changes the form has no field for (grad_accum, optimizer_offload, ...)
        self.extra.setVisible(False)
        rl.addWidget(self.extra)
        self._extra: dict = {}
        self.chart = plots.make_plot("Memory per device by part, against each accelerator's capacity",
                                     "memory per device", "B", x_label="devices", x_unit="", legend=True,
                                     min_height=260, legend_columns=3, legend_offset=(-10, 8))
        self.chart.setMouseEnabled(x=False, y=False)
        self.chart.setToolTip("Each bar is the memory one device needs at that device count (ZeRO/tensor parallel "
                              "shard it); dashed lines are device capacities: a bar under a line fits that device.")
        rl.addWidget(self.chart, 3)
        self.model = RecordTableModel(_table_columns(set()), [], self)
        self.proxy = make_proxy(self.model, self)
        self.table = make_view(self.proxy)
        self.table.setObjectName("plannerTable")
        self.table.setToolTip("Every accelerator in the catalog; click a header to sort")
        rl.addWidget(self.table, 4)
        self.context_plot = ContextSweepWidget()
        self.context_plot.setVisible(False)
        rl.addWidget(self.context_plot, 1)
        self.timing = QLabel()
        self.timing.setWordWrap(True)  # the status line grows with the plan (ranges, price dates): wrap, never widen
        self.timing.setStyleSheet(f"color: {themes.current().muted}")
        rl.addWidget(self.timing)
        split.addWidget(right)
        split.setStretchFactor(1, 1)
        split.setSizes([340, 1000])

        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(DEBOUNCE_MS)
        self._debounce.timeout.connect(self._on_debounce_timeout)
        self.form.inputs_changed.connect(self._on_form_inputs_changed)
        ctx.assumptions_changed.connect(self._on_ctx_assumptions_changed)
        ctx.calibration_changed.connect(self._on_ctx_calibration_changed)
        ctx.catalog_changed.connect(self._on_ctx_catalog_changed)
        ctx.machine_ready.connect(self._on_ctx_machine_ready)
        ctx.scenario_loaded.connect(self._on_ctx_scenario_loaded)
        ctx.owned_changed.connect(self._on_ctx_owned_changed)

    # ------------------------------------------------------------ re-planning
    @Slot()
    def _on_form_inputs_changed(self) -> None:
        self._debounce.start()

    @Slot()
    def _on_ctx_catalog_changed(self) -> None:
        self.form.w["accelerator"].set_accelerators(_accelerators(self.ctx.catalog))
        self._debounce.start()

    @Slot(dict)
    def _on_ctx_assumptions_changed(self, _overrides: dict) -> None:
        self._debounce.start()

    @Slot()
    def _on_ctx_calibration_changed(self) -> None:
        self._calibration = load_calibration()
        self._debounce.start()

    @Slot(object)
    def _on_ctx_machine_ready(self, _profile) -> None:
        self._debounce.start()  # this machine's GPUs are options now

    @Slot()
    def _on_ctx_owned_changed(self) -> None:
        self._debounce.start()

    @Slot(dict)
    def _on_fit_advice_apply_requested(self, change: dict) -> None:
        """One click on a fit advice: its flags go into the form (or, for a flag the form has no field for,
        into the applied changes shown under the advice) and the job is planned again."""
        in_form = {k: v for k, v in change.items() if k in self.form.w}
        self._extra.update({k: v for k, v in change.items() if k not in self.form.w})
        from advisor.planner.summary import change_flags

        self.extra.setText(f"Applied besides the form: <code>{change_flags(self._extra)}</code>" if self._extra else "")
        self.extra.setVisible(bool(self._extra))
        if in_form:
            self.form.set_values(in_form)
        else:
            self._debounce.start()

    @Slot(dict)
    def _on_ctx_scenario_loaded(self, values: dict) -> None:
        self._extra = {k: v for k, v in values.items() if k not in self.form.w and k not in RESET_EXTRA_SKIP}
        self.extra.setVisible(False)
        self.form.set_values({**RESET, **values})  # a key the scenario leaves out goes back to its default

    @Slot()
    def _on_debounce_timeout(self) -> None:
        self.replan()

    def replan(self) -> None:
        """Validate the inputs and plan them in a worker (or queue them behind the running plan)."""
        from advisor.planner import PlanInputError, PlanRequest

        if self._worker is not None:
            self._pending = True
            return
        try:
            values = self.ctx.plan_values({**self.form.values(), **self._extra})
            request = PlanRequest.from_mapping(values)
        except (PlanInputError, ValueError) as exc:
            self.form.show_error(str(exc), themes.current().bad)
            self.ctx.publish_plan(None, None)
            return
        self.form.show_error("", "")
        self._worker = GeneratorWorker(plan_bundle, request, self.ctx.catalog, self._calibration,
                                       **self.ctx.plan_kw(), parent=self)
        self._worker.result_ready.connect(self._on_worker_result_ready)
        self._worker.failed.connect(self._on_worker_failed)
        self._worker.done.connect(self._on_worker_done)
        self._worker.start()

    @Slot(object)
    def _on_worker_result_ready(self, bundle) -> None:
        if self._pending:  # newer inputs are waiting: do not draw a stale plan
            return
        self.bundle = bundle
        self.plans_done += 1
        if self.isVisible():
            self._show(bundle)
        self.ctx.publish_plan(bundle.request, bundle.result)

    @Slot(str)
    def _on_worker_failed(self, reason: str) -> None:
        if not self._pending:
            self.form.show_error(reason.split(": ", 1)[-1], themes.current().bad)
            self.ctx.publish_plan(None, None)

    @Slot()
    def _on_worker_done(self) -> None:
        worker, self._worker = self._worker, None
        release(worker)
        if self._pending:
            self._pending = False
            self.replan()

    # ------------------------------------------------------------ drawing
    def _machine_ids(self) -> list[str]:
        m = self.ctx.machine
        return [g.catalog_id for g in m.gpus if g.catalog_id] if m is not None else []

    def _show(self, bundle) -> None:
        self._drawn = bundle
        result = bundle.result
        mine = self._machine_ids()
        rows = per_accelerator(result)
        if self._columns_for != tuple(mine):  # first plan, or the machine was detected since
            self._columns_for = tuple(mine)
            self.model = RecordTableModel(_table_columns(set(mine)), rows, self)
            self.proxy.setSourceModel(self.model)
            fit_columns(self.table, max_width=230)
            self._draw_capacities(mine)
        else:
            self.model.set_rows(rows)
        self.answer.setText(self._answer_text(result, rows, mine))
        self.fit_advice.show_plan(result)
        self.context_plot.show_plan(result)
        self._draw_memory(bundle, mine)
        ages = result.price_ages(result.ranked)
        apart = len(result.infeasible)
        self.timing.setText(f"re-planned in {1000 * bundle.elapsed_s:.0f} ms · {len(result.options)} options "
                            f"priced" + (f" ({apart} cannot run as laid out, not ranked)" if apart else "")
                            + f" · cloud {ages.summary() if ages else 'prices as of ' + result.prices_as_of}"
                            + (f" · {'; '.join(result.warnings)}" if result.warnings else ""))

    def _answer_text(self, result, rows, mine) -> str:
        t = themes.current()
        r = result.request
        name = result.model_name or f"a {fmt_count(result.params)}-parameter model"
        work = dict(WORKLOAD_WORDS).get(r.workload, r.workload)
        head = (f"<b style='font-size:13pt'>{work} {name}</b> · {fmt_count(result.params)} parameters · "
                f"{fmt_mem(result.memory.total_bytes)} per device on {result.parallelism.devices} device"
                f"{'s' if result.parallelism.devices > 1 else ''}")
        if result.tokens and r.workload != "inference":
            head += f" · {fmt_count(result.tokens)} tokens"
        from advisor.planner.summary import headline

        mine_option = result.this_machine() or next((o for o in result.options if o.kind == "owned"), None)
        lines = []
        if mine_option is not None:  # the headline starts with this machine: fits or not, time, cost, rent
            colour = t.good if mine_option.fits else t.bad
            lines.append(f"<span style='color:{colour}; font-size:12pt'><b>{headline(result)}</b></span>")
        lines.append(head)
        fastest = min((x for x in rows if x["fits"]), key=lambda x: (x["hours"], x["accelerator"]), default=None)
        cheapest = result.best()
        if fastest:
            lines.append(f"Fastest: {fastest['devices']}× {fastest['name']}, {fmt_hours(fastest['hours'])}. "
                         + (f"Cheapest: {cheapest.devices}× {cheapest.accelerator_name} ({cheapest.kind}), "
                            f"{fmt_usd(cheapest.cost_usd)} in {fmt_hours(cheapest.hours)} — see Compare (Ctrl+5)."
                            if cheapest else ""))
        else:
            lines.append(f"<span style='color:{t.bad}'>Nothing in the catalog fits; add devices or shard "
                         "more.</span>")
        return "<br>".join(lines)

    def _draw_capacities(self, mine) -> None:
        """Dashed capacity lines of this machine's GPUs and the common sizes (they do not depend on the plan)."""
        for line in self._cap_lines:
            self.chart.removeItem(line)
        self._cap_lines.clear()
        cat = self.ctx.catalog.accelerators
        seen: set[int] = set()
        for acc_id in list(dict.fromkeys(mine)) + list(CAPACITY_CANDIDATES):
            acc = cat.get(acc_id)
            if acc is None or round(acc.memory_bytes / 2**30) in seen:
                continue
            seen.add(round(acc.memory_bytes / 2**30))
            colour = themes.current().good if acc_id in mine else themes.current().muted
            label = f"{acc.name} ({fmt_mem(acc.memory_bytes)})" + (" — this machine" if acc_id in mine else "")
            self._cap_lines.append(plots.add_limit_line(self.chart, acc.memory_bytes, label, color_name=colour,
                                                        label_position=0.99, label_anchor=(1, 1)))

    def _draw_memory(self, bundle, mine) -> None:
        counts = [n for n, _ in bundle.memory_by_devices]
        parts = [(label, [getattr(m, attr) for _, m in bundle.memory_by_devices]) for label, attr in MEMORY_PARTS]
        if len(self._bars) != len(parts):
            plots.clear_bars(self.chart, self._bars)
            self._bars = plots.stacked_bars(self.chart, parts, width=0.55, value_format=fmt_mem,
                                            colours=[memory_part_colour(attr) for _, attr in MEMORY_PARTS])
        else:  # move the bars built once: cheaper than new items on every plan
            plots.update_stacked_bars(self._bars, parts)
        plots.set_categories(self.chart, [f"{n} device{'s' if n > 1 else ''}" for n in counts])
        cat = self.ctx.catalog.accelerators
        top = max([sum(getattr(m, a) for _, a in MEMORY_PARTS) for _, m in bundle.memory_by_devices] + [1])
        top_cap = max([cat[a].memory_bytes for a in CAPACITY_CANDIDATES if a in cat] + [0])
        self.chart.setYRange(0, max(top, min(top_cap, 2.5 * top)) * 1.08, padding=0)
        self.chart.setXRange(-0.6, len(counts) - 0.4, padding=0)

    # ------------------------------------------------------------ page hooks
    def on_shown(self) -> None:
        if self.bundle is not None and self._drawn is not self.bundle:
            self._show(self.bundle)
        self.ensure_plan()

    def ensure_plan(self) -> None:
        """Plan the current inputs unless a plan exists or is on its way."""
        if self.bundle is None and self._worker is None and not self._debounce.isActive():
            self.replan()

    def save_state(self, s) -> None:
        try:
            settings_mod.write_json(s, "planner/inputs", self.form.values())
        except ValueError:
            pass

    def restore_state(self, s) -> None:
        self.form.set_values(settings_mod.read_json(s, "planner/inputs", dict(DEFAULT_INPUTS)))

    def is_ready(self) -> bool:
        return self.bundle is not None and self._worker is None and not self._debounce.isActive()

    def prepare_screenshot(self) -> None:
        self.form.set_values({**RESET, **DEFAULT_INPUTS})
        self._debounce.stop()
        self.replan()

    def shutdown(self) -> None:
        self._debounce.stop()
        if self._worker is not None:
            self._worker.stop()


RESET_EXTRA_SKIP = ("assumptions", "notes", "sources")
WORKLOAD_WORDS = (("pretrain", "Pretrain"), ("finetune", "Fine-tune"), ("lora", "LoRA fine-tune"),
                  ("qlora", "QLoRA fine-tune"), ("inference", "Serve"))


def _accelerators(catalog) -> list[tuple]:
    """``(id, name, memory_bytes)`` of every catalog accelerator, by name, for the form's picker."""
    return sorted(((a.id, a.name, a.memory_bytes) for a in catalog.accelerators.values()),
                  key=lambda t: t[1].lower())
