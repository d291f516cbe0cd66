"""The GPU process table of the Monitor page: sort by any column, filter by text, stop your own processes.

Every process using a GPU: PID, user, GPU, GPU memory, the process's GPU utilisation where the driver
gives it, CPU %, host memory, running time and the command line (elided; in full on hover). A
process of the current user can be terminated, then killed if it does not end, each after a
confirmation that names it; the button is never enabled for another user's process, and the host
backend refuses those too.
"""

from __future__ import annotations

import time

from PySide6.QtCore import QTimer, Signal, Slot
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QPushButton, QVBoxLayout, QWidget

from advisor.gui.safe_text import ask, plain
from advisor.gui.safe_text import tip as tip_text
from advisor.gui.widgets.tables import RECORD_ROLE, Column, RecordTableModel, fit_columns, make_proxy, make_view
from advisor.units import fmt_mem

KILL_AFTER_S = 3.0  # a process still running this long after terminate is offered a kill


def running_time(started_s: float | None, now_s: float | None = None) -> str:
    """``"2:05:09"`` or ``"3d 04h"``; "—" when unknown."""
    if started_s is None:
        return "—"
    s = max(0, int((time.time() if now_s is None else now_s) - started_s))
    return f"{s // 86400}d {s % 86400 // 3600:02d}h" if s >= 86400 else f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def describe(p) -> str:
    """The process as a confirmation names it: PID, command (cut at 120 characters), GPU, user."""
    cmd = plain(p.cmdline or p.name or "unknown command", 120)
    return f"PID {p.pid} ({cmd}) on GPU {p.gpu_index}, user {plain(p.user or '?', 64)}"


def _kwh(j: float) -> str:
    return f"{j / 3.6e6:.3g} kWh" if j >= 3.6e5 else f"{j / 3600.0:.1f} Wh"


BOOK_FIRST, BOOK_LAST = 8, 11  # the GPU-h, energy, cost and peak columns of ``process_columns``


def process_columns(now=time.time, books=lambda p: None) -> list[Column]:
    """The table's columns; ``books(p)`` gives a process's ``ProcessBooks`` on that GPU (None: no books)."""
    def book(field):
        return lambda p: getattr(books(p), field, None)

    return [
        Column("PID", lambda p: p.pid, align_right=True),
        Column("user", lambda p: p.user, tip="— when the PID is in another namespace (a container)"),
        Column("GPU", lambda p: p.gpu_index, align_right=True),
        Column("GPU memory", lambda p: p.gpu_mem_bytes, fmt_mem, align_right=True,
               tip="memory the process holds on the GPU; — where the driver cannot tell (Windows WDDM, Intel, Apple)"),
        Column("GPU (%)", lambda p: p.gpu_util_pct, lambda v: f"{v:.0f}", align_right=True,
               tip="the process's share of the GPU's time over the last sample, where the driver gives it"),
        Column("CPU (%)", lambda p: p.cpu_pct, lambda v: f"{v:.0f}", align_right=True),
        Column("host memory", lambda p: p.host_mem_bytes, fmt_mem, align_right=True),
        Column("running", lambda p: None if p.started_s is None else -p.started_s,
               lambda v: running_time(-v, now()), align_right=True, tip="time since the process started"),
        Column("GPU-h", book("gpu_hours"), lambda v: f"{v:.3f}", align_right=True,
               tip="GPU-hours since the monitor first saw the process on this GPU"),
        Column("energy", book("energy_j"), _kwh, align_right=True,
               tip="the GPU's energy (driver counter, else power x time) shared by the processes' utilisation "
                   "(docs/monitor.md)"),
        Column("cost", book("cost_usd"), lambda v: f"${v:.3f}", align_right=True,
               tip="that energy at the electricity price of the cost assumptions"),
        Column("peak", book("peak_gpu_mem_bytes"), fmt_mem, align_right=True,
               tip="the most GPU memory the process held while monitored"),
        Column("command", lambda p: p.cmdline or p.name, cell_tip=lambda p: p.cmdline or p.name or "",
               tip="the command line (hover a cell for all of it)"),
    ]


def _ask(parent, title: str, text: str) -> bool:
    return ask(parent, title, text)  # plain text: the command line is another user's words


class ProcessPanelWidget(QWidget):
    """Filter box, stop button and the sortable process table.

    Args:
        host: returns the host backend that signals processes (``signal_process``, ``process_alive``).
    """

    status_changed = Signal(str)

    def __init__(self, host=None, parent=None) -> None:
        super().__init__(parent)
        self._host = host
        self.confirm = _ask  # tests replace it: (parent, title, text) -> bool
        self._signalled: int | None = None  # the PID asked to terminate, awaiting the kill offer
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        bar = QHBoxLayout()
        self.filter = QLineEdit()
        self.filter.setPlaceholderText("Filter: PID, user, command…")
        self.filter.setClearButtonEnabled(True)
        self.filter.textChanged.connect(self._on_filter_text_changed)
        bar.addWidget(self.filter, 1)
        self.count = QLabel()
        bar.addWidget(self.count)
        self.stop_button = QPushButton("Terminate…")
        self.stop_button.setEnabled(False)
        self.stop_button.setToolTip("Select one of your own processes to stop it")
        self.stop_button.clicked.connect(self._on_stop_button_clicked)
        bar.addWidget(self.stop_button)
        layout.addLayout(bar)
        self.now_s: float | None = None  # the sample's wall time ("running" counts to it), None: now
        self._books: dict = {}
        self.model = RecordTableModel(process_columns(lambda: self.now_s if self.now_s is not None else time.time(),
                                                      lambda p: self._books.get((p.pid, p.gpu_index))), [], self)
        self.proxy = make_proxy(self.model, self)
        self.view = make_view(self.proxy)
        self.view.setObjectName("processTable")
        self.view.selectionModel().selectionChanged.connect(self._on_selection_changed)
        layout.addWidget(self.view, 1)
        fit_columns(self.view)
        self._kill_timer = QTimer(self)
        self._kill_timer.setSingleShot(True)
        self._kill_timer.timeout.connect(self._on_kill_timer_timeout)

    def set_host(self, host) -> None:
        self._host = host

    def set_rows(self, rows, now_s: float | None = None, empty_reason: str = "", books: dict | None = None) -> None:
        """New process snapshot at ``now_s`` (epoch s); the selected PID stays selected when it is still there.
        ``empty_reason`` says why there may be none (a sleeping GPU, a driver that cannot tell); ``books``
        ({(pid, gpu): ProcessBooks}) fills the GPU-hours, energy, cost and peak columns."""
        self.now_s = now_s
        rows = list(rows)
        if not rows:
            self.count.setText(f"no GPU process seen{': ' + empty_reason if empty_reason else ''}")
        books = dict(books or {})
        if rows == self.model.rows() and books == self._books:
            return
        books_changed = books != self._books
        self._books = books
        chosen = self.selected()
        same = [(p.pid, p.gpu_index) for p in rows] == [(p.pid, p.gpu_index) for p in self.model.rows()]
        self.model.set_rows(rows)
        if books_changed and same and rows:
            # the model compares old and new rows through the columns, and the book columns read the books
            # already replaced: their cells are said to have changed here
            self.model.dataChanged.emit(self.model.index(0, BOOK_FIRST), self.model.index(len(rows) - 1, BOOK_LAST))
        if not same:
            fit_columns(self.view, max_width=200)
        if chosen is not None:
            for r in range(self.proxy.rowCount()):
                rec = self.proxy.index(r, 0).data(RECORD_ROLE)
                if rec.pid == chosen.pid and rec.gpu_index == chosen.gpu_index:
                    self.view.selectRow(r)
                    break
        if rows:
            self.count.setText(f"{len({p.pid for p in rows})} processes")
        self._update_button()

    def selected(self):
        """The selected process (a ``ProcessSample``), or None."""
        rows = self.view.selectionModel().selectedRows() if self.view.selectionModel() else []
        return rows[0].data(RECORD_ROLE) if rows else None

    def can_stop(self, p) -> bool:
        """Only the current user's processes, and only while a host backend can signal them."""
        return p is not None and bool(p.own) and self._host is not None and self._host() is not None

    @Slot(str)
    def _on_filter_text_changed(self, text: str) -> None:
        self.proxy.setFilterFixedString(text)

    @Slot()
    def _on_selection_changed(self, *_a) -> None:
        self._update_button()

    def _update_button(self) -> None:
        p = self.selected()
        ok = self.can_stop(p)
        kill = ok and self._signalled == p.pid
        self.stop_button.setText("Kill…" if kill else "Terminate…")
        self.stop_button.setEnabled(ok)
        if p is None:
            tip = "Select one of your own processes to stop it"
        elif not p.own:
            tip = f"PID {p.pid} belongs to {plain(p.user or 'another user', 64)}: only your own processes can be stopped"
        else:
            tip = ("It did not end: kill it (SIGKILL)" if kill else "Ask it to end (SIGTERM); offered a kill if it "
                   "does not")
        self.stop_button.setToolTip(tip_text(tip))  # a user name from the process table

    @Slot()
    def _on_stop_button_clicked(self) -> None:
        p = self.selected()
        if p is not None:
            self.stop(p, kill=self._signalled == p.pid)

    def stop(self, p, kill: bool = False) -> bool:
        """Terminate (or kill) ``p`` after the confirmation; returns True when the signal was sent."""
        if not self.can_stop(p):
            return False  # another user's process: never offered, never sent
        verb = "Kill" if kill else "Terminate"
        text = (f"{verb} {describe(p)}?\n\n" + ("SIGKILL ends it at once: unsaved work is lost." if kill else
                "SIGTERM asks it to end; a training job may save a checkpoint first."))
        if not self.confirm(self, f"{verb} process {p.pid}", text):
            return False
        error = self._host().signal_process(p.pid, kill=kill)
        if error:
            self.status_changed.emit(error)
            return False
        self.status_changed.emit(f"{'killed' if kill else 'asked to end'}: PID {p.pid}")
        self._signalled = None if kill else p.pid
        if not kill:
            self._kill_timer.start(int(KILL_AFTER_S * 1000))
        self._update_button()
        return True

    @Slot()
    def _on_kill_timer_timeout(self) -> None:
        pid = self._signalled
        host = self._host() if self._host else None
        if pid is None or host is None:
            return
        if host.process_alive(pid):
            self.status_changed.emit(f"PID {pid} is still running: select it and choose Kill… to end it")
        else:
            self._signalled = None
            self.status_changed.emit(f"PID {pid} ended")
        self._update_button()
