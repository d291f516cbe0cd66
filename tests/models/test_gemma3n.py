"""Gemma 3n modelled (issue 36): its per-layer embeddings in host memory, a KV cache only in the layers that own one,
sliding-window layers as Gemma 3's, from the presets, a ``config.json`` and a GGUF header."""

from __future__ import annotations

import pytest

from advisor.catalog.load import bundled_catalog
from advisor.estimate import memory
from advisor.estimate.model import embedding_params, host_embedding_params, kv_values_per_token, param_count
from advisor.models import ModelSpecError, resolve_model
from advisor.models.hf import arch_from_config
from tests.models.gguf_bytes import F32, STRING, U32, gguf_bytes

CAT = bundled_catalog()
MIB = 2**20
E4B_TYPES = ["full_attention" if (i + 1) % 5 == 0 else "sliding_attention" for i in range(35)]
# google/gemma-3n-E4B-it config.json (2025-06-26), text_config as published (intermediate_size one width per layer)
GEMMA3N_E4B = {
    "architectures": ["Gemma3nForConditionalGeneration"], "model_type": "gemma3n",
    "vision_config": {"model_type": "gemma3n_vision"}, "audio_config": {"model_type": "gemma3n_audio"},
    "text_config": {"model_type": "gemma3n_text", "hidden_size": 2048, "num_hidden_layers": 35,
                    "intermediate_size": [16384] * 35, "num_attention_heads": 8, "num_key_value_heads": 2,
                    "head_dim": 256, "vocab_size": 262400, "vocab_size_per_layer_input": 262144,
                    "hidden_size_per_layer_input": 256, "num_kv_shared_layers": 15, "sliding_window": 512,
                    "layer_types": E4B_TYPES, "laurel_rank": 64, "altup_num_inputs": 4,
                    "max_position_embeddings": 32768},
}


def test_presets_match_googles_counts():
    """ai.google.dev/gemma/docs/gemma-3n: E2B loads "over 5 billion parameters" in standard execution and runs with
    "an effective memory load of just under 2 billion (1.91B)" with PLE caching; E4B is 8B raw, 4B effective
    (Google's launch post). The language model alone: E2B 4.46B, of which 2.01B per-layer embeddings and 0.54B
    token embedding; E2B's 30 layers by hand: attention 10,485,760, feed-forward 3 x 2048 x 8192, LAuReL 264,192,
    per-layer input 1,050,624, AltUp 12,368 and four norms."""
    e2b, e4b = CAT.model("gemma-3n-e2b"), CAT.model("gemma-3n-e4b")
    assert host_embedding_params(e2b) == 262144 * 30 * 256 == 2_013_265_920
    assert param_count(e2b) == pytest.approx(4.456e9, rel=0.001)
    for arch, raw, effective in ((e2b, 5.0e9, 1.91e9), (e4b, 8.0e9, 4.0e9)):
        assert param_count(arch) < raw  # the vision and audio encoders make up the rest of the raw count
        on_device = param_count(arch) - host_embedding_params(arch) - embedding_params(arch)
        assert on_device == pytest.approx(effective, rel=0.01)


def test_kv_cache_only_in_the_layers_that_own_one():
    """20 of the layers own a cache (30 - 10, 35 - 15): of them 16 sliding (window 512) and 4 full. A token costs
    20 x 2 x 2 KV heads x 256 x 2 bytes = 40 KiB while within the window; past it only the 4 full layers grow:
    at 32,768 tokens 4 x 2,048 x 32,768 + 16 x 2,048 x 512 bytes = 272 MiB per sequence."""
    for name in ("gemma-3n-e2b", "gemma-3n-e4b"):
        a = CAT.model(name)
        assert (a.cached_count_of("full"), a.cached_count_of("sliding")) == (4, 16)
        assert (a.count_of("full"), a.count_of("sliding")) == (a.layers // 5, a.layers - a.layers // 5)
        assert kv_values_per_token(a) * 2 == 40 * 1024
        parts = memory.kv_cache_parts(a, 32768, 1)
        assert (parts.full, parts.sliding) == (4 * 2048 * 32768, 16 * 2048 * 512)
        assert parts.total / MIB == 272
    # llama.cpp at 4,096 cells: the full layers 4 x 2,048 x 4,096 = 32 MiB, the SWA cache 16 x 2,048 x 1,024 cells
    # (512 + the 512 ubatch, padded to 256) = 32 MiB
    parts = memory.kv_cache_parts(CAT.model("gemma-3n-e4b"), 4096, 1, engine="llama.cpp")
    assert (parts.full / MIB, parts.sliding / MIB) == (32, 32)


def test_per_layer_embeddings_sit_in_host_memory():
    e4b = CAT.model("gemma-3n-e4b")
    p = param_count(e4b)
    host = host_embedding_params(e4b)
    m = memory.inference_memory(e4b, p, precision="bf16", devices=1, context=4096, batch=1)
    assert m.host_offload_bytes == pytest.approx(2 * host, rel=1e-9)  # 2.35B values at 2 bytes: 4.70 GB on the host
    assert m.weights_bytes == pytest.approx(2 * (p - host), abs=1)
    vllm = memory.inference_memory(e4b, p, precision="bf16", devices=1, context=4096, batch=1, engine="vllm")
    assert (vllm.host_offload_bytes, vllm.weights_bytes) == (0, int(2 * p))  # vLLM loads every weight on the GPU
    # a file's exact bytes split in the same proportion
    f = memory.inference_memory(e4b, p, precision="bf16", devices=2, context=4096, batch=1, weight_bytes=1e9)
    assert f.host_offload_bytes == int(1e9 * host / p) and f.weights_bytes == int((1e9 - 1e9 * host / p) / 2)


def test_config_json_maps_onto_the_preset():
    a = arch_from_config(GEMMA3N_E4B, "g", "g")
    preset = CAT.model("gemma-3n-e4b")
    for field in ("layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab", "tied", "sliding_window",
                  "layer_pattern", "kv_shared_layers", "per_layer_input", "per_layer_vocab", "laurel_rank",
                  "altup_inputs", "norms_per_layer", "max_context"):
        assert getattr(a, field) == getattr(preset, field) or (field == "layer_pattern" and a.layer_kinds ==
                                                                preset.layer_kinds), field
    assert param_count(a) == param_count(preset)
    uneven = {**GEMMA3N_E4B["text_config"], "intermediate_size": [16384] * 34 + [8192]}
    with pytest.raises(ModelSpecError, match="differs between layers"):
        arch_from_config(uneven, "g", "g")
    with pytest.raises(ModelSpecError, match="kv_shared_layers must be from 0"):
        arch_from_config({**GEMMA3N_E4B["text_config"], "num_kv_shared_layers": 35}, "g", "g")


def _gemma3n_gguf(layers=22, hidden=64, per_layer=8, vocab=100, rank=4) -> bytes:
    a = "gemma3n"
    kv = [("general.architecture", STRING, a), ("general.name", STRING, "tiny 3n"),
          (f"{a}.block_count", U32, layers), (f"{a}.embedding_length", U32, hidden),
          (f"{a}.attention.head_count", U32, 2), (f"{a}.attention.head_count_kv", U32, 1),
          (f"{a}.attention.key_length", U32, 32), (f"{a}.feed_forward_length", U32, 96),
          (f"{a}.context_length", U32, 32768), (f"{a}.vocab_size", U32, vocab),
          (f"{a}.attention.sliding_window", U32, 512), (f"{a}.embedding_length_per_layer_input", U32, per_layer),
          (f"{a}.altup.num_inputs", U32, 4), (f"{a}.attention.shared_kv_layers", F32, 2.0)]
    tensors = (("token_embd.weight", (hidden, vocab)), ("per_layer_token_embd.weight", (layers * per_layer, vocab)),
               ("blk.0.laurel_l.weight", (hidden, rank)))
    return gguf_bytes(kv, tensors)


def test_gguf_header_reads_gemma3n(tmp_path):
    """llama.cpp's gemma3n keys (gguf-py constants: embedding_length_per_layer_input, altup.num_inputs); the cache
    in the first 20 layers as llama.cpp's loader fixes it (n_layer_kv_from_start = 20); every fifth layer full."""
    path = tmp_path / "gemma-3n-tiny-F32.gguf"
    path.write_bytes(_gemma3n_gguf())
    rm = resolve_model(str(path), CAT)
    a = rm.arch
    assert (a.per_layer_input, a.per_layer_vocab, a.laurel_rank, a.altup_inputs) == (8, 100, 4, 4)
    assert (a.layers, a.kv_shared_layers, a.sliding_window) == (22, 2, 512)
    assert (a.cached_count_of("full"), a.cached_count_of("sliding")) == (4, 16)
    assert rm.params_exact == 64 * 100 + 176 * 100 + 64 * 4  # the tensors as stored
    path.write_bytes(gguf_bytes(
        [("general.architecture", STRING, "gemma3n"), ("gemma3n.block_count", U32, 22),
         ("gemma3n.embedding_length", U32, 64), ("gemma3n.attention.head_count", U32, 2),
         ("gemma3n.feed_forward_length", U32, 96), ("gemma3n.vocab_size", U32, 100),
         ("gemma3n.embedding_length_per_layer_input", U32, 8), ("gemma3n.altup.num_inputs", U32, 4)],
        (("token_embd.weight", (64, 100)),)))
    with pytest.raises(ModelSpecError, match="per_layer_token_embd"):
        resolve_model(str(path), CAT)


def test_a_decode_step_reads_the_device_weights_alone():
    """The per-layer table is looked up a row a token: a decode step reads the weights on the device. E4B at 16
    bits: 2 x (6.87B - 2.35B) = 9.04 GB of 13.73 GB loaded."""
    e4b = CAT.model("gemma-3n-e4b")
    p, host = param_count(e4b), host_embedding_params(e4b)
    assert memory.unread_weight_bytes(e4b, 2.0 * p) == pytest.approx(2.0 * host)
    assert memory.unread_weight_bytes(e4b, 2.0 * p + 5e8, 5e8) == pytest.approx(5e8 + 2.0 * host)
    assert memory.unread_weight_bytes(CAT.model("gemma-3-4b"), 8e9) == 0
