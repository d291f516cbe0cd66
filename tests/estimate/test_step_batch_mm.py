"""The step fit's share of the profile's matrix-multiply efficiency (``estimate.step_cost``, ``batch_mm``): its name,
assumed value and stored bounds, which rows imply it, how the planner applies it, and that it closes the gap on
TensorRT-LLM's published max-throughput table (docs/method.md, "Serving under load", the step's fitted costs)."""

from __future__ import annotations

import pytest

from advisor.catalog.load import bundled_catalog
from advisor.catalog.measurements import bundled_measurements
from advisor.catalog.runtimes import bundled_step_fit, choose, step_fit_in_force
from advisor.estimate import step_cost as S
from advisor.planner.measured import batch_mm_constant, figure_at_steps, step_row
from advisor.planner.serve_spec import batch_mm_name, prefill_kernel, prefill_matmul_eta

TRT_FP8 = "batch_mm/tensorrt-llm/cuda/fp8"


def _row(row_id: str):
    return next(m for m in bundled_measurements() if m.row_id == row_id)


def test_the_share_is_named_by_runtime_backend_and_kernel_assumed_one_and_stored_within_its_bounds():
    assert S.step_name("batch_mm", "tensorrt-llm", "cuda", kind="fp8") == TRT_FP8
    assert S.assumed(TRT_FP8) == 1.0  # no source checks it: the profile's own efficiency
    assert S.bounds_of(TRT_FP8) == S.BATCH_MM_BOUNDS
    head = "name,seconds,sources,rows,loso_low,loso_high\n"
    fit = S.parse_step_fit(head + f"{TRT_FP8},0.64,3,87,0.62,0.67\n")
    assert fit.value(TRT_FP8) == 0.64
    for bad in ("1.6", "0.2", "nan"):  # a share beyond 0.3-1.5 is refused, one clear line
        with pytest.raises(S.StepFitError, match="outside"):
            S.parse_step_fit(head + f"{TRT_FP8},{bad},3,87,0.62,0.67\n")
    with pytest.raises(S.StepFitError, match="outside"):  # and a time a share's bounds would let through
        S.parse_step_fit(head + "tp_layer/vllm/cuda/fabric,0.5,2,2,1e-5,1e-5\n")


def test_fp16_and_bf16_kernels_share_one_name():
    cat = bundled_catalog()
    acc = cat.accelerators["h100-sxm"]
    choice = choose("vllm", "bf16", None, 16, acc.vendor, acc.kind)
    assert batch_mm_name(choice, "fp16") == batch_mm_name(choice, "bf16") == "batch_mm/vllm/cuda/16bit"


def test_only_throughputs_of_requests_started_together_imply_the_share():
    cat = bundled_catalog()
    trt = _row("trtllm-perf-llama-3.3-70b-h200-tp1-128in-2048out")
    assert trt.arrivals == "together" and batch_mm_constant(trt, cat) == TRT_FP8
    steady = next(m for m in bundled_measurements() if m.group == "serving" and m.arrivals == "steady"
                  and m.batch > 1)
    assert batch_mm_constant(steady, cat) is None  # planned through the queue: its error is the queue's
    tpot = next(m for m in bundled_measurements() if m.group == "tpot")
    assert batch_mm_constant(tpot, cat) is None


def test_the_share_scales_the_profiles_matrix_multiply_efficiency_by_hand():
    """H100 SXM, TensorRT-LLM, fp8 weights: the profile's share of the fp8 peak times the fitted share, in the plan
    and the server alike (both read ``prefill_matmul_eta``)."""
    cat = bundled_catalog()
    acc = cat.accelerators["h100-sxm"]
    choice = choose("tensorrt-llm", "fp8", None, 16, acc.vendor, acc.kind)
    kernel = prefill_kernel(choice, "fp8", acc)
    assert kernel == "fp8"
    peak = acc.peak_flops(kernel)
    with step_fit_in_force(S.ASSUMED):
        base = prefill_matmul_eta(choice, kernel, peak, acc)
    with step_fit_in_force(S.ASSUMED.with_values({TRT_FP8: 0.6})):
        assert prefill_matmul_eta(choice, kernel, peak, acc) == pytest.approx(0.6 * base, rel=1e-12)
    with step_fit_in_force(S.ASSUMED.with_values({TRT_FP8: 1.5})):  # never above the sustained peak
        assert prefill_matmul_eta(choice, kernel, peak, acc) <= 1.0


def test_the_published_max_throughput_implies_a_share_the_forward_model_gives_back():
    """TensorRT-LLM performance overview (v1.0, trtllm-bench, PyTorch backend): Llama 3.3 70B FP8 on one H200 at
    128/2048 tokens, 4336 output tokens/s with every request queued. At the profile's efficiency the plan is 1.37x
    that (5931); the share this row implies, planned forward again, gives 4336 back within the inversion's 0.01 %."""
    cat = bundled_catalog()
    m = _row("trtllm-perf-llama-3.3-70b-h200-tp1-128in-2048out")
    assert m.value == 4336
    assert figure_at_steps(m, cat, S.ASSUMED) / m.value == pytest.approx(1.37, abs=0.02)
    row = step_row(m, cat)
    assert row.name == TRT_FP8
    x = row.implied(S.ASSUMED)
    assert 0.4 < x < 0.8
    assert figure_at_steps(m, cat, S.ASSUMED.with_values({TRT_FP8: x})) == pytest.approx(m.value, rel=1e-3)


def test_the_stored_share_is_fitted_on_several_sources_and_brings_the_table_within_a_quarter():
    """The stored fit (bench_truth --write): TensorRT-LLM's fp8 share from three sources' max-throughput tables, its
    leave-one-source-out spread around it; the 70B H200 128/2048 row planned within 25 % of 4336 with it."""
    fit = bundled_step_fit()
    (c,) = [c for c in fit.constants if c.name == TRT_FP8]
    assert c.sources >= 3 and 0.5 < c.seconds < 0.8 and c.loso_low <= c.seconds <= c.loso_high
    assert c.loso_high - c.loso_low < 0.1  # the sources agree
    m = _row("trtllm-perf-llama-3.3-70b-h200-tp1-128in-2048out")
    assert figure_at_steps(m, bundled_catalog(), fit) == pytest.approx(m.value, rel=0.25)


TRT_MOE = "moe_mm/tensorrt-llm/cuda"


def test_a_mixture_of_experts_implies_its_own_share_named_by_runtime_and_backend():
    """A MoE row's throughput implies the share its grouped expert products reach of the dense ones' (``moe_mm``),
    not the dense kernel's share: Qwen3-235B-A22B FP8 on eight H200s and Qwen3-30B-A3B FP4 on one B200 both imply
    the one TensorRT-LLM CUDA name, whatever the kernel type; a dense row keeps its kernel's name."""
    cat = bundled_catalog()
    assert S.step_name("moe_mm", "tensorrt-llm", "cuda") == TRT_MOE
    assert S.assumed(TRT_MOE) == 1.0 and S.bounds_of(TRT_MOE) == S.BATCH_MM_BOUNDS and S.is_share(TRT_MOE)
    assert batch_mm_constant(_row("trtllm-perf-qwen3-235b-a22b-h200-tp8-1000in-1000out"), cat) == TRT_MOE
    assert batch_mm_constant(_row("trtllm-perf-qwen3-30b-a3b-b200-tp1-1000in-1000out"), cat) == TRT_MOE
    assert batch_mm_constant(_row("trtllm-perf-llama-3.3-70b-h200-tp1-1000in-1000out"), cat) == TRT_FP8
    head = "name,seconds,sources,rows,loso_low,loso_high\n"
    assert S.parse_step_fit(head + f"{TRT_MOE},0.59,2,110,0.55,0.64\n").value(TRT_MOE) == 0.59
    with pytest.raises(S.StepFitError, match="outside"):
        S.parse_step_fit(head + f"{TRT_MOE},0.1,2,110,0.55,0.64\n")


def test_the_moe_share_multiplies_the_dense_kernels_share_by_hand():
    """H200, TensorRT-LLM, fp8: a MoE's products at the dense fp8 share 0.64 times the MoE share 0.5, 0.32 of the
    profile's; a dense model's at 0.64 alone, the MoE share not read."""
    cat = bundled_catalog()
    acc = cat.accelerators["h200"]
    choice = choose("tensorrt-llm", "fp8", None, 16, acc.vendor, acc.kind)
    peak = acc.peak_flops("fp8")
    with step_fit_in_force(S.ASSUMED):
        base = prefill_matmul_eta(choice, "fp8", peak, acc)
        assert prefill_matmul_eta(choice, "fp8", peak, acc, moe=True) == base  # nothing fitted: the profile's
    with step_fit_in_force(S.ASSUMED.with_values({TRT_FP8: 0.64, TRT_MOE: 0.5})):
        assert prefill_matmul_eta(choice, "fp8", peak, acc) == pytest.approx(0.64 * base, rel=1e-12)
        assert prefill_matmul_eta(choice, "fp8", peak, acc, moe=True) == pytest.approx(0.32 * base, rel=1e-12)


def test_the_stored_moe_share_is_fitted_after_the_dense_ones_on_two_sources():
    """The stored fit: the MoE share from TensorRT-LLM's performance overview and its RTX 6000 Pro tables, fitted in
    the stage after the dense shares (``STAGES``), below 1 (grouped expert products reach less than one dense
    product over the batch); the MoE rows no longer imply the dense fp8 share. Its spread leaving either source out
    need not hold its value: a share of a share, it is fitted each time on the dense shares of the same fit, which
    leaving a source out moves too (leaving the RTX 6000 Pro tables out leaves the fp4 share to the B200 rows alone);
    each held-out value stays a share below 1, within 1.5 times the value."""
    assert S.STAGES.index("moe_mm") == S.STAGES.index("batch_mm") + 1
    fit = bundled_step_fit()
    (c,) = [c for c in fit.constants if c.name == TRT_MOE]
    assert c.sources == 2 and 0.3 < c.seconds < 1.0
    assert 0.3 < c.loso_low <= c.loso_high < 1.0
    assert c.seconds / 1.5 < c.loso_low and c.loso_high < 1.5 * c.seconds
