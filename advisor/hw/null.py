"""The null GPU backend: no GPU, no driver or no library. Reports nothing and never raises."""

from __future__ import annotations

from advisor.hw.records import GPU_LOST, BackendStatus, GpuInfo, GpuProcess, GpuSample


class NullGpuBackend:
    """A GPU backend with zero devices and a status that says why.

    Args:
        reason: one line for ``gpu_backend.status`` ("NVIDIA driver not found", ...).
    """

    name = "none"
    simulated = False

    def __init__(self, reason: str = "no GPU backend available") -> None:
        self.reason = reason

    def status(self) -> BackendStatus:
        return BackendStatus(name=self.name, status=self.reason)

    def device_count(self) -> int:
        return 0

    def gpu_info(self, index: int) -> GpuInfo:
        return GpuInfo(index=index, name="unknown", uuid="", state=GPU_LOST)

    def runtime_status(self, index: int) -> str | None:
        return None

    def pci_name(self, index: int) -> str | None:
        return None

    def sample(self, index: int) -> GpuSample:
        return GpuSample(index=index, state=GPU_LOST)

    def processes(self, index: int) -> tuple[GpuProcess, ...]:
        return ()

    def close(self) -> None:
        pass
