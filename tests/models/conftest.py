"""Fixtures for the model readers: a Hugging Face cache, GGUF files and Ollama/LM Studio stores in tmp dirs."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest


def add_to_hf_cache(cache: Path, repo_id: str, files: dict[str, bytes], revision: str = "0" * 40) -> Path:
    """Lay out a repository the way huggingface_hub does: blobs by hash, a snapshot of symlinks, refs/main."""
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    snap = repo / "snapshots" / revision
    (repo / "blobs").mkdir(parents=True, exist_ok=True)
    snap.mkdir(parents=True, exist_ok=True)
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(revision)
    for name, data in files.items():
        blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
        blob.write_bytes(data)
        os.symlink(os.path.relpath(blob, snap), snap / name)
    return snap


def config_bytes(cfg: dict) -> bytes:
    return json.dumps(cfg, indent=2).encode()


@pytest.fixture
def hf_cache(tmp_path, monkeypatch):
    cache = tmp_path / "hf" / "hub"
    cache.mkdir(parents=True)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    return cache


def write_gguf(path: Path, *, arch: str = "llama", layers: int = 2, hidden: int = 256, heads: int = 4, kv_heads: int = 2,
               ffn: int = 512, vocab: int = 64, context: int = 4096, experts: int = 0) -> dict:
    """A small real GGUF file written with the gguf library: an F16 embedding, a Q8_0 and a Q4_K matrix, an F32 norm.

    Returns:
        {"params": ..., "bytes": ...} worked out by hand from the ggml block sizes:
        F16 2 bytes per value; Q8_0 34 bytes per 32 values; Q4_K 144 bytes per 256 values; F32 4 bytes.
    """
    import gguf
    import numpy as np
    from gguf import GGMLQuantizationType as Q

    w = gguf.GGUFWriter(str(path), arch)
    w.add_name("tiny test model")
    w.add_block_count(layers)
    w.add_context_length(context)
    w.add_embedding_length(hidden)
    w.add_feed_forward_length(ffn)
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    if experts:
        w.add_expert_count(experts)
        w.add_expert_used_count(2)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0)
    w.add_token_list([f"tok{i}".encode() for i in range(vocab)])
    rng = np.random.default_rng(0)
    w.add_tensor("token_embd.weight", rng.standard_normal((vocab, hidden)).astype(np.float16))
    w.add_tensor("blk.0.attn_q.weight", gguf.quants.quantize(rng.standard_normal((hidden, hidden)).astype(np.float32), Q.Q8_0),
                 raw_dtype=Q.Q8_0)
    # gguf-py cannot quantise to Q4_K itself: its blocks are written as raw bytes (the reader only sizes them)
    w.add_tensor("blk.0.ffn_up.weight", rng.integers(0, 256, (ffn, hidden // 256 * 144), dtype=np.uint8), raw_dtype=Q.Q4_K)
    w.add_tensor("blk.0.attn_norm.weight", np.ones(hidden, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    params = vocab * hidden + hidden * hidden + ffn * hidden + hidden
    nbytes = vocab * hidden * 2 + hidden * hidden // 32 * 34 + ffn * hidden // 256 * 144 + hidden * 4
    return {"params": params, "bytes": nbytes}
