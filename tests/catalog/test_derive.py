"""Accelerators derived from driver figures: the RTX 4090's NVML figures land near its catalog peaks."""

from __future__ import annotations

import pytest

from advisor.catalog import load_catalog
from advisor.catalog.derive import (
    ARCHS,
    DeriveError,
    DriverFigures,
    derive_accelerator,
    is_geforce,
    refine_with_probes,
    slug,
    spec_peaks,
)

MIB = 2**20
# What NVML reports on an RTX 4090 (nvidia-smi -q: max clocks 3120 MHz SM, 10501 MHz memory; 384-bit bus;
# nvmlDeviceGetNumGpuCores 16384; the driver reports no customer boost clock on GeForce).
RTX4090 = DriverFigures(name="NVIDIA GeForce RTX 4090", memory_total_bytes=24564 * MIB, compute_capability=(8, 9),
                        max_sm_clock_mhz=3120, max_mem_clock_mhz=10501, mem_bus_width_bits=384, cuda_cores=16384,
                        power_limit_w=450, pcie_gen_max=4, pcie_width_max=16)
H100 = DriverFigures(name="NVIDIA H100 80GB HBM3", memory_total_bytes=81559 * MIB, compute_capability=(9, 0),
                     max_sm_clock_mhz=1980, max_mem_clock_mhz=2619, mem_bus_width_bits=5120, cuda_cores=16896)


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(use_user_file=False)


@pytest.mark.parametrize("figures, catalog_id", [(RTX4090, "rtx-4090"), (H100, "h100-sxm")])
def test_derived_peaks_within_ten_percent_of_catalog(figures, catalog_id, catalog):
    acc = derive_accelerator(figures)
    ref = catalog.accelerator(catalog_id)
    assert acc.derived and acc.id.startswith("derived:")
    assert acc.mem_bandwidth_bps == pytest.approx(ref.mem_bandwidth_bps, rel=0.10)
    for precision in ("fp32", "tf32", "bf16", "fp16", "fp8", "int8"):
        assert acc.peak_flops(precision) == pytest.approx(ref.peak_flops(precision), rel=0.10), precision
    assert acc.memory_bytes == figures.memory_total_bytes


def test_rtx4090_derivation_by_hand():
    acc = derive_accelerator(RTX4090)
    clock = 3120e6 * 0.81  # GeForce: max clock x 0.81 = 2527 MHz
    assert acc.fp32_flops == pytest.approx(16384 * 2 * clock)  # 82.8 TFLOPS
    assert acc.bf16_flops == pytest.approx(128 * clock * 1024 / 2)  # 165.6 with FP32 accumulate
    assert acc.tf32_flops == pytest.approx(acc.bf16_flops / 2)
    assert acc.fp8_flops == pytest.approx(acc.bf16_flops * 2)
    assert acc.int8_ops == pytest.approx(128 * clock * 1024 * 2)
    assert acc.mem_bandwidth_bps == pytest.approx(10501e6 * 384 * 2 / 8)  # 1008.1 GB/s
    how = dict(acc.derivation)
    assert set(how) >= {"memory", "mem_bandwidth", "fp32", "tensor"} and "0.81" in how["tensor"]
    assert acc.kind == "consumer" and acc.interconnect == "PCIe 4.0 x16" and acc.tdp_w == 450


def test_rated_boost_clock_used_when_reported():
    from dataclasses import replace

    acc = derive_accelerator(replace(RTX4090, boost_sm_clock_mhz=2520))
    assert acc.fp32_flops == pytest.approx(16384 * 2 * 2520e6)  # 82.58, the published figure
    assert "rated boost" in dict(acc.derivation)["fp32"]


def test_turing_and_unknown_architecture():
    turing = derive_accelerator(DriverFigures(name="NVIDIA GeForce RTX 2080 Ti", memory_total_bytes=11 * 2**30,
                                              compute_capability=(7, 5), boost_sm_clock_mhz=1545,
                                              max_mem_clock_mhz=7000, mem_bus_width_bits=352, cuda_cores=4352))
    assert turing.bf16_flops is None and turing.tf32_flops is None and turing.fp8_flops is None
    assert turing.fp16_flops == pytest.approx(68 * 1545e6 * 512)  # 53.8 TFLOPS, FP32 accumulate
    unknown = derive_accelerator(DriverFigures(name="NVIDIA Future", memory_total_bytes=2**34,
                                               compute_capability=(42, 0), max_mem_clock_mhz=1000,
                                               mem_bus_width_bits=256, cuda_cores=1000, max_sm_clock_mhz=1000))
    assert unknown.fp32_flops is None and "unknown compute capability" in dict(unknown.derivation)["compute"]
    assert unknown.mem_bandwidth_bps == pytest.approx(64e9)


@pytest.mark.parametrize("missing", ["memory_total_bytes", "max_mem_clock_mhz", "mem_bus_width_bits"])
def test_missing_figures_raise(missing):
    from dataclasses import replace

    with pytest.raises(DeriveError):
        derive_accelerator(replace(RTX4090, **{missing: None}))


def test_refined_by_probes():
    acc = refine_with_probes(derive_accelerator(RTX4090), mem_bandwidth_bps=910e9, matmul_flops={"bf16": 150e12})
    assert acc.mem_bandwidth_bps == 910e9 and acc.bf16_flops == 150e12
    assert "measured" in dict(acc.derivation)["mem_bandwidth"] and "matmul" in dict(acc.derivation)["bf16"]


def test_names_and_rates():
    assert slug("NVIDIA GeForce RTX 4060 Laptop GPU") == "rtx-4060-laptop"
    assert is_geforce("NVIDIA GeForce RTX 4090") and not is_geforce("NVIDIA TITAN RTX")
    assert not is_geforce("NVIDIA RTX A6000")
    with pytest.raises(DeriveError):
        spec_peaks((1, 0), 1, 1, 1.0, half_rate_fp32_accumulate=False)
    assert ARCHS[(9, 0)].fp16_acc16_per_sm == 4096


@pytest.mark.parametrize("catalog_id, cc, sms, cores, boost_mhz, geforce", [
    ("rtx-4060-ti-16gb", (8, 9), 34, 4352, 2535, True),
    ("rtx-3090", (8, 6), 82, 10496, 1695, True),
    ("rtx-5090", (12, 0), 170, 21760, 2407, True),
])
def test_rule_reproduces_catalog_rows(catalog_id, cc, sms, cores, boost_mhz, geforce, catalog):
    """The rule the new catalog rows were derived with reproduces rows derived or published before."""
    peaks = spec_peaks(cc, sms, cores, boost_mhz * 1e6, half_rate_fp32_accumulate=geforce)
    ref = catalog.accelerator(catalog_id)
    for precision in ("bf16", "fp16", "tf32"):
        assert peaks[precision] == pytest.approx(ref.peak_flops(precision), rel=0.02), precision
