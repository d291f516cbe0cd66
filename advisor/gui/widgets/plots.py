"""The one plot factory: every chart in the app gets the same axes, units, fonts and colours here.

Charts are built once and updated with ``setData``: :func:`make_plot` turns on
clip-to-view and automatic downsampling, so an hour of 10 Hz samples draws only what fits the pixels.
Units go on every axis through pyqtgraph's label units; SI prefixes are automatic where they read
naturally (B -> GB, FLOP/s -> TFLOP/s) and switched off where they do not (%, °C, USD, h).
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Sequence

import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics
from PySide6.QtWidgets import QGraphicsItem, QLabel

from advisor.gui import theme as themes
from advisor.gui.safe_text import plain

# Units for which "k" or "M" prefixes would confuse rather than help.
NO_PREFIX_UNITS = {"%", "°C", "USD", "h", "s", "min", "x", "devices", "RPM", "tokens/s"}

_PLOTS: weakref.WeakSet[pg.PlotWidget] = weakref.WeakSet()
_theme: themes.Theme = themes.LIGHT


def configure(theme: themes.Theme) -> None:
    """Set pyqtgraph's global look; call once before building charts, and again on a scheme change."""
    global _theme
    _theme = theme
    pg.setConfigOptions(antialias=True, background=theme.background, foreground=theme.text)
    import shiboken6

    for plot in list(_PLOTS):
        # a closed window's charts linger as wrappers until collected (a closed PlotWidget has no plot item)
        if shiboken6.isValid(plot) and plot.getPlotItem() is not None:
            _style(plot)
        else:
            _PLOTS.discard(plot)


def color(index: int) -> QColor:
    """The series colour for an index (colour-blind-safe, wraps around)."""
    return QColor(_theme.series[index % len(_theme.series)])


def theme() -> themes.Theme:
    """The theme charts are drawn with."""
    return _theme


def pen(index: int = 0, width: float = 2.0, style=Qt.PenStyle.SolidLine, color_override: str | None = None):
    """A cosmetic pen in a series colour (or an explicit colour)."""
    c = QColor(color_override) if color_override else color(index)
    return pg.mkPen(c, width=width, style=style)


def make_plot(title: str, y_label: str, y_unit: str, *, x_label: str = "time before now", x_unit: str = "s",
              legend: bool = False, parent=None, min_height: int = 150, legend_columns: int = 4,
              legend_offset: tuple[int, int] = (8, 8)) -> pg.PlotWidget:
    """A chart with labelled axes and units, grid, clip-to-view and downsampling on.

    Args:
        title: shown above the chart.
        y_label / y_unit: the vertical axis quantity and its unit (e.g. "memory", "B").
        x_label / x_unit: the horizontal axis (time in seconds by default; "" unit for categories).
        legend: add a legend for named series (``legend_columns`` wide, at ``legend_offset``; a negative
            offset counts from the right or bottom edge).
    Returns:
        A ``pg.PlotWidget``; add series with :func:`add_line` and update them with ``setData``.
    """
    plot = pg.PlotWidget(parent=parent)
    plot.setMinimumHeight(min_height)
    item = plot.getPlotItem()
    plot.setProperty("full_title", title)
    _fit_title_to_width(plot)
    item.setTitle(title)
    item.setLabel("left", y_label, units=y_unit or None)
    item.setLabel("bottom", x_label, units=x_unit or None)
    for axis, unit in (("left", y_unit), ("bottom", x_unit)):
        if unit in NO_PREFIX_UNITS or not unit:
            item.getAxis(axis).enableAutoSIPrefix(False)
    item.showGrid(x=True, y=True, alpha=0.25)
    for name in ("left", "bottom"):
        # An axis draws its grid over the whole data area, so every new series there repaints it: its labels,
        # ticks and grid lines replayed each time (most of a re-plan's drawing). Kept as a pixmap, it is
        # redrawn only when its ticks change (a new range), and blitted otherwise.
        item.getAxis(name).setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
    item.setClipToView(True)
    item.setDownsampling(auto=True, mode="peak")
    item.setMenuEnabled(False)
    item.hideButtons()
    if legend:
        # The legend sits in its own row under the bottom axis, outside the data area, so it never covers
        # data however the series are scaled. (``legend_offset`` is kept for callers; it no longer applies.)
        legend_item = pg.LegendItem(labelTextSize="8pt", colCount=legend_columns)
        item.layout.addItem(legend_item, 4, 0, 1, 3)  # under the axes, as wide as the whole chart
        item.legend = legend_item  # named items added to the plot join it by themselves
        fitter = _LegendFitter(plot, legend_item, legend_columns)
        plot.installEventFilter(fitter)
        plot._legend_fitter = fitter  # kept alive with the plot
    plot.setProperty("y_unit", y_unit)
    plot.setProperty("y_label", y_label)
    _PLOTS.add(plot)
    _style(plot)
    return plot


def _fit_title_to_width(plot: pg.PlotWidget) -> None:
    """A title never asks for more width than the chart has (pyqtgraph would make the whole chart that wide and
    clip it to the view, cutting the axes and labels at the right); it is elided to the width instead, the whole
    title in the tooltip."""
    label = plot.getPlotItem().titleLabel

    def height_only_min() -> None:
        bounds = label.itemRect()
        label.setMinimumWidth(0)
        label.setMinimumHeight(bounds.height())
        label._sizeHint = {Qt.SizeHint.MinimumSize: (0, bounds.height()),
                           Qt.SizeHint.PreferredSize: (bounds.width(), bounds.height()),
                           Qt.SizeHint.MaximumSize: (-1, -1)}
        label.updateGeometry()

    label.updateMin = height_only_min
    fitter = _TitleFitter(plot)
    plot.installEventFilter(fitter)
    plot._title_fitter = fitter  # kept alive with the plot


class _TitleFitter(QObject):
    """Elides a chart's title (``full_title``) to the chart's width on every resize."""

    def __init__(self, plot: pg.PlotWidget) -> None:
        super().__init__(plot)
        self._plot = plot
        self._shown = ""
        # The axis's room is the data area's height, which pyqtgraph sets after the widget's resize (its scene
        # lays the plot out later): asked only on the widget's resize, the choice followed the height before it,
        # so it depended on how many steps a resize took (a panel shown above the chart in one step or in several).
        plot.getPlotItem().getViewBox().sigResized.connect(self._on_view_resized)

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 (Qt API)
        if event.type() in (QEvent.Type.Resize, QEvent.Type.Show):
            self.fit()
        return False

    def _on_view_resized(self, *_args) -> None:
        self._fit_left_axis()

    def fit(self) -> None:
        self._fit_left_axis()
        full = str(self._plot.property("full_title") or "")
        font = QFont()
        font.setPointSize(10)  # the title's size (_style)
        text = QFontMetrics(font).elidedText(full, Qt.TextElideMode.ElideRight, max(60, self._plot.width() - 30))
        if text != self._shown:
            self._shown = text
            self._plot.getPlotItem().setTitle(text, color=_theme.text, size="10pt")
            if text != full and not self._plot.toolTip():
                self._plot.setToolTip(full)


    def _fit_left_axis(self) -> None:
        """The vertical axis title whole: ``temperature (°C)`` where the axis is long enough, else only its unit
        ``(°C)`` (a short chart cut the longer title at both ends: "erature (°C)")."""
        item = self._plot.getPlotItem()
        if item is None:
            return
        label, unit = str(self._plot.property("y_label") or ""), str(self._plot.property("y_unit") or "")
        if not label or not unit:
            return
        font = QFont()
        font.setPointSize(9)
        need = QFontMetrics(font).horizontalAdvance(f"{label} (G{unit})") + 16
        room = item.getViewBox().height() if item.getViewBox() is not None else 0
        short = 0 < room < need
        if short != getattr(self, "_short_axis", False):
            self._short_axis = short
            item.setLabel("left", "" if short else label, units=unit)


class _LegendFitter(QObject):
    """Gives a legend under a chart as many columns as fit the chart's width (at most ``max_columns``), so a
    narrow chart never gets a legend wider than itself (pyqtgraph would clip the whole chart to the view)."""

    def __init__(self, plot: pg.PlotWidget, legend: pg.LegendItem, max_columns: int) -> None:
        super().__init__(plot)
        self._plot = plot
        self._legend = legend
        self._max = max(1, max_columns)

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 (Qt API)
        if event.type() in (QEvent.Type.Resize, QEvent.Type.Show, QEvent.Type.LayoutRequest):
            self.fit(obj.width())
        return False

    def fit(self, width: int) -> None:
        """Choose the column count for a chart ``width`` pixels wide."""
        labels = [label for _sample, label in self._legend.items]
        widest = max((label.item.boundingRect().width() for label in labels), default=60.0)  # the text, not its cell
        room = width - 30
        columns = int(max(1, min(self._max, room // (widest + 32))))
        if columns != self._legend.columnCount:
            self._legend.setColumnCount(columns)
            # the chart's layout keeps the old (wider) minimum until told: without this a chart drawn while its
            # legend had more columns stays wider than its widget and is cut off on the right
            self._legend.updateGeometry()
            self._plot.getPlotItem().layout.invalidate()


class _EmptyNote(QLabel):
    """A centred, wrapped sentence over an empty chart that says what to do to fill it."""

    def __init__(self, plot: pg.PlotWidget) -> None:
        super().__init__(plot)
        self.setObjectName("emptyNote")
        self.setWordWrap(True)
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        plot.installEventFilter(self)

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 (Qt API)
        if event.type() == QEvent.Type.Resize:
            self.place()
        return False

    def place(self) -> None:
        plot = self.parentWidget()
        width = max(120, min(460, plot.width() - 40))
        self.setFixedWidth(width)
        self.adjustSize()
        self.move((plot.width() - width) // 2, max(0, (plot.height() - self.height()) // 2))


def set_empty_text(plot: pg.PlotWidget, text: str | None) -> None:
    """Show ``text`` over the chart while it has no data (what to do first); None hides it."""
    note = plot.findChild(_EmptyNote)
    if text is None:
        if note is not None:
            note.hide()
        return
    if note is None:
        note = _EmptyNote(plot)
    note.setStyleSheet(f"QLabel#emptyNote {{ color: {_theme.text}; background: {_theme.surface}; "
                       f"border: 1px solid {_theme.grid}; border-radius: 6px; padding: 10px; }}")
    note.setText(text)
    note.place()
    note.show()
    note.raise_()


def empty_text(plot: pg.PlotWidget) -> str | None:
    """The empty-state sentence shown over a chart, or None (tests)."""
    note = plot.findChild(_EmptyNote)
    return note.text() if note is not None and not note.isHidden() else None


def add_line(plot: pg.PlotWidget, name: str | None, index: int, *, width: float = 2.0, dashed: bool = False,
             fill: bool = False, live: bool = False) -> pg.PlotDataItem:
    """Add a named series in the shared colour order; returns the item to ``setData`` later.

    ``live`` series (redrawn several times a second) are drawn without antialiasing and 1.5 px wide,
    which halves their painting time with many GPUs.
    """
    style = Qt.PenStyle.DashLine if dashed else Qt.PenStyle.SolidLine
    if live:
        width = min(width, 1.5)
    item = plot.plot([], [], name=name, pen=pen(index, width, style), antialias=not live)
    if name:
        refit_legend(plot)
    item.setClipToView(True)
    item.setDownsampling(auto=True, method="peak")
    if fill:
        c = color(index)
        c.setAlpha(40)
        item.setFillLevel(0)
        item.setBrush(pg.mkBrush(c))
    return item


def cache_text(item):
    """Keep a chart's text item (a line's label, a total) as a pixmap, drawn again only when its text changes.

    A new range repaints every item of a chart, and each text item laid its text out again. A label keeps its
    size in pixels whatever the range, so with the pixmap a new range only moves it: a Planner-like chart (six
    capacity labels, six totals) took 10.6-11.7 ms a new range with its labels cached against 12.2-15.5 ms
    without, on a loaded two-core machine; with the range unchanged no difference was measurable. Returns
    ``item``.
    """
    item.textItem.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
    return item


def add_limit_line(plot: pg.PlotWidget, value: float | None, label: str, *, index: int | None = None,
                   color_name: str | None = None, horizontal: bool = True, label_position: float = 0.97,
                   label_anchor: tuple[float, float] = (1, 0)) -> pg.InfiniteLine:
    """A dashed reference line (a power limit, a peak, a device's capacity) with its label.

    ``label_position`` is the fraction along the line; ``label_anchor`` the label's corner at that point
    (``(1, 0)``: its top-right corner, so the label sits below the line, to the left).
    """
    c = color_name or (_theme.bad if index is None else _theme.series[index % len(_theme.series)])
    # pyqtgraph formats the label with str.format: a brace in a name ("{x}") would raise while painting
    label = plain(label).replace("{", "{{").replace("}", "}}")
    line = pg.InfiniteLine(pos=value if value is not None else 0, angle=0 if horizontal else 90,
                           pen=pg.mkPen(c, width=1.5, style=Qt.PenStyle.DashLine),
                           label=label, labelOpts={"position": label_position, "color": c,
                                                           "anchors": [label_anchor, label_anchor]})
    cache_text(line.label)
    line.setVisible(value is not None)
    plot.addItem(line)
    return line


# Ticks people read on log axes: job times from a minute to ten years, money by decades.
# Candidate labels for log axes, each (value, text, rank): rank 0 labels are shown first, rank 1 only where
# there is room between them (so a narrow chart reads "1 h, 1 day, 1 week" and a wide one adds "3 h, 3 days").
HOUR_TICKS = ((1 / 60, "1 min", 0), (10 / 60, "10 min", 1), (1, "1 h", 0), (3, "3 h", 1), (10, "10 h", 1),
              (24, "1 day", 0), (72, "3 days", 1), (168, "1 week", 0), (720, "1 month", 0),
              (2160, "3 months", 1), (8760, "1 year", 0), (87600, "10 years", 0))
USD_TICKS = ((0.01, "$0.01", 0), (0.1, "$0.10", 0)) + tuple(
    (10.0 ** k, f"${10 ** (k % 3)}{('', 'k', 'M', 'B')[k // 3]}", 0) for k in range(12))
# Hours of use, 1-2-5 in each decade: decades first, then 5s, then 2s, as the width allows.
USE_HOUR_TICKS = tuple((m * 10.0 ** k, f"{_n:,.0f} h", {1: 0, 5: 1, 2: 2}[m])
                       for k in range(0, 7) for m in (1, 2, 5) for _n in (m * 10.0 ** k,))
TICK_GAP_PX = 12  # the least space between two tick labels
# Rates (tokens/s) 1-2-5 in each decade, and waits from a millisecond to minutes: decades first.
RATE_TICKS = tuple((m * 10.0 ** k, f"{m * 10 ** k:,}" if k < 3 else f"{m * 10 ** (k - 3):g}k", {1: 0, 5: 1, 2: 2}[m])
                   for k in range(0, 7) for m in (1, 2, 5))
SECOND_TICKS = ((0.001, "1 ms", 0), (0.01, "10 ms", 0), (0.03, "30 ms", 1), (0.1, "0.1 s", 0), (0.3, "0.3 s", 1),
                (1.0, "1 s", 0), (3.0, "3 s", 1), (10.0, "10 s", 0), (30.0, "30 s", 1), (60.0, "1 min", 0),
                (600.0, "10 min", 0), (3600.0, "1 h", 0))


def pick_log_ticks(ticks: Sequence[tuple], lo: float, hi: float, length_px: float,
                   label_px) -> list[tuple[float, str]]:
    """Choose the log-axis labels that fit without overlapping.

    Args:
        ticks: candidates ``(value, text[, rank])``; lower rank is placed first (default 0).
        lo / hi: the axis range in data units (not log10), ``0 < lo < hi``.
        length_px: the axis length in pixels.
        label_px: ``text -> extent in pixels`` along the axis (width on a horizontal axis, height on a vertical).
    Returns:
        ``(log10(value), text)`` sorted by value: labels wholly on the axis, each pair at least
        :data:`TICK_GAP_PX` apart edge to edge, candidates of lower rank taken before higher.
    """
    import math

    span = math.log10(hi) - math.log10(lo)
    if span <= 0 or length_px <= 0:
        return []
    chosen: list[tuple[float, float, str]] = []  # (centre px, half extent px, text)
    for t in sorted((t for t in ticks if lo <= t[0] <= hi), key=lambda t: (t[2] if len(t) > 2 else 0, t[0])):
        centre = (math.log10(t[0]) - math.log10(lo)) / span * length_px
        half = label_px(t[1]) / 2
        inside = half <= centre <= length_px - half  # a label cut by the axis end would be dropped when drawn
        if inside and all(abs(centre - c) >= half + h + TICK_GAP_PX for c, h, _ in chosen):
            chosen.append((centre, half, t[1]))
    return sorted((math.log10(lo) + c / length_px * span, text) for c, _, text in chosen)


def set_log_ticks(plot: pg.PlotWidget, axis: str, ticks: Sequence[tuple], lo: float, hi: float) -> None:
    """Label a log axis (``setLogMode``) at the given values within ``[lo, hi]`` (data units, not log10), so
    a log axis reads "1 h, 1 day, 1 week" or "$10, $100, $1k" instead of powers of ten with every minor tick.
    Only as many labels as fit the axis's length are shown (:func:`pick_log_ticks`), re-chosen when the chart
    is resized or its range changes, so labels never run together."""
    item = plot.getAxis(axis)
    item._log_tick_candidates = (tuple(ticks), lo, hi)
    if not getattr(item, "_log_ticks_hooked", False):
        item._log_ticks_hooked = True
        vb = plot.getViewBox()
        vb.sigResized.connect(lambda *_: _refresh_log_ticks(plot, axis))
        vb.sigRangeChanged.connect(lambda *_: _refresh_log_ticks(plot, axis))
    _refresh_log_ticks(plot, axis)


def _refresh_log_ticks(plot: pg.PlotWidget, axis: str) -> None:
    import math

    from PySide6.QtGui import QFontMetricsF

    item = plot.getAxis(axis)
    ticks, lo, hi = item._log_tick_candidates
    vb = plot.getViewBox()
    horizontal = axis in ("bottom", "top")
    view_lo, view_hi = vb.viewRange()[0 if horizontal else 1]  # log10 units on a log axis
    lo, hi = max(lo, 10 ** view_lo), min(hi, 10 ** view_hi)
    length = vb.width() if horizontal else vb.height()
    if hi <= lo or length <= 0:
        return
    metrics = QFontMetricsF(item.style.get("tickFont") or plot.font())
    extent = (lambda text: metrics.horizontalAdvance(text)) if horizontal else (lambda text: metrics.height())
    # positions are worked out over the visible part [lo, hi] of the view, which maps onto a share of the axis
    share = (math.log10(hi) - math.log10(lo)) / max(view_hi - view_lo, 1e-12)
    shown = pick_log_ticks(ticks, lo, hi, length * share, extent)
    if sum(lo <= t[0] <= hi for t in ticks) < 2:  # a narrow range: the ends as well
        shown = sorted(set(shown) | {(math.log10(lo), _short_number(lo)), (math.log10(hi), _short_number(hi))})
    if shown != getattr(item, "_log_ticks_shown", None):
        item._log_ticks_shown = shown
        item.setTicks([shown, []])


def _short_number(v: float) -> str:
    return f"{v:.3g}"


def set_categories(plot: pg.PlotWidget, labels: Sequence[str], axis: str = "bottom") -> None:
    """Label integer positions 0..n-1 on an axis with category names (bar charts)."""
    plot.getAxis(axis).setTicks([[(i, s) for i, s in enumerate(labels)], []])


def stacked_bars(plot: pg.PlotWidget, parts: Sequence[tuple[str, Sequence[float]]], *, width: float = 0.6,
                 horizontal: bool = False, colours: Sequence[str] | None = None,
                 value_format=None) -> list[pg.BarGraphItem]:
    """Draw stacked bars, one stack per category position, one colour per part, each stack's total at its end.

    Args:
        parts: ``(part name, values per category)`` in stacking order; zero parts still get a legend entry.
        horizontal: bars grow along x, categories on y.
        colours: one colour per part (from :mod:`advisor.colours`, so a part keeps its colour in every
            chart); None cycles the series colours.
        value_format: formats a stack's total for its label (e.g. :func:`advisor.units.fmt_usd`); None
            draws no labels.
    Returns:
        The bar items (replace them by calling again after :func:`clear_bars`).
    """
    items = []
    n = max((len(v) for _, v in parts), default=0)
    base = [0.0] * n
    for i, (name, values) in enumerate(parts):
        vals = [float(v or 0.0) for v in values]
        brush = pg.mkBrush(QColor(colours[i]) if colours is not None else color(i))
        if horizontal:
            bar = pg.BarGraphItem(x0=base, y=list(range(n)), height=width, width=vals, brush=brush,
                                  pen=pg.mkPen(_theme.background, width=0.5), name=name)
        else:
            bar = pg.BarGraphItem(x=list(range(n)), y0=base, width=width, height=vals, brush=brush,
                                  pen=pg.mkPen(_theme.background, width=0.5), name=name)
        bar.part_colour = brush.color().name()  # the colour tests check against advisor.colours
        plot.addItem(bar)  # a named item joins the legend by itself
        items.append(bar)
        base = [b + v for b, v in zip(base, vals)]
    if value_format is not None:
        items.extend(_total_labels(plot, base, value_format, horizontal))
    refit_legend(plot)
    return items


def refit_legend(plot: pg.PlotWidget) -> None:
    """Re-choose the legend's columns after series were added (the widest name may have changed)."""
    fitter = getattr(plot, "_legend_fitter", None)
    if fitter is not None:
        fitter.fit(plot.width())


def _total_labels(plot: pg.PlotWidget, totals: Sequence[float], value_format, horizontal: bool) -> list:
    """One text item per stack with its total, just past the stack's end."""
    labels = []
    for i, total in enumerate(totals):
        anchor = (0, 0.5) if horizontal else (0.5, 1)
        text = cache_text(pg.TextItem(value_format(total), color=_theme.text, anchor=anchor))
        text.setPos(total, i) if horizontal else text.setPos(i, total)
        text.value_format = value_format
        plot.addItem(text)
        labels.append(text)
    return labels

def place_line_labels(lines: Sequence[tuple[float, float]], obstacles: Sequence[tuple[float, float, float, float]],
                      slots: Sequence[float], label_px: float = 16.0, *,
                      must: int = 0) -> list[tuple[float, bool] | None]:
    """Where to put the labels of horizontal lines so that none overlaps another, the data or the chart's edge.

    Pure geometry in pixels: a label is right-aligned at a slot (a fraction of the chart's width), just above
    its line or just below it. Places are tried slot by slot, above before below, among those where the whole
    label is inside the chart; a label goes where it covers the least area of the other labels and obstacles
    (bars, their total labels), none where it can.

    Args:
        lines: ``(y_px, width_fraction)`` per line, y counted up from the axis, width as a fraction of the chart.
        obstacles: ``(y_from_px, y_to_px, x_from, x_to)`` rectangles, x as fractions of the chart's width.
        slots: right ends to try, as fractions of the width, best first.
        label_px: a label's height.
        must: the first ``must`` lines are labelled even where every place covers something (where it covers
            least); the others are left unlabelled (None) rather than drawn over something.
    Returns:
        ``(slot, above)`` for each line, or None, in the order given.
    """
    taken = [tuple(o) for o in obstacles]
    out: list[tuple[float, bool] | None] = []
    for k, (y, width) in enumerate(lines):
        inside = [s for s in slots if s - width >= 0.0] or [max(slots)]
        best, best_cover = (inside[0], True), math.inf
        for slot in inside:
            for above in (True, False):
                y0 = y + 1 if above else y - 1 - label_px  # a pixel off its own line
                cover = sum(max(0.0, min(slot, ox1) - max(slot - width, ox0))
                            * max(0.0, min(y0 + label_px, oy1) - max(y0, oy0)) for oy0, oy1, ox0, ox1 in taken)
                if cover < best_cover - 1e-12:
                    best, best_cover = (slot, above), cover
            if best_cover == 0:
                break
        if best_cover > 0 and k >= must:
            out.append(None)
            continue
        slot, above = best
        y0 = y + 1 if above else y - 1 - label_px  # a pixel off its own line
        taken.append((y0, y0 + label_px, slot - width, slot))
        out.append(best)
    return out


def update_stacked_bars(items: list, parts: Sequence[tuple[str, Sequence[float]]]) -> None:
    """Give bars made by :func:`stacked_bars` new values (same parts, same orientation)."""
    n = max((len(v) for _, v in parts), default=0)
    base = [0.0] * n
    bars = [it for it in items if isinstance(it, pg.BarGraphItem)]
    horizontal = False
    for bar, (_name, values) in zip(bars, parts):
        vals = [float(v or 0.0) for v in values]
        horizontal = bar.opts.get("x0") is not None
        # a part whose bars neither grew nor moved (the weights when the batch changes) is left as drawn: setOpts
        # prepares its data, its geometry and its picture again and tells the view its bounds changed
        if getattr(bar, "_shown_values", None) != (base, vals):
            bar._shown_values = (base, vals)
            if horizontal:
                bar.setOpts(x0=base, y=list(range(n)), width=vals)
            else:
                bar.setOpts(x=list(range(n)), y0=base, height=vals)
        base = [b + v for b, v in zip(base, vals)]
    labels = [it for it in items if isinstance(it, pg.TextItem)]
    if labels and len(labels) == n:
        fmt = getattr(labels[0], "value_format", None)
        for i, (label, total) in enumerate(zip(labels, base)):
            if fmt is not None:
                label.setText(fmt(total))
            pos = (total, i) if horizontal else (i, total)
            if getattr(label, "_shown_pos", None) != pos:  # setPos tells the view and its children, even unmoved
                label._shown_pos = pos
                label.setPos(*pos)


def clear_bars(plot: pg.PlotWidget, items: list) -> None:
    """Remove items made by :func:`stacked_bars` (and their legend entries)."""
    legend = plot.getPlotItem().legend
    for it in items:
        plot.removeItem(it)
        if legend is not None and isinstance(it, pg.BarGraphItem):
            legend.removeItem(it)
    items.clear()


def _style(plot: pg.PlotWidget) -> None:
    t = _theme
    plot.setBackground(t.background)
    item = plot.getPlotItem()
    font = QFont()
    font.setPointSize(8)
    for name in ("left", "bottom"):
        ax = item.getAxis(name)
        ax.setPen(pg.mkPen(t.muted))
        ax.setTextPen(pg.mkPen(t.text))
        ax.setStyle(tickFont=font)
    fitter = getattr(plot, "_title_fitter", None)
    if fitter is not None:
        fitter._shown = ""  # the theme's colour: set the (elided) title again
        fitter.fit()
    else:
        item.setTitle(item.titleLabel.text, color=t.text, size="10pt")


def tornado_bars(plot: pg.PlotWidget, bars: Sequence, base_usd: float, value_format) -> list:
    """Draw a tornado: one row per input (largest swing on top), a bar from the base total to the total at the
    input's low value and one to its high value, in :data:`advisor.colours.TORNADO_COLOURS`, each end labelled.

    Args:
        bars: ``planner.sensitivity.TornadoBar`` items (or objects with ``parameter``, ``low_cost_usd``,
            ``high_cost_usd``), largest swing first.
        base_usd: the chosen option's total (the vertical line the bars start from).
        value_format: formats a total for its label (:func:`advisor.units.fmt_usd`).
    Returns:
        The items drawn (remove them with :func:`clear_bars`).
    """
    from advisor.colours import TORNADO_COLOURS

    rows = [b for b in bars if b.low_cost_usd is not None and b.high_cost_usd is not None]
    n = len(rows)
    items: list = []
    for end in ("low", "high"):
        x0, widths = [], []
        for b in rows:
            v = getattr(b, f"{end}_cost_usd")
            x0.append(min(base_usd, v))
            widths.append(abs(v - base_usd))
        bar = pg.BarGraphItem(x0=x0, y=[n - 1 - i for i in range(n)], height=0.6, width=widths,
                              brush=pg.mkBrush(QColor(TORNADO_COLOURS[end])),
                              pen=pg.mkPen(_theme.background, width=0.5), name=f"input at its {end} value")
        bar.part_colour = TORNADO_COLOURS[end]
        plot.addItem(bar)
        items.append(bar)
    for i, b in enumerate(rows):
        y = n - 1 - i
        lo, hi = sorted((b.low_cost_usd, b.high_cost_usd))
        for x, anchor in ((lo, (1, 0.5)), (hi, (0, 0.5))):
            text = cache_text(pg.TextItem(value_format(x), color=_theme.text, anchor=anchor))
            text.setPos(x, y)
            plot.addItem(text)
            items.append(text)
    line = pg.InfiniteLine(pos=base_usd, angle=90, pen=pg.mkPen(_theme.text, width=1))
    plot.addItem(line)
    items.append(line)
    set_categories(plot, [b.parameter.replace("_", " ") for b in reversed(rows)], axis="left")
    if rows:
        lo = min([base_usd] + [min(b.low_cost_usd, b.high_cost_usd) for b in rows])
        hi = max([base_usd] + [max(b.low_cost_usd, b.high_cost_usd) for b in rows])
        pad = (hi - lo) * 0.25 or max(abs(base_usd) * 0.1, 0.01)
        plot.setXRange(lo - pad, hi + pad, padding=0)
        plot.setYRange(-0.6, n + 0.6, padding=0)  # the top row is the legend's: it never covers a bar
    refit_legend(plot)
    return items


configure(themes.current())  # the app's theme is applied before the first chart module import (app.apply_theme)
