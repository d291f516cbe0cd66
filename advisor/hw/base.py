"""The backend interfaces every GPU and host backend implements (NVML, fake, null; psutil, fake).

A backend never raises from ``sample`` or ``processes``: what cannot be read is ``None``, a device
that disappears is reported with ``state == "lost"``. ``tests/hw/test_backend_contract.py`` runs one
suite against every implementation.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from advisor.hw.records import BackendStatus, GpuInfo, GpuProcess, GpuSample, HostInfo, HostProcess, HostSample


@runtime_checkable
class GpuBackend(Protocol):
    """A source of GPU facts and readings.

    Attributes:
        name: ``"nvml"``, ``"amdsmi"``, ``"intel"``, ``"apple"``, ``"fake"`` or ``"none"``
            (the ``gpu_backend.name`` of ``advisor detect --json``).
        simulated: True for the fake backend; every output must then say the hardware is simulated.
    """

    name: str
    simulated: bool

    def status(self) -> BackendStatus:
        """Backend name, a one-line status, and driver/CUDA/NVML versions where known."""

    def device_count(self) -> int:
        """Number of GPUs found when the backend was opened (a lost GPU still counts)."""

    def gpu_info(self, index: int) -> GpuInfo:
        """Static facts about GPU ``index`` (0 <= index < device_count())."""

    def runtime_status(self, index: int) -> str | None:
        """The PCI runtime power state ("active", "suspended", ...) read WITHOUT touching the GPU, or None."""

    def pci_name(self, index: int) -> str | None:
        """The device's name from the PCI ids in sysfs and the system's PCI ID database, read WITHOUT a driver
        call (how a sleeping GPU is named and matched to the catalog), or None when unknown."""

    def sample(self, index: int) -> GpuSample:
        """Read GPU ``index`` now; never raises (a lost GPU gives ``state == "lost"``, all figures None)."""

    def processes(self, index: int) -> tuple[GpuProcess, ...]:
        """Processes holding memory on GPU ``index``; empty when unknown; never raises."""

    def close(self) -> None:
        """Release the library (idempotent)."""


@runtime_checkable
class HostBackend(Protocol):
    """A source of host facts and readings (psutil in production, a fake in tests)."""

    simulated: bool

    def info(self) -> HostInfo:
        """Static description of the host."""

    def sample(self) -> HostSample:
        """Read CPU, memory, swap, disk and network now; rates are since the previous call."""

    def process_details(self, pid: int) -> HostProcess:
        """What the host knows of a PID (name, user, CPU %, memory, command line, start, own); an empty
        ``HostProcess`` when unknown (gone, no access, other namespace)."""

    def signal_process(self, pid: int, kill: bool = False) -> str | None:
        """Terminate (or kill) one of the current user's processes; None when sent, else why not."""

    def process_alive(self, pid: int) -> bool:
        """Whether ``pid`` still runs."""
