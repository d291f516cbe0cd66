"""Torch device queries (CUDA, ROCm, MPS, XPU). torch is imported inside the functions only: it is slow
to import and optional (the ``probes`` extra)."""

from __future__ import annotations

import importlib.util

from advisor.hw.records import FrameworkDevice, FrameworkInfo


def torch_info() -> FrameworkInfo:
    """The devices torch can use, with UUIDs to match them to NVML devices; never raises.

    Returns:
        ``FrameworkInfo("torch", installed, status, version, devices)``; status "not installed" without torch.
    """
    if importlib.util.find_spec("torch") is None:
        return FrameworkInfo("torch", False, "not installed")
    try:
        import torch
    except Exception as exc:  # a broken install must not break detection
        return FrameworkInfo("torch", False, f"import failed: {type(exc).__name__}: {exc}")
    version = str(torch.__version__)
    devices: list[FrameworkDevice] = []
    kinds: list[str] = []
    try:
        if torch.cuda.is_available():
            kind = "rocm" if getattr(torch.version, "hip", None) else "cuda"
            kinds.append(f"ROCm {torch.version.hip}" if kind == "rocm" else f"CUDA {torch.version.cuda}")
            for i in range(torch.cuda.device_count()):
                props = torch.cuda.get_device_properties(i)
                uuid = getattr(props, "uuid", None)
                devices.append(FrameworkDevice(
                    framework="torch", kind=kind, index=i, name=str(props.name),
                    uuid=str(uuid) if uuid is not None else None, memory_total_bytes=int(props.total_memory),
                    compute_capability=(int(props.major), int(props.minor))))
    except Exception as exc:
        kinds.append(f"CUDA query failed: {exc}")
    try:
        mps = getattr(torch.backends, "mps", None)
        if mps is not None and mps.is_available():
            kinds.append("MPS")
            devices.append(FrameworkDevice(framework="torch", kind="mps", index=0, name="Apple GPU (MPS)"))
    except Exception:
        pass
    try:
        xpu = getattr(torch, "xpu", None)
        if xpu is not None and xpu.is_available():
            kinds.append("XPU")
            for i in range(xpu.device_count()):
                props = xpu.get_device_properties(i)
                devices.append(FrameworkDevice(framework="torch", kind="xpu", index=i, name=str(props.name),
                                               memory_total_bytes=int(getattr(props, "total_memory", 0)) or None))
    except Exception:
        pass
    status = f"torch {version} with {', '.join(kinds)}" if kinds else f"torch {version}: CPU only (no CUDA, ROCm, MPS or XPU device)"
    return FrameworkInfo("torch", True, status, version, tuple(devices))
