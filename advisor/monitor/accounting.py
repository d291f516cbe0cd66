"""The monitor's books per GPU process: GPU-hours, energy, cost, peak GPU memory, mean utilisation (pure).

Fed one tick at a time (``Books.update(time_s, gpus, processes)``) with the sampler's readings; nothing here
reads hardware. The rules (docs/monitor.md, "Per-process books"):

* **Energy of a GPU over a tick**: the driver's cumulative energy counter where both readings have it
  (``nvmlDeviceGetTotalEnergyConsumption``, millijoules since the driver loaded; a counter that goes back is a
  reset, and one reading NVML's "no value" (``NVML_VALUE_NOT_AVAILABLE_ulonglong``, 2^64-1 mJ) or growing by
  more than the power limit allows over the tick is a fault: that tick falls back to power), else the
  trapezoid of the two power readings times the tick. Either is capped at the power limit times the tick.
* **Shared between the processes on that GPU** by their utilisation share (each process's SM utilisation from
  ``nvmlDeviceGetProcessUtilization`` over the sum of them); equally when no process reports utilisation or all
  report 0. A GPU with no process keeps its energy unattributed (idle), so the processes' energy sums to the
  GPU's energy over the ticks they ran.
* **GPU-hours**: the tick's length per GPU the process was on (two GPUs for an hour: two GPU-hours).
* **Cost**: the energy at the user's electricity price (``CostAssumptions.electricity_usd_per_kwh``).
* **Peak GPU memory**: the largest reading; **mean utilisation**: the time-weighted mean of the readings.

Books are kept per process and GPU (the process table's rows); ``merge`` adds a process's GPUs up. A process
is known by its PID and start time (a reused PID is a new process); one absent from a new process snapshot
has ended on that GPU, and ``update`` returns its final books once.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

J_PER_KWH = 3.6e6
# NVML's "no value" for an unsigned long long (nvml.h, NVML_VALUE_NOT_AVAILABLE_ulonglong = ~0ULL), in joules
# once the backend has divided the millijoules by 1000: any counter reading this high is that sentinel.
NVML_NO_VALUE_J = (2**64 - 1) / 1000.0


@dataclass(frozen=True)
class ProcessBooks:
    """What one process has used since the monitor first saw it.

    Attributes:
        pid, name, started_s (epoch seconds, None unknown), gpus: the process and the GPU indices it used.
        first_seen_s, last_seen_s: monitor times (seconds since the sampler started).
        gpu_hours, energy_j, cost_usd, peak_gpu_mem_bytes (None: never reported), mean_util_pct (None: never reported).
        ended: the process has gone.
    """

    pid: int
    name: str | None
    started_s: float | None
    gpus: tuple[int, ...]
    first_seen_s: float
    last_seen_s: float
    gpu_hours: float
    energy_j: float
    cost_usd: float
    peak_gpu_mem_bytes: int | None
    mean_util_pct: float | None
    ended: bool = False

    @property
    def duration_s(self) -> float:
        return max(0.0, self.last_seen_s - self.first_seen_s)

    def summary(self) -> str:
        """One line: ``train.py: 4.2 h, 3.1 kWh, $0.93, peak 21.3 GB``."""
        hours = self.duration_s / 3600.0
        took = f"{hours:.1f} h" if hours >= 0.1 else f"{self.duration_s:.0f} s"
        peak = "" if self.peak_gpu_mem_bytes is None else f", peak {self.peak_gpu_mem_bytes / 1e9:.1f} GB"
        util = "" if self.mean_util_pct is None else f", mean {self.mean_util_pct:.0f} % busy"
        return (f"{self.name or f'PID {self.pid}'}: {took}, {self.gpu_hours:.2f} GPU-h, "
                f"{self.energy_j / J_PER_KWH:.3g} kWh, ${self.cost_usd:.2f}{peak}{util}")


@dataclass
class _Acc:
    pid: int
    name: str | None
    started_s: float | None
    first_seen_s: float
    last_seen_s: float
    gpus: set = field(default_factory=set)
    gpu_s: float = 0.0
    energy_j: float = 0.0
    peak: int | None = None
    util_weighted: float = 0.0
    util_s: float = 0.0


def gpu_energy_j(prev, now, dt_s: float) -> float:
    """A GPU's energy over one tick: the counter's difference, else the trapezoid of the power readings; at
    most the power limit times the tick where a limit is known (a counter growing faster than that is a fault,
    and the tick falls back to power)."""
    if dt_s <= 0:
        return 0.0
    limits = [w for w in (getattr(prev, "power_limit_w", None), getattr(now, "power_limit_w", None))
              if w is not None and math.isfinite(w) and w > 0]
    cap = max(limits) * dt_s if limits else math.inf
    e0, e1 = _counter(prev), _counter(now)
    if e0 is not None and e1 is not None and e1 >= e0 and e1 - e0 <= cap:
        return float(e1 - e0)
    p0, p1 = getattr(prev, "power_w", None), getattr(now, "power_w", None)
    watts = [p for p in (p0, p1) if p is not None and math.isfinite(p) and p >= 0]
    return min(cap, sum(watts) / len(watts) * dt_s) if watts else 0.0


def _counter(sample) -> float | None:
    """A reading of the energy counter, None when absent, not finite or the driver's "no value"."""
    e = getattr(sample, "energy_j", None)
    if e is None or not math.isfinite(e) or e < 0 or e >= NVML_NO_VALUE_J * (1 - 1e-9):
        return None
    return float(e)


def shares(processes: Sequence) -> list[float]:
    """Each process's share of its GPU's energy: utilisation over the sum, equal when none reports any."""
    utils = [p.gpu_util_pct if p.gpu_util_pct is not None and p.gpu_util_pct > 0 else 0.0 for p in processes]
    total = sum(utils)
    if total <= 0:
        return [1.0 / len(processes)] * len(processes) if processes else []
    return [u / total for u in utils]


class Books:
    """Running books of every GPU process; ``update`` once per tick (not thread-safe: one owner)."""

    def __init__(self, usd_per_kwh: float) -> None:
        if not math.isfinite(usd_per_kwh) or usd_per_kwh < 0:
            raise ValueError(f"electricity price must be a non-negative number, got {usd_per_kwh!r}")
        self.usd_per_kwh = float(usd_per_kwh)
        self._open: dict[tuple, _Acc] = {}
        self._prev_t: float | None = None
        self._prev_gpus: dict[int, object] = {}
        self.gpu_energy_j: dict[int, float] = {}  # every GPU's energy since the first tick (attributed or not)
        # The sampler refreshes its process snapshot every few ticks and hands the same tuple between: what a
        # snapshot opens, and each GPU's (account, share, utilisation), are worked out once per snapshot.
        self._snapshot: tuple | None = None
        self._accounts: list[_Acc] = []
        self._on_gpu: dict[int, list[tuple[_Acc, float, float | None]]] = {}

    @staticmethod
    def _key(p) -> tuple:
        return (p.pid, p.started_s, p.gpu_index)

    def update(self, time_s: float, gpus: Iterable, processes: Sequence) -> list[ProcessBooks]:
        """Account one tick; returns the books of processes that ended with it.

        Args:
            time_s: the sample's time (seconds, monotonic).
            gpus: the tick's ``GpuSample`` readings.
            processes: the latest ``ProcessSample`` snapshot (a process listed on several GPUs once per GPU).
        """
        gpus = {g.index: g for g in gpus}
        dt = 0.0 if self._prev_t is None else max(0.0, time_s - self._prev_t)
        ended: list = []
        if isinstance(processes, tuple) and processes is self._snapshot:
            # the snapshot of the last tick: every account it opened is open, none has ended, none is new
            for acc in self._accounts:
                acc.last_seen_s = time_s
        else:
            ended = self._open_accounts(time_s, processes)
        if dt > 0:
            for index, now in gpus.items():
                prev = self._prev_gpus.get(index)
                energy = gpu_energy_j(prev, now, dt) if prev is not None else 0.0
                self.gpu_energy_j[index] = self.gpu_energy_j.get(index, 0.0) + energy
                for acc, share, util in self._on_gpu.get(index, ()):
                    acc.gpu_s += dt
                    acc.energy_j += energy * share
                    if util is not None:
                        acc.util_weighted += util * dt
                        acc.util_s += dt
        self._prev_t = time_s
        self._prev_gpus = gpus
        return [self._final(self._open.pop(k)) for k in ended]

    def _open_accounts(self, time_s: float, processes: Sequence) -> list[tuple]:
        """A new process snapshot: open an account for each process not seen before, note each one's name, GPUs
        and peak memory, work out each GPU's processes and their shares; returns the keys of the accounts the
        snapshot no longer lists (ended)."""
        by_gpu: dict[int, list] = {}
        for p in processes:
            by_gpu.setdefault(p.gpu_index, []).append(p)
        seen = set()
        for p in processes:
            key = self._key(p)
            seen.add(key)
            acc = self._open.get(key)
            if acc is None:
                acc = self._open[key] = _Acc(p.pid, p.name, p.started_s, time_s, time_s)
            acc.last_seen_s = time_s
            acc.name = acc.name or p.name
            acc.gpus.add(p.gpu_index)
            if p.gpu_mem_bytes is not None:
                acc.peak = max(acc.peak or 0, int(p.gpu_mem_bytes))
        self._on_gpu = {index: [(self._open[self._key(p)], share, p.gpu_util_pct) for p, share in zip(on, shares(on))]
                        for index, on in by_gpu.items()}
        self._accounts = [self._open[key] for key in seen]
        self._snapshot = processes if isinstance(processes, tuple) else None  # a list may change in place
        return [k for k in self._open if k not in seen]

    def _books(self, a: _Acc, ended: bool = False) -> ProcessBooks:
        return ProcessBooks(
            pid=a.pid, name=a.name, started_s=a.started_s, gpus=tuple(sorted(a.gpus)), first_seen_s=a.first_seen_s,
            last_seen_s=a.last_seen_s, gpu_hours=a.gpu_s / 3600.0, energy_j=a.energy_j,
            cost_usd=a.energy_j / J_PER_KWH * self.usd_per_kwh, peak_gpu_mem_bytes=a.peak,
            mean_util_pct=a.util_weighted / a.util_s if a.util_s > 0 else None, ended=ended)

    def _final(self, a: _Acc) -> ProcessBooks:
        return self._books(a, ended=True)

    def current(self) -> dict[tuple[int, int], ProcessBooks]:
        """The books of every running process on each GPU it uses, by ``(pid, gpu index)``."""
        return {(a.pid, min(a.gpus)): self._books(a) for a in self._open.values()}

    def of(self, pid: int, started_s: float | None = None) -> ProcessBooks | None:
        """The running books of one process over all its GPUs (``merge``), or None; ``started_s`` (when
        known) tells a process from another that reused its PID."""
        found = [self._books(a) for a in self._open.values()
                 if a.pid == pid and (started_s is None or a.started_s == started_s)]
        return merge(found) if found else None

    def close(self) -> list[ProcessBooks]:
        """End every open account (the monitor stops) and return their final books; each account is closed
        once (a second call returns nothing)."""
        out = [self._final(a) for a in self._open.values()]
        self._open.clear()
        self._snapshot, self._accounts, self._on_gpu = None, [], {}  # the next tick opens its accounts anew
        return out


def process_key(b: ProcessBooks) -> tuple[int, float | None]:
    """What tells one process from another: its PID and start time (a PID can be reused)."""
    return (b.pid, b.started_s)


def merge(books: Sequence[ProcessBooks]) -> ProcessBooks:
    """One process's books over all its GPUs: sums of hours, energy and cost, the largest peak, the
    GPU-hour-weighted mean utilisation."""
    first = books[0]
    weights = [(b.mean_util_pct, b.gpu_hours) for b in books if b.mean_util_pct is not None]
    hours = sum(w for _, w in weights)
    mean = sum(u * w for u, w in weights) / hours if hours > 0 else (weights[0][0] if weights else None)
    peaks = [b.peak_gpu_mem_bytes for b in books if b.peak_gpu_mem_bytes is not None]
    return ProcessBooks(pid=first.pid, name=next((b.name for b in books if b.name), None), started_s=first.started_s,
                        gpus=tuple(sorted({g for b in books for g in b.gpus})),
                        first_seen_s=min(b.first_seen_s for b in books), last_seen_s=max(b.last_seen_s for b in books),
                        gpu_hours=sum(b.gpu_hours for b in books), energy_j=sum(b.energy_j for b in books),
                        cost_usd=sum(b.cost_usd for b in books), peak_gpu_mem_bytes=max(peaks) if peaks else None,
                        mean_util_pct=mean, ended=all(b.ended for b in books))
