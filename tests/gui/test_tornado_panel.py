"""The app's tornado: the same figures as advisor plan --sensitivity, in the declared colours, each end labelled."""

from __future__ import annotations

import pyqtgraph as pg

from advisor.catalog import load_catalog
from advisor.colours import TORNADO_COLOURS
from advisor.gui.widgets.tornado_panel import TornadoPanel
from advisor.planner import PlanRequest, plan, tornado
from advisor.units import fmt_usd


def test_panel_draws_the_planner_tornado(qtbot):
    cat = load_catalog(use_user_file=False)
    request = PlanRequest.from_mapping({"model": "llama-3-8b", "workload": "lora"})
    base = plan(request, cat)
    panel = TornadoPanel()
    qtbot.addWidget(panel)
    panel.show_plan(base, cat)
    qtbot.waitUntil(panel.is_idle, timeout=10000)
    expected = tornado(request, cat, base=base)
    assert panel.tornado == expected
    bars = [it for it in panel._items if isinstance(it, pg.BarGraphItem)]
    assert [b.part_colour for b in bars] == [TORNADO_COLOURS["low"], TORNADO_COLOURS["high"]]
    labels = {it.toPlainText() for it in panel._items if isinstance(it, pg.TextItem)}
    top = expected.bars[0]
    assert {fmt_usd(top.low_cost_usd), fmt_usd(top.high_cost_usd)} <= labels
    assert top.parameter in panel.note.text().replace(" ", "_") or top.parameter.replace("_", " ") in panel.note.text()


def test_nothing_fits_says_so(qtbot):
    panel = TornadoPanel()
    qtbot.addWidget(panel)
    panel.draw(None)
    from advisor.gui.widgets import plots

    assert "Nothing fits" in plots.empty_text(panel.plot)
