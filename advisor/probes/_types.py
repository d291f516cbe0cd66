"""Records shared by every probe: progress events, kernel figures, the result, cancellation."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

RESULT_SCHEMA = "advisor.probe/1"


class ProbeSkipped(Exception):
    """Raised inside a probe when it cannot run here; the message is the plain reason shown to the user."""


class ProbeCancelled(Exception):
    """Raised out of a probe generator when its cancel token was set; everything allocated was freed."""


class CancelToken:
    """A thread-safe flag a probe checks between repetitions (set it from any thread)."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        """Ask the probe to stop; it raises :class:`ProbeCancelled` within about a second."""
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def check(self) -> None:
        """Raise :class:`ProbeCancelled` when cancellation was asked for."""
        if self._event.is_set():
            raise ProbeCancelled("probe cancelled")

    def wait(self, timeout_s: float) -> bool:
        """Sleep up to ``timeout_s``; True when cancelled meanwhile."""
        return self._event.wait(timeout_s)


@dataclass(frozen=True)
class Progress:
    """One progress event.

    Attributes:
        fraction: 0..1 of the probe's work done.
        message: what is being measured now.
        point: an optional new curve point for live plots, e.g. ``{"series": "triad", "x": bytes, "y": gbps}``.
    """

    fraction: float
    message: str
    point: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class KernelResult:
    """Rates of one kernel over the timed repetitions (higher is better).

    Attributes:
        best: the headline rate: for timed kernels the best of the per-trial medians (``_common.headline_time``;
            the single fastest call is ``extra["fastest"]``), robust to a noisy machine.
        median: the median rate.
        unit: ``"GB/s"`` (1e9 bytes/s), ``"TFLOP/s"`` (1e12), ``"GB"`` (1e9 bytes), ...
        worst: the lowest rate seen.
        repetitions: how many timed repetitions.
        fraction_of_peak: best / peak where a peak is known.
        extra: kernel-specific figures (sizes, counted bytes).
    """

    best: float
    median: float
    unit: str
    worst: float | None = None
    repetitions: int = 1
    fraction_of_peak: float | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def spread_pct(self) -> float | None:
        """(best - worst) / best in percent."""
        if self.worst is None or not self.best:
            return None
        return 100.0 * (self.best - self.worst) / self.best

    def to_dict(self) -> dict:
        doc = {"best": self.best, "median": self.median, "unit": self.unit, "worst": self.worst,
               "repetitions": self.repetitions, "spread_pct": self.spread_pct}
        if self.fraction_of_peak is not None:
            doc["fraction_of_peak"] = self.fraction_of_peak
        doc.update(dict(self.extra))
        return doc


@dataclass(frozen=True)
class ProbeResult:
    """What a probe returns. ``to_dict()`` gives the ``advisor.probe/1`` JSON document.

    Attributes:
        probe: the probe's name (``"host-bandwidth"``, ...).
        device: the device measured (``"cpu"``, ``"cuda:0"``).
        results: kernel name -> figures; empty when skipped.
        peak: the reference peak with its origin, e.g. ``{"GB/s": 1008.0, "origin": "nvml"}``, or None.
        params: the parameters the probe ran with (sizes, repetitions, dtype, threads).
        details: other figures; where there is a curve, ``details["sweep"]`` is always
            ``{series: [[x, y], ...]}`` (y in the kernel's unit) and ``details["sweep_x"]`` names x.
        skipped: the plain reason the probe could not run, or None.
        calibration: values this run offers to the planner (``{"mfu": ..}`` / ``{"eta_mem": ..}``), or None.
        notes: short remarks for the reader (method caveats).
        started_at: ISO time the probe started (UTC).
        duration_s: wall time of the probe.
    """

    probe: str
    device: str
    results: Mapping[str, KernelResult] = field(default_factory=dict)
    peak: Mapping[str, Any] | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    details: Mapping[str, Any] = field(default_factory=dict)
    skipped: str | None = None
    calibration: Mapping[str, Any] | None = None
    notes: tuple[str, ...] = ()
    started_at: str = ""
    duration_s: float = 0.0

    def to_dict(self) -> dict:
        doc: dict[str, Any] = {"schema": RESULT_SCHEMA, "probe": self.probe, "device": self.device}
        if self.skipped is not None:
            doc["skipped"] = self.skipped
        doc["results"] = {k: v.to_dict() for k, v in self.results.items()}
        doc["peak"] = dict(self.peak) if self.peak is not None else None
        doc["params"] = dict(self.params)
        doc["details"] = dict(self.details)
        doc["calibration"] = dict(self.calibration) if self.calibration is not None else None
        doc["notes"] = list(self.notes)
        doc["started_at"] = self.started_at
        doc["duration_s"] = self.duration_s
        return doc

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> ProbeResult:
        """Rebuild a result from ``to_dict()`` output (history entries); figures that cannot be true (stored by
        an older version) are refused on the way (``refuse_impossible``)."""
        known = {"best", "median", "unit", "worst", "repetitions", "spread_pct", "fraction_of_peak"}
        results = {}
        for name, k in (doc.get("results") or {}).items():
            results[name] = KernelResult(best=k["best"], median=k["median"], unit=k["unit"], worst=k.get("worst"),
                                         repetitions=k.get("repetitions", 1),
                                         fraction_of_peak=k.get("fraction_of_peak"),
                                         extra={a: b for a, b in k.items() if a not in known})
        return refuse_impossible(cls(
            probe=doc["probe"], device=doc["device"], results=results, peak=doc.get("peak"),
            params=doc.get("params") or {}, details=doc.get("details") or {}, skipped=doc.get("skipped"),
            calibration=doc.get("calibration"), notes=tuple(doc.get("notes") or ()),
            started_at=doc.get("started_at", ""), duration_s=doc.get("duration_s", 0.0)))


# ---------------------------------------------------------------------------------- figures that cannot be true
# The calibration values each kernel gives: a refused kernel takes its calibration value with it.
_CALIBRATION_FROM = {"mfu": ("mfu",), "eta_mem": ("read", "triad", "copy")}


def impossible_reason(name: str, k: KernelResult) -> str | None:
    """Why a kernel's figures cannot be true (None when they can): a utilisation (``unit`` fraction) above 1,
    or a rate above the device's physical peak (``fraction_of_peak`` above 1)."""
    if k.unit == "fraction" and (k.best > 1.0 or k.median > 1.0):
        return (f"{name} {100 * k.best:.0f} % not shown: a utilisation above 100 % cannot be true (the peak it is "
                "measured against was taken on a busier machine or at another size)")
    if k.fraction_of_peak is not None and k.fraction_of_peak > 1.0:
        return (f"{name} {k.best:,.4g} {k.unit} refused: {100 * k.fraction_of_peak:.0f} % of the device's physical "
                "peak (a timing artefact, a cache-resident array or a wrong peak)")
    return None


def refuse_impossible(result: ProbeResult) -> ProbeResult:
    """The result without the figures that cannot be true (``impossible_reason``), each replaced by a note;
    a calibration value that came from a refused kernel is dropped. Every probe's result and every stored
    one read back passes through here, so no utilisation above 100 % reaches an output."""
    refused = {name: why for name, k in result.results.items() if (why := impossible_reason(name, k))}
    if not refused:
        return result
    calibration = dict(result.calibration) if result.calibration is not None else None
    if calibration is not None:
        for key, kernels in _CALIBRATION_FROM.items():
            if key in calibration and any(k in refused for k in kernels):
                calibration.pop(key)
        if not any(k in calibration for k in _CALIBRATION_FROM):
            calibration = None
    return replace(result, results={n: k for n, k in result.results.items() if n not in refused},
                   calibration=calibration, notes=tuple(result.notes) + tuple(refused.values()))
