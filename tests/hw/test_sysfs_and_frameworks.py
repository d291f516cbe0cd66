"""PCI runtime power state from sysfs, torch and JAX queries, and the one-importer rule."""

from __future__ import annotations

import ast
import sys
import types
from pathlib import Path

import pytest

import advisor
from advisor.hw import pcipower
from advisor.hw.jaxdev import jax_info
from advisor.hw.torchdev import torch_info


def _device(root: Path, bus: str, vendor: str = "0x10de", cls: str = "0x030200", status: str | None = "active"):
    dev = root / bus
    dev.mkdir(parents=True)
    (dev / "vendor").write_text(vendor + "\n")
    (dev / "class").write_text(cls + "\n")
    if status is not None:
        (dev / "power").mkdir()
        (dev / "power" / "runtime_status").write_text(status + "\n")


def test_bus_id_forms():
    assert pcipower.sysfs_bus_id("00000000:01:00.0") == "0000:01:00.0"
    assert pcipower.sysfs_bus_id("0000:1A:00.0") == "0000:1a:00.0"


def test_runtime_status_and_nvidia_devices(tmp_path):
    _device(tmp_path, "0000:01:00.0", status="suspended")
    _device(tmp_path, "0000:00:02.0", vendor="0x8086", cls="0x030000")  # the iGPU
    _device(tmp_path, "0000:02:00.1", cls="0x040300", status=None)  # the dGPU's HDMI audio
    _device(tmp_path, "0000:41:00.0", status="active")
    assert pcipower.runtime_status("00000000:01:00.0", tmp_path) == "suspended"
    assert pcipower.runtime_status("0000:41:00.0", tmp_path) == "active"
    assert pcipower.runtime_status("0000:02:00.1", tmp_path) is None
    assert pcipower.runtime_status(None, tmp_path) is None
    assert pcipower.nvidia_display_devices(tmp_path) == ["0000:01:00.0", "0000:41:00.0"]
    assert pcipower.nvidia_display_devices(tmp_path / "missing") == []


def _fake_torch(monkeypatch, *, hip=None, cuda_devices=(), mps=False):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if name == "torch" else real(name, *a))
    torch = types.ModuleType("torch")
    torch.__version__ = "9.1.0"
    torch.version = types.SimpleNamespace(cuda="12.4", hip=hip)
    props = [types.SimpleNamespace(name=n, uuid=u, total_memory=m, major=8, minor=9) for n, u, m in cuda_devices]
    torch.cuda = types.SimpleNamespace(is_available=lambda: bool(props), device_count=lambda: len(props),
                                       get_device_properties=lambda i: props[i])
    torch.backends = types.SimpleNamespace(mps=types.SimpleNamespace(is_available=lambda: mps))
    monkeypatch.setitem(sys.modules, "torch", torch)


def test_torch_cuda_devices(monkeypatch):
    _fake_torch(monkeypatch, cuda_devices=[("NVIDIA GeForce RTX 4090", "1111-22", 24 * 2**30)] * 2)
    info = torch_info()
    assert info.installed and info.version == "9.1.0" and info.status == "torch 9.1.0 with CUDA 12.4"
    assert [(d.kind, d.index, d.uuid, d.compute_capability) for d in info.devices] == [
        ("cuda", 0, "1111-22", (8, 9)), ("cuda", 1, "1111-22", (8, 9))]


def test_torch_rocm_mps_and_cpu_only(monkeypatch):
    _fake_torch(monkeypatch, hip="6.1", cuda_devices=[("AMD Instinct MI300X", None, 192 * 2**30)])
    info = torch_info()
    assert info.devices[0].kind == "rocm" and "ROCm 6.1" in info.status
    _fake_torch(monkeypatch, mps=True)
    assert [d.kind for d in torch_info().devices] == ["mps"]
    _fake_torch(monkeypatch)
    info = torch_info()
    assert info.devices == () and "CPU only" in info.status


@pytest.mark.gpu
def test_torch_sees_the_real_gpu():
    info = torch_info()
    assert info.installed and any(d.kind == "cuda" for d in info.devices)


def test_torch_not_installed(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    assert torch_info().status == "not installed"


def test_jax_not_installed_or_without_tpu(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "jax" else real(name, *a))
    info = jax_info()
    assert (info.installed, info.status) == (False, "not installed")

    fake = types.ModuleType("jax")
    fake.__version__ = "0.4.99"

    def devices(kind=None):
        raise RuntimeError("Unknown backend tpu")

    fake.devices = devices
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if name == "jax" else real(name, *a))
    monkeypatch.setitem(sys.modules, "jax", fake)
    info = jax_info()
    assert info.installed and info.status == "jax 0.4.99: no TPU" and info.devices == ()
    fake.devices = lambda kind=None: [types.SimpleNamespace(device_kind="TPU v5 lite")] * 4
    info = jax_info()
    assert len(info.devices) == 4 and info.devices[0].name == "TPU v5 lite" and "4 TPU" in info.status


# ---------------------------------------------------------------- import rules
def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.fixture(scope="module")
def imports_by_module() -> dict[str, set[str]]:
    root = Path(advisor.__file__).parent
    return {str(p.relative_to(root)): _imports(p) for p in root.rglob("*.py")}


@pytest.mark.parametrize("library, owner", [("pynvml", "hw/nvml.py"), ("psutil", "hw/host.py"),
                                            ("jax", "hw/jaxdev.py")])
def test_each_hardware_library_has_one_importer(library, owner, imports_by_module):
    assert sorted(m for m, names in imports_by_module.items() if library in names) == [owner]


def test_torch_only_inside_functions_in_hw_and_monitor():
    root = Path(advisor.__file__).parent
    for pkg in ("hw", "monitor"):
        for p in (root / pkg).rglob("*.py"):
            for node in ast.parse(p.read_text()).body:  # module level only
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                    assert not any(m.split(".")[0] in ("torch", "PySide6", "pyqtgraph") for m in mods), p


def test_importing_hw_and_monitor_loads_no_hardware_library():
    import subprocess

    code = ("import sys, advisor.hw, advisor.monitor, advisor.commands.detect, advisor.commands.monitor; "
            "print(sorted(m for m in ('pynvml', 'psutil', 'torch', 'jax', 'PySide6') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
