"""Chart labels are kept as pixmaps (``plots.cache_text``) and still show their text after a new range."""

from PySide6.QtWidgets import QGraphicsItem

from advisor.gui.widgets import plots
from advisor.units import fmt_mem

CACHED = QGraphicsItem.CacheMode.DeviceCoordinateCache


def test_limit_line_labels_and_totals_are_cached_and_follow_the_range(qtbot):
    plot = plots.make_plot("memory", "memory", "B", x_label="devices", x_unit="")
    qtbot.addWidget(plot)
    plot.resize(600, 300)
    plot.show()
    line = plots.add_limit_line(plot, 24e9, "RTX 4090 24 GB")
    items = plots.stacked_bars(plot, [("weights", [16e9, 8e9]), ("activations", [4e9, 2e9])], value_format=fmt_mem)
    totals = [it for it in items if hasattr(it, "textItem")]
    assert [t.textItem.toPlainText() for t in totals] == [fmt_mem(20e9), fmt_mem(10e9)]
    assert line.label.textItem.cacheMode() == CACHED and all(t.textItem.cacheMode() == CACHED for t in totals)
    plot.setYRange(0, 30e9, padding=0)
    qtbot.wait(20)
    before = line.label.scenePos().y()
    plot.setYRange(0, 60e9, padding=0)  # the line sits lower in a taller range: its label moves with it
    qtbot.wait(20)
    assert line.label.scenePos().y() > before
    plots.update_stacked_bars(items, [("weights", [32e9, 16e9]), ("activations", [8e9, 4e9])])
    assert [t.textItem.toPlainText() for t in totals] == [fmt_mem(40e9), fmt_mem(20e9)]


def test_a_kept_axis_drawing_is_the_one_pyqtgraph_draws_for_that_range(qtbot):
    """``planner.keep_axis_pictures``: a range drawn before is drawn from its kept picture, which must be the picture
    pyqtgraph works out for it (the same commands, byte for byte); a new pen is a new drawing."""
    from PySide6.QtGui import QImage, QPainter

    from advisor.gui.pages.planner import keep_axis_pictures

    def drawn(plot) -> bytes:
        axis = plot.getAxis("left")
        image = QImage(10, 10, QImage.Format.Format_ARGB32_Premultiplied)
        painter = QPainter(image)
        axis.paint(painter, None, None)
        painter.end()
        return bytes(axis.picture.data())

    kept, fresh = (plots.make_plot("memory", "memory", "B", x_label="devices", x_unit="") for _ in range(2))
    keep_axis_pictures(kept.getAxis("left"))
    for plot in (kept, fresh):
        qtbot.addWidget(plot)
        plot.resize(600, 300)
        plot.show()
    qtbot.waitExposed(kept)
    seen = {}
    for top in (30e9, 40e9, 30e9, 50e9, 40e9):
        for plot in (kept, fresh):
            plot.setYRange(0, top, padding=0)
        qtbot.wait(10)
        picture = drawn(kept)
        assert picture == drawn(fresh), top  # kept or worked out, pyqtgraph's drawing for this range
        if top in seen:
            assert kept.getAxis("left").picture is seen[top]  # drawn from the picture kept, not worked out again
        seen[top] = kept.getAxis("left").picture
    for plot in (kept, fresh):
        plot.getAxis("left").setPen(plots.pen(color_override="#ff0000"))
    qtbot.wait(10)
    assert drawn(kept) == drawn(fresh) and kept.getAxis("left").picture is not seen[40e9]
