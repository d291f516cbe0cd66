"""Planner page: inputs on the left, re-planned as they change; memory per device and a table of accelerators.

The page is a view of the app's plan model (``ctx.plan``, :mod:`advisor.gui.plan_model`): a form edit goes
to the model (undoable: Ctrl+Z, Ctrl+Shift+Z), which validates it through the job schema and plans it in a
worker; the page draws each new plan by updating the items built once (bars by ``setOpts``, table rows by
model updates). While the inputs are invalid the reason is shown beside the field and the old plan is
greyed out under a "Not current" line.
"""

from __future__ import annotations

import html

import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer, Slot
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QGraphicsItem,
    QHBoxLayout,
    QLabel,
    QScrollArea,
    QSplitter,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from advisor.colours import memory_part_colour
from advisor.cost.price_dates import price_date_label
from advisor.gui import theme as themes
from advisor.gui.compare_data import short_name
from advisor.gui.pages.base import Page
from advisor.gui.plan_service import CAPACITY_CANDIDATES, DEFAULT_INPUTS, WORKLOAD_WORDS, per_accelerator
from advisor.gui.safe_text import rich, set_plain, tip
from advisor.gui.widgets import plots
from advisor.gui.widgets.context_plot import ContextSweepWidget
from advisor.gui.widgets.fit_advice import FitAdviceWidget
from advisor.gui.widgets.plan_form import PlanFormWidget
from advisor.gui.widgets.stale import fade_out
from advisor.gui.widgets.tables import Column, RecordTableModel, fit_columns, make_proxy, make_view
from advisor.gui.widgets.wrapped import LayoutGate, WrappedLabel
from advisor.units import fmt_count, fmt_hours, fmt_mem, fmt_usd, mem_value, memory_unit, sig3

MEMORY_PARTS = (("weights", "weights_bytes"), ("gradients", "gradients_bytes"), ("optimizer", "optimizer_bytes"),
                ("activations", "activations_bytes"), ("KV cache", "kv_cache_bytes"), ("overhead", "overhead_bytes"))


def _table_columns(machine_ids, serving: bool = False) -> list[Column]:
    """The accelerator table's columns; a serving plan adds $ per million tokens and per million requests."""
    t = themes.current()

    def fit_color(r):
        return t.good if r["fits"] else t.bad

    return [
        Column("accelerator", lambda r: r["name"] + ("  ← this machine" if r["accelerator"] in machine_ids else "")
               + ("" if r.get("stack_ok", True) else f"  [{r['stack_reason']}]"),
               cell_tip=lambda r: r["accelerator"] + ("" if r.get("stack_ok", True) else
                                                      f": off the job's software stack, {r['stack_reason']}"),
               color=lambda r: None if r.get("stack_ok", True) else t.warn,
               tip="catalog accelerator; ← marks the GPUs in this machine; [needs …] marks a part that does not "
                   "run the job's software stack (Software stack in the form), listed after those that do"),
        Column(f"memory ({memory_unit()})", lambda r: mem_value(r["capacity_bytes"]), sig3, align_right=True,
               tip="memory of one device"),
        Column("fits", lambda r: r["fits"], lambda v: "yes" if v else "no", color=fit_color,
               tip="whether the job fits in device memory at that device count"),
        Column("devices", lambda r: r["devices"], align_right=True,
               tip="devices needed: the fewest that fit, or the count you set"),
        Column(f"per device ({memory_unit()})", lambda r: mem_value(r["memory_per_device_bytes"]), sig3,
               align_right=True, tip="memory each device needs at that count, GB = 1e9 bytes"),
        Column("time", lambda r: r["hours"], fmt_hours, align_right=True,
               cell_tip=lambda r: "80 % range " + _range(r.get("hours_interval"), fmt_hours),
               tip="wall-clock time of the job (hover a cell for its 80 % range)"),
        Column("tokens/s", lambda r: r["tokens_per_s"], lambda v: f"{v:,.0f}", align_right=True,
               cell_tip=lambda r: "80 % range " + _range(r.get("tokens_per_s_interval"), lambda v: f"{v:,.0f}"),
               tip="training: tokens trained per second; inference: tokens generated per second for the batch"),
        Column("80 % range", lambda r: (r.get("tokens_per_s_interval") if serving else r.get("hours_interval"))
               or (0.0, 0.0), lambda v: _range(v, (lambda x: f"{x:,.0f}") if serving else fmt_hours),
               align_right=True,
               tip=("tokens/s" if serving else "time") + " that 80 % of published measurements of the same kind "
                   "fall within (docs/method.md, 'Calibration on published measurements')"),
        Column("MFU", lambda r: r["mfu"], lambda v: f"{100 * v:.0f} %", align_right=True,
               cell_tip=lambda r: r["mfu_origin"], tip="model FLOPs utilisation assumed (hover a cell for its source)"),
        Column("cheapest job", lambda r: r["cost_usd"], fmt_usd, align_right=True,
               cell_tip=lambda r: f"{r['where']} ({r['kind']})" + (
                   f"; its price is over a year old ({price_date_label(r['price_date'])})" if r["price_stale"] else ""),
               color=lambda r: t.warn if r["price_stale"] else None,
               tip="cost of the whole job the cheapest way on this accelerator (home, on-prem or cloud; hover a "
                   "cell for which), USD; in the warning colour when that price is over a year old"),
    ] + ([
        Column("$/M tokens", lambda r: r.get("usd_per_million_tokens"), _usd_or_dash, align_right=True,
               tip="serving: the option's whole cost per hour over its generated tokens per hour, USD per million "
                   "tokens"),
        Column("$/M requests", lambda r: r.get("usd_per_million_requests"), _usd_or_dash, align_right=True,
               tip="serving: the option's whole cost per hour over its finished requests per hour, USD per "
                   "million requests"),
    ] if serving else [])


def _usd_or_dash(v) -> str:
    return "-" if v is None else fmt_usd(v)


def _range(pair, fmt) -> str:
    """``low–high`` of an 80 % interval, one unit where both ends share it; ``-`` when there is none."""
    if not pair or not pair[1]:
        return "-"
    lo, hi = fmt(pair[0]), fmt(pair[1])
    unit = lo.rpartition(" ")[2]
    if " " in lo and hi.endswith(" " + unit):
        lo = lo.rpartition(" ")[0]
    return f"{lo}–{hi}"


TABLE_MIN_ROWS = 8


class PlannerPage(Page):
    """Plan a job: the form (the view of ``ctx.plan``), memory chart, accelerator table, and a one-line answer."""

    page_id = "planner"
    title = "Planner"

    def __init__(self, ctx, parent=None) -> None:
        super().__init__(ctx, parent)
        self.plan = ctx.plan
        self._bars: list = []
        self._cap_lines: list = []
        self._legend_caps: dict[str, object] = {}  # capacity lines whose label is in the legend: name -> sample
        self._drawn = None  # the bundle on screen (drawing waits while the page is hidden)
        self._from_form: dict | None = None  # the values the form is handing the model now (an edit)
        self._columns_for: tuple | None = None  # machine ids the table columns and capacity lines were built for
        self._ranges: tuple | None = None  # the chart's (y top, x range) as set last
        self._categories: list[str] = []  # the chart's device-count labels as set last
        self._bars_shape: tuple | None = None  # (parts, device counts) the bar items were built for

        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        split = QSplitter(Qt.Orientation.Horizontal)
        layout.addWidget(split)

        left = QScrollArea()
        left.setWidgetResizable(True)
        left.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)  # the form fits its width
        left.setMinimumWidth(340)
        form_host = QWidget()
        form_layout = QVBoxLayout(form_host)
        form_layout.setContentsMargins(16, 12, 8, 12)
        head = QHBoxLayout()
        head.addWidget(QLabel("<h2 style='margin:0'>Plan a job</h2>"), 1)
        stack = self.plan.undo_stack
        # Actions of our own (not createUndoAction): their text stays "Undo" so the buttons keep their width.
        self.undo_action = QAction("Undo", self)
        self.undo_action.setShortcut(QKeySequence.StandardKey.Undo)
        self.undo_action.triggered.connect(stack.undo)
        stack.canUndoChanged.connect(self.undo_action.setEnabled)
        stack.undoTextChanged.connect(self._on_stack_undo_text_changed)
        self.redo_action = QAction("Redo", self)
        self.redo_action.setShortcuts([QKeySequence("Ctrl+Shift+Z"), QKeySequence.StandardKey.Redo])
        self.redo_action.triggered.connect(stack.redo)
        stack.canRedoChanged.connect(self.redo_action.setEnabled)
        stack.redoTextChanged.connect(self._on_stack_redo_text_changed)
        for action in (self.undo_action, self.redo_action):
            action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            self.addAction(action)
            button = QToolButton()
            button.setDefaultAction(action)
            head.addWidget(button)
        self._on_stack_undo_text_changed(stack.undoText())
        self._on_stack_redo_text_changed(stack.redoText())
        self.undo_action.setEnabled(stack.canUndo())
        self.redo_action.setEnabled(stack.canRedo())
        form_layout.addLayout(head)
        self.form = PlanFormWidget(sorted(ctx.catalog.models), form_host, accelerators=_accelerators(ctx.catalog))
        form_layout.addWidget(self.form)
        form_layout.addStretch(1)
        left.setWidget(form_host)
        split.addWidget(left)

        right = QWidget()
        rl = QVBoxLayout(right)
        rl.setContentsMargins(8, 12, 16, 8)
        self.stale_label = QLabel()
        self.stale_label.setObjectName("planStale")
        self.stale_label.setWordWrap(True)
        self.stale_label.setVisible(False)
        rl.addWidget(self.stale_label)
        self.answer = WrappedLabel("Planning…", hint_at_width=True)  # its width is the column's
        self.answer.setObjectName("planAnswer")
        self.answer.setTextFormat(Qt.TextFormat.RichText)
        rl.addWidget(LayoutGate(self.answer))  # the page laid out again only when the answer's size changes
        self.fit_advice = FitAdviceWidget()
        self.fit_advice.setVisible(False)
        self.fit_advice.apply_requested.connect(self._on_fit_advice_apply_requested)
        rl.addWidget(self.fit_advice)
        self.chart = plots.make_plot("Memory per device by part, against capacity",
                                     "memory per device", "B", x_label="devices", x_unit="", legend=True,
                                     min_height=260, legend_columns=3, legend_offset=(-10, 8))
        self.chart.setMouseEnabled(x=False, y=False)
        keep_axis_pictures(self.chart.getAxis("left"))  # the y range steps among a few nice values
        # after a resize the lines learn their new length first: place the labels once that is done
        self._place_timer = QTimer(self, singleShot=True, interval=0)
        self._place_timer.timeout.connect(self._place_capacity_labels)
        self.chart.getViewBox().sigResized.connect(self._place_timer.start)
        self.chart.getViewBox().sigResized.connect(self._centre_axis_title)
        self.chart.setToolTip("Each bar is the memory one device needs at that device count (ZeRO/tensor parallel "
                              "shard it); dashed lines are device capacities: a bar under a line fits that device.")
        rl.addWidget(self.chart, 3)
        self.model = RecordTableModel(_table_columns(set()), [], self)
        self.proxy = make_proxy(self.model, self)
        self.table = make_view(self.proxy)
        self.table.setObjectName("plannerTable")
        self.table.setToolTip("Every accelerator in the catalog; click a header to sort")
        # at least TABLE_MIN_ROWS rows stay visible: where the fit advice and the context sweep take the room,
        # the page scrolls instead of squeezing the table to two rows
        rows = self.table.verticalHeader().defaultSectionSize() * TABLE_MIN_ROWS
        self.table.setMinimumHeight(rows + self.table.horizontalHeader().sizeHint().height()
                                    + self.table.horizontalScrollBar().sizeHint().height() + 4)
        rl.addWidget(self.table, 4)
        self.context_plot = ContextSweepWidget()
        self.context_plot.setVisible(False)
        rl.addWidget(self.context_plot, 1)
        self.timing = WrappedLabel()  # wrapped: a long status line must not set the splitter's minimum width
        self.timing.setStyleSheet(f"color: {themes.current().muted}")
        rl.addWidget(LayoutGate(self.timing))
        split.addWidget(right)
        split.setStretchFactor(1, 1)
        # the form column is as wide as its widest row (plus the scroll bar), so nothing in it is clipped
        form_w = max(340, form_host.sizeHint().width() + left.verticalScrollBar().sizeHint().width() + 4)
        left.setMinimumWidth(form_w)
        split.setSizes([form_w, 1000])
        # greyed out while the plan is stale
        self._faded = [self.answer, self.chart, self.table, self.timing, self.fit_advice, self.context_plot]

        self.form.show_values(self.plan.values)
        self.form.inputs_changed.connect(self._on_form_inputs_changed)
        self.plan.values_changed.connect(self._on_plan_values_changed)
        self.plan.input_invalid.connect(self._on_plan_input_invalid)
        self.plan.stale_changed.connect(self._on_plan_stale_changed)
        self.plan.plan_ready.connect(self._on_plan_plan_ready)
        ctx.catalog_changed.connect(self._on_ctx_catalog_changed)
        ctx.machine_ready.connect(self._on_ctx_machine_ready)
        if self.plan.error is not None:
            self._on_plan_input_invalid(self.plan.error)
            self._on_plan_stale_changed(True)

    # ------------------------------------------------------------ the model
    @property
    def bundle(self):
        """The plan on screen (or to be drawn): the model's last plan."""
        return self.plan.bundle

    @property
    def plans_done(self) -> int:
        return self.plan.plans_done

    @Slot()
    def _on_form_inputs_changed(self) -> None:
        values = self.form.values()
        self._from_form = values  # the model's echo of them needs no second read of the form
        try:
            self.plan.edit(values)
        finally:
            self._from_form = None

    @Slot(dict)
    def _on_plan_values_changed(self, values: dict) -> None:
        if values != self._from_form:  # an undo, an opened scenario: the form shows them (an edit's own: it does)
            self.form.show_values(values)

    @Slot(str)
    def _on_stack_undo_text_changed(self, text: str) -> None:
        self.undo_action.setToolTip(tip(f"Undo {text} (Ctrl+Z)") if text else "Undo the last form edit (Ctrl+Z)")

    @Slot(str)
    def _on_stack_redo_text_changed(self, text: str) -> None:
        self.redo_action.setToolTip(tip(f"Redo {text} (Ctrl+Shift+Z)") if text else "Redo the form edit undone "
                                                                                     "(Ctrl+Shift+Z)")

    @Slot(object)
    def _on_plan_input_invalid(self, exc) -> None:
        self.form.show_error(exc.field, str(exc))
        if self.plan.stale:
            self._on_plan_stale_changed(True)  # the line above the plan names the newest reason

    @Slot(bool)
    def _on_plan_stale_changed(self, stale: bool) -> None:
        """Grey out the plan on screen while the inputs are invalid, and say so."""
        if not stale:
            self.form.clear_error()
        t = themes.current()
        reason = str(self.plan.error) if stale and self.plan.error is not None else ""
        self.stale_label.setText(f"<b style='color:{t.bad}'>Not current</b>: the plan below is for the last valid "
                                 f"inputs. Fix the input named on the left to plan again ({reason})." if stale else "")
        self.stale_label.setVisible(stale)
        fade_out(self._faded, stale)

    @Slot(object)
    def _on_plan_plan_ready(self, bundle) -> None:
        if self.isVisible():
            self._show(bundle)

    @Slot(dict)
    def _on_fit_advice_apply_requested(self, change: dict) -> None:
        """One click on a fit advice: its flags (every one a schema field) become the job's, undoable."""
        self.plan.edit({**self.plan.values, **change})

    @Slot()
    def _on_ctx_catalog_changed(self) -> None:
        self.form.w["accelerator"].set_accelerators(_accelerators(self.ctx.catalog))

    @Slot(object)
    def _on_ctx_machine_ready(self, _profile) -> None:
        if self.bundle is not None and self.isVisible():
            self._show(self.bundle)

    def replan(self) -> None:
        """Plan the current inputs now (the model validates them; a plan already running is followed by one more)."""
        self.plan.plan_now()

    # ------------------------------------------------------------ drawing
    def _machine_ids(self) -> list[str]:
        m = self.ctx.machine
        return [g.catalog_id for g in m.gpus if g.catalog_id] if m is not None else []

    def _show(self, bundle) -> None:
        self._drawn = bundle
        result = bundle.result
        mine = self._machine_ids()
        rows = per_accelerator(result)
        serving = result.request.workload == "inference"
        if self._columns_for != (tuple(mine), serving):  # first plan, the machine detected since, or serving
            self._columns_for = (tuple(mine), serving)
            self.model = RecordTableModel(_table_columns(set(mine), serving), rows, self)
            self.proxy.setSourceModel(self.model)
            fit_columns(self.table, max_width=230)
            self._draw_capacities(mine)
        else:
            self.model.set_rows(rows)
        self.answer.setText(self._answer_text(result))
        self.fit_advice.show_plan(result)
        self.context_plot.show_plan(result)
        self._draw_memory(bundle, mine)
        apart = len(result.infeasible)
        set_plain(self.timing, f"re-planned in {1000 * bundle.elapsed_s:.0f} ms · {len(result.options)} options "
                            f"priced" + (f" ({apart} cannot run as laid out, not ranked)" if apart else "")
                            + f" · {result.prices_text()}"
                            + (f" · {'; '.join(result.warnings)}" if result.warnings else ""))

    def _answer_text(self, result) -> str:
        t = themes.current()
        r = result.request
        name = rich(result.model_name) if result.model_name else f"a {fmt_count(result.params)}-parameter model"
        work = dict(WORKLOAD_WORDS).get(r.workload, r.workload)
        from advisor.planner.summary import headline_parts, range_text, reach_sentence

        mem_range = range_text(result.memory_interval, fmt_mem)
        head = (f"<b style='font-size:13pt'>{work} {name}</b> · {fmt_count(result.params)} parameters · "
                f"{fmt_mem(result.memory.total_bytes)}{mem_range} per device on {result.parallelism.devices} device"
                f"{'s' if result.parallelism.devices > 1 else ''}")
        if result.tokens and r.workload != "inference":
            head += f" · {fmt_count(result.tokens)} tokens"
        mine_option = result.this_machine() or next((o for o in result.options if o.kind == "owned"), None)
        parts = headline_parts(result, "Jobs per month, under Hardware and cost")
        lines = []
        if mine_option is not None:  # the headline starts with the GPUs one owns: fits or not, time, cost
            colour = t.good if mine_option.fits else t.bad
            lines.append(f"<span style='color:{colour}; font-size:12pt'><b>{rich(parts[0], 500)}</b></span>")
            parts = parts[1:]
        if parts:  # then the cheapest rent that runs it, then what to buy
            lines.append(" ".join(rich(p, 500) for p in parts))
        lines.append(head)
        if result.software is not None:  # the framework profile the figures assume, in one line
            lines.append(f"<span style='color:{t.muted}'>{html.escape(result.software.summary())}</span>")
        fastest = result.fastest()  # an owned option as fast is named first (PlanResult.fastest)
        cheapest = result.best()
        if fastest:
            lines.append(f"Fastest: {fastest.devices}× {rich(fastest.accelerator_name)}"
                         f"{' (yours)' if fastest.kind == 'owned' else ''}, {fmt_hours(fastest.hours)}"
                         f"{range_text(fastest.hours_interval, fmt_hours)}. "
                         + (f"Cheapest: {cheapest.devices}× {rich(cheapest.accelerator_name)} ({cheapest.kind}), "
                            f"{fmt_usd(cheapest.cost_usd)} in {fmt_hours(cheapest.hours)} — see Compare (Ctrl+5)."
                            if cheapest else ""))
        else:
            lines.append(f"<span style='color:{t.bad}'>Nothing in the catalog fits; add devices or shard "
                         "more.</span>")
        reach = reach_sentence(result)  # where the job lies against the calibrated runs (planner.summary.reach)
        if reach:
            lines.append(f"<span style='color:{t.muted}'>{rich(reach, 1000)}</span>")
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
            label = f"{short_name(acc.name)} {fmt_mem(acc.memory_bytes)}" + (", this machine" if acc_id in mine else "")
            line = plots.add_limit_line(self.chart, acc.memory_bytes, label, color_name=colour,
                                        label_position=0.99, label_anchor=(1, 1))
            line.setZValue(20)  # its label over the bars, never under them
            # kept as a pixmap: the bars under it change with every plan and repaint the line's strip, and a dashed
            # antialiased line stroked again each time cost more than the bars (drawn again only on a new range)
            line.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
            line.mine = acc_id in mine
            self._cap_lines.append(line)
        self._place_capacity_labels()

    def _draw_memory(self, bundle, mine) -> None:
        counts = [n for n, _ in bundle.memory_by_devices]
        parts = [(label, [getattr(m, attr) for _, m in bundle.memory_by_devices]) for label, attr in MEMORY_PARTS]
        shape = (len(parts), len(counts))  # the items hold one bar per part and one total label per count
        if shape != self._bars_shape:
            self._bars_shape = shape
            plots.clear_bars(self.chart, self._bars)
            self._bars = plots.stacked_bars(self.chart, parts, width=0.55, value_format=fmt_mem,
                                            colours=[memory_part_colour(attr) for _, attr in MEMORY_PARTS])
        else:  # move the bars and labels built once (setOpts, setText): new items on every plan cost ~9 ms
            plots.update_stacked_bars(self._bars, parts)
        labels = [f"{n} device{'s' if n > 1 else ''}" for n in counts]
        if labels != self._categories:  # new ticks make the axis draw itself again
            self._categories = labels
            plots.set_categories(self.chart, labels)
        top = max([sum(getattr(m, a) for _, a in MEMORY_PARTS) for _, m in bundle.memory_by_devices] + [1])
        # the bars and this machine's capacity set the range; the other capacities show where they fall in it
        mine_cap = max([line.value() for line in self._cap_lines if line.mine] + [0])
        y_top = nice_ceiling(max(top, mine_cap) * 1.15)
        caps = [line.value() for line in self._cap_lines]
        if any(0.9 * y_top < c <= y_top for c in caps):  # a line's label sits above it: leave it room
            y_top = nice_ceiling(1.12 * y_top)
        x_range = (-0.6, len(counts) - 0.4)
        if (y_top, x_range) != self._ranges:  # a range unchanged leaves the axes as drawn (no new ticks)
            self._ranges = (y_top, x_range)
            self.chart.setYRange(0, y_top, padding=0)
            self.chart.setXRange(*x_range, padding=0)
        self._totals = [(i, sum(getattr(m, a) for _, a in MEMORY_PARTS)) for i, (_, m) in
                        enumerate(bundle.memory_by_devices)]
        self._place_capacity_labels()

    @Slot()
    def _centre_axis_title(self) -> None:
        """The vertical axis's title centred on the axis for the text it has now (after the chart's title fitter,
        connected first, has shortened or restored it at this height): pyqtgraph centres it only when the axis is
        resized, for the text it has then, so a title shortened after the axis's last resize sat where the longer
        one was centred, or not, by the order in which the page's layout passes arrived."""
        axis = self.chart.getAxis("left")
        label = axis.label
        y = int(axis.size().height() / 2 + label.boundingRect().width() / 2)  # AxisItem.resizeEvent, 'left'
        if label.pos().y() != y:
            axis.resizeEvent(None)

    @Slot()
    def _place_capacity_labels(self) -> None:
        """Capacity labels clear of each other and of the bars' totals, at the chart's size now (and again on
        each resize): right-aligned at the right edge, moved left where they would overlap."""
        vb = self.chart.getViewBox()
        width, height = vb.width(), vb.height()
        if width <= 0 or height <= 0 or not self._cap_lines:
            return
        (x0, x1), (y0, y1) = vb.viewRange()
        px_y = height / (y1 - y0)
        totals = getattr(self, "_totals", [])
        obstacles = []
        for i, total in totals:
            mid, top = (i - x0) / (x1 - x0), total * px_y
            half_bar = 0.55 / 2 / (x1 - x0)  # stacked_bars(width=0.55)
            obstacles.append((0.0, top, mid - half_bar, mid + half_bar))  # the bar
            obstacles.append((top, top + 18, mid - 35 / width, mid + 35 / width))  # its total, about 70 px wide
        # this machine's lines first (always labelled), then the others from the top
        order = sorted((line for line in self._cap_lines if y0 <= line.value() <= y1),
                       key=lambda line: (not line.mine, -line.value()))
        # no label on another line (a label keeps a pixel off its own)
        obstacles += [(line.value() * px_y - 0.5, line.value() * px_y + 0.5, 0.0, 1.0) for line in order]
        lines = [(line.value() * px_y, min(1.0, (line.label.boundingRect().width() + 6) / width)) for line in order]
        places = plots.place_line_labels(lines, obstacles, (0.99, 0.86, 0.74, 0.62, 0.49, 0.37, 0.24))
        in_legend = []
        for line, place in zip(order, places):
            # a capacity whose label has no free place: this machine's goes to the legend, another is left out
            # (the table lists every accelerator)
            # each only when it changes: showing a label shown already, or placing it where it is, lays its text
            # out again (pyqtgraph's InfLineLabel.setVisible and setPosition), on every re-plan
            if line.isVisible() != (place is not None or line.mine):
                line.setVisible(place is not None or line.mine)
            if line.label.isVisible() != (place is not None):
                line.label.setVisible(place is not None)
            if place is not None:
                slot, above = place
                anchor = (1, 1) if above else (1, 0)
                if line.label.anchors != [anchor, anchor] or line.label.orthoPos != slot:
                    line.label.anchors = [anchor, anchor]
                    line.label.setPosition(slot)
            elif line.mine:
                in_legend.append(line)
        self._capacity_legend(in_legend)

    def _capacity_legend(self, lines) -> None:
        """Legend entries (a dashed sample and the label's text) for capacity lines labelled there."""
        legend = self.chart.getPlotItem().legend
        wanted = {line.label.format: line for line in lines}
        for name in [n for n in self._legend_caps if n not in wanted]:
            legend.removeItem(self._legend_caps.pop(name))
        for name, line in wanted.items():
            if name not in self._legend_caps:
                sample = pg.PlotDataItem([], [], pen=line.pen)
                legend.addItem(sample, name)
                self._legend_caps[name] = sample

    # ------------------------------------------------------------ page hooks
    def on_shown(self) -> None:
        if self.bundle is not None and self._drawn is not self.bundle:
            self._show(self.bundle)
        self.plan.ensure_plan()

    def ensure_plan(self) -> None:
        """Plan the current inputs unless a plan exists or is on its way."""
        self.plan.ensure_plan()

    def is_ready(self) -> bool:
        return self.bundle is not None and self.plan.is_idle() and (self._drawn is self.bundle or not self.isVisible())

    def prepare_screenshot(self) -> None:
        if not self.ctx.screenshot_keep_inputs:
            self.plan.load(dict(DEFAULT_INPUTS))
        self.plan.plan_now()


AXIS_PICTURES = 32  # the axis drawings kept per axis (the y range takes a handful of values, at a few chart sizes)


def keep_axis_pictures(axis, keep: int = AXIS_PICTURES) -> None:
    """Keep the last ``keep`` drawings of a pyqtgraph axis (its ticks, labels and grid) by what they are drawn from,
    and draw one again only for a new range, size, style or pen.

    pyqtgraph drops an axis's drawing on every range change and works its ticks and labels out again (most of it in
    Python), and the Planner's y range moves between a few nice values as an edit moves the bars (a step of the
    micro-batch back and forth changes it twice): a range drawn before is drawn from the picture kept for it. The
    key holds every input of ``AxisItem.generateDrawSpecs`` and ``drawPicture``, so a kept picture is the one
    pyqtgraph would draw."""
    import types
    from collections import OrderedDict

    pictures: OrderedDict = OrderedDict()
    draw = type(axis).paint

    def paint(self, painter, option, widget) -> None:
        if self.picture is None:
            key = _axis_key(self)
            picture = pictures.get(key)
            if picture is not None:
                pictures.move_to_end(key)
                self.picture = picture
            else:
                draw(self, painter, option, widget)  # works the drawing out and plays it
                pictures[key] = self.picture
                while len(pictures) > keep:
                    pictures.popitem(last=False)
                return
        draw(self, painter, option, widget)  # plays the picture

    axis.paint = types.MethodType(paint, axis)


def _axis_key(axis) -> tuple:
    """Everything a pyqtgraph axis's drawing depends on: its range and scale, its geometry and the linked view's (the
    grid spans it), its style, fonts and pens, its ticks as set, and the text room it keeps."""
    from PySide6.QtGui import QFont

    def pen(p) -> tuple:
        return p.color().rgba(), p.widthF(), int(p.style().value), p.isCosmetic()

    view = axis.linkedView()
    style = tuple(sorted((k, v.key() if isinstance(v, QFont) else repr(v)) for k, v in axis.style.items()))
    return (axis.orientation, tuple(axis.range), axis.scale, axis.autoSIPrefixScale, axis.logMode,
            axis.mapRectFromParent(axis.geometry()).getRect(),
            view.mapRectToItem(axis, view.boundingRect()).getRect() if view is not None else None,
            style, pen(axis.pen()), pen(axis.textPen()), axis.grid, repr(axis._tickLevels), repr(axis._tickSpacing),
            getattr(axis, "_tickDensity", None), axis.textWidth, axis.textHeight)


def nice_ceiling(x: float) -> float:
    """The smallest of 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 times a power of ten that is at least ``x`` (> 0), so the
    chart's range moves in steps people read, not with every figure."""
    import math

    if not x > 0 or not math.isfinite(x):
        return 1.0
    power = 10.0 ** math.floor(math.log10(x))
    for step in (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if step * power >= x * (1 - 1e-12):
            return step * power
    return 10 * power


def _accelerators(catalog) -> list[tuple]:
    """``(id, name, memory_bytes)`` of every catalog accelerator, by name, for the form's picker."""
    return sorted(((a.id, a.name, a.memory_bytes) for a in catalog.accelerators.values()),
                  key=lambda t: t[1].lower())
