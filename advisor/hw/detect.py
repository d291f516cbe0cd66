"""Pick the hardware backends (in this one place) and build the machine profile.

``select_backend`` honours ``--fake-gpu`` and ``ADVISOR_FAKE_GPU``, otherwise opens NVML, then AMD SMI
(only when an AMD display device is on the PCI bus), Intel sysfs, Apple IOKit, and falls back to the null
backend with the reasons. A GPU whose PCI runtime power state is "suspended" is never queried.
``detect_machine`` composes the GPU backend, the host backend and the framework queries into a
``MachineProfile``; ``profile_to_json`` writes the ``advisor.detect/1`` document of the CLI contract
(README, command line).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import replace

from advisor.hw.base import GpuBackend, HostBackend
from advisor.hw.match import accelerator_for_gpu, match_catalog_id  # noqa: F401  (re-exported)
from advisor.hw.records import GPU_SUSPENDED, FrameworkInfo, GpuInfo, GpuProfile, MachineProfile

FAKE_ENV = "ADVISOR_FAKE_GPU"
SCHEMA = "advisor.detect/1"


class UnknownScenario(ValueError):
    """The fake-GPU scenario name is not one of ``advisor.hw.fake.SCENARIOS``."""


def select_backend(fake: str | None = None, *, env: Mapping[str, str] | None = None) -> GpuBackend:
    """The GPU backend for this run: fake when asked, else NVML, else the null backend.

    Args:
        fake: a fake scenario name (the ``--fake-gpu`` value); when None, ``ADVISOR_FAKE_GPU`` is read.
        env: environment to read (``os.environ`` by default).
    Returns:
        An open backend; the caller closes it.
    Raises:
        UnknownScenario: the scenario name is unknown (the message lists the known ones).
    """
    env = os.environ if env is None else env
    name = fake if fake is not None else (env.get(FAKE_ENV) or None)
    if name is not None:
        from advisor.hw.fake import SCENARIOS, FakeGpuBackend

        if name not in SCENARIOS:
            raise UnknownScenario(f"unknown fake GPU scenario {name!r} (known: {', '.join(SCENARIOS)})")
        return FakeGpuBackend(name)
    from advisor.hw.null import NullGpuBackend

    reasons = []
    for opener in (_open_nvml, _open_amd, _open_intel, _open_apple):
        backend, reason = opener()
        if backend is not None:
            return backend
        reasons.append(reason)
    return NullGpuBackend("; ".join(r for r in reasons if r))


def _open_nvml():
    from advisor.hw.nvml import NvmlBackend, NvmlUnavailable

    try:
        return NvmlBackend.open(), ""
    except NvmlUnavailable as exc:
        return None, str(exc)


def _open_amd():
    from advisor.hw.amd import AmdSmiBackend, AmdUnavailable

    if not _has_pci_vendor("0x1002"):
        return None, ""  # no AMD display device: do not load ROCm's library at all
    try:
        return AmdSmiBackend.open(), ""
    except AmdUnavailable as exc:
        return None, str(exc)


def _open_intel():
    from advisor.hw.intel import IntelSysfsBackend, IntelUnavailable

    try:
        return IntelSysfsBackend.open(), ""
    except IntelUnavailable:
        return None, ""


def _open_apple():
    from advisor.hw.apple import AppleGpuBackend, AppleUnavailable

    try:
        return AppleGpuBackend.open(), ""
    except AppleUnavailable:
        return None, ""


def _has_pci_vendor(vendor: str, root: str = "/sys/bus/pci/devices") -> bool:
    from pathlib import Path

    try:
        return any((d / "vendor").read_text().strip().lower() == vendor and
                   (d / "class").read_text().strip().startswith("0x03") for d in Path(root).iterdir())
    except OSError:
        return False


def select_host_backend(gpu: GpuBackend | None = None) -> HostBackend:
    """The host backend (psutil); with a simulated ``gpu``, the simulated GPU processes are described (and
    "signalled") by the fake host, so no real process is ever touched for a fake one."""
    from advisor.hw.host import PsutilHostBackend

    host = PsutilHostBackend()
    if gpu is not None and gpu.simulated:
        from advisor.hw.fake import SimulatedProcessHost

        return SimulatedProcessHost(host)
    return host


def detect_machine(gpu: GpuBackend, host: HostBackend, *, frameworks: bool = True,
                   catalog=None) -> MachineProfile:
    """Describe the machine: host, GPUs matched to the catalog, torch and JAX devices.

    Args:
        gpu: the GPU backend from ``select_backend``.
        host: the host backend from ``select_host_backend``.
        frameworks: query torch and JAX (slow imports); skipped, with a status that says so, when False
            or when the GPUs are simulated (the real framework devices would not match them).
        catalog: a ``Catalog`` (``load_catalog()`` when None).
    Returns:
        A frozen ``MachineProfile``; never raises for missing hardware.
    """
    from advisor.catalog import load_catalog
    from advisor.hw.jaxdev import jax_info
    from advisor.hw.torchdev import torch_info

    catalog = load_catalog() if catalog is None else catalog
    if gpu.simulated:
        torch = FrameworkInfo("torch", False, "not queried: the GPUs are simulated")
        jax = FrameworkInfo("jax", False, "not queried: the GPUs are simulated")
    elif not frameworks:
        torch = FrameworkInfo("torch", False, "not queried")
        jax = FrameworkInfo("jax", False, "not queried")
    else:
        torch, jax = torch_info(), jax_info()
    torch_by_uuid = {_norm_uuid(d.uuid): f"{d.kind if d.kind != 'rocm' else 'cuda'}:{d.index}"
                     for d in torch.devices if d.uuid}
    gpus = []
    for i in range(gpu.device_count()):
        if gpu.runtime_status(i) == "suspended":
            # A driver query would wake it (and drain a laptop's battery): describe it from sysfs alone.
            pci = gpu.pci_name(i)
            info = GpuInfo(index=i, name=f"{pci or f'GPU {i}'} (asleep, not woken)", uuid="", state=GPU_SUSPENDED)
            acc = accelerator_for_gpu(replace(info, name=pci), catalog) if pci else None
            acc = acc if acc is not None and not acc.derived else None
            gpus.append(GpuProfile(info=info, catalog_id=acc.id if acc else None, catalog_name=acc.name if acc else None,
                                   catalog_mem_bandwidth_bps=acc.mem_bandwidth_bps if acc else None, accelerator=acc))
            continue
        info = gpu.gpu_info(i)
        acc = accelerator_for_gpu(info, catalog)
        in_catalog = acc is not None and not acc.derived
        gpus.append(GpuProfile(
            info=info, catalog_id=acc.id if in_catalog else None, catalog_name=acc.name if in_catalog else None,
            catalog_mem_bandwidth_bps=acc.mem_bandwidth_bps if in_catalog else None,
            torch_device=torch_by_uuid.get(_norm_uuid(info.uuid)), accelerator=acc,
        ))
    notes = ("simulated hardware: the GPUs come from a fake scenario",) if gpu.simulated else ()
    return MachineProfile(host=host.info(), gpus=tuple(gpus), gpu_backend=gpu.status(), torch=torch, jax=jax,
                          notes=notes)


def machine_id(host_ids: Sequence[str], gpu_uuids: Sequence[str], fallback: Sequence[str] = ()) -> str:
    """A key for this machine that survives renames: a hash of the OS machine id and MAC addresses
    (``HostInfo.host_ids``) with the GPU UUIDs. The GPU UUIDs tell apart containers built from one
    image (same /etc/machine-id) on different hosts; the raw machine id is never written out (it is
    hashed, as machine-id(5) asks of applications).

    Args:
        host_ids: stable host identifiers.
        gpu_uuids: the GPUs' UUIDs.
        fallback: used only when both are empty (host name, CPU model, memory size).
    Returns:
        ``"m-"`` and 16 hex digits.
    """
    parts = sorted(host_ids) + sorted(u for u in gpu_uuids if u)
    if not parts:
        parts = [str(x) for x in fallback]
    digest = hashlib.sha256(("advisor.machine/1\n" + "\n".join(parts)).encode("utf-8")).hexdigest()
    return "m-" + digest[:16]


def profile_machine_id(profile: MachineProfile) -> str:
    """``machine_id`` of a machine profile."""
    h = profile.host
    return machine_id(h.host_ids, [g.info.uuid for g in profile.gpus],
                      fallback=(h.hostname, h.cpu.model, h.memory.total_bytes))


def _accelerator_json(acc) -> dict | None:
    """The accelerator a GPU plans as (catalog or derived), with how each derived figure was derived."""
    if acc is None:
        return None
    from advisor.catalog.records import PEAK_PRECISIONS

    def tf(v):
        return None if v is None else v

    return {"id": acc.id, "name": acc.name, "kind": acc.kind, "derived": acc.derived,
            "memory_bytes": acc.memory_bytes, "mem_bandwidth_bytes_per_s": acc.mem_bandwidth_bps,
            "peak_flops": {p: tf(acc.peak_flops(p)) for p in PEAK_PRECISIONS},
            "tdp_w": acc.tdp_w, "derivation": dict(acc.derivation)}


def _norm_uuid(uuid: str | None) -> str:
    """NVML says "GPU-8f3c...", torch prints the bare UUID: compare the hex digits only."""
    if not uuid:
        return ""
    text = uuid.lower()
    for prefix in ("gpu-", "mig-"):
        if text.startswith(prefix):
            text = text[len(prefix):]
    return text.replace("-", "")


def _hz(mhz: float | None) -> float | None:
    return None if mhz is None else float(mhz) * 1e6


def profile_to_json(profile: MachineProfile) -> dict:
    """The ``advisor.detect/1`` document (README, command line): SI units, clocks in Hz, bandwidths in bytes/s."""
    h = profile.host
    b = profile.gpu_backend
    gpus = []
    for g in profile.gpus:
        i = g.info
        gpus.append({
            "index": i.index, "name": i.name, "vendor": i.vendor, "uuid": i.uuid, "memory_total_bytes": i.memory_total_bytes,
            "catalog_id": g.catalog_id, "catalog_name": g.catalog_name, "state": i.state,
            "pci_bus_id": i.pci_bus_id,
            "compute_capability": None if i.compute_capability is None else "%d.%d" % i.compute_capability,
            "power_limit_w": i.power_limit_w,
            "max_sm_clock_hz": _hz(i.max_sm_clock_mhz), "max_mem_clock_hz": _hz(i.max_mem_clock_mhz),
            "mem_bus_width_bits": i.mem_bus_width_bits,
            "mem_bandwidth_nvml_bytes_per_s": g.nvml_mem_bandwidth_bps,
            "mem_bandwidth_catalog_bytes_per_s": g.catalog_mem_bandwidth_bps,
            "pcie": {"gen_max": i.pcie_gen_max, "width_max": i.pcie_width_max,
                     "gen_current": i.pcie_gen_current, "width_current": i.pcie_width_current},
            "nvlink_links_active": i.nvlink_links_active, "mig_enabled": i.mig_enabled,
            "ecc_enabled": i.ecc_enabled, "fan_count": i.fan_count, "torch_device": g.torch_device,
            "cuda_cores": i.cuda_cores, "derived": g.derived, "accelerator": _accelerator_json(g.accelerator),
            "memory_by_backend": [{"backend": m.backend, "dedicated_bytes": m.dedicated_bytes,
                                   "shared_bytes": m.shared_bytes, "allocatable_bytes": m.allocatable_bytes,
                                   "source": m.source} for m in i.backend_memory],
        })

    def framework(f: FrameworkInfo) -> dict:
        return {"installed": f.installed, "version": f.version, "status": f.status, "devices": [
            {"kind": d.kind, "index": d.index, "name": d.name, "uuid": d.uuid,
             "memory_total_bytes": d.memory_total_bytes,
             "compute_capability": None if d.compute_capability is None else "%d.%d" % d.compute_capability}
            for d in f.devices]}

    return {
        "schema": SCHEMA,
        "simulated": profile.simulated,
        "machine_id": profile_machine_id(profile),
        "host": {"hostname": h.hostname, "os": h.os, "python": h.python},
        "cpu": {"model": h.cpu.model, "physical_cores": h.cpu.physical_cores, "logical_cores": h.cpu.logical_cores,
                "arch": h.cpu.arch, "min_freq_hz": _hz(h.cpu.min_freq_mhz), "max_freq_hz": _hz(h.cpu.max_freq_mhz)},
        "memory": {"total_bytes": h.memory.total_bytes, "available_bytes": h.memory.available_bytes,
                   "swap_total_bytes": h.memory.swap_total_bytes, "swap_used_bytes": h.memory.swap_used_bytes},
        "disks": [{"mountpoint": d.mountpoint, "device": d.device, "fstype": d.fstype,
                   "total_bytes": d.total_bytes, "free_bytes": d.free_bytes} for d in h.disks],
        "gpus": gpus,
        "gpu_backend": {"name": b.name, "status": b.status, "simulated": b.simulated, "scenario": b.scenario,
                        "driver_version": b.driver_version, "cuda_driver_version": b.cuda_driver_version,
                        "nvml_version": b.nvml_version},
        "torch": framework(profile.torch),
        "jax": framework(profile.jax),
        "notes": list(profile.notes),
    }
