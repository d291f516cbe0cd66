"""The fleet watcher: every target asked on its own, none waited for.

    watcher = FleetWatcher(source, interval_s=1.0)
    view = watcher.refresh()      # call once per refresh (a QTimer, the terminal loop): never blocks
    view = watcher.snapshot()     # ask every target once and wait for the answers (``--once``), bounded
    watcher.close()

``refresh`` takes the answers that have come in since the last call, starts a new request for every target
whose previous one is done, and returns the view: a slow or dead node holds only its own request, never the
others' cadence. A node is "down" when its last request failed, or when the request started at one refresh is
still out at the next (``late_s``, half an interval, so timer jitter does not matter) ("no answer within N s"):
a node that stops answering is greyed by the second refresh at the latest. A node whose figures are older than
``STALE_S`` is "stale". The last reading of a down node is kept (greyed) so the view does not jump.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass

from advisor.fleet.model import DOWN, STALE, STALE_S, UP, WAITING, FleetView, Node, NodeReading
from advisor.fleet.sources import Answer, SourceFailed

MAX_WORKERS = 32


@dataclass
class _Memo:
    url: str
    reading: NodeReading | None = None
    ok_at: float | None = None  # monotonic time of the last reading
    age_at_ok: float = 0.0  # how old that reading already was when it came (Prometheus's last scrape)
    error: str | None = None


class FleetWatcher:
    """Reads a source (``fleet.sources``) without ever blocking its caller for longer than a harvest."""

    def __init__(self, source, *, interval_s: float = 1.0, stale_s: float = STALE_S,
                 clock: Callable[[], float] = time.monotonic, max_workers: int = MAX_WORKERS) -> None:
        self.source = source
        self.interval_s, self.stale_s, self.clock = interval_s, stale_s, clock
        self.late_s = interval_s * 0.5  # still out at the next refresh (half an interval: timer jitter): late
        targets = source.targets()
        self._pool = ThreadPoolExecutor(max_workers=max(1, min(max_workers, len(targets))),
                                        thread_name_prefix="fleet-read")
        self._inflight: dict[str, tuple[Future, float]] = {}
        self._begun: dict[str, float] = {}  # when each target's current request started on a thread
        self._memo: dict[str, _Memo] = {}
        self._of_target: dict[str, list[str]] = {}
        for t in targets:  # nodes known before any answer: shown as waiting, in the order given
            names = source.names(t)
            self._of_target[t] = names
            for n in names:
                self._memo[n] = _Memo(url=t)

    # ------------------------------------------------------------ requests
    def _fetch(self, target: str) -> tuple[list[Answer], float]:
        """One request (on a pool thread), with the time its answer arrived."""
        self._begun[target] = self.clock()  # a request waiting for a free thread is not yet late
        try:
            answers = self.source.fetch(target)
        except SourceFailed as exc:  # every node it spoke for is down; none known yet: the source itself
            answers = [Answer(n, target, None, str(exc)) for n in self._of_target.get(target, []) or [target]]
        except Exception as exc:  # a bug in a reader must not stop the view; the node shows it
            answers = [Answer(n, target, None, f"{type(exc).__name__}: {exc}") for n in self._of_target.get(target, [])]
        return answers, self.clock()

    def _harvest(self, target: str, fut: Future) -> None:
        answers, now = fut.result()
        names = []
        for a in answers:
            names.append(a.name)
            memo = self._memo.setdefault(a.name, _Memo(url=a.url))
            memo.url = a.url
            if a.reading is not None:
                memo.reading, memo.ok_at, memo.age_at_ok, memo.error = a.reading, now, a.age_s or 0.0, None
            else:
                memo.error = a.error or "no answer"
                if a.age_s is not None and memo.ok_at is None:
                    memo.age_at_ok = a.age_s
        if names:
            self._of_target[target] = list(dict.fromkeys([*self._of_target.get(target, []), *names]))

    def _start(self, now: float) -> None:
        for t in self.source.targets():
            if t not in self._inflight:
                self._begun.pop(t, None)  # set again by the request when a thread takes it
                self._inflight[t] = (self._pool.submit(self._fetch, t), now)

    def _harvest_done(self) -> None:
        for t, (fut, _started) in list(self._inflight.items()):
            if fut.done():
                del self._inflight[t]
                self._harvest(t, fut)

    def refresh(self) -> FleetView:
        """Harvest what has come in, start what is due, return the view (never waits on a request)."""
        self._harvest_done()
        self._start(self.clock())
        return self.view()

    def snapshot(self, timeout_s: float | None = None) -> FleetView:
        """Ask every target now and wait for the answers, at most ``timeout_s`` (default: the source's timeout
        and a second); a request already out is waited for first, so every answer is newer than this call."""
        limit = timeout_s if timeout_s is not None else getattr(self.source, "timeout_s", 5.0) + 1.0
        end = time.monotonic() + limit
        wait_futures([f for f, _ in self._inflight.values()], timeout=limit)
        self._harvest_done()
        self._start(self.clock())
        wait_futures([f for f, _ in self._inflight.values()], timeout=max(0.0, end - time.monotonic()))
        self._harvest_done()
        return self.view()

    # ------------------------------------------------------------ the view
    def view(self) -> FleetView:
        now = self.clock()
        late = {}
        for t in self._inflight:
            begun = self._begun.get(t)
            if begun is not None and now - begun > self.late_s:  # waiting for a thread is not being late
                late.update((n, now - begun) for n in self._of_target.get(t, []))
        nodes = []
        for name, memo in self._memo.items():
            age = None if memo.ok_at is None else now - memo.ok_at + memo.age_at_ok
            error = memo.error
            out_for = late.get(name)
            if out_for is not None:
                error = f"no answer within {out_for:.1f} s"
            if error is not None:
                state = DOWN
            elif memo.reading is None:
                state = WAITING
            elif age is not None and age > self.stale_s:
                state = STALE
            else:
                state = UP
            nodes.append(Node(name, memo.url, state, age, memo.reading, error))
        return FleetView(tuple(nodes), self.source.label, getattr(self.source, "simulated", False))

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
