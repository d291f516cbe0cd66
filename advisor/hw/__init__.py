"""Hardware backends and machine detection: the only package that touches hardware libraries.

Importing ``advisor.hw`` imports no hardware library; each one is imported by exactly one module,
and only when its backend is opened:

- ``advisor.hw.nvml``      NVIDIA GPUs through nvidia-ml-py (module ``pynvml``): ``NvmlBackend``
- ``advisor.hw.amd``       AMD GPUs through ROCm's ``amdsmi`` (the only importer): ``AmdSmiBackend``
- ``advisor.hw.intel``     Intel GPUs through sysfs/hwmon and xpu-smi: ``IntelSysfsBackend``
- ``advisor.hw.apple``     Apple Silicon GPUs through ``ioreg`` (no root): ``AppleGpuBackend``
- ``advisor.hw.host``      the host through psutil: ``PsutilHostBackend``
- ``advisor.hw.torchdev``  torch device queries (CUDA, ROCm, MPS, XPU): ``torch_info()``
- ``advisor.hw.jaxdev``    TPUs through JAX: ``jax_info()`` ("not installed" when absent)
- ``advisor.hw.fake``      ``FakeGpuBackend(scenario)`` and ``FakeHostBackend``; ``SCENARIOS`` names them:
                           2x4090, 8xh100-sxm, laptop-4060 (suspended dGPU), no-driver, gpu-lost, not-supported,
                           16xv100, 2xmi300x, arc-b580, m3-max
- ``advisor.hw.null``      ``NullGpuBackend(reason)``: no GPU or no driver; reports nothing, never raises
- ``advisor.hw.detect``    picks the backend in ONE place and builds the machine profile

Public API (stable; the GUI and the CLI use only this):

    from advisor.hw import select_backend, detect_machine, profile_to_json
    gpu = select_backend(fake=None)        # --fake-gpu value or None; reads ADVISOR_FAKE_GPU when None.
                                           # Returns a GpuBackend (NVML, fake or null); never raises except
                                           # UnknownScenario for a bad fake name.
    host = select_host_backend(gpu)        # PsutilHostBackend (simulated processes with a fake GPU)
    profile = detect_machine(gpu, host)    # MachineProfile (frozen); profile.simulated says "fake hardware"
    doc = profile_to_json(profile)         # the ``advisor.detect/1`` JSON document (a dict)
    gpu.close()

Simulation: ``advisor.hw.fake.SCENARIOS`` lists the scenario names; ``FakeGpuBackend(name, clock=...)`` and
``FakeHostBackend(clock=...)`` give deterministic readings for tests and screenshots.

Records (``advisor.hw.records``, frozen dataclasses, units in the field names, None = not available):
``MachineProfile(host: HostInfo, gpus: tuple[GpuProfile], gpu_backend: BackendStatus, torch, jax)``,
``GpuProfile(info: GpuInfo, catalog_id, catalog_name, catalog_mem_bandwidth_bps, torch_device)``
with ``.nvml_mem_bandwidth_bps``, ``GpuInfo`` (static facts), ``GpuSample`` (one reading: util_pct,
mem_used_bytes, temp_c, power_w, sm_clock_mhz, pcie_rx_bps, xid, ... and ``state`` ok | lost | suspended |
not-responding; ``clean_sample`` turns driver sentinels into None), ``GpuProcess`` (pid, gpu_mem_bytes,
gpu_util_pct), ``HostProcess`` (name, user, cmdline, started_s, own), ``ProcessSample`` (both joined), ``HostSample``
(cpu_util_pct, per_core_util_pct, mem_used_bytes, swap, disk and network rates), ``BackendStatus``.

Backend interfaces (``advisor.hw.base``): ``GpuBackend`` (status, device_count, gpu_info, runtime_status,
sample, processes, close) and ``HostBackend`` (info, sample, process_details, signal_process, process_alive).

"""

from advisor.hw.base import GpuBackend, HostBackend
from advisor.hw.detect import (
    UnknownScenario,
    detect_machine,
    match_catalog_id,
    profile_to_json,
    select_backend,
    select_host_backend,
)
from advisor.hw.records import (
    GPU_LOST,
    GPU_OK,
    GPU_SUSPENDED,
    BackendStatus,
    CpuInfo,
    DiskInfo,
    FrameworkDevice,
    FrameworkInfo,
    GpuInfo,
    GpuProcess,
    GpuProfile,
    GpuSample,
    HostInfo,
    HostSample,
    MachineProfile,
    MemoryInfo,
    ProcessSample,
    mem_bandwidth_bps,
)

__all__ = [
    "GPU_LOST", "GPU_OK", "GPU_SUSPENDED", "BackendStatus", "CpuInfo", "DiskInfo", "FrameworkDevice",
    "FrameworkInfo", "GpuBackend", "GpuInfo", "GpuProcess", "GpuProfile", "GpuSample", "HostBackend", "HostInfo",
    "HostSample", "MachineProfile", "MemoryInfo", "ProcessSample", "UnknownScenario", "detect_machine",
    "match_catalog_id", "mem_bandwidth_bps", "profile_to_json", "select_backend", "select_host_backend",
]
