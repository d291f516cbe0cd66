"""The cost assumptions as a form, generated from their declarations (``advisor/cost/assumptions.py``).

Every assumption of ``CostAssumptions.describe()`` gets a row in its group (home, owned, on-prem, cloud,
serving: ``ASSUMPTION_GROUPS``): a label, an editor whose range follows the declared rule, the unit, a reset
button, and under it where the value comes from (the default's source, or the app setting or scenario file
that changed it). A changed value is highlighted. The names and meanings are the CLI's: a row is the
``--set NAME=VALUE`` of the same name, and the spot box is ``--spot`` (rank by spot prices; spot offers are
listed either way, the Planner's "List spot offers" is ``--no-spot``).

``overrides()`` returns the values that differ from the defaults (what ``CostAssumptions.with_overrides``
takes); ``set_overrides(values, sources)`` shows saved ones; ``edited`` (and ``changed_callback``) fire on
every edit by the user.
"""

from __future__ import annotations

import math
from dataclasses import fields

from PySide6.QtCore import Signal, Slot
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QGridLayout,
    QLabel,
    QSpinBox,
    QToolButton,
    QWidget,
)

from advisor.cost.assumptions import ASSUMPTION_GROUP_TITLES, ASSUMPTION_GROUPS, CostAssumptions, assumption_group
from advisor.gui import theme as themes
from advisor.gui.context import APP_SOURCE
from advisor.gui.safe_text import set_plain, tip

# The editor's range by the declared rule (``cost.assumptions._RULES``): (minimum, maximum).
RULE_RANGES = {"nonneg": (0.0, 1e9), "positive": (0.001, 1000.0), "years": (0.01, 100.0), "fraction": (0.0, 1.0),
               "positive_fraction": (0.001, 1.0), "share": (0.0, 0.999), "at_least_one": (1.0, 100.0),
               "hours_per_day": (0.1, 24.0), "count": (1, 1024)}
CHECK_TEXT = {"spot": "Rank by spot prices (--spot)"}
SOURCE_CHARS = 90  # the source line is cut to this (its whole text is the tooltip)


def label_of(name: str) -> str:
    """A readable label from an assumption's name (its unit has a column of its own)."""
    words = name
    for tail in ("_usd_per_kwh", "_usd_per_gpu_hour", "_usd_per_gpu_year", "_usd_per_kw_month", "_usd_per_h", "_usd",
                 "_w"):
        if words.endswith(tail):
            words = words[: -len(tail)] + (" price" if tail == "_usd_per_kwh" else "")
            break
    words = words.replace("reserved_discount_", "reserved discount ").replace("_", " ")
    words = words.replace("onprem", "on-prem").replace("pue", "PUE").replace("gpu", "GPU")
    return words[:1].upper() + words[1:]


def _rules() -> dict[str, str]:
    return {f.name: f.metadata["check"] for f in fields(CostAssumptions)}


def _short(text: str) -> str:
    return text if len(text) <= SOURCE_CHARS else text[:SOURCE_CHARS - 1] + "…"


def _same(a, b) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)


class AssumptionsForm(QWidget):
    """Editable cost assumptions, grouped, each with unit, default, source and reset.

    Attributes:
        widgets: assumption name -> its editor (``assumption_<name>``).
        units / sources / resets: name -> the row's unit label, source label and reset button.
        describe: ``CostAssumptions().describe()`` (the defaults, units, origins and help).
    """

    edited = Signal()

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.defaults = CostAssumptions()
        self.describe = self.defaults.describe()
        self.grid = QGridLayout(self)
        self.grid.setContentsMargins(0, 0, 0, 0)
        self.grid.setHorizontalSpacing(6)
        self.grid.setVerticalSpacing(1)
        self.grid.setColumnStretch(1, 1)
        self.widgets: dict[str, QWidget] = {}
        self.units: dict[str, QLabel] = {}
        self.sources: dict[str, QLabel] = {}
        self.resets: dict[str, QToolButton] = {}
        self.labels: dict[str, QLabel] = {}
        self.headers: dict[str, QLabel] = {}
        self._sources: dict[str, str] = {}
        self.changed_callback = None
        metrics = self.fontMetrics()
        self._unit_width = metrics.horizontalAdvance("fraction of") + 2  # longer units wrap
        self._editor_width = metrics.horizontalAdvance("00000.00") + 24
        rules = _rules()
        by_group: dict[str, list[str]] = {g: [] for g in ASSUMPTION_GROUPS}
        for name in self.describe:
            by_group[assumption_group(name)].append(name)
        row = 0
        for group, names in by_group.items():
            if not names:
                continue
            header = QLabel(f"<b>{ASSUMPTION_GROUP_TITLES[group]}</b>")
            header.setObjectName(f"assumptionGroup_{group}")
            self.grid.addWidget(header, row, 0, 1, 4)
            self.headers[group] = header
            row += 1
            for name in names:
                row = self._add_row(name, rules.get(name, "share"), row)
        self._refresh_all()

    # ------------------------------------------------------------ construction
    def _editor(self, name: str, rule: str, value) -> QWidget:
        if isinstance(value, bool):
            box = QCheckBox(CHECK_TEXT.get(name, ""))
            box.setChecked(value)
            box.toggled.connect(self._on_widget_edited)
            return box
        if rule == "reserved_years":
            combo = QComboBox()
            for years in (0, 1, 3):
                combo.addItem("none" if years == 0 else f"{years} year{'s' if years > 1 else ''}", years)
            combo.setCurrentIndex(combo.findData(value))
            combo.currentIndexChanged.connect(self._on_widget_edited)
            return combo
        lo, hi = RULE_RANGES.get(rule, (0.0, 1e9))
        if isinstance(value, int):
            spin = QSpinBox()
            spin.setRange(int(lo), int(hi))
            spin.setValue(value)
            spin.valueChanged.connect(self._on_widget_edited)
            return spin
        spin = QDoubleSpinBox()
        spin.setDecimals(3 if hi <= 1.0 or abs(value) < 1 else 2 if abs(value) < 100 else 0)
        spin.setRange(lo, hi)
        spin.setSingleStep(0.01 if hi <= 1.0 else max(0.01, round(abs(value) / 10, 2) or 1.0))
        spin.setValue(float(value))
        spin.valueChanged.connect(self._on_widget_edited)
        return spin

    def _add_row(self, name: str, rule: str, row: int) -> int:
        info = self.describe[name]
        value = info["value"]
        editor = self._editor(name, rule, value)
        editor.setObjectName(f"assumption_{name}")
        editor.setAccessibleName(label_of(name))
        flag = "--spot" if name == "spot" else f"--set {name}=VALUE"
        tip = (f"{info.get('help', '')[:1].upper()}{info.get('help', '')[1:]}\nUnit: {info['unit']}\n"
               f"Default: {value} ({info['origin']})\nCommand line: {flag}; scenario key: [assumptions] {name}")
        editor.setToolTip(tip)
        label = QLabel(label_of(name))
        label.setToolTip(tip)
        label.setBuddy(editor)
        unit = QLabel(info["unit"])
        unit.setObjectName(f"assumptionUnit_{name}")
        unit.setStyleSheet(f"color: {themes.current().muted}")
        unit.setWordWrap(True)
        unit.setFixedWidth(self._unit_width)
        reset = QToolButton()
        reset.setText("↺")
        reset.setObjectName(f"assumptionReset_{name}")
        reset.setAccessibleName(f"Reset {label_of(name)}")
        reset.setToolTip(f"Back to the default, {value}")
        reset.clicked.connect(lambda _checked=False, n=name: self.reset(n))
        source = QLabel()
        source.setObjectName(f"assumptionSource_{name}")
        source.setStyleSheet(f"color: {themes.current().muted}; font-size: 8pt")
        source.setWordWrap(True)  # never wider than the panel: it wraps to a second line
        label.setWordWrap(True)
        editor.setFixedWidth(self._editor_width)
        self.grid.addWidget(label, row, 0)
        self.grid.addWidget(editor, row, 1)
        self.grid.addWidget(unit, row, 2)
        self.grid.addWidget(reset, row, 3)
        self.grid.addWidget(source, row + 1, 0, 1, 4)
        self.widgets[name], self.units[name], self.sources[name] = editor, unit, source
        self.resets[name], self.labels[name] = reset, label
        return row + 2

    # ------------------------------------------------------------ values
    def value(self, name: str):
        """The value an editor shows."""
        w = self.widgets[name]
        if isinstance(w, QCheckBox):
            return w.isChecked()
        if isinstance(w, QComboBox):
            return w.currentData()
        return w.value()

    def default(self, name: str):
        return self.describe[name]["value"]

    def is_changed(self, name: str) -> bool:
        return not _same(self.value(name), self.default(name))

    def overrides(self) -> dict:
        """The assumptions whose value differs from the default, by name."""
        return {name: self.value(name) for name in self.widgets if self.is_changed(name)}

    def set_overrides(self, values: dict, sources: dict | None = None) -> None:
        """Show saved overrides (every other assumption returns to its default), and where each came from."""
        self._sources = dict(sources or {})
        for name, w in self.widgets.items():
            value = values.get(name, self.default(name))
            w.blockSignals(True)
            try:
                if isinstance(w, QCheckBox):
                    w.setChecked(bool(value))
                elif isinstance(w, QComboBox):
                    w.setCurrentIndex(max(0, w.findData(int(value))))
                elif isinstance(value, (int, float)):
                    w.setValue(value)
            finally:
                w.blockSignals(False)
        self._refresh_all()

    def source_of(self, name: str) -> str:
        """Where the shown value comes from: the default's source, or what changed it."""
        if not self.is_changed(name):
            return f"default: {self.describe[name]['origin']}"
        return self._sources.get(name, APP_SOURCE)

    def reset(self, name: str) -> None:
        """Put one assumption back to its default (an edit: the plan follows)."""
        w = self.widgets[name]
        value = self.default(name)
        if isinstance(w, QCheckBox):
            w.setChecked(bool(value))
        elif isinstance(w, QComboBox):
            w.setCurrentIndex(max(0, w.findData(value)))
        else:
            w.setValue(value)

    # ------------------------------------------------------------ showing
    def _refresh(self, name: str) -> None:
        changed = self.is_changed(name)
        t = themes.current()
        text = self.source_of(name)
        if changed:
            text = f"changed from {self.default(name)} · {text}"
        set_plain(self.sources[name], _short(text))  # an origin can name a scenario file
        self.sources[name].setToolTip(tip(text))
        self.resets[name].setEnabled(changed)
        self.labels[name].setStyleSheet(f"color: {t.accent}; font-weight: bold" if changed else "")
        self.labels[name].setText(label_of(name) + (" •" if changed else ""))  # not by colour alone
        self.widgets[name].setProperty("changed", changed)

    def _refresh_all(self) -> None:
        for name in self.widgets:
            self._refresh(name)

    @Slot()
    def _on_widget_edited(self, *_args) -> None:
        sender = self.sender()
        for name, w in self.widgets.items():
            if w is sender:
                self._sources.pop(name, None)  # edited here: an app setting now
                self._refresh(name)
        self.edited.emit()
        if self.changed_callback is not None:
            self.changed_callback()


def rows_text(form: AssumptionsForm) -> dict[str, tuple[str, str, str]]:
    """Each row's (label, unit, source) as shown: for tests and the units scan."""
    return {n: (form.labels[n].text(), form.units[n].text(), form.sources[n].toolTip()) for n in form.widgets}

