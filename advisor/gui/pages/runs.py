"""The Runs page: your own runs, what they measured, what the advisor predicts for them, and how far to trust it.

A table of the imported runs (``advisor runs``: the same rows, from ``advisor.runs.listing``) and a log-log
chart of predicted against measured tokens/s with the y = x line and a ±25 % band: points inside the band are
jobs the advisor planned within 25 %. Runs on this machine are filled, runs from other machines hollow. Below the
table, a serving benchmark's run (the selected one, else the latest) at its own load: throughput, first token and
time per output token against the plan of a published run of that shape, each with its 80 % range
(``runs.listing.load_summary``, the text ``advisor runs`` prints).
Import reads a file with ``advisor.runs.import_file`` (a bad file is one line here, nothing stored); Forget
deletes the selected run. Work that plans runs off the GUI thread.
"""

from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import Qt, Slot
from PySide6.QtWidgets import QFileDialog, QHBoxLayout, QLabel, QPushButton, QSplitter, QVBoxLayout, QWidget

from advisor.gui.pages.base import Page
from advisor.gui.widgets import plots
from advisor.gui.widgets.tables import RECORD_ROLE, Column, RecordTableModel, fit_columns, make_proxy, make_view
from advisor.gui.widgets.wrapped import WrappedLabel
from advisor.gui.workers import GeneratorWorker

BAND = 1.25  # the chart's band: within 25 % either way


def _rate_text(v: float) -> str:
    for div, suffix in ((1e6, "M"), (1e3, "k")):
        if v >= div:
            return f"{v / div:g}{suffix}"
    return f"{v:g}"


# tokens/s on a log axis, 1-2-5 in each decade: decades first, then 5s, then 2s, as the length allows
RATE_TICKS = tuple((m * 10.0 ** k, _rate_text(m * 10.0 ** k), {1: 0, 5: 1, 2: 2}[m])
                   for k in range(-1, 9) for m in (1, 2, 5))


def _pred(r: dict) -> float | None:
    return (r.get("predicted_now") or {}).get("tokens_per_s")


def run_columns() -> list[Column]:
    held = {True: "held", False: "missed", None: "—"}
    return [
        Column("id", lambda r: r["id"], align_right=True),
        Column("date", lambda r: r["recorded_at"][:10]),
        Column("kind", lambda r: r["kind"]),
        Column("model", lambda r: r["model"], cell_tip=lambda r: r["source_file"]),
        Column("accelerator", lambda r: f"{r['accelerator']['id'] or '?'} × {r['accelerator']['devices']}"),
        Column("machine", lambda r: "this" if r["machine"]["this_machine"] else "other",
               cell_tip=lambda r: r["machine"]["note"], tip="runs on other machines count less in plans"),
        Column("figure", lambda r: r["compared"]["label"],
               tip="what the run measured: training, decode of one request, a prompt, or served at its concurrency"),
        Column("measured tok/s", lambda r: r["compared"]["measured"], lambda v: f"{v:,.0f}", align_right=True,
               tip="the figure the run measured: training, generated or (a prompt test) prompt tokens/s"),
        Column("at import", lambda r: (r["predicted_at_import"] or {}).get("tokens_per_s"), lambda v: f"{v:,.0f}",
               align_right=True, tip="what the advisor predicted when the run was imported (kept)"),
        Column("now", _pred, lambda v: f"{v:,.0f}", align_right=True,
               tip="what the advisor predicts now, with your other runs (this one left out)"),
        Column("error ×", lambda r: r["error_factor"], lambda v: f"{v:.2f}", align_right=True,
               tip="predicted / measured tokens/s: above 1 the plan was too optimistic"),
        Column("range", lambda r: held[r["range_held"]], tip="whether the measured figure fell in the 80 % range"),
        Column("file", lambda r: r["source_file"].replace("\\", "/").rsplit("/", 1)[-1],
               cell_tip=lambda r: r["source_file"]),
    ]


def chart_points(rows: list[dict]) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    """``(this machine, other machines)`` points ``(measured, predicted now)`` in tokens/s."""
    here, other = [], []
    for r in rows:
        m, p = r["compared"]["measured"], _pred(r)
        if r["compared"].get("unit", "tokens/s") != "tokens/s":  # an engine's reading of its cache, not a speed
            continue
        if m and p and m > 0 and p > 0:
            (here if r["machine"]["this_machine"] else other).append((m, p))
    return here, other


def _load(catalog, host):
    from advisor.runs.listing import run_entries

    return run_entries(catalog, host)


class RunsPage(Page):
    """Plan against actual for the user's own runs."""

    page_id = "runs"
    title = "Runs"

    def __init__(self, ctx, parent=None) -> None:
        super().__init__(ctx, parent)
        self.rows: list[dict] = []
        self._worker: GeneratorWorker | None = None
        self._loaded = False
        self._again = False
        layout = QVBoxLayout(self)
        layout.setContentsMargins(16, 12, 16, 12)
        layout.addWidget(QLabel("<h2 style='margin:0'>Your runs</h2>"))
        # wrapped to the window (WrappedLabel asks for the height its lines need, no more): one unwrapped line
        # made the page wider than a 1024 px window
        intro = WrappedLabel("What your jobs measured, what the advisor predicts for each, and how far off it "
                             "was. A job like one of these (same accelerator and software) is planned from its "
                             "efficiency.")
        intro.setToolTip("Trainer states, llama-bench, vLLM benchmarks and the monitor's job books")
        layout.addWidget(intro)
        bar = QHBoxLayout()
        self.import_button = QPushButton("Import…")
        self.import_button.setToolTip("Read a trainer_state.json, llama-bench JSON/JSONL/CSV, a vLLM benchmark "
                                      "result or an advisor job recording")
        self.import_button.clicked.connect(self._on_import_clicked)
        self.forget_button = QPushButton("Forget")
        self.forget_button.setToolTip("Delete the selected run (the planner stops learning from it)")
        self.forget_button.setEnabled(False)
        self.forget_button.clicked.connect(self._on_forget_clicked)
        bar.addWidget(self.import_button)
        bar.addWidget(self.forget_button)
        self.message = WrappedLabel()  # wraps: a long file name or error must not widen the page past the window
        self.message.setTextFormat(Qt.TextFormat.PlainText)  # it quotes files and their errors: never markup
        self.message.setObjectName("runsMessage")
        bar.addWidget(self.message, 1)
        layout.addLayout(bar)
        split = QSplitter(Qt.Orientation.Vertical)
        self.model = RecordTableModel(run_columns(), [], self)
        self.proxy = make_proxy(self.model, self)
        self.view = make_view(self.proxy)
        self.view.setObjectName("runsTable")
        self.view.setMinimumHeight(90)
        self.view.selectionModel().selectionChanged.connect(self._on_selection_changed)
        table_box = QWidget()
        tl = QVBoxLayout(table_box)
        tl.setContentsMargins(0, 0, 0, 0)
        tl.addWidget(self.view, 1)
        self.load_detail = WrappedLabel()  # a serving run at its load: measured against planned
        self.load_detail.setTextFormat(Qt.TextFormat.PlainText)  # it quotes numbers of a file: never markup
        self.load_detail.setObjectName("runsLoad")
        self.load_detail.setToolTip("A serving benchmark run at its own load (users or rate, prompts, lengths), "
                                    "planned as a published run of that shape: output tokens/s, first token "
                                    "(p50) and time per output token (p50), each with the plan's 80 % range")
        self.load_detail.setVisible(False)
        tl.addWidget(self.load_detail)
        split.addWidget(table_box)
        chart_box = QWidget()
        cl = QVBoxLayout(chart_box)
        cl.setContentsMargins(0, 0, 0, 0)
        self.plot = plots.make_plot("Predicted against measured tokens/s (log-log)", "predicted (tokens/s)", "",
                                    x_label="measured (tokens/s)", x_unit="", legend=True, min_height=150)
        self.plot.setLogMode(x=True, y=True)
        self._band = None
        self._lines = [plots.add_line(self.plot, name, i, width=w, dashed=d) for name, i, w, d in (
            ("y = x (planned exactly)", 0, 1.5, False), ("±25 %", 1, 1.0, True), (None, 1, 1.0, True))]
        c_here, c_other = plots.color(2), plots.color(3)
        self._here = pg.ScatterPlotItem(name="this machine", size=10, pen=pg.mkPen(c_here), brush=pg.mkBrush(c_here))
        self._other = pg.ScatterPlotItem(name="other machines", size=10, pen=pg.mkPen(c_other, width=2),
                                         brush=pg.mkBrush(None))
        self.plot.addItem(self._here)
        self.plot.addItem(self._other)
        plots.refit_legend(self.plot)
        cl.addWidget(self.plot)
        split.addWidget(chart_box)
        split.setStretchFactor(0, 1)
        split.setStretchFactor(1, 2)
        split.setSizes([150, 300])
        layout.addWidget(split, 1)
        # runs on the CPU are planned on this machine's host figures: read after the page is built (local_ready)
        ctx.local_ready.connect(self._on_local_ready)
        self.refresh()

    # ------------------------------------------------------------ data
    def refresh(self) -> None:
        """Read the runs and plan them again, off the GUI thread."""
        if self._worker is not None:
            self._again = True  # what changed meanwhile (this machine read, a run imported) is planned next
            return
        self._loaded = False
        if not self.ctx.local_known:  # plan as `advisor runs` does: with this machine's host figures
            self.message.setText("Reading this machine…")
            return
        self.message.setText("Planning your runs…")
        host = (self.ctx.plan_kw() or {}).get("host")
        self._worker = GeneratorWorker(_load, self.ctx.catalog, host, parent=self)
        self._worker.result_ready.connect(self._on_worker_result_ready)
        self._worker.failed.connect(self._on_worker_failed)
        self._worker.done.connect(self._on_worker_done)
        self._worker.start()

    @Slot(object)
    def _on_worker_result_ready(self, rows) -> None:
        self.set_rows(rows)

    @Slot(str)
    def _on_worker_failed(self, reason: str) -> None:
        self.message.setText(f"Your runs could not be read: {reason}")

    @Slot()
    def _on_worker_done(self) -> None:
        self._worker = None
        self._loaded = True
        if self._again:
            self._again = False
            self.refresh()

    @Slot()
    def _on_local_ready(self) -> None:
        self.refresh()

    def set_rows(self, rows: list[dict]) -> None:
        """Show these ``advisor.runs/1`` rows in the table and the chart."""
        self.rows = list(rows)
        self.model.set_rows(self.rows)
        fit_columns(self.view, max_width=260)
        here, other = chart_points(self.rows)
        self._here.setData([math.log10(m) for m, _ in here], [math.log10(p) for _, p in here])
        self._other.setData([math.log10(m) for m, _ in other], [math.log10(p) for _, p in other])
        values = [v for pt in here + other for v in pt]
        lo, hi = (min(values) / 2, max(values) * 2) if values else (1.0, 1e4)
        xs = [lo, hi]
        for line, f in zip(self._lines, (1.0, BAND, 1 / BAND)):
            line.setData(xs, [x * f for x in xs])
        self.plot.setXRange(math.log10(lo), math.log10(hi), padding=0)
        self.plot.setYRange(math.log10(lo), math.log10(hi), padding=0)
        for axis in ("bottom", "left"):
            plots.set_log_ticks(self.plot, axis, RATE_TICKS, lo, hi)
        plots.set_empty_text(self.plot, None if values else "No run with a prediction yet: import one above")
        self._show_load()
        if not self.rows:
            from advisor.runs import READS

            self.message.setText(f"No runs imported yet: Import… {READS} (or: advisor runs import FILE).")
        else:
            held = [r["range_held"] for r in self.rows if r["range_held"] is not None]
            within = [r for r in self.rows if r["error_factor"] and 1 / BAND <= r["error_factor"] <= BAND]
            self.message.setText(f"{len(self.rows)} runs; {len(within)} planned within 25 %, the range held for "
                                 f"{sum(held)} of {len(held)}.")

    # ------------------------------------------------------------ actions
    def selected(self) -> dict | None:
        rows = self.view.selectionModel().selectedRows()
        return rows[0].data(RECORD_ROLE) if rows else None

    @Slot()
    def _on_selection_changed(self, *_args) -> None:
        self.forget_button.setEnabled(self.selected() is not None)
        self._show_load()

    def _show_load(self) -> None:
        """The selected run at its load, else the latest serving run's; hidden where no run is a serving run."""
        from advisor.runs.listing import load_summary

        chosen = self.selected()
        if chosen is None or "load" not in chosen:
            chosen = next((r for r in reversed(self.rows) if "load" in r), None)
        self.load_detail.setVisible(chosen is not None)
        self.load_detail.setText("" if chosen is None else f"Run {chosen['id']} {load_summary(chosen['load'])}")

    @Slot()
    def _on_import_clicked(self) -> None:
        files, _ = QFileDialog.getOpenFileNames(self, "Import runs", "", "Run files (*.json *.jsonl *.csv *.log *.txt);;All files (*)")
        if files:
            self.import_files(files)

    def import_files(self, files: list[str]) -> bool:
        """Import files (all read and checked first); a bad one is one line in the message, nothing stored."""
        from advisor.probes._device_info import cpu_model
        from advisor.runs import ImportOptions, RunImportError, import_file
        from advisor.runs.predict import predict
        from advisor.store.calibration import load_planner_calibration, with_runs
        from advisor.store.runs import RunStore, RunStoreError, this_machine_id

        profile = self.ctx.machine
        gpus = tuple(g.info.name for g in profile.gpus) if profile is not None else ()
        opts = ImportOptions(this_machine_id=this_machine_id(), this_cpu=cpu_model(), this_gpus=gpus)
        try:
            records = [r for f in files for r in import_file(f, opts)]
            calibration = with_runs(load_planner_calibration(), records, this_machine_id())
            host = (self.ctx.plan_kw() or {}).get("host")
            preds = [predict(rec, catalog=self.ctx.catalog, calibration=calibration, host=host) for rec in records]
            with RunStore() as store:
                store.add_all([(rec, None if p is None else p.to_dict()) for rec, p in zip(records, preds)])
        except (RunImportError, RunStoreError) as exc:
            self.message.setText(f"Not imported: {exc}")
            return False
        self.ctx.calibration_changed.emit()  # the planner learns from them
        self.refresh()
        return True

    @Slot()
    def _on_forget_clicked(self) -> None:
        from advisor.store.runs import RunStore, RunStoreError

        row = self.selected()
        if row is None:
            return
        try:
            with RunStore() as store:
                store.forget(row["id"])
        except RunStoreError as exc:
            self.message.setText(str(exc))
            return
        self.ctx.calibration_changed.emit()
        self.refresh()

    # ------------------------------------------------------------ page hooks
    def is_ready(self) -> bool:
        return self._loaded

    def shutdown(self) -> None:
        if self._worker is not None:
            self._worker.stop()
