"""Clocks, power and temperature recorded while a probe runs, so a slow result can be explained.

A GPU is read through ``advisor.hw`` (NVML); the host's clock from ``/proc/cpuinfo`` where there is one.
Readings that are not available are left out, never invented.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from advisor.probes._common import parse_device

MAX_SAMPLES = 3600


def _host_reader() -> Callable[[], dict]:
    def read() -> dict:
        mhz = []
        try:
            for line in Path("/proc/cpuinfo").read_text().splitlines():
                if line.startswith("cpu MHz"):
                    mhz.append(float(line.split(":", 1)[1]))
        except (OSError, ValueError):
            pass
        return {"cpu_clock_mhz": round(sum(mhz) / len(mhz), 1)} if mhz else {}
    return read


def _gpu_reader(device_index: int):
    """(read, close) for one GPU through the hardware layer, or None without NVML."""
    from advisor.probes._device_info import open_gpu_backend

    backend = open_gpu_backend()
    if backend is None:
        return None
    try:
        if device_index >= backend.device_count():
            backend.close()
            return None
    except Exception:  # noqa: BLE001
        return None

    def read() -> dict:
        s = backend.sample(device_index)
        out = {"sm_clock_mhz": s.sm_clock_mhz, "mem_clock_mhz": s.mem_clock_mhz, "power_w": s.power_w,
               "temp_c": s.temp_c, "util_pct": s.util_pct, "mem_used_bytes": s.mem_used_bytes,
               "throttle_reasons": list(s.throttle_reasons) if s.throttle_reasons else None}
        return {k: v for k, v in out.items() if v is not None}
    return read, backend.close


class ProbeSampler:
    """A background thread that reads clocks/power every ``interval_s`` while a probe runs.

    Use as a context manager; ``samples`` holds ``{"t_s": seconds since start, ...readings}`` dicts.
    """

    def __init__(self, device: str, interval_s: float = 0.5, reader: Callable[[], dict] | None = None,
                 nvml_index: int | None = None) -> None:
        self.interval_s = interval_s
        self.samples: list[dict] = []
        self._close: Callable[[], None] | None = None
        self._reader = reader
        self._device = device
        self._nvml_index = nvml_index
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _open_reader(self) -> Callable[[], dict] | None:
        if self._reader is not None:
            return self._reader
        try:
            kind, index = parse_device(self._device)
        except ValueError:
            return None
        if kind == "cpu":
            return _host_reader()
        got = _gpu_reader(self._nvml_index if self._nvml_index is not None else index)
        if got is None:
            return None
        read, self._close = got
        return read

    def __enter__(self) -> ProbeSampler:
        read = self._open_reader()
        if read is None:
            return self
        t0 = time.perf_counter()

        def loop() -> None:
            while not self._stop.is_set() and len(self.samples) < MAX_SAMPLES:
                try:
                    values = read()
                except Exception:  # noqa: BLE001 - a failed reading ends sampling, not the probe
                    return
                if values:
                    self.samples.append({"t_s": round(time.perf_counter() - t0, 3), **values})
                self._stop.wait(self.interval_s)

        self._thread = threading.Thread(target=loop, name="probe-sampler", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._close is not None:
            try:
                self._close()
            except Exception:  # noqa: BLE001
                pass
