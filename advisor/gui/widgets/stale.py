"""The look of a plan that is no longer current (the inputs are invalid): greyed out, never blank."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtWidgets import QGraphicsOpacityEffect, QLabel


def fade_out(widgets, faded: bool) -> None:
    """Grey out (or back) widgets that show a plan that is no longer current: labels through an opacity effect,
    a chart through its plot item's opacity (an effect on a graphics view darkens it), a table by disabling it."""
    for w in widgets:
        if isinstance(w, pg.PlotWidget):
            w.getPlotItem().setOpacity(0.3 if faded else 1.0)
        elif isinstance(w, QLabel):
            if faded and w.graphicsEffect() is None:
                effect = QGraphicsOpacityEffect(w)
                effect.setOpacity(0.4)
                w.setGraphicsEffect(effect)
            elif not faded:
                w.setGraphicsEffect(None)
        else:
            w.setEnabled(not faded)
