"""Device facts and clock/power sampling through the hardware layer, checked with its fake backend."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

import advisor.probes._device_info as info
from advisor.hw.fake import FakeGpuBackend
from advisor.probes.sampling import ProbeSampler


class FakeTorch:
    """Just what cuda_facts reads from torch."""

    def __init__(self, count=2, uuid="000004bb-fa4e-4000-8000-000000000000"):
        props = SimpleNamespace(name="NVIDIA GeForce RTX 4090", total_memory=25757220864, major=8, minor=9, uuid=uuid)
        self.cuda = SimpleNamespace(get_device_properties=lambda dev: props, device_count=lambda: count)


@pytest.fixture
def fake_nvml(monkeypatch):
    monkeypatch.setattr(info, "open_gpu_backend", lambda: FakeGpuBackend("2x4090"))


def test_peaks_from_the_driver_figures(fake_nvml):
    facts = info.cuda_facts(FakeTorch(), SimpleNamespace(index=0, type="cuda"))
    assert facts.mem_peak_bps == pytest.approx(1008.096e9) and facts.mem_peak_origin == "nvml"
    assert facts.catalog_id == "rtx-4090" and facts.nvml_index == 0
    assert facts.pcie_link_bps() == pytest.approx(16 * 1.969e9)  # Gen4 x16, 128b/130b
    assert facts.compute_capability == (8, 9)


def test_without_nvml_the_catalog_peak_is_used_and_labelled(monkeypatch):
    monkeypatch.setattr(info, "open_gpu_backend", lambda: None)
    facts = info.cuda_facts(FakeTorch(), SimpleNamespace(index=0, type="cuda"))
    assert facts.mem_peak_origin == "catalog" and facts.mem_peak_bps > 0
    assert facts.pcie_link_bps() is None


@pytest.mark.parametrize("gen,width,gbps", [(3, 16, 15.76), (4, 16, 31.5), (5, 16, 63.0), (4, 8, 15.75)])
def test_pcie_line_rate(gen, width, gbps):
    facts = info.CudaFacts(name="x", memory_total_bytes=1, compute_capability=(9, 0), pcie_gen_max=gen,
                           pcie_width_max=width)
    assert facts.pcie_link_bps() / 1e9 == pytest.approx(gbps, rel=0.01)


def test_sampler_reads_power_and_clocks_through_hw(monkeypatch):
    import advisor.probes._device_info as di

    monkeypatch.setattr(di, "open_gpu_backend", lambda: FakeGpuBackend("2x4090"))
    with ProbeSampler("cuda:1", interval_s=0.01) as s:
        threading.Event().wait(0.08)
    assert s.samples and s.samples[0]["power_w"] > 0 and s.samples[0]["sm_clock_mhz"] > 0
    assert "t_s" in s.samples[0]


def test_sampler_without_nvml_records_nothing(monkeypatch):
    import advisor.probes._device_info as di

    monkeypatch.setattr(di, "open_gpu_backend", lambda: None)
    with ProbeSampler("cuda:0", interval_s=0.01) as s:
        pass
    assert s.samples == []


def test_fingerprint_is_stable_and_hashes_the_description():
    a, b = info.machine_fingerprint(), info.machine_fingerprint()
    assert a["id"] == b["id"] and len(a["id"]) == 16
    assert info.machine_fingerprint(("NVIDIA H200",))["id"] != a["id"]
    assert a["physical_cores"] >= 1 and a["memory_total_bytes"] > 0
