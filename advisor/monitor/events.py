"""Events from a stream of samples: a GPU lost, asleep, not responding or back; an Xid error; throttling.

``EventTracker.feed(sample)`` compares each GPU with its previous reading and returns what changed.
An event is a ``fault`` (the app's banner, until acknowledged) when a GPU is lost or stops responding,
the driver reports an Xid error, or a thermal or power-brake throttle starts; a power cap at full
load and idle clocks are ordinary and only logged. No Qt here: the GUI and the CLI both use it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from advisor.hw.records import FAULT_THROTTLES, GPU_LOST, GPU_NOT_RESPONDING, THROTTLE_WORDS, XID_WORDS

STATE_TEXT = {
    "lost": "GPU lost: it fell off the bus or the driver lost it; the other GPUs keep sampling",
    "suspended": "GPU asleep (runtime power saving): not polled, so it is not woken",
    "not-responding": "GPU not responding: a driver call hung; the other GPUs keep sampling",
    "ok": "GPU available again",
}


@dataclass(frozen=True)
class MonitorEvent:
    """Something that changed on one GPU at ``wall_time_s`` (epoch seconds)."""

    wall_time_s: float
    gpu_index: int
    kind: str  # state | xid | throttle | process (a process ended: its books, monitor.accounting)
    text: str
    fault: bool = False
    state: str | None = None  # the new state, for kind "state"

    @property
    def clock(self) -> str:
        """Local time of day, ``HH:MM:SS``."""
        return time.strftime("%H:%M:%S", time.localtime(self.wall_time_s))


def xid_text(code: int) -> str:
    """``"Xid 79: GPU has fallen off the bus"``."""
    words = XID_WORDS.get(code)
    return f"Xid {code}: {words}" if words else f"Xid {code} (see NVIDIA's Xid error catalogue)"


class EventTracker:
    """Turns a stream of ``MonitorSample`` s into ``MonitorEvent`` s."""

    def __init__(self) -> None:
        self._reasons: dict[int, frozenset[str]] = {}
        self._states: dict[int, str] = {}

    def feed(self, sample) -> list[MonitorEvent]:
        """Events of one sample (empty when nothing changed)."""
        out = []
        t = sample.wall_time_s
        for g in sample.gpus:
            prev_state = self._states.get(g.index, "ok")
            if g.state != prev_state:
                out.append(MonitorEvent(t, g.index, "state", STATE_TEXT.get(g.state, g.state),
                                        fault=g.state in (GPU_LOST, GPU_NOT_RESPONDING), state=g.state))
            self._states[g.index] = g.state
            if g.xid is not None:
                out.append(MonitorEvent(t, g.index, "xid", xid_text(g.xid), fault=True))
            if g.throttle_reasons is None:
                continue
            now = frozenset(g.throttle_reasons) - {"gpu_idle"}
            before = self._reasons.get(g.index, frozenset())
            for r in sorted(now - before):
                out.append(MonitorEvent(t, g.index, "throttle", "throttling started: " + THROTTLE_WORDS.get(r, r),
                                        fault=r in FAULT_THROTTLES))
            for r in sorted(before - now):
                out.append(MonitorEvent(t, g.index, "throttle", "throttling ended: " + THROTTLE_WORDS.get(r, r)))
            self._reasons[g.index] = now
        return out
