"""The engines' own figures beside the advisor's (issue 36, --engine-check), from outputs users pasted."""

from __future__ import annotations

import pytest

from advisor.catalog.load import bundled_catalog
from advisor.estimate import memory
from advisor.estimate.gguf_mix import gguf_weight_bytes
from advisor.estimate.model import ModelArch
from advisor.models.engines import (
    absent_lines,
    compare_llama_cpp,
    compare_ollama,
    compare_vllm,
    installed_engines,
    parse_llama_cpp,
    parse_ollama_ps,
    parse_vllm_startup,
)

MIB, GIB = 2**20, 2**30
# github.com/ggml-org/llama.cpp issue 7217 (2024-05-11): Yi-34B merge, i1-IQ4_XS (importance matrix), -ngl 61 -ts 1,1
LLAMA_CPP_YI_34B = """\
llm_load_tensors: offloaded 61/61 layers to GPU
llm_load_tensors:  CUDA_Host buffer size =   232.42 MiB
llm_load_tensors:      CUDA0 buffer size =  8796.98 MiB
llm_load_tensors:      CUDA1 buffer size =  8588.34 MiB
llama_new_context_with_model:  CUDA_Host  output buffer size =     0.49 MiB
"""
# github.com/ggml-org/llama.cpp issue 27680 (2026): the iSWA cache lines of a current build
LLAMA_CPP_ISWA = """\
llama_kv_cache_iswa: creating     SWA KV cache, size = 4352 cells
llama_kv_cache:      CUDA0 KV buffer size =   182.75 MiB
llama_kv_cache: size =  182.75 MiB (  4352 cells,  43 layers,  1/1 seqs), K (bf16):  91.38 MiB, V (bf16):  91.38 MiB
"""
# github.com/vllm-project/vllm issue 10517 (2024-12-02): meta-llama/Llama-3.1-8B-Instruct on an RTX 3090, V0 engine
VLLM_LLAMA31_8B = """\
Loading model weights took 14.9888 GB
Memory profiling results: total_gpu_memory=23.58GiB initial_memory_usage=15.34GiB peak_torch_memory=17.06GiB \
memory_usage_post_profile=15.35GiB non_torch_memory=0.35GiB kv_cache_size=3.81GiB gpu_memory_utilization=0.90
# GPU blocks: 1952, # CPU blocks: 2048
Maximum concurrency for 20000 tokens per request: 1.56x
"""
# github.com/mitchross/talos-argocd-proxmox pull 1995 (2026-08-16): Qwen3.8-27B-FP8, TP 2, fp8 KV cache (V1 lines)
VLLM_HYBRID = """\
GPU KV cache size: 302,921 tokens
Maximum concurrency for 131,072 tokens per request: 2.31x
"""
# Ollama docs/api.md, "List Running Models", example response
OLLAMA_PS = b"""{"models": [{"name": "mistral:latest", "model": "mistral:latest", "size": 5137025024,
  "digest": "2ae6f6dd7a3dd734790bbbf58b8909a606e0e7e97e94b7604e0aa7ae4490e6d8",
  "details": {"parent_model": "", "format": "gguf", "family": "llama", "families": ["llama"],
  "parameter_size": "7.2B", "quantization_level": "Q4_0"}, "expires_at": "2024-06-04T14:38:31.83753-07:00",
  "size_vram": 5137025024}]}"""


def test_llama_cpp_buffers_of_a_recorded_load_equal_the_planned_mix():
    """Yi-34B (60 layers, 7,168 wide, 56 heads over 8 KV heads, FFN 20,480, 64,000 tokens) as IQ4_XS with an
    importance matrix: 232.42 + 8,796.98 + 8,588.34 = 17,617.74 MiB on the three devices; the planned mix
    (estimate.gguf_mix) gives 17,617.74 MiB."""
    load = parse_llama_cpp(LLAMA_CPP_YI_34B)
    assert load.model_bytes == {"CUDA_Host": 232.42 * MIB, "CUDA0": 8796.98 * MIB, "CUDA1": 8588.34 * MIB}
    yi = ModelArch(id="yi-34b", name="Yi 34B", layers=60, hidden=7168, heads=56, kv_heads=8, ffn=20480, vocab=64000)
    planned = gguf_weight_bytes(yi, "iq4_xs")
    assert planned == pytest.approx(sum(load.model_bytes.values()), rel=1e-4)
    lines = compare_llama_cpp(load, planned, 0.0)
    assert lines[0].startswith("llama.cpp weights: 17.20 GiB; advisor 17.20 GiB (+0.0 %)")


def test_llama_cpp_kv_lines():
    load = parse_llama_cpp(LLAMA_CPP_ISWA)
    assert load.kv_bytes == {"CUDA0": 182.75 * MIB}
    assert load.kv_caches == ((182.75 * MIB, 4352, 43),)
    lines = compare_llama_cpp(load, 0.0, 200 * MIB)
    assert any("KV cache: 0.18 GiB; advisor 0.20 GiB (+9.4 %)" in x for x in lines)
    assert lines[-1].startswith("the part that differs most: KV cache")


def test_vllm_v0_log_of_llama31_8b_within_ten_percent():
    """3.81 GiB of KV cache at 128 KiB a token holds 31,212 tokens (vLLM: 1,952 blocks of 16 = 31,232) and 1.56
    requests of 20,000 (vLLM: 1.56x)."""
    s = parse_vllm_startup(VLLM_LLAMA31_8B)
    assert (s.kv_tokens, s.max_model_len, s.max_concurrency) == (31232, 20000, 1.56)
    assert s.kv_cache_bytes == pytest.approx(3.81 * GIB)
    arch = bundled_catalog().model("llama-3.1-8b")
    assert memory.max_concurrency(arch, s.kv_cache_bytes, s.max_model_len) == pytest.approx(1.56, rel=0.10)
    lines = compare_vllm(s, arch)
    assert lines[0] == "vLLM concurrency at 20,000 tokens: 1.56x; advisor 1.56x (+0.0 %)"
    assert lines[1].startswith("vLLM KV cache: 31,232 tokens; advisor 31,212 (-0.1 %)")


def test_vllm_v1_lines_and_a_log_without_figures():
    s = parse_vllm_startup(VLLM_HYBRID)
    assert (s.kv_tokens, s.max_model_len, s.max_concurrency) == (302921, 131072, 2.31)
    assert compare_vllm(parse_vllm_startup("nothing here"), bundled_catalog().model("llama-3.1-8b")) == [
        "vLLM: the log gives no KV cache memory and max_model_len to compare"]


def test_ollama_ps_as_documented():
    loaded = parse_ollama_ps(OLLAMA_PS)
    assert [(m.name, m.size_bytes, m.vram_bytes) for m in loaded] == [("mistral:latest", 5137025024, 5137025024)]
    assert compare_ollama(loaded, "mistral", 4.9 * GIB)[0].startswith("Ollama mistral:latest: 4.78 GiB, 4.78 GiB of it")
    assert "is not loaded" in compare_ollama(loaded, "llama3", 1.0)[0]
    with pytest.raises(ValueError, match="models"):
        parse_ollama_ps(b'{"nope": 1}')
    assert parse_ollama_ps(b'{"models": [{"name": "x", "size": -1, "size_vram": 0}, 7]}') == []


def test_absent_engines_are_one_line_each():
    found = installed_engines(lambda name: None)
    assert absent_lines(found) == ["llama.cpp: not installed here, nothing to compare",
                                   "ollama: not installed here, nothing to compare",
                                   "vllm: not installed here, nothing to compare"]
    assert absent_lines(installed_engines(lambda name: f"/opt/{name}")) == []


def test_engine_check_runs_the_fit_printer_and_asks_ollama(tmp_path):
    """llama-fit-params on PATH (a recording stands in for it) and Ollama answering: both compared; vLLM named."""
    from types import SimpleNamespace

    from advisor.models.engines import engine_check

    calls = []

    def run(argv, **kw):
        calls.append(argv)
        return SimpleNamespace(stdout=LLAMA_CPP_YI_34B, stderr=LLAMA_CPP_ISWA)

    rm = SimpleNamespace(source="gguf", location=str(tmp_path / "yi.gguf"), name="mistral")
    lines = engine_check(rm, 4096, 17617.74 * MIB, 182.75 * MIB, 4.8 * GIB, which=lambda n: f"/usr/bin/{n}",
                         run=run, fetch=lambda url: OLLAMA_PS)
    assert calls == [["/usr/bin/llama-fit-params", "-m", str(tmp_path / "yi.gguf"), "-c", "4096"]]
    assert lines[0] == "llama.cpp weights: 17.20 GiB; advisor 17.20 GiB (+0.0 %)"
    assert any(x.startswith("Ollama mistral:latest: 4.78 GiB") for x in lines)
    assert lines[-1].startswith("vLLM: its start-up log")
    nothing = engine_check(rm, 4096, 1, 1, 1, which=lambda n: None)
    assert nothing[:2] == ["llama.cpp: not installed here, nothing to compare",
                           "ollama: not installed here, nothing to compare"]


def test_cli_engine_check_with_no_engine_installed(monkeypatch, capsys):
    import json

    from advisor.cli import main
    from advisor.models import engines

    monkeypatch.setattr(engines.shutil, "which", lambda name: None)
    assert main(["models", "llama-3.1-8b", "--engine-check", "--json", "--fake-gpu", "2x4090"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["engine_check"][0] == "llama.cpp: not installed here, nothing to compare"
    assert main(["models", "--engine-check", "--fake-gpu", "2x4090"]) == 2
