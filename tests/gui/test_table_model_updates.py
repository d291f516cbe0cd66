"""``RecordTableModel.set_rows``: a new set of rows updates the cells that changed instead of resetting the model,
also when the row count changes (rows added or dropped at the end), so a re-plan repaints only what changed."""

from PySide6.QtCore import Qt

from advisor.gui.widgets.tables import Column, RecordTableModel, make_proxy

COLUMNS = [Column("name", lambda r: r["name"]), Column("hours", lambda r: r["hours"], lambda v: f"{v:.1f} h")]


def _record(model):
    events = []
    model.modelReset.connect(lambda: events.append("reset"))
    model.rowsInserted.connect(lambda _p, a, b: events.append(("inserted", a, b)))
    model.rowsRemoved.connect(lambda _p, a, b: events.append(("removed", a, b)))
    model.dataChanged.connect(lambda a, b: events.append(("changed", a.row(), a.column(), b.row(), b.column())))
    return events


def _shown(proxy):
    return [[proxy.index(r, c).data(Qt.ItemDataRole.DisplayRole) for c in range(proxy.columnCount())]
            for r in range(proxy.rowCount())]


def test_more_rows_are_inserted_and_only_the_changed_column_is_updated(qtbot):
    model = RecordTableModel(COLUMNS, [{"name": "a", "hours": 1.0}, {"name": "b", "hours": 2.0}])
    proxy = make_proxy(model)
    events = _record(model)
    model.set_rows([{"name": "a", "hours": 1.5}, {"name": "b", "hours": 2.0}, {"name": "c", "hours": 3.0}])
    # the third row inserted at the end; of the two rows both had, only the hours column changed
    assert events == [("inserted", 2, 2), ("changed", 0, 1, 1, 1)]
    assert _shown(proxy) == [["a", "1.5 h"], ["b", "2.0 h"], ["c", "3.0 h"]]


def test_fewer_rows_are_removed_at_the_end_and_nothing_else_when_the_rest_is_the_same(qtbot):
    model = RecordTableModel(COLUMNS, [{"name": "a", "hours": 1.0}, {"name": "b", "hours": 2.0},
                                       {"name": "c", "hours": 3.0}])
    proxy = make_proxy(model)
    proxy.sort(1, Qt.SortOrder.DescendingOrder)  # the view's sort holds across the update
    events = _record(model)
    model.set_rows([{"name": "a", "hours": 1.0}, {"name": "b", "hours": 2.0}])
    assert events == [("removed", 2, 2)]
    assert _shown(proxy) == [["b", "2.0 h"], ["a", "1.0 h"]]


def test_from_or_to_no_rows_is_a_reset(qtbot):
    model = RecordTableModel(COLUMNS, [])
    events = _record(model)
    model.set_rows([{"name": "a", "hours": 1.0}])
    model.set_rows([])
    assert events == ["reset", "reset"]
    assert model.rowCount() == 0
