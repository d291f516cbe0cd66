"""Measurements close to the hardware's limit: one module per probe, each a plain generator.

Every probe is started the same way::

    from advisor.probes import CancelToken, open_probe, drive
    cancel = CancelToken()
    gen = open_probe("host-bandwidth", device="cpu", quick=True, cancel=cancel)
    for event in gen:            # Progress(fraction, message, point)
        ...                      # from another thread: cancel.cancel() -> ProbeCancelled within a second
    # or: result = drive(gen, on_progress=print)

The generator returns a :class:`ProbeResult` (``StopIteration.value``; :func:`drive` does this for you).
A probe that cannot run here returns a result with ``skipped`` set to a plain reason, never an exception.
``ProbeResult.to_dict()`` is the ``advisor.probe/1`` JSON document of the CLI contract. Progress events
may carry a curve ``point`` (``{"series", "x", "y"}``) for live plots of size sweeps.

To also record clocks/power during the run and store it in the history (what the CLI and the GUI do):
``advisor.probes.session.record(name, device=, quick=, cancel=)`` is the same kind of generator and
returns a ``RecordedRun(result, run_id, samples, fingerprint)``; ``session.calibration_from(results)``
gives the planner's ``Calibration`` (save it with ``advisor.store.calibration.save_calibration``).
History: ``advisor.store.probe_history.ProbeHistory`` (``list``, ``get``, ``compare``, ``delete``, ``clear``).

Importing this package imports no torch: a probe imports it when it runs.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field

from advisor.probes._types import CancelToken, KernelResult, ProbeCancelled, ProbeResult, ProbeSkipped, Progress

__all__ = ["PROBES", "CancelToken", "KernelResult", "Progress", "ProbeCancelled", "ProbeResult", "ProbeSkipped",
           "ProbeInfo", "drive", "open_probe", "probe_info"]


@dataclass(frozen=True)
class ProbeInfo:
    """What a probe measures, for menus and help text."""

    name: str
    module: str
    title: str
    devices: tuple[str, ...] = field(default=("cpu", "cuda"))


PROBES: Mapping[str, ProbeInfo] = {p.name: p for p in (
    ProbeInfo("host-bandwidth", "host_bandwidth", "Host memory bandwidth (copy, add, triad)", ("cpu",)),
    ProbeInfo("device-bandwidth", "device_bandwidth", "Device memory bandwidth with a size sweep"),
    ProbeInfo("transfer", "transfer", "Host-device transfer, pinned and pageable", ("cuda",)),
    ProbeInfo("matmul", "matmul", "Matmul throughput per precision"),
    ProbeInfo("capacity", "capacity", "Usable memory capacity"),
    ProbeInfo("disk", "disk", "Disk read throughput (one and several readers)", ("cpu",)),
    ProbeInfo("allreduce", "allreduce", "All-reduce bandwidth (gloo on CPU, NCCL on GPU)"),
    ProbeInfo("train-step", "train_step", "Training step of a small transformer: tokens/s, MFU"),
)}


def probe_info(name: str) -> ProbeInfo:
    """The registry entry of a probe.

    Raises:
        KeyError: unknown probe name.
    """
    return PROBES[name]


def open_probe(name: str, device: str = "cpu", quick: bool = False, cancel: CancelToken | None = None,
               **params) -> Generator[Progress, None, ProbeResult]:
    """Create the generator of probe ``name`` (nothing runs until it is iterated).

    Args:
        name: a key of :data:`PROBES`.
        device: ``"cpu"`` or ``"cuda:N"``.
        quick: smaller sizes and fewer repetitions (seconds instead of tens of seconds).
        cancel: token checked between repetitions; cancelling raises :class:`ProbeCancelled`.
        params: probe-specific keyword parameters (sizes, repetitions, dtype, ...).
    Raises:
        KeyError: unknown probe name.
    """
    info = PROBES[name]
    module = importlib.import_module(f"advisor.probes.{info.module}")
    return module.run(device=device, quick=quick, cancel=cancel or CancelToken(), **params)


def drive(gen: Generator[Progress, None, ProbeResult],
          on_progress: Callable[[Progress], None] | None = None) -> ProbeResult:
    """Run a probe generator to the end and return its result."""
    while True:
        try:
            event = next(gen)
        except StopIteration as stop:
            return stop.value
        if on_progress is not None:
            on_progress(event)
