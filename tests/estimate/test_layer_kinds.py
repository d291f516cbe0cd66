"""Layer kinds (issue 36): KV and state memory follow the kinds of a model's layers, as each engine allocates them.

Figures are worked out by hand from the published configs and the engines' allocation rules:
- llama.cpp ``src/llama-kv-cache-iswa.cpp``: SWA layers hold ``GGML_PAD(min(n_ctx, n_swa*n_seq + n_ubatch), 256)``
  cells unless ``--swa-full``; recurrent states in F32 (``src/llama-memory-recurrent.cpp``).
- vLLM ``vllm/v1/kv_cache_interface.py``: a sliding group reserves ``cdiv(min(W - 1 + max_num_batched_tokens,
  max_model_len), 16) + 1`` blocks per request, a Mamba/linear layer one state in the model's dtype.
"""

from __future__ import annotations

import pytest

from advisor.catalog.load import bundled_catalog
from advisor.estimate import memory
from advisor.estimate.model import linear_mixer_params, linear_state_values, param_count
from advisor.models.hf import arch_from_config
from tests.models.configs import GPT_OSS_20B

MIB = 2**20
QWEN3_NEXT = {  # https://huggingface.co/Qwen/Qwen3-Next-80B-A3B-Instruct config.json (architecture keys)
    "architectures": ["Qwen3NextForCausalLM"], "decoder_sparse_step": 1, "full_attention_interval": 4,
    "head_dim": 256, "hidden_size": 2048, "intermediate_size": 5120, "linear_conv_kernel_dim": 4,
    "linear_key_head_dim": 128, "linear_num_key_heads": 16, "linear_num_value_heads": 32,
    "linear_value_head_dim": 128, "max_position_embeddings": 262144, "mlp_only_layers": [],
    "model_type": "qwen3_next", "moe_intermediate_size": 512, "num_attention_heads": 16, "num_experts": 512,
    "num_experts_per_tok": 10, "num_hidden_layers": 48, "num_key_value_heads": 2,
    "shared_expert_intermediate_size": 512, "tie_word_embeddings": False, "vocab_size": 151936,
}


def preset(name):
    return bundled_catalog().model(name)


def test_gemma3_27b_at_128k_holds_its_windows_not_66_gb():
    """62 layers: 10 global (every sixth) and 52 sliding of 1,024; 16 KV heads of 128: 8,192 bytes per layer-token.
    Issue 36: planned at 66.6 GB when every layer held the whole context."""
    a = preset("gemma-3-27b")
    assert (a.count_of("full"), a.count_of("sliding"), a.sliding_window) == (10, 52, 1024)
    assert a.layer_kinds[:6] == ("sliding",) * 5 + ("full",)
    by_hand = 10 * 8192 * 131072 + 52 * 8192 * 1024  # 11,173,625,856 bytes
    assert memory.kv_cache_bytes(a, 131072, 1) == by_hand
    assert memory.kv_cache_bytes(a, 131072, 1) < 0.2 * 66.6e9
    # llama.cpp: 10,240 MiB for the global layers and 1,536 cells (1,024 + 512 padded to 256) for the 52 others
    parts = memory.kv_cache_parts(a, 131072, 1, engine="llama.cpp")
    assert (parts.full / MIB, parts.sliding / MIB) == (10240, 624)
    assert memory.kv_cache_parts(a, 131072, 1, engine="llama.cpp", swa_full=True).sliding / MIB == 52 * 8192 * 131072 / MIB


def test_gpt_oss_cache_is_half_of_every_layer_full():
    """24 layers alternating sliding (128) and full, 8 KV heads of 64: 2,048 bytes per layer-token. llama.cpp at
    131,072 cells: 12 x 2,048 x 131,072 = 3,072 MiB and the SWA cache 768 cells (128 + 512, padded) = 18 MiB."""
    a = preset("gpt-oss-20b")
    assert a.layer_pattern == "SF" and a.sliding_window == 128
    parts = memory.kv_cache_parts(a, 131072, 1, engine="llama.cpp")
    assert (parts.full / MIB, parts.sliding / MIB) == (3072, 18)
    every_layer_full = 24 * 2048 * 131072
    assert memory.kv_cache_bytes(a, 131072, 1) == pytest.approx(every_layer_full / 2, rel=0.001)
    # the config without layer_types gets GptOssConfig's default: the same alternation
    assert arch_from_config(GPT_OSS_20B, "g", "g").layer_pattern == "SF"


def test_qwen3_next_keeps_a_fixed_state_in_three_of_four_layers():
    """Gated DeltaNet: state 32 heads x 128 x 128 = 524,288 values, convolution 3 x (2 x 2,048 + 4,096) = 24,576;
    36 linear layers; 12 full layers of 2 KV heads of 256 (2,048 bytes per layer-token at 16 bits)."""
    a = arch_from_config(QWEN3_NEXT, "qwen3-next", "Qwen3-Next")
    assert (a.count_of("linear"), a.count_of("full")) == (36, 12)
    assert linear_state_values(a) == 524_288 + 24_576
    vllm = memory.kv_cache_parts(a, 262144, 1, engine="vllm")
    assert vllm.state == 36 * (524_288 * 4 + 24_576 * 2)  # recurrent state in fp32, convolution in bf16
    block = memory.vllm_hybrid_block_tokens(a)  # 2,146,304 state bytes over 2,048 a token: 1,048 -> 1,056
    assert block == 1056
    assert vllm.full == 12 * 2048 * (-(-262144 // block) * block)
    llama = memory.kv_cache_parts(a, 4096, 4, engine="llama.cpp")  # four sequences, F32 states
    assert llama.state == 36 * 548_864 * 4 * 4
    # the state does not grow with the context
    assert memory.kv_cache_parts(a, 1000, 1).state == memory.kv_cache_parts(a, 100000, 1).state


def test_vllm_hybrid_gdn_log_qwen38_27b():
    """A recorded vLLM start-up (github.com/mitchross/talos-argocd-proxmox pull 1995, 2026-08-16): Qwen3.8-27B-FP8,
    TP 2, fp8 KV cache, max_model_len 131,072: "Maximum concurrency for 131,072 tokens per request: 2.31x" from a
    pool of 2 x 4.99 GiB, and 1,568-token attention blocks ("ceil(262144/1568)"). The architecture as that log
    gives it: 64 layers, full_attention_interval 4, 4 KV heads of 256; gated DeltaNet of 16 key and 48 value heads
    of 128, kernel 4 (the Qwen3.5-27B config.json family)."""
    cfg = dict(QWEN3_NEXT, hidden_size=5120, num_hidden_layers=64, num_attention_heads=24, num_key_value_heads=4,
               linear_num_value_heads=48, intermediate_size=17408, model_type="qwen3_next")
    a = arch_from_config(cfg, "q38", "Qwen3.8-27B")
    assert (a.count_of("full"), a.count_of("linear")) == (16, 48)
    assert memory.vllm_hybrid_block_tokens(a, bytes_per_value=1.0, tp=2) == 1568
    concurrency = memory.max_concurrency(a, 2 * 4.99 * 2**30, 131072, bytes_per_value=1.0)
    assert concurrency == pytest.approx(2.31, rel=0.10)


def test_qwen3_next_parameters_from_its_config():
    """80B total on the card; the linear mixer by hand: in_proj_qkvz 2048 x (2x2048 + 2x4096), in_proj_ba 2048 x 64,
    conv (2x2048 + 4096) x 4, dt_bias and A_log 32 each, norm 128, out_proj 4096 x 2048."""
    a = arch_from_config(QWEN3_NEXT, "q", "q")
    assert linear_mixer_params(a) == (2048 * 12288 + 2048 * 64 + 8192 * 4 + 64 + 128 + 4096 * 2048)
    assert param_count(a) == pytest.approx(80e9, rel=0.01)
    assert param_count(a) == param_count(preset("qwen3-next-80b-a3b"))


def test_vllm_concurrency_counts_the_sliding_groups_reservation():
    """vLLM at max_model_len 32,768 for Gemma 3 27B: global layers 2,048 blocks of 16, sliding layers
    cdiv(min(1,023 + 8,192, 32,768), 16) + 1 = 577 blocks (9,232 tokens). One request:
    10 x 8,192 x 32,768 + 52 x 8,192 x 9,232 bytes; 20 GiB of cache hold 20 GiB / that."""
    a = preset("gemma-3-27b")
    one = 10 * 8192 * 32768 + 52 * 8192 * 9232
    assert memory.kv_cache_bytes(a, 32768, 1, engine="vllm") == one
    assert memory.max_concurrency(a, 20 * 2**30, 32768) == pytest.approx(20 * 2**30 / one)
    dense = preset("llama-3.1-8b")  # 128 KiB per token: 20 GiB hold 163,840 tokens, 5.0 requests of 32,768
    assert memory.max_concurrency(dense, 20 * 2**30, 32768) == pytest.approx(5.0)


def test_largest_context_grows_past_the_windows():
    a = preset("gemma-3-27b")
    free = 4 * 2**30
    n = memory.largest_context(a, free)
    assert memory.kv_cache_bytes(a, n, 1) <= free < memory.kv_cache_bytes(a, n + 1, 1)
    # by hand: beyond the window only the 10 global layers grow, 81,920 bytes a token
    assert n == (free - 52 * 8192 * 1024) // (10 * 8192)
    assert memory.largest_context(a, 1) == 0


def test_dense_models_are_unchanged():
    """Llama-3-8B at 16 bits: 128 KiB per token, 1 GiB at 8k (docs/method.md's public check), every engine alike."""
    a = preset("llama-3-8b")
    assert a.layer_kinds == ("full",) * 32
    for engine in ("exact", "llama.cpp", "vllm"):
        assert memory.kv_cache_bytes(a, 8192, 1, engine=engine) == 2**30


def test_inference_memory_reads_the_kinds():
    m = memory.inference_memory(preset("gemma-3-27b"), 27e9, precision="bf16", devices=1, context=131072, batch=1)
    assert m.kv_cache_bytes == 10 * 8192 * 131072 + 52 * 8192 * 1024


def test_bad_kinds_are_refused():
    from advisor.estimate.model import ModelArch

    with pytest.raises(ValueError, match="sliding_window"):
        ModelArch(id="x", name="x", layers=2, hidden=64, heads=4, kv_heads=2, ffn=128, vocab=10, layer_pattern="SF")
    with pytest.raises(ValueError, match="kinds"):
        ModelArch(id="x", name="x", layers=2, hidden=64, heads=4, kv_heads=2, ffn=128, vocab=10, layer_pattern="X")
    with pytest.raises(ValueError, match="linear"):
        ModelArch(id="x", name="x", layers=2, hidden=64, heads=4, kv_heads=2, ffn=128, vocab=10, layer_pattern="LF")
    with pytest.raises(ValueError, match="engine"):
        memory.kv_cache_parts(preset("gemma-3-27b"), 10, 1, engine="nope")


NEMOTRON_H_8B = {  # https://huggingface.co/nvidia/Nemotron-H-8B-Base-8K config.json (architecture keys)
    "architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h", "hidden_size": 4096,
    "num_hidden_layers": 52, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
    "intermediate_size": 21504, "vocab_size": 131072, "tie_word_embeddings": False, "max_position_embeddings": 8192,
    "hybrid_override_pattern": "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-",
    "mamba_num_heads": 128, "mamba_head_dim": 64, "n_groups": 8, "ssm_state_size": 128, "conv_kernel": 4,
}


def test_nemotron_h_mamba_hybrid():
    """Nemotron-H 8B: 24 Mamba-2 layers, 4 attention layers and 24 MLP layers (8B on the card). The cache: 4 layers of
    8 KV heads of 128 (16 KiB a token at 16 bits, not the 208 KiB of 52 attention layers) and per sequence
    24 x (128 heads x 64 x 128 state + 3 x (2 x 8 x 128 + 8,192) convolution) = 24 x 1,079,296 values."""
    a = arch_from_config(NEMOTRON_H_8B, "nemotron-h-8b", "Nemotron-H 8B")
    assert (a.count_of("linear"), a.count_of("full"), a.count_of("ffn")) == (24, 4, 24)
    assert param_count(a) == pytest.approx(8e9, rel=0.02)
    assert memory.kv_cache_parts(a, 1, 1).full == 4 * 2 * 8 * 128 * 2
    assert linear_state_values(a) == 128 * 64 * 128 + 3 * (2 * 8 * 128 + 8192)
    assert memory.kv_cache_parts(a, 8192, 1, engine="vllm").state == 24 * 1_079_296 * 2  # bf16 in vLLM
    assert memory.kv_cache_parts(a, 8192, 2, engine="llama.cpp").state == 24 * 1_079_296 * 4 * 2  # F32, 2 sequences


def test_attention_work_follows_the_kinds():
    """Gemma 3 27B: at 131,072 cached tokens a new token attends to 10 x 131,072 + 52 x 1,024 keys; a prompt of
    4,096 has 10 x 4,096 x 4,097 / 2 full pairs and 52 x (1,024 x 1,025 / 2 + 3,072 x 1,024) sliding ones."""
    from advisor.estimate.model import attended_tokens, prompt_attention_pairs

    a = preset("gemma-3-27b")
    assert attended_tokens(a, 131072) == 10 * 131072 + 52 * 1024
    assert prompt_attention_pairs(a, 4096) == 10 * 4096 * 4097 // 2 + 52 * (1024 * 1025 // 2 + 3072 * 1024)
    dense = preset("llama-3.1-8b")
    assert attended_tokens(dense, 1000) == 32 * 1000
    assert prompt_attention_pairs(dense, 10) == 32 * 55
    hybrid = arch_from_config(QWEN3_NEXT, "q", "q")
    assert attended_tokens(hybrid, 1000) == 12 * 1000  # the 36 linear layers attend to nothing


def test_hostile_kind_keys_are_one_line():
    from advisor.models import ModelSpecError

    with pytest.raises(ModelSpecError, match="full_attention_interval"):
        arch_from_config(dict(QWEN3_NEXT, full_attention_interval=10**12), "q", "q")
    with pytest.raises(ModelSpecError, match="layer_types"):
        arch_from_config(dict(QWEN3_NEXT, layer_types=[["x"]] * 48), "q", "q")
    with pytest.raises(ModelSpecError, match="model_type"):
        arch_from_config(dict(QWEN3_NEXT, model_type=["qwen3_next"]), "q", "q")
    with pytest.raises(ModelSpecError, match="hybrid_override_pattern"):
        arch_from_config(dict(NEMOTRON_H_8B, hybrid_override_pattern="M" * 51 + "?"), "n", "n")
