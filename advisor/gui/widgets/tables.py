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

from advisor.gui.safe_text import plain, tip

SORT_ROLE = Qt.ItemDataRole.UserRole + 1
RECORD_ROLE = Qt.ItemDataRole.UserRole + 2
# Roles as plain ints, worked out once: data() runs for every visible cell and role on each repaint.
_DISPLAY = int(Qt.ItemDataRole.DisplayRole)
_TOOLTIP = int(Qt.ItemDataRole.ToolTipRole)
_ALIGN = int(Qt.ItemDataRole.TextAlignmentRole)
_FOREGROUND = int(Qt.ItemDataRole.ForegroundRole)
_SORT = int(SORT_ROLE)
_RECORD = int(RECORD_ROLE)
_ROLES = frozenset((_DISPLAY, _TOOLTIP, _ALIGN, _FOREGROUND, _SORT, _RECORD))
_RIGHT = int((Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter).value)


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
        """Replace every row (views keep their sort and filter). Where there were rows and are rows, this is an
        update of the cells, not a reset: rows past the old count are inserted, rows past the new count removed
        (at the end), and the rows both have changed only in the columns whose text or colour changed
        (``dataChanged``: the view keeps its scroll position and repaints only what it shows). A reset made the
        view and its proxy build every row again and repaint every cell (a re-plan whose option count moved by
        one did that)."""
        rows = list(rows)
        old = self._rows
        if not rows or not old:
            self.beginResetModel()
            self._rows = rows
            self.endResetModel()
            return
        common = min(len(old), len(rows))
        changed = [c for c, col in enumerate(self._columns)
                   if any(_shown(col, a) != _shown(col, b) for a, b in zip(old[:common], rows[:common]))]
        if len(rows) < len(old):
            self.beginRemoveRows(QModelIndex(), len(rows), len(old) - 1)
            self._rows = rows
            self.endRemoveRows()
        elif len(rows) > len(old):
            self.beginInsertRows(QModelIndex(), len(old), len(rows) - 1)
            self._rows = rows
            self.endInsertRows()
        else:
            self._rows = rows
        for first, last in _runs(changed):  # only the columns whose text changed are repainted
            self.dataChanged.emit(self.index(0, first), self.index(common - 1, last))

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

    def data(self, index, role=_DISPLAY):
        if role not in _ROLES or not index.isValid():
            return None
        return _cell(self._rows[index.row()], self._columns[index.column()], role)

    def multiData(self, index, roles) -> None:  # noqa: N802 (Qt API)
        if index.isValid():
            self.fill(index.row(), index.column(), roles)
        else:
            super().multiData(index, roles)

    def fill(self, row: int, column: int, roles) -> None:
        """Every role a view asks of one cell (a ``QModelRoleDataSpan``), as :meth:`data` answers each, in one call.

        A view asks seven roles of each cell it paints, each one call into Python through the sorting proxy (and
        three with the proxy's own index mapping); a re-plan repaints the table's changed columns, and those
        calls were most of the table's drawing."""
        record, col = self._rows[row], self._columns[column]
        for k in range(len(roles)):
            item = roles[k]
            role = item.role()
            if role in _ROLES:
                item.setData(_cell(record, col, role))
            else:
                item.clearData()


def _cell(record, col: Column, role: int):
    """What a cell gives for a role (``RecordTableModel.data``)."""
    if role == _DISPLAY:
        value = col.get(record)
        if value is None:
            return "—"
        return plain(col.fmt(value) if col.fmt else value)  # names, command lines: inert, cut
    if role == _ALIGN:
        return _RIGHT if col.align_right else None
    if role == _FOREGROUND:
        name = col.color(record) if col.color else None
        return _qcolor(name) if name else None
    if role == _SORT:
        value = col.get(record)
        if value is None:
            return float("-inf") if col.align_right else ""
        return value if isinstance(value, (int, float)) else str(value).lower()
    if role == _RECORD:
        return record
    if col.cell_tip:  # _TOOLTIP
        return tip(col.cell_tip(record)) or None
    return col.tip or None


def _shown(col: Column, record) -> tuple:
    """What a cell shows: its text and colour."""
    value = col.get(record)
    text = "—" if value is None else col.fmt(value) if col.fmt else str(value)
    return text, col.color(record) if col.color else None


def _runs(indexes: list[int]) -> list[tuple[int, int]]:
    """``[1, 2, 3, 6]`` -> ``[(1, 3), (6, 6)]``."""
    out: list[tuple[int, int]] = []
    for i in indexes:
        if out and out[-1][1] == i - 1:
            out[-1] = (out[-1][0], i)
        else:
            out.append((i, i))
    return out


_COLORS: dict[str, QColor] = {}


def _qcolor(name: str) -> QColor:
    """A QColor by name, made once (the table asks for each visible cell's colour on every repaint)."""
    c = _COLORS.get(name)
    if c is None:
        c = _COLORS[name] = QColor(name)
    return c


class RecordProxy(QSortFilterProxyModel):
    """The sorting and filtering proxy of a :class:`RecordTableModel`: a cell's roles are read in one call
    (:meth:`RecordTableModel.fill`), not one call into Python for each role and each index mapping."""

    def multiData(self, index, roles) -> None:  # noqa: N802 (Qt API)
        source = self.sourceModel()
        at = self.mapToSource(index) if index.isValid() else QModelIndex()
        if isinstance(source, RecordTableModel) and at.isValid():
            source.fill(at.row(), at.column(), roles)
        else:
            super().multiData(index, roles)


def make_proxy(model: RecordTableModel, parent=None) -> QSortFilterProxyModel:
    """A proxy that sorts by the raw values and filters case-insensitively on every column."""
    proxy = RecordProxy(parent)
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
