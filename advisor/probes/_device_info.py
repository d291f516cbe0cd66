"""Facts about the device under test: peaks to compare with, and the machine fingerprint.

Driver figures (memory clock, bus width, PCIe link) come from ``advisor.hw`` (the only NVML user);
when it cannot answer, the probe says the peak is unknown rather than guessing.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import socket
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

#: PCIe line rate per lane per direction in bytes/s after encoding (Gen1/2: 8b/10b, Gen3+: 128b/130b)
PCIE_LANE_BPS = {1: 0.25e9, 2: 0.5e9, 3: 0.985e9, 4: 1.969e9, 5: 3.938e9, 6: 7.563e9}


@dataclass(frozen=True)
class CudaFacts:
    """One GPU as the probes need it; None where the driver did not say."""

    name: str
    memory_total_bytes: int
    compute_capability: tuple[int, int]
    uuid: str | None = None
    nvml_index: int | None = None
    mem_peak_bps: float | None = None
    mem_peak_origin: str | None = None
    pcie_gen_max: int | None = None
    pcie_width_max: int | None = None
    pcie_gen_current: int | None = None
    pcie_width_current: int | None = None
    catalog_id: str | None = None

    def pcie_link_bps(self, current: bool = False) -> float | None:
        """Line rate of the PCIe link per direction, bytes/s (max generation and width, or current)."""
        gen, width = ((self.pcie_gen_current, self.pcie_width_current) if current
                      else (self.pcie_gen_max, self.pcie_width_max))
        if not gen or not width or gen not in PCIE_LANE_BPS:
            return None
        return PCIE_LANE_BPS[gen] * width

    def to_dict(self) -> dict:
        return asdict(self)


def _norm_uuid(uuid) -> str:
    text = str(uuid or "").lower()
    for prefix in ("gpu-", "mig-"):
        if text.startswith(prefix):
            text = text[len(prefix):]
    return text.replace("-", "")


def open_gpu_backend():
    """The real NVML backend of ``advisor.hw`` (never a fake one), or None when unavailable."""
    try:
        from advisor.hw import select_backend

        backend = select_backend(env={})
    except Exception:  # noqa: BLE001 - no NVML means no driver figures, not a failed probe
        return None
    return backend


def cuda_facts(torch, dev) -> CudaFacts:
    """What torch and the driver say about ``dev`` (a CUDA torch.device)."""
    props = torch.cuda.get_device_properties(dev)
    uuid = str(getattr(props, "uuid", "") or "") or None
    facts = dict(name=props.name, memory_total_bytes=int(props.total_memory),
                 compute_capability=(int(props.major), int(props.minor)), uuid=uuid)
    backend = open_gpu_backend()
    if backend is not None:
        try:
            infos = [backend.gpu_info(i) for i in range(backend.device_count())]
            match = [i for i in infos if uuid and _norm_uuid(i.uuid) == _norm_uuid(uuid)]
            if not match and len(infos) == torch.cuda.device_count() and dev.index < len(infos):
                match = [infos[dev.index]]
            if match:
                info = match[0]
                facts.update(nvml_index=info.index, pcie_gen_max=info.pcie_gen_max,
                             pcie_width_max=info.pcie_width_max, pcie_gen_current=info.pcie_gen_current,
                             pcie_width_current=info.pcie_width_current)
                if info.nvml_mem_bandwidth_bps:
                    facts.update(mem_peak_bps=info.nvml_mem_bandwidth_bps, mem_peak_origin="nvml")
        except Exception:  # noqa: BLE001 - a driver that cannot answer leaves the peak unknown
            pass
        finally:
            try:
                backend.close()
            except Exception:  # noqa: BLE001
                pass
    try:
        from advisor.catalog import load_catalog
        from advisor.hw import match_catalog_id

        catalog = load_catalog()
        acc_id = match_catalog_id(props.name, int(props.total_memory),
                                  {a.id: a.name for a in catalog.accelerators.values()})
        facts["catalog_id"] = acc_id
        if acc_id and not facts.get("mem_peak_bps"):
            facts.update(mem_peak_bps=catalog.accelerators[acc_id].mem_bandwidth_bps, mem_peak_origin="catalog")
    except Exception:  # noqa: BLE001 - the catalog is optional for a measurement
        pass
    return CudaFacts(**facts)


def other_processes_bytes(nvml_index: int | None) -> int | None:
    """GPU memory held by other processes on a device, from the driver's process list; None when unknown.

    Processes in other PID namespaces (containers) are counted; ours is not.
    """
    if nvml_index is None:
        return None
    backend = open_gpu_backend()
    if backend is None:
        return None
    try:
        procs = backend.processes(nvml_index)
        if not procs:
            return None if not getattr(backend, "processes_supported", True) else 0
        return sum(p.gpu_mem_bytes or 0 for p in procs if p.pid != os.getpid())
    except Exception:  # noqa: BLE001 - unknown, the caller falls back to free/total
        return None
    finally:
        try:
            backend.close()
        except Exception:  # noqa: BLE001
            pass


def catalog_accelerator(acc_id: str | None):
    """The catalog Accelerator for an id, or None."""
    if not acc_id:
        return None
    try:
        from advisor.catalog import load_catalog

        return load_catalog().accelerators.get(acc_id)
    except Exception:  # noqa: BLE001
        return None


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_fingerprint(gpu_names: tuple[str, ...] = ()) -> dict:
    """A stable description of this machine and a short hash of it (``id``), stored with each result.

    Uses the hostname, CPU model, core count, memory size and the GPUs' names; the hash changes when
    any of them does, so history can be filtered to "this machine as it is now".
    """
    from advisor.probes._common import physical_cores, total_memory_bytes

    desc = {
        "hostname": socket.gethostname(),
        "os": f"{platform.system()} {platform.release()}",
        "cpu_model": cpu_model(),
        "physical_cores": physical_cores(),
        "logical_cores": os.cpu_count(),
        "memory_total_bytes": total_memory_bytes(),
        "gpus": list(gpu_names),
    }
    digest = hashlib.sha256(json.dumps(desc, sort_keys=True).encode()).hexdigest()[:16]
    torch = sys.modules.get("torch")
    return {"id": digest, **desc, "python": platform.python_version(),
            "torch": getattr(torch, "__version__", None)}
