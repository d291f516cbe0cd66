"""What a weight format weighs for a given model (issue 36): GGUF named quants priced tensor by tensor as
llama-quantize types them, safetensors formats with their embeddings at 16 bits, checked against published files.

Tolerance 1 % of the listed size (the issue's bar); the GGUF header (vocabulary, a few MB) is not counted, so the
files chosen are of 3B parameters and more, where it is under 0.4 %.
"""

from __future__ import annotations

import pytest

from advisor.catalog.load import bundled_catalog
from advisor.estimate import memory
from advisor.estimate.gguf_mix import gguf_mix, gguf_weight_bytes, tensor_types
from advisor.estimate.model import generic_arch, param_count

CAT = bundled_catalog()
# llama.cpp tools/quantize/README.md, table for meta-llama/Llama-3.1-8B (2025): bits per weight of each whole file
# (size / 8,030,261,248 parameters). Made with an importance matrix except IQ4_NL and IQ4_XS.
LLAMA31_8B_README = {
    "f16": 16.0005, "q8_0": 8.5008, "q6_k": 6.5633, "q5_k_m": 5.7036, "q5_k_s": 5.5704, "q4_k_m": 4.8944,
    "q4_k_s": 4.6672, "q3_k_l": 4.2979, "q3_k_s": 3.6429, "iq3_m": 3.7628, "iq3_xxs": 3.2548, "q2_k": 3.1593,
    "iq2_m": 2.9294, "iq2_xs": 2.5882, "iq2_xxs": 2.3824, "iq1_s": 2.0042,
}
LLAMA31_8B_README_NO_IMATRIX = {"iq4_nl": 4.6818, "iq4_xs": 4.4597}
HF = "https://huggingface.co/"
# (preset, llama.cpp file type, listed size in bytes, the model page that lists it)
PUBLISHED_FILES = [
    ("qwen2.5-72b", "q4_k_m", 47.42e9, HF + "bartowski/Qwen2.5-72B-Instruct-GGUF (Q4_K_M 47.42GB)"),
    ("llama-3.1-70b", "q4_k_m", 42.52e9, HF + "bartowski/Meta-Llama-3.1-70B-Instruct-GGUF (Q4_K_M 42.52GB)"),
    ("gpt-oss-20b", "mxfp4_moe", 12.1e9, HF + "ggml-org/gpt-oss-20b-GGUF (gpt-oss-20b-mxfp4.gguf, 12.1 GB)"),
    ("qwen2.5-7b", "q4_k_m", 4.68e9, HF + "bartowski/Qwen2.5-7B-Instruct-GGUF (Q4_K_M 4.68GB)"),
    ("qwen2.5-14b", "q4_k_m", 8.99e9, HF + "bartowski/Qwen2.5-14B-Instruct-GGUF (Q4_K_M 8.99GB)"),
    ("qwen2.5-32b", "q4_k_m", 19.85e9, HF + "bartowski/Qwen2.5-32B-Instruct-GGUF (Q4_K_M 19.85GB)"),
    ("gemma-2-9b", "q4_k_m", 5.76e9, HF + "bartowski/gemma-2-9b-it-GGUF (Q4_K_M 5.76GB)"),
    ("gemma-3-27b", "q4_k_m", 16.55e9, HF + "bartowski/google_gemma-3-27b-it-GGUF (Q4_K_M 16.55GB, mmproj apart)"),
    ("mistral-nemo-12b", "q4_k_m", 7.48e9, HF + "bartowski/Mistral-Nemo-Instruct-2407-GGUF (Q4_K_M 7.48GB)"),
    ("mistral-7b", "q4_k_m", 4.37e9, HF + "TheBloke/Mistral-7B-v0.1-GGUF (mistral-7b-v0.1.Q4_K_M.gguf 4.37 GB)"),
    ("llama-2-7b", "q4_k_m", 4.08e9, HF + "TheBloke/Llama-2-7B-GGUF (llama-2-7b.Q4_K_M.gguf 4.08 GB)"),
    ("qwen3-8b", "q4_k_m", 5.03e9, HF + "Qwen/Qwen3-8B-GGUF (Qwen3-8B-Q4_K_M.gguf 5.03 GB)"),
    ("llama-3.2-3b", "q4_k_m", 2.02e9, HF + "bartowski/Llama-3.2-3B-Instruct-GGUF (Q4_K_M 2.02GB)"),
    ("gemma-3-12b", "q4_k_m", 6.79 * 2**30, "llama-bench table in github.com/ggml-org/llama.cpp pull 13194 "
     "(2025-05-13): gemma3 12B Q4_K - Medium, 6.79 GiB, 11.77 B"),
]
# bartowski's table of every quant of Llama-3.1-Nemotron-70B-Instruct (Llama-3.1-70B's shapes: an NVIDIA fine-tune
# of it), made with an importance matrix, in GB (bartowski/Llama-3.1-Nemotron-70B-Instruct-HF-GGUF, the model card's
# "Filename / Quant type / File Size" table, as reproduced at ozeki.chat/p_8590-understanding-ai-model-files.html)
NEMOTRON_70B_PAGE = HF + "bartowski/Llama-3.1-Nemotron-70B-Instruct-HF-GGUF (model card table)"
PUBLISHED_FILES += [("llama-3.1-70b", q, gb * 1e9, f"{NEMOTRON_70B_PAGE}: {q.upper()} {gb}GB") for q, gb in (
    ("q8_0", 74.98), ("q6_k", 57.89), ("q5_k_m", 49.95), ("q5_k_s", 48.66), ("q4_k_s", 40.35), ("q4_0", 40.12),
    ("iq4_xs", 37.90), ("q3_k_l", 37.14), ("q3_k_m", 34.27), ("iq3_m", 31.94), ("q3_k_s", 30.91))]
# safetensors checkpoints: (preset, format, listed size, page); the embedding and output matrices stay 16-bit
SAFETENSORS_FILES = [
    ("llama-3.1-8b", "bf16", 16.07e9, HF + "NousResearch/Meta-Llama-3.1-8B-Instruct, a copy of the gated "
     "meta-llama repository (model-0000{1..4}-of-00004.safetensors: 4.98 + 5 + 4.92 + 1.17 GB)"),
    ("llama-3.1-8b", "awq", 5.73e9, HF + "hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4 (5.73 GB of safetensors)"),
    ("llama-3.1-8b", "fp8", 9.08e9, HF + "neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8 (9.08 GB of safetensors)"),
    ("gpt-oss-20b", "mxfp4", 13.8e9, HF + "openai/gpt-oss-20b (13.8 GB of safetensors, MXFP4 experts)"),
]


@pytest.mark.parametrize("quant", sorted(LLAMA31_8B_README))
def test_llama31_8b_every_named_quant_as_llama_cpp_lists_it(quant):
    a = CAT.model("llama-3.1-8b")
    bits = gguf_weight_bytes(a, quant) * 8 / param_count(a)
    assert bits == pytest.approx(LLAMA31_8B_README[quant], rel=0.001)


@pytest.mark.parametrize("quant", sorted(LLAMA31_8B_README_NO_IMATRIX))
def test_iq4_without_an_importance_matrix_gives_the_first_down_projections_q5_k(quant):
    a = CAT.model("llama-3.1-8b")
    bits = gguf_weight_bytes(a, quant, imatrix=False) * 8 / param_count(a)
    assert bits == pytest.approx(LLAMA31_8B_README_NO_IMATRIX[quant], rel=0.001)
    assert gguf_weight_bytes(a, quant, imatrix=True) < gguf_weight_bytes(a, quant, imatrix=False)


@pytest.mark.parametrize("preset,quant,size,source", PUBLISHED_FILES, ids=[f"{p}-{q}" for p, q, *_ in PUBLISHED_FILES])
def test_planned_gguf_bytes_within_one_percent_of_the_listed_file(preset, quant, size, source):
    """Each (model, quant) file's size as its page lists it (GB of 10^9 bytes unless said) against the planned
    mix; the tolerance is the issue's 1 %."""
    arch = CAT.model(preset)
    planned = memory.format_weight_bytes(arch, param_count(arch), quant)
    assert planned == pytest.approx(size, rel=0.01), source


@pytest.mark.parametrize("preset,fmt,size,source", SAFETENSORS_FILES, ids=[f"{p}-{q}" for p, q, *_ in SAFETENSORS_FILES])
def test_planned_safetensors_bytes_within_one_percent(preset, fmt, size, source):
    """The issue's bar needs at least 20 published files, GGUF and safetensors alike."""
    assert len(PUBLISHED_FILES) + len(SAFETENSORS_FILES) >= 20
    arch = CAT.model(preset)
    assert memory.format_weight_bytes(arch, param_count(arch), fmt) == pytest.approx(size, rel=0.01), source


def test_qwen25_72b_down_projections_fall_back_from_k_quants():
    """29,568 = 115.5 x 256: the down projections cannot hold 256-wide k-quant blocks; llama.cpp falls back to
    Q5_0 (for Q4_K) and Q8_0 (for Q6_K), so the file is about 6 % larger than 4.8944 bits a weight."""
    a = CAT.model("qwen2.5-72b")
    downs = {ty for t, ty in tensor_types(a, "q4_k_m") if "ffn_down" in t.name}
    assert downs == {"Q5_0", "Q8_0"}
    flat = param_count(a) * 4.8944 / 8
    assert gguf_weight_bytes(a, "q4_k_m") / flat == pytest.approx(1.066, abs=0.005)


def test_mixes_by_hand_for_llama31_8b_q4_k_m():
    """Q4_K_M: output Q6_K (128,256 x 4,096), token embedding Q4_K, v and down projections Q6_K in the layers
    use_more_bits picks (first and last four of 32 and every third between: 16 of 32), the rest Q4_K."""
    a = CAT.model("llama-3.1-8b")
    mix = gguf_mix(a, "q4_k_m")
    q6 = 128256 * 4096 + 16 * (4096 * 1024 + 14336 * 4096)
    assert mix["Q6_K"] == q6 // 256 * 210
    assert mix["F32"] == (2 * 32 + 1) * 4096 * 4


def test_gpt_oss_20b_under_ollama_fits_one_4090():
    """Ollama's gpt-oss:20b is the MXFP4 GGUF: 12.1 GB of weights and, at 8,192 tokens, well under 24 GB."""
    a = CAT.model("gpt-oss-20b")
    m = memory.inference_memory(a, param_count(a), precision="bf16", devices=1, context=8192, batch=1,
                                quant="mxfp4_moe")
    assert m.weights_bytes == pytest.approx(12.1e9, rel=0.01)
    assert m.total_bytes < 24e9 * 0.9


def test_ternary_and_unknown_file_types():
    a = CAT.model("llama-3.1-8b")
    assert gguf_weight_bytes(a, "tq1_0") < gguf_weight_bytes(a, "tq2_0") < gguf_weight_bytes(a, "q2_k")
    with pytest.raises(ValueError, match="file type"):
        gguf_weight_bytes(a, "q9_k")


def test_linear_scope_keeps_embeddings_at_16_bits():
    """AWQ on Llama-3.1-8B by hand: 6,979,588,096 linear weights at 4 + 20/128 bits, 2 x 525,336,576 embedding and
    output weights (and the 4,096 final norm) at 16 bits."""
    a = CAT.model("llama-3.1-8b")
    p = param_count(a)
    embed = 2 * 128256 * 4096 + 4096
    assert memory.format_weight_bytes(a, p, "awq") == pytest.approx((p - embed) * 4.156 / 8 + embed * 2)
    # shapes guessed from a parameter count have no tensor table: the format's bits over all of them
    assert memory.format_weight_bytes(generic_arch(8e9), 8e9, "awq") == pytest.approx(8e9 * 4.156 / 8)
    assert memory.format_weight_bytes(generic_arch(8e9), 8e9, "q4_k_m") == pytest.approx(8e9 * 4.8944 / 8)
