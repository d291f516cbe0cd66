"""FP4 arithmetic (docs/method.md, "FP4 products"): the catalog's dense FP4 peaks, their fallback on parts without
FP4 units, and the one planner rule (``serve_spec.fp4_products``) that runs NVFP4 products in fp4 where the runtime
and the part do, worked by hand."""

from __future__ import annotations

import pytest

from advisor.catalog.derive import DriverFigures, derive_accelerator
from advisor.catalog.load import bundled_catalog
from advisor.catalog.runtimes import bundled_step_fit, choose, step_fit_in_force
from advisor.estimate import compute
from advisor.estimate import step_cost as S
from advisor.planner import PlanRequest
from advisor.planner.calibrated import raw_estimates
from advisor.planner.measured import job_precision
from advisor.planner.request import lengths, resolve_job_model
from advisor.planner.serve_spec import fp4_products, prefill_kernel
from advisor.planner.timing import serving_timing

CAT = bundled_catalog()
PRO = CAT.accelerators["rtx-pro-6000-blackwell"]


def test_the_catalog_holds_dense_fp4_peaks_of_blackwell_parts_and_falls_back_elsewhere():
    # NVIDIA's "AI TOPS" are FP4 with 2:4 sparsity: halved, the dense rate; twice the dense FP8 (four times the
    # GeForce fp8 column, which is FP8 with FP32 accumulation at half rate)
    assert PRO.peak_flops("fp4") == pytest.approx(2000e12)  # 4,000 AI TOPS / 2
    assert PRO.peak_flops("fp4") == pytest.approx(2 * PRO.peak_flops("fp8"))
    assert CAT.accelerators["rtx-5090"].peak_flops("fp4") == pytest.approx(1676e12)  # 3,352 / 2
    assert CAT.accelerators["b200"].peak_flops("fp4") == pytest.approx(9000e12)  # DGX B200: 144 PFLOPS sparse / 8 / 2
    assert PRO.supports("fp4") and PRO.peak_precision("fp4") == "fp4"
    h100, a100 = CAT.accelerators["h100-sxm"], CAT.accelerators["a100-80gb-sxm"]
    assert not h100.supports("fp4") and h100.fp4_flops is None
    assert h100.peak_flops("fp4") == h100.peak_flops("fp8") == pytest.approx(1979e12)  # the fp8 rate
    assert h100.peak_precision("fp4") == "fp8"
    assert a100.peak_flops("fp4") == pytest.approx(312e12) and a100.peak_precision("fp4") == "bf16"  # no fp8 either
    with_fp4 = {a.id for a in CAT.accelerators.values() if a.fp4_flops}
    assert with_fp4 == {"b200", "rtx-pro-6000-blackwell", "rtx-5090", "rtx-5080", "rtx-5070-ti", "rtx-5070",
                        "rtx-5060-ti-16gb"}


def test_a_derived_blackwell_entry_has_four_times_its_fp16_accumulate_rate_in_fp4():
    fig = DriverFigures(name="NVIDIA GeForce RTX 5090", memory_total_bytes=32 * 2**30, compute_capability=(12, 0),
                        boost_sm_clock_mhz=2407, max_mem_clock_mhz=14001, mem_bus_width_bits=512, sm_count=170)
    acc = derive_accelerator(fig)
    assert acc.fp4_flops == pytest.approx(170 * 2407e6 * 1024 * 4)  # 1,676 TFLOP/s
    assert acc.fp4_flops == pytest.approx(CAT.accelerators["rtx-5090"].fp4_flops, rel=0.01)
    ada = derive_accelerator(DriverFigures(name="NVIDIA GeForce RTX 4090", memory_total_bytes=24 * 2**30,
                                           compute_capability=(8, 9), boost_sm_clock_mhz=2520, max_mem_clock_mhz=10501,
                                           mem_bus_width_bits=384, sm_count=128))
    assert ada.fp4_flops is None and ada.peak_precision("fp4") == "fp8"


@pytest.mark.parametrize("runtime, quant, acc_id, kernel", [
    ("tensorrt-llm", "nvfp4", "rtx-pro-6000-blackwell", "fp4"),
    ("vllm", "nvfp4", "rtx-pro-6000-blackwell", "fp4"),
    ("sglang", "nvfp4", "b200", "fp4"),
    ("vllm", "nvfp4", "h100-sxm", "fp16"),  # no FP4 units: dequantised, as before
    ("tensorrt-llm", "nvfp4", "h100-sxm", "fp16"),
    ("vllm", "mxfp4", "rtx-5090", "fp16"),  # gpt-oss's MXFP4 stays weight-only
    ("tensorrt-llm", "fp8", "rtx-pro-6000-blackwell", "fp8"),  # fp8 weights keep their own type
])
def test_nvfp4_products_run_in_fp4_only_under_its_runtimes_on_parts_with_fp4_units(runtime, quant, acc_id, kernel):
    acc = CAT.accelerators[acc_id]
    choice = choose(runtime, "fp8", quant, 8, acc.vendor, acc.kind)
    assert fp4_products(choice, acc) == (kernel == "fp4")
    assert prefill_kernel(choice, "fp8", acc) == kernel


TRT_FP4 = "batch_mm/tensorrt-llm/cuda/fp4"


def _speed(quant: str, fit=None):
    req = PlanRequest.from_mapping(dict(model="llama-3.3-70b", workload="inference", quant=quant, precision="fp8",
                                        runtime="tensorrt-llm", batch=1, prompt_tokens=1000, output_tokens=100,
                                        accelerator=["rtx-pro-6000-blackwell"]))
    m = resolve_job_model(req, CAT)
    with raw_estimates(), step_fit_in_force(fit if fit is not None else bundled_step_fit()):
        return serving_timing(req, PRO, m.arch, m.params, m.active_params, lengths(req, 1 << 30), 1, None)


def test_one_card_llama_3_3_70b_nvfp4_prefill_multiplies_at_the_fp4_rate_by_hand():
    # at the profile's own share (the step fit's assumed values: no fitted batch_mm share); the stored fit's fp4
    # share is applied at the end
    t = _speed("nvfp4", S.ASSUMED)
    s = t.speed
    # the prompt's products: every active parameter but the embedding and the output layer (128,256 x 8,192 each),
    # 70.554e9 - 2 x 1.0507e9 = 68.452e9, two FLOPs each per token: 1.369e14 FLOPs for 1,000 tokens
    assert s.prompt_params == pytest.approx(68.452e9, rel=1e-4)
    mm, _ = compute.prefill_flops(s.prompt_params, 1000, s.layers, s.attention_dim)
    assert mm == pytest.approx(1.369e14, rel=1e-3)
    # at 2,000 TFLOP/s (fp4) x 0.65 (TensorRT-LLM's prefill share, the profile's own): 0.105 s;
    # at the fp8 rate it would be 0.211 s, at the 16-bit rate the format took before 0.421 s
    assert s.matmul_peak_flops == pytest.approx(2000e12) and s.matmul_eta == pytest.approx(0.65)
    assert mm / (s.matmul_peak_flops * s.matmul_eta) == pytest.approx(0.1053, rel=1e-3)
    assert mm / (PRO.peak_flops("fp8") * s.matmul_eta) == pytest.approx(0.2106, rel=1e-3)
    assert "products in fp4" in t.note and "2,000 TFLOP/s" in t.note
    # the decode's utilisation is over the fp4 peak the products run at
    assert t.mfu == pytest.approx(2.0 * 70.554e9 * t.tokens_per_s / 2000e12, rel=1e-3)
    # fp8 weights on the same card: the fp8 rate, no fp4 note
    f = _speed("fp8", S.ASSUMED)
    assert f.speed.matmul_peak_flops == pytest.approx(1000e12) and "fp4" not in f.note
    # With the stored fit: since TensorRT-LLM's performance overview v1.0 B200 FP4 columns joined the RTX 6000 Pro
    # ones, two sources imply a share of the profile's efficiency for TensorRT-LLM's fp4 products (batch_mm, as for
    # fp8), so the plan's 0.65 is scaled by it: at the share stored when it was added, 0.545, 0.354 of the fp4 peak,
    # 1.369e14 / (2,000e12 x 0.354) = 0.193 s for the prompt (prefill_matmul_eta: the profile's share times it).
    (c,) = [c for c in bundled_step_fit().constants if c.name == TRT_FP4]
    assert c.sources >= 2 and S.BATCH_MM_BOUNDS[0] <= c.seconds <= S.BATCH_MM_BOUNDS[1]
    stored = _speed("nvfp4").speed
    assert stored.matmul_peak_flops == pytest.approx(2000e12)
    assert stored.matmul_eta == pytest.approx(0.65 * min(c.seconds, 1.0 / 0.65), rel=1e-9)


def test_a_measured_row_of_fp4_products_is_planned_at_the_jobs_fp8_precision():
    class Row:
        precision = "fp4"
    assert job_precision(Row()) == "fp8"
    Row.precision = "int8"
    assert job_precision(Row()) == "fp16"
    Row.precision = "bf16"
    assert job_precision(Row()) == "bf16"
