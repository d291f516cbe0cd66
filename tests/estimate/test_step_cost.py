"""The served step's fitted costs (``estimate.step_cost``): the inversion, the fit leaving one source out, the stored
file read back validated, and the planner's step overhead and per-sequence time taking the stored fit."""

from __future__ import annotations

import pytest

from advisor.catalog.load import bundled_catalog
from advisor.catalog.measurements import bundled_measurements
from advisor.catalog.runtimes import bundled_step_fit, step_fit, step_fit_in_force
from advisor.estimate import step_cost as S
from advisor.planner.measured import figure_at_steps, step_constant


def test_implied_value_inverts_a_linear_step_by_hand():
    # one user on 80 layers: 10 ms of reading plus 80 x t a step; measured 14.8 ms -> t = 60 us
    at = lambda x: 0.010 + 80 * x  # noqa: E731
    assert S.implied_value(at, 0.0148) == pytest.approx(60e-6, rel=1e-3)
    assert S.implied_value(at, 0.009) == 0.0  # faster than the model at nothing added: held at the bound
    assert S.implied_value(at, 1.0) == S.BOUNDS_S[1]
    assert S.implied_value(lambda x: None, 0.01) is None


def _rows(values: dict[str, list[tuple[str, float]]]) -> list[S.StepRow]:
    return [S.StepRow(f"{name}-{src}-{i}", src, name, lambda fit, v=v: v)
            for name, items in values.items() for i, (src, v) in enumerate(items)]


def test_fit_is_the_median_of_source_means_and_one_source_leaves_it_assumed():
    tp = S.step_name("tp_layer", "vllm", "cuda", "fabric")
    moe = S.step_name("moe_expert", "vllm", "rocm", "fabric")
    # source a: rows 70 and 90 us (mean 80), b: 60, c: 100 -> median of 80, 60, 100 = 80 us
    rows = _rows({tp: [("a", 70e-6), ("a", 90e-6), ("b", 60e-6), ("c", 100e-6)], moe: [("a", 300e-6)]})
    fit, held = S.leave_one_source_out(rows, {"a", "b", "c", "d"})
    assert fit.value(tp) == pytest.approx(80e-6)
    assert fit.value(moe) == S.assumed(moe) == 0.0  # one source: nothing could check it
    assert held["a"].value(tp) == pytest.approx(80e-6)  # median of 60 and 100
    assert held["b"].value(tp) == pytest.approx(90e-6)  # of 80 and 100
    assert held["c"].value(tp) == pytest.approx(70e-6)  # of 80 and 60
    assert held["d"].key() == fit.key()  # a source with no rows of any constant: the full fit
    (c,) = fit.constants
    assert (c.sources, c.rows, c.loso_low, c.loso_high) == (3, 4, pytest.approx(70e-6), pytest.approx(90e-6))
    assert S.parse_step_fit(S.step_fit_to_csv(fit)) == fit


def test_assumed_is_two_allreduces_a_layer_over_the_link():
    assert S.assumed("tp_layer/vllm/cuda/fabric") == pytest.approx(20e-6)
    assert S.assumed("tp_layer/tensorrt-llm/cuda/pcie") == pytest.approx(60e-6)
    assert S.assumed("seq_layer/vllm/cuda/fabric/moe") == 0.0


def test_a_seq_layer_time_no_source_checks_for_its_kind_is_the_other_kinds():
    dense = S.step_name("seq_layer", "vllm", "rocm", "fabric", "dense")
    moe = S.step_name("seq_layer", "vllm", "rocm", "fabric", "moe")
    assert S.sibling_kind(dense) == moe and S.sibling_kind(moe) == dense
    only_moe = S.StepFit().with_values({moe: 1.98e-6})
    assert only_moe.value(dense) == pytest.approx(1.98e-6)  # the MoE time stands for the dense one
    both = only_moe.with_values({dense: 2.12e-6})
    assert (both.value(dense), both.value(moe)) == (pytest.approx(2.12e-6), pytest.approx(1.98e-6))  # each its own
    # neither kind checked on a family, backend or link: nothing, as before; nor does another link or family stand in
    assert only_moe.value(S.step_name("seq_layer", "vllm", "rocm", "pcie", "dense")) == 0.0
    assert only_moe.value(S.step_name("seq_layer", "tensorrt-llm", "rocm", "fabric", "dense")) == 0.0
    # other stages keep their assumed value (two all-reduces a layer), never a sibling's
    tp = S.step_name("tp_layer", "vllm", "rocm", "fabric")
    assert only_moe.value(tp) == S.assumed(tp)


@pytest.mark.parametrize("text, says", [
    ("name,seconds\n", "header"),
    ("name,seconds,sources,rows,loso_low,loso_high\nbogus/x,1e-5,2,2,1e-5,1e-5\n", "line 2: name"),
    ("name,seconds,sources,rows,loso_low,loso_high\ntp_layer/vllm/cuda/fabric,nan,2,2,1e-5,1e-5\n", "outside"),
    ("name,seconds,sources,rows,loso_low,loso_high\ntp_layer/vllm/cuda/fabric,-1e-5,2,2,1e-5,1e-5\n", "outside"),
    ("name,seconds,sources,rows,loso_low,loso_high\ntp_layer/vllm/cuda/fabric,1e-5,1,2,1e-5,1e-5\n", "at least 2"),
    ("name,seconds,sources,rows,loso_low,loso_high\ntp_layer/vllm/cuda/fabric,1e-5,x,2,1e-5,1e-5\n", "whole"),
    ("name,seconds,sources,rows,loso_low,loso_high\ntp_layer/vllm/cuda/fabric,1e-5,2,2,1e-5,1e-5\n"
     "tp_layer/vllm/cuda/fabric,1e-5,2,2,1e-5,1e-5\n", "twice"),
    # a prefill pass's time a kernel has no backend nor model kind (the host's), and stays within the bounds; the
    # per-layer and per-expert constants it replaced are no longer read
    ("name,seconds,sources,rows,loso_low,loso_high\nprefill_kernel/vllm/cuda/fabric,1e-4,2,2,1e-4,1e-4\n",
     "line 2: name"),
    ("name,seconds,sources,rows,loso_low,loso_high\nprefill_kernel/vllm/fabric/moe,1e-4,2,2,1e-4,1e-4\n",
     "line 2: name"),
    ("name,seconds,sources,rows,loso_low,loso_high\nprefill_expert/vllm/rocm/fabric,1e-4,2,2,1e-4,1e-4\n",
     "line 2: name"),
    ("name,seconds,sources,rows,loso_low,loso_high\nprefill_kernel/vllm/fabric,3e-3,2,2,1e-4,1e-4\n",
     "outside"),
])
def test_a_bad_stored_fit_gets_one_clear_error(text, says):
    with pytest.raises(S.StepFitError, match=says):
        S.parse_step_fit(text)


def test_the_stored_fit_is_read_and_in_force_unless_overridden():
    fit = bundled_step_fit()
    assert step_fit() is fit
    assert all(c.sources >= S.MIN_SOURCES for c in fit.constants)
    other = S.ASSUMED.with_values({"tp_layer/vllm/cuda/fabric": 1e-4})
    with step_fit_in_force(other):
        assert step_fit() is other
    assert step_fit() is fit


def _row(prefix: str):
    return next(m for m in bundled_measurements() if m.row_id.startswith(prefix))


def test_a_one_user_row_meets_its_figure_at_the_value_it_implies():
    """SGLang's Llama-3.1-70B on 8 x A100 at one user (the cookbook page: 18.63 ms a token): the per-layer time of a
    tensor-parallel step that meets it, planned forward again, gives the figure back within the inversion's 0.01 %."""
    cat = bundled_catalog()
    m = _row("sglang-cookbook-llama-3.1-70b-a100x8-1000in-1000out-c1-tpot")
    name = step_constant(m, cat)
    assert name == "tp_layer/vllm/cuda/fabric"
    x = S.implied_value(lambda v: figure_at_steps(m, cat, S.ASSUMED.with_values({name: v})), m.value)
    assert 40e-6 < x < 120e-6  # ~56 us a layer missing from the assumed 20 (issue 35): 76 us in all
    assert figure_at_steps(m, cat, S.ASSUMED.with_values({name: x})) == pytest.approx(m.value, rel=1e-4)
    # the per-token time rises with the constant: the assumed fit plans it short, as before the fit
    assert figure_at_steps(m, cat, S.ASSUMED) < 0.8 * m.value


def test_the_step_overhead_adds_the_fitted_constants_by_hand():
    """DeepSeek-V3.1 on eight MI300X with SGLang: 61 layers, 58 of them expert layers running 8 routed and 1 shared
    expert a token. The step's overhead over the assumed fit grows by 61 x (t - 20 us) + 58 x 9 x e for a fit of
    t a layer and e an expert; its per-sequence time by 61 x s."""
    from advisor.catalog.runtimes import choose
    from advisor.estimate.model import expert_layers
    from advisor.planner.serve_spec import RUNTIME_SERVING, per_sequence_s, step_overhead_s

    cat = bundled_catalog()
    acc = cat.accelerators["mi300x"]
    arch = cat.models["deepseek-v3"]
    assert (arch.layers, expert_layers(arch), arch.experts_per_token, arch.shared_experts) == (61, 58, 8, 1)
    choice = choose("sglang", "fp8", None, 16, acc.vendor, acc.kind)
    names = {"tp_layer/vllm/rocm/fabric": 50e-6, "moe_expert/vllm/rocm/fabric": 30e-6,
             "seq_layer/vllm/rocm/fabric/moe": 4e-6}
    with step_fit_in_force(S.ASSUMED):
        base = step_overhead_s(arch, choice, acc, 8)
        seq0 = per_sequence_s(arch, 8, 1e12, RUNTIME_SERVING["sglang"], "rocm", "vllm")
    with step_fit_in_force(S.ASSUMED.with_values(names)):
        fitted = step_overhead_s(arch, choice, acc, 8)
        seq1 = per_sequence_s(arch, 8, 1e12, RUNTIME_SERVING["sglang"], "rocm", "vllm")
        assert step_overhead_s(arch, choice, acc, 1) == base - 61 * 20e-6  # one device: no tensor-parallel costs
    assert fitted - base == pytest.approx(61 * 30e-6 + 58 * 9 * 30e-6, rel=1e-9)
    assert seq1 - seq0 == pytest.approx(61 * 4e-6, rel=1e-9)


def test_the_prefill_overhead_is_the_kernels_launched_times_the_fitted_time_a_kernel_by_hand():
    """DeepSeek-V3.1 in fp8 on eight MI300X with SGLang: a prefill pass's further time is its 2,044 kernels
    (``estimate.model.prefill_kernel_count`` with its inputs quantised) times the host time a kernel, whatever the
    backend; none on one device, none with nothing fitted; the decode step's overhead does not take it. Llama-3.1-70B
    in bf16: 80 layers of 4 + 5 + 3 kernels, 960. LMDeploy's TurboMind launches from C++: no such time."""
    from advisor.catalog.runtimes import choose
    from advisor.planner.serve_spec import prefill_overhead_s, step_overhead_s

    cat = bundled_catalog()
    acc, arch = cat.accelerators["mi300x"], cat.models["deepseek-v3"]
    choice = choose("sglang", "fp8", None, 16, acc.vendor, acc.kind)
    names = {"prefill_kernel/vllm/fabric": 50e-6}
    with step_fit_in_force(S.ASSUMED):
        assert prefill_overhead_s(arch, choice, acc, 8) == 0.0
        step0 = step_overhead_s(arch, choice, acc, 8)
    with step_fit_in_force(S.ASSUMED.with_values(names)):
        assert prefill_overhead_s(arch, choice, acc, 8) == pytest.approx(2044 * 50e-6, rel=1e-12)
        assert prefill_overhead_s(arch, choice, acc, 1) == 0.0
        assert step_overhead_s(arch, choice, acc, 8) == step0
        dense = cat.models["llama-3.1-70b"]
        bf16 = choose("sglang", "bf16", None, 16, acc.vendor, acc.kind)
        assert prefill_overhead_s(dense, bf16, acc, 8) == pytest.approx(960 * 50e-6, rel=1e-12)
        a100 = cat.accelerators["a100-80gb-sxm"]
        turbomind = choose("lmdeploy", "fp16", None, 16, a100.vendor, a100.kind)
        assert prefill_overhead_s(cat.models["llama-2-70b"], turbomind, a100, 4) == 0.0


def test_a_one_user_first_token_implies_a_prefill_constant_and_meets_it():
    """SGLang's Llama-3.1-70B on 8 x A100 at one user, 8,000-token prompts (the cookbook page: 395 ms mean first
    token) implies a prefill pass's host time a kernel, which planned forward gives the figure back within the
    inversion's 0.01 %; its loaded rows imply none (a first token at load is checked, not fitted); DeepSeek-R1's
    one-user first token on 8 x B200 implies the same constant (one rule for dense and MoE models); LMDeploy's
    TurboMind (kernels launched from C++) and one device imply none."""
    cat = bundled_catalog()
    m = _row("sglang-cookbook-llama-3.1-70b-a100x8-8000in-1000out-c1-ttft-mean")
    name = step_constant(m, cat)
    assert name == "prefill_kernel/vllm/fabric"
    base = bundled_step_fit().with_values({name: 0.0})
    x = S.implied_value(lambda v: figure_at_steps(m, cat, base.with_values({name: v})), m.value)
    assert x is not None and 0.0 <= x < S.BOUNDS_S[1]
    assert figure_at_steps(m, cat, base.with_values({name: x})) == pytest.approx(m.value, rel=2e-4)
    assert step_constant(_row("sglang-cookbook-llama-3.1-70b-a100x8-8000in-1000out-c16-ttft-mean"), cat) is None
    assert step_constant(_row("sglang-cookbook-deepseek-r1-0528-b200x8-1000in-1000out-c1-ttft-mean"), cat) == name
    assert step_constant(_row("sglang-cookbook-deepseek-v3.1-mi300xx8-1000in-8000out-c1-ttft-p50"), cat) == name
    # a first run's warm-up, excluded from the set (its later run of the same prompts is the steady state), implies none
    assert step_constant(_row("sglang-cookbook-deepseek-v3.1-mi300xx8-1000in-1000out-c1-ttft-p50"), cat) is None
    assert step_constant(_row("lmdeploy-a100-llama-2-7b-c1-128in-128out-ttft-mean"), cat) is None  # one device
    assert step_constant(_row("lmdeploy-a100-llama-2-70b-c1-128in-128out-ttft-mean"), cat) is None  # TurboMind


def test_the_stored_fit_holds_the_prefill_constants_fitted_on_two_sources_or_more():
    """The stored fit has the prefill pass's host time a kernel the published one-user first tokens imply
    (docs/method.md, the step's fitted costs), on the SGLang pages of seven models (B200, MI300X, A100), within its
    leave-one-source-out spread, and none of the per-layer and per-expert constants it replaced."""
    fit = {c.name: c for c in bundled_step_fit().constants}
    c = fit["prefill_kernel/vllm/fabric"]
    assert c.sources >= 7 and c.loso_low <= c.seconds <= c.loso_high
    assert 20e-6 < c.seconds < 100e-6  # tens of microseconds: a kernel's dispatch from Python, not a layer's
    assert not any(n.startswith(("prefill_layer/", "prefill_expert/")) for n in fit)
