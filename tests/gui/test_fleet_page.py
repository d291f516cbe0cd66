"""The Fleet page on simulated hardware: three simulated nodes and one that never answers; the dead one is
greyed, the others keep refreshing; the Planner's job is placed on the fleet."""

from __future__ import annotations

from PySide6.QtCore import Qt


def test_fleet_page_greys_the_dead_node_and_places_the_plan(make_window, qtbot):
    w = make_window()
    w.show_page("fleet")
    page = w.page("fleet")
    qtbot.waitUntil(lambda: page.view is not None and page.is_ready(), timeout=10000)
    qtbot.waitUntil(lambda: {n.name: n.state for n in page.view.nodes}.get("sim-dead") == "down", timeout=5000)
    states = {n.name: n.state for n in page.view.nodes}
    assert states == {"sim-h100": "up", "sim-4090": "up", "sim-mi300x": "up", "sim-dead": "down"}
    model = page.node_model
    rows = {model.index(r, 0).data(): r for r in range(model.rowCount())}
    dead = model.index(rows["sim-dead"], 0).data(Qt.ItemDataRole.ForegroundRole)
    live = model.index(rows["sim-h100"], 0).data(Qt.ItemDataRole.ForegroundRole)
    assert dead is not None and live is None  # greyed, the others in the normal colour
    assert page.gpu_model.rowCount() == 8 + 2 + 2
    assert page.process_model.rowCount() > 0
    first = page.view.nodes[0].age_s
    qtbot.waitUntil(lambda: page.view.nodes[0].age_s is not None and page.view.nodes[0].age_s != first, timeout=5000)
    assert page.view.nodes[0].state == "up"  # the others keep their cadence
    assert page.fit_label.text().startswith("Plan a job on the Planner page")
    w.show_page("planner")
    qtbot.waitUntil(lambda: w.ctx.last_plan is not None, timeout=30000)
    w.show_page("fleet")
    page._on_timer_timeout()
    text = page.fit_label.text()
    assert text.startswith("Where it fits now (simulated)") and "sim-dead" in text and "Choice:" in text
    # the launch line is wider than a 1024-pixel window's page; it scrolls in its own box, the page does not
    assert page.fit_label.sizeHint().width() > 900
    assert page.minimumSizeHint().width() < 1024 - 200
    assert page.fit_scroll.height() >= page.fit_label.sizeHint().height()  # every line shown, none cut
    w.show_page("machine")
    assert not page.timer.isActive()  # a hidden page reads nothing


def test_bad_url_is_one_line(make_window, qtbot):
    w = make_window()
    w.show_page("fleet")
    page = w.page("fleet")
    page.source_box.setCurrentIndex(page.source_box.findData("scrape"))
    page.url_edit.setText("ftp://nowhere")
    page._on_watch_clicked()
    assert "must be http" in page.message.text()
