"""Model architecture records and parameter counting.

Sources: the dense GQA/SwiGLU count of docs/method.md
(``P = L*(2*h*h + 2*h*n_kv*d_h + 3*h*f + 2*h) + V*h*(1 if tied else 2) + h``),
generalised to plain MLP blocks with biases (GPT-2, BLOOM), learned positions, mixture-of-experts
(Mixtral, DeepSeek) and multi-head latent attention (DeepSeek-V2/V3 papers, section 2.1).

Layer kinds: a model is a cycle of layer kinds (``layer_pattern``): ``F`` attention over every token, ``S``
attention over the last ``sliding_window`` tokens (Gemma 2/3, gpt-oss; Llama 4's chunked attention holds at most
one chunk), ``L`` a linear-attention or state-space mixer whose memory is a fixed state per sequence: gated DeltaNet
(Yang et al. 2024, arXiv:2412.06464; Qwen3-Next) or Mamba-2 (Dao and Gu 2024, arXiv:2405.21060; Nemotron-H,
Falcon-H1). Both keep a recurrent state of ``v_heads * k_dim * v_dim`` values and a causal convolution window of
``(conv - 1) * (2 * k_heads * k_dim + v_heads * v_dim)`` values (Mamba-2 read with ``k_heads`` = groups, ``k_dim`` =
state size, ``v_heads`` = heads, ``v_dim`` = head dimension; transformers ``Qwen3NextGatedDeltaNet``,
``MambaCache``/``Mamba2Mixer``). ``N`` is a layer of a feed-forward network alone: Nemotron-H alternates layers
that are only a Mamba-2 mixer, only attention or only a feed-forward (``mixer_or_ffn``; NVIDIA Nemotron-H report,
arXiv:2504.03624, ``hybrid_override_pattern``).

Gemma 3n (Google, model card and docs "Gemma 3n model overview", 2025; transformers ``Gemma3nTextModel``): the last
``kv_shared_layers`` layers attend with the keys and values of the last earlier layer of their kind and cache
nothing of their own, so only the first ``layers - kv_shared_layers`` layers own a cache. Each layer also reads a
per-layer embedding (PLE): a table of ``per_layer_vocab x layers x per_layer_input`` values looked up once per
token, which llama.cpp keeps with the input layer in host memory (``per_layer_token_embd``; the input layer stays
on the CPU, src/llama-model.cpp) and Google's runtimes cache off the accelerator ("PLE caching"). The table's
lookup feeds each layer through a gate ``h x p`` and a projection ``p x h`` with a norm; the model maps its
embedding into the table's width once (``h x layers*p`` and a norm). Beside attention and the feed-forward, a layer
holds a LAuReL low-rank residual (``2 h r`` and a norm; Menghani et al. 2024, arXiv:2411.07501) and AltUp's
predictor and corrector over ``n`` streams (``n^2 + n^3`` coefficients, an ``h x n`` router with its norm and a
scale of ``h``; Baykal et al. 2023, arXiv:2301.13310), and the model projects the ``n - 1`` extra streams in and out
(``2 (n - 1) h^2``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

FFN_KINDS = ("gated", "mlp")
BIAS_KINDS = ("none", "qkv", "all")
NORM_KINDS = ("rms", "layernorm", "layernorm-nobias")
LAYER_KINDS = {"F": "full", "S": "sliding", "L": "linear", "N": "ffn"}  # letters of ``layer_pattern``
LINEAR_KINDS = ("gated-deltanet", "mamba2")


@dataclass(frozen=True)
class ModelArch:
    """A decoder-only transformer, described by the sizes the planner needs."""

    id: str
    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    tied: bool = False
    head_dim: int = 0  # 0 means hidden // heads
    ffn_kind: str = "gated"
    bias: str = "none"
    norm: str = "rms"
    norms_per_layer: int = 2
    positions: int = 0
    embed_norm: bool = False
    experts: int = 0
    experts_per_token: int = 0
    shared_experts: int = 0
    moe_ffn: int = 0
    dense_layers: int = 0
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    rope_dim: int = 0
    nope_dim: int = 0
    v_head_dim: int = 0
    max_context: int = 0
    sliding_window: int = 0  # W of the sliding-window (S) layers
    layer_pattern: str = ""  # kinds cycled over the layers (LAYER_KINDS letters); "" every layer full attention
    linear_kind: str = ""  # the L layers' mixer (LINEAR_KINDS)
    linear_k_heads: int = 0  # gated DeltaNet key heads; Mamba-2 groups
    linear_v_heads: int = 0  # gated DeltaNet value heads; Mamba-2 heads
    linear_k_dim: int = 0  # gated DeltaNet key head dim; Mamba-2 state size
    linear_v_dim: int = 0  # gated DeltaNet value head dim; Mamba-2 head dim
    linear_conv: int = 0  # causal convolution kernel width
    attn_gate: bool = False  # attention output gate: q projection twice as wide (Qwen3-Next)
    shared_gate: bool = False  # the shared expert's output scaled by a sigmoid gate of the input (Qwen3-Next)
    moe_step: int = 1  # every moe_step-th layer after the dense ones is MoE (Llama 4 Maverick: 2)
    mixer_or_ffn: bool = False  # each layer is a mixer (F, S, L) or a feed-forward (N), not both (Nemotron-H)
    kv_shared_layers: int = 0  # the last layers reuse earlier layers' KV cache and own none (Gemma 3n)
    per_layer_input: int = 0  # width of each layer's per-layer embedding (Gemma 3n hidden_size_per_layer_input)
    per_layer_vocab: int = 0  # rows of the per-layer embedding table (Gemma 3n vocab_size_per_layer_input)
    laurel_rank: int = 0  # rank of the LAuReL residual in each layer (Gemma 3n)
    altup_inputs: int = 0  # AltUp streams (Gemma 3n altup_num_inputs); 0 without AltUp
    published_params: float = 0.0
    published_active_params: float = 0.0
    source: str = ""
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        for name in ("layers", "hidden", "heads", "kv_heads", "vocab"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.ffn < 0 or self.ffn_kind not in FFN_KINDS or self.bias not in BIAS_KINDS or self.norm not in NORM_KINDS:
            raise ValueError(f"invalid architecture fields for {self.id}")
        if self.heads % self.kv_heads:
            raise ValueError(f"heads ({self.heads}) must be a multiple of kv_heads ({self.kv_heads})")
        if self.experts and not 0 < self.experts_per_token <= self.experts:
            raise ValueError("experts_per_token must be between 1 and experts")
        if any(c not in LAYER_KINDS for c in self.layer_pattern):
            raise ValueError(f"layer_pattern of {self.id} holds kinds other than {', '.join(LAYER_KINDS)}")
        if "S" in self.layer_pattern and self.sliding_window <= 0:
            raise ValueError(f"{self.id}: sliding-window layers need a positive sliding_window")
        if "N" in self.layer_pattern and not self.mixer_or_ffn:
            raise ValueError(f"{self.id}: feed-forward-only layers (N) need mixer_or_ffn")
        if "L" in self.layer_pattern and (self.linear_kind not in LINEAR_KINDS or min(
                self.linear_k_heads, self.linear_v_heads, self.linear_k_dim, self.linear_v_dim, self.linear_conv) <= 0):
            raise ValueError(f"{self.id}: linear layers need linear_kind ({', '.join(LINEAR_KINDS)}) and their sizes")
        if self.moe_step < 1:
            raise ValueError("moe_step must be at least 1")
        if not 0 <= self.kv_shared_layers < self.layers:
            raise ValueError(f"{self.id}: kv_shared_layers must be from 0 to fewer than the {self.layers} layers")
        if min(self.per_layer_input, self.per_layer_vocab, self.laurel_rank, self.altup_inputs) < 0 or \
                bool(self.per_layer_input) != bool(self.per_layer_vocab):
            raise ValueError(f"{self.id}: per-layer embeddings need both per_layer_input and per_layer_vocab")

    @property
    def d_head(self) -> int:
        """Head dimension d_h (hidden/heads unless set)."""
        return self.head_dim or self.hidden // self.heads

    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def layer_kinds(self) -> tuple[str, ...]:
        """Each layer's kind, ``full``, ``sliding`` or ``linear`` (the pattern cycled over the layers)."""
        return _layer_kinds(self.layer_pattern or "F", self.layers)

    def count_of(self, kind: str) -> int:
        """How many layers are of ``kind``."""
        return _kind_counts(self.layer_pattern or "F", self.layers).get(kind, 0)

    def cached_count_of(self, kind: str) -> int:
        """How many layers of ``kind`` own a cache: those before the ``kv_shared_layers`` that reuse earlier ones'."""
        return _kind_counts(self.layer_pattern or "F", self.layers - self.kv_shared_layers).get(kind, 0)


@functools.lru_cache(maxsize=256)
def _layer_kinds(pattern: str, layers: int) -> tuple[str, ...]:
    """The kinds of ``layers`` layers cycling ``pattern`` (a plan asks for them many times: kept)."""
    return tuple(LAYER_KINDS[pattern[i % len(pattern)]] for i in range(layers))


@functools.lru_cache(maxsize=256)
def _kind_counts(pattern: str, layers: int) -> dict[str, int]:
    out: dict[str, int] = {}
    for k in _layer_kinds(pattern, layers):
        out[k] = out.get(k, 0) + 1
    return out


def _norm_params(arch: ModelArch) -> int:
    return arch.hidden * (2 if arch.norm == "layernorm" else 1)


def attention_params(arch: ModelArch) -> int:
    """Parameters of one attention block (q, k, v, o projections, biases; MLA low-rank factors)."""
    h, a = arch.hidden, arch.heads
    if arch.is_mla:
        qk_dim = arch.nope_dim + arch.rope_dim
        q = (h * arch.q_lora_rank + arch.q_lora_rank + arch.q_lora_rank * a * qk_dim) if arch.q_lora_rank else h * a * qk_dim
        kv = h * (arch.kv_lora_rank + arch.rope_dim) + arch.kv_lora_rank + arch.kv_lora_rank * a * (arch.nope_dim + arch.v_head_dim)
        return q + kv + a * arch.v_head_dim * h
    d = arch.d_head
    q_out, kv_out = a * d, arch.kv_heads * d
    weights = h * q_out * (2 if arch.attn_gate else 1) + 2 * h * kv_out + q_out * h
    bias = 0
    if arch.bias in ("qkv", "all"):
        bias += q_out + 2 * kv_out
    if arch.bias == "all":
        bias += h
    return weights + bias


def linear_mixer_params(arch: ModelArch) -> int:
    """Parameters of one linear-attention or state-space mixer (an ``L`` layer's instead of attention).

    Gated DeltaNet (transformers ``Qwen3NextGatedDeltaNet``): ``in_proj_qkvz`` h x (2*K + 2*V), ``in_proj_ba``
    h x 2*v_heads, the depthwise convolution over q, k, v (``(2*K + V) * conv``), ``dt_bias`` and ``A_log`` per
    value head, a gated norm of ``v_dim`` and ``out_proj`` V x h, where K = k_heads*k_dim and V = v_heads*v_dim.
    Mamba-2 (transformers ``Mamba2Mixer``/``NemotronHMamba2Mixer``): ``in_proj`` h x (2*V + 2*K + heads), the
    convolution over x, B, C with its bias, ``dt_bias``, ``A_log`` and ``D`` per head, a norm of V and ``out_proj``.
    """
    h, vh = arch.hidden, arch.linear_v_heads
    k, v = arch.linear_k_heads * arch.linear_k_dim, vh * arch.linear_v_dim
    if arch.linear_kind == "mamba2":
        conv_ch = v + 2 * k
        return h * (2 * v + 2 * k + vh) + conv_ch * (arch.linear_conv + 1) + 3 * vh + v + v * h
    return h * (2 * k + 2 * v) + h * 2 * vh + (2 * k + v) * arch.linear_conv + 2 * vh + arch.linear_v_dim + v * h


def linear_state_split(arch: ModelArch) -> tuple[int, int]:
    """Values one ``L`` layer keeps per sequence whatever its length, as (recurrent state, convolution window):
    ``v_heads*k_dim*v_dim`` and the convolution's last ``conv - 1`` inputs of ``2*K + V`` channels (module
    docstring). Engines keep the two at different widths (vLLM: the recurrent state of gated DeltaNet in fp32)."""
    k, v = arch.linear_k_heads * arch.linear_k_dim, arch.linear_v_heads * arch.linear_v_dim
    return arch.linear_v_heads * arch.linear_k_dim * arch.linear_v_dim, (arch.linear_conv - 1) * (2 * k + v)


def linear_state_values(arch: ModelArch) -> int:
    """Values one ``L`` layer keeps per sequence (``linear_state_split``, both parts)."""
    return sum(linear_state_split(arch))


def mlp_params(arch: ModelArch, width: int) -> int:
    """Parameters of one feed-forward network of the given width (gated: 3 matrices, MLP: 2)."""
    mats = 3 if arch.ffn_kind == "gated" else 2
    bias = (width + arch.hidden) if arch.bias == "all" else 0
    return mats * arch.hidden * width + bias


def _ffn_layers(arch: ModelArch) -> int:
    """Layers with a feed-forward network: every layer, or the ``N`` ones of a ``mixer_or_ffn`` model."""
    return arch.count_of("ffn") if arch.mixer_or_ffn else arch.layers


def _moe_layers(arch: ModelArch) -> int:
    return (_ffn_layers(arch) - arch.dense_layers) // arch.moe_step if arch.is_moe else 0


def expert_layers(arch: ModelArch) -> int:
    """Layers whose feed-forward network is a mixture of experts (every ``moe_step``-th after the dense ones)."""
    return _moe_layers(arch)


def _mixer_params(arch: ModelArch) -> int:
    """Attention or linear mixers of every layer (none in an ``N`` layer), with the layers' norms."""
    linear, attn = arch.count_of("linear"), arch.count_of("full") + arch.count_of("sliding")
    return (attn * attention_params(arch) + linear * linear_mixer_params(arch)
            + arch.layers * arch.norms_per_layer * _norm_params(arch))


def host_embedding_params(arch: ModelArch) -> int:
    """The per-layer embedding table (Gemma 3n's PLE, module docstring): ``per_layer_vocab * layers *
    per_layer_input``, looked up a row per token and kept in host memory by llama.cpp; 0 for other models."""
    return arch.per_layer_vocab * arch.layers * arch.per_layer_input


def _side_params(arch: ModelArch) -> int:
    """Gemma 3n's parts beside attention and the feed-forward (module docstring): the per-layer embedding table,
    its gate, projection and norms, LAuReL and AltUp; 0 for other models."""
    h, p, n, L = arch.hidden, arch.per_layer_input, arch.altup_inputs, arch.layers
    per_layer = (2 * h * arch.laurel_rank + h if arch.laurel_rank else 0) + (2 * h * p + h if p else 0) \
        + (n * n + n ** 3 + h * n + 2 * h if n else 0)
    model = host_embedding_params(arch) + (h * L * p + p if p else 0) + (2 * (n - 1) * h * h if n else 0)
    return L * per_layer + model


def _expert_width(arch: ModelArch) -> int:
    return arch.moe_ffn or arch.ffn


def embedding_params(arch: ModelArch) -> int:
    """Token embedding, output head (unless tied), learned positions and final/embedding norms."""
    emb = arch.vocab * arch.hidden * (1 if arch.tied else 2)
    emb += arch.positions * arch.hidden
    emb += _norm_params(arch) * (2 if arch.embed_norm else 1)
    return emb


def param_count(arch: ModelArch) -> int:
    """Total parameters (memory is set by this figure).

    Returns:
        The count, exact for the presets' architectures (tested against published counts within 1%).
    """
    moe_layers = _moe_layers(arch)
    dense_layers = _ffn_layers(arch) - moe_layers
    total = _mixer_params(arch) + dense_layers * mlp_params(arch, arch.ffn)
    if moe_layers:
        experts = (arch.experts + arch.shared_experts) * mlp_params(arch, _expert_width(arch))
        router = arch.hidden * arch.experts
        total += moe_layers * (experts + router)
    return total + embedding_params(arch) + _side_params(arch)


def active_param_count(arch: ModelArch) -> int:
    """Parameters that touch each token (FLOPs are set by this figure); equals the total for dense models."""
    if not arch.is_moe:
        return param_count(arch)
    moe_layers = _moe_layers(arch)
    active = _mixer_params(arch) + (_ffn_layers(arch) - moe_layers) * mlp_params(arch, arch.ffn)
    active += moe_layers * ((arch.experts_per_token + arch.shared_experts) * mlp_params(arch, _expert_width(arch))
                            + arch.hidden * arch.experts)
    return active + embedding_params(arch) + _side_params(arch)


def prompt_param_count(arch: ModelArch) -> int:
    """Parameters a prompt token is multiplied by: the active parameters less the token embedding and output head
    (``embedding_params``) and a per-layer embedding table (``host_embedding_params``). An embedding is a row
    looked up, not multiplied; the head makes logits only for the tokens a step samples from, the last of each
    prompt (llama.cpp's graphs keep only those rows after the last layer's attention, ``inp_out_ids``, since
    March 2024; vLLM and SGLang compute logits at the prompts' last positions), 2 x vocab x hidden FLOPs a prompt,
    under 0.1 % of a prompt of 64 tokens or more and not counted (docs/method.md, "Inference speed")."""
    return active_param_count(arch) - embedding_params(arch) - host_embedding_params(arch)


def prompt_share(arch: ModelArch) -> float:
    """``prompt_param_count`` over ``active_param_count``: the share of a model's active parameters (a published
    count, scaled as the architecture's) a prompt token is multiplied by."""
    active = active_param_count(arch)
    return prompt_param_count(arch) / active if active > 0 else 1.0


def routed_expert_active_params(arch: ModelArch) -> int:
    """Parameters of the routed experts a token passes through (``experts_per_token`` of each MoE layer; the
    shared experts and the router not counted); 0 for a dense model."""
    return _moe_layers(arch) * arch.experts_per_token * mlp_params(arch, _expert_width(arch))


def kv_values_per_layer_token(arch: ModelArch) -> int:
    """Values one attention layer caches per token: ``2 * n_kv * d_h`` (K and V, counted with the KV heads, not
    all heads); MLA (DeepSeek) ``kv_lora_rank + rope_dim``."""
    if arch.is_mla:
        return arch.kv_lora_rank + arch.rope_dim
    return 2 * arch.kv_heads * arch.d_head


def kv_values_per_token(arch: ModelArch) -> int:
    """Values cached per token by every attention layer (full and sliding; linear layers keep none): the cost of
    a token while the context is within every window. ``memory.kv_cache_bytes`` holds the windows' caps. Layers
    that reuse an earlier layer's cache (Gemma 3n's ``kv_shared_layers``) add none.

    GQA: ``2 * L_attn * n_kv * d_h``. MLA (DeepSeek): ``L * (kv_lora_rank + rope_dim)``.
    """
    return (arch.cached_count_of("full") + arch.cached_count_of("sliding")) * kv_values_per_layer_token(arch)


def generic_arch(params: float, name: str | None = None) -> ModelArch:
    """A Llama-like architecture of about ``params`` parameters, for activations and KV cache when only
    the parameter count is known. Shapes follow the Llama/Chinchilla ratios (h ~ 128 * L, f = 8/3 h)."""
    # Fit h from P ~ 12*L*h^2 with L = h/128  ->  P ~ 12*h^3/128.
    h = max(256, int(round((params * 128 / 12) ** (1 / 3) / 128)) * 128)
    layers = max(2, int(round(h / 128)))
    heads = max(1, h // 128)
    return ModelArch(id="custom", name=name or "custom", layers=layers, hidden=h, heads=heads,
                     kv_heads=heads, ffn=int(round(8 * h / 3 / 64)) * 64, vocab=32000)


def attention_layers(arch: ModelArch) -> int:
    """The layers that attend over the cache, full and sliding (a layer reusing an earlier one's cache still
    attends); a gated-DeltaNet or Mamba-2 layer updates a fixed state and a Nemotron-H feed-forward layer has no
    attention, so neither costs a (query, key) pair. A decode step's and a prompt's attention FLOPs count these,
    the plan's request and the server's step alike."""
    return arch.count_of("full") + arch.count_of("sliding")


def attention_width(arch: ModelArch) -> float:
    """The query heads times the mean of a head's query-key and value sizes, ``heads * (d_qk + d_v) / 2``: a (query,
    key) pair of a layer costs ``2 * heads * (d_qk + d_v)`` = ``4 *`` this FLOPs (scores and values). ``heads * d_head``
    where keys and values have the head's size; multi-head latent attention at prefill attends as plain multi-head
    attention over keys of ``nope_dim + rope_dim`` and values of ``v_head_dim`` expanded from the latent (SGLang
    models/deepseek_v2.py ``forward_normal_prepare``, chosen for a prompt with no cached prefix on every attention
    backend: ``handle_attention_trtllm_mla``, ``handle_attention_aiter``): DeepSeek-V3 128 x (192 + 128) / 2 =
    20,480, where its hidden size over its heads gave 7,168."""
    if arch.is_mla and arch.nope_dim and arch.v_head_dim:
        return arch.heads * (arch.nope_dim + arch.rope_dim + arch.v_head_dim) / 2.0
    return float(arch.heads * arch.d_head)


def attended_tokens(arch: ModelArch, context: int) -> int:
    """Keys one new token attends to, summed over the attention layers, with ``context`` tokens cached: ``context``
    in a full-attention layer, ``min(context, W)`` in a sliding one, none in a linear or feed-forward layer (its
    work per token is fixed). A decode step's attention FLOPs are ``4 * heads * d_head`` times this per sequence."""
    window = min(context, arch.sliding_window) if arch.sliding_window else context
    return arch.count_of("full") * context + arch.count_of("sliding") * window


def prompt_attention_pairs(arch: ModelArch, prompt: int) -> int:
    """(query, key) pairs of a causal prompt of ``prompt`` tokens, summed over the attention layers: ``p(p+1)/2`` in a
    full layer; ``sum(min(i, W))`` in a sliding one, ``W(W+1)/2 + (p - W) * W`` past the window. A prefill's
    attention FLOPs are ``4 * heads * d_head`` times this."""
    p, w = prompt, arch.sliding_window
    full = p * (p + 1) // 2
    sliding = full if not w or p <= w else w * (w + 1) // 2 + (p - w) * w
    return arch.count_of("full") * full + arch.count_of("sliding") * sliding


# Kernels one device launches in a layer of an eager prefill pass (SGLang's model code, sgl-project/sglang
# python/sglang/srt; vLLM's is alike), by part, with how many of them are linear layers (each quantises its input
# first where the weights are 8-bit: ``prefill_kernel_count``):
# * each block (a layer's mixer, its feed-forward; a Nemotron-H layer has one of the two): its fused residual-add
#   RMSNorm and the tensor-parallel all-reduce after it;
# * attention over the tokens (models/llama.py, qwen3_moe.py): the fused q/k/v projection, the rotary embedding,
#   the cache store, the attention kernel and the output projection (two linear layers); Qwen3-Next's gated
#   attention (``attn_gate``; models/qwen3_next.py, ``Qwen3HybridAttentionDecoderLayer.self_attention``) besides:
#   the q and the gate cut from one projection (``torch.chunk``) and each copied out by its reshape, the q and k
#   head norms (``_apply_qk_norm``; k, a slice of the projection, copied out by its reshape first), the gate's
#   sigmoid and its product, seven;
# * multi-head latent attention at prefill (models/deepseek_v2.py, ``forward_normal_prepare`` and
#   ``forward_normal_core``: the prompt attends as plain multi-head attention with keys and values expanded from the
#   latent): the fused q-down/kv-down projection, the q and kv latent norms, the q-up projection, the rotary
#   embedding, the rotated part copied into q, the latent cache store, the kv-up projection, the keys' concat and
#   cast, the attention kernel and the output projection (four linear layers);
# * gated DeltaNet (models/qwen3_next.py, ``Qwen3GatedDeltaNet``; the fla chunked kernels it calls): the two input
#   projections; at prefill the q/k/v/z/b/a reordering (``fix_query_key_value_ordering``: v, z, b and a reshaped
#   out of strided splits of the projections, a copy each, then q and k flattened, two more, and the three
#   concatenated: seven kernels); the causal convolution, the gating, the q and k L2 norms, the chunked delta rule's
#   cumulative gate, K K^T, triangular solve, W/U, state and output kernels, the gated RMSNorm and the output
#   projection (three linear layers), 21 in all; Mamba-2's mixer (models/nemotron_h.py) its input projection, convolution,
#   the chunked scan's five kernels, gated norm and output projection (two);
# * a dense feed-forward: gate-up (or up) projection, activation, down projection (two linear layers);
# * a mixture of experts run tensor-parallel (layers/moe/fused_moe_triton): the router's projection, top-k, the
#   tokens' sort by expert (moe_align_block_size), the two grouped expert GEMMs with the activation between them and
#   the weighted sum of each token's experts (the two GEMMs quantise their inputs for 8-bit weights; the router
#   stays 16-bit); shared experts a feed-forward of their own and its sum into the routed output; a gated shared
#   expert (``shared_gate``: models/qwen2_moe.py, ``Qwen2MoeSparseMoeBlock``, which Qwen3-Next's layers run) its
#   gate's projection to one value (an unquantised ``torch.nn.Linear``), sigmoid and product besides.
PREFILL_KERNELS = {"block": (2, 0), "attention": (5, 2), "attn_gate": (7, 0), "mla": (11, 4),
                   "gated-deltanet": (21, 3), "mamba2": (9, 2), "ffn": (3, 2), "moe": (7, 2), "shared": (4, 2),
                   "shared_gate": (3, 0)}


def prefill_kernel_count(arch: ModelArch, quantised_inputs: bool = False) -> int:
    """The kernels one device launches in a prefill pass over every layer, eagerly (no CUDA graph: vLLM and SGLang
    capture decode batches only), counted from the parts of each layer (``PREFILL_KERNELS``); with
    ``quantised_inputs`` (8-bit weights whose products run on 8-bit inputs: fp8 W8A8, DeepSeek's 128-block fp8,
    which SGLang's ``apply_w8a8_block_fp8_linear`` quantises per token group first) one more a linear layer.
    DeepSeek-V3: 58 MoE layers of 4 + 11 + 7 + 4 kernels and 3 dense ones of 4 + 11 + 3, 1,562 in all; with its
    inputs quantised 4 + 15 + 9 + 6 and 4 + 15 + 5, 2,044. Qwen3-235B-A22B in bf16: 94 layers of 4 + 5 + 7, 1,504."""
    k = PREFILL_KERNELS
    q = 1 if quantised_inputs else 0

    def part(name: str) -> int:
        kernels, linear = k[name]
        return kernels + q * linear

    attention = part("mla") if arch.is_mla else part("attention") + (part("attn_gate") if arch.attn_gate else 0)
    attending = arch.count_of("full") + arch.count_of("sliding")
    linear = arch.count_of("linear")
    mixers = attending * attention + (linear * part(arch.linear_kind) if linear else 0)
    moe = expert_layers(arch)
    ffn_layers = _ffn_layers(arch)
    shared = (part("shared") + (part("shared_gate") if arch.shared_gate else 0)) if arch.shared_experts else 0
    ffn = (ffn_layers - moe) * part("ffn") + moe * (part("moe") + shared)
    return (attending + linear + ffn_layers) * part("block") + mixers + ffn
