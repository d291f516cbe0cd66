"""Compare page: what the planned job costs at home, on-prem and in the cloud, and why.

Charts: stacked bars of each option's job cost by part, time against cost with the Pareto front,
and money spent against months on the user's own GPUs, what they could buy and the cheapest rent (break-even
where a purchase's line crosses the rent's). The cost assumptions
sit beside the charts, as a form generated from their declarations (``widgets/assumptions_form.py``);
editing one re-plans through the Planner (``AppContext.set_assumptions``).
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Slot
from PySide6.QtWidgets import (
    QGridLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from advisor.colours import cost_part_colour
from advisor.gui import theme as themes
from advisor.gui.compare_data import (
    chart_selection,
    dearer_hour_example,
    distinct_labels,
    lead_sentences,
    option_label,
    options_csv,
    scatter_flat_text,
)
from advisor.gui.pages.base import Page
from advisor.gui.plan_service import WORKLOAD_WORDS
from advisor.gui.safe_text import rich
from advisor.gui.widgets import plots
from advisor.gui.widgets.assumptions_form import AssumptionsForm
from advisor.gui.widgets.stale import fade_out
from advisor.gui.widgets.tornado_panel import TornadoPanel
from advisor.units import fmt_usd, upper_first

MAIN_ASSUMPTIONS = ("electricity_usd_per_kwh", "utilisation", "hours_per_day", "lifetime_years", "spot")
KIND_INDEX = {"home": 0, "onprem": 1, "cloud": 2, "owned": 3}

SPEND_INDEX = {"owned": 3, "home": 0, "onprem": 1, "cloud": 2}  # the same colours as the scatter's kinds


SIDE_MIN_W = 240  # the assumptions panel: narrowest it may be dragged (its rows wrap, it scrolls)
SIDE_DEFAULT_W = 290  # and its width at start
STACK_BELOW_W = 760  # charts area narrower than this: the time/cost and break-even charts stack


class _WidthWatch(QObject):
    """Calls ``callback(width)`` whenever ``widget`` is resized or shown."""

    def __init__(self, widget: QWidget, callback) -> None:
        super().__init__(widget)
        self._callback = callback
        widget.installEventFilter(self)

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 (Qt API)
        if event.type() in (QEvent.Type.Resize, QEvent.Type.Show):
            self._callback(obj.width())
        return False


AssumptionsWidget = AssumptionsForm  # the generated form (``widgets/assumptions_form.py``)


class ComparePage(Page):
    """Cost of the current plan across home, on-prem and cloud options."""

    page_id = "compare"
    title = "Compare"

    def __init__(self, ctx, parent=None) -> None:
        super().__init__(ctx, parent)
        self._items: list = []
        self._scatter_items: list = []
        self._be_items: list = []
        self.result = None
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        split = QSplitter(Qt.Orientation.Horizontal)
        layout.addWidget(split)

        body = QWidget()
        bl = QVBoxLayout(body)
        bl.setContentsMargins(16, 12, 8, 8)
        self.heading = QLabel("<h2 style='margin:0'>Compare: what the job costs</h2>")
        bl.addWidget(self.heading)
        self.summary = QLabel("Waiting for a plan from the Planner…")
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        self.summary.setObjectName("compareSummary")
        bl.addWidget(self.summary)
        grid = QGridLayout()
        grid.setSpacing(8)
        self.cost_chart = plots.make_plot("Job cost by part (cheapest first)", "option", "", x_label="job cost",
                                          x_unit="USD", legend=True, legend_columns=4, legend_offset=(-10, 4),
                                          min_height=250)
        self.cost_chart.setToolTip("Total cost of the whole job for each option, split into its parts: rent, "
                                   "depreciation, energy, capex share, colocation, support, spot rework…")
        self.cost_chart.getAxis("left").setWidth(265)  # pyqtgraph drops a tick label wider than its axis
        self.cost_chart.getAxis("left").setLabel("")
        self.scatter = plots.make_plot("Time against cost (Pareto front highlighted)", "job cost", "USD",
                                       x_label="job time", x_unit="", legend=True, min_height=250)
        self.scatter.setLogMode(x=True, y=True)
        self.scatter.setToolTip("Every option that fits. The front joins the options no other beats on both time "
                                "and cost: pick along it by how much a faster result is worth to you. Log axes.")
        self.breakeven = plots.make_plot("Money spent over time", "spent", "", x_label="months", x_unit="",
                                         legend=True, min_height=250)
        self.breakeven.setLogMode(x=False, y=True)
        self.breakeven.setToolTip("Money spent after each month at the job's cadence (Jobs per month on the "
                                  "Planner): your GPUs (electricity), a home rig or on-prem servers bought at month "
                                  "0 then their running and monthly costs, and the cheapest rent that runs the job. "
                                  "Where a purchase's line falls below the rent's, buying has paid back.")
        for p in (self.cost_chart, self.scatter, self.breakeven):
            p.setMouseEnabled(x=False, y=False)
        self._grid = grid
        self.tornado = TornadoPanel()  # which input moves the chosen option's total most
        self.stacked = None  # set by _arrange: True when the two small charts sit one under the other
        self._arrange(stacked=False)
        bl.addLayout(grid, 1)
        self.note = QLabel()
        self.note.setWordWrap(True)
        self.note.setStyleSheet(f"color: {themes.current().muted}")
        bl.addWidget(self.note)
        # The charts scroll vertically when the window is short, and never sideways: at a narrow width the two
        # small charts stack (``_arrange``) instead of being cut off on the right.
        self.body_scroll = QScrollArea()
        self.body_scroll.setWidgetResizable(True)
        self.body_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.body_scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        self.body_scroll.setWidget(body)
        self._width_watch = _WidthWatch(self.body_scroll.viewport(), self._on_body_width)
        split.addWidget(self.body_scroll)

        side = QScrollArea()
        side.setWidgetResizable(True)
        side.setMinimumWidth(SIDE_MIN_W)
        side.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.side = side
        side_body = QWidget()
        sl = QVBoxLayout(side_body)
        sl.setContentsMargins(8, 12, 16, 12)
        sl.addWidget(QLabel("<h3 style='margin:0'>Assumptions</h3>"))
        hint = QLabel("Change a figure to re-price every option; ↺ puts it back. Under each: where its value "
                      "comes from. Hover one for its meaning and its command-line name.")
        hint.setWordWrap(True)
        sl.addWidget(hint)
        self.assumptions = AssumptionsWidget()
        self.assumptions.changed_callback = self._on_assumptions_edited
        sl.addWidget(self.assumptions)
        reset = QPushButton("Reset to defaults")
        reset.clicked.connect(self._on_reset_clicked)
        sl.addWidget(reset)
        self.export_button = QPushButton("Export options to CSV…")
        self.export_button.setToolTip("Every option of this plan with its time, cost and cost parts, for a spreadsheet")
        self.export_button.clicked.connect(self._on_export_clicked)
        sl.addWidget(self.export_button)
        sl.addStretch(1)
        side.setWidget(side_body)
        split.addWidget(side)
        split.setStretchFactor(0, 1)
        split.setStretchFactor(1, 0)
        split.setCollapsible(0, False)
        split.setCollapsible(1, True)  # drag the handle to the right edge to give the charts the whole width
        split.setSizes([1000, SIDE_DEFAULT_W])
        self.split = split

        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(250)
        self._debounce.timeout.connect(self._on_debounce_timeout)
        self.plan = ctx.plan  # the app's one plan: Compare reads it, never the Planner page
        self.plan.plan_ready.connect(self._on_plan_plan_ready)
        self.plan.stale_changed.connect(self._on_plan_stale_changed)
        ctx.assumptions_changed.connect(self._on_ctx_assumptions_changed)
        if self.plan.bundle is not None:
            self._show(self.plan.bundle.result)
        if self.plan.stale:
            self._on_plan_stale_changed(True)

    # ------------------------------------------------------------ layout
    def _on_body_width(self, width: int) -> None:
        self._arrange(stacked=width < STACK_BELOW_W)

    def _arrange(self, stacked: bool) -> None:
        """Place the charts: side by side, or (``stacked``) the time/cost and break-even charts one under the other."""
        if stacked == self.stacked:
            return
        self.stacked = stacked
        grid = self._grid
        for w in (self.cost_chart, self.scatter, self.breakeven, self.tornado):
            grid.removeWidget(w)
        grid.addWidget(self.cost_chart, 0, 0, 1, 2)
        if stacked:
            grid.addWidget(self.scatter, 1, 0, 1, 2)
            grid.addWidget(self.breakeven, 2, 0, 1, 2)
            grid.addWidget(self.tornado, 3, 0, 1, 2)
        else:
            grid.addWidget(self.scatter, 1, 0)
            grid.addWidget(self.breakeven, 1, 1)
            grid.addWidget(self.tornado, 2, 0, 1, 2)
        for row in range(4):
            grid.setRowStretch(row, 1 if row < (3 if stacked else 2) else 0)

    # ------------------------------------------------------------ assumptions
    def _on_assumptions_edited(self) -> None:
        self._debounce.start()

    @Slot()
    def _on_debounce_timeout(self) -> None:
        self.ctx.set_assumptions(self.assumptions.overrides())

    @Slot()
    def _on_reset_clicked(self) -> None:
        self.assumptions.set_overrides({})
        self.ctx.set_assumptions({})

    @Slot()
    def _on_export_clicked(self) -> None:
        from PySide6.QtWidgets import QFileDialog

        path, _ = QFileDialog.getSaveFileName(self, "Export the options", "options.csv", "CSV files (*.csv)")
        if path:
            self.export(path)

    def export(self, path: str) -> bool:
        """Write every option of the current plan to ``path`` (atomically). Returns False without a plan."""
        from advisor.store.atomic import write_atomic

        if self.result is None:
            return False
        write_atomic(path, options_csv(self.result))
        return True

    # ------------------------------------------------------------ drawing
    @Slot(object)
    def _on_plan_plan_ready(self, bundle) -> None:
        if self.isVisible():
            self._show(bundle.result)

    @Slot(bool)
    def _on_plan_stale_changed(self, stale: bool) -> None:
        if stale:
            t = themes.current()
            self.summary.setText(f"<b style='color:{t.bad}'>Not current</b>: the job's inputs are not valid "
                                 f"({self.plan.error}); fix them on the Planner page (Ctrl+4). The charts show "
                                 "the last valid plan.")
        elif self.result is not None:
            self._show(self.result)
        fade_out((self.cost_chart, self.scatter, self.breakeven, self.tornado), stale)

    def _machine_ids(self) -> list[str]:
        m = self.ctx.machine
        return [g.catalog_id for g in m.gpus if g.catalog_id] if m is not None else []

    def _show(self, result) -> None:
        self.result = result
        mine = self._machine_ids()
        chosen = chart_selection(result, mine)
        r = result.request
        name = rich(result.model_name or "custom model")
        text = f"For <b>{dict(WORKLOAD_WORDS).get(r.workload, r.workload)} {name}</b>: " + " ".join(
            lead_sentences(result, chosen))
        example = dearer_hour_example(result, chosen)
        if example:
            text += "<br>" + example
        self.summary.setText(text)
        self._draw_costs(chosen)
        self._draw_scatter(result)
        self._draw_break_even(result, mine)
        self.tornado.show_plan(result, self.ctx.catalog, self._calibration(), self.ctx.plan_kw())
        spend = result.cost_over_time()
        cadence = (f"{spend.jobs_per_month:g} jobs a month" if spend.stated else
                   f"{spend.jobs_per_month:g} jobs a month (assumed: set Jobs per month on the Planner)")
        self.note.setText(f"{upper_first(result.prices_text())}. Your GPUs are priced at their electricity; a home "
                          f"rig or on-prem servers to buy carry their monthly costs over the use (money spent over "
                          f"time at {cadence}). Spot prices include rework for interruptions.")

    def _draw_costs(self, chosen) -> None:
        plots.clear_bars(self.cost_chart, self._items)
        parts: list[str] = []
        for o in chosen:
            for k in o.cost_breakdown_usd:
                if k not in parts and any(x.cost_breakdown_usd.get(k) for x in chosen):
                    parts.append(k)
        rows = list(reversed(chosen))  # cheapest at the top
        series = [(p.replace("_", " "), [o.cost_breakdown_usd.get(p, 0.0) for o in rows]) for p in parts]
        self._items = plots.stacked_bars(self.cost_chart, series, horizontal=True, width=0.6, value_format=fmt_usd,
                                         colours=[cost_part_colour(p) for p in parts])
        from advisor.planner.summary import owned_accelerators

        mine = owned_accelerators(self.result) if self.result is not None else set()
        plots.set_categories(self.cost_chart, distinct_labels(rows, mine), axis="left")
        top = max((o.cost_usd for o in rows), default=1.0)
        self.cost_chart.setXRange(0, top * 1.3, padding=0)  # room for the total after each bar
        self.cost_chart.setYRange(-0.6, len(rows) + 0.6, padding=0)  # the top row is the legend's

    def _draw_scatter(self, result) -> None:
        for it in self._scatter_items:
            self.scatter.removeItem(it)
        self._scatter_items.clear()
        fitting = [o for o in result.ranked if o.fits and o.hours > 0 and o.cost_usd > 0]
        front = set(result.pareto_ids())
        flat = scatter_flat_text(fitting)
        plots.set_empty_text(self.scatter, flat)
        if flat:  # a line of dots on one time (or one cost) says nothing: the sentence says what it would
            plots.refit_legend(self.scatter)
            return
        if fitting:  # log axes labelled "1 h, 1 day" and "$10, $1k", not powers of ten
            plots.set_log_ticks(self.scatter, "bottom", plots.HOUR_TICKS, min(o.hours for o in fitting) / 2,
                                max(o.hours for o in fitting) * 2)
            plots.set_log_ticks(self.scatter, "left", plots.USD_TICKS, min(o.cost_usd for o in fitting) / 2,
                                max(o.cost_usd for o in fitting) * 2)
        for kind, idx in KIND_INDEX.items():
            pts = [o for o in fitting if o.kind == kind]
            if not pts:
                continue
            # PlotDataItem, not ScatterPlotItem: only the former follows the plot's log axes.
            item = pg.PlotDataItem([o.hours for o in pts], [o.cost_usd for o in pts], pen=None, symbol="o",
                                   symbolSize=7, symbolBrush=pg.mkBrush(plots.color(idx)), symbolPen=None,
                                   name=kind.replace("onprem", "on-prem"))
            self.scatter.addItem(item)
            self._scatter_items.append(item)
        on_front = sorted((o for o in fitting if o.id in front), key=lambda o: o.hours)
        if on_front:
            t = themes.current()
            line = pg.PlotDataItem([o.hours for o in on_front], [o.cost_usd for o in on_front], name="Pareto front",
                                   pen=pg.mkPen(t.text, width=2), symbol="o", symbolSize=11,
                                   symbolBrush=None, symbolPen=pg.mkPen(t.text, width=2))
            self.scatter.addItem(line)
            self._scatter_items.append(line)
            ends = [(on_front[0], (0, 1.0))] + ([(on_front[-1], (1.0, 1.2))] if len(on_front) > 1 else [])
            names = dict(zip((o.id for o in fitting), distinct_labels(fitting)))
            for o, anchor in ends:  # above its point (the fastest left-aligned, the cheapest right-aligned)
                label = pg.TextItem(names[o.id], color=t.text, anchor=anchor)
                label.setPos(np.log10(o.hours), np.log10(o.cost_usd))
                self.scatter.addItem(label)
                self._scatter_items.append(label)
        plots.refit_legend(self.scatter)

    def _draw_break_even(self, result, mine) -> None:
        """Money spent against months (``PlanResult.cost_over_time``): your GPUs, the purchases and the rent, from
        month 1 on a log money axis (a purchase costs hundreds of times a month of rent); a mark where a purchase
        pays back against the rent within its life."""
        from advisor.planner.summary import owned_accelerators

        for it in self._be_items:
            self.breakeven.removeItem(it)
        self._be_items.clear()
        spend = result.cost_over_time()
        owned = owned_accelerators(result)
        months = np.linspace(1.0, spend.months, 60)
        lo, hi = math.inf, 0.0
        for line in spend.lines:
            y = np.array([line.usd_after(m) for m in months])
            if not (y > 0).any():
                continue
            lo, hi = min(lo, float(y[y > 0].min())), max(hi, float(y.max()))
            o = result.option(line.option_id)
            label = option_label(o, owned) if o is not None else line.label
            style = Qt.PenStyle.DashLine if line.kind == "cloud" else Qt.PenStyle.SolidLine
            item = pg.PlotDataItem(months, np.where(y > 0, y, np.nan), pen=plots.pen(SPEND_INDEX.get(line.kind, 0),
                                                                                    style=style), name=label)
            self.breakeven.addItem(item)
            self._be_items.append(item)
        rent = next((line for line in spend.lines if line.kind == "cloud"), None)
        for i, line in enumerate(x for x in spend.lines if x.kind in ("home", "onprem")):
            if rent is None or rent.monthly_usd <= line.monthly_usd:
                continue
            at = line.upfront_usd / (rent.monthly_usd - line.monthly_usd)
            if 1.0 <= at <= min(spend.months, line.life_months or spend.months):
                mark = plots.add_limit_line(self.breakeven, at, f"pays back: {at:,.0f} mo",
                                            index=SPEND_INDEX[line.kind], horizontal=False,
                                            label_position=0.85 - 0.12 * i,
                                            label_anchor=(1, 0) if at > 2 / 3 * spend.months else (0, 0))
                self._be_items.append(mark)
        cadence = f"{spend.jobs_per_month:g} jobs a month" + ("" if spend.stated else " (assumed)")
        self.breakeven.setTitle(f"Money spent, {cadence}")
        self.breakeven.setXRange(0, spend.months, padding=0)
        if hi > 0:
            self.breakeven.setYRange(np.log10(lo / 1.5), np.log10(hi * 1.5), padding=0)
            plots.set_log_ticks(self.breakeven, "left", plots.USD_TICKS, lo / 1.5, hi * 1.5)
        plots.refit_legend(self.breakeven)

    # ------------------------------------------------------------ page hooks
    def restore_state(self, s) -> None:
        self.assumptions.set_overrides(self.ctx.assumptions, self.ctx.assumption_sources)  # kept across sessions

    @Slot(dict)
    def _on_ctx_assumptions_changed(self, overrides: dict) -> None:
        # a scenario opened elsewhere: show its figures and where each came from
        self.assumptions.set_overrides(overrides, self.ctx.assumption_sources)

    def _calibration(self):
        """The calibration the plan used (read once), so the tornado re-plans on the same figures."""
        if not hasattr(self, "_calibration_cache"):
            from advisor.store.calibration import load_planner_calibration

            self._calibration_cache = load_planner_calibration()
        return self._calibration_cache

    def on_shown(self) -> None:
        bundle = self.plan.bundle
        if bundle is not None and bundle.result is not self.result:
            self._show(bundle.result)
        self.plan.ensure_plan()

    def is_ready(self) -> bool:
        return (self.result is not None and self.plan.is_idle() and self.result is self.plan.bundle.result
                and self.tornado.is_idle())

    def shutdown(self) -> None:
        self.tornado.shutdown()
        self._debounce.stop()
