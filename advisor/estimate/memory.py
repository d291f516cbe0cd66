"""Memory per device for training and inference.

Sources (cited per function): ZeRO paper (Rajbhandari et al. 2020, sections 3 and 5) for model states,
Korthikanti et al. 2022 for activations, QLoRA paper (Dettmers et al. 2023) for 4-bit bases,
docs/method.md for the KV cache (GQA and MLA) and the overhead term.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from advisor.catalog.runtimes import runtime_data
from advisor.estimate import gguf_mix
from advisor.estimate.model import (
    ModelArch,
    embedding_params,
    host_embedding_params,
    kv_values_per_layer_token,
    kv_values_per_token,
    linear_state_split,
    mlp_params,
    param_count,
)
from advisor.estimate.software import PLAIN, TrainingBehaviours, logits_bytes, moment_state, optimizer_moment_bytes

GIB = 2**30
CUDA_CONTEXT_BYTES = int(0.5 * GIB)  # CUDA context and library workspaces: 0.3 to 2 GiB (docs/method.md)
FRAGMENTATION = 0.07  # allocator fragmentation: 5 to 10 percent (docs/method.md)

WORKLOADS = ("pretrain", "finetune", "lora", "qlora", "inference")
OPTIMIZERS = ("adamw", "adamw-8bit", "sgd", "adafactor")
CHECKPOINTING = ("none", "selective", "full")
MIXED = ("bf16", "fp16", "fp8")
WEIGHT_BITS = {"fp32": 32, "tf32": 32, "bf16": 16, "fp16": 16, "fp8": 8, "int8": 8, "int4": 4}
# Effective bits per weight of every weight format, declared once with its source in resources/runtimes.toml.
QUANT_BITS = {fid: f.bits_per_weight for fid, f in runtime_data().formats.items()}
QLORA_BITS = 4.13  # NF4 with double quantisation (QLoRA paper, section 3)
# ZeRO-3/FSDP units whose full weights are on the device at once: the one computing and the one prefetched
# (PyTorch FSDP's BACKWARD_PRE/forward prefetch with limit_all_gathers allows two all-gathers in flight; FSDP2
# keeps the root unit, embedding and output, unsharded from the forward to the backward; DeepSpeed's
# stage3_prefetch_bucket_size fetches the next layer while one computes).
UNITS_IN_FLIGHT = 2
# Full-length inputs a decoder layer under PyTorch sequence parallelism saves for its backward: the gathered
# norm outputs feeding the attention's and the feed-forward's column-parallel matrix multiplies.
GATHERED_INPUTS_PER_LAYER = 2
# Which matrices LoRA adapts (the job's ``lora_targets``): every linear layer (PEFT's ``all-linear``, QLoRA's
# setting; attention and the feed-forward or every expert), or the attention projections only.
LORA_TARGETS = ("all-linear", "attention")
# Bytes per input value an adapted matrix keeps when LoRA dropout is on: PEFT applies ``nn.Dropout`` to the input
# of ``lora_A`` (``lora_B(lora_A(dropout(x)))``, ``peft/tuners/lora/layer.py``; ``nn.Identity`` at its default of
# 0), so autograd keeps the dropped-out copy for ``lora_A``'s weight gradient (16 bits) and the dropout's mask
# (a bool, one byte) beside the input the base matrix already saves.
LORA_DROPOUT_MASK_BYTES = 1.0


@dataclass(frozen=True)
class MemoryBreakdown:
    """Bytes per device, by named part. ``total_bytes`` is the sum of the parts."""

    weights_bytes: int
    gradients_bytes: int
    optimizer_bytes: int
    activations_bytes: int
    kv_cache_bytes: int
    overhead_bytes: int
    host_offload_bytes: int = 0  # host RAM needed by CPU offload (not counted on the device)

    @property
    def total_bytes(self) -> int:
        return (self.weights_bytes + self.gradients_bytes + self.optimizer_bytes + self.activations_bytes
                + self.kv_cache_bytes + self.overhead_bytes)

    @property
    def model_states_bytes(self) -> int:
        return self.weights_bytes + self.gradients_bytes + self.optimizer_bytes

    def as_dict(self) -> dict[str, int]:
        return {"weights": self.weights_bytes, "gradients": self.gradients_bytes,
                "optimizer": self.optimizer_bytes, "activations": self.activations_bytes,
                "kv_cache": self.kv_cache_bytes, "overhead": self.overhead_bytes, "total": self.total_bytes}


@dataclass(frozen=True)
class StateBytes:
    """Bytes per parameter of weights, gradients and optimizer state (the fp32 master copy counts as optimizer)."""

    weights: float
    gradients: float
    optimizer: float


def state_bytes_per_param(precision: str, optimizer: str, hidden: int = 4096,
                          behaviours: TrainingBehaviours = PLAIN) -> StateBytes:
    """Bytes per trained parameter (ZeRO paper, section 3: 2 + 2 + 12 = 16 for mixed-precision Adam).

    Mixed precision (bf16/fp16/fp8) keeps 16-bit weights and gradients and, unless the framework trains pure
    bf16 (``behaviours.master_weights``), an fp32 master copy (4 bytes) inside the optimizer state. Optimizer
    moments (``software.optimizer_moment_bytes``): AdamW 8 (two fp32), 8-bit AdamW 2, SGD with momentum 4,
    Adafactor only factored row/column statistics, about 8/hidden bytes per parameter; a bf16 or 8-bit state
    halves or quarters them (``adamw-8bit`` is 8-bit whatever the framework's 16- or 32-bit default).
    Pure fp32/tf32: 4 + 4 + moments (Adam: 16 in all).
    """
    moments = optimizer_moment_bytes(optimizer, moment_state(optimizer, behaviours), hidden)
    if precision in MIXED:
        return StateBytes(2.0, 2.0, (4.0 if behaviours.master_weights == "fp32" else 0.0) + moments)
    if precision in ("fp32", "tf32"):
        return StateBytes(4.0, 4.0, moments)
    raise ValueError(f"precision {precision} cannot train full weights (use qlora for 4-bit bases)")


def shard_model_states(states: StateBytes, params: float, zero: int, dp: int, tp: int = 1, pp: int = 1,
                       ) -> tuple[float, float, float]:
    """Weights, gradients and optimizer bytes per device under ZeRO stage ``zero``.

    ZeRO paper, section 5 (FSDP FULL_SHARD = stage 3), with tensor and pipeline parallelism dividing
    everything by ``tp*pp`` first: stage 0 keeps all; 1 shards the optimizer; 2 also the gradients;
    3 also the weights, each over the data-parallel size ``dp``.
    """
    p = params / (tp * pp)
    w, g, k = states.weights * p, states.gradients * p, states.optimizer * p
    if zero >= 1:
        k /= dp
    if zero >= 2:
        g /= dp
    if zero >= 3:
        w /= dp
    return w, g, k


def activation_bytes(arch: ModelArch, seq_len: int, micro_batch: int, checkpointing: str, tp: int = 1,
                     bytes_per_value: float = 2.0, behaviours: TrainingBehaviours = PLAIN,
                     adapter_bytes: float = 0.0) -> float:
    """Activation memory on the device of the whole layer stack for one micro-batch in flight on the first stage.

    Korthikanti et al. 2022, eq. 1-6, with sequence parallelism under tensor parallelism:
    per layer ``s*b*h*(34 + 5*a*s/h)/t`` bytes at 16 bits, where ``5*a*s/h`` is the attention's score matrices.
    A fused attention kernel (FlashAttention, PyTorch SDPA: the default of every framework profile) never
    stores them, so no recomputation ("none") keeps ``34*s*b*h/t`` like Korthikanti's selective recomputation
    ("selective" with ``behaviours.selective_saves == "activations"``); torchtitan's per-op selective policy
    (``"matmuls"``) keeps only what ``matmul_saved_values`` counts, plus one layer's working set while it is
    recomputed; full recomputation keeps only the layer input ``2*s*b*h`` per layer plus that working set.
    With 1F1B pipelining the first stage holds ``pp``
    micro-batches of ``L/pp`` layers: ``L`` layers' worth, so pipelining does not reduce it.
    With ``behaviours.activation_offload`` the saved activations live in host RAM (``offloaded_activation_bytes``)
    and the device keeps one layer's working set. Under PyTorch sequence parallelism (``behaviours.tp_saves_gathered``)
    a layer also keeps its matrix multiplies' gathered inputs at full length (``gathered_input_bytes``: two per layer,
    one for the output layer). ``adapter_bytes`` is what LoRA dropout adds to every layer's working set
    (``lora_dropout_layer_bytes``). The logits and loss (``software.logits_bytes``: one fp32 copy,
    ``4*s*b*V``, in Korthikanti's count) are added: dominant for large vocabularies.
    """
    scale = bytes_per_value / 2.0
    stack = _layer_stack(arch, seq_len, micro_batch, checkpointing, tp, scale,
                         behaviours.activation_offload, behaviours.selective_saves, behaviours.tp_saves_gathered,
                         adapter_bytes)
    output_input = gathered_input_bytes(seq_len, micro_batch, arch.hidden, tp, scale, behaviours.tp_saves_gathered)
    return stack + output_input + logits_bytes(seq_len * micro_batch, arch.vocab, behaviours) / tp


def offloaded_activation_bytes(arch: ModelArch, seq_len: int, micro_batch: int, checkpointing: str, tp: int = 1,
                               bytes_per_value: float = 2.0) -> float:
    """Host RAM the offloaded activations take: the layer stack the device would otherwise keep
    (``activation_bytes`` without the logits) less the one layer's working set it still holds."""
    args = (arch, seq_len, micro_batch, checkpointing, tp, bytes_per_value / 2.0)
    return max(0.0, _layer_stack(*args, False) - _layer_stack(*args, True))


def matmul_saved_values(arch: ModelArch) -> int:
    """Values per token one layer keeps under torchtitan's per-op selective checkpointing (``_custom_policy`` of
    ``torchtitan/parallelisms/parallelize_llama.py``, 2024-12): the layer input, the attention output, and the
    output of every other matrix multiply in the order they run (q, k, v, o, then w1, w3, w2 of a gated
    feed-forward or the two of a plain one; the first, third, ... are saved)."""
    q_out, kv_out = arch.heads * arch.d_head, arch.kv_heads * arch.d_head
    ffn = (arch.moe_ffn or arch.ffn) * max(1, arch.experts_per_token) if arch.is_moe else arch.ffn
    outputs = [q_out, kv_out, kv_out, arch.hidden] + ([ffn, ffn, arch.hidden] if arch.ffn_kind == "gated"
                                                        else [ffn, arch.hidden])
    return arch.hidden + q_out + sum(outputs[0::2])


def gathered_input_bytes(s: int, b: int, h: int, tp: int, scale: float = 1.0, saved: bool = True) -> float:
    """Bytes one full-length (all-gathered) activation adds over its sequence shard: ``2*s*b*h*(1 - 1/t)``.

    Korthikanti et al. 2022 (section 4.2.2) count every activation of a sequence-parallel layer at ``1/t``: Megatron
    keeps the layer norm's output sharded and all-gathers it again in the backward. PyTorch's DTensor sequence
    parallelism (torchtitan, torchtune) saves the gathered input of each column-parallel matrix multiply instead
    (``behaviours.tp_saves_gathered``): a decoder layer keeps two (attention and feed-forward) and the output layer one.
    """
    if tp <= 1 or not saved:
        return 0.0
    return 2.0 * s * b * h * (1.0 - 1.0 / tp) * scale


def _layer_stack(arch: ModelArch, s: int, b: int, checkpointing: str, tp: int, scale: float, offload: bool,
                 selective_saves: str = "activations", tp_saves_gathered: bool = False,
                 adapter_bytes: float = 0.0) -> float:
    """The layer stack's activations kept on the device (``activation_bytes`` without the logits);
    ``adapter_bytes``: what a layer's LoRA adapters keep beside it (``lora_dropout_layer_bytes``)."""
    h, L = arch.hidden, arch.layers
    layer = s * b * h * 34 / tp * scale + adapter_bytes  # every activation, no score matrix (fused attention)
    layer += GATHERED_INPUTS_PER_LAYER * gathered_input_bytes(s, b, h, tp, scale, tp_saves_gathered)
    if offload:
        return layer
    if checkpointing == "none" or (checkpointing == "selective" and selective_saves == "activations"):
        return L * layer
    if checkpointing == "selective":
        return L * 2 * s * b * matmul_saved_values(arch) / tp * scale + layer
    return L * 2 * s * b * h / tp * scale + layer


def overhead_bytes(other_bytes: float) -> int:
    """The named overhead term: CUDA context plus allocator fragmentation (docs/method.md)."""
    return int(CUDA_CONTEXT_BYTES + FRAGMENTATION * other_bytes)


def lora_trainable_params(arch: ModelArch, rank: int, targets: str = "all-linear") -> int:
    """Adapter parameters ``r*(d_in + d_out)`` for every attention and FFN matrix (QLoRA's all-linear setting).

    For MoE models the adapters go on attention and every expert's matrices. ``targets="attention"``: the four
    attention projections only (a MoE whose experts are not linear modules, such as transformers' gpt-oss with
    its fused expert tensors, gets only these from ``all-linear``).
    """
    h, d = arch.hidden, arch.d_head
    q_out, kv_out = arch.heads * d, arch.kv_heads * d
    attn = rank * ((h + q_out) + 2 * (h + kv_out) + (q_out + h))
    if targets == "attention":
        return arch.layers * attn
    mats = 3 if arch.ffn_kind == "gated" else 2
    dense_ffn = mats * rank * (h + arch.ffn)
    moe_layers = arch.layers - arch.dense_layers if arch.is_moe else 0
    expert_ffn = mats * rank * (h + (arch.moe_ffn or arch.ffn)) * (arch.experts + arch.shared_experts)
    return arch.layers * attn + (arch.layers - moe_layers) * dense_ffn + moe_layers * expert_ffn


def lora_dropout_values(arch: ModelArch, targets: str = "all-linear") -> int:
    """Input values per token of one decoder layer's adapted matrices (the largest layer of a MoE): q, k and v
    each read the hidden state ``h``, the output projection ``heads*d_head``; with ``all-linear`` also the
    feed-forward (gate and up ``h`` each, down ``ffn``; a plain one ``h + ffn``), in a MoE layer once for each of
    the ``experts_per_token`` routed and every shared expert a token passes through."""
    h, q_out = arch.hidden, arch.heads * arch.d_head
    attn = 3 * h + q_out
    if targets == "attention":
        return attn
    gated = arch.ffn_kind == "gated"
    def ffn_in(width: int) -> int:
        return (2 * h if gated else h) + width
    if arch.is_moe and arch.layers > arch.dense_layers:
        passes = max(1, arch.experts_per_token) + arch.shared_experts
        return attn + passes * ffn_in(arch.moe_ffn or arch.ffn)
    return attn + ffn_in(arch.ffn)


def lora_dropout_layer_bytes(arch: ModelArch, s: int, b: int, dropout: float, targets: str = "all-linear",
                             tp: int = 1, scale: float = 1.0) -> float:
    """Bytes one decoder layer keeps for LoRA dropout: ``s*b*values*(2 + 1)`` (the dropped-out 16-bit copy of each
    adapted matrix's input and its bool mask, ``LORA_DROPOUT_MASK_BYTES``), nothing at ``dropout == 0`` (PEFT's
    default: ``nn.Identity``, whose output is the input the base matrix saves anyway)."""
    if dropout <= 0.0:
        return 0.0
    return s * b * lora_dropout_values(arch, targets) * (2.0 * scale + LORA_DROPOUT_MASK_BYTES) / tp


def largest_tensor_params(arch: ModelArch, lora_rank: int | None = None) -> int:
    """Parameters of the largest trained tensor: the embedding or output matrix ``V*h`` (or an FFN matrix
    ``h*ffn``); for LoRA adapters on the linear layers, ``rank * max(h, ffn, heads*d_head)``. An optimizer
    step in the backward keeps only this tensor's gradient at once."""
    widest = max(arch.hidden, arch.ffn, arch.moe_ffn or 0, arch.heads * arch.d_head)
    if lora_rank is not None:
        return lora_rank * widest
    return max(arch.vocab * arch.hidden, arch.hidden * widest)


def unsharded_unit_bytes(arch: ModelArch, params: float, embedding_params: float, layer_bytes: float,
                         embedding_bytes: float, dp: int, tp: int = 1) -> float:
    """The full weights ZeRO-3/FSDP all-gathers on a device beyond its own shard: ``UNITS_IN_FLIGHT`` units of the
    largest wrapped size, a decoder layer (``(P - E)/L`` parameters at ``layer_bytes``: 2 in bf16, 4.13/8 for a QLoRA
    base) or the embedding or output matrix (``V*h`` at ``embedding_bytes``), each less the ``1/dp`` already held.

    PyTorch FSDP wraps each decoder layer (``transformer_auto_wrap_policy``, torchtitan's ``fully_shard`` per block)
    and gathers the next unit while one computes; the embedding and output sit in the root unit.
    """
    if dp <= 1:
        return 0.0
    layer = (params - embedding_params) / max(1, arch.layers) * layer_bytes
    embedding = arch.vocab * arch.hidden * embedding_bytes
    return UNITS_IN_FLIGHT * max(layer, embedding) * (1.0 - 1.0 / dp) / tp


def dequantised_weight_bytes(arch: ModelArch, tp: int = 1) -> float:
    """A QLoRA base matrix dequantised to bf16 for its matrix multiply, ``2*h*widest`` bytes for the largest one:
    bitsandbytes' ``MatMul4Bit`` calls ``dequantize_4bit`` on the weight before the product, in the forward and
    again in the backward for the input's gradient (bitsandbytes ``autograd/_functions.py``); one at a time."""
    widest = max(arch.hidden, arch.ffn, arch.moe_ffn or 0, arch.heads * arch.d_head)
    return 2.0 * arch.hidden * widest / tp


def training_memory(arch: ModelArch, params: float, *, workload: str, precision: str, optimizer: str,
                    zero: int, devices: int, tp: int, pp: int, seq_len: int, micro_batch: int,
                    checkpointing: str, lora_rank: int = 16, embedding_params: float = 0.0,
                    behaviours: TrainingBehaviours = PLAIN, lora_dropout: float = 0.0,
                    lora_targets: str = "all-linear") -> MemoryBreakdown:
    """Training memory per device (model states, activations, logits, overhead) under a framework's behaviours.

    Full training (pretrain, finetune): ``state_bytes_per_param`` sharded by ``shard_model_states``.
    LoRA: frozen 16-bit base (2 bytes per parameter); QLoRA: NF4 base at 4.13 bits with the embeddings and
    head in 16 bits; adapters carry the same states per parameter as full training (mixed-precision AdamW:
    weights 2, gradients 2, fp32 master 4 and moments 8). Activations are as for full training of the same
    model (Korthikanti), the logits as the framework's loss holds them (``software.logits_bytes``).
    ``behaviours`` (``estimate.software``): an optimizer step in the backward keeps one tensor's gradient
    (``largest_tensor_params``) instead of all; paged 8-bit moments and offloaded activations are counted in
    ``host_offload_bytes`` (host RAM for all ``devices``), not on the device. The weights also hold what is
    unsharded while it computes: ZeRO-3/FSDP's gathered units (``unsharded_unit_bytes``) and a QLoRA base matrix
    dequantised to bf16 (``dequantised_weight_bytes``). LoRA adapts ``lora_targets`` (``lora_trainable_params``);
    a ``lora_dropout`` above 0 adds ``lora_dropout_layer_bytes`` to every layer's activations.
    """
    dp = max(1, devices // (tp * pp))
    act_bytes = 4.0 if precision in ("fp32", "tf32") else 2.0
    lora = workload in ("lora", "qlora")
    states = state_bytes_per_param("bf16" if lora else precision, optimizer, arch.hidden, behaviours)
    if lora:
        trained = lora_trainable_params(arch, lora_rank, lora_targets)
        if workload == "qlora":
            base = (params - embedding_params) * QLORA_BITS / 8 + embedding_params * 2
        else:
            base = params * 2.0
        base /= tp * pp
        if zero >= 3:
            base /= dp
        aw, grads, opt = shard_model_states(states, trained, zero, dp, tp, pp)
        weights = base + aw
        layer_bytes = QLORA_BITS / 8 if workload == "qlora" else 2.0
        if workload == "qlora":
            weights += dequantised_weight_bytes(arch, tp)
    else:
        trained = params
        weights, grads, opt = shard_model_states(states, params, zero, dp, tp, pp)
        layer_bytes = states.weights
    if zero >= 3:
        weights += unsharded_unit_bytes(arch, params / pp, embedding_params, layer_bytes,
                                        2.0 if lora else states.weights, dp, tp)
    if behaviours.optimizer_in_backward:
        grads = states.gradients * largest_tensor_params(arch, lora_rank if lora else None) / tp
    host = 0.0
    if behaviours.optimizer_state == "paged-8bit":  # unified memory: the moments page out to host RAM
        moments = optimizer_moment_bytes(optimizer, "paged-8bit", arch.hidden)
        paged = moments * trained / (tp * pp) / (dp if zero >= 1 else 1)
        opt -= paged
        host += paged * devices
    adapter = lora_dropout_layer_bytes(arch, seq_len, micro_batch, lora_dropout, lora_targets, tp,
                                       act_bytes / 2.0) if lora else 0.0
    acts = activation_bytes(arch, seq_len, micro_batch, checkpointing, tp, act_bytes, behaviours, adapter)
    if behaviours.activation_offload:
        host += offloaded_activation_bytes(arch, seq_len, micro_batch, checkpointing, tp, act_bytes) * devices
    other = weights + grads + opt + acts
    return MemoryBreakdown(int(weights), int(grads), int(opt), int(acts), 0, overhead_bytes(other),
                           host_offload_bytes=int(host))


GENERIC_ARCH_ID = "custom"  # model.generic_arch: shapes guessed from a parameter count, no tensor table


@functools.lru_cache(maxsize=1024)
def format_weight_bytes(arch: ModelArch, params: float, fmt_id: str) -> float:
    """Bytes of a model's weights stored in the weight format ``fmt_id`` (resources/runtimes.toml).

    A GGUF file type is priced tensor by tensor as llama-quantize types them (``gguf_mix``: the output matrix,
    value and down projections at more bits, fallbacks for rows that do not fill a block); a format of scope
    ``linear`` (AWQ, GPTQ, FP8, bitsandbytes, NVFP4, EXL2) keeps the embedding and output matrices at 16 bits,
    one of scope ``experts`` (gpt-oss's MXFP4) quantises the routed experts only; the rest take the format's bits.
    A count of ``params`` that differs from the architecture's (exact from the files) scales the result. A
    guessed architecture (``GENERIC_ARCH_ID``) takes ``params * bits / 8``.
    """
    fmt = runtime_data().formats[fmt_id]
    flat = params * fmt.bits_per_weight / 8
    if arch.id == GENERIC_ARCH_ID:
        return flat
    counted = param_count(arch)
    if fmt.family == "gguf" and fmt_id in gguf_mix.FILE_TYPE_BASE:
        return gguf_mix.gguf_weight_bytes(arch, fmt_id) * params / counted
    if fmt.scope == "linear":
        kept = embedding_params(arch)
    elif fmt.scope == "experts" and arch.is_moe:
        moe_layers = (arch.layers - arch.dense_layers) // arch.moe_step
        kept = counted - moe_layers * arch.experts * mlp_params(arch, arch.moe_ffn or arch.ffn)
    else:
        return flat
    kept = min(kept, counted)
    return ((counted - kept) * fmt.bits_per_weight / 8 + kept * 2.0) * params / counted


def weight_bits(precision: str, quant: str | None = None) -> float:
    """Bits per weight for inference: the precision's width or a named quantisation's effective bits."""
    if quant:
        return QUANT_BITS[quant]
    return WEIGHT_BITS[precision]


# How engines size the cache of layers that are not full attention (kv_cache_parts).
KV_ENGINES = ("exact", "vllm", "llama.cpp")
# llama.cpp: the SWA layers' cache holds ``GGML_PAD(min(n_ctx, n_swa * n_seq + n_ubatch), 256)`` cells unless
# ``--swa-full`` (src/llama-kv-cache-iswa.cpp, constructor); n_ctx is padded to 256 too (llama-context.cpp);
# ``-ub`` defaults to 512 (common/common.h); recurrent layers keep their r and s states in F32 per sequence
# (src/llama-memory-recurrent.cpp; llama-model.cpp creates it with GGML_TYPE_F32).
LLAMA_CPP_PAD = 256
LLAMA_CPP_UBATCH = 512
LLAMA_CPP_STATE_BYTES = 4.0
# vLLM: a sliding-window group holds ``cdiv(min(W - 1 + max_num_batched_tokens, max_model_len), block) + 1``
# blocks per request (vllm/v1/kv_cache_interface.py, SlidingWindowSpec.max_memory_usage_bytes), full attention
# ``cdiv(max_model_len, block)``; a Mamba/linear layer one state per request (MambaSpec): the convolution window in
# the model's dtype, gated DeltaNet's recurrent state in fp32 (VLLM_SSM_BYTES; Mamba-2's in the model's dtype).
# Blocks of 16 tokens; ``max_num_batched_tokens`` 8192 for the OpenAI server with chunked prefill
# (vllm/engine/arg_utils.py). In a hybrid model the attention block grows until its page holds a layer's state
# (vllm/model_executor/models/config.py, HybridAttentionMambaModelConfig: a multiple of 16 tokens).
VLLM_BLOCK = 16
VLLM_BATCHED_TOKENS = 8192
VLLM_SSM_BYTES = {"gated-deltanet": 4.0, "mamba2": 2.0}


@dataclass(frozen=True)
class CacheParts:
    """Cache bytes by layer kind: full attention, sliding-window attention, linear/SSM state."""

    full: float
    sliding: float
    state: float

    @property
    def total(self) -> float:
        return self.full + self.sliding + self.state


def _pad(n: float, to: int) -> float:
    return -(-n // to) * to


def kv_cache_parts(arch: ModelArch, context: int, batch: int = 1, bytes_per_value: float = 2.0, *,
                   engine: str = "exact", swa_full: bool = False, state_bytes: float | None = None,
                   ubatch: int = LLAMA_CPP_UBATCH, batched_tokens: int = VLLM_BATCHED_TOKENS) -> CacheParts:
    """The cache of ``batch`` sequences of ``context`` tokens, by layer kind, as ``engine`` allocates it.

    Only the layers that own a cache count (``ModelArch.cached_count_of``: Gemma 3n's shared-KV layers hold none;
    llama.cpp allocates cells for the first ``n_layer_kv_from_start`` layers alone, vLLM shares the cache tensor).
    ``exact``: what the sequences need: every full-attention layer ``context`` tokens, a sliding layer
    ``min(context, W)``, a linear layer its fixed state (``model.linear_state_values``) at ``state_bytes`` (the
    16-bit width unless given). ``llama.cpp``: the cells it allocates (``LLAMA_CPP_PAD``, ``LLAMA_CPP_UBATCH``,
    F32 states; ``swa_full`` as ``--swa-full``); the slots share one context of ``context * batch`` cells.
    ``vllm``: the blocks a request of ``max_model_len = context`` reserves (``VLLM_BLOCK``, ``VLLM_BATCHED_TOKENS``;
    a hybrid model's larger block, ``vllm_hybrid_block_tokens``) and one state per linear layer (``VLLM_SSM_BYTES``).
    Per-token values of an attention layer: ``model.kv_values_per_layer_token`` (GQA KV heads; MLA latent).
    """
    if engine not in KV_ENGINES:
        raise ValueError(f"engine must be one of {', '.join(KV_ENGINES)}, got {engine!r}")
    per = kv_values_per_layer_token(arch) * bytes_per_value
    n_full, n_swa, n_lin = (arch.cached_count_of(k) for k in ("full", "sliding", "linear"))
    w = arch.sliding_window
    if engine == "llama.cpp":
        cells = _pad(context * batch, LLAMA_CPP_PAD)
        swa_cells = cells if swa_full else min(cells, _pad(w * batch + ubatch, LLAMA_CPP_PAD))
        sb = LLAMA_CPP_STATE_BYTES if state_bytes is None else state_bytes
        states = n_lin * sum(linear_state_split(arch)) * sb * batch if n_lin else 0.0
        return CacheParts(n_full * per * cells, n_swa * per * swa_cells, states)
    rec, conv = linear_state_split(arch) if n_lin else (0, 0)
    ssm = VLLM_SSM_BYTES.get(arch.linear_kind, 2.0) if engine == "vllm" else 2.0
    state = n_lin * (rec * (ssm if state_bytes is None else state_bytes)
                     + conv * (2.0 if state_bytes is None else state_bytes)) * batch
    if engine == "vllm":
        full_tokens = _pad(context, vllm_hybrid_block_tokens(arch, bytes_per_value) if n_lin else VLLM_BLOCK)
        swa_tokens = (_pad(min(w - 1 + batched_tokens, context), VLLM_BLOCK) + VLLM_BLOCK) if n_swa else 0
        return CacheParts(n_full * per * full_tokens * batch, n_swa * per * swa_tokens * batch, state)
    return CacheParts(n_full * per * context * batch, n_swa * per * min(context, w) * batch, state)


def vllm_hybrid_block_tokens(arch: ModelArch, bytes_per_value: float = 2.0, tp: int = 1) -> int:
    """The attention block vLLM sets for a model with linear layers: the fewest multiple of ``VLLM_BLOCK`` tokens
    whose page (one attention layer's K and V on one of ``tp`` GPUs) holds one linear layer's state there
    (vLLM logs "Setting attention block size to N tokens to ensure that attention page size is >= mamba page
    size"); ``VLLM_BLOCK`` for a model without linear layers."""
    if not arch.count_of("linear"):
        return VLLM_BLOCK
    rec, conv = linear_state_split(arch)
    state = (rec * VLLM_SSM_BYTES.get(arch.linear_kind, 2.0) + conv * 2.0) / tp
    token = kv_values_per_layer_token(arch) * bytes_per_value / tp
    return int(_pad(-(-state // token), VLLM_BLOCK))


def kv_value_bytes(kv_cache_bits: float, precision: str) -> float:
    """Bytes of one cached value: the cache's bits over eight, at most one byte beside fp8 weights (an fp8 model
    keeps an 8-bit cache at most) and two otherwise. The plan's memory and speed and the server's pool alike."""
    return min(1.0 if precision == "fp8" else 2.0, kv_cache_bits / 8.0)


def kv_token_bytes(arch: ModelArch, bytes_per_value: float = 2.0) -> float:
    """Cache bytes one more token of context adds to a sequence while it is within every window: the attention
    layers' keys and values (``model.kv_values_per_token``); linear layers keep a fixed state, which no token adds
    to. What a decode step reads per cached token, in the plan's request (``planner.timing``) and the server's step
    (``planner.serve_spec.ModelServing.kv_bytes_per_token``) alike. Not ``kv_cache_bytes(arch, 1, 1)``: for a
    hybrid model that holds the whole linear state beside the one token (Qwen3-Next: 39.5 MB at 16 bits against
    the 24.6 kB its twelve attention layers add a token)."""
    return kv_values_per_token(arch) * bytes_per_value


def kv_cache_bytes(arch: ModelArch, context: int, batch: int, bytes_per_value: float = 2.0,
                   engine: str = "exact", swa_full: bool = False) -> float:
    """KV cache and recurrent state bytes of ``batch`` sequences of ``context`` tokens (``kv_cache_parts``):
    ``2 * L * n_kv * d_h * bytes * context * batch`` for a model of full-attention GQA layers (KV heads, not all
    heads); MLA stores ``L*(kv_lora_rank + rope_dim)`` values per token (docs/method.md); sliding layers hold at
    most their window, linear layers a fixed state."""
    return kv_cache_parts(arch, context, batch, bytes_per_value, engine=engine, swa_full=swa_full).total


def max_concurrency(arch: ModelArch, free_bytes: float, max_model_len: int, bytes_per_value: float = 2.0,
                    engine: str = "vllm") -> float:
    """Requests of ``max_model_len`` tokens the cache memory ``free_bytes`` holds at once: vLLM's "Maximum
    concurrency for N tokens per request" (vllm/v1/core/kv_cache_utils.py, get_max_concurrency_for_kv_cache_config:
    the blocks of the pool over the blocks one request reserves in every group, ``kv_cache_parts``)."""
    one = kv_cache_parts(arch, max_model_len, 1, bytes_per_value, engine=engine).total
    return free_bytes / one if one > 0 else float("inf")


def largest_context(arch: ModelArch, free_bytes: float, batch: int = 1, bytes_per_value: float = 2.0,
                    engine: str = "exact", limit: int = 1 << 24) -> int:
    """The longest context (tokens per sequence, at most ``limit``) whose cache for ``batch`` sequences fits in
    ``free_bytes`` (0 when not even one token does): the cache grows with the context, so a bisection finds it."""
    def fits(n: int) -> bool:
        return kv_cache_bytes(arch, n, batch, bytes_per_value, engine) <= free_bytes

    if engine == "exact" and arch.count_of("full") == arch.layers:  # every layer's cache grows with the context:
        per_token = kv_cache_bytes(arch, 1, batch, bytes_per_value, engine)  # linear, the answer from one division
        if not per_token <= free_bytes:
            return 0
        guess = min(limit, int(free_bytes // per_token))
        if fits(guess) and (guess == limit or not fits(guess + 1)):  # checked at the cache's own rounding
            return guess
    if not fits(1):
        return 0
    lo, hi = 1, limit
    if fits(hi):
        return hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def kv_shards(arch: ModelArch, devices: int, engine: str = "exact") -> int:
    """Into how many parts ``devices`` GPUs split the KV cache. llama.cpp splits the layers (``--split-mode layer``):
    every device holds its layers' cache, ``devices`` parts. Tensor parallelism splits the KV heads, and a head is
    not split further: with fewer KV heads than GPUs each GPU keeps a whole head (vLLM replicates them:
    ``num_kv_heads // tp`` at least 1 per rank, vllm/config ``get_num_kv_heads``), and MLA's latent cache is one
    head, so every GPU keeps all of it (vLLM ``MLAAttentionSpec``, ``num_kv_heads=1``; SGLang likewise without
    data-parallel attention): ``min(devices, KV heads)`` parts, 1 for MLA."""
    if engine == "llama.cpp" or devices <= 1:
        return max(1, devices)
    return max(1, min(devices, 1 if arch.is_mla else arch.kv_heads))


def host_weight_bytes(arch: ModelArch, model_bytes: float, engine: str = "exact") -> float:
    """Of a model's weight bytes, those kept in host memory: Gemma 3n's per-layer embeddings
    (``model.host_embedding_params``, at the share of the parameters they are), which llama.cpp keeps with the input
    layer on the CPU; none under vLLM, which loads every weight onto the GPUs, and none for other models."""
    if not arch.per_layer_vocab or engine == "vllm":
        return 0.0
    return model_bytes * host_embedding_params(arch) / param_count(arch)


def unread_weight_bytes(arch: ModelArch, loaded_bytes: float, projector_bytes: float = 0.0) -> float:
    """Of the loaded weights, the bytes a decode step does not read: a multimodal projector (the vision encoder runs
    once per image, not per token) and per-layer embeddings (one row a token of a table; ``host_weight_bytes``)."""
    return projector_bytes + host_weight_bytes(arch, loaded_bytes - projector_bytes)


def inference_memory(arch: ModelArch, params: float, *, precision: str, devices: int, context: int, batch: int,
                     quant: str | None = None, weight_bytes: float | None = None,
                     kv_cache_bits: int = 16, engine: str = "exact", projector_bytes: float = 0.0) -> MemoryBreakdown:
    """Inference memory per device with weights and KV cache split over ``devices`` (tensor parallel; the cache
    into ``kv_shards`` parts: MLA's latent and KV heads fewer than the GPUs are kept whole on every GPU).

    Args:
        weight_bytes: the exact bytes of the stored weights (a GGUF file's tensors, a safetensors index), used
            instead of the format's planned bytes (``format_weight_bytes``) when given.
        kv_cache_bits: bits per cached key/value (16; 8 or 4 for a quantised cache); fp8 stores 8 at most.
        engine: how the runtime sizes sliding-window and state caches (``KV_ENGINES``, ``kv_cache_parts``), and
            where per-layer embeddings live (host memory but under vLLM: ``host_offload_bytes``).
        projector_bytes: of ``weight_bytes``, a multimodal projector's: loaded whole on the first device (llama.cpp's
            mtmd keeps the vision encoder on one backend), not split with the layers.
    """
    if weight_bytes:
        total_weights = weight_bytes
    elif quant:
        total_weights = format_weight_bytes(arch, params, quant)
    else:
        total_weights = params * weight_bits(precision) / 8
    projector = projector_bytes if weight_bytes else 0.0
    host = host_weight_bytes(arch, total_weights - projector, engine)
    weights = (total_weights - host - projector) / devices + projector
    kv = kv_cache_bytes(arch, context, batch, kv_value_bytes(kv_cache_bits, precision), engine) / kv_shards(arch, devices, engine)
    return MemoryBreakdown(int(weights), 0, 0, 0, int(kv), overhead_bytes(weights + kv), int(host))
