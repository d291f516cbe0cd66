"""Hostile model files are one line, never an internal error, a hang or a gigabyte (issue 28): configs with
absurd numbers, safetensors headers that are not tables, index sizes of 1e999, Ollama manifests that break one
entry (the others still listed), FIFOs where a file should be, GGUF headers with NaN counts, a million-token
vocabulary and truncated tables."""

from __future__ import annotations

import json
import os
import struct
import threading
import time
import tracemalloc

import pytest

from advisor.catalog.load import bundled_catalog
from advisor.models import ModelSpecError, discover_models, resolve_model
from advisor.models.gguf_file import read_gguf
from advisor.models.hf import folder_weights, safetensors_header
from tests.models import configs
from tests.models.gguf_bytes import ARRAY, F64, STRING, U64, gguf_bytes, llama_kv


def _resolve(path):
    return resolve_model(str(path), bundled_catalog())


@pytest.mark.parametrize("raw_value", ["1e999", "NaN", "Infinity", "9" * 5000, "1e308", "-1", "1e18", "[[[[1]]]]"])
def test_hostile_config_numbers_are_one_line(tmp_path, raw_value):
    text = json.dumps(configs.LLAMA31_8B).replace('"hidden_size": 4096', f'"hidden_size": {raw_value}')
    (tmp_path / "config.json").write_text(text)
    with pytest.raises(ModelSpecError, match="'hidden_size' must be a whole number between 1 and 1,000,000") as exc:
        _resolve(tmp_path)
    assert "\n" not in str(exc.value) and len(str(exc.value)) < 400


def test_deep_nesting_and_bad_utf8_in_a_config(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_bytes(b'{"x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
    with pytest.raises(ModelSpecError, match="nested deeper than"):
        _resolve(cfg)
    # a name that is not UTF-8 is read with a replacement character, the model itself is fine
    cfg.write_bytes(json.dumps(configs.LLAMA31_8B).encode().replace(b'"llama"', b'"llama", "_name_or_path": "\xff\xfe"'))
    assert _resolve(cfg).arch.hidden == 4096


def _safetensors(path, header) -> None:
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * 64)


@pytest.mark.parametrize("header, message", [
    ([1, 2, 3], "not a JSON object"),
    ({"w": {"dtype": "F32", "shape": [-4], "data_offsets": [0, 16]}}, "shape or data_offsets must be a whole number"),
    ({"w": {"dtype": "F32", "shape": [10**9, 10**9], "data_offsets": [0, 16]}}, "at most"),
    ({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 10**12]}}, "shape or data_offsets must be"),
    ({"w": {"dtype": "F32", "shape": [4], "data_offsets": [16, 0]}}, "end before they start"),
    ({"w": [1]}, "no valid shape"),
])
def test_bad_safetensors_headers(tmp_path, header, message):
    path = tmp_path / "model.safetensors"
    _safetensors(path, header)
    with pytest.raises(ModelSpecError, match=message):
        safetensors_header(path)


def test_index_total_size_of_1e999(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(configs.LLAMA31_8B))
    (tmp_path / "model.safetensors.index.json").write_text('{"metadata": {"total_size": 1e999}, "weight_map": {}}')
    with pytest.raises(ModelSpecError, match=r"metadata.total_size \(bytes\) must be a whole number"):
        _resolve(tmp_path)


def _ends_within(fn, seconds: float):
    out = {}

    def target():
        try:
            out["value"] = fn()
        except Exception as exc:  # noqa: BLE001 - the test inspects it
            out["error"] = exc

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), "the reader hung"
    return out


def test_a_fifo_shard_is_refused_without_hanging(tmp_path):
    """Failed before: safetensors_header opened the FIFO with a blocking read and never returned."""
    (tmp_path / "config.json").write_text(json.dumps(configs.LLAMA31_8B))
    os.mkfifo(tmp_path / "model.safetensors")
    out = _ends_within(lambda: folder_weights(tmp_path), 5)
    assert isinstance(out.get("error"), ModelSpecError) and "FIFO" in str(out["error"])


def test_fifo_and_dev_zero_as_model_files(tmp_path):
    os.mkfifo(tmp_path / "pipe.gguf")
    out = _ends_within(lambda: read_gguf(tmp_path / "pipe.gguf"), 5)
    assert "not a regular file" in str(out["error"])
    if os.path.exists("/dev/zero"):
        out = _ends_within(lambda: resolve_model("/dev/zero", bundled_catalog()), 5)
        assert isinstance(out.get("error"), ModelSpecError)


def test_gguf_block_count_nan_and_huge(tmp_path):
    path = tmp_path / "m.gguf"
    for value, shown in ((float("nan"), "nan"), (1e18, "1e\\+18"), (float("inf"), "inf")):
        path.write_bytes(gguf_bytes(llama_kv(block_count=(F64, value))))
        with pytest.raises(ModelSpecError, match=f"'llama.block_count' must be a whole number between 0 and 10,000, "
                                                 f"got {shown}"):
            read_gguf(path)
    path.write_bytes(gguf_bytes(llama_kv(**{"general.name": (STRING, b"\xff\x1b]0;x\x07" * 3)})))
    assert "\ufffd" in read_gguf(path).name  # bad UTF-8 replaced (display escaping is the display's job)


def test_million_token_vocabulary_is_fast_and_small(tmp_path):
    """Failed before: gguf.GGUFReader built a numpy view per token, 21 s and 1.4 GB for this file."""
    path = tmp_path / "big-vocab.gguf"
    tokens = [b"t%d" % i for i in range(1_000_000)]
    path.write_bytes(gguf_bytes(llama_kv(**{"tokenizer.ggml.tokens": (ARRAY, (STRING, tokens)),
                                            "tokenizer.ggml.scores": (ARRAY, (U64, list(range(1_000_000))))})))
    del tokens
    import gguf.constants  # noqa: F401 - imported once, not timed

    start = time.perf_counter()
    rm = read_gguf(path)
    elapsed = time.perf_counter() - start
    tracemalloc.start()  # memory measured on a second read (tracemalloc slows every allocation)
    read_gguf(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert rm.arch.vocab == 1_000_000
    assert elapsed < 3.0 and peak < 20 * 2**20  # measured 0.3 s and under 1 MB on a loaded 2-core machine


def test_truncated_gguf_says_truncated_in_our_words(tmp_path):
    data = gguf_bytes(llama_kv(**{"tokenizer.ggml.tokens": (ARRAY, (STRING, [b"a"] * 50))}))
    for cut in (len(data) - 10, len(data) // 2, 30, 6):
        bad = tmp_path / f"cut{cut}.gguf"
        bad.write_bytes(data[:cut])
        with pytest.raises(ModelSpecError, match="truncated GGUF file") as exc:
            read_gguf(bad)
        text = str(exc.value)
        assert "last axis" not in text and "array" not in text.split("(")[0] and "\n" not in text


def _manifest(folder, tag: str, text: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / tag).write_text(text)


def test_one_bad_ollama_manifest_leaves_the_others_listed(tmp_path, monkeypatch):
    from tests.models.test_gguf_and_stores import _ollama_store

    root = tmp_path / "ollama"
    good = tmp_path / "good.gguf"
    good.write_bytes(gguf_bytes(llama_kv()))
    _ollama_store(root, "good", "latest", good.read_bytes())
    lib = root / "manifests" / "registry.ollama.ai" / "library"
    layer = '{"mediaType": "application/vnd.ollama.image.model", "digest": "sha256:%s", "size": %s}'
    _manifest(lib / "huge", "latest", '{"layers": [%s]}' % (layer % ("0" * 64, "1e999")))
    _manifest(lib / "nested", "latest", '{"layers": ' + "[" * 50_000 + "]" * 50_000 + "}")
    _manifest(lib / "digits", "latest", '{"layers": [%s]}' % (layer % ("0" * 64, "9" * 5000)))
    os.mkfifo(lib / "good" / "fifo")
    monkeypatch.setenv("ADVISOR_LMSTUDIO_MODELS", str(tmp_path / "none"))
    found = _ends_within(lambda: discover_models(hf_cache=tmp_path / "hf", ollama_root=root), 10)["value"]
    by_name = {f.name: f for f in found}
    assert by_name["good:latest"].model is not None and by_name["good:latest"].model.arch.layers == 2
    assert "layers[0].size' (bytes) must be a whole number" in by_name["huge:latest"].error
    assert "nested deeper" in by_name["nested:latest"].error
    assert "layers[0].size" in by_name["digits:latest"].error
    assert "FIFO" in by_name["good:fifo"].error
