"""Each probe says plainly why it cannot run: no torch, no GPU, not enough memory."""

from __future__ import annotations

import sys

import pytest

from advisor.probes import PROBES, drive, open_probe
from advisor.probes._common import require_torch

TORCH_PROBES = ["host-bandwidth", "device-bandwidth", "matmul", "allreduce", "train-step"]


@pytest.fixture
def no_torch(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)


@pytest.mark.parametrize("name", TORCH_PROBES)
def test_without_torch_each_probe_skips_with_reason(no_torch, name):
    r = drive(open_probe(name, quick=True))
    assert r.skipped is not None and "torch is not installed" in r.skipped
    assert r.to_dict()["skipped"] == r.skipped and r.results == {}


def test_without_torch_host_only_probes_still_run(no_torch, tmp_path):
    assert drive(open_probe("capacity")).skipped is None
    r = drive(open_probe("disk", directory=str(tmp_path), file_bytes=2 << 20, readers=2, passes=1))
    assert r.skipped is None and set(r.results) == {"read_1", "read_2"}


@pytest.mark.parametrize("name", ["device-bandwidth", "transfer", "matmul", "capacity", "train-step", "allreduce"])
def test_cuda_on_a_cpu_only_torch_skips(name):
    torch = require_torch()
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    r = drive(open_probe(name, device="cuda:0", quick=True))
    assert r.skipped and ("GPU" in r.skipped or "CUDA" in r.skipped), r.skipped


def test_cuda_built_but_no_device_visible(monkeypatch):
    torch = require_torch()
    monkeypatch.setattr(torch.backends.cuda, "is_built", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    r = drive(open_probe("matmul", device="cuda:0"))
    assert r.skipped == "no CUDA GPU is visible (no NVIDIA driver or no device)"


def test_cuda_index_out_of_range(monkeypatch):
    torch = require_torch()
    monkeypatch.setattr(torch.backends.cuda, "is_built", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    r = drive(open_probe("device-bandwidth", device="cuda:3"))
    assert r.skipped == "no such GPU: cuda:3 (this machine has 1)"


def test_host_probes_refuse_a_gpu_device():
    assert "use --device cpu" in drive(open_probe("host-bandwidth", device="cuda:0")).skipped
    assert "use --device cpu" in drive(open_probe("disk", device="cuda:0")).skipped


def test_not_enough_host_memory(monkeypatch):
    import advisor.probes.host_bandwidth as hb

    monkeypatch.setattr(hb, "available_memory_bytes", lambda: 50 * 10**6)
    r = drive(open_probe("host-bandwidth", quick=True))
    assert r.skipped.startswith("not enough free host memory")


def test_not_enough_disk_space(monkeypatch, tmp_path):
    import advisor.probes.disk as disk

    class Tiny:
        f_bavail, f_frsize = 10, 4096

    monkeypatch.setattr(disk.os, "statvfs", lambda path: Tiny)
    r = drive(open_probe("disk", directory=str(tmp_path), file_bytes=8 << 20))
    assert r.skipped.startswith("not enough free disk space")


def test_every_probe_has_a_result_or_a_reason_without_torch(no_torch, tmp_path):
    for name in PROBES:
        params = {"directory": str(tmp_path), "file_bytes": 2 << 20, "passes": 1} if name == "disk" else {}
        r = drive(open_probe(name, quick=True, **params))
        assert bool(r.results) != bool(r.skipped), name
