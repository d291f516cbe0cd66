"""Models page: the models in the Hugging Face cache, Ollama and LM Studio, and whether each fits this machine.

The stores are read off the GUI thread (``advisor.models.discover_models``, metadata only, no network); the fits
come from ``advisor.planner.model_fit.fit_model`` (the plan) on the detected GPUs. "Plan this model" opens the Planner on the
selected model through the shared context (``ctx.plan.load`` then ``page_requested``).
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Slot
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QPushButton, QVBoxLayout

from advisor.gui import theme as themes
from advisor.gui.pages.base import Page
from advisor.gui.safe_text import rich, tip
from advisor.gui.widgets.tables import Column, RecordTableModel, fit_columns, make_proxy, make_view
from advisor.units import fmt_bytes, fmt_count, fmt_mem


def plan_values(found) -> dict | None:
    """The Planner's values for a found model: its spec (``--model``), which the planner resolves itself, so
    mixture-of-experts and MLA models plan with their own architecture; a quantised file (GGUF) as inference.
    None for a model that could not be read.
    """
    if found is None or found.model is None:
        return None
    values = {"model": found.spec}
    if found.model.source in ("gguf", "ollama", "lmstudio"):
        values["workload"] = "inference"  # a GGUF holds quantised weights for a runtime like llama.cpp
    return values


class _Row:
    """One table row: a found model with its fits on this machine (None when unreadable)."""

    def __init__(self, found, fit) -> None:
        self.found, self.fit = found, fit
        self.model = found.model

    def fit_of(self, workload: str):
        return self.fit.get(workload) if self.fit else None


def _fit_text(fit) -> str | None:
    if fit is None:
        return None
    mark = {True: "fits", False: "too big", None: "no GPU"}[fit.fits]
    fmt = f" {fit.weight_format.upper()}" if fit.weight_format and fit.workload == "inference" else ""
    speed = f" · {fit.tokens_per_s:,.0f} tok/s" if fit.tokens_per_s and fit.workload == "inference" else ""
    return f"{mark}{fmt} · {fmt_mem(fit.per_device_bytes)}{speed}"


def _fit_color(fit) -> str | None:
    if fit is None or fit.fits is None:
        return None
    return themes.current().good if fit.fits else themes.current().bad


def _size(r: _Row) -> int | None:
    """The weights' bytes; for a GGUF store the file's size; None for a cached config without weights."""
    if r.model and r.model.weight_bytes:
        return r.model.weight_bytes
    return (r.found.disk_bytes or None) if r.found.store != "hf-cache" else None


def _fit_column(workload: str, title: str, tip: str) -> Column:
    return Column(title, lambda r: _fit_text(r.fit_of(workload)), color=lambda r: _fit_color(r.fit_of(workload)),
                  align_right=True, tip=tip + "; the memory one GPU needs")


def model_columns() -> list[Column]:
    """Columns of the models table (also used by tests)."""
    return [
        Column("model", lambda r: r.found.name, cell_tip=lambda r: r.found.location,
               tip="the model's name in its store; hover for where its files are"),
        Column("store", lambda r: r.found.store, tip="hf-cache (Hugging Face), ollama or lmstudio"),
        Column("params", lambda r: r.model.params if r.model else None, fmt_count, align_right=True,
               tip="total parameters: exact from GGUF tensors or safetensors headers, else from the config"),
        Column("size", lambda r: _size(r),
               lambda v: fmt_bytes(v), align_right=True,
               tip="bytes of the weights (else of the files on disk), GB = 1e9"),
        Column("format", lambda r: r.model.quant if r.model else None, tip="quantisation or dtype of the stored weights"),
        Column("context\n(tokens)", lambda r: (r.model.arch.max_context or None) if r.model else None,
               lambda v: f"{v:,}", align_right=True, tip="maximum context the model's metadata declares"),
        _fit_column("inference", "inference", "stored weights plus an fp16 KV cache of 4,096 tokens, split over every GPU"),
        _fit_column("lora", "LoRA", "bf16 base, rank-16 adapters, one 2,048-token sequence, Hugging Face "
                    "transformers + PEFT (full checkpointing, fp32 logits)"),
        _fit_column("qlora", "QLoRA", "NF4 base, rank-16 adapters, one 2,048-token sequence, Hugging Face "
                    "transformers + PEFT (full checkpointing, fp32 logits)"),
        Column("problem", lambda r: r.found.error or None, cell_tip=lambda r: r.found.error,
               tip="why a model could not be read"),
    ]


class ModelsPage(Page):
    """The models found on this machine, with their fit, and a way to plan one."""

    page_id = "models"
    title = "Models"

    def __init__(self, ctx, parent=None) -> None:
        super().__init__(ctx, parent)
        self._worker = None
        self._found: list | None = None
        layout = QVBoxLayout(self)
        layout.setContentsMargins(16, 12, 16, 12)
        top = QHBoxLayout()
        top.addWidget(QLabel("<h2 style='margin:0'>Models on this machine</h2>"))
        top.addStretch(1)
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search…")
        self.search.setClearButtonEnabled(True)
        self.search.setMinimumWidth(240)
        self.search.textChanged.connect(self._on_search_text_changed)
        top.addWidget(self.search)
        self.rescan_button = QPushButton("Rescan")
        self.rescan_button.setToolTip("Read the Hugging Face cache, Ollama and LM Studio again (metadata only, offline)")
        self.rescan_button.clicked.connect(self._on_rescan_clicked)
        top.addWidget(self.rescan_button)
        self.plan_button = QPushButton("Plan this model")
        self.plan_button.setEnabled(False)
        self.plan_button.clicked.connect(self._on_plan_clicked)
        top.addWidget(self.plan_button)
        layout.addLayout(top)
        self.note = QLabel("Looking for models…")
        self.note.setObjectName("modelsNote")
        self.note.setWordWrap(True)
        self.note.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.note)
        self.table_model = RecordTableModel(model_columns(), [], self)
        self.proxy = make_proxy(self.table_model, self)
        self.table = make_view(self.proxy)
        self.table.setObjectName("modelsTable")
        self.table.selectionModel().selectionChanged.connect(self._on_selection_changed)
        layout.addWidget(self.table, 1)
        ctx.machine_ready.connect(self._on_ctx_machine_ready)

    # ------------------------------------------------------------ scanning
    def scan(self) -> None:
        """Read the stores in a worker (ignored while a scan runs)."""
        if self._worker is not None:
            return
        from advisor.gui.workers import GeneratorWorker
        from advisor.models import discover_models

        self.rescan_button.setEnabled(False)
        self._worker = GeneratorWorker(discover_models, parent=self)
        self._worker.result_ready.connect(self._on_worker_result_ready)
        self._worker.failed.connect(self._on_worker_failed)
        self._worker.done.connect(self._on_worker_done)
        self._worker.start()

    @Slot()
    def _on_rescan_clicked(self) -> None:
        self.scan()

    @Slot(object)
    def _on_worker_result_ready(self, found) -> None:
        self._found = list(found)
        self._show()

    @Slot(str)
    def _on_worker_failed(self, reason: str) -> None:
        self._found = []
        self.note.setText(f"<span style='color:{themes.current().bad}'>Could not read the model stores: {rich(reason, None)}</span>")

    @Slot()
    def _on_worker_done(self) -> None:
        self._worker = None
        self.rescan_button.setEnabled(True)

    @Slot(object)
    def _on_ctx_machine_ready(self, _profile) -> None:
        if self._found is not None:
            self._show()

    def _gpu_memory(self) -> list[int]:
        m = self.ctx.machine
        if m is None:
            return []
        return [int(g.info.memory_total_bytes) for g in m.gpus if g.info.available and g.info.memory_total_bytes]

    def _fit(self, found):
        """The plan of each workload on this machine's GPUs (``planner.model_fit``: what ``advisor models`` and
        ``advisor plan`` say), None for a model that cannot be read or planned."""
        from advisor.planner.model_fit import PlanInputError, fit_model

        if found.model is None:
            return None
        local = self.ctx.local
        try:
            return fit_model(found.spec, local.owned if local is not None else (), self.ctx.catalog,
                             max_context=found.model.arch.max_context,
                             host=local.host if local is not None else None)
        except PlanInputError:
            return None

    def _show(self) -> None:
        from advisor.models.hf import hub_cache_dir
        from advisor.models.stores import lmstudio_dirs, ollama_dir
        from advisor.paths import shown

        gpus = self._gpu_memory()
        rows = [_Row(f, self._fit(f)) for f in self._found or []]
        self.table_model.set_rows(rows)
        fit_columns(self.table, max_width=320)
        gpu_text = (f"{len(gpus)} GPU(s), smallest {fmt_mem(min(gpus))}" if gpus
                    else "no GPU detected (fit not judged)")
        # the note is rich text: each path shown home-relative and HTML-escaped (a folder name is outside text)
        ol = ollama_dir()
        where = (f"Hugging Face cache {rich(shown(hub_cache_dir()), None)}, Ollama "
                 f"{rich(shown(ol), None) if ol else '(not installed)'}, LM Studio "
                 + (", ".join(rich(shown(d), None) for d in lmstudio_dirs()) or "(not installed)"))
        if rows:
            self.note.setText(f"{len(rows)} model(s) from the {where}. This machine: {gpu_text}. Each fit is the "
                              "plan on this machine's GPUs (inference in the runtime's usual file, Q4_K_M under "
                              "llama.cpp); each cell shows the memory one GPU needs.")
        else:
            self.note.setText(f"No models found in the {where}. Download one (for example "
                              "<code>hf download Qwen/Qwen2.5-0.5B</code> or <code>ollama pull qwen2.5:0.5b</code>) "
                              "and press Rescan; nothing here uses the network.")
        self._on_selection_changed()

    # ------------------------------------------------------------ planning
    def selected_row(self) -> _Row | None:
        rows = self.table.selectionModel().selectedRows() if self.table.selectionModel() else []
        if not rows:
            return None
        return self.table_model.rows()[self.proxy.mapToSource(rows[0]).row()]

    @Slot()
    def _on_selection_changed(self, *_args) -> None:
        row = self.selected_row()
        values = plan_values(row.found) if row is not None else None
        self.plan_button.setEnabled(values is not None)
        if values is None:
            self.plan_button.setToolTip("Select a readable model to plan it")
        else:
            self.plan_button.setToolTip(tip(f"Open the Planner on {values['model']} (its own architecture and, for a "
                                            "GGUF file, its exact weight bytes)"))

    @Slot()
    def _on_plan_clicked(self) -> None:
        row = self.selected_row()
        values = plan_values(row.found) if row is not None else None
        if values is None:
            return
        self.ctx.plan.load(values)  # the app's current job: the Planner shows it
        self.ctx.page_requested.emit("planner")

    @Slot(str)
    def _on_search_text_changed(self, text: str) -> None:
        self.proxy.setFilterFixedString(text.strip())

    # ------------------------------------------------------------ page hooks
    def on_shown(self) -> None:
        if self._found is None:
            self.scan()

    def is_ready(self) -> bool:
        return self._found is not None and self._worker is None

    def prepare_screenshot(self) -> None:
        self.scan()

    def wait_ready(self, timeout_s: float = 20.0) -> bool:
        ready = super().wait_ready(timeout_s)
        plannable = [i for i, r in enumerate(self.table_model.rows()) if plan_values(r.found)]
        if ready and plannable and not self.selected_row():  # the screenshot shows a selected row and its button
            self.table.selectRow(self.proxy.mapFromSource(self.table_model.index(plannable[0], 0)).row())
        return ready

    def shutdown(self) -> None:
        if self._worker is not None:
            self._worker.stop()
            self._worker = None
