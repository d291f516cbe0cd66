"""One colour per meaning: every cost and memory part has its own declared colour, and charts use it."""

from __future__ import annotations

import re
from dataclasses import fields

from advisor import colours
from advisor.cost.breakdown import PART_NAMES
from advisor.estimate.memory import MemoryBreakdown
from advisor.report.chart import cost_chart_svg


def test_every_cost_part_has_its_own_colour():
    assert set(colours.COST_PART_COLOURS) == set(PART_NAMES)
    assert len(set(colours.COST_PART_COLOURS.values())) == len(PART_NAMES)  # no two parts share a colour


def test_every_memory_part_has_its_own_colour():
    # every device-memory part (host offload lives in host RAM and is not drawn on a device's bar)
    parts = {f.name.removesuffix("_bytes") for f in fields(MemoryBreakdown) if f.name != "host_offload_bytes"}
    assert set(colours.MEMORY_PART_COLOURS) == parts
    assert len(set(colours.MEMORY_PART_COLOURS.values())) == len(parts)
    assert colours.memory_part_colour("KV cache") == colours.memory_part_colour("kv_cache_bytes") == "#56B4E9"


def test_declared_colours_are_okabe_ito_or_tol():
    allowed = set(colours.OKABE_ITO.values()) | {colours.TOL_WINE, colours.TOL_OLIVE, colours.TOL_SAND, colours.TOL_INDIGO}
    assert set(colours.COST_PART_COLOURS.values()) <= allowed
    assert set(colours.MEMORY_PART_COLOURS.values()) <= allowed
    assert colours.OKABE_ITO["vermillion"] == "#D55E00"  # Okabe & Ito 2008: RGB (213, 94, 0)


def test_report_chart_fills_each_part_with_its_declared_colour():
    options = [{"id": "a", "fits": True, "cost_usd": 30.0,
                "cost_breakdown_usd": {"energy": 10.0, "depreciation": 20.0}},
               {"id": "b", "fits": True, "cost_usd": 25.0, "cost_breakdown_usd": {"rent": 25.0}}]
    # parts listed in a different order than the app's: the colours must not depend on the order
    svg = cost_chart_svg(options, ["rent", "depreciation", "energy"])
    fills = re.findall(r'<rect x="[\d.]+" y="\d+" width="[\d.]+" height="\d+" fill="(#[0-9A-Fa-f]{6})"><title>'
                       r'([a-z ]+):', svg)
    assert fills, svg
    for fill, part in fills:
        assert fill == colours.cost_part_colour(part)
    assert "$20.00" in svg  # a segment wide enough carries its value


def test_report_memory_chart_fills_each_part_with_its_declared_colour():
    from advisor.report.chart import memory_chart_svg

    svg = memory_chart_svg([("weights", 16e9), ("kv_cache", 2e9), ("activations", 10e9)], 25.8e9)
    fills = re.findall(r'fill="(#[0-9A-Fa-f]{6})"><title>([A-Za-z ]+):', svg)
    assert [p for _, p in fills] == ["weights", "KV cache", "activations"]
    for fill, part in fills:
        assert fill == colours.memory_part_colour(part)
    assert "28.0 GB" in svg and "capacity 25.8 GB" in svg  # the total and the device, in GB


def test_app_charts_use_the_declared_colours(qtbot):
    """The Planner's memory bars and the Compare page's cost bars are filled with the declared colours."""
    import pyqtgraph as pg

    from advisor.gui.widgets import plots

    plot = plots.make_plot("t", "memory", "B", x_unit="", legend=True)
    qtbot.addWidget(plot)
    parts = [("weights", [1e9, 2e9]), ("KV cache", [0.5e9, 0.1e9])]
    items = plots.stacked_bars(plot, parts, colours=[colours.memory_part_colour(p) for p, _ in parts],
                               value_format=lambda v: f"{v / 1e9:.3g} GB")
    bars = [i for i in items if isinstance(i, pg.BarGraphItem)]
    assert [b.part_colour.upper() for b in bars] == ["#0072B2", "#56B4E9"]
    labels = [i for i in items if isinstance(i, pg.TextItem)]
    assert [t.toPlainText() for t in labels] == ["1.5 GB", "2.1 GB"]  # each stack's total at its end
    plots.update_stacked_bars(items, [("weights", [3e9, 1e9]), ("KV cache", [1e9, 1e9])])
    assert [t.toPlainText() for t in labels] == ["4 GB", "2 GB"]
