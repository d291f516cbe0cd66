"""This machine for the planner: its GPUs as owned hardware and its host figures, read once by the caller.

The planning service never detects: the CLI (``advisor plan``) and the app call :func:`local_machine` (or
:func:`from_profile` with a profile they have) and pass ``owned`` and ``host`` to ``planner.plan``.
``--fake-gpu`` scenarios go through ``hw.detect.select_backend`` like every other command.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from advisor.estimate.local import HostFigures
from advisor.planner.owned import OwnedHardware, owned_from_profile

log = logging.getLogger(__name__)
HOST_BANDWIDTH_PROBE = "host-bandwidth"
TRAIN_STEP_PROBE = "train-step"  # advisor.probes.train_step.NAME


@dataclass(frozen=True)
class LocalMachine:
    """What the planner is given about the machine it runs on."""

    owned: tuple[OwnedHardware, ...]
    host: HostFigures
    simulated: bool = False
    profile: object | None = None  # the ``hw.records.MachineProfile`` it was read from


def measured_host_bandwidth(hostname: str, cpu_model: str) -> tuple[float | None, str]:
    """The newest host-bandwidth probe (triad) of this machine in the probe history, bytes/s, and its origin.

    Returns:
        (None, "") when the probe has not run here (or the history cannot be read).
    """
    from advisor.store.probe_history import ProbeHistory, history_file

    if not history_file().exists():
        return None, ""
    try:
        with ProbeHistory() as history:
            for entry in history.list(probe=HOST_BANDWIDTH_PROBE, limit=50):
                fp = entry.fingerprint
                if fp.get("hostname") not in (None, hostname) or fp.get("cpu_model") not in (None, cpu_model):
                    continue
                best = entry.best().get("triad")
                if best and best[1] == "GB/s" and best[0] > 0:
                    return best[0] * 1e9, (f"measured: host-bandwidth probe triad {best[0]:.1f} GB/s "
                                           f"({entry.started_at[:10]})")
    except Exception as exc:  # noqa: BLE001 - a broken history leaves the prior in place, said in the log
        log.warning("probe history not read for the host bandwidth: %s", exc)
    return None, ""


def measured_cpu_peak(hostname: str, cpu_model: str) -> tuple[float | None, str]:
    """The fp32 matmul rate the newest CPU training-step probe of this machine measured its utilisation against
    (FLOP/s), so the plan applies that utilisation to the same peak; (None, "") when it has not run here."""
    from advisor.store.probe_history import ProbeHistory, history_file

    if not history_file().exists():
        return None, ""
    try:
        with ProbeHistory() as history:
            for entry in history.list(probe=TRAIN_STEP_PROBE, limit=50):
                fp = entry.fingerprint
                if entry.device != "cpu" or fp.get("hostname") not in (None, hostname) \
                        or fp.get("cpu_model") not in (None, cpu_model):
                    continue
                peak = entry.result.get("peak") or {}
                tflops = peak.get("TFLOP/s")
                if isinstance(tflops, (int, float)) and not isinstance(tflops, bool) and 0 < tflops < 1e3:
                    return tflops * 1e12, (f"measured: fp32 matmul {tflops:.3g} TFLOP/s at the training-step "
                                           f"probe's shapes ({entry.started_at[:10]})")
    except Exception as exc:  # noqa: BLE001 - a broken history leaves the clock figure in place, said in the log
        log.warning("probe history not read for the CPU peak: %s", exc)
    return None, ""


def host_figures(host_info) -> HostFigures:
    """``HostFigures`` of a ``hw.records.HostInfo`` with the measured host bandwidth and CPU peak when there are."""
    cpu = host_info.cpu
    bw, origin = measured_host_bandwidth(host_info.hostname, cpu.model)
    peak, peak_origin = measured_cpu_peak(host_info.hostname, cpu.model)
    return HostFigures(memory_total_bytes=int(host_info.memory.total_bytes),
                       physical_cores=int(cpu.physical_cores or cpu.logical_cores or 1),
                       max_freq_hz=cpu.max_freq_mhz * 1e6 if cpu.max_freq_mhz else None,
                       bandwidth_bps=bw, bandwidth_origin=origin, fp32_flops=peak, fp32_origin=peak_origin)


def from_profile(profile) -> LocalMachine:
    """The planner's view of a ``MachineProfile`` (``hw.detect.detect_machine``)."""
    host = host_figures(profile.host)
    return LocalMachine(owned=tuple(owned_from_profile(profile, host)), host=host, simulated=profile.simulated,
                        profile=profile)


def local_machine(fake: str | None = None, catalog=None) -> LocalMachine:
    """Detect this machine (GPUs matched to the catalog or derived, host) without the framework queries.

    Args:
        fake: a ``--fake-gpu`` scenario (``ADVISOR_FAKE_GPU`` when None).
    Raises:
        hw.detect.UnknownScenario: an unknown scenario name.
    """
    from advisor.hw.detect import detect_machine, select_backend, select_host_backend

    gpu = select_backend(fake)
    try:
        profile = detect_machine(gpu, select_host_backend(), frameworks=False, catalog=catalog)
    finally:
        gpu.close()
    return from_profile(profile)
