"""A tiny but real llama-architecture GGUF, written with the ``gguf`` package (the writer llama.cpp's own converters
use): every tensor a llama model needs, small random values, an SPM vocabulary, so that llama.cpp loads it and its
fit printer sizes it. ``python -m tests.models.tiny_gguf OUT.gguf`` writes the file the recorded outputs under
``tests/models/fixtures/engines`` were made from.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class TinyLlama:
    """The shape: 2 layers of 256, 4 heads over 2 KV heads (head size 64), an FFN of 512, 1,000 tokens."""

    layers: int = 2
    dim: int = 256
    heads: int = 4
    kv_heads: int = 2
    ffn: int = 512
    vocab: int = 1000
    context: int = 4096

    @property
    def kv_dim(self) -> int:
        return self.dim // self.heads * self.kv_heads

    def tensor_shapes(self) -> dict[str, tuple[int, ...]]:
        """Each tensor's shape as numpy holds it (rows, columns): GGUF's ``ne`` reversed."""
        d, kv, f, v = self.dim, self.kv_dim, self.ffn, self.vocab
        out: dict[str, tuple[int, ...]] = {"token_embd.weight": (v, d), "output_norm.weight": (d,),
                                           "output.weight": (v, d)}
        for i in range(self.layers):
            out.update({f"blk.{i}.attn_norm.weight": (d,), f"blk.{i}.attn_q.weight": (d, d),
                        f"blk.{i}.attn_k.weight": (kv, d), f"blk.{i}.attn_v.weight": (kv, d),
                        f"blk.{i}.attn_output.weight": (d, d), f"blk.{i}.ffn_norm.weight": (d,),
                        f"blk.{i}.ffn_gate.weight": (f, d), f"blk.{i}.ffn_up.weight": (f, d),
                        f"blk.{i}.ffn_down.weight": (d, f)})
        return out

    def tensor_bytes(self) -> int:
        """Bytes of the tensors as written: matrices F16 (2 bytes a value), norms F32 (4)."""
        total = 0
        for shape in self.tensor_shapes().values():
            n = 1
            for s in shape:
                n *= s
            total += n * (4 if len(shape) == 1 else 2)
        return total


def write_tiny_llama(path: str | Path, shape: TinyLlama = TinyLlama(), seed: int = 0) -> Path:
    """Write the model to ``path`` (returned)."""
    import gguf
    import numpy as np

    rng = np.random.default_rng(seed)
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("tiny-llama-test")
    w.add_context_length(shape.context)
    w.add_embedding_length(shape.dim)
    w.add_block_count(shape.layers)
    w.add_feed_forward_length(shape.ffn)
    w.add_head_count(shape.heads)
    w.add_head_count_kv(shape.kv_heads)
    w.add_rope_dimension_count(shape.dim // shape.heads)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    w.add_tokenizer_model("llama")
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{i:02X}>" for i in range(256)]
    tokens += [f"\u2581t{i}" for i in range(shape.vocab - len(tokens))]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL] + \
        [gguf.TokenType.BYTE] * 256 + [gguf.TokenType.NORMAL] * (shape.vocab - 259)
    w.add_token_list(tokens)
    w.add_token_scores([0.0] * 3 + [0.0] * 256 + [-float(i) for i in range(shape.vocab - 259)])
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    for name, dims in shape.tensor_shapes().items():
        if len(dims) == 1:
            w.add_tensor(name, np.ones(dims, dtype=np.float32))
        else:
            w.add_tensor(name, (rng.standard_normal(dims) * 0.02).astype(np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return Path(path)


if __name__ == "__main__":
    print(write_tiny_llama(sys.argv[1] if len(sys.argv) > 1 else "tiny-llama.gguf"))
