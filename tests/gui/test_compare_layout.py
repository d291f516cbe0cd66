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


def test_line_labels_move_rather_than_overlap():
    from advisor.gui.widgets.plots import place_line_labels

    slots = (0.99, 0.74, 0.49)
    # far apart: both at the right edge, above their lines
    assert place_line_labels([(100, 0.3), (60, 0.3)], [], slots) == [(0.99, True), (0.99, True)]
    # 8 px apart: the second label goes below its line, clear of the first
    assert place_line_labels([(100, 0.3), (92, 0.3)], [], slots) == [(0.99, True), (0.99, False)]
    # a bar's total label under the right end, and the bar itself below the line: the label moves left
    assert place_line_labels([(50, 0.2)], [(45, 61, 0.85, 0.95), (0, 45, 0.87, 0.93)], slots) == [(0.74, True)]
    # a label never sticks out of the chart's left edge: 0.49 - 0.6 < 0, so only 0.99 and 0.74 are tried
    assert place_line_labels([(50, 0.6)], [(40, 70, 0.3, 1.0)], slots, must=1) in (
        [(0.99, True)], [(0.74, True)], [(0.99, False)], [(0.74, False)])
    # nowhere free: a line that must be labelled goes where it covers least, any other is left unlabelled
    crowded = [(30, 70, 0.0, 1.0)]
    assert place_line_labels([(50, 0.3)], crowded, slots) == [None]
    assert place_line_labels([(50, 0.3)], [(40, 80, 0.6, 1.0), (30, 50, 0.0, 1.0)], slots) == [(0.49, True)]
    assert place_line_labels([(50, 0.3), (48, 0.3)], [], slots, must=1)[1] is not None  # below, or moved left


def test_offers_that_would_read_alike_are_told_apart():
    from types import SimpleNamespace as S

    from advisor.gui.compare_data import distinct_labels

    def o(i, inst, prov="RunPod", n=1, spot=False):
        return S(id=i, kind="cloud", provider=prov, devices=n, accelerator_name="H100 SXM5 80GB", spot=spot,
                 instance=inst, stack_ok=True)

    labels = distinct_labels([o("runpod:a", "H100 SXM5 80GB Secure Cloud (per GPU)"),
                              o("runpod:b", "H100 SXM5 80GB Community Cloud (per GPU)"),
                              o("gcp:x", "a3-highgpu-8g", "GCP", 8, True), o("gcp:y", "a3-megagpu-8g", "GCP", 8, True),
                              o("lambda:z", "gpu-1x-h100", "Lambda")])
    assert labels == ["RunPod 1× H100 SXM5 80GB · Secure", "RunPod 1× H100 SXM5 80GB · Community",
                      "GCP 8× H100 SXM5 80GB spot · a3-highgpu-8g", "GCP 8× H100 SXM5 80GB spot · a3-megagpu-8g",
                      "Lambda 1× H100 SXM5 80GB"]
    assert len(set(labels)) == len(labels)


def test_a_scatter_of_one_time_says_so_instead_of_a_line_of_dots():
    from types import SimpleNamespace as S

    from advisor.gui.compare_data import scatter_flat_text

    same_time = [S(hours=10.0, cost_usd=c) for c in (5.0, 9.0, 30.0)]
    assert "same 10.0 h" in scatter_flat_text(same_time)
    assert scatter_flat_text([S(hours=h, cost_usd=c) for h, c in ((1, 5), (10, 3))]) is None
    assert "No option fits" in scatter_flat_text([])
