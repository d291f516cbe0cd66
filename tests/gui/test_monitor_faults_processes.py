"""The Monitor page's overview, processes you can stop (only your own), and faults on every page."""

from __future__ import annotations

from PySide6.QtCore import Qt

from advisor.gui.widgets.tables import RECORD_ROLE
from advisor.hw.fake import OTHER_PID_BASE, OWN_PID_BASE


def _select_pid(panel, pid: int) -> None:
    from PySide6.QtCore import QItemSelectionModel

    for r in range(panel.proxy.rowCount()):
        index = panel.proxy.index(r, 0)
        if index.data(RECORD_ROLE).pid == pid:
            # through the selection model (selectRow follows the view's focus and current index, which another
            # test's window in the same process may hold)
            flags = QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows
            panel.view.selectionModel().setCurrentIndex(index, flags)
            assert panel.selected() is not None and panel.selected().pid == pid
            return
    raise AssertionError(f"PID {pid} not in the table")


def test_terminate_is_offered_only_for_your_own_processes(make_window, qtbot):
    w = make_window("2x4090", interval_s=0.2)
    w.show_page("monitor")
    page = w.page("monitor")
    panel = page.processes
    qtbot.waitUntil(lambda: panel.proxy.rowCount() >= 4, timeout=10000)
    host = w.ctx.sampler.host.fake  # the simulated processes' host: nothing real is signalled
    asked: list[str] = []
    panel.confirm = lambda _parent, title, text: asked.append(text) or True

    _select_pid(panel, OTHER_PID_BASE)  # alice's vLLM server
    assert not panel.stop_button.isEnabled() and "belongs to alice" in panel.stop_button.toolTip()
    other = panel.selected()
    assert not panel.stop(other) and asked == [] and host.signals == []  # not even when called directly

    host.stubborn.add(OWN_PID_BASE + 1)  # ignores SIGTERM
    _select_pid(panel, OWN_PID_BASE + 1)
    assert panel.stop_button.isEnabled() and panel.stop_button.text() == "Terminate…"
    mine = panel.selected()
    assert panel.stop(mine)
    assert f"PID {OWN_PID_BASE + 1} (python train.py" in asked[0] and "on GPU 1" in asked[0]
    assert host.signals == [(OWN_PID_BASE + 1, "terminate")]
    assert panel.stop_button.text() == "Kill…"  # still running: the next step is a kill
    panel._on_kill_timer_timeout()
    assert "still running" in page.status.text()
    assert panel.stop(mine, kill=True) and "Kill PID" in asked[1]
    assert host.signals[-1] == (OWN_PID_BASE + 1, "kill") and not host.process_alive(OWN_PID_BASE + 1)

    panel.confirm = lambda *_a: False  # Cancel: nothing is sent
    _select_pid(panel, OWN_PID_BASE)
    assert not panel.stop(panel.selected()) and len(host.signals) == 2


def test_processes_sort_and_filter(make_window, qtbot):
    w = make_window("8xh100-sxm", interval_s=0.2)
    w.show_page("monitor")
    panel = w.page("monitor").processes
    qtbot.waitUntil(lambda: panel.proxy.rowCount() == 17, timeout=10000)
    panel.filter.setText("vllm")
    assert panel.proxy.rowCount() == 8
    panel.filter.setText("")
    panel.view.sortByColumn(3, panel.view.horizontalHeader().sortIndicatorOrder().DescendingOrder)  # GPU memory
    first = panel.proxy.index(0, 0).data(RECORD_ROLE)
    assert first.gpu_mem_bytes == max(p.gpu_mem_bytes or 0 for p in panel.model.rows())
    cmd = panel.proxy.index(0, panel.model.columnCount() - 1)  # the command is the last column
    assert cmd.data() == first.cmdline and cmd.data(3) == first.cmdline  # full command on hover (ToolTipRole)


def test_overview_cards_and_rows_and_chart_choice(make_window, qtbot):
    w = make_window("16xv100", interval_s=0.2)
    w.show_page("monitor")
    page = w.page("monitor")
    qtbot.waitUntil(lambda: bool(page._gpu_items and page.overview._samples), timeout=10000)
    ov = page.overview
    assert ov.rows_mode and ov.selected == frozenset(range(4))  # 16 GPUs: rows, the first four on the charts
    assert ov.height() == 18 + 16 * 19 + 4
    visible = {i for i, items in page._gpu_items.items() if items[0].isVisible()}
    assert visible == {0, 1, 2, 3}
    y = 18 + 9 * 19 + 5  # a click on row 9 adds it
    qtbot.mouseClick(ov, qtbot_left(), pos=qtbot_point(200, y))
    assert 9 in ov.selected and page._gpu_items[9][0].isVisible()
    assert "GPU 9" in ov.tooltip(9) and "hide from" in ov.tooltip(9)
    w2 = make_window("2x4090")
    w2.show_page("monitor")
    assert not w2.page("monitor").overview.rows_mode


def test_lost_gpu_banner_on_every_page_until_acknowledged(make_window, qtbot):
    w = make_window("gpu-lost", interval_s=0.2)
    w.show_page("planner")  # the Monitor page is not even built
    qtbot.waitUntil(lambda: w.fault_banner.isVisible(), timeout=10000)
    assert "thermal" in w.fault_banner.label.text()  # GPU 0 runs hot first
    qtbot.waitUntil(lambda: "GPU 1" in w.fault_banner.label.text(), timeout=10000)
    text = w.fault_banner.label.text()
    assert "lost" in text or "Xid 79" in text
    assert w.fault_banner.isVisibleTo(w)
    qtbot.waitUntil(lambda: any(e.kind == "xid" for e in w.ctx.event_log), timeout=5000)
    w.show_page("machine")
    machine = w.page("machine")
    qtbot.waitUntil(lambda: "lost at" in machine._gpu_cards[1][0]._title.text(), timeout=5000)
    samples_before = len(w.ctx.sampler.history)
    qtbot.wait(500)
    latest = w.ctx.sampler.latest()
    assert len(w.ctx.sampler.history) > samples_before and latest.gpus[0].util_pct is not None  # GPU 0 samples on
    w.fault_banner.log_button.click()
    page = w.page("monitor")
    assert page.tabs.currentIndex() == 1 and any("lost" in e.text for e in page._event_rows)
    assert page.overview.selected  # built from the log of past events
    w.fault_banner.ack_button.click()
    assert not w.fault_banner.isVisible()


def qtbot_left():
    from PySide6.QtCore import Qt

    return Qt.MouseButton.LeftButton


def qtbot_point(x: int, y: int):
    from PySide6.QtCore import QPoint

    return QPoint(x, y)


def test_rows_layer_is_drawn_once_and_charts_out_of_view_wait(make_window, qtbot):
    """16 GPUs: the overview's static layer is kept between repaints (a new one only for a new selection), and
    charts pushed below the fold by the rows are not redrawn until they scroll into view."""
    w = make_window("16xv100", interval_s=0.1)
    w.show_page("monitor")
    page = w.page("monitor")
    ov = page.overview
    qtbot.waitUntil(lambda: ov._static is not None and len(page._drawn_at) > 0, timeout=10000)
    layer = ov._static[1]
    for _ in range(3):
        ov.repaint()
    assert ov._static[1] is layer  # the same pixmap: not drawn again per paint
    ov.toggle(9)
    ov.repaint()
    assert ov._static[1] is not layer  # a new selection draws a new layer
    in_view = {k for k, plot in page._plots.items() if page._in_view(plot)}
    assert in_view and in_view != set(page._plots)  # some charts in view, some below the fold
    qtbot.wait(800)  # more than a chart period: every chart in view is redrawn, none out of view
    assert set(page._drawn_at) == in_view
    bar = page._scroll.verticalScrollBar()
    bar.setValue(bar.maximum())  # scroll to the last charts: they are drawn at once
    now_in_view = {k for k, plot in page._plots.items() if page._in_view(plot)}
    qtbot.waitUntil(lambda: now_in_view <= set(page._drawn_at), timeout=3000)


def test_process_table_shows_each_process_books(qtbot):
    from dataclasses import replace

    from advisor.gui.widgets.process_panel import ProcessPanelWidget
    from advisor.hw.records import ProcessSample
    from advisor.monitor.accounting import ProcessBooks

    panel = ProcessPanelWidget()
    qtbot.addWidget(panel)
    p = ProcessSample(pid=7, gpu_index=0, gpu_mem_bytes=2**30, kind="compute", name="train.py", user="u")
    b = ProcessBooks(pid=7, name="train.py", started_s=None, gpus=(0,), first_seen_s=0.0, last_seen_s=3600.0,
                     gpu_hours=1.0, energy_j=3.6e6, cost_usd=0.3, peak_gpu_mem_bytes=2**31, mean_util_pct=50.0)
    panel.set_rows([p], books={(7, 0): b})
    heads = [panel.model.headerData(c, Qt.Orientation.Horizontal) for c in range(panel.model.columnCount())]
    cells = {h: panel.proxy.index(0, c).data() for c, h in enumerate(heads)}
    assert cells["GPU-h"] == "1.000" and cells["energy"] == "1 kWh" and cells["cost"] == "$0.300"
    assert cells["peak"] == "2 GB" or cells["peak"].startswith("2.")
    from advisor.gui.widgets.process_panel import BOOK_FIRST, BOOK_LAST

    assert heads[BOOK_FIRST:BOOK_LAST + 1] == ["GPU-h", "energy", "cost", "peak"]
    changed = []
    panel.model.dataChanged.connect(lambda a, b: changed.append((a.column(), b.column())))
    panel.set_rows([p], books={(7, 0): replace(b, gpu_hours=2.0)})  # same rows, new books: those cells change
    assert (BOOK_FIRST, BOOK_LAST) in changed and panel.proxy.index(0, BOOK_FIRST).data() == "2.000"
    panel.set_rows([p], books={})
    assert panel.proxy.index(0, heads.index("GPU-h")).data() in ("—", "", None)


def test_the_page_ticks_for_the_charts_in_view(make_window, qtbot):
    """16 GPUs push most charts below the fold: the timer ticks once per chart in view, once for the tables and
    once to spare per chart period (1 s at 10 Hz), not once per chart."""
    w = make_window("16xv100", interval_s=0.1)
    w.show_page("monitor")
    page = w.page("monitor")
    qtbot.waitUntil(lambda: page._charts_in_view is not None and len(page._drawn_at) > 0, timeout=10000)
    qtbot.wait(600)  # a budgeted tick has counted the charts in view
    in_view = sum(page._in_view(plot) for plot in page._plots.values())
    assert 0 < in_view < len(page._plots) == 10
    assert page._charts_in_view == in_view
    assert page._timer.interval() == int(1000 * 1.0 / (in_view + 2))  # e.g. 3 in view: 200 ms, not 100


def test_tables_and_overview_are_updated_on_ticks_of_their_own(make_window, qtbot):
    """16 GPUs at 10 Hz: the process table and the overview are each updated on a tick without a chart, and not on
    the same tick as each other (one window repaint painting both was the GUI thread's longest spell), and the
    overview still follows each tables' update, about once a second."""
    w = make_window("16xv100", interval_s=0.1)
    w.show_page("monitor")
    page = w.page("monitor")
    qtbot.waitUntil(lambda: len(page._drawn_at) > 0, timeout=10000)
    ticks = [0]
    seen: dict[str, list[int]] = {"tables": [], "overview": [], "chart": []}
    plain = {name: getattr(page, name) for name in ("_redraw", "_update_tables", "_update_overview", "_redraw_chart")}

    def redraw(*args):
        ticks[0] += 1
        return plain["_redraw"](*args)

    def noting(name, what):
        def call(*args):
            seen[what].append(ticks[0])
            return plain[name](*args)
        return call

    page._redraw = redraw
    page._update_tables = noting("_update_tables", "tables")
    page._update_overview = noting("_update_overview", "overview")
    page._redraw_chart = noting("_redraw_chart", "chart")
    seq = page._overview_seq
    qtbot.wait(3500)
    tables, overview, charts = set(seen["tables"]), set(seen["overview"]), set(seen["chart"])
    assert len(tables) >= 2 and overview and charts  # 3.5 s at a 1 s period: 3 or 4 of each
    assert not tables & overview and not tables & charts and not overview & charts
    order = sorted(tables)
    for t, after in zip(order, order[1:]):  # each tables' update is followed by the overview's before the next
        assert any(t < o < after for o in overview), (order, sorted(overview))
    assert page._overview_seq > seq  # the overview drew newer samples
