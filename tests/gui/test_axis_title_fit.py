"""A chart's vertical axis title is whole where the axis is long enough and only its unit where not, decided on the
data area's height after the resize (pyqtgraph lays the plot out after the widget's resize event)."""

from __future__ import annotations


def _left_title(plot) -> str:
    return plot.getPlotItem().getAxis("left").labelText


def test_the_axis_title_follows_the_height_after_a_resize_in_one_step(qtbot):
    from PySide6.QtGui import QFont, QFontMetrics

    from advisor.gui.widgets import plots

    plot = plots.make_plot("Temperature", "temperature", "°C")
    qtbot.addWidget(plot)
    plot.resize(500, 420)
    plot.show()
    qtbot.waitExposed(plot)
    font = QFont()
    font.setPointSize(9)
    need = QFontMetrics(font).horizontalAdvance("temperature (G°C)") + 16  # _TitleFitter's rule

    def room():
        return plot.getPlotItem().getViewBox().height()

    qtbot.waitUntil(lambda: room() > need)
    assert _left_title(plot) == "temperature"
    plot.resize(500, 150)  # one step: the data area is laid out only after the widget's resize event
    qtbot.waitUntil(lambda: 0 < room() < need)
    qtbot.wait(50)
    assert _left_title(plot) == ""  # the unit alone: "(°C)"
    plot.resize(500, 420)
    qtbot.waitUntil(lambda: room() > need)
    qtbot.wait(50)
    assert _left_title(plot) == "temperature"
