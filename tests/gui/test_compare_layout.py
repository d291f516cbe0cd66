"""The Compare page fits the window from 1024x768 up: no chart is laid out wider than its widget (cut off on
the right), and the two small charts stack when the charts area is narrow."""

import pytest


@pytest.mark.parametrize("size", [(1024, 768), (1280, 720), (1920, 1080)])
def test_compare_charts_fit_their_widgets(make_window, qtbot, size):
    w = make_window()
    w.resize(*size)
    w.show()
    w.show_page("compare")
    page = w.page("compare")
    qtbot.waitUntil(page.is_ready, timeout=60000)
    qtbot.wait(100)  # let the layouts settle after the last draw
    viewport = page.body_scroll.viewport().width()
    assert page.body_scroll.widget().width() <= viewport
    for chart in (page.cost_chart, page.scatter, page.breakeven):
        inner = chart.getPlotItem().geometry().width()
        assert inner <= chart.width() + 1, (chart.getPlotItem().titleLabel.text, inner, chart.width())
        assert chart.geometry().right() <= viewport
    assert page.stacked == (viewport < 760)
    assert page.split.sizes()[1] >= 240  # the assumptions panel is shown, at a usable width


@pytest.mark.parametrize("scenario", ["2x4090", "laptop-4060", "8xh100-sxm"])
def test_money_spent_chart_and_sentences_are_about_what_is_shown(make_window, qtbot, scenario):
    """The money-spent chart draws the plan's cost_over_time lines; the lead sentences name only options in the
    bars (the issue: the same sentence on every machine, about options in none of the charts); a purchase of
    the cards the user owns is marked."""
    import re

    import pyqtgraph as pg

    from advisor.gui.compare_data import chart_selection, option_label
    from advisor.planner.summary import owned_accelerators

    w = make_window(scenario)
    w.show_page("compare")
    page = w.page("compare")
    qtbot.waitUntil(page.is_ready, timeout=60000)
    r = page.result
    spend = r.cost_over_time()
    curves = [it for it in page._be_items if isinstance(it, pg.PlotDataItem)]
    assert len(curves) == len(spend.lines) >= 2
    for curve, line in zip(curves, spend.lines):
        assert curve.yData[-1] == pytest.approx(line.usd_after(spend.months))
    mine = owned_accelerators(r)
    shown = chart_selection(r, page._machine_ids())
    bars = {option_label(o, mine) for o in shown}
    lead = page.summary.text().split("<br>")[0]
    named = re.findall(r"<b>(.*?)</b>", lead)[1:]  # the first is the job
    assert named and all(n.removeprefix("owned ") in {b.removeprefix("owned ") for b in bars} or n.startswith("$")
                         for n in named), (named, bars)
    for o in shown:
        if o.kind == "home" and o.accelerator in mine:
            assert "(cards you own)" in option_label(o, mine)
