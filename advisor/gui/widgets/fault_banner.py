"""The fault banner: lost GPUs, Xid errors and thermal or power-brake throttling, on every page until
acknowledged, with a button to the event log (the Monitor page's Events tab)."""

from __future__ import annotations

import html

from PySide6.QtCore import Signal, Slot
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton

from advisor.gui import theme as themes

SHOWN = 3  # newest faults named in the banner; the rest are counted


class FaultBannerWidget(QFrame):
    """Hidden until ``add_events`` gets a fault; ``Acknowledge`` hides it until the next one."""

    log_requested = Signal()

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setObjectName("faultBanner")
        t = themes.current()
        bg, fg = ("#ffebe9", "#82071e") if not t.dark else ("#4a1515", "#ffb3b3")
        self.setStyleSheet(f"QFrame#faultBanner {{ background: {bg}; }} QFrame#faultBanner QLabel {{ color: {fg}; }}")
        row = QHBoxLayout(self)
        row.setContentsMargins(10, 4, 10, 4)
        self.label = QLabel()
        self.label.setWordWrap(True)
        row.addWidget(self.label, 1)
        self.log_button = QPushButton("Event log")
        self.log_button.setToolTip("Every event with its time, on the Monitor page")
        self.log_button.clicked.connect(self.log_requested)
        row.addWidget(self.log_button)
        self.ack_button = QPushButton("Acknowledge")
        self.ack_button.setToolTip("Hide this banner until the next fault (the event log keeps them)")
        self.ack_button.clicked.connect(self._on_ack_button_clicked)
        row.addWidget(self.ack_button)
        self.pending: list = []
        self.setVisible(False)

    @Slot(object)
    def add_events(self, events) -> None:
        """Show the faults among ``events`` (``MonitorEvent`` s); other events are ignored here."""
        faults = [e for e in events if e.fault]
        if not faults:
            return
        self.pending.extend(faults)
        newest = self.pending[-SHOWN:][::-1]
        parts = [f"<b>GPU {e.gpu_index}</b> at {e.clock}: {html.escape(e.text.split(':')[0] if e.kind == 'state' else e.text)}"
                 for e in newest]
        more = len(self.pending) - len(newest)
        self.label.setText("⚠ " + " · ".join(parts) + (f" · and {more} more" if more > 0 else ""))
        self.setVisible(True)

    @Slot()
    def _on_ack_button_clicked(self) -> None:
        self.pending.clear()
        self.setVisible(False)
