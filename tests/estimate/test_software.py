"""Each framework behaviour against bytes worked out by hand (``advisor.estimate.software`` and its use in
``estimate.memory.training_memory``). Exact unless a tolerance is stated."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.estimate import compute, memory
from advisor.estimate.model import ModelArch
from advisor.estimate.software import (
    PLAIN,
    TrainingBehaviours,
    host_passes,
    logits_bytes,
    optimizer_moment_bytes,
    optimizer_step_bytes,
)

# A small model whose bytes are easy by hand: L 2, h 64, 4 heads (d_head 16), 2 KV heads, ffn 128, V 1000.
ARCH = ModelArch(id="t", name="t", layers=2, hidden=64, heads=4, kv_heads=2, ffn=128, vocab=1000)
P = 1_000_000  # parameters, for the state bytes (any count: the formulas are per parameter)


def _mem(workload="finetune", behaviours=PLAIN, checkpointing="selective", s=100, b=1, optimizer="adamw", **kw):
    return memory.training_memory(ARCH, P, workload=workload, precision="bf16", optimizer=optimizer, zero=0,
                                  devices=1, tp=1, pp=1, seq_len=s, micro_batch=b, checkpointing=checkpointing,
                                  behaviours=behaviours, **kw)


def test_master_weights_fp32_copy_or_pure_bf16():
    # mixed-precision AdamW: weights 2, gradients 2, optimizer 4 (fp32 master) + 8 (two fp32 moments) = 16 B/param
    assert _mem().model_states_bytes == 16 * P
    # pure bf16 (torchtune dtype: bf16): no master copy, and its AdamW moments in bf16: 2 + 2 + 0 + 2*2 = 8 B/param
    pure = TrainingBehaviours(master_weights="bf16", optimizer_state="bf16")
    m = _mem(behaviours=pure)
    assert (m.weights_bytes, m.gradients_bytes, m.optimizer_bytes) == (2 * P, 2 * P, 4 * P)


@pytest.mark.parametrize("state, moment_bytes", [("fp32", 8), ("bf16", 4), ("8bit", 2)])
def test_optimizer_state_format(state, moment_bytes):
    # AdamW keeps two moments: fp32 4+4 = 8, bf16 2+2 = 4, 8-bit 1+1 = 2 bytes per parameter; plus the 4-byte master
    m = _mem(behaviours=TrainingBehaviours(optimizer_state=state))
    assert m.optimizer_bytes == (4 + moment_bytes) * P
    assert optimizer_moment_bytes("sgd", state, 64) == moment_bytes / 2  # one momentum value
    assert optimizer_moment_bytes("adafactor", state, 64) == pytest.approx(moment_bytes / 64)  # 2/h values


def test_adamw_8bit_is_8bit_whatever_the_framework_default():
    # --optimizer adamw-8bit under a fp32-state framework: 4 master + 2 moments = 6 bytes per parameter
    assert _mem(optimizer="adamw-8bit").optimizer_bytes == 6 * P
    # ... and under a bf16-state one (torchtune): 8-bit too, no master: 2 bytes
    assert _mem(optimizer="adamw-8bit", behaviours=TrainingBehaviours(master_weights="bf16",
                                                                    optimizer_state="bf16")).optimizer_bytes == 2 * P


def test_paged_8bit_moments_live_in_host_ram():
    # bitsandbytes PagedAdamW8bit: the 2 bytes of moments per parameter go to host RAM; the device keeps the master
    m = _mem(behaviours=TrainingBehaviours(optimizer_state="paged-8bit"))
    assert m.optimizer_bytes == 4 * P
    assert m.host_offload_bytes == 2 * P
    pure = _mem(behaviours=TrainingBehaviours(master_weights="bf16", optimizer_state="paged-8bit"))
    assert pure.optimizer_bytes == 0 and pure.host_offload_bytes == 2 * P


def test_optimizer_in_backward_keeps_one_tensor_gradient():
    # the largest tensor is the embedding V*h = 1000*64 = 64,000 values, 2 bytes each: 128,000 bytes
    m = _mem(behaviours=TrainingBehaviours(optimizer_in_backward=True))
    assert m.gradients_bytes == 128_000
    assert memory.largest_tensor_params(ARCH) == 64_000
    # LoRA adapters: rank * widest side (ffn 128): 16 * 128 = 2,048 values
    assert memory.largest_tensor_params(ARCH, lora_rank=16) == 2_048


def test_logits_full_copies():
    # s*b = 100 tokens x V = 1000: 100,000 logits; one fp32 copy 400,000 bytes (Korthikanti), 2.5 copies 1,000,000
    n = 100 * 1000
    assert logits_bytes(100, 1000, PLAIN) == 4 * n
    assert logits_bytes(100, 1000, TrainingBehaviours(logits_fp32_copies=2.5)) == 10 * n
    # the activations add exactly the logits difference: 1,000,000 - 400,000 = 600,000 bytes
    hf = _mem(behaviours=TrainingBehaviours(logits_fp32_copies=2.5))
    assert hf.activations_bytes - _mem().activations_bytes == 600_000


def test_logits_chunked_and_fused():
    n = 100 * 1000
    # chunked (torchtune CEWithChunkedOutputLoss, 8 chunks): bf16 2 + fp32 log-softmax 4 + one chunk's upcast 4/8
    assert logits_bytes(100, 1000, TrainingBehaviours(loss="chunked", loss_chunks=8)) == pytest.approx(6.5 * n)
    # fused (Liger / LinearCrossEntropyLoss, 8 chunks): one chunk's bf16 + fp32 values, 6/8 bytes per logit
    assert logits_bytes(100, 1000, TrainingBehaviours(loss="fused", loss_chunks=8)) == pytest.approx(0.75 * n)


def test_checkpointing_and_activation_offload():
    # full checkpointing, s 100, b 1, h 64, L 2: layer inputs L*2*s*b*h = 25,600 plus one layer 34*s*b*h = 217,600
    logits = 4 * 100 * 1000
    assert _mem(checkpointing="full").activations_bytes == 25_600 + 217_600 + logits
    # offloaded: the device keeps the one layer (217,600); the 25,600 bytes of layer inputs go to host RAM
    off = _mem(checkpointing="full", behaviours=TrainingBehaviours(activation_offload=True))
    assert off.activations_bytes == 217_600 + logits
    assert off.host_offload_bytes == 25_600
    # selective, offloaded: the stack L*34*s*b*h = 435,200 less the one layer kept: 217,600 in host RAM
    sel = _mem(checkpointing="selective", behaviours=TrainingBehaviours(activation_offload=True))
    assert sel.host_offload_bytes == 217_600


def test_lora_adapter_states_follow_the_optimizer():
    # rank-16 adapters on this model: 2 * (attention + FFN) adapter values (test_memory's by-hand count, r = 16)
    adapters = memory.lora_trainable_params(ARCH, 16)
    m = _mem(workload="lora", lora_rank=16)
    assert m.optimizer_bytes == 12 * adapters and m.gradients_bytes == 2 * adapters
    eight = _mem(workload="lora", lora_rank=16, behaviours=TrainingBehaviours(optimizer_state="8bit"))
    assert eight.optimizer_bytes == 6 * adapters  # 4 master + 2 moments


def test_behaviours_refuse_values_out_of_range():
    for bad in ({"master_weights": "fp16"}, {"optimizer_state": "4bit"}, {"loss": "sparse"},
                {"logits_fp32_copies": 0}, {"loss_chunks": 0}, {"kernel_efficiency": 50}, {"checkpointing": "x"}):
        with pytest.raises(ValueError):
            TrainingBehaviours(**bad)


@settings(max_examples=60, deadline=None)
@given(copies=st.floats(0.5, 8), chunks=st.integers(1, 4096), s=st.integers(1, 8192))
def test_chunked_and_fused_never_hold_more_than_full(copies, chunks, s):
    """A fused loss never holds more than a chunked one, nor a chunked one more than 2.5 fp32 copies minus the
    transient upcast it avoids (6 + 4/chunks <= 10)."""
    fused = logits_bytes(s, 1000, TrainingBehaviours(loss="fused", loss_chunks=chunks))
    chunked = logits_bytes(s, 1000, TrainingBehaviours(loss="chunked", loss_chunks=chunks))
    assert fused <= chunked <= logits_bytes(s, 1000, TrainingBehaviours(logits_fp32_copies=2.5))


def test_optimizer_step_bytes_by_hand():
    # torch foreach AdamW: 4w + 7M + 2g, clipping 3g. Pure bf16 (w = g = 2, M = 2 x 2): 8 + 28 + 4 + 6 = 46
    bf16 = TrainingBehaviours(master_weights="bf16", optimizer_state="bf16")
    assert optimizer_step_bytes("adamw", "bf16", 4096, bf16) == 46.0
    # mixed precision with an fp32 master copy and fp32 moments (w = g = 4, M = 8): 16 + 56 + 8 + 12 = 92
    assert optimizer_step_bytes("adamw", "bf16", 4096, PLAIN) == 92.0
    # a bitsandbytes 8-bit step is one fused kernel: 2w + 2M + g, plus clipping: 8 + 4 + 4 + 12 = 28
    assert optimizer_step_bytes("adamw-8bit", "bf16", 4096, PLAIN) == 28.0


def test_host_and_optimizer_seconds_by_hand():
    # the PEFT MetaMathQA full fine-tune of Llama 3.2 3B on an L40S (864 GB/s): 3.21e9 parameters x 46 bytes
    # a step at 0.8 of the bandwidth is 0.214 s; 28 layers x 2 passes x 1 ms of host time a micro-batch
    opt = compute.optimizer_seconds(optimizer_steps=1, optimizer_bytes=3.21e9 * 46, mem_bandwidth_bps=864e9)
    assert opt == pytest.approx(3.21e9 * 46 / (864e9 * 0.8))
    assert opt == pytest.approx(0.2136, rel=1e-3)
    host = compute.host_seconds(micro_batches=1, layers=28, host_s_per_layer=1e-3, passes=host_passes("none"))
    assert host == pytest.approx(0.056)
    assert host_passes("full") == 3
    # the smooth maximum C + H^2/(H + C): C at C >> H, H at H >> C, 1.5 C when equal
    assert compute.exposed_host_seconds(0.056, 0.103) == pytest.approx(0.056**2 / 0.159)
    assert 0.1 + compute.exposed_host_seconds(0.1, 0.1) == pytest.approx(0.15)
    assert compute.exposed_host_seconds(1e-3, 100.0) < 1e-7
    assert 1e-3 + compute.exposed_host_seconds(100.0, 1e-3) == pytest.approx(100.0, rel=1e-6)
    assert compute.exposed_host_seconds(0.0, 1.0) == 0.0
