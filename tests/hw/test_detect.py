"""Backend selection, catalog matching, the machine profile and ``advisor detect``."""

from __future__ import annotations

import json

import pytest

from advisor.catalog import load_catalog
from advisor.cli import main
from advisor.hw import (
    FrameworkDevice,
    FrameworkInfo,
    UnknownScenario,
    detect_machine,
    match_catalog_id,
    mem_bandwidth_bps,
    profile_to_json,
    select_backend,
)
from advisor.hw.fake import SCENARIOS, FakeGpuBackend, FakeHostBackend
from advisor.hw.null import NullGpuBackend
from tests.hw.nvml_stub import StubNvml, rtx4090

GIB = 2**30


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


# ---------------------------------------------------------------- bandwidth and matching
def test_nvml_bandwidth_formula():
    assert mem_bandwidth_bps(10501, 384) / 1e9 == pytest.approx(1008.1, abs=0.05)  # RTX 4090
    assert mem_bandwidth_bps(2619, 5120) / 1e9 == pytest.approx(3352.3, abs=0.05)  # H100 SXM
    assert mem_bandwidth_bps(None, 384) is None and mem_bandwidth_bps(10501, None) is None
    assert mem_bandwidth_bps(0, 384) is None


@pytest.mark.parametrize("name, mem_gib, expected", [
    ("NVIDIA GeForce RTX 4090", 24, "rtx-4090"),
    ("NVIDIA H100 80GB HBM3", 80, "h100-sxm"),
    ("NVIDIA H100 PCIe", 80, "h100-pcie"),
    ("NVIDIA H100 NVL", 94, "h100-nvl"),
    ("NVIDIA H200", 141, "h200"),
    ("NVIDIA GH200 480GB", 96, "gh200-96gb"),
    ("NVIDIA A100-SXM4-80GB", 80, "a100-80gb-sxm"),
    ("NVIDIA A100-SXM4-40GB", 40, "a100-40gb-sxm"),
    ("NVIDIA A100 80GB PCIe", 80, "a100-80gb-pcie"),
    ("Tesla V100-SXM2-16GB", 16, "v100-sxm2-16gb"),
    ("Tesla V100-SXM2-32GB", 32, "v100-sxm2-32gb"),
    ("Tesla V100-PCIE-16GB", 16, "v100-pcie-16gb"),
    ("Tesla T4", 15, "t4"),
    ("NVIDIA L4", 22, "l4"),
    ("NVIDIA L40S", 45, "l40s"),
    ("NVIDIA A10G", 22, "a10g"),
    ("NVIDIA A10", 22, "a10"),
    ("NVIDIA RTX A6000", 48, "rtx-a6000"),
    ("NVIDIA RTX 6000 Ada Generation", 48, "rtx-6000-ada"),
    ("NVIDIA GeForce RTX 3090 Ti", 24, "rtx-3090-ti"),
    ("NVIDIA GeForce RTX 3090", 24, "rtx-3090"),
    ("NVIDIA GeForce RTX 3060", 12, "rtx-3060-12gb"),
    ("NVIDIA GeForce RTX 3060", 8, None),  # the 8 GB card is a different part
    ("NVIDIA GeForce RTX 4060 Ti", 16, "rtx-4060-ti-16gb"),
    ("NVIDIA GeForce RTX 4060 Ti", 8, "rtx-4060-ti-8gb"),
    ("NVIDIA GeForce RTX 4060 Laptop GPU", 8, "rtx-4060-laptop"),  # a laptop entry, never a desktop one
    ("NVIDIA GeForce RTX 4090 Laptop GPU", 16, "rtx-4090-laptop"),
    ("NVIDIA GeForce RTX 3080 Laptop GPU", 16, "rtx-3080-laptop-16gb"),
    ("NVIDIA GeForce RTX 3080 Ti Laptop GPU", 16, None),  # not in the catalog: no desktop fallback
    ("NVIDIA GeForce RTX 4050 Laptop GPU", 6, None),
    ("NVIDIA GeForce RTX 3080", 10, "rtx-3080-10gb"),
    ("NVIDIA GeForce RTX 3080", 12, "rtx-3080-12gb"),
    ("NVIDIA GeForce RTX 3080 Ti", 12, "rtx-3080-ti"),
    ("NVIDIA GeForce RTX 3060 Ti", 8, "rtx-3060-ti"),
    ("NVIDIA GeForce RTX 2080", 8, "rtx-2080"),
    ("NVIDIA GeForce RTX 2080 Ti", 11, "rtx-2080-ti"),
    ("NVIDIA TITAN RTX", 24, "titan-rtx"),
    ("NVIDIA GeForce RTX 4070 SUPER", 12, "rtx-4070-super"),
    ("NVIDIA GeForce RTX 4070", 12, "rtx-4070"),
    ("NVIDIA GeForce RTX 4080", 16, "rtx-4080"),
    ("NVIDIA GeForce RTX 4080 SUPER", 16, "rtx-4080-super"),
    ("NVIDIA GeForce RTX 5060 Ti", 16, "rtx-5060-ti-16gb"),
    ("NVIDIA GeForce RTX 5070 Ti", 16, "rtx-5070-ti"),
    ("NVIDIA RTX A4000", 16, "rtx-a4000"),
    ("NVIDIA B200", 180, "b200"),
    ("NVIDIA GeForce RTX 5090", 32, "rtx-5090"),
    ("Some Unknown Accelerator", 16, None),
])
def test_match_catalog_id(name, mem_gib, expected, catalog):
    acc_id = match_catalog_id(name, mem_gib * GIB)
    assert acc_id == expected
    if acc_id is not None:
        assert acc_id in catalog.accelerators


def test_match_falls_back_to_catalog_names():
    names = {"my-card": "Frobnicator X9"}
    assert match_catalog_id("NVIDIA Frobnicator X9", None, names) == "my-card"
    assert match_catalog_id("Frobnicator X10", None, names) is None


# ---------------------------------------------------------------- backend selection
def test_select_backend_fake_flag_env_and_precedence():
    assert isinstance(select_backend("2x4090", env={}), FakeGpuBackend)
    b = select_backend(None, env={"ADVISOR_FAKE_GPU": "8xh100-sxm"})
    assert b.scenario == "8xh100-sxm" and b.device_count() == 8
    assert select_backend("laptop-4060", env={"ADVISOR_FAKE_GPU": "8xh100-sxm"}).scenario == "laptop-4060"
    with pytest.raises(UnknownScenario, match="2x4090"):
        select_backend("3x4090", env={})


def test_select_backend_falls_back_to_null(monkeypatch):
    import advisor.hw.nvml as nvml_mod

    def refuse(cls, *a, **k):
        raise nvml_mod.NvmlUnavailable("NVIDIA driver not loaded")

    monkeypatch.setattr(nvml_mod.NvmlBackend, "open", classmethod(refuse))
    b = select_backend(None, env={"ADVISOR_FAKE_GPU": ""})
    assert isinstance(b, NullGpuBackend) and b.status().status == "NVIDIA driver not loaded"


# ---------------------------------------------------------------- the profile
@pytest.mark.parametrize("scenario, ids, nvml_gbs, catalog_gbs", [
    ("2x4090", ["rtx-4090"] * 2, 1008.1, 1008.0),
    ("8xh100-sxm", ["h100-sxm"] * 8, 3352.3, 3350.0),
    # asleep: named from the PCI ids in sysfs and the PCI ID database, matched to the catalog, never woken
    ("laptop-4060", ["rtx-4060-laptop"], None, 256.0),
    ("not-supported", ["rtx-3060-12gb"], None, 360.0),
    ("gpu-lost", ["rtx-4090"] * 2, 1008.1, 1008.0),
    ("no-driver", [], None, None),
])
def test_detect_fake_scenarios(scenario, ids, nvml_gbs, catalog_gbs, catalog):
    profile = detect_machine(FakeGpuBackend(scenario), FakeHostBackend(), catalog=catalog)
    assert profile.simulated and profile.gpu_backend.scenario == scenario
    assert [g.catalog_id for g in profile.gpus] == ids
    for g in profile.gpus:
        nvml = g.nvml_mem_bandwidth_bps
        assert (nvml is None) if nvml_gbs is None else nvml / 1e9 == pytest.approx(nvml_gbs, abs=0.05)
        cat = g.catalog_mem_bandwidth_bps
        assert (cat is None) if catalog_gbs is None else cat / 1e9 == pytest.approx(catalog_gbs, rel=0.01)
    assert "not queried" in profile.torch.status  # simulated GPUs: real framework devices would not match


def test_detect_json_document(catalog):
    doc = profile_to_json(detect_machine(FakeGpuBackend("8xh100-sxm"), FakeHostBackend(), catalog=catalog))
    json.dumps(doc)  # plain JSON types only
    assert doc["schema"] == "advisor.detect/1" and doc["simulated"] is True
    assert doc["cpu"] == {"model": "Simulated CPU", "physical_cores": 4, "logical_cores": 8, "arch": "x86_64",
                          "min_freq_hz": 800e6, "max_freq_hz": 5000e6}
    assert doc["memory"]["total_bytes"] == 64 * GIB and doc["memory"]["available_bytes"] == 48 * GIB
    assert doc["gpu_backend"]["name"] == "fake" and "simulated" in doc["gpu_backend"]["status"]
    gpu = doc["gpus"][3]
    assert gpu["index"] == 3 and gpu["name"] == "NVIDIA H100 80GB HBM3" and gpu["catalog_id"] == "h100-sxm"
    assert gpu["memory_total_bytes"] == 81559 * 2**20 and gpu["uuid"].startswith("GPU-")
    assert gpu["compute_capability"] == "9.0" and gpu["nvlink_links_active"] == 18
    assert gpu["max_mem_clock_hz"] == 2619e6 and gpu["mem_bus_width_bits"] == 5120
    assert gpu["mem_bandwidth_nvml_bytes_per_s"] == pytest.approx(3352.32e9)
    assert len({g["uuid"] for g in doc["gpus"]}) == 8


def test_torch_devices_matched_by_uuid(monkeypatch, catalog):
    import advisor.hw.jaxdev as jaxdev
    import advisor.hw.torchdev as torchdev
    from advisor.hw.nvml import NvmlBackend

    uuid = "GPU-11111111-2222-3333-4444-555555555555"
    torch = FrameworkInfo("torch", True, "torch 9 with CUDA 12.4", "9", (
        FrameworkDevice("torch", "cuda", 0, "NVIDIA GeForce RTX 4090", uuid="11111111-2222-3333-4444-555555555555"),))
    monkeypatch.setattr(torchdev, "torch_info", lambda: torch)
    monkeypatch.setattr(jaxdev, "jax_info", lambda: FrameworkInfo("jax", False, "not installed"))
    gpu = NvmlBackend.open(StubNvml([rtx4090(uuid=uuid), rtx4090(uuid="GPU-99")]))
    profile = detect_machine(gpu, FakeHostBackend(), catalog=catalog)
    assert not profile.simulated
    assert [g.torch_device for g in profile.gpus] == ["cuda:0", None]
    assert [g.catalog_id for g in profile.gpus] == ["rtx-4090", "rtx-4090"]
    doc = profile_to_json(profile)
    assert doc["gpu_backend"]["name"] == "nvml" and doc["torch"]["devices"][0]["kind"] == "cuda"


def test_null_profile_says_why(catalog):
    profile = detect_machine(NullGpuBackend("NVIDIA driver not found"), FakeHostBackend(), frameworks=False,
                             catalog=catalog)
    doc = profile_to_json(profile)
    assert doc["gpus"] == [] and doc["gpu_backend"] == {
        "name": "none", "status": "NVIDIA driver not found", "simulated": False, "scenario": None,
        "driver_version": None, "cuda_driver_version": None, "nvml_version": None}


# ---------------------------------------------------------------- the command
def test_cli_detect_json_fake(capsys):
    assert main(["detect", "--json", "--fake-gpu", "2x4090"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [g["catalog_id"] for g in doc["gpus"]] == ["rtx-4090", "rtx-4090"]
    assert doc["simulated"] is True


def test_cli_detect_env_and_text(capsys, monkeypatch):
    monkeypatch.setenv("ADVISOR_FAKE_GPU", "laptop-4060")
    assert main(["detect"]) == 0
    out = capsys.readouterr().out
    assert "SIMULATED HARDWARE" in out and "asleep, not woken" in out and "RTX 4060 Max-Q / Mobile" in out


def test_cli_detect_host_only(capsys):
    assert main(["detect", "--json", "--no-frameworks"]) == 0
    doc = json.loads(capsys.readouterr().out)
    import os

    assert doc["cpu"]["logical_cores"] == os.cpu_count()
    assert doc["gpu_backend"]["status"]
    assert isinstance(doc["gpus"], list)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_cli_detect_every_scenario(scenario, capsys):
    assert main(["detect", "--json", "--fake-gpu", scenario]) == 0
    assert json.loads(capsys.readouterr().out)["gpu_backend"]["scenario"] == scenario


def test_cli_detect_unknown_scenario_exit_2(capsys):
    assert main(["detect", "--fake-gpu", "9x9090"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--fake-gpu" in err and "Traceback" not in err


@pytest.mark.gpu
def test_cli_detect_real_gpu(capsys):
    assert main(["detect", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["gpu_backend"]["name"] == "nvml" and doc["gpus"]
    for g in doc["gpus"]:
        assert g["memory_total_bytes"] > 0 and g["uuid"].startswith("GPU-")


def test_unknown_gpu_gets_a_derived_entry_in_detect_json(catalog):
    from advisor.hw.nvml import NvmlBackend

    gpu = NvmlBackend.open(StubNvml([rtx4090(name="NVIDIA GeForce RTX 4095", max_sm=3120, cores=16384)]))
    profile = detect_machine(gpu, FakeHostBackend(), frameworks=False, catalog=catalog)
    g = profile.gpus[0]
    assert g.catalog_id is None and g.derived and g.accelerator.id == "derived:rtx-4095"
    doc = profile_to_json(profile)["gpus"][0]
    assert doc["derived"] is True and doc["accelerator"]["derived"] is True
    assert doc["accelerator"]["peak_flops"]["bf16"] == pytest.approx(165.2e12, rel=0.10)
    assert "0.81" in doc["accelerator"]["derivation"]["tensor"]
    json.dumps(doc, allow_nan=False)


def test_machine_id_survives_renames_and_tells_containers_apart():
    from advisor.hw.detect import machine_id

    a = machine_id(["machine-id:abc"], ["GPU-1", "GPU-2"], fallback=("host-a",))
    assert a == machine_id(["machine-id:abc"], ["GPU-2", "GPU-1"], fallback=("renamed",))  # order, name: same
    assert a != machine_id(["machine-id:abc"], ["GPU-3"])  # same image, other GPUs: another machine
    assert "abc" not in a and a.startswith("m-") and len(a) == 18
    assert machine_id([], [], fallback=("h", "cpu", 1)) != machine_id([], [], fallback=("h2", "cpu", 1))


def test_detect_json_has_machine_id(catalog):
    doc = profile_to_json(detect_machine(FakeGpuBackend("2x4090"), FakeHostBackend(), catalog=catalog))
    assert doc["machine_id"].startswith("m-") and doc["gpus"][0]["derived"] is False
    assert doc["gpus"][0]["accelerator"]["id"] == "rtx-4090"
