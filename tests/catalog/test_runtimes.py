"""Runtime profiles and weight formats as data: resources/runtimes.toml loaded, validated and resolved."""

import pytest

from advisor.catalog.load import _resource_text
from advisor.catalog.runtimes import (
    BACKENDS,
    RuntimeDataError,
    backend_of,
    choose,
    parse_runtimes_toml,
    runtime_data,
    runtime_for_format,
)

DATA = runtime_data()


def test_the_runtimes_the_issue_names_are_there_with_their_aliases():
    for name in ("llama.cpp", "vllm", "sglang", "tensorrt-llm", "exllamav2", "mlc", "mlx", "transformers"):
        assert name in DATA.runtimes
    for alias, rid in (("ollama", "llama.cpp"), ("lm-studio", "llama.cpp"), ("LMStudio", "llama.cpp"),
                       ("exllama", "exllamav2"), ("trt-llm", "tensorrt-llm"), ("hf", "transformers")):
        assert DATA.runtime(alias).id == rid
    with pytest.raises(KeyError, match="known: llama.cpp, vllm"):
        DATA.runtime("ollama-turbo")


@pytest.mark.parametrize(("runtime", "fmt", "bits"), [
    ("llama.cpp", "q4_k_m", 4.8944), ("vllm", "awq", 4.156), ("sglang", "awq", 4.156), ("tensorrt-llm", "awq", 4.156),
    ("exllamav2", "exl2", 4.0), ("mlc", "q4f16_1", 4.5), ("mlx", "mlx-4bit", 4.5), ("transformers", "nf4", 4.127)])
def test_int4_means_each_runtimes_own_4_bit_format(runtime, fmt, bits):
    rt = DATA.runtimes[runtime]
    assert rt.format_for("int4") == fmt
    assert DATA.formats[fmt].bits_per_weight == bits and DATA.formats[fmt].cls == "q4"


def test_format_bits_worked_out_from_their_layouts():
    f = DATA.formats
    assert f["awq"].bits_per_weight == pytest.approx(4 + (16 + 4) / 128, abs=1e-3)  # fp16 scale, 4-bit zero per 128
    assert f["mxfp4"].bits_per_weight == 4 + 8 / 32  # E8M0 scale per 32 (OCP MX v1.0)
    assert f["nvfp4"].bits_per_weight == 4 + 8 / 16  # E4M3 scale per 16
    assert f["q4_0"].bits_per_weight == 18 * 8 / 32 and f["q8_0"].bits_per_weight == 34 * 8 / 32
    assert f["q4f16_1"].bits_per_weight == 4 + 16 / 32 and f["mlx-4bit"].bits_per_weight == 4 + 32 / 64
    assert all(fmt.source for fmt in f.values())


def test_memory_rules_the_serving_model_needs():
    assert DATA.runtimes["vllm"].gpu_memory_utilization == 0.9 and DATA.runtimes["vllm"].batching == "continuous"
    lc = DATA.runtimes["llama.cpp"]
    assert lc.batching == "slots" and lc.slots_share_context and lc.gpu_memory_utilization is None
    assert dict(lc.kv_formats) == {16: "f16", 8: "q8_0", 4: "q4_0"}
    assert DATA.runtimes["transformers"].batching == "static"


def test_choose_resolves_format_kv_and_backend():
    c = choose("ollama", "int4", None, 8, "NVIDIA", "consumer")
    assert (c.runtime.id, c.weight_format.id, c.kv_format, c.backend, c.backend_supported) == (
        "llama.cpp", "q4_k_m", "q8_0", "cuda", True)
    assert c.profile.prefill_peak_quantized == "int8"  # llama.cpp's MMQ kernels on NVIDIA
    doc = c.to_json()
    assert doc["kind"] == "runtime" and {"id", "name", "weight_format", "kv_format", "backend"} <= set(doc)
    m = choose("llama.cpp", "bf16", "Q5_K_M", 16, "Apple", "apple")
    assert (m.weight_format.id, m.backend) == ("q5_k_m", "metal")
    v = choose("vllm", "bf16", None, 16, "Apple", "apple")  # no Metal backend: its CUDA figures stand in
    assert not v.backend_supported and v.profile.backend == "cuda"


def test_choose_refuses_what_the_runtime_does_not_load():
    with pytest.raises(KeyError, match="llama.cpp does not load awq; it loads f32, f16"):
        choose("llama.cpp", "bf16", "awq", 16, "NVIDIA", "consumer")
    with pytest.raises(KeyError, match="vllm has no 4-bit KV cache"):
        choose("vllm", "bf16", None, 4, "NVIDIA", "datacenter")
    with pytest.raises(KeyError, match="unknown weight format"):
        choose("vllm", "bf16", "q9_z", 16, "NVIDIA", "datacenter")


def test_backends_by_vendor():
    assert [backend_of(v, k) for v, k in (("NVIDIA", "datacenter"), ("AMD", "consumer"), ("Apple", "apple"),
                                          ("Intel", "consumer"), ("", "cpu"), ("Google", "tpu"))] == [
        "cuda", "rocm", "metal", "vulkan", "cpu", None]
    assert all(b.backend in BACKENDS for rt in DATA.runtimes.values() for b in rt.backends)


def test_runtime_for_format():
    assert runtime_for_format("exl2") == "exllamav2" and runtime_for_format("awq") == "vllm"
    assert runtime_for_format("mlx-4bit") == "mlx" and runtime_for_format("nope") is None


BASE = _resource_text("runtimes.toml")


@pytest.mark.parametrize(("old", "new", "message"), [
    ('bits_per_weight = 4.156\nclass = "q4"\nfamily = "awq"', 'bits_per_weight = 40\nclass = "q4"\nfamily = "awq"',
     "formats.awq: bits_per_weight"),
    ('class = "q4"\nfamily = "awq"', 'class = "q9"\nfamily = "awq"', "formats.awq: class"),
    ("decode_eta = { f16 = 0.93,", "decode_eta = { f16 = 1.3,", "decode_eta.f16"),
    ("overhead_per_layer_us = 60.0", "overhead_per_layer_us = -1", "overhead_per_layer_us"),
    ('batching = "slots"', 'batching = "magic"', "batching"),
    ('aliases = ["ollama",', 'aliases = ["vllm", "ollama",', "already names"),
    ('prefill_peak_quantized = "int8"', 'prefill_peak_quantized = "int3"', "prefill_peak_quantized"),
    ("int4 = \"q4_k_m\" }", "int4 = \"awq\" }", "precision_formats"),
    ("schema = 1", "schema = 2", "schema must be 1"),
])
def test_a_broken_file_names_the_entry(old, new, message):
    assert old in BASE
    with pytest.raises(RuntimeDataError, match=message):
        parse_runtimes_toml(BASE.replace(old, new, 1))


def test_a_backend_missing_a_class_its_formats_use_is_refused():
    broken = BASE.replace("decode_eta = { f16 = 0.93, q8 = 0.90, q6 = 0.88, q5 = 0.88, q4 = 0.85, q3 = 0.80, q2 = 0.80 }",
                          "decode_eta = { f16 = 0.93 }", 1)
    with pytest.raises(RuntimeDataError, match="lacks the classes"):
        parse_runtimes_toml(broken)
    with pytest.raises(RuntimeDataError, match="runtimes.toml"):
        parse_runtimes_toml("schema = [")


def test_prefill_matmul_flops_adds_the_vector_work_in_series():
    """Hand-worked: llama.cpp's CUDA profile (int8 MMQ at 0.44 of the peak, 0.227 fp32 FLOPs per matrix FLOP) on an
    RTX 4090 (660.6 int8 TOPS, 82.6 fp32 TFLOPS): 1 / (1 / (660.6e12 * 0.44) + 0.227 / 82.6e12) = 1.616e14 FLOP/s,
    so Llama 2 7B (2 * 6.74e9 FLOPs a token) prefills 11,990 tokens/s; llama.cpp discussion #15013 measured 11,992.70
    (pp512, Q4_0, -fa 0)."""
    cuda = DATA.runtime("llama.cpp").backend("cuda")
    assert cuda.prefill_vector_flops_quantized == pytest.approx(0.227)
    rate = cuda.prefill_matmul_flops(True, 660.6e12, 82.6e12)
    assert rate == pytest.approx(1.0 / (1.0 / (660.6e12 * 0.44) + 0.227 / 82.6e12), rel=1e-12)
    assert rate / (2 * 6.74e9) == pytest.approx(11992.70, rel=0.01)
    # without a vector peak, or for 16-bit weights on a backend with no 16-bit vector work: the kernel's share alone
    assert cuda.prefill_matmul_flops(True, 660.6e12, None) == pytest.approx(660.6e12 * 0.44)
    assert cuda.prefill_matmul_flops(False, 165.2e12, 82.6e12) == pytest.approx(165.2e12 * cuda.prefill_eta)
    # Metal has no such split (the default 0)
    metal = DATA.runtime("llama.cpp").backend("metal")
    assert metal.prefill_matmul_flops(True, 27.2e12, 27.2e12) == pytest.approx(27.2e12 * metal.prefill_eta_quantized)


def test_a_negative_vector_share_is_refused():
    text = _resource_text("runtimes.toml").replace("prefill_vector_flops_quantized = 0.227",
                                                   "prefill_vector_flops_quantized = -1")
    with pytest.raises(RuntimeDataError, match="prefill_vector_flops_quantized must be a number between 0 and 10"):
        parse_runtimes_toml(text)
