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


def test_a_cell_s_roles_read_in_one_call_are_those_data_gives_and_the_table_draws_the_same(qtbot):
    """``multiData`` (one call a cell, through the proxy's mapping) gives each role what ``data`` gives, and a
    table drawn through it is pixel for pixel the table drawn role by role (Qt's own ``multiData``), sorted or not,
    with colours, right-aligned numbers and a missing value."""
    from PySide6.QtCore import QModelRoleData, QModelRoleDataSpan, QSortFilterProxyModel

    from advisor.gui.widgets.tables import SORT_ROLE, make_view

    columns = COLUMNS + [Column("fits", lambda r: r["fits"], lambda v: "yes" if v else "no",
                                color=lambda r: "#1a7f37" if r["fits"] else "#cf222e", tip="fits or not",
                                cell_tip=lambda r: f"{r['name']} fits" if r["fits"] else ""),
                         Column("cost", lambda r: r.get("cost"), lambda v: f"${v:,.0f}", align_right=True)]
    rows = [{"name": n, "hours": h, "fits": f, "cost": c} for n, h, f, c in
            (("b", 2.0, True, 1200.0), ("a", 1.5, False, None), ("c", 3.25, True, 80.0))]
    model = RecordTableModel(columns, rows)
    proxy = make_proxy(model)
    plain_proxy = QSortFilterProxyModel()  # Qt's multiData: data() once per role
    plain_proxy.setSourceModel(model)
    plain_proxy.setSortRole(SORT_ROLE)
    roles = [int(r) for r in (Qt.ItemDataRole.FontRole, Qt.ItemDataRole.TextAlignmentRole,
                              Qt.ItemDataRole.ForegroundRole, Qt.ItemDataRole.CheckStateRole,
                              Qt.ItemDataRole.DecorationRole, Qt.ItemDataRole.DisplayRole,
                              Qt.ItemDataRole.BackgroundRole, Qt.ItemDataRole.ToolTipRole)]
    views = []
    for m in (proxy, plain_proxy):
        view = make_view(m)
        qtbot.addWidget(view)
        view.resize(420, 140)
        views.append(view)
    for sort in (None, (1, Qt.SortOrder.DescendingOrder), (3, Qt.SortOrder.AscendingOrder)):
        if sort:
            for view in views:
                view.sortByColumn(*sort)
        for r in range(proxy.rowCount()):
            for c in range(proxy.columnCount()):
                for role in roles:  # (a span of one from Python; the view's spans of seven are drawn below)
                    item = QModelRoleData(role)
                    proxy.multiData(proxy.index(r, c), QModelRoleDataSpan(item))
                    assert item.data() == plain_proxy.index(r, c).data(role), (r, c, role)
        images = [view.grab().toImage() for view in views]
        assert images[0] == images[1], sort
    # sorted by cost, ascending: the row without a cost first, then $80, then $1,200
    assert [proxy.index(r, 0).data() for r in range(3)] == ["a", "c", "b"]
