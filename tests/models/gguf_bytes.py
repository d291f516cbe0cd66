"""GGUF files built byte by byte (ggml-org/ggml docs/gguf.md, version 3), for headers the gguf writer will not
make: a million-token vocabulary without its embedding, NaN counts, truncated tables."""

from __future__ import annotations

import struct

U32, F32, STRING, ARRAY, U64, F64 = 4, 6, 8, 9, 10, 12
F32_TENSOR = 0  # GGMLQuantizationType.F32


def _str(text: str | bytes) -> bytes:
    raw = text.encode() if isinstance(text, str) else text
    return struct.pack("<Q", len(raw)) + raw


def _kv(key: str, vtype: int, value) -> bytes:
    out = _str(key) + struct.pack("<I", vtype)
    if vtype == STRING:
        return out + _str(value)
    if vtype == ARRAY:
        itype, items = value
        out += struct.pack("<IQ", itype, len(items))
        if itype == STRING:
            return out + b"".join(_str(x) for x in items)
        return out + struct.pack(f"<{len(items)}{ {U32: 'I', F32: 'f', U64: 'Q'}[itype]}", *items)
    return out + struct.pack("<" + {U32: "I", F32: "f", U64: "Q", F64: "d"}[vtype], value)


def llama_kv(**over) -> list:
    """The metadata of a tiny llama model; ``over`` replaces values by key suffix (``block_count=(F64, nan)``)."""
    base = {"general.architecture": (STRING, "llama"), "general.name": (STRING, "tiny"),
            "llama.block_count": (U32, 2), "llama.embedding_length": (U32, 64), "llama.attention.head_count": (U32, 4),
            "llama.attention.head_count_kv": (U32, 2), "llama.feed_forward_length": (U32, 128),
            "llama.context_length": (U32, 4096), "llama.vocab_size": (U32, 100)}
    for k, v in over.items():
        base[f"llama.{k}" if f"llama.{k}" in base else k] = v
    return [(k, t, v) for k, (t, v) in base.items()]


def gguf_bytes(kv: list, tensors=(("blk.0.attn_norm.weight", (64,)),)) -> bytes:
    """A version-3 GGUF file: the metadata ``kv`` [(key, type, value)], then F32 tensors of the given shapes."""
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv)) + b"".join(_kv(*x) for x in kv)
    offset, table, data = 0, b"", b""
    for name, shape in tensors:
        n = 1
        for d in shape:
            n *= d
        table += _str(name) + struct.pack("<I", len(shape)) + struct.pack(f"<{len(shape)}Q", *shape)
        table += struct.pack("<IQ", F32_TENSOR, offset)
        data += b"\0" * (n * 4)
        offset += n * 4
    body = head + table
    return body + b"\0" * (-len(body) % 32) + data
