"""Every stacked chart of the app fills a part with the colour advisor.colours declares for it."""

from __future__ import annotations

import pyqtgraph as pg

from advisor import colours


def test_planner_and_compare_bars_use_the_declared_part_colours(make_window, qtbot):
    w = make_window()
    w.show_page("planner")
    planner = w.page("planner")
    qtbot.waitUntil(lambda: planner.is_ready() and bool(planner._bars), timeout=15000)
    bars = [b for b in planner._bars if isinstance(b, pg.BarGraphItem)]
    assert [b.part_colour.upper() for b in bars] == [colours.memory_part_colour(b.name()) for b in bars]
    w.show_page("compare")
    compare = w.page("compare")
    qtbot.waitUntil(lambda: compare.is_ready() and bool(compare._items), timeout=15000)
    bars = [b for b in compare._items if isinstance(b, pg.BarGraphItem)]
    assert bars and [b.part_colour.upper() for b in bars] == [colours.cost_part_colour(b.name()) for b in bars]
    totals = [t for t in compare._items if isinstance(t, pg.TextItem)]
    assert totals and all(t.toPlainText().startswith("$") for t in totals)
