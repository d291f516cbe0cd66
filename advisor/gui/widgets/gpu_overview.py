"""Current values first: one card per GPU (one row per GPU when there are more than four, as nvitop does).

Painted in one widget, so that a refresh is one repaint with no layout pass, whatever the GPU count.
Each card or row shows the chart colour, name, utilisation and memory as bars with numbers, power
against its limit, temperature, fan, SM and memory clocks, PCIe rx/tx, throttle reasons as words and
the state ("asleep, not woken", "lost at 14:02", "N/A: not supported"). A click toggles whether the
charts draw that GPU (``selection_changed``); hovering shows every figure in full.
"""

from __future__ import annotations

import time

from PySide6.QtCore import QEvent, QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter, QPen, QPixmap
from PySide6.QtWidgets import QSizePolicy, QToolTip, QWidget

from advisor.gui import theme as themes
from advisor.gui.safe_text import plain, rich
from advisor.gui.widgets import plots
from advisor.hw.records import GPU_LOST, GPU_OK, STATE_WORDS, THROTTLE_WORDS
from advisor.units import fmt_mem, mem_value, memory_unit

CARD_MAX = 4  # more GPUs than this: rows
CARD_H = 118
ROW_H = 19
HEADER_H = 18
# (key, header, width in px; 0 = the rest)
ROW_COLUMNS = (("swatch", "", 10), ("index", "GPU", 26), ("name", "name", 150), ("util", "utilisation", 112),
               ("mem", "memory used / total", 178), ("power", "power / limit", 92), ("temp", "temp", 44),
               ("fan", "fan", 40), ("clock", "SM / mem clock", 104), ("pcie", "PCIe rx / tx", 112),
               ("state", "state · throttling", 0))
CORE = ("util_pct", "mem_used_bytes", "power_w", "temp_c")
STATE_HELP = {
    "suspended": ": the laptop's power saving has switched it off, and the monitor does not poll it, because "
                 "any driver query would wake it and drain the battery. Its charts fill in once a program uses it.",
    "lost": ": it fell off the bus or the driver lost it (see the event log); the other GPUs keep sampling. "
            "A reboot or driver reload brings it back.",
    "not-responding": ": a driver call on it hung; it is asked again once that call returns.",
}


def _ghz(mhz: float | None) -> str:
    return "N/A" if mhz is None else f"{mhz / 1000:.2f}"


def _rate(bps: float | None) -> str:
    return "N/A" if bps is None else f"{bps / 1e9:.1f}"


def state_text(g, lost_at: float | None) -> str:
    """The state words of one reading: "" when all is well."""
    if g is None:
        return "waiting for the first sample"
    if g.state == GPU_LOST:
        return "lost at " + time.strftime("%H:%M", time.localtime(lost_at)) if lost_at else "lost"
    if g.state != GPU_OK:
        return STATE_WORDS.get(g.state, g.state)
    if all(getattr(g, f) is None for f in CORE):
        return "N/A: not supported"
    return ""


def throttle_text(g) -> str:
    reasons = [THROTTLE_WORDS.get(r, r) for r in (g.throttle_reasons or ()) if r != "gpu_idle"] if g else []
    return "throttled: " + ", ".join(reasons) if reasons else ""


class GpuOverviewWidget(QWidget):
    """Cards or rows of the GPUs' current values; ``selection_changed`` carries the chosen GPU indices."""

    selection_changed = Signal(object)  # frozenset[int]

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._names: list[str] = []
        self._samples: dict[int, object] = {}
        self._lost_at: dict[int, float] = {}
        self.selected: frozenset[int] = frozenset()
        self._static: tuple | None = None  # (key, QPixmap) of the rows' unchanging layer
        self.setMouseTracking(False)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setObjectName("gpuOverview")
        self.setAccessibleName("GPUs now")

    # ------------------------------------------------------------ data
    def set_gpus(self, names: list[str], selected: frozenset[int] | None = None) -> None:
        """The GPUs by index; all selected by default up to eight, else the first four."""
        self._names = [plain(n) for n in names]  # the driver's names: inert, cut (drawn and in the tooltip)
        n = len(names)
        self.selected = selected if selected is not None else frozenset(range(n if n <= 8 else 4))
        self.setFixedHeight(self._height())
        self.update()

    def mark_lost(self, index: int, wall_time_s: float) -> None:
        """When GPU ``index`` was lost (from the event log; otherwise the first lost sample seen)."""
        self._lost_at.setdefault(index, wall_time_s)
        self.update()

    def update_sample(self, sample) -> None:
        """The newest ``MonitorSample`` (repaints once)."""
        for g in sample.gpus:
            if g.state == GPU_LOST and g.index not in self._lost_at:
                self._lost_at[g.index] = sample.wall_time_s
            self._samples[g.index] = g
        self.update()

    @property
    def rows_mode(self) -> bool:
        return len(self._names) > CARD_MAX

    def _height(self) -> int:
        n = len(self._names)
        if not n:
            return 0
        return HEADER_H + n * ROW_H + 4 if self.rows_mode else self._card_h()

    def _card_h(self) -> int:
        """Title, two bars and four lines of figures, in this font (at least ``CARD_H``)."""
        fm = QFontMetrics(self.font())
        return max(CARD_H, 14 + 7 * (fm.height() + 3))

    def toggle(self, index: int) -> None:
        """Add or remove one GPU from the charts (at least one stays)."""
        sel = set(self.selected)
        sel.symmetric_difference_update({index})
        if sel:
            self.selected = frozenset(sel)
            self.update()
            self.selection_changed.emit(self.selected)

    # ------------------------------------------------------------ geometry
    def _card_rect(self, i: int) -> QRectF:
        n = max(1, len(self._names))
        gap = 8
        w = (self.width() - gap * (n - 1)) / n
        return QRectF(i * (w + gap), 0, w, self.height() - 2)

    def _row_rect(self, i: int) -> QRectF:
        return QRectF(0, HEADER_H + i * ROW_H, self.width(), ROW_H)

    def index_at(self, x: float, y: float) -> int | None:
        for i in range(len(self._names)):
            r = self._row_rect(i) if self.rows_mode else self._card_rect(i)
            if r.contains(x, y):
                return i
        return None

    # ------------------------------------------------------------ events
    def mousePressEvent(self, event) -> None:  # noqa: N802 (Qt API)
        i = self.index_at(event.position().x(), event.position().y())
        if i is not None and event.button() == Qt.MouseButton.LeftButton:
            self.toggle(i)

    def event(self, event) -> bool:
        if event.type() == QEvent.Type.ToolTip:
            i = self.index_at(event.pos().x(), event.pos().y())
            if i is None:
                QToolTip.hideText()
            else:
                QToolTip.showText(event.globalPos(), self.tooltip(i), self)
            return True
        return super().event(event)

    def tooltip(self, i: int) -> str:
        """Every figure of GPU ``i`` in full, and what a click does."""
        g = self._samples.get(i)
        lines = [f"<b>GPU {i} · {rich(self._names[i])}</b>"]
        state = state_text(g, self._lost_at.get(i))
        if state:
            lines.append(state)
        if g is not None and g.state == GPU_OK:
            for label, text in self._figures(g).items():
                lines.append(f"{label}: {text}")
        lines.append("<i>click: " + ("hide from" if i in self.selected else "draw on") + " the charts</i>")
        return "<br>".join(lines)

    @staticmethod
    def _figures(g) -> dict[str, str]:
        mem = ("N/A" if g.mem_used_bytes is None else
               f"{fmt_mem(g.mem_used_bytes)} / {fmt_mem(g.mem_total_bytes)}")
        power = "N/A" if g.power_w is None else f"{g.power_w:.0f} W" + (
            f" / {g.power_limit_w:.0f} W" if g.power_limit_w else "")
        return {"utilisation": "N/A" if g.util_pct is None else f"{g.util_pct:.0f} %", "memory": mem,
                "power": power, "temperature": "N/A" if g.temp_c is None else f"{g.temp_c:.0f} °C",
                "fan": "N/A" if g.fan_pct is None else f"{g.fan_pct:.0f} %",
                "clocks (SM / memory)": f"{_ghz(g.sm_clock_mhz)} / {_ghz(g.mem_clock_mhz)} GHz",
                "PCIe (rx / tx)": f"{_rate(g.pcie_rx_bps)} / {_rate(g.pcie_tx_bps)} GB/s",
                "throttling": throttle_text(g).removeprefix("throttled: ") or "none"}

    # ------------------------------------------------------------ painting
    def paintEvent(self, _event) -> None:  # noqa: N802 (Qt API)
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        t = themes.current()
        if self.rows_mode:
            self._paint_rows(p, t)
        else:
            for i in range(len(self._names)):
                self._paint_card(p, t, i)
        p.end()

    def _bar(self, p: QPainter, t, rect: QRectF, fraction: float | None, text: str, alert: float = 0.9) -> None:
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(QColor(t.grid))
        p.drawRect(rect)
        if fraction is not None:
            f = min(max(fraction, 0.0), 1.0)
            fill = QColor(t.bad if f >= alert else t.accent)
            fill.setAlphaF(0.45 if t.dark else 0.35)  # pale enough that the numbers on it stay readable
            p.setBrush(fill)
            p.drawRect(QRectF(rect.x(), rect.y(), rect.width() * f, rect.height()))
        p.setPen(QColor(t.text))
        p.drawText(rect.adjusted(4, 0, -2, 0), int(Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft), text)

    def _cells(self, g, t) -> dict[str, tuple[str, float | None, str | None]]:
        """Per column: (text, bar fraction or None, colour or None)."""
        if g is None or g.state != GPU_OK:
            return {}
        total = g.mem_total_bytes
        power = "N/A" if g.power_w is None else f"{g.power_w:.0f}" + (
            f" / {g.power_limit_w:.0f} W" if g.power_limit_w else " W")
        hot = g.temp_c is not None and g.temp_c >= 85
        return {
            "util": ("N/A" if g.util_pct is None else f"{g.util_pct:.0f} %",
                     None if g.util_pct is None else g.util_pct / 100, None),
            "mem": ("N/A" if g.mem_used_bytes is None else
                    f"{mem_value(g.mem_used_bytes):.1f} / {mem_value(total or 0):.1f} {memory_unit()}",
                    g.mem_used_bytes / total if g.mem_used_bytes is not None and total else None, None),
            "power": (power, None, None), "temp": ("N/A" if g.temp_c is None else f"{g.temp_c:.0f} °C", None,
                                                   t.bad if hot else None),
            "fan": ("N/A" if g.fan_pct is None else f"{g.fan_pct:.0f} %", None, None),
            "clock": (f"{_ghz(g.sm_clock_mhz)} / {_ghz(g.mem_clock_mhz)} GHz", None, None),
            "pcie": (f"{_rate(g.pcie_rx_bps)} / {_rate(g.pcie_tx_bps)} GB/s", None, None),
            "pcie_words": (f"rx {_rate(g.pcie_rx_bps)} · tx {_rate(g.pcie_tx_bps)} GB/s", None, None),
        }

    def _static_rows(self, t) -> QPixmap:
        """Header, swatches, indices and names: drawn once per size, selection and theme, then blitted."""
        cache_key = (self.width(), self.height(), self.selected, t.dark, tuple(self._names), self.devicePixelRatioF())
        if self._static is not None and self._static[0] == cache_key:
            return self._static[1]
        ratio = self.devicePixelRatioF()
        pix = QPixmap(int(self.width() * ratio), int(self.height() * ratio))
        pix.setDevicePixelRatio(ratio)
        pix.fill(Qt.GlobalColor.transparent)
        p = QPainter(pix)
        font = QFont(self.font())
        small = QFont(font)
        small.setPointSizeF(max(7.5, font.pointSizeF() - 1))
        p.setFont(small)
        p.setPen(QColor(t.muted))
        x = 0.0
        widths = self._row_widths()
        for (_key, title, _w), w in zip(ROW_COLUMNS, widths, strict=True):
            if title:
                p.drawText(QRectF(x + 2, 0, w - 4, HEADER_H), int(Qt.AlignmentFlag.AlignVCenter), title)
            x += w
        p.setFont(font)
        fm = QFontMetrics(font)
        for i, name in enumerate(self._names):
            r = self._row_rect(i)
            selected = i in self.selected
            if selected:
                p.fillRect(r, QColor(t.surface))
            x = 0.0
            for (key, _title, _w), w in zip(ROW_COLUMNS, widths, strict=True):
                cell = QRectF(x + 2, r.y() + 2, w - 6, r.height() - 4)
                x += w
                if key == "swatch":
                    p.fillRect(QRectF(cell.x(), cell.y() + 1, 6, cell.height() - 2),
                               plots.color(i) if selected else QColor(t.grid))
                elif key == "index":
                    p.setPen(QColor(t.text))
                    p.drawText(cell, int(Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight), str(i))
                elif key == "name":
                    p.setPen(QColor(t.text if selected else t.muted))
                    p.drawText(cell, int(Qt.AlignmentFlag.AlignVCenter),
                               fm.elidedText(_short(name), Qt.TextElideMode.ElideRight, int(cell.width())))
        p.end()
        self._static = (cache_key, pix)  # (the loops above name their column ``key``: not the cache's)
        return pix

    def _paint_rows(self, p: QPainter, t) -> None:
        """Rows: the static layer, then per cell one bar or one text at a point (no text layout per cell)."""
        p.drawPixmap(0, 0, self._static_rows(t))
        fm = QFontMetrics(self.font())
        ascent = (ROW_H - fm.height()) / 2 + fm.ascent()
        widths = self._row_widths()
        lefts = [sum(widths[:k]) for k in range(len(widths))]
        keys = [k for k, _t, _w in ROW_COLUMNS]
        text_pen, muted, warn, bad = QColor(t.text), QColor(t.muted), QColor(t.warn), QColor(t.bad)
        for i in range(len(self._names)):
            r = self._row_rect(i)
            g = self._samples.get(i)
            cells = self._cells(g, t)
            base = r.y() + ascent
            for k, key in enumerate(keys):
                x, w = lefts[k], widths[k]
                if key == "state":
                    words = state_text(g, self._lost_at.get(i)) or throttle_text(g)
                    bad_state = g is not None and g.state not in (GPU_OK, "suspended")
                    p.setPen(bad if bad_state else warn if words else muted)
                    p.drawText(QPointF(x + 2, base), fm.elidedText(words or "ok", Qt.TextElideMode.ElideRight,
                                                                   int(w - 6)))
                elif key in cells:
                    text, frac, colour = cells[key]
                    if key in ("util", "mem"):
                        self._bar_fast(p, t, QRectF(x + 2, r.y() + 2, w - 6, r.height() - 4), frac)
                        p.setPen(text_pen)
                        p.drawText(QPointF(x + 6, base), text)
                    else:
                        p.setPen(QColor(colour) if colour else text_pen)
                        p.drawText(QPointF(x + w - 4 - fm.horizontalAdvance(text), base), text)

    def _bar_fast(self, p: QPainter, t, rect: QRectF, fraction: float | None) -> None:
        p.fillRect(rect, QColor(t.grid))
        if fraction is not None:
            f = min(max(fraction, 0.0), 1.0)
            fill = QColor(t.bad if f >= 0.9 else t.accent)
            fill.setAlphaF(0.45 if t.dark else 0.35)
            p.fillRect(QRectF(rect.x(), rect.y(), rect.width() * f, rect.height()), fill)

    def _row_widths(self) -> list[float]:
        fixed = sum(w for _k, _t, w in ROW_COLUMNS)
        return [w if w else max(80.0, self.width() - fixed) for _k, _t, w in ROW_COLUMNS]

    def _paint_card(self, p: QPainter, t, i: int) -> None:
        r = self._card_rect(i)
        g = self._samples.get(i)
        selected = i in self.selected
        p.setPen(QPen(plots.color(i) if selected else QColor(t.grid), 2 if selected else 1))
        p.setBrush(QColor(t.surface))
        p.drawRoundedRect(r.adjusted(1, 1, -1, -1), 5, 5)
        inner = r.adjusted(10, 6, -10, -6)
        font = QFont(self.font())
        bold = QFont(font)
        bold.setBold(True)
        fm = QFontMetrics(bold)
        line = fm.height() + 3
        p.setFont(bold)
        p.setPen(QColor(t.text))
        name = self._names[i]
        title = f"GPU {i}" + ("" if "(asleep" in name else f" · {_short(name)}")
        p.drawText(QRectF(inner.x(), inner.y(), inner.width(), line), int(Qt.AlignmentFlag.AlignVCenter),
                   fm.elidedText(title, Qt.TextElideMode.ElideRight, int(inner.width())))
        p.setFont(font)
        y = inner.y() + line
        state = state_text(g, self._lost_at.get(i))
        cells = self._cells(g, t)
        if not cells:
            asleep = g is not None and g.state == "suspended"
            p.setPen(QColor(t.warn if asleep else t.bad if g is not None and g.state != GPU_OK else t.muted))
            explain = STATE_HELP.get(g.state, "") if g is not None else ""
            p.drawText(QRectF(inner.x(), y, inner.width(), inner.height() - line),
                       int(Qt.AlignmentFlag.AlignTop | Qt.TextFlag.TextWordWrap), state + explain)
            return
        label_w = 64
        for key, label in (("util", "utilisation"), ("mem", "memory")):
            text, frac, _c = cells[key]
            p.setPen(QColor(t.muted))
            p.drawText(QRectF(inner.x(), y, label_w, line), int(Qt.AlignmentFlag.AlignVCenter), label)
            self._bar(p, t, QRectF(inner.x() + label_w, y + 1, inner.width() - label_w, line - 3), frac, text)
            y += line
        figures = (("power", cells["power"][0]), ("", cells["temp"][0]), ("fan", cells["fan"][0]),
                   ("SM/mem", cells["clock"][0]), ("PCIe", cells["pcie_words"][0]))
        shown = [f"{label} {text}".strip() for label, text in figures if not text.startswith("N/A")]
        missing = [label or "temperature" for label, text in figures if text.startswith("N/A")]
        half = (len(shown) + 1) // 2 if len(shown) > 3 else len(shown)
        throttled = state or throttle_text(g)
        lines = [(" · ".join(shown[:half]), cells["temp"][2]), (" · ".join(shown[half:]), None)]
        if missing:
            lines.append(("N/A: not supported: " + ", ".join(missing), t.muted))
        lines.append((throttled or "no throttling", t.warn if throttled else t.muted))
        lines = [(text, colour) for text, colour in lines if text][:4]
        fm = QFontMetrics(font)
        for text, colour in lines:
            p.setPen(QColor(colour or t.text))
            p.drawText(QRectF(inner.x(), y, inner.width(), line), int(Qt.AlignmentFlag.AlignVCenter),
                       fm.elidedText(text, Qt.TextElideMode.ElideRight, int(inner.width())))
            y += line


def _short(name: str) -> str:
    """Drop the vendor words a card has no room for ("NVIDIA GeForce RTX 4090" -> "RTX 4090")."""
    for word in ("NVIDIA ", "GeForce ", "AMD ", "Intel ", "Tesla "):
        name = name.replace(word, "")
    return name.strip() or name
