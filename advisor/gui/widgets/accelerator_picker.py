"""A compact multi-select of catalog accelerators: a button that opens a checkable list.

No choice means every accelerator (the planner's default). The button says what is chosen ("All accelerators",
the one name, or "3 accelerators"); ``selection()`` keeps the order the ids were given or checked in, so a
scenario's list comes back as written. A search box above the list filters it by name, id or memory size
("h100", "mi300", "80 gb"); filtering never changes what is checked.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QPushButton,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
    QWidgetAction,
)

from advisor.gui.safe_text import plain
from advisor.units import fmt_mem

ALL_TEXT = "All accelerators"
SEARCH_ROLE = Qt.ItemDataRole.UserRole + 1


class AcceleratorPicker(QToolButton):
    """Choose some accelerators, or none for all. ``selection_changed`` on every change."""

    selection_changed = Signal()

    def __init__(self, accelerators=(), parent=None) -> None:
        """``accelerators``: ``(id, name, memory_bytes)`` tuples in the order to list them."""
        super().__init__(parent)
        self._chosen: list[str] = []
        self._names: dict[str, str] = {}
        self.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setAccessibleName("Accelerators")
        menu = QMenu(self)
        panel = QWidget(menu)
        layout = QVBoxLayout(panel)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.setSpacing(4)
        layout.addWidget(QLabel("Plan only on the checked accelerators:"))
        self.search = QLineEdit(panel)
        self.search.setObjectName("acceleratorSearch")
        self.search.setPlaceholderText("Search by name, id or memory…")
        self.search.setClearButtonEnabled(True)
        self.search.setAccessibleName("Search accelerators")
        self.search.textChanged.connect(self._on_search_text_changed)
        layout.addWidget(self.search)
        self.list = QListWidget(panel)
        self.list.setObjectName("acceleratorList")
        self.list.setAccessibleName("Accelerators to plan on")
        self.search.returnPressed.connect(self.list.setFocus)
        self.list.itemChanged.connect(self._on_list_item_changed)
        layout.addWidget(self.list)
        row = QHBoxLayout()
        row.addStretch(1)
        self.clear_button = QPushButton("Clear (all accelerators)", panel)
        self.clear_button.setObjectName("acceleratorClear")
        self.clear_button.clicked.connect(self._on_clear_button_clicked)
        row.addWidget(self.clear_button)
        layout.addLayout(row)
        action = QWidgetAction(menu)
        action.setDefaultWidget(panel)
        menu.addAction(action)
        self.setMenu(menu)
        self.set_accelerators(accelerators)

    def set_accelerators(self, accelerators) -> None:
        """List these ``(id, name, memory_bytes)`` accelerators; the choice is kept where its ids still exist."""
        self._names = {a: name for a, name, _mem in accelerators}
        self.list.blockSignals(True)
        self.list.clear()
        for acc_id, name, mem in accelerators:
            item = QListWidgetItem(f"{plain(name)}  ({acc_id})")  # a user catalog's name: inert
            item.setData(Qt.ItemDataRole.UserRole, acc_id)
            item.setToolTip(f"{acc_id} · {fmt_mem(mem)}")
            item.setData(SEARCH_ROLE, f"{name} {acc_id} {fmt_mem(mem)}".lower())
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Unchecked)
            self.list.addItem(item)
        self.list.blockSignals(False)
        self.list.setMinimumSize(max(300, self.list.sizeHintForColumn(0) + 32), 300)  # whole names, no clipping
        self._apply([a for a in self._chosen if a in self._names], emit=False)
        self._on_search_text_changed(self.search.text())

    def visible_ids(self) -> list[str]:
        """The ids the search leaves in the list, in list order."""
        return [self.list.item(i).data(Qt.ItemDataRole.UserRole) for i in range(self.list.count())
                if not self.list.item(i).isHidden()]

    def selection(self) -> list[str]:
        """The chosen ids in the order given or checked; empty means all."""
        return list(self._chosen)

    def set_selection(self, ids) -> None:
        """Check these ids (unknown ones are ignored; empty or None means all). Emits nothing."""
        if isinstance(ids, str):
            ids = [ids]
        self._apply([a for a in dict.fromkeys(ids or ()) if a in self._names], emit=False)

    def clear(self) -> None:
        """Back to all accelerators."""
        self._apply([], emit=True)

    # ------------------------------------------------------------ internals
    def _apply(self, ids: list[str], emit: bool) -> None:
        changed = ids != self._chosen
        self._chosen = ids
        self.list.blockSignals(True)
        for i in range(self.list.count()):
            item = self.list.item(i)
            on = item.data(Qt.ItemDataRole.UserRole) in ids
            item.setCheckState(Qt.CheckState.Checked if on else Qt.CheckState.Unchecked)
        self.list.blockSignals(False)
        self._update_text()
        if emit and changed:
            self.selection_changed.emit()

    def _update_text(self) -> None:
        n = len(self._chosen)
        self.setText(ALL_TEXT if n == 0 else self._names[self._chosen[0]] if n == 1 else f"{n} accelerators")
        self.setToolTip("Restrict the options to some accelerators (none checked = every accelerator)"
                        + ("" if n == 0 else "\nChosen: " + ", ".join(self._chosen)))

    @Slot(QListWidgetItem)
    def _on_list_item_changed(self, item: QListWidgetItem) -> None:
        acc_id = item.data(Qt.ItemDataRole.UserRole)
        ids = [a for a in self._chosen if a != acc_id]
        if item.checkState() == Qt.CheckState.Checked:
            ids.append(acc_id)
        self._apply(ids, emit=True)

    @Slot(str)
    def _on_search_text_changed(self, text: str) -> None:
        words = text.lower().replace("gb", " gb").split()
        for i in range(self.list.count()):
            item = self.list.item(i)
            haystack = item.data(SEARCH_ROLE) or ""
            item.setHidden(not all(w in haystack for w in words))

    @Slot()
    def _on_clear_button_clicked(self) -> None:
        self.clear()
