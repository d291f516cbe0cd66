"""The Planner's input form, built from the job schema (``advisor.job.JOB_FIELDS``): one widget per field.

A field's kind picks its widget: a choice is a combo box, a whole number a spin box, a number a text box
that takes ``7B`` or ``2e8``, true/false a check box, a list of accelerator ids the accelerator picker; the
model preset is a combo of the catalog's presets plus "custom size". Each row shows the field's unit,
its tooltip says the schema's help, range and default, and it is shown only for the field's workloads.
Rows are grouped by the field's ``group``. A model spec that is not a preset (from the Models page or a
scenario) joins the model list. Fields the form does not show are in :data:`NOT_IN_FORM`, with
the reason; ``budget`` is the form's own choice of which of tokens, epochs and hours is read.

``values()`` returns the fields that differ from their default (what ``Job.from_mapping`` takes; a number
field whose text is not a number gives the text, so the schema names the field). ``show_error(field, text)``
puts the one-line reason beside the field. Any edit emits ``inputs_changed``.
"""

from __future__ import annotations

from PySide6.QtCore import Signal, Slot
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QSpinBox,
    QWidget,
)

from advisor.gui import theme as themes
from advisor.gui.safe_text import rich, set_plain
from advisor.gui.widgets.accelerator_picker import AcceleratorPicker
from advisor.gui.widgets.choices_picker import ChoicesPicker
from advisor.job import JOB_FIELDS
from advisor.units import parse_quantity

CUSTOM = "custom"
ARCH_FIELDS = ("params", "active_params", "layers", "hidden", "heads", "kv_heads", "ffn", "vocab")
BUDGETS = (("default", "planner's default"), ("tokens", "tokens"), ("epochs", "epochs of a dataset"),
           ("hours", "hours of compute"))
BUDGET_FIELDS = {"tokens": ("tokens",), "epochs": ("epochs", "dataset_tokens"), "hours": ("hours",)}
# Schema fields without a widget here, and why.
NOT_IN_FORM = {
    "assumptions": "cost assumptions are edited on the Compare page (AppContext.assumptions)",
    "notes": "free-form notes are kept by the scenario file, not planned",
    "sources": "derived: where each value came from, filled in by the app",
    "own": "the GPUs you own are a setting of the Machine page (AppContext.own_specs), added to every plan",
}
GROUP_TITLES = {"model": "Model", "job": "Job", "software": "Training software", "budget": "Budget", "inference": "Serving",
                "hardware": "Hardware and cost"}
LABELS = {"params": "Parameters", "active_params": "Active parameters", "kv_heads": "KV heads", "ffn": "FFN size",
          "hidden": "Hidden size", "vocab": "Vocabulary", "lora_rank": "LoRA rank", "lora_dropout": "LoRA dropout",
          "lora_targets": "LoRA targets", "zero": "ZeRO stage",
          "gpus": "Devices", "tp": "Tensor parallel", "pp": "Pipeline stages", "seq_len": "Sequence length",
          "micro_batch": "Micro-batch", "dataset_tokens": "Dataset tokens", "context": "Context",
          "batch": "Concurrent requests", "prompt_tokens": "Prompt tokens", "output_tokens": "Output tokens", "accelerator": "Accelerators",
          "mfu": "MFU", "spot_offers": "Cloud", "quant": "Quantisation", "download": "Download",
          "grad_accum": "Gradient accumulation", "optimizer_offload": "Optimizer offload",
          "kv_cache_bits": "KV cache bits", "gpu_layers": "GPU layers", "owned_options": "Owned GPUs",
          "stack": "Software stack", "optimizer_state": "Optimizer states", "optimizer_in_backward": "Step in backward",
          "logits_fp32_copies": "fp32 logits copies", "loss_chunks": "Loss chunks"}
CHOICE_TEXT = {
    "workload": {"pretrain": "pretrain from scratch", "finetune": "full fine-tune", "lora": "LoRA fine-tune",
                 "qlora": "QLoRA (4-bit base)", "inference": "inference (serving)"},
    "quant": {None: "none", "q8_0": "q8_0 (8.5 bits)", "q6_k": "q6_k (6.6 bits)",
              "q4_k_m": "q4_k_m (4.8 bits)", "q4_0": "q4_0 (4.5 bits)", "nf4": "nf4 (4.1 bits)"},
    "zero": {None: "auto", 0: "0 (none)"},
    "stack": {None: "default for the job"},
    "framework": {None: "default"},
    "checkpointing": {None: "by framework"},
    "master_weights": {None: "by framework"},
    "optimizer_state": {None: "by framework"},
    "optimizer_in_backward": {None: "by framework"},
    "loss": {None: "by framework"},
    "activation_offload": {None: "by framework"},
    "runtime": {None: "auto", "llama.cpp": "llama.cpp",
                "vllm": "vLLM", "exllama": "ExLlamaV2", "mlc": "MLC LLM"},
}
CHECK_TEXT = {"spot_offers": "List spot offers", "download": "Allow fetching", "optimizer_offload": "In host RAM",
              "owned_options": "List them"}  # short: the form's width is the longest row's (the tooltip says more)
UNIT_TEXT = {"fraction of dense peak": "of peak", "micro-batches": "batches"}  # the whole unit: in the tooltip
UNITS = tuple(dict.fromkeys(UNIT_TEXT.get(m.unit, m.unit) for m in JOB_FIELDS.values() if m.unit))
AUTO = "auto"


def label_of(name: str) -> str:
    """The row label of a schema field."""
    return LABELS.get(name, name.replace("_", " ").capitalize())


def _tip(name: str) -> str:
    meta = JOB_FIELDS[name]
    lines = [meta.help[:1].upper() + meta.help[1:]]
    if meta.unit:
        lines.append(f"Unit: {meta.unit}")
    if meta.range_text():
        lines.append(f"Allowed: {meta.range_text()}")
    default = meta.default
    lines.append(f"Default: {AUTO if default is None else 'none' if default == () else default}")
    if meta.flag:
        lines.append(f"Command line: {meta.flag}; scenario key: {name}")
    return "\n".join(lines)


class PlanFormWidget(QWidget):
    """Inputs of a plan from the job schema. ``values()`` -> ``Job.from_mapping`` mapping; ``inputs_changed``."""

    inputs_changed = Signal()

    def __init__(self, model_ids, parent=None, accelerators=()) -> None:
        """``accelerators``: ``(id, name, memory_bytes)`` tuples for the accelerator picker."""
        super().__init__(parent)
        self.form = QFormLayout(self)
        self.form.setContentsMargins(0, 0, 0, 0)
        self.form.setVerticalSpacing(6)
        self.form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.w: dict[str, QWidget] = {}  # field name -> its editor (plus "budget")
        self.rows: dict[str, QWidget] = {}  # field name -> the row's widget (editor and unit)
        self._errors: dict[str, QLabel] = {}
        self._headers: dict[str, QLabel] = {}
        self._group_of: dict[str, str] = {}
        self._row_visible: dict[QWidget, bool] = {}
        self._shown_error: str | None = None
        self.error = QLabel()  # the reason the inputs cannot be planned, one line (also beside its field)
        self.error.setWordWrap(True)
        self.error.setObjectName("planError")
        self.form.addRow(self.error)
        self.form.setRowVisible(self.error, False)
        self._row_visible[self.error] = False
        self._model_ids = list(model_ids)
        self._unit_width = max(self.fontMetrics().horizontalAdvance(u) for u in UNITS) + 4
        self._accelerators = accelerators
        group = None
        for name, meta in JOB_FIELDS.items():
            if name in NOT_IN_FORM:
                continue
            if meta.group != group:
                group = meta.group
                header = QLabel(f"<b>{GROUP_TITLES.get(group, group.capitalize())}</b>")
                header.setObjectName(f"planGroup_{group}")
                self.form.addRow(header)
                self._headers[group] = header
            self._add(name, self._editor(name))
            self._group_of[name] = group
        budget = QComboBox()
        for data, text in BUDGETS:
            budget.addItem(text, data)
        budget.setToolTip("How much work: a token count (generated tokens when serving), epochs of a dataset, or "
                          "hours; the planner's default is 20 tokens per parameter for pretraining (Hoffmann et "
                          "al. 2022), 1e8 tokens otherwise")
        self._insert_before("tokens", "budget", "Budget", budget)
        self._update_rows()

    # ------------------------------------------------------------ construction
    def _editor(self, name: str) -> QWidget:
        meta = JOB_FIELDS[name]
        if name == "model":
            box = QComboBox()
            for mid in self._model_ids:
                box.addItem(mid, mid)
            box.addItem("custom size…", CUSTOM)
            return box
        if meta.kind == "choice":
            box = QComboBox()
            texts = CHOICE_TEXT.get(name, {})
            if meta.default is None:
                box.addItem(texts.get(None, AUTO), None)
            for c in meta.choices:
                box.addItem(texts.get(c, str(c)), c)
            box.setCurrentIndex(max(0, box.findData(meta.default)))
            return box
        if meta.kind == "int":
            spin = QSpinBox()
            lo, hi = int(meta.minimum or 0), int(min(meta.maximum or 2**31 - 1, 2**31 - 1))
            if meta.default is None:  # one below the minimum reads "auto"
                spin.setRange(lo - 1, hi)
                spin.setSpecialValueText(AUTO)
                spin.setValue(lo - 1)
            else:
                spin.setRange(lo, hi)
                spin.setValue(int(meta.default))
            spin.setAccelerated(True)
            return spin
        if meta.kind == "bool":
            box = QCheckBox(CHECK_TEXT.get(name, label_of(name)))
            box.setChecked(bool(meta.default))
            return box
        if meta.kind == "ids" and meta.choices:  # some of a fixed list: the software stacks
            from advisor.catalog.stacks import STACK_LABELS

            return ChoicesPicker([(c, STACK_LABELS.get(c, c)) for c in meta.choices],
                                 CHOICE_TEXT.get(name, {}).get(None, "default"))
        if meta.kind == "ids":
            return AcceleratorPicker(self._accelerators)
        edit = QLineEdit()  # numbers and text: "7B", "2e8", "200M"
        edit.setPlaceholderText(AUTO if meta.default is None else str(meta.default))
        return edit

    def _row(self, name: str, editor: QWidget, unit: str) -> QWidget:
        row = QWidget()
        lay = QHBoxLayout(row)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(6)
        lay.addWidget(editor, 1)
        u = QLabel(UNIT_TEXT.get(unit, unit))
        u.setStyleSheet(f"color: {themes.current().muted}")
        u.setFixedWidth(self._unit_width)  # units in one column, as wide as the longest, so the editors line up
        lay.addWidget(u)
        row.setObjectName(f"planRow_{name}")
        return row

    @staticmethod
    def _narrow(widget: QWidget) -> None:
        """A combo box as wide as the form allows, not as its longest item (the popup shows items whole)."""
        if isinstance(widget, QComboBox):
            widget.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            widget.setMinimumContentsLength(6)

    def _connect(self, widget: QWidget) -> None:
        if isinstance(widget, QComboBox):
            widget.currentIndexChanged.connect(self._on_widget_edited)
        elif isinstance(widget, (AcceleratorPicker, ChoicesPicker)):
            widget.selection_changed.connect(self._on_widget_edited)
        elif isinstance(widget, QCheckBox):
            widget.toggled.connect(self._on_widget_edited)
        elif isinstance(widget, QLineEdit):
            widget.textEdited.connect(self._on_widget_edited)
        else:
            widget.valueChanged.connect(self._on_widget_edited)

    def _add(self, name: str, editor: QWidget) -> None:
        meta = JOB_FIELDS[name]
        editor.setObjectName(f"plan_{name}")
        editor.setAccessibleName(label_of(name))
        self._narrow(editor)
        if not isinstance(editor, AcceleratorPicker):  # the picker says what is chosen in its own tip
            editor.setToolTip(_tip(name))
        self._connect(editor)
        row = self._row(name, editor, meta.unit if meta.kind in ("int", "number") else "")
        label = QLabel(label_of(name))
        label.setToolTip(_tip(name))
        label.setBuddy(editor)
        self.form.addRow(label, row)
        err = QLabel()
        err.setObjectName(f"planError_{name}")
        err.setWordWrap(True)
        err.setStyleSheet(f"color: {themes.current().bad}")
        self.form.addRow("", err)
        self.form.setRowVisible(err, False)
        self._row_visible[err] = False
        self.w[name] = editor
        self.rows[name] = row
        self._errors[name] = err

    def _insert_before(self, before: str, key: str, label: str, editor: QWidget) -> None:
        index, _role = self.form.getWidgetPosition(self.rows[before])
        editor.setObjectName(f"plan_{key}")
        editor.setAccessibleName(label)
        self._narrow(editor)
        self._connect(editor)
        row = self._row(key, editor, "")
        self.form.insertRow(index, label, row)
        self.w[key] = editor
        self.rows[key] = row
        self._group_of[key] = JOB_FIELDS[before].group

    # ------------------------------------------------------------ visibility
    @Slot()
    def _on_widget_edited(self, *_args) -> None:
        self._update_rows()
        self.inputs_changed.emit()

    def applies(self, name: str, choices: tuple | None = None) -> bool:
        """Whether a field is shown (and read) for the current model, workload and budget.

        ``choices``: :meth:`_choices` read once for a pass over every field (each read is a call into Qt, and a
        pass asked the same three pickers about 200 times an edit)."""
        if name == "budget":
            return True
        workload, model, budget_choice = self._choices() if choices is None else choices
        if workload not in JOB_FIELDS[name].workloads:
            return False
        if name in ARCH_FIELDS:
            return model == CUSTOM
        if name == "download":  # only a Hugging Face name can be fetched
            return isinstance(model, str) and model.startswith("hf:")
        for budget, names in BUDGET_FIELDS.items():
            if name in names:
                return budget_choice == budget
        return True

    def _choices(self) -> tuple:
        """``(workload, model, budget)`` as chosen now: what decides which fields apply."""
        return self.w["workload"].currentData(), self.w["model"].currentData(), self.w["budget"].currentData()

    def is_shown(self, name: str) -> bool:
        """Whether the field's row is visible."""
        return self._row_visible.get(self.rows[name], True)

    def _set_visible(self, widget: QWidget, visible: bool) -> None:
        if self._row_visible.get(widget) != visible:  # an unchanged row must not re-lay out the window
            self._row_visible[widget] = visible
            self.form.setRowVisible(widget, visible)

    def _update_rows(self) -> None:
        groups: dict[str, bool] = {}
        choices = self._choices()
        for name, row in self.rows.items():
            visible = self.applies(name, choices)
            self._set_visible(row, visible)
            groups[self._group_of[name]] = groups.get(self._group_of[name], False) or visible
            if name in self._errors:
                self._set_visible(self._errors[name], visible and bool(self._errors[name].text()))
        for group, header in self._headers.items():
            self._set_visible(header, groups.get(group, False))

    # ------------------------------------------------------------ values
    def values(self) -> dict:
        """The fields shown that differ from their default, as a ``Job.from_mapping`` mapping (never raises)."""
        out: dict = {}
        choices = self._choices()
        for name, meta in JOB_FIELDS.items():
            if name in NOT_IN_FORM or not self.applies(name, choices):
                continue
            value = self._read(name)
            if value is not None and value != meta.default and not (meta.kind == "ids" and not value):
                out[name] = value
        return out

    def _read(self, name: str):
        w = self.w[name]
        if name == "model":
            data = w.currentData()
            return None if data == CUSTOM else data
        if isinstance(w, (AcceleratorPicker, ChoicesPicker)):
            return w.selection()
        if isinstance(w, QComboBox):
            return w.currentData()
        if isinstance(w, QCheckBox):
            return w.isChecked()
        if isinstance(w, QSpinBox):
            return None if w.specialValueText() and w.value() == w.minimum() else w.value()
        text = w.text().strip()
        if not text:
            return None
        try:
            return parse_quantity(text)
        except ValueError:
            return text  # the schema names the field: "must be a finite number ..., got 'abc'"

    def set_values(self, values: dict) -> None:
        """Change some fields (the others keep their value), as if the user had; emits one ``inputs_changed``."""
        self._show({**self.values(), **values})
        self.inputs_changed.emit()

    def show_values(self, values: dict) -> None:
        """Show exactly these values (a field left out shows its default); emits nothing."""
        if values != self.values():
            self._show(values)

    def _show(self, values: dict) -> None:
        widgets = [*self.w.values()]
        for w in widgets:
            w.blockSignals(True)
        try:
            custom = "model" not in values and values.get("params") is not None
            self._show_model(CUSTOM if custom else values.get("model", self._model_ids[0]))
            for name, meta in JOB_FIELDS.items():
                if name in NOT_IN_FORM or name == "model":
                    continue
                self._write(name, values.get(name, meta.default))
            budget = next((b for b, names in BUDGET_FIELDS.items() if any(n in values for n in names)), None)
            self.w["budget"].setCurrentIndex(self.w["budget"].findData(budget or "default"))
        finally:
            for w in widgets:
                w.blockSignals(False)
        self._update_rows()

    def _show_model(self, model) -> None:
        """Select a preset, "custom", or a model spec (hf:ORG/NAME, a file, a store's name), added before "custom"."""
        box = self.w["model"]
        i = box.findData(model)
        if i < 0 and isinstance(model, str) and model.strip():
            i = box.count() - 1
            box.insertItem(i, model, model)
        box.setCurrentIndex(max(i, 0))

    def _write(self, name: str, value) -> None:
        w = self.w[name]
        if isinstance(w, (AcceleratorPicker, ChoicesPicker)):
            w.set_selection(value or [])
        elif isinstance(w, QComboBox):
            i = w.findData(value)
            w.setCurrentIndex(i if i >= 0 else max(0, w.findData(JOB_FIELDS[name].default)))
        elif isinstance(w, QCheckBox):
            w.setChecked(bool(value))
        elif isinstance(w, QSpinBox):
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
            w.setValue(int(value) if ok else w.minimum())
        elif value is None:
            w.setText("")
        else:
            w.setText(_number_text(value) if isinstance(value, (int, float)) and not isinstance(value, bool)
                      else str(value))

    # ------------------------------------------------------------ errors
    def show_error(self, field: str | None, message: str) -> None:
        """Show the one-line reason the inputs cannot be planned, beside ``field`` when the form shows it
        (and in the line above the form); an empty message clears it."""
        if self._shown_error is not None and self._shown_error in self._errors:
            self._errors[self._shown_error].setText("")
            self.rows[self._shown_error].setProperty("invalid", False)
            self._set_visible(self._errors[self._shown_error], False)
        self._shown_error = None
        t = themes.current()
        self.error.setText(f"<span style='color:{t.bad}'>{rich(message, None)}</span>" if message else "")
        if message and field in self._errors and self.applies(field):
            self._shown_error = field
            set_plain(self._errors[field], message.removeprefix(f"{field}: "))
            self._set_visible(self._errors[field], True)
        self._set_visible(self.error, bool(message) and self._shown_error is None)  # shown once: beside its field

    def clear_error(self) -> None:
        """The inputs are valid again."""
        self.show_error(None, "")


def _number_text(value: float) -> str:
    """Short when that is exact (2e+08), every digit otherwise (123456789), so a saved value comes back unchanged."""
    short = f"{value:.6g}"
    return short if float(short) == value else f"{value:.17g}"
