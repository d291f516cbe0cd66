"""A read-only table model over a list of records, with typed columns, units and tooltips.

Each :class:`Column` says how to read a value from a record, how to show it (with its unit) and how
to sort it, so sorting through ``QSortFilterProxyModel`` orders numbers as numbers, not as text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QSortFilterProxyModel, Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableView

SORT_ROLE = Qt.ItemDataRole.UserRole + 1
RECORD_ROLE = Qt.ItemDataRole.UserRole + 2


@dataclass(frozen=True)
class Column:
    """One table column.

    Attributes:
        title: header text, including the unit in brackets where there is one ("memory (GB)").
        get: record -> raw value (used for sorting and searching).
        fmt: raw value -> display text; ``str`` by default, "—" for None.
        tip: header tooltip explaining the figure.
        cell_tip: record -> tooltip of a cell (for long texts such as sources).
        color: record -> colour name of the text, or None.
        align_right: numbers are right-aligned.
    """

    title: str
    get: Callable[[Any], Any]
    fmt: Callable[[Any], str] | None = None
    tip: str = ""
    cell_tip: Callable[[Any], str] | None = None
    color: Callable[[Any], str | None] | None = None
    align_right: bool = False


class RecordTableModel(QAbstractTableModel):
    """Rows are arbitrary records; columns are :class:`Column` s."""

    def __init__(self, columns: Sequence[Column], rows: Sequence[Any] = (), parent=None) -> None:
        super().__init__(parent)
        self._columns = list(columns)
        self._rows = list(rows)

    def set_rows(self, rows: Sequence[Any]) -> None:
        """Replace every row (views keep their sort and filter)."""
        self.beginResetModel()
        self._rows = list(rows)
        self.endResetModel()

    def rows(self) -> list[Any]:
        return list(self._rows)

    def rowCount(self, parent=QModelIndex()) -> int:  # noqa: N802, B008 (Qt API; an invalid index is immutable)
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent=QModelIndex()) -> int:  # noqa: N802, B008
        return 0 if parent.isValid() else len(self._columns)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):  # noqa: N802
        if orientation != Qt.Orientation.Horizontal or not 0 <= section < len(self._columns):
            return None
        col = self._columns[section]
        if role == Qt.ItemDataRole.DisplayRole:
            return col.title
        if role == Qt.ItemDataRole.ToolTipRole:
            return col.tip or None
        return None

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        record = self._rows[index.row()]
        col = self._columns[index.column()]
        if role == Qt.ItemDataRole.DisplayRole:
            value = col.get(record)
            if value is None:
                return "—"
            return col.fmt(value) if col.fmt else str(value)
        if role == SORT_ROLE:
            value = col.get(record)
            if value is None:
                return float("-inf") if col.align_right else ""
            return value if isinstance(value, (int, float)) else str(value).lower()
        if role == RECORD_ROLE:
            return record
        if role == Qt.ItemDataRole.ToolTipRole:
            if col.cell_tip:
                return col.cell_tip(record) or None
            return col.tip or None
        if role == Qt.ItemDataRole.TextAlignmentRole and col.align_right:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ForegroundRole and col.color:
            name = col.color(record)
            return QColor(name) if name else None
        return None


def make_proxy(model: RecordTableModel, parent=None) -> QSortFilterProxyModel:
    """A proxy that sorts by the raw values and filters case-insensitively on every column."""
    proxy = QSortFilterProxyModel(parent)
    proxy.setSourceModel(model)
    proxy.setSortRole(SORT_ROLE)
    proxy.setFilterKeyColumn(-1)
    proxy.setFilterCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
    return proxy


def make_view(model, parent=None, *, stretch_last: bool = True) -> QTableView:
    """A table view with the app's defaults: sortable, row selection, alternating rows, compact."""
    view = QTableView(parent)
    view.setModel(model)
    view.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)  # keep the model's order at first
    view.setSortingEnabled(True)
    view.setAlternatingRowColors(True)
    view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    view.verticalHeader().setVisible(False)
    view.verticalHeader().setDefaultSectionSize(22)
    view.setWordWrap(False)
    view.setTextElideMode(Qt.TextElideMode.ElideRight)
    header = view.horizontalHeader()
    header.setStretchLastSection(stretch_last)
    header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
    header.setHighlightSections(False)
    return view


def fit_columns(view: QTableView, max_width: int = 260) -> None:
    """Size columns to their contents, capped so one long text does not push the rest away."""
    view.resizeColumnsToContents()
    header = view.horizontalHeader()
    for i in range(header.count()):
        if header.sectionSize(i) > max_width:
            header.resizeSection(i, max_width)
