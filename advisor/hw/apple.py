"""Apple Silicon GPUs through sources that need no root: IOKit's accelerator statistics via ``ioreg``.

``ioreg -r -d 1 -w 0 -c IOAccelerator`` lists the GPU (``"model" = "Apple M3 Max"``,
``"gpu-core-count" = 40``) with a ``"PerformanceStatistics"`` dictionary that any user can read:
``"Device Utilization %"`` and ``"In use system memory"`` (bytes of unified memory the GPU holds).
``sysctl -n hw.memsize`` gives the unified memory size. GPU power and temperature are only published
through ``powermetrics``, which needs root, so this backend reports them as not available and its
status says so. macOS gives no per-process GPU memory either.
"""

from __future__ import annotations

import platform
import re
import shutil
from collections.abc import Callable

from advisor.hw.records import BackendStatus, GpuInfo, GpuProcess, GpuSample, clean_sample
from advisor.subproc import bounded_text

TIMEOUT_S = 3.0
IOREG = ["ioreg", "-r", "-d", "1", "-w", "0", "-c", "IOAccelerator"]
NO_ROOT_NOTE = "power and temperature need root (sudo powermetrics): not available"


class AppleUnavailable(Exception):
    """Not an Apple Silicon Mac, or ioreg gave no GPU; the message is the one-line reason."""


def _run(argv: list[str]) -> str | None:
    if shutil.which(argv[0]) is None:
        return None
    return bounded_text(argv, TIMEOUT_S)


def parse_ioreg(text: str | None) -> list[dict]:
    """The accelerators in ``ioreg`` output: ``{"model", "cores", "util_pct", "mem_used_bytes"}`` each."""
    out = []
    for block in re.split(r"\n(?=\+-o )", text or ""):
        model = re.search(r'"model" = "([^"]+)"', block)
        stats = re.search(r'"PerformanceStatistics" = \{([^}]*)\}', block)
        if not model and not stats:
            continue
        fields = dict(re.findall(r'"([^"]+)"=(\d+)', stats.group(1))) if stats else {}
        cores = re.search(r'"gpu-core-count" = (\d+)', block)
        out.append({"model": model.group(1) if model else "Apple GPU", "cores": int(cores.group(1)) if cores else None,
                    "util_pct": float(fields["Device Utilization %"]) if "Device Utilization %" in fields else None,
                    "mem_used_bytes": int(fields["In use system memory"]) if "In use system memory" in fields else None})
    return out


class AppleGpuBackend:
    """GPU backend over ``ioreg``. Create it with ``AppleGpuBackend.open()``.

    Args:
        run: runs a command and returns stdout or None (a recording in tests).
    """

    name = "apple"
    simulated = False

    def __init__(self, run: Callable[[list[str]], str | None] = _run) -> None:
        self._run = run
        self._gpus = parse_ioreg(run(IOREG))
        size = (run(["sysctl", "-n", "hw.memsize"]) or "").strip()
        self._mem_total = int(size) if size.isascii() and size.isdigit() else None

    @classmethod
    def open(cls, run: Callable[[list[str]], str | None] = _run, *, system: str | None = None,
             machine: str | None = None) -> AppleGpuBackend:
        """Raises AppleUnavailable off Apple Silicon or when ioreg lists no accelerator."""
        system = platform.system() if system is None else system
        machine = platform.machine() if machine is None else machine
        if system != "Darwin" or machine != "arm64":
            raise AppleUnavailable("not an Apple Silicon Mac")
        backend = cls(run)
        if not backend._gpus:
            raise AppleUnavailable("ioreg lists no Apple GPU")
        return backend

    def status(self) -> BackendStatus:
        return BackendStatus(name=self.name, status=f"Apple GPU via IOKit: {len(self._gpus)} GPU(s); {NO_ROOT_NOTE}")

    def device_count(self) -> int:
        return len(self._gpus)

    def runtime_status(self, index: int) -> str | None:
        return None  # an integrated GPU: no separate power state to respect

    def pci_name(self, index: int) -> str | None:
        return None  # no PCI device: the GPU is part of the SoC

    def gpu_info(self, index: int) -> GpuInfo:
        g = self._gpus[index]
        from advisor.hw.unified import apple_memory

        limit = (self._run(["sysctl", "-n", "iogpu.wired_limit_mb"]) or "").strip()
        by_backend = apple_memory(self._mem_total, int(limit) if limit.isascii() and limit.isdigit() else 0) if self._mem_total else ()
        return GpuInfo(index=index, name=g["model"], uuid="", memory_total_bytes=self._mem_total, vendor="apple",
                       backend_memory=by_backend)

    def sample(self, index: int) -> GpuSample:
        now = parse_ioreg(self._run(IOREG))
        g = now[index] if index < len(now) else {}
        return clean_sample(GpuSample(index=index, util_pct=g.get("util_pct"), mem_used_bytes=g.get("mem_used_bytes"),
                                      mem_total_bytes=self._mem_total))

    def processes(self, index: int) -> tuple[GpuProcess, ...]:
        return ()

    def close(self) -> None:
        pass
