"""The Planner's input form: every ``advisor plan`` flag as a widget, read back as a plan mapping.

``values()`` returns the keys of ``PlanRequest.from_mapping`` (the long flags with ``_``), leaving out
what is on "auto", so the planner's own defaults apply. Any edit emits ``inputs_changed``.
"""

from __future__ import annotations

from PySide6.QtCore import Signal, Slot
from PySide6.QtWidgets import QCheckBox, QComboBox, QDoubleSpinBox, QFormLayout, QLabel, QLineEdit, QSpinBox, QWidget

from advisor.gui.widgets.accelerator_picker import AcceleratorPicker
from advisor.units import parse_quantity

CUSTOM = "custom"
WORKLOADS = (("pretrain", "pretrain from scratch"), ("finetune", "full fine-tune"), ("lora", "LoRA fine-tune"),
             ("qlora", "QLoRA (4-bit base)"), ("inference", "inference (serving)"))
BUDGETS = (("default", "planner's default"), ("tokens", "tokens"), ("epochs", "epochs of a dataset"),
           ("hours", "hours of compute"))
QUANTS = ((None, "none (weights at the precision)"), ("q8_0", "q8_0 (8.5 bits)"), ("q6_k", "q6_k (6.6 bits)"),
          ("q4_k_m", "q4_k_m (4.8 bits)"), ("q4_0", "q4_0 (4.5 bits)"), ("nf4", "nf4 (4.1 bits)"))
RUNTIMES = ((None, "auto (llama.cpp on consumer cards, vLLM on datacenter parts)"), ("llama.cpp", "llama.cpp"),
            ("vllm", "vLLM"), ("exllama", "ExLlamaV2"), ("mlc", "MLC LLM"))
LORA_RANK = 16
# Values that return every field to its default or "auto" (set_values leaves keys it is not given alone;
# spin boxes clamp 0 to their minimum, which is "auto"): a scenario is shown as {**RESET, **its plan}.
RESET = {"workload": "pretrain", "precision": "bf16", "optimizer": "adamw", "zero": None, "gpus": 0,
         "tp": None, "pp": 1, "seq_len": 0, "micro_batch": 1, "checkpointing": "selective",
         "budget": "default", "context": 0, "batch": 1, "output_tokens": 256, "mfu": 0,
         "layers": 0, "hidden": 0, "heads": 0, "kv_heads": 0, "ffn": 0, "vocab": 0,
         "accelerator": [], "lora_rank": LORA_RANK, "quant": None, "runtime": None, "spot_offers": True, "download": False}
TIPS = {
    "model": "A preset with its exact architecture, a model from the Models page (Hugging Face cache, GGUF file, "
             "Ollama, LM Studio), or 'custom' to give a parameter count",
    "download": "Fetch this model's config.json from Hugging Face over HTTPS when it is not in the local cache "
                "(nothing else opens a connection)",
    "params": "Total parameters, e.g. 7B, 350M, 1.2T",
    "workload": "Pretraining and full fine-tuning train every weight; LoRA trains small adapters on a frozen base; "
                "QLoRA keeps the base in 4 bits",
    "precision": "Numeric format of the compute; bf16/fp16/fp8 training keeps an fp32 master copy",
    "optimizer": "AdamW keeps two fp32 moments per trained weight (8 bytes); 8-bit AdamW 2 bytes; SGD none",
    "zero": "ZeRO sharding across data-parallel devices: 1 optimizer, 2 + gradients, 3 + weights",
    "gpus": "Total devices; auto picks the fewest of each accelerator that fit",
    "tp": "Tensor parallel degree (splits each layer across devices in one node)",
    "pp": "Pipeline parallel stages (splits the layers)",
    "seq_len": "Training sequence length in tokens; sets activation memory",
    "micro_batch": "Sequences per device per step; activations grow with it",
    "checkpointing": "Activation checkpointing: recompute activations instead of keeping them (full saves most)",
    "budget": "How much work: a token count (generated tokens when serving), epochs of a dataset, or hours",
    "context": "Prompt plus generated tokens per request; sets the KV cache",
    "batch": "Concurrent requests decoded together",
    "output_tokens": "Tokens generated per request",
    "lora_rank": "LoRA/QLoRA adapter rank: trainable weights, their gradients and optimizer state grow with it",
    "quant": "Serve quantised weights (llama.cpp/bitsandbytes formats, by effective bits per weight)",
    "runtime": "Inference runtime: the decode's bandwidth efficiency depends on it and on the weight format",
    "spot_offers": "List cloud spot instances (cheaper, can be interrupted) besides on-demand ones",
    "mfu": "Model FLOPs utilisation to assume (0 = the planner's prior or this machine's measurement)",
}


def _auto_spin(lo: int, hi: int, auto_text: str = "auto") -> QSpinBox:
    s = QSpinBox()
    s.setRange(lo - 1 if lo > 0 else 0, hi)
    s.setSpecialValueText(auto_text)
    s.setValue(s.minimum())
    s.setAccelerated(True)
    return s


class PlanFormWidget(QWidget):
    """Inputs of a plan. ``values()`` -> mapping for ``PlanRequest.from_mapping``; ``inputs_changed`` on any edit."""

    inputs_changed = Signal()

    def __init__(self, model_ids, parent=None, accelerators=()) -> None:
        """``accelerators``: ``(id, name, memory_bytes)`` tuples for the accelerator picker."""
        super().__init__(parent)
        self.form = QFormLayout(self)
        self.form.setContentsMargins(0, 0, 0, 0)
        self.form.setVerticalSpacing(6)
        self.w: dict[str, QWidget] = {}
        self._row_visible: dict[str, bool] = {}

        model = QComboBox()
        for mid in model_ids:
            model.addItem(mid, mid)
        model.addItem("custom size…", CUSTOM)
        self._add("model", "Model", model)
        self._add("download", "Download", QCheckBox("Allow fetching its config"))
        self._add("params", "Parameters", QLineEdit(), placeholder="e.g. 7B")
        self.arch_fields = ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab")
        for name, label, hi in (("layers", "Layers", 1000), ("hidden", "Hidden size", 100000),
                                ("heads", "Heads", 1024), ("kv_heads", "KV heads", 1024),
                                ("ffn", "FFN size", 1000000), ("vocab", "Vocabulary", 2000000)):
            self._add(name, label, _auto_spin(1, hi), tip="architecture for activations and KV cache; auto = typical")
        self._add("workload", "Workload", self._combo(WORKLOADS))
        rank = QSpinBox()
        rank.setRange(1, 4096)
        rank.setValue(LORA_RANK)
        self._add("lora_rank", "LoRA rank", rank)
        self._add("precision", "Precision", self._combo([(p, p) for p in
                                                          ("bf16", "fp16", "fp8", "fp32", "tf32", "int8", "int4")]))
        self._add("quant", "Quantisation", self._combo(QUANTS))
        self._add("runtime", "Runtime", self._combo(RUNTIMES))
        self._add("optimizer", "Optimizer", self._combo([(o, o) for o in ("adamw", "adamw-8bit", "sgd", "adafactor")]))
        self._add("zero", "ZeRO stage", self._combo([(None, "auto"), (0, "0 (none)"), (1, "1"), (2, "2"), (3, "3")]))
        self._add("gpus", "Devices", _auto_spin(1, 16384, "auto (fewest that fit)"))
        self._add("accelerator", "Accelerators", AcceleratorPicker(accelerators))
        self._add("tp", "Tensor parallel", self._combo([(None, "auto"), (1, "1"), (2, "2"), (4, "4"), (8, "8")]))
        pp = QSpinBox()
        pp.setRange(1, 256)
        self._add("pp", "Pipeline stages", pp)
        seq = _auto_spin(128, 1048576)
        seq.setSingleStep(512)
        self._add("seq_len", "Sequence length", seq)
        mb = QSpinBox()
        mb.setRange(1, 4096)
        self._add("micro_batch", "Micro-batch", mb)
        ck = self._combo([(c, c) for c in ("selective", "none", "full")])
        self._add("checkpointing", "Checkpointing", ck)
        self._add("budget", "Budget", self._combo(BUDGETS))
        self._add("tokens", "Tokens", QLineEdit(), placeholder="e.g. 2e8 or 200M")
        epochs = QDoubleSpinBox()
        epochs.setRange(0.01, 1000)
        epochs.setValue(3)
        self._add("epochs", "Epochs", epochs)
        self._add("dataset_tokens", "Dataset tokens", QLineEdit(), placeholder="e.g. 50M")
        hours = QDoubleSpinBox()
        hours.setRange(0.01, 1e6)
        hours.setValue(24)
        hours.setSuffix(" h")
        self._add("hours", "Hours", hours)
        ctxs = _auto_spin(1, 1048576)
        ctxs.setSingleStep(1024)
        self._add("context", "Context (tokens)", ctxs)
        batch = QSpinBox()
        batch.setRange(1, 4096)
        self._add("batch", "Batch (requests)", batch)
        out = QSpinBox()
        out.setRange(1, 1048576)
        out.setValue(256)
        self._add("output_tokens", "Output tokens", out)
        mfu = QDoubleSpinBox()
        mfu.setRange(0, 1)
        mfu.setSingleStep(0.05)
        mfu.setDecimals(2)
        mfu.setSpecialValueText("prior / measured")
        self._add("mfu", "MFU", mfu)
        spot = QCheckBox("List spot offers")
        spot.setChecked(True)
        self._add("spot_offers", "Cloud", spot)
        self.error = QLabel()
        self.error.setWordWrap(True)
        self.error.setObjectName("planError")
        self.form.addRow(self.error)
        self._update_rows()

    # ------------------------------------------------------------ construction helpers
    def _combo(self, items) -> QComboBox:
        c = QComboBox()
        for data, text in items:
            c.addItem(text, data)
        return c

    def _add(self, key: str, label: str, widget: QWidget, *, tip: str = "", placeholder: str = "") -> None:
        widget.setObjectName(f"plan_{key}")
        if TIPS.get(key, tip):  # the accelerator picker keeps its own tip
            widget.setToolTip(TIPS.get(key, tip))
        if placeholder:
            widget.setPlaceholderText(placeholder)
        if isinstance(widget, QComboBox):
            widget.currentIndexChanged.connect(self._on_widget_edited)
        elif isinstance(widget, AcceleratorPicker):
            widget.selection_changed.connect(self._on_widget_edited)
        elif isinstance(widget, QCheckBox):
            widget.toggled.connect(self._on_widget_edited)
        elif isinstance(widget, QLineEdit):
            widget.textEdited.connect(self._on_widget_edited)
        else:
            widget.valueChanged.connect(self._on_widget_edited)
        self.w[key] = widget
        self.form.addRow(label, widget)

    @Slot()
    def _on_widget_edited(self, *_args) -> None:
        self._update_rows()
        self.inputs_changed.emit()

    def _update_rows(self) -> None:
        custom = self.w["model"].currentData() == CUSTOM
        workload = self.w["workload"].currentData()
        inference = workload == "inference"
        budget = self.w["budget"].currentData()
        model = self.w["model"].currentData()
        show = {"params": custom, **{k: custom for k in self.arch_fields},
                "download": isinstance(model, str) and model.startswith("hf:"),
                "lora_rank": workload in ("lora", "qlora"), "quant": inference, "runtime": inference,
                "optimizer": not inference, "zero": not inference, "seq_len": not inference,
                "micro_batch": not inference, "checkpointing": not inference, "budget": True,
                "tokens": budget == "tokens", "epochs": not inference and budget == "epochs",
                "dataset_tokens": not inference and budget == "epochs", "hours": budget == "hours",
                "context": inference, "batch": inference, "output_tokens": inference}
        for key, visible in show.items():
            if self._row_visible.get(key) != visible:  # an unchanged row must not re-lay out the window
                self._row_visible[key] = visible
                self.form.setRowVisible(self.w[key], visible)

    # ------------------------------------------------------------ values
    def values(self) -> dict:
        """The inputs as a ``PlanRequest.from_mapping`` mapping.

        Raises:
            ValueError: a number field holds text that is not a number (the message names the field).
        """
        w = self.w
        out: dict = {}
        if w["model"].currentData() == CUSTOM:
            out["params"] = self._number("params")
            for k in self.arch_fields:
                if w[k].value() > w[k].minimum():
                    out[k] = w[k].value()
        else:
            out["model"] = w["model"].currentData()
            if out["model"].startswith("hf:") and w["download"].isChecked():
                out["download"] = True
        for k in ("workload", "precision"):
            out[k] = w[k].currentData()
        if out["workload"] == "inference":
            if w["context"].value() > w["context"].minimum():
                out["context"] = w["context"].value()
            out["batch"] = w["batch"].value()
            out["output_tokens"] = w["output_tokens"].value()
            for key in ("quant", "runtime"):
                if w[key].currentData() is not None:
                    out[key] = w[key].currentData()
        else:
            out["optimizer"] = w["optimizer"].currentData()
            out["checkpointing"] = w["checkpointing"].currentData()
            out["micro_batch"] = w["micro_batch"].value()
            if out["workload"] in ("lora", "qlora") and w["lora_rank"].value() != LORA_RANK:
                out["lora_rank"] = w["lora_rank"].value()
            if w["zero"].currentData() is not None:
                out["zero"] = w["zero"].currentData()
            if w["seq_len"].value() > w["seq_len"].minimum():
                out["seq_len"] = w["seq_len"].value()
            if w["budget"].currentData() == "epochs":
                out["epochs"] = w["epochs"].value()
                out["dataset_tokens"] = self._number("dataset_tokens")
        budget = w["budget"].currentData()  # a serving job has a budget too: generated tokens or hours
        if budget == "tokens":
            out["tokens"] = self._number("tokens")
        elif budget == "hours":
            out["hours"] = w["hours"].value()
        if w["gpus"].value() > w["gpus"].minimum():
            out["gpus"] = w["gpus"].value()
        if w["accelerator"].selection():
            out["accelerator"] = w["accelerator"].selection()
        if w["tp"].currentData() is not None:
            out["tp"] = w["tp"].currentData()
        out["pp"] = w["pp"].value()
        if w["mfu"].value() > 0:
            out["mfu"] = w["mfu"].value()
        if not w["spot_offers"].isChecked():
            out["spot_offers"] = False
        return out

    def _number(self, key: str) -> float:
        text = self.w[key].text().strip()
        try:
            return parse_quantity(text)
        except ValueError:
            raise ValueError(f"{key}: {'missing' if not text else 'not a number: ' + text}") from None

    def set_values(self, values: dict) -> None:
        """Show a saved mapping (unknown keys and bad values are ignored); emits one ``inputs_changed``."""
        self.blockSignals(True)
        try:
            for key, value in values.items():
                widget = self.w.get(key)
                if widget is None:
                    continue
                if isinstance(widget, AcceleratorPicker):
                    widget.set_selection(value)
                elif isinstance(widget, QCheckBox):
                    if isinstance(value, bool):
                        widget.setChecked(value)
                elif isinstance(widget, QComboBox):
                    i = widget.findData(value)
                    if i < 0 and key == "model" and isinstance(value, str) and value.strip():
                        i = widget.count() - 1  # a model spec (hf:ORG/NAME, a file, a store's name): before "custom"
                        widget.insertItem(i, value, value)
                    if i >= 0:
                        widget.setCurrentIndex(i)
                elif isinstance(widget, QLineEdit):
                    widget.setText(_number_text(value) if isinstance(value, (int, float)) else str(value))
                elif isinstance(value, (int, float)) and not isinstance(value, bool):
                    widget.setValue(value)
            if "params" in values and "model" not in values:
                self.w["model"].setCurrentIndex(self.w["model"].findData(CUSTOM))
            budget = next((b for b in ("tokens", "epochs", "hours") if b in values), None)
            if budget:
                self.w["budget"].setCurrentIndex(self.w["budget"].findData(budget))
        finally:
            self.blockSignals(False)
        self._update_rows()
        self.inputs_changed.emit()

    def show_error(self, message: str, color: str) -> None:
        """Show (or clear, with an empty message) the reason the inputs cannot be planned."""
        self.error.setText(f"<span style='color:{color}'>{message}</span>" if message else "")


def _number_text(value: float) -> str:
    """Short when that is exact (2e+08), every digit otherwise (123456789), so a saved value comes back unchanged."""
    short = f"{value:.6g}"
    return short if float(short) == value else f"{value:.17g}"
