"""Unified and carve-out memory per backend (issue 36) against readings users reported, within 2 %."""

from __future__ import annotations

import pytest

from advisor.hw.unified import allocatable, amd_apu_memory, apple_memory, intel_igpu_memory, metal_working_set, nvidia_integrated_memory

GIB, MIB = 2**30, 2**20
# llama.cpp's Metal start-up line "ggml_metal_init: recommendedMaxWorkingSetSize = N MB" (bytes / 1e6) as users
# pasted it in llama.cpp issues and discussions, by the Mac's RAM in GiB.
METAL_READINGS_MB = {8: 5726.63, 16: 11453.25, 32: 22906.50, 64: 51539.61, 96: 77309.41, 128: 103079.22,
                     192: 154618.82}


@pytest.mark.parametrize("ram_gib", sorted(METAL_READINGS_MB))
def test_metal_working_set_reproduces_llama_cpp_logs(ram_gib):
    assert metal_working_set(ram_gib * GIB) / 1e6 == pytest.approx(METAL_READINGS_MB[ram_gib], rel=0.02)
    assert metal_working_set(ram_gib * GIB) / 1e6 == pytest.approx(METAL_READINGS_MB[ram_gib], abs=0.01)


def test_metal_wired_limit_overrides_the_default():
    (m,) = apple_memory(128 * GIB, wired_limit_mb=120_000)
    assert m.allocatable_bytes == 120_000 * MIB and "iogpu.wired_limit_mb" in m.source


def test_strix_halo_hip_before_and_after_the_gtt_domain_change():
    """amdkfd's commit message quotes PyTorch on a 512 MiB carve-out: "GPU 0 has a total capacity of 512.00 MiB";
    with VRAM allocations sent to GTT and GTT raised to 128 GiB (ttm.pages_limit), PyTorch reports the GTT pool,
    128 GiB, though the BIOS holds 96 GiB (a user's note in daviestechlabs/kuberay-images, strixhalo_vram_fix.py)."""
    old = amd_apu_memory(128 * GIB, 512 * MIB, gtt_domain=False)
    assert allocatable(old, "rocm") == 512 * MIB
    new = amd_apu_memory(128 * GIB, 96 * GIB, gtt_bytes=128 * GIB)
    assert allocatable(new, "rocm") == pytest.approx(128 * GIB, rel=0.02)


# Readings users pasted from Strix Halo (Ryzen AI Max+ 395, Radeon 8060S, 128 GB), each with its thread.
def test_strix_halo_rocm_and_vulkan_on_one_machine():
    """github.com/lmstudio-ai/lmstudio-bug-tracker issue 935 (2025-08-26), Ubuntu, "GTT was manually set to 120GB":
    "When using ROCm backend 120GB is identified", the Vulkan backend "only 80GB". ROCm: the GTT pool; RADV: 2/3 of
    the carve-out (512 MiB, the least the firmware allows, as set when the GTT is raised) plus GTT: 80.3 GiB."""
    mem = amd_apu_memory(128 * GIB, 512 * MIB, gtt_bytes=120 * GIB)
    assert allocatable(mem, "rocm") / GIB == pytest.approx(120, rel=0.02)
    assert allocatable(mem, "vulkan") / GIB == pytest.approx(80, rel=0.02)
    # with radv_enable_unified_heap_on_apu the device-local heap is all of it
    one = amd_apu_memory(128 * GIB, 512 * MIB, gtt_bytes=120 * GIB, unified_heap=True)
    assert allocatable(one, "vulkan") == 512 * MIB + 120 * GIB


def test_strix_halo_rocm_with_gtt_at_128_gib():
    """github.com/kyuz0/amd-strix-halo-toolboxes issue 7 (2025-10-03): llama.cpp's ROCm build lists
    "ROCm0: Radeon 8060S Graphics (131072 MiB, 124517 MiB free)" on a 128 GB machine whose GTT is 128 GiB (the
    kernel line Strix Halo guides give, "amdgpu.gttsize=131072 ttm.pages_limit=33554432": 33,554,432 pages of
    4 KiB, github.com/lmstudio-ai/lmstudio-bug-tracker issue 2368)."""
    gtt = 33554432 * 4096
    assert gtt == 131072 * MIB
    assert allocatable(amd_apu_memory(128 * GIB, 512 * MIB, gtt_bytes=gtt), "rocm") / MIB == pytest.approx(131072, rel=0.02)


def test_strix_halo_carve_out_is_the_dedicated_figure():
    """github.com/lemonade-sdk/llamacpp-rocm issue 9 (2025-09-05): rocm-smi "VRAM Total Memory (B): 536870912"
    while the GPU used "GTT=105GB": the BIOS carve-out is the dedicated figure, the GTT pool the shared one."""
    (rocm, vulkan) = amd_apu_memory(128 * GIB, 536870912, gtt_bytes=105 * GIB)
    assert (rocm.dedicated_bytes, rocm.shared_bytes, rocm.allocatable_bytes) == (536870912, 105 * GIB, 105 * GIB)
    assert vulkan.dedicated_bytes == 536870912 and "2/3" in vulkan.source


def test_strix_halo_default_gtt_is_half_of_what_the_os_keeps():
    mem = amd_apu_memory(128 * GIB, 512 * MIB)
    gtt = int((128 * GIB - 512 * MIB) / 2)
    assert allocatable(mem, "rocm") == gtt
    assert allocatable(mem, "vulkan") == int((512 * MIB + gtt) * 2 / 3) // 4096 * 4096
    assert allocatable(mem, "cuda") is None
    assert allocatable(mem) == gtt  # no backend named: the vendor's compute backend, listed first
    # the RAM the OS reports, when known, sets the default instead
    assert allocatable(amd_apu_memory(128 * GIB, 512 * MIB, os_ram_bytes=124 * GIB), "rocm") == 62 * GIB


def test_jetson_orin_cuda_free_follows_the_os():
    """github.com/ollama/ollama issue 3406 (2024-09-13), Jetson AGX Orin 64GB: the OS "total=61.4 GiB free=51.8 GiB"
    and CUDA "total=61.4 GiB available=51.6 GiB" in one log: CUDA's total is the OS's, its free what the OS does not
    hold."""
    (cuda,) = nvidia_integrated_memory(int(61.4 * GIB), int((61.4 - 51.8) * GIB))
    assert cuda.shared_bytes / GIB == pytest.approx(61.4, rel=0.02)
    assert cuda.allocatable_bytes / GIB == pytest.approx(51.6, rel=0.02)


def test_dgx_spark_vllm_utilisation_above_the_free_share_fails():
    """github.com/MiaAI-Lab/GLM-5.3-Flash-EXL3-2x-DGX-Sparks issue 47 (2026-08-30), DGX Spark (GB10, 128 GB):
    "Free memory on cuda:0 at boot caps at 101.3-102.2 GiB of 121.69", so vLLM's check at 0.87 ("wants
    105.87 GiB") fails and "we run at 0.82-0.83". CUDA's total is the OS's 121.69 GiB; what a fit may take is the
    free figure."""
    (cuda,) = nvidia_integrated_memory(int(121.69 * GIB), int((121.69 - 101.3) * GIB))
    assert 0.87 * cuda.shared_bytes / GIB == pytest.approx(105.87, abs=0.01)
    assert 0.87 * cuda.shared_bytes > cuda.allocatable_bytes
    assert 0.82 * cuda.shared_bytes <= cuda.allocatable_bytes


def test_lunar_lake_shared_memory_is_half_of_the_ram():
    """github.com/IGCIT/Intel-GPU-Community-Issue-Tracker-IGCIT issue 1356 (2026-02-11), Core Ultra 7 258V (Arc 140V,
    32 GB) under Windows, Ollama's Vulkan runner reading DXGI: "Dedicated: 0.12 GB, Shared: 15.77 GB",
    "Shared Total: 16936890368.0" bytes: half of the RAM (16 GiB of 32, less what the firmware keeps)."""
    mem = intel_igpu_memory(32 * GIB, dedicated_bytes=128 * MIB)
    assert allocatable(mem, "vulkan") == pytest.approx(16936890368, rel=0.02)
    assert f"{mem[1].dedicated_bytes / GIB:.2f}" == "0.12"  # "Dedicated: 0.12 GB": 128 MiB as a %.2f prints it


def test_integrated_nvidia_and_intel_rules():
    assert allocatable(nvidia_integrated_memory(128 * GIB, 8 * GIB), "cuda") == 120 * GIB
    assert allocatable(intel_igpu_memory(32 * GIB), "sycl") == 16 * GIB
    assert allocatable(intel_igpu_memory(32 * GIB, 0.87), "vulkan") == int(32 * GIB * 0.87)
    assert allocatable((), None) is None
    with pytest.raises(ValueError):
        intel_igpu_memory(32 * GIB, 1.5)


def test_the_plan_fits_an_owned_apu_in_its_runtime_backend_s_memory():
    """A Strix Halo as this machine's GPU (its detected backend memory): llama.cpp's ROCm build gets the GTT pool,
    120 GiB, not the card figure; on a kernel before the GTT change HIP sees the 512 MiB carve-out and a 70B model
    does not fit there."""
    from advisor.catalog import load_catalog
    from advisor.planner import PlanRequest, plan
    from advisor.planner.owned import OwnedHardware, owned_capacity

    cat = load_catalog(use_user_file=False)
    acc = cat.accelerators["rx-7900-xtx"]  # a stand-in accelerator record: its memory figure must not be used
    apu = amd_apu_memory(128 * GIB, 512 * MIB, gtt_bytes=120 * GIB)
    hw = OwnedHardware(acc, 1, origin="this machine", this_machine=True, backend_memory=apu)
    assert owned_capacity(hw, "rocm") == 120 * GIB
    assert owned_capacity(hw, "vulkan") == allocatable(apu, "vulkan") < 120 * GIB
    assert owned_capacity(hw, "cuda") == 120 * GIB  # a backend it does not list: the vendor's, listed first
    req = PlanRequest.from_mapping({"model": "llama-3.1-70b", "workload": "inference", "quant": "q4_k_m",
                                    "runtime": "llama.cpp"})
    opt = plan(req, cat, owned=[hw]).option("owned:rx-7900-xtx")
    assert opt.capacity_bytes == 120 * GIB and opt.fits
    old = OwnedHardware(acc, 1, origin="this machine", this_machine=True,
                        backend_memory=amd_apu_memory(128 * GIB, 512 * MIB, gtt_domain=False))
    assert not plan(req, cat, owned=[old]).option("owned:rx-7900-xtx").fits
    assert owned_capacity(OwnedHardware(acc, 1)) == acc.usable_memory_bytes  # a discrete card: its own memory


def test_amd_backend_reads_an_apu_s_carve_out_and_gtt_from_sysfs(tmp_path):
    """amdgpu publishes ``mem_info_vram_total`` (the carve-out) and ``mem_info_gtt_total`` per device; a Strix Halo
    (PCI 1002:1586) with 512 MiB carved out and 120 GiB of GTT gets its backend memory from them; a discrete card's
    directory with the same files does not (its device id is not an APU's)."""
    from advisor.hw.amd import AmdSmiBackend
    from tests.hw.amdsmi_stub import StubAmdSmi, mi300x

    def device(bdf: str, dev_id: str, vram: str, gtt: str) -> None:
        d = tmp_path / bdf
        d.mkdir()
        for name, text in (("vendor", "0x1002\n"), ("device", dev_id + "\n"), ("mem_info_vram_total", vram),
                           ("mem_info_gtt_total", gtt)):
            (d / name).write_text(text)

    device("0000:c3:00.0", "0x1586", f"{512 * MIB}\n", f"{120 * GIB}\n")
    device("0000:21:00.0", "0x74a1", f"{192 * GIB}\n", f"{64 * GIB}\n")
    apu = mi300x(0, market_name="AMD Radeon 8060S Graphics", bdf="0000:c3:00.0", vram_total=512)
    b = AmdSmiBackend.open(StubAmdSmi([apu, mi300x(1)]), sysfs_root=tmp_path)
    mem = b.gpu_info(0).backend_memory
    assert allocatable(mem, "rocm") == 120 * GIB and mem[0].dedicated_bytes == 512 * MIB
    assert allocatable(mem, "vulkan") == allocatable(amd_apu_memory(128 * GIB, 512 * MIB, gtt_bytes=120 * GIB), "vulkan")
    assert b.gpu_info(1).backend_memory == ()
    (tmp_path / "0000:c3:00.0" / "mem_info_gtt_total").write_text("lots\n")  # not a number: no figures
    b2 = AmdSmiBackend.open(StubAmdSmi([apu]), sysfs_root=tmp_path)
    assert b2.gpu_info(0).backend_memory == ()
