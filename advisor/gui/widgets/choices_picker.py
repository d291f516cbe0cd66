"""Choose some of a list's values (a schema ``ids`` field with ``choices``, such as the software stacks).

A button that says what is chosen ("default" when nothing is) and opens a menu of check boxes, one per
choice. ``selection()`` / ``set_selection()`` and ``selection_changed`` are those of the accelerator picker,
so the Planner form reads and writes both alike.
"""

from __future__ import annotations

from PySide6.QtCore import Signal, Slot
from PySide6.QtWidgets import QMenu, QSizePolicy, QToolButton


class ChoicesPicker(QToolButton):
    """Some of ``choices`` (``(value, label)`` pairs), or none for the default. ``selection_changed`` on a change."""

    selection_changed = Signal()

    def __init__(self, choices, default_text: str = "default", parent=None) -> None:
        super().__init__(parent)
        self.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)  # as wide as the other editors
        self._default_text = default_text
        self._labels = dict(choices)
        self.menu_ = QMenu(self)
        self.actions_ = {}
        for value, label in choices:
            act = self.menu_.addAction(label)
            act.setCheckable(True)
            act.setData(value)
            act.toggled.connect(self._on_action_toggled)
            self.actions_[value] = act
        self.setMenu(self.menu_)
        self._update_text()

    def selection(self) -> list[str]:
        """The values checked, in the choices' order (empty: the default)."""
        return [v for v, act in self.actions_.items() if act.isChecked()]

    def set_selection(self, values) -> None:
        """Check exactly these values (unknown ones are ignored); emits nothing."""
        chosen = set(values or ())
        for v, act in self.actions_.items():
            act.blockSignals(True)
            act.setChecked(v in chosen)
            act.blockSignals(False)
        self._update_text()

    def _update_text(self) -> None:
        chosen = self.selection()
        self.setText(", ".join(self._labels[v] for v in chosen) if chosen else self._default_text)

    @Slot(bool)
    def _on_action_toggled(self, _checked: bool) -> None:
        self._update_text()
        if not self.signalsBlocked():
            self.selection_changed.emit()
