"""Serve page: how many users a model serves within a latency target, what each sees, and what a million
requests cost, on the GPUs the user owns first and on every offer (``advisor serve``).

The form is built from the serving schema (``advisor.job.serve.SERVE_FIELDS``); the sizing runs in a worker
(``gui.serve_data.serve_bundle``); the page draws the one :class:`~advisor.gui.serve_data.ServeBundle`: the
answer lines of ``report.serve_text``, the options table and, per charted option, the throughput against the
p95 time to first token as the load rises (the knee). An imported serving run of the same job (model, and a
charted option's accelerator, devices and runtime) is drawn on it: what it measured (output tokens/s, first
token p50) and what the plan gives at that run's own load, with both figures' 80 % ranges, and its line of
``advisor runs`` under the chart (``runs.listing.load_summary``).
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

from PySide6.QtCore import Qt, QTimer, Slot
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from advisor.gui import theme as themes
from advisor.gui.pages.base import Page
from advisor.gui.report_export import SERVE_REPORT_FILTERS, ReportWriter, ask_report_path
from advisor.gui.safe_text import rich, tell
from advisor.gui.serve_data import DEFAULT_VALUES, FORM_FIELDS, serve_bundle
from advisor.gui.widgets import plots
from advisor.gui.widgets.tables import Column, RecordTableModel, fit_columns, make_proxy, make_view
from advisor.gui.workers import GeneratorWorker, release
from advisor.planner.serve import interval, range_origin
from advisor.report.serve_report import CHART_TITLE, curve_name

log = logging.getLogger(__name__)
DEBOUNCE_MS = 150
LABELS = {"model": "Model", "quant": "Weights", "runtime": "Runtime", "kv_cache_bits": "KV cache bits",
          "users": "Users at once", "requests_per_s": "or requests/s", "prompt_tokens": "Prompt tokens", "output_tokens": "Output tokens",
          "lengths": "Lengths preset", "ttft_p95_s": "p95 first token (s)",
          "tokens_per_s_per_user": "Tokens/s per user"}


def _s(x) -> str:
    if x is None or not math.isfinite(x):
        return "—"
    return f"{x * 1e3:.0f} ms" if x < 1 else f"{x:.3g} s"


def _usd(x) -> str:
    return "—" if x is None else (f"${x:,.2f}" if x < 100 else f"${x:,.0f}")


def serve_columns(by: str) -> list[Column]:
    """Columns of the options table (also used by tests)."""
    good, bad = themes.current().good, themes.current().bad
    unit = "users" if by == "users" else "req/s"

    def most(o):
        return o.max_load_per_replica * (o.replicas_available if o.replicas_available is not None else o.replicas)

    def point(o, name):
        return getattr(o.point, name) if o.point is not None and o.point.stable else math.inf

    def range_tip(which: str, get, fmt, bound: str = ""):
        def tip(o) -> str:
            iv = interval(get(o), which, o, by, bound=bound)
            return f"80 % range {fmt(iv[0])} to {fmt(iv[1])} ({range_origin(by, o)})" if iv else ""
        return tip

    def rate(o):
        t = point(o, "tpot_p50_s")
        return 1 / t if t and t < math.inf else None

    return [
        Column("option", lambda o: o.id, tip="Your GPUs first, then home, on-prem and cloud offers"),
        Column("runtime", lambda o: o.runtime),
        Column("GPUs", lambda o: f"{o.replicas}×{o.devices_per_replica}", tip="Replicas × devices per replica"),
        Column("meets", lambda o: "yes" if o.meets_target else "no",
               color=lambda o: good if o.meets_target else bad, tip="Whether the stated load meets the targets"),
        Column(f"most ({unit})", most, (lambda v: f"{int(v):,}") if by == "users" else (lambda v: f"{v:.3g}"),
               align_right=True,
               tip="The highest load within the targets on the replicas shown"),
        Column("tokens/s per user", lambda o: rate(o) or 0.0, lambda v: f"{v:.3g}" if v else "—", align_right=True,
               tip="What each request sees while it decodes",
               cell_tip=range_tip("tpot", rate, lambda v: f"{v:.3g}", "rate")),
        Column("TTFT p50", lambda o: point(o, "ttft_p50_s"), _s, align_right=True, tip="Time to first token",
               cell_tip=range_tip("ttft", lambda o: point(o, "ttft_p50_s"), _s)),
        Column("TTFT p95", lambda o: point(o, "ttft_p95_s"), _s, align_right=True,
               cell_tip=range_tip("ttft", lambda o: point(o, "ttft_p95_s"), _s)),
        Column("TPOT p95", lambda o: point(o, "tpot_p95_s"), _s, align_right=True, tip="Time per output token",
               cell_tip=range_tip("tpot", lambda o: point(o, "tpot_p95_s"), _s, "time")),
        Column("$/M requests", lambda o: o.usd_per_million_requests if o.usd_per_million_requests is not None
               else math.inf, lambda v: _usd(None if v == math.inf else v), align_right=True,
               tip="At the stated load, every hour of the hardware priced (idle hours too)",
               cell_tip=range_tip("throughput", lambda o: o.usd_per_million_requests, _usd)),
        Column("$/M output tokens", lambda o: o.usd_per_million_output_tokens
               if o.usd_per_million_output_tokens is not None else math.inf,
               lambda v: _usd(None if v == math.inf else v), align_right=True),
    ]


class ServePage(Page):
    """Size a serving deployment against a latency target, per user."""

    page_id = "serve"
    title = "Serve"

    def __init__(self, ctx, parent=None) -> None:
        super().__init__(ctx, parent)
        self.bundle = None
        self._worker: GeneratorWorker | None = None
        self._pending = False
        self._shut_down = False
        self._widgets: dict[str, QWidget] = {}
        layout = QVBoxLayout(self)
        layout.setContentsMargins(16, 12, 16, 12)
        title = QHBoxLayout()
        title.addWidget(QLabel("<h2 style='margin:0'>Serve a model</h2>"))
        title.addStretch(1)
        self.export_button = QPushButton("Export report…")
        title.addWidget(self.export_button)
        layout.addLayout(title)
        layout.addLayout(self._build_form())
        self.answer = QLabel()
        self.answer.setObjectName("serveAnswer")
        self.answer.setWordWrap(True)
        self.answer.setTextFormat(Qt.TextFormat.RichText)
        self.answer.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.answer.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.answer.setMinimumWidth(380)
        self.chart = plots.make_plot(CHART_TITLE,
                                     "p95 time to first token", "s", x_label="output tokens/s, all users",
                                     x_unit="tokens/s", legend=True, legend_columns=2, min_height=200)
        self.chart.setObjectName("serveChart")
        # both axes logarithmic: a laptop GPU's tens of tokens/s and a datacenter part's thousands on one chart
        self.chart.getPlotItem().setLogMode(x=True, y=True)
        # the user's serving runs of this job at their load, measured against planned: under the answer
        self.runs_line = QLabel()
        self.runs_line.setObjectName("serveRuns")
        self.runs_line.setWordWrap(True)
        self.runs_line.setTextFormat(Qt.TextFormat.PlainText)  # it quotes a run file's figures: never markup
        self.runs_line.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.runs_line.setVisible(False)
        answer_box = QWidget()
        ab = QVBoxLayout(answer_box)
        ab.setContentsMargins(0, 0, 0, 0)
        ab.addWidget(self.answer)
        ab.addWidget(self.runs_line)
        ab.addStretch(1)
        top = QSplitter(Qt.Orientation.Horizontal)
        top.addWidget(answer_box)
        top.addWidget(self.chart)
        top.setStretchFactor(0, 1)
        top.setStretchFactor(1, 1)
        self.table_model = RecordTableModel(serve_columns("users"), [], self)
        self.proxy = make_proxy(self.table_model, self)
        self.table = make_view(self.proxy)
        self.table.setObjectName("serveTable")
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(top)
        split.addWidget(self.table)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        split.setSizes([300, 180])
        self.table.setMinimumHeight(120)
        layout.addWidget(split, 1)
        self.footer = QLabel()
        self.footer.setObjectName("serveFooter")
        self.footer.setWordWrap(True)
        self.export_button.setObjectName("serveExport")
        self.export_button.setToolTip("Write the answer, the chart and the options as HTML, PDF or Markdown "
                                      "(as advisor serve --report)")
        self.export_button.setEnabled(False)
        self.export_button.clicked.connect(self._on_export_button_clicked)
        self.reports = ReportWriter(self)
        self.reports.written.connect(self._on_reports_written)
        self.reports.failed.connect(self._on_reports_failed)
        layout.addWidget(self.footer)
        self._lines: list = []
        self._target_line = plots.add_limit_line(self.chart, None, "target")
        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(DEBOUNCE_MS)
        self._debounce.timeout.connect(self._on_debounce_timeout)
        ctx.owned_changed.connect(self._on_ctx_owned_changed)
        ctx.assumptions_changed.connect(self._on_ctx_assumptions_changed)

    # ------------------------------------------------------------ the form, from the schema
    def _build_form(self) -> QHBoxLayout:
        from advisor.job.serve import SERVE_FIELDS

        row = QHBoxLayout()
        forms = [QFormLayout(), QFormLayout(), QFormLayout()]
        for i, name in enumerate(FORM_FIELDS):
            meta = SERVE_FIELDS[name]
            w = self._widget(meta)
            w.setObjectName(f"serve_{name}")
            w.setToolTip(meta.help + (f" ({meta.unit})" if meta.unit else ""))
            self._widgets[name] = w
            forms[min(i * 3 // len(FORM_FIELDS), 2)].addRow(LABELS.get(name, name), w)
        for f in forms:
            row.addLayout(f)
        row.addStretch(1)
        return row

    def _widget(self, meta) -> QWidget:
        default = DEFAULT_VALUES.get(meta.name, meta.default)
        if meta.kind == "choice":
            w = QComboBox()
            if meta.default is None:
                w.addItem("default", None)
            for c in meta.choices:
                w.addItem(str(c), c)
            w.setCurrentIndex(max(0, w.findData(default)))
            w.currentIndexChanged.connect(self._on_input_changed)
            return w
        if meta.kind == "int":
            w = QSpinBox()
            w.setRange(int(meta.minimum or 0), int(min(meta.maximum or 1e9, 2**31 - 1)))
            w.setValue(int(default or meta.minimum or 1))
            w.valueChanged.connect(self._on_input_changed)
            return w
        if meta.kind == "number":  # optional targets: 0 means none
            w = QDoubleSpinBox()
            w.setDecimals(3)
            w.setRange(0.0, float(min(meta.maximum or 1e6, 1e6)))
            w.setSpecialValueText("none")
            w.setValue(float(default or 0.0))
            w.valueChanged.connect(self._on_input_changed)
            return w
        w = QLineEdit(str(default or ""))
        w.editingFinished.connect(self._on_input_changed)
        return w

    def values(self) -> dict:
        """The form's values as the serving schema names them (the app's settings added by the context)."""
        out = {}
        for name, w in self._widgets.items():
            if isinstance(w, QComboBox):
                v = w.currentData()
            elif isinstance(w, QSpinBox):
                v = w.value()
            elif isinstance(w, QDoubleSpinBox):
                v = w.value() or None
            else:
                v = w.text().strip() or None
            if v is not None:
                out[name] = v
        if out.get("requests_per_s"):  # a rate given replaces the users (the schema takes one load)
            out.pop("users", None)
        return self.ctx.plan_values(out)

    # ------------------------------------------------------------ sizing in a worker
    @Slot()
    def _on_input_changed(self, *_args) -> None:
        self._debounce.start()

    @Slot()
    def _on_ctx_owned_changed(self) -> None:
        if self.isVisible() or self.bundle is not None:
            self._debounce.start()

    @Slot(dict)
    def _on_ctx_assumptions_changed(self, _overrides) -> None:
        self._on_ctx_owned_changed()

    @Slot()
    def _on_debounce_timeout(self) -> None:
        self.refresh()

    def refresh(self) -> None:
        """Size the form's job in a worker (or once the running one ends)."""
        if self._shut_down:
            return
        if self._worker is not None:
            self._pending = True
            return
        owned = self.ctx.local.owned if self.ctx.local is not None else ()
        # the calibration the Planner plans with (this machine's measured and learned figures): one answer
        self._worker = GeneratorWorker(serve_bundle, self.values(), self.ctx.catalog, owned,
                                       self.ctx.plan.calibration, parent=self)
        self._worker.result_ready.connect(self._on_worker_result_ready)
        self._worker.failed.connect(self._on_worker_failed)
        self._worker.done.connect(self._on_worker_done)
        self._worker.start()

    @Slot(object)
    def _on_worker_result_ready(self, bundle) -> None:
        self.bundle = bundle
        self.export_button.setEnabled(True)
        self._show(bundle)

    @Slot(str)
    def _on_worker_failed(self, reason: str) -> None:
        worker = self._worker
        log.info("serve: %s", worker.error_detail if worker is not None else reason)
        message = reason.split(": ", 1)[1] if reason.startswith(("JobInputError", "PlanInputError")) else reason
        self.answer.setText(f"<span style='color:{themes.current().bad}'>{rich(message, None)}</span>")

    @Slot()
    def _on_worker_done(self) -> None:
        worker, self._worker = self._worker, None
        release(worker)
        if self._pending:
            self._pending = False
            self.refresh()

    # ------------------------------------------------------------ drawing the one result
    def _show(self, bundle) -> None:
        from advisor.report.serve_text import answer_lines, target_text

        r = bundle.result
        t = themes.current()
        lines = answer_lines(r, bundle.changes)
        body = []
        for ln in lines:
            text = rich(ln, 500)  # a line names the model and the GPUs
            if ln.startswith(("Your GPUs", "Cheapest cloud", "No option")):
                text = f"<b>{text}</b>"
            if "does NOT meet" in ln:
                text = f"<span style='color:{t.bad}'>{text}</span>"
            elif ": meets the target" in ln:
                text = f"<span style='color:{t.good}'>{text}</span>"
            body.append(text.replace("  ", "&nbsp;&nbsp;"))
        head = (f"{rich(r.model_name)} to {rich(r.load_text)}: prompts {r.lengths.prompt_mean:,.0f} "
                f"tokens, outputs {r.lengths.output_mean:,.0f}; target {rich(target_text(r))}")
        if not r.owned_options():
            body.insert(0, "No GPUs of yours are known: add them on the Machine page (GPUs you own).")
        self.answer.setText(f"<span style='color:{t.muted}'>{head}</span><br>" + "<br>".join(body))
        self.table_model = RecordTableModel(serve_columns(r.by), [o for o in r.options if o.fits], self)
        self.proxy.setSourceModel(self.table_model)
        fit_columns(self.table, max_width=260)
        self._draw_chart(bundle)
        self.footer.setText(f"{len(r.options)} options sized in {bundle.elapsed_s * 1e3:.0f} ms. The chart: one "
                            "replica of each option as the load rises; the bend is where queues start. Ranges: "
                            f"{range_origin(r.by, moe=r.moe)}.")

    def _draw_chart(self, bundle) -> None:
        for item in self._lines:
            self.chart.removeItem(item)
        self._lines = []
        legend = self.chart.getPlotItem().legend
        if legend is not None:
            legend.clear()
        for i, (o, points) in enumerate(bundle.curves):
            pts = [p for p in points if p.stable and math.isfinite(p.ttft_p95_s) and p.ttft_p95_s > 0]
            item = plots.add_line(self.chart, curve_name(o), i)
            # raw seconds: the log axis takes the logarithm itself (the target line, not a curve, is placed in log10)
            item.setData([p.output_tokens_per_s for p in pts], [p.ttft_p95_s for p in pts],
                         symbol="o", symbolSize=5, symbolBrush=plots.color(i), symbolPen=None)
            self._lines.append(item)
        xs = [p.output_tokens_per_s for _o, pts in bundle.curves for p in pts if p.stable and p.output_tokens_per_s > 0]
        ys = [p.ttft_p95_s for _o, pts in bundle.curves for p in pts if p.stable and 0 < p.ttft_p95_s < math.inf]
        run_xs, run_ys = self._draw_runs(bundle)
        xs, ys = xs + run_xs, ys + run_ys
        if xs and ys:
            plots.set_log_ticks(self.chart, "bottom", plots.RATE_TICKS, min(xs) / 1.5, max(xs) * 1.5)
            plots.set_log_ticks(self.chart, "left", plots.SECOND_TICKS, min(ys) / 1.5, max(ys) * 1.5)
        target = bundle.result.targets.ttft_p95_s
        self._target_line.setValue(math.log10(target) if target else 0)
        self._target_line.setVisible(target is not None)
        plots.set_empty_text(self.chart, None if bundle.curves else "No option fits this model")
        self.chart.getPlotItem().enableAutoRange()

    def _draw_runs(self, bundle) -> tuple[list[float], list[float]]:
        """Each imported run of this job on its option's colour: a star where it measured (output tokens/s, first
        token p50), a hollow circle where the plan puts that run's own load, with the 80 % ranges of both figures
        (error bars, drawn in the log axes' own coordinates). Returns the figures drawn (the axes' ticks span
        them)."""
        import numpy as np
        import pyqtgraph as pg

        from advisor.runs.listing import load_summary

        order = [o for o, _ in bundle.curves]
        xs: list[float] = []
        ys: list[float] = []
        lines = []
        for o, row in bundle.runs:
            f = row["load"]["figures"]
            tps, ttft = f["tokens_per_s"], f["ttft_p50_s"]
            i = order.index(o) if o in order else 0
            lines.append(f"Your run {row['id']} on {o.accelerator_name} ({o.runtime}) "
                         + load_summary(row["load"]))
            if not (tps["predicted"] > 0 and ttft["predicted"] > 0):
                continue
            planned = plots.add_line(self.chart, f"run {row['id']}: planned at its load (TTFT p50, 80 % ranges)", i)
            planned.setData([tps["predicted"]], [ttft["predicted"]], pen=None, symbol="o", symbolSize=11,
                            symbolBrush=None, symbolPen=plots.pen(i, 2.0))
            self._lines.append(planned)
            lx, ly = math.log10(tps["predicted"]), math.log10(ttft["predicted"])
            one = lambda v: np.array([v], dtype=float)  # noqa: E731 - ErrorBarItem does arithmetic on arrays
            bars = pg.ErrorBarItem(x=one(lx), y=one(ly), left=one(lx - math.log10(tps["low"])),
                                   right=one(math.log10(tps["high"]) - lx), bottom=one(ly - math.log10(ttft["low"])),
                                   top=one(math.log10(ttft["high"]) - ly), beam=0.02, pen=plots.pen(i, 1.0))
            self.chart.addItem(bars)
            self._lines.append(bars)
            xs += [tps["low"], tps["high"]]
            ys += [ttft["low"], ttft["high"]]
            if tps["measured"] and ttft["measured"]:
                got = plots.add_line(self.chart, f"run {row['id']}: measured (TTFT p50)", i)
                got.setData([tps["measured"]], [ttft["measured"]], pen=None, symbol="star", symbolSize=16,
                            symbolBrush=plots.color(i), symbolPen=plots.pen(i, 1.0))
                self._lines.append(got)
                xs.append(tps["measured"])
                ys.append(ttft["measured"])
        self.runs_line.setText("\n".join(lines))
        self.runs_line.setVisible(bool(lines))
        return xs, ys

    # ------------------------------------------------------------ the report
    @Slot()
    def _on_export_button_clicked(self) -> None:
        path = ask_report_path(self, "Export serving report", "serving.html", SERVE_REPORT_FILTERS)
        if path:
            self.export_report(path)

    def export_report(self, path) -> bool:
        """Write the sized job (the answer, the knee chart, the options) to ``path`` in a worker
        (``report.serve_report.write_serve_report``); False without a sized job or while one is written."""
        from advisor.report.serve_report import write_serve_report

        b = self.bundle
        if b is None or not self.reports.start_call(write_serve_report, b.result, b.changes, b.curves, str(path)):
            self.footer.setText("Nothing to export yet, or a report is still being written.")
            return False
        self.footer.setText(f"Writing {Path(path).name}…")
        return True

    @Slot(str)
    def _on_reports_written(self, path: str) -> None:
        self.footer.setText(f"Report written to {path}")

    @Slot(str)
    def _on_reports_failed(self, reason: str) -> None:
        tell(self, "Export serving report", f"Could not write the report: {reason}")

    # ------------------------------------------------------------ page hooks
    def on_shown(self) -> None:
        if self.bundle is None and self._worker is None:
            self.refresh()

    def is_ready(self) -> bool:
        return self.bundle is not None and self._worker is None

    def prepare_screenshot(self) -> None:
        self.refresh()

    def save_state(self, s) -> None:
        from advisor.gui import settings as settings_mod

        values = {k: v for k, v in self.values().items() if k in FORM_FIELDS}
        settings_mod.write_json(s, "serve/inputs", values)

    def restore_state(self, s) -> None:
        from advisor.gui import settings as settings_mod

        saved = settings_mod.read_json(s, "serve/inputs", {})
        if not isinstance(saved, dict):
            return
        for name, v in saved.items():
            w = self._widgets.get(name)
            try:
                if isinstance(w, QComboBox):
                    w.setCurrentIndex(max(0, w.findData(v)))
                elif isinstance(w, QSpinBox) and isinstance(v, int):
                    w.setValue(v)
                elif isinstance(w, QDoubleSpinBox) and isinstance(v, (int, float)):
                    w.setValue(float(v))
                elif isinstance(w, QLineEdit) and isinstance(v, str):
                    w.setText(v)
            except (TypeError, ValueError):
                continue

    def shutdown(self) -> None:
        self._shut_down = True
        self._debounce.stop()
        self.reports.stop()
        if self._worker is not None:
            self._worker.stop()
