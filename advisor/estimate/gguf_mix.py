"""What a llama.cpp quantisation of a model weighs: the ggml type ``llama-quantize`` gives each tensor.

A named GGUF quantisation (``Q4_K_M``, ``IQ4_XS``, ``MXFP4_MOE``, ...) is a mix: the file type's base type for
most matrices, more bits for the output matrix, for some layers' value projections and feed-forward down
projections, and a fallback type for a matrix whose rows are not a whole number of the type's blocks (a
feed-forward width that is not a multiple of 256 cannot hold k-quants: Qwen2.5-72B's 29,568). The rules follow
llama.cpp ``src/llama-quant.cpp`` (``llama_tensor_get_type_impl``, ``tensor_type_fallback``, the file type's
default type in ``llama_model_quantize_impl``; ggml-org/llama.cpp, 2025-2026); one-dimensional tensors (norms,
biases), expert routers and convolution weights stay at their source type (F32). The block sizes and bytes of each
ggml type come from the ``gguf`` package (``GGML_QUANT_SIZES``), which llama.cpp publishes.

The tensor table is built from the architecture in llama.cpp's GGUF naming (``token_embd``, ``blk.N.attn_q``,
``ffn_down_exps`` for merged experts, ``attn_kv_b`` for MLA, ``ssm_in``/``ssm_out`` for a linear layer's
projections, ``output``); a tensor's first dimension (``ne[0]``) is its input width, the one the block size must
divide. Linear layers are priced as Mamba's projections (base type, convolution kept); llama.cpp's exact names and
exceptions for gated DeltaNet layers are not modelled.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.estimate.model import ModelArch

# llama.cpp file type (format id, lower case as in resources/runtimes.toml) -> its default ggml type.
FILE_TYPE_BASE = {
    "f32": "F32", "f16": "F16", "bf16": "BF16", "q8_0": "Q8_0", "q4_0": "Q4_0", "q4_1": "Q4_1", "q5_0": "Q5_0",
    "q5_1": "Q5_1", "q2_k": "Q2_K", "q2_k_s": "Q2_K", "q3_k_s": "Q3_K", "q3_k_m": "Q3_K", "q3_k_l": "Q3_K",
    "q4_k_s": "Q4_K", "q4_k_m": "Q4_K", "q5_k_s": "Q5_K", "q5_k_m": "Q5_K", "q6_k": "Q6_K", "iq2_xxs": "IQ2_XXS",
    "iq2_xs": "IQ2_XS", "iq2_s": "IQ2_XS", "iq2_m": "IQ2_S", "iq3_xs": "IQ3_S", "iq3_xxs": "IQ3_XXS",
    "iq3_s": "IQ3_S", "iq3_m": "IQ3_S", "iq1_s": "IQ1_S", "iq1_m": "IQ1_M", "iq4_nl": "IQ4_NL", "iq4_xs": "IQ4_XS",
    "tq1_0": "TQ1_0", "tq2_0": "TQ2_0", "mxfp4_moe": "MXFP4",
}
_LOW_IQ = {"iq2_xxs", "iq2_xs", "iq1_s", "iq2_s", "iq2_m", "iq1_m"}  # the first special family of the rules
_SMALL_OUTPUT = _LOW_IQ | {"iq3_xxs"}  # output matrix at Q5_K instead of Q6_K
# A type whose rows do not divide into its blocks falls back to one of 32-wide blocks (tensor_type_fallback).
FALLBACK = {"IQ1_S": "IQ4_NL", "IQ1_M": "IQ4_NL", "IQ2_XXS": "IQ4_NL", "IQ2_XS": "IQ4_NL", "IQ2_S": "IQ4_NL",
            "IQ3_XXS": "IQ4_NL", "IQ3_S": "IQ4_NL", "IQ4_XS": "IQ4_NL", "Q2_K": "Q4_0", "Q3_K": "Q4_0",
            "TQ1_0": "Q4_0", "TQ2_0": "Q4_0", "Q4_K": "Q5_0", "Q5_K": "Q5_1", "Q6_K": "Q8_0"}


@dataclass(frozen=True)
class Tensor:
    """One tensor of the file: its GGUF name, input width ``ne0``, element count, layer (-1 outside the blocks),
    whether it holds experts (3-D) and whether llama-quantize quantises it at all."""

    name: str
    ne0: int
    elements: int
    layer: int = -1
    experts: bool = False
    quantised: bool = True


def _block(t: str) -> tuple[int, int]:
    from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

    return GGML_QUANT_SIZES[GGMLQuantizationType[t]]


def tensor_bytes(ggml_type: str, elements: int) -> int:
    """Bytes of ``elements`` values of a ggml type (whole blocks)."""
    size, nbytes = _block(ggml_type)
    return -(-elements // size) * nbytes


def tensor_table(arch: ModelArch) -> list[Tensor]:
    """The tensors of ``arch`` as llama.cpp's converter writes them (full-attention, sliding and MLA layers; dense,
    MoE with merged experts, shared experts and leading dense layers; q, k, v and output biases)."""
    h, d, a, kv = arch.hidden, arch.d_head, arch.heads, arch.kv_heads
    out = [Tensor("token_embd.weight", h, arch.vocab * h)]
    moe_from = arch.dense_layers
    kinds = arch.layer_kinds
    for i in range(arch.layers):
        b = f"blk.{i}."
        out.append(Tensor(b + "attn_norm.weight", h, h, i, quantised=False))
        if kinds[i] == "linear":  # llama.cpp's Mamba names: ssm_in, ssm_conv1d (kept), ssm_out; small vectors F32
            k, v, vh = arch.linear_k_heads * arch.linear_k_dim, arch.linear_v_heads * arch.linear_v_dim, arch.linear_v_heads
            width = 2 * v + 2 * k + (vh if arch.linear_kind == "mamba2" else 2 * vh)
            out += [Tensor(b + "ssm_in.weight", h, h * width, i),
                    Tensor(b + "ssm_conv1d.weight", arch.linear_conv, (v + 2 * k) * arch.linear_conv, i,
                           quantised=False),
                    Tensor(b + "ssm_out.weight", v, v * h, i)]
        elif kinds[i] == "ffn":
            pass
        elif arch.is_mla:
            qk = arch.nope_dim + arch.rope_dim
            if arch.q_lora_rank:
                out += [Tensor(b + "attn_q_a.weight", h, h * arch.q_lora_rank, i),
                        Tensor(b + "attn_q_b.weight", arch.q_lora_rank, arch.q_lora_rank * a * qk, i)]
            else:
                out.append(Tensor(b + "attn_q.weight", h, h * a * qk, i))
            out += [Tensor(b + "attn_kv_a_mqa.weight", h, h * (arch.kv_lora_rank + arch.rope_dim), i),
                    Tensor(b + "attn_kv_b.weight", arch.kv_lora_rank,
                           arch.kv_lora_rank * a * (arch.nope_dim + arch.v_head_dim), i),
                    Tensor(b + "attn_output.weight", a * arch.v_head_dim, a * arch.v_head_dim * h, i)]
        else:
            q_out = a * d * (2 if arch.attn_gate else 1)
            out += [Tensor(b + "attn_q.weight", h, h * q_out, i), Tensor(b + "attn_k.weight", h, h * kv * d, i),
                    Tensor(b + "attn_v.weight", h, h * kv * d, i),
                    Tensor(b + "attn_output.weight", a * d, a * d * h, i)]
            if arch.bias in ("qkv", "all"):
                out += [Tensor(b + f"attn_{x}.bias", n, n, i, quantised=False)
                        for x, n in (("q", a * d), ("k", kv * d), ("v", kv * d))]
        if arch.mixer_or_ffn and kinds[i] != "ffn":
            continue  # Nemotron-H: a mixer layer has no feed-forward
        out.append(Tensor(b + "ffn_norm.weight", h, h, i, quantised=False))
        moe = arch.is_moe and i >= moe_from and (i - moe_from + 1) % arch.moe_step == 0
        if not moe:
            f = arch.ffn
            gate = [Tensor(b + "ffn_gate.weight", h, h * f, i)] if arch.ffn_kind == "gated" else []
            out += gate + [Tensor(b + "ffn_down.weight", f, f * h, i), Tensor(b + "ffn_up.weight", h, h * f, i)]
            continue
        f, e = arch.moe_ffn or arch.ffn, arch.experts
        out += [Tensor(b + "ffn_gate_inp.weight", h, h * e, i, quantised=False),
                Tensor(b + "ffn_gate_exps.weight", h, h * f * e, i, experts=True),
                Tensor(b + "ffn_down_exps.weight", f, f * h * e, i, experts=True),
                Tensor(b + "ffn_up_exps.weight", h, h * f * e, i, experts=True)]
        if arch.bias == "all":  # gpt-oss: expert biases, 2-D, kept at their source type
            out += [Tensor(b + f"ffn_{x}_exps.bias", n, n * e, i, quantised=False)
                    for x, n in (("gate", f), ("down", h), ("up", f))]
        if arch.shared_experts:
            s = f * arch.shared_experts
            out += [Tensor(b + "ffn_gate_shexp.weight", h, h * s, i), Tensor(b + "ffn_down_shexp.weight", s, s * h, i),
                    Tensor(b + "ffn_up_shexp.weight", h, h * s, i)]
    out.append(Tensor("output_norm.weight", h, h, quantised=False))
    if not arch.tied:
        out.append(Tensor("output.weight", h, arch.vocab * h))
    return out


def _category(name: str) -> str:
    """llama-quantize's tensor category (``tensor_get_category``: a substring test on the name)."""
    if name == "output.weight":
        return "output"
    if name == "token_embd.weight":
        return "token_embd"
    for key, cat in (("attn_qkv.weight", "attn_v"), ("attn_kv_b.weight", "attn_v"), ("attn_v.weight", "attn_v"),
                     ("attn_k.weight", "attn_k"), ("attn_q.weight", "attn_q"), ("attn_output.weight", "attn_output"),
                     ("ffn_up", "ffn_up"), ("ffn_gate", "ffn_gate"), ("ffn_down", "ffn_down")):
        if key in name:
            return cat
    return "other"


def _more_bits(i: int, n: int) -> bool:
    """The layers llama.cpp gives more bits: the first and last eighth and every third between."""
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def tensor_types(arch: ModelArch, file_type: str, imatrix: bool = True) -> list[tuple[Tensor, str]]:
    """Each tensor with the ggml type a ``llama-quantize`` run of ``file_type`` gives it.

    ``imatrix``: whether an importance matrix was used (published i-quants are made with one; it changes the
    types of IQ3_XXS value projections and of the first down projections of IQ3_XXS, IQ4_NL and IQ4_XS).
    Raises:
        ValueError: a file type llama.cpp does not have.
    """
    ft = file_type.lower()
    if ft not in FILE_TYPE_BASE:
        raise ValueError(f"{file_type!r} is not a llama.cpp file type ({', '.join(sorted(FILE_TYPE_BASE))})")
    base = FILE_TYPE_BASE[ft]
    table = tensor_table(arch)
    tied = not any(t.name == "output.weight" for t in table)
    n_layer, gqa, n_exp = arch.layers, arch.heads // arch.kv_heads, arch.experts
    n_wv = sum(1 for t in table if t.quantised and _category(t.name) == "attn_v")
    big70 = arch.layers == 80  # llama.cpp's LLM_TYPE_70B: attn_v of Q3_K/Q4_K bumped to Q5_K
    state = {"wv": 0, "down": 0}
    out = []
    for t in table:
        if not t.quantised or base in ("F32", "F16", "BF16"):
            out.append((t, "F32" if not t.quantised else base))
            continue
        cat = _category(t.name)
        new = base
        if cat == "output" or (tied and cat == "token_embd"):
            if ft == "mxfp4_moe" or t.ne0 % _block(base)[0]:
                new = "Q8_0"
            elif ft in _SMALL_OUTPUT:
                new = "Q5_K"
            elif base != "Q8_0":
                new = "Q6_K"
        elif ft == "mxfp4_moe":
            new = "MXFP4" if t.experts else "Q8_0"
        elif cat == "token_embd":
            new = {"iq2_xxs": "Q2_K", "iq2_xs": "Q2_K", "iq1_s": "Q2_K", "iq1_m": "Q2_K", "iq2_s": "IQ3_S",
                   "iq2_m": "IQ3_S", "iq3_xxs": "IQ3_S", "tq1_0": "Q4_K", "tq2_0": "Q4_K"}.get(ft, base)
        elif ft in _LOW_IQ:
            new = _low_iq(ft, cat, base, state, gqa, n_exp, n_layer)
        elif cat == "attn_v":
            new = _attn_v(ft, base, state["wv"], n_wv, gqa, imatrix)
            if big70 and new in ("Q3_K", "Q4_K"):
                new = "Q5_K"
            if n_exp == 8:
                new = "Q8_0"
            state["wv"] += 1
        elif cat == "attn_k":
            new = "Q8_0" if n_exp == 8 else {"iq3_xs": "IQ3_XXS", "iq3_xxs": "IQ2_S"}.get(ft, base)
        elif cat == "attn_q":
            new = {"iq3_xs": "IQ3_XXS", "iq3_xxs": "IQ2_S"}.get(ft, base)
        elif cat == "ffn_down":
            i = t.layer if n_exp > 1 else state["down"]
            new = _ffn_down(ft, base, i, n_layer, n_exp, imatrix)
            state["down"] += 1
        elif cat == "attn_output":
            if n_exp == 8:
                if ft in ("q2_k", "iq3_xs", "iq3_xxs", "q3_k_s", "q3_k_m", "iq4_nl", "q4_k_s", "q4_k_m", "iq3_s",
                          "iq3_m", "iq4_xs"):
                    new = "Q5_K"
            else:
                new = {"q2_k": "Q3_K", "iq3_xxs": "IQ3_S", "q3_k_m": "Q4_K", "q3_k_l": "Q5_K",
                       "iq3_m": "Q4_K"}.get(ft, base)
        elif cat in ("ffn_gate", "ffn_up") and ft == "iq3_xs" and n_layer // 8 <= t.layer < 7 * n_layer // 8:
            new = "IQ3_XXS"
        if t.ne0 % _block(new)[0]:
            new = FALLBACK.get(new, "F16")
            if t.ne0 % _block(new)[0]:
                new = "F16"
        out.append((t, new))
    return out


def _low_iq(ft: str, cat: str, base: str, state: dict, gqa: int, n_exp: int, n_layer: int) -> str:
    two_s = ft in ("iq2_s", "iq2_m")
    if cat == "attn_v":
        state["wv"] += 1
        return "Q4_K" if gqa >= 4 or n_exp >= 4 else ("IQ3_S" if two_s else "Q2_K")
    if n_exp == 8 and cat == "attn_k":
        return "Q4_K"
    if cat == "ffn_down":
        first = state["down"] < n_layer // 8
        state["down"] += 1
        return ("IQ3_S" if two_s else "Q2_K") if first else base
    if cat == "attn_output":
        if n_exp == 8:
            return "Q5_K"
        return {"iq1_s": "IQ2_XXS", "iq1_m": "IQ2_XXS", "iq2_s": "IQ3_S", "iq2_m": "IQ3_S"}.get(ft, base)
    return base


def _attn_v(ft: str, base: str, i: int, n: int, gqa: int, imatrix: bool) -> str:
    if ft == "q2_k":
        return "Q4_K" if gqa >= 4 else "Q3_K"
    if ft == "q2_k_s" and gqa >= 4:
        return "Q4_K"
    if ft == "iq3_xxs":
        return "Q4_K" if gqa >= 4 else ("IQ3_XXS" if imatrix else "IQ3_S")
    if ft in ("iq3_xs", "iq3_s") and gqa >= 4:
        return "Q4_K"
    if ft == "iq3_m":
        return "Q4_K"
    if ft == "q3_k_m":
        return "Q5_K" if i < 2 else "Q4_K"
    if ft == "q3_k_l":
        return "Q5_K"
    if ft in ("iq4_nl", "iq4_xs") and gqa >= 4:
        return "Q5_K"
    if ft in ("q4_k_m", "q5_k_m") and _more_bits(i, n):
        return "Q6_K"
    if ft == "q4_k_s" and i < 4:
        return "Q5_K"
    return base


def _ffn_down(ft: str, base: str, i: int, n: int, n_exp: int, imatrix: bool) -> str:
    if ft == "q2_k":
        return "Q3_K"
    if ft == "q2_k_s":
        return "Q4_K" if i < n // 8 else base
    if ft == "iq3_xxs" and not imatrix:
        return "Q4_K" if i < n // 8 else "Q3_K"
    if ft == "q3_k_m":
        return "Q5_K" if i < n // 16 else "Q4_K"
    if ft == "iq3_m" and (i < n // 8 or (n_exp == 8 and _more_bits(i, n))):
        return "Q4_K"
    if ft == "q3_k_l":
        return "Q5_K"
    if ft == "q4_k_m":
        return "Q6_K" if _more_bits(i, n) else base
    if ft in ("iq4_nl", "iq4_xs") and i < n // 8 and not imatrix:
        return "Q5_K"
    if ft == "q5_k_m" and _more_bits(i, n):
        return "Q6_K"
    if ft == "q4_k_s" and i < n // 8:
        return "Q5_K"
    return base


def gguf_weight_bytes(arch: ModelArch, file_type: str, imatrix: bool = True) -> int:
    """Bytes of every tensor of ``arch`` quantised as ``file_type`` (the GGUF file less its header)."""
    return sum(tensor_bytes(ty, t.elements) for t, ty in tensor_types(arch, file_type, imatrix))


def gguf_mix(arch: ModelArch, file_type: str, imatrix: bool = True) -> dict[str, int]:
    """Bytes by ggml type of a ``file_type`` quantisation of ``arch`` (what ``llama-quantize`` prints per type)."""
    mix: dict[str, int] = {}
    for t, ty in tensor_types(arch, file_type, imatrix):
        mix[ty] = mix.get(ty, 0) + tensor_bytes(ty, t.elements)
    return mix
