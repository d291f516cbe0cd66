"""The cache the engines report, model by model (issue 36, done-when 1): KV or state bytes and concurrency at a
stated ``max_model_len`` within 10 % of what vLLM or llama.cpp printed at start-up, one model of each layer kind.

Each figure is a line a user or maintainer pasted from a real start-up, with the thread it is in:
- vLLM V1 logs "Available KV cache memory: X GiB" (per GPU), "GPU KV cache size: N tokens" and "Maximum
  concurrency for M tokens per request: Cx"; V0 logged the pool as ``kv_cache_size`` and "# GPU blocks" of 16 tokens.
  Under tensor parallelism each GPU holds its share of the KV heads, so the pool of the whole engine is the
  per-GPU figure times the GPUs (``memory.kv_shards``).
- llama.cpp logs "llama_kv_cache: size = X MiB (N cells, L layers, S seqs)" per cache (the SWA one after
  "creating SWA KV cache, size = N cells") and "llama_memory_recurrent: size = X MiB (...), R (f32), S (f32)".
The advisor's side is ``memory.kv_cache_parts`` / ``max_concurrency`` with the engine's allocation rule.
"""

from __future__ import annotations

import pytest

from advisor.catalog.load import bundled_catalog
from advisor.estimate import memory
from advisor.estimate.model import linear_state_values, param_count
from advisor.models.hf import arch_from_config
from tests.estimate.test_layer_kinds import QWEN3_NEXT

MIB, GIB = 2**20, 2**30
CAT = bundled_catalog()
TOL = 0.10  # the bar

# The Qwen3.5/3.6-27B family as llama.cpp's log prints its hyper-parameters (qwen35.block_count 64,
# embedding_length 5120, head_count 24, head_count_kv 4, key_length 256; ssm inner 6144 of 48 heads, 16 groups
# of state 128, kernel 4: github.com/ggml-org/llama.cpp pull 23792) in config.json keys.
QWEN35_27B = dict(QWEN3_NEXT, hidden_size=5120, num_hidden_layers=64, num_attention_heads=24, num_key_value_heads=4,
                  linear_num_value_heads=48, intermediate_size=17408)
# nvidia/NVIDIA-Nemotron-Nano-9B-v2 config.json: 56 layers, 27 Mamba-2, 25 MLP and 4 attention (model card:
# "27 Mamba layers, 25 MLP layers, 4 attention layers"), 128 Mamba heads of 80, 8 groups of state 128.
NEMOTRON_NANO_9B_V2 = {
    "architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h", "hidden_size": 4480,
    "num_hidden_layers": 56, "num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128,
    "intermediate_size": 15680, "vocab_size": 131072, "tie_word_embeddings": False,
    "max_position_embeddings": 131072,
    "hybrid_override_pattern": "M-M-M-MM-M-M-M*-M-M-M*-M-M-M-M*-M-M-M-M*-M-MM-M-M-M-M-M-",
    "mamba_num_heads": 128, "mamba_head_dim": 80, "n_groups": 8, "ssm_state_size": 128, "conv_kernel": 4,
}
# google/gemma-3-270m config.json: 18 layers (sliding_window_pattern 6: 15 sliding of 512, 3 global), one KV head
# of 256.
GEMMA3_270M = {
    "architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", "hidden_size": 640,
    "num_hidden_layers": 18, "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 256,
    "intermediate_size": 2048, "vocab_size": 262144, "sliding_window": 512, "sliding_window_pattern": 6,
    "max_position_embeddings": 32768, "tie_word_embeddings": True,
}


def within(ours: float, theirs: float, tol: float = TOL) -> bool:
    return abs(ours / theirs - 1) <= tol


# ------------------------------------------------------------------------------------------- dense Llama (vLLM)
def test_dense_llama_31_8b_vllm_v0():
    """github.com/vllm-project/vllm issue 10517 (2024-12-02), RTX 3090, Llama-3.1-8B-Instruct, max_model_len 20,000:
    ``kv_cache_size=3.81GiB``, "# GPU blocks: 1952" (31,232 tokens), "Maximum concurrency for 20000 tokens per
    request: 1.56x". 128 KiB a token (32 layers x 8 KV heads x 128 x 2 x 2 bytes)."""
    a = CAT.model("llama-3.1-8b")
    pool = 3.81 * GIB
    assert within(pool / memory.kv_cache_bytes(a, 1, 1), 1952 * 16)
    assert within(memory.max_concurrency(a, pool, 20000), 1.56)


def test_dense_qwen3_14b_vllm_v1():
    """github.com/LMCache/LMCache issue 1739 (2025-10-03), Qwen3-14B on one GPU: "Available KV cache memory:
    6.51 GiB", "GPU KV cache size: 42,656 tokens", "Maximum concurrency for 32,768 tokens per request: 1.30x".
    160 KiB a token (40 layers x 8 KV heads x 128)."""
    a = CAT.model("qwen3-14b")
    assert within(6.51 * GIB / memory.kv_cache_bytes(a, 1, 1), 42656, 0.01)
    assert within(memory.max_concurrency(a, 6.51 * GIB, 32768), 1.30, 0.01)


# ------------------------------------------------------------------------------------------- large MoE (vLLM, TP)
def test_large_moe_qwen3_235b_vllm_tp4():
    """github.com/vllm-project/vllm issue 21348 (2025-07-22), Qwen3-235B-A22B-FP8 on 4 x H100, TP 4, KV cache at the
    model's 16 bits: "Available KV cache memory: 8.11 GiB" (each GPU), "GPU KV cache size: 178,880 tokens";
    max_model_len the config's 40,960. 94 layers x 4 KV heads x 128 x 2 x 2 = 188 KiB a token, one KV head on each
    GPU: 4 x 8.11 GiB hold 180,935 tokens (+1.1 %) and 4.42 requests of 40,960 (vLLM: 178,880 / 40,960 = 4.37)."""
    a = CAT.model("qwen3-235b-a22b")
    assert memory.kv_shards(a, 4) == 4
    pool = 4 * 8.11 * GIB
    assert within(pool / memory.kv_cache_bytes(a, 1, 1), 178880, 0.02)
    assert within(memory.max_concurrency(a, pool, 40960), 178880 / 40960, 0.02)


# ------------------------------------------------------------------------------- gated DeltaNet hybrid (both)
def test_gated_deltanet_qwen35_27b_vllm_concurrency():
    """github.com/mitchross/talos-argocd-proxmox pull 1995 (2026-08-16), a Qwen3.5-27B-family FP8 checkpoint, TP 2,
    fp8 KV cache, max_model_len 131,072: "Maximum concurrency for 131,072 tokens per request: 2.31x" from a pool
    of 2 x 4.99 GiB and attention blocks of 1,568 tokens ("ceil(262144/1568)")."""
    a = arch_from_config(QWEN35_27B, "q35", "Qwen3.5-27B")
    assert (a.count_of("full"), a.count_of("linear")) == (16, 48)
    assert memory.vllm_hybrid_block_tokens(a, bytes_per_value=1.0, tp=2) == 1568
    assert within(memory.max_concurrency(a, 2 * 4.99 * GIB, 131072, bytes_per_value=1.0), 2.31)


def test_gated_deltanet_state_llama_cpp_multimodal_gguf():
    """github.com/ggml-org/llama.cpp pull 23792 (2026), unsloth/Qwen3.6-27B-GGUF UD-Q4_K_XL loaded with its
    mmproj-BF16.gguf (a multimodal GGUF), llama-server: "llama_memory_recurrent: size = 448.88 MiB (3 cells,
    65 layers, 3 seqs), R (f32): 16.88 MiB, S (f32): 432.00 MiB" and, with two slots, "299.25 MiB (2 cells ...),
    R (f32): 11.25 MiB, S (f32): 288.00 MiB". By hand: 48 gated-DeltaNet layers, state 48 x 128 x 128 and
    convolution 3 x (2 x 2,048 + 6,144) values per sequence, in F32."""
    a = arch_from_config(QWEN35_27B, "q36", "Qwen3.6-27B")
    for seqs, total, r, s in ((3, 448.88, 16.88, 432.00), (2, 299.25, 11.25, 288.00)):
        state = memory.kv_cache_parts(a, 4096, seqs, engine="llama.cpp").state
        assert within(state / MIB, total, 0.001)
        assert within(48 * 30720 * 4 * seqs / MIB, r, 0.001) and within(48 * 786432 * 4 * seqs / MIB, s, 0.001)
    assert linear_state_values(a) == 786432 + 30720


# --------------------------------------------------------------------------------------- Mamba hybrid (vLLM)
def test_mamba_hybrid_nemotron_nano_9b_v2_vllm_block_and_state():
    """vLLM aligns a hybrid model's attention page to its Mamba page; for nvidia/NVIDIA-Nemotron-Nano-9B-v2 that
    gives "large attention page sizes (672 tokens ...)" (github.com/vllm-project/vllm issue 24280, 2025-09-04, by
    the Nemotron-H integration's author). By hand: a Mamba-2 layer keeps 128 x 80 x 128 state values and
    3 x (2 x 8 x 128 + 10,240) convolution values at 16 bits (2,695,168 bytes), an attention layer 4,096 bytes a
    token: 658 tokens, padded to 16: 672. The state of a sequence, 27 layers x 2,695,168 bytes = 69.4 MiB, is the
    "~70 MiB of constant Mamba state per sequence" with "~16 KiB/token" of KV that NVIDIA's blueprint sizes its
    concurrency by (github.com/NVIDIA-AI-Blueprints/video-search-and-summarization pull 1649)."""
    a = arch_from_config(NEMOTRON_NANO_9B_V2, "nemotron-nano-9b-v2", "Nemotron Nano 9B v2")
    assert (a.count_of("linear"), a.count_of("full"), a.count_of("ffn")) == (27, 4, 25)
    assert param_count(a) == pytest.approx(8.89e9, rel=0.01)  # the model card: 8.89B parameters
    assert memory.vllm_hybrid_block_tokens(a) == 672
    one = memory.kv_cache_parts(a, 1, 1, engine="vllm")
    assert within(one.state / MIB, 70)
    assert memory.kv_cache_parts(a, 1, 1).full == 16 * 1024
    # concurrency at the card's 128k: each request reserves its state and 128,000 tokens of 4 layers (in blocks of
    # 672); 42 GiB of cache hold 20 such requests, the blueprint's "floor @128K ~20" on an H100
    assert memory.max_concurrency(a, 42 * GIB, 128000) == pytest.approx(20, rel=TOL)


# ------------------------------------------------------------------------------------- sliding window (llama.cpp)
def test_gpt_oss_20b_llama_cpp_swa_cache():
    """github.com/ggml-org/llama.cpp pull 17609 (2025-11), gpt-oss-20b MXFP4 on Metal at the default 4,096 context:
    "creating SWA KV cache, size = 768 cells", "llama_kv_cache: size = 18.00 MiB (768 cells, 12 layers, 1/1 seqs),
    K (f16): 9.00 MiB, V (f16): 9.00 MiB". And ik_llama.cpp, which keeps every layer's cache whole (no SWA cache),
    at 131,072 tokens: "KV self size = 6144.00 MiB" (github.com/ikawrakow/ik_llama.cpp issue 822): llama.cpp's
    ``--swa-full``."""
    a = CAT.model("gpt-oss-20b")
    parts = memory.kv_cache_parts(a, 4096, 1, engine="llama.cpp")
    assert parts.sliding / MIB == 18.00
    assert parts.sliding / (12 * 2048) == 768  # cells
    assert parts.full / MIB == 12 * 2048 * 4096 / MIB  # the non-SWA cache: every cell of the context
    assert memory.kv_cache_parts(a, 131072, 1, engine="llama.cpp", swa_full=True).total / MIB == 6144.00


def test_gemma3_llama_cpp_slots_round_the_cache():
    """github.com/unslothai/unsloth pull 7530 (2026-07-28), a live llama-server with gemma-3-270m at ``-c 1024``
    and ``--swa-full``: 3 slots "allocates 1536 cells / 27.0 MiB", 4 slots "1024 cells / 18.0 MiB" (llama.cpp
    gives each slot ``n_ctx / n_seq`` padded to 256 cells: 512 and 256). 18 layers x 1 KV head x 256 x 2 x 2 bytes
    = 1 KiB a cell; without ``--swa-full`` the 15 sliding layers hold at most ``512 x slots + 512`` cells."""
    a = arch_from_config(GEMMA3_270M, "gemma-3-270m", "Gemma 3 270M")
    assert (a.count_of("full"), a.count_of("sliding"), a.sliding_window) == (3, 15, 512)
    assert memory.kv_cache_parts(a, 512, 3, engine="llama.cpp", swa_full=True).total / MIB == 27.0
    assert memory.kv_cache_parts(a, 256, 4, engine="llama.cpp", swa_full=True).total / MIB == 18.0
    # the windows hold as much as the context here (1,536 < 512 x 3 + 512): the SWA cache is as large
    assert memory.kv_cache_parts(a, 512, 3, engine="llama.cpp").total / MIB == 27.0


# --------------------------------------------------------------------------------------------- MLA (llama.cpp)
def test_deepseek_mla_latent_cache_llama_cpp():
    """github.com/ikawrakow/ik_llama.cpp pull 259 (2025-03-16), DeepSeek-R1 (the V3 architecture) at 32,768 tokens,
    MLA cache in q8_0: "KV self size = 1166.62 MiB, c^KV (q8_0): 1166.62 MiB". 61 layers x (512 latent + 64 rope)
    values a token, 34 bytes per 32 in q8_0: 1,166.625 MiB."""
    a = CAT.model("deepseek-v3")
    q8_0 = 34 / 32
    assert within(memory.kv_cache_parts(a, 32768, 1, q8_0, engine="llama.cpp").total / MIB, 1166.62, 0.001)
    # vLLM keeps the whole latent on every GPU: eight GPUs do not divide it
    assert memory.kv_shards(a, 8) == 1
    one = memory.inference_memory(a, param_count(a), precision="fp8", devices=8, context=32768, batch=1)
    assert one.kv_cache_bytes == int(memory.kv_cache_bytes(a, 32768, 1, 1.0))
