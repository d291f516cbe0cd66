"""Run a probe the way the CLI and the GUI do: sample clocks/power meanwhile, then store it in history.

    from advisor.probes.session import record
    gen = record("matmul", device="cuda:0", quick=True, cancel=token)
    for progress in gen: ...
    run = StopIteration value -> RecordedRun(result, run_id, samples, fingerprint)

``calibration_from`` turns results into the planner's :class:`~advisor.store.calibration.Calibration`.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from advisor.probes import CancelToken, ProbeResult, Progress, open_probe
from advisor.probes.sampling import ProbeSampler


@dataclass(frozen=True)
class RecordedRun:
    """A probe result with what was recorded around it.

    Attributes:
        result: the probe's result.
        run_id: its row in the probe history, or None when not stored.
        samples: clock/power/temperature readings taken during the run.
        fingerprint: the machine description stored with it.
        store_error: why the run could not be stored (one line: locked, read-only, full disk), else None.
    """

    result: ProbeResult
    run_id: int | None
    samples: Sequence[Mapping[str, Any]]
    fingerprint: Mapping[str, Any]
    store_error: str | None = None


def record(name: str, device: str = "cpu", quick: bool = False, cancel: CancelToken | None = None,
           store: bool = True, sample_interval_s: float = 0.5, **params
           ) -> Generator[Progress, None, RecordedRun]:
    """Run probe ``name`` with a sampler, then store the result (skips are stored too, with their reason).

    A cancelled probe raises ProbeCancelled and stores nothing.
    """
    from advisor.probes._device_info import machine_fingerprint

    cancel = cancel or CancelToken()
    with ProbeSampler(device, interval_s=sample_interval_s) as sampler:
        result = yield from open_probe(name, device=device, quick=quick, cancel=cancel, **params)
    fingerprint = machine_fingerprint(_gpu_names())
    run_id = store_error = None
    if store:
        from advisor.store.probe_history import HistoryError, ProbeHistory

        try:
            with ProbeHistory() as history:
                run_id = history.add(result.to_dict(), fingerprint, sampler.samples)
        except HistoryError as exc:
            store_error = str(exc)
    return RecordedRun(result=result, run_id=run_id, samples=tuple(sampler.samples), fingerprint=fingerprint,
                       store_error=store_error)


def _gpu_names() -> tuple[str, ...]:
    import sys

    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_available():
            return tuple(torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count()))
    except Exception:  # noqa: BLE001 - names only label the fingerprint
        pass
    return ()


def calibration_from(results: Iterable[ProbeResult], previous=None):
    """The calibration these results support, or None when none of them offers a value.

    MFU comes from a train-step result, eta_mem from a device-bandwidth result. A value not measured now
    is kept from ``previous`` when that was measured on the same device.
    """
    from advisor.store.calibration import Calibration

    mfu = eta = bus = None
    device = acc = when = None
    sources = []
    for r in results:
        offer = r.calibration or {}
        if r.skipped or not offer:
            continue
        if offer.get("mfu") is not None:
            mfu = float(offer["mfu"])
        if offer.get("eta_mem") is not None:
            eta = float(offer["eta_mem"])
        if offer.get("allreduce_bus_bps") is not None:
            bus = float(offer["allreduce_bus_bps"])
        device = device or r.device
        acc = acc or offer.get("accelerator_id")
        when = max(when or "", r.started_at)
        sources.append(f"probe:{r.probe}")
    if mfu is None and eta is None and bus is None:
        return None
    if previous is not None and previous.device == device:
        mfu = previous.mfu if mfu is None else mfu
        eta = previous.eta_mem if eta is None else eta
        bus = previous.allreduce_bus_bps if bus is None else bus
    return Calibration(mfu=mfu, eta_mem=eta, device=device, accelerator_id=acc, measured_at=when,
                       source="+".join(sources), allreduce_bus_bps=bus)
