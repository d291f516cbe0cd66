"""Memory per device against hand-worked figures and published checks (tolerances stated per test)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.catalog.load import bundled_catalog
from advisor.estimate import memory
from advisor.estimate.model import ModelArch, embedding_params, kv_values_per_token, param_count
from advisor.estimate.software import TrainingBehaviours

GIB = 2**30
CAT = bundled_catalog()


def test_mixed_precision_adam_is_16_bytes_per_param():
    s = memory.state_bytes_per_param("bf16", "adamw")
    assert (s.weights, s.gradients, s.optimizer) == (2, 2, 12)
    # ZeRO paper, section 3: GPT-2 1.5B needs 24 GB of model states.
    w, g, k = memory.shard_model_states(s, 1.5e9, zero=0, dp=1)
    assert w + g + k == pytest.approx(24e9, rel=1e-9)


@pytest.mark.parametrize("precision, optimizer, total", [
    ("fp32", "adamw", 16), ("bf16", "adamw-8bit", 10), ("bf16", "sgd", 12), ("fp32", "sgd", 12)])
def test_bytes_per_param_by_optimizer(precision, optimizer, total):
    s = memory.state_bytes_per_param(precision, optimizer)
    assert s.weights + s.gradients + s.optimizer == total


def test_zero_stages_by_hand():
    # P = 13e9 on d = 16, K = 12 (ZeRO paper, section 5): stage 0 16P, 1 4P + 12P/16, 2 2P + 14P/16, 3 16P/16.
    s, p = memory.state_bytes_per_param("bf16", "adamw"), 13e9
    expected = [16 * p, 4 * p + 12 * p / 16, 2 * p + 14 * p / 16, p]
    for stage, want in enumerate(expected):
        assert sum(memory.shard_model_states(s, p, stage, dp=16)) == pytest.approx(want)
    # tensor and pipeline parallelism divide everything first
    assert sum(memory.shard_model_states(s, p, 0, dp=1, tp=4, pp=2)) == pytest.approx(16 * p / 8)


def test_activations_korthikanti_by_hand():
    arch = CAT.model("llama-2-7b")  # h 4096, a 32, L 32, V 32000
    s, b = 2048, 1
    per_layer = s * b * 4096 * 34  # 16-bit, no recomputation: a fused attention stores no 5*a*s/h score term
    logits = 4 * s * b * 32000
    assert memory.activation_bytes(arch, s, b, "none") == pytest.approx(32 * per_layer + logits)
    assert memory.activation_bytes(arch, s, b, "selective") == pytest.approx(32 * s * b * 4096 * 34 + logits)
    full = 32 * 2 * s * b * 4096 + s * b * 4096 * 34 + logits
    assert memory.activation_bytes(arch, s, b, "full") == pytest.approx(full)
    # tensor (and sequence) parallelism divides the activations
    assert memory.activation_bytes(arch, s, b, "selective", tp=8) == pytest.approx((32 * s * b * 4096 * 34 + logits) / 8)


def test_torchtitan_op_selective_by_hand():
    # Llama 3.1 8B: h 4096, 32 heads x 128, 8 KV heads, ffn 14336. The per-op policy saves the layer input, the
    # attention output and mm outputs 1, 3, 5, 7 (q, v, w1, w2): 4096 + 4096 + 4096 + 1024 + 14336 + 4096 values
    arch = CAT.model("llama-3.1-8b")
    assert memory.matmul_saved_values(arch) == 31744
    s, b = 8192, 2
    sac = TrainingBehaviours(selective_saves="matmuls", loss="fused", loss_chunks=1)
    logits = 6 * s * b * arch.vocab
    expected = 32 * 2 * s * b * 31744 + s * b * 4096 * 34 + logits  # the stack, one layer recomputed, the loss
    assert memory.activation_bytes(arch, s, b, "selective", behaviours=sac) == pytest.approx(expected)


def test_kv_cache_llama3_8b_published():
    arch = CAT.model("llama-3-8b")
    assert kv_values_per_token(arch) * 2 == 128 * 1024  # 128 KiB per token at 16 bits
    assert memory.kv_cache_bytes(arch, 8192, 1) == GIB  # 1 GiB at 8k context


def test_kv_cache_counts_kv_heads_not_all_heads():
    gqa = CAT.model("llama-2-70b")  # 64 heads, 8 KV heads
    mha = ModelArch(**{**gqa.__dict__, "kv_heads": 64})
    assert memory.kv_cache_bytes(mha, 4096, 1) == 8 * memory.kv_cache_bytes(gqa, 4096, 1)


def test_kv_cache_mla_deepseek():
    arch = CAT.model("deepseek-v3")
    assert kv_values_per_token(arch) == 61 * (512 + 64)  # L * (kv_lora_rank + rope_dim)


def test_lora_adapter_count_by_hand():
    arch = ModelArch(id="t", name="t", layers=2, hidden=64, heads=4, kv_heads=2, ffn=128, vocab=100)
    r = 8
    d = 16  # head dim
    attn = r * ((64 + 64) + 2 * (64 + 2 * d) + (64 + 64))
    ffn = 3 * r * (64 + 128)
    assert memory.lora_trainable_params(arch, r) == 2 * (attn + ffn)


def test_qlora_65b_fits_one_48gb_gpu():
    """QLoRA paper abstract: a 65B model fine-tunes on one 48 GB GPU (with checkpointing).

    The abstract names no rank; at r=16 on every matrix with 16 bytes per adapter parameter it fits
    (about 41 GB). At r=64 the Adam states alone are 9.6 GB and the paper relies on paged optimizers.
    """
    arch = ModelArch(id="llama-65b", name="LLaMA 65B", layers=80, hidden=8192, heads=64, kv_heads=64,
                     ffn=22016, vocab=32000)
    params = param_count(arch)
    assert params == pytest.approx(65.2e9, rel=0.01)
    m = memory.training_memory(arch, params, workload="qlora", precision="bf16", optimizer="adamw", zero=0,
                               devices=1, tp=1, pp=1, seq_len=512, micro_batch=1, checkpointing="full",
                               lora_rank=16, embedding_params=embedding_params(arch))
    assert m.total_bytes < 48e9
    assert m.model_states_bytes == m.weights_bytes + m.gradients_bytes + m.optimizer_bytes
    # about 4.13 bits plus 16-bit embeddings, and the largest matrix (8192 x 22016) dequantised to bf16
    assert m.weights_bytes == pytest.approx(0.52 * params + 2 * 8192 * 22016, rel=0.03)
    full = memory.training_memory(arch, params, workload="lora", precision="bf16", optimizer="adamw", zero=0,
                                  devices=1, tp=1, pp=1, seq_len=512, micro_batch=1, checkpointing="full")
    assert full.total_bytes > 130e9  # a 16-bit base does not fit


def test_inference_weights_by_precision_and_quant():
    arch = CAT.model("llama-2-7b")
    p = param_count(arch)
    bf16 = memory.inference_memory(arch, p, precision="bf16", devices=1, context=1, batch=1)
    q4 = memory.inference_memory(arch, p, precision="bf16", devices=1, context=1, batch=1, quant="q4_k_m")
    assert bf16.weights_bytes == int(p * 2)
    # Q4_K_M priced per tensor (estimate.gguf_mix): TheBloke/Llama-2-7B-GGUF lists llama-2-7b.Q4_K_M.gguf at 4.08 GB
    assert q4.weights_bytes == pytest.approx(4.08e9, rel=0.005)
    split = memory.inference_memory(arch, p, precision="bf16", devices=4, context=4096, batch=2)
    assert split.weights_bytes == int(p * 2 / 4)


def test_int4_cannot_train_full_weights():
    with pytest.raises(ValueError, match="qlora"):
        memory.state_bytes_per_param("int4", "adamw")


def test_overhead_is_context_plus_fragmentation():
    assert memory.overhead_bytes(10e9) == int(0.5 * GIB + 0.07 * 10e9)


@settings(max_examples=60, deadline=None)
@given(params=st.floats(1e8, 1e12), zero=st.integers(0, 3), dp=st.sampled_from([1, 2, 8, 64]),
       precision=st.sampled_from(["fp32", "bf16", "fp16", "fp8"]),
       optimizer=st.sampled_from(["adamw", "adamw-8bit", "sgd", "adafactor"]))
def test_sharding_never_raises_memory(params, zero, dp, precision, optimizer):
    s = memory.state_bytes_per_param(precision, optimizer)
    here = sum(memory.shard_model_states(s, params, zero, dp))
    assert all(x >= 0 for x in memory.shard_model_states(s, params, zero, dp))
    assert sum(memory.shard_model_states(s, params, zero, dp * 2)) <= here + 1e-6
    if zero < 3:
        assert sum(memory.shard_model_states(s, params, zero + 1, dp)) <= here + 1e-6


@settings(max_examples=40, deadline=None)
@given(model=st.sampled_from(sorted(CAT.models)), workload=st.sampled_from(["pretrain", "finetune", "lora", "qlora"]),
       seq=st.sampled_from([128, 1024, 4096]), mb=st.integers(1, 8),
       ckpt=st.sampled_from(["none", "selective", "full"]), tp=st.sampled_from([1, 2, 8]))
def test_training_memory_terms_never_negative(model, workload, seq, mb, ckpt, tp):
    arch = CAT.model(model)
    m = memory.training_memory(arch, param_count(arch), workload=workload, precision="bf16", optimizer="adamw",
                               zero=3, devices=8 * tp, tp=tp, pp=1, seq_len=seq, micro_batch=mb, checkpointing=ckpt)
    parts = m.as_dict()
    assert all(v >= 0 for v in parts.values())
    assert parts["total"] == sum(v for k, v in parts.items() if k != "total")


LLAMA2_70B = ModelArch(id="llama-2-70b", name="Llama 2 70B", layers=80, hidden=8192, heads=64, kv_heads=8,
                       ffn=28672, vocab=32000)


def test_gathered_inputs_of_pytorch_sequence_parallelism():
    """torchtitan's Llama 3.1 70B at TP 8, 16 x 8,192 tokens: a full-length bf16 input less its shard is
    2 x 8192 x 16 x 8192 x 7/8 = 1.879 GB; Megatron (re-gathers in the backward) and one device add nothing."""
    assert memory.gathered_input_bytes(8192, 16, 8192, 8) == pytest.approx(1.8791e9, rel=1e-4)
    assert memory.gathered_input_bytes(8192, 16, 8192, 8, saved=False) == 0.0
    assert memory.gathered_input_bytes(8192, 16, 8192, 1) == 0.0
    # Full recomputation: the recomputed layer keeps two, the output layer one: 3 x 1.879 GB more than Megatron.
    pytorch = TrainingBehaviours(tp_saves_gathered=True)
    diff = (memory.activation_bytes(LLAMA2_70B, 8192, 16, "full", tp=8, behaviours=pytorch)
            - memory.activation_bytes(LLAMA2_70B, 8192, 16, "full", tp=8))
    assert diff == pytest.approx(3 * 1.8791e9, rel=1e-4)


def test_fsdp_gathers_two_units_of_the_largest_size():
    """Llama 2 70B QLoRA over 2 devices: a decoder layer is (69.0e9 - 0.52e9)/80 x 4.13/8 = 0.44 GB, the
    embedding 32000 x 8192 x 2 = 0.524 GB is larger; two in flight, less the half each device holds: 0.524 GB."""
    emb = 2 * 32000 * 8192
    got = memory.unsharded_unit_bytes(LLAMA2_70B, 69.0e9, emb, memory.QLORA_BITS / 8, 2.0, dp=2)
    assert got == pytest.approx(2 * 32000 * 8192 * 2 * 0.5, rel=1e-6)
    # torchtitan's Llama 3.1 8B over 8 GPUs in bf16: the 128256 x 4096 output (1.05 GB) twice, less 1/8.
    l8 = ModelArch(id="l8", name="l8", layers=32, hidden=4096, heads=32, kv_heads=8, ffn=14336, vocab=128256)
    assert memory.unsharded_unit_bytes(l8, 8.03e9, 2 * 128256 * 4096, 2.0, 2.0, dp=8) == pytest.approx(
        2 * 128256 * 4096 * 2 * 7 / 8, rel=1e-6)
    assert memory.unsharded_unit_bytes(l8, 8.03e9, 2 * 128256 * 4096, 2.0, 2.0, dp=1) == 0.0


def test_qlora_dequantises_its_largest_matrix():
    """bitsandbytes dequantises a 4-bit matrix to bf16 for its product: Llama 2 70B's 8192 x 28672 feed-forward
    matrices, 2 x 8192 x 28672 = 0.470 GB, counted once in a QLoRA plan's weights and not in a LoRA plan's."""
    assert memory.dequantised_weight_bytes(LLAMA2_70B) == 2 * 8192 * 28672
    kw = dict(precision="bf16", optimizer="adamw", zero=0, devices=1, tp=1, pp=1, seq_len=512, micro_batch=1,
              checkpointing="full", lora_rank=8, embedding_params=2 * 32000 * 8192)
    q = memory.training_memory(LLAMA2_70B, 69.0e9, workload="qlora", **kw)
    base = (69.0e9 - 2 * 32000 * 8192) * memory.QLORA_BITS / 8 + 2 * 32000 * 8192 * 2
    adapters = 2 * memory.lora_trainable_params(LLAMA2_70B, 8)
    assert q.weights_bytes == pytest.approx(base + adapters + 2 * 8192 * 28672, rel=1e-6)


def test_lora_dropout_keeps_each_adapted_input_once_more():
    """PEFT's ``lora_B(lora_A(dropout(x)))`` with dropout above 0: each adapted matrix keeps a dropped-out bf16 copy
    of its input and a bool mask, 3 bytes a value. Llama 2 70B, all-linear: q, k, v read 8192 each, o 64 x 128 =
    8192, gate and up 8192 each, down 28672: 77,824 values a token; 2 x 2048 tokens: 4096 x 77824 x 3 = 0.956 GB.
    Under full recomputation one layer holds it (the one recomputed), without recomputation all 80."""
    assert memory.lora_dropout_values(LLAMA2_70B) == 3 * 8192 + 8192 + 2 * 8192 + 28672 == 77824
    assert memory.lora_dropout_values(LLAMA2_70B, "attention") == 4 * 8192
    assert memory.lora_dropout_layer_bytes(LLAMA2_70B, 2048, 2, 0.1) == 4096 * 77824 * 3
    assert memory.lora_dropout_layer_bytes(LLAMA2_70B, 2048, 2, 0.0) == 0.0  # PEFT's default: nn.Identity
    kw = dict(precision="bf16", optimizer="adamw", zero=0, devices=1, tp=1, pp=1, seq_len=2048, micro_batch=2,
              lora_rank=8, embedding_params=2 * 32000 * 8192)
    for ckpt, layers in (("full", 1), ("none", 80)):
        off = memory.training_memory(LLAMA2_70B, 69.0e9, workload="qlora", checkpointing=ckpt, **kw)
        on = memory.training_memory(LLAMA2_70B, 69.0e9, workload="qlora", checkpointing=ckpt, lora_dropout=0.1, **kw)
        assert on.activations_bytes - off.activations_bytes == pytest.approx(layers * 4096 * 77824 * 3, abs=2)
        assert on.weights_bytes == off.weights_bytes
    full = memory.training_memory(LLAMA2_70B, 69.0e9, workload="finetune", checkpointing="full", lora_dropout=0.1,
                                  **kw)
    assert full.activations_bytes == memory.training_memory(LLAMA2_70B, 69.0e9, workload="finetune",
                                                            checkpointing="full", **kw).activations_bytes


def test_lora_on_attention_only():
    """gpt-oss 20B in transformers keeps its experts as fused 3-D tensors, not linear modules, so PEFT's all-linear
    LoRA adapts the attention only: r = 8 over 24 layers of q (2880 -> 4096), k and v (2880 -> 512), o (4096 ->
    2880): 24 x 8 x (6976 + 2 x 3392 + 6976) = 3,981,312 adapter parameters (all-linear with every expert: 28 times
    more); a MoE layer's dropout inputs are then q, k, v's 3 x 2880 and o's 4096 values a token."""
    oss = CAT.model("gpt-oss-20b")
    assert memory.lora_trainable_params(oss, 8, "attention") == 24 * 8 * (6976 + 2 * 3392 + 6976) == 3_981_312
    # all-linear with every expert: 32 experts x 3 matrices x 8 x (2880 + 2880) more a layer
    assert memory.lora_trainable_params(oss, 8) == 3_981_312 + 24 * 32 * 3 * 8 * 5760 == 110_149_632
    assert memory.lora_dropout_values(oss, "attention") == 3 * 2880 + 4096
    # all-linear in a MoE layer: attention, then 4 routed experts' gate, up (2880 each) and down (2880)
    assert memory.lora_dropout_values(oss) == 3 * 2880 + 4096 + 4 * 3 * 2880
