"""GGUF files read from their metadata with exact bytes; Ollama and LM Studio stores found by their layout."""

from __future__ import annotations

import hashlib
import json

import pytest

from advisor.catalog.load import bundled_catalog
from advisor.models import ModelSpecError, discover_models, resolve_model
from advisor.models.gguf_file import read_gguf
from advisor.models.stores import lmstudio_models, ollama_models
from tests.models import configs
from tests.models.conftest import add_to_hf_cache, config_bytes, write_gguf
from tests.models.gguf_bytes import STRING, gguf_bytes


def test_gguf_gives_exact_params_and_weight_bytes(tmp_path):
    path = tmp_path / "tiny-Q8_0.gguf"
    expected = write_gguf(path, layers=3, hidden=256, heads=8, kv_heads=2, ffn=512, vocab=64, context=8192)
    # by hand: 64*256 F16 (32,768 B) + 256*256 Q8_0 (2,048 blocks of 34 B) + 512*256 Q4_K (512 blocks of 144 B)
    # + 256 F32 (1,024 B)
    assert expected["bytes"] == 32768 + 69632 + 73728 + 1024
    rm = resolve_model(str(path), bundled_catalog())
    assert rm.source == "gguf" and rm.params == expected["params"] == 213248
    assert rm.weight_bytes == expected["bytes"]
    assert rm.quant == "Q8_0" and rm.bits_per_weight == pytest.approx(177152 * 8 / 213248)
    a = rm.arch
    assert (a.layers, a.hidden, a.heads, a.kv_heads, a.ffn, a.vocab, a.max_context, a.tied) == (3, 256, 8, 2, 512, 64, 8192, True)


def test_gguf_moe_keys_map_to_experts(tmp_path):
    path = tmp_path / "moe.gguf"
    write_gguf(path, arch="qwen3moe", experts=8)
    arch = read_gguf(path).arch
    assert arch.experts == 8 and arch.experts_per_token == 2


def test_truncated_and_foreign_files_are_one_line(tmp_path):
    good = tmp_path / "good.gguf"
    write_gguf(good)
    data = good.read_bytes()
    for cut in (len(data) - 1000, 200, 10):
        bad = tmp_path / f"cut{cut}.gguf"
        bad.write_bytes(data[:cut])
        with pytest.raises(ModelSpecError, match="truncated|corrupt|not a GGUF") as exc:
            read_gguf(bad)
        assert "\n" not in str(exc.value) and str(bad) in str(exc.value)
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"PK\x03\x04 not gguf")
    with pytest.raises(ModelSpecError, match="not a GGUF file"):
        read_gguf(junk)


def _ollama_store(root, name: str, tag: str, gguf_bytes: bytes) -> None:
    digest = hashlib.sha256(gguf_bytes).hexdigest()
    (root / "blobs").mkdir(parents=True, exist_ok=True)
    (root / "blobs" / f"sha256-{digest}").write_bytes(gguf_bytes)
    manifest = {"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
                "config": {"mediaType": "application/vnd.docker.container.image.v1+json", "digest": "sha256:" + "0" * 64,
                           "size": 10},
                "layers": [{"mediaType": "application/vnd.ollama.image.model", "digest": f"sha256:{digest}",
                            "size": len(gguf_bytes)},
                           {"mediaType": "application/vnd.ollama.image.template", "digest": "sha256:" + "1" * 64, "size": 5}]}
    folder = root / "manifests" / "registry.ollama.ai" / "library" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / tag).write_text(json.dumps(manifest))


def test_ollama_model_by_name(tmp_path, monkeypatch):
    gguf = tmp_path / "w.gguf"
    expected = write_gguf(gguf)
    root = tmp_path / "ollama"
    _ollama_store(root, "tiny", "q8", gguf.read_bytes())
    monkeypatch.setenv("OLLAMA_MODELS", str(root))
    assert [n for n, _b, _s in ollama_models()] == ["tiny:q8"]
    for spec in ("ollama:tiny:q8", "tiny:q8"):
        rm = resolve_model(spec, bundled_catalog())
        assert rm.source == "ollama" and rm.name == "tiny:q8" and rm.weight_bytes == expected["bytes"]
    with pytest.raises(ModelSpecError, match="ollama pull llama3.1:8b"):
        resolve_model("ollama:llama3.1:8b", bundled_catalog())


def test_lmstudio_model_by_name(tmp_path, monkeypatch):
    root = tmp_path / "lms"
    folder = root / "lmstudio-community" / "Tiny-GGUF"
    folder.mkdir(parents=True)
    expected = write_gguf(folder / "Tiny-Q8_0.gguf")
    # a vision projector is not a model of its own (it counts with the model: tests/models/test_projector.py)
    (folder / "mmproj-Tiny-F16.gguf").write_bytes(gguf_bytes([("general.architecture", STRING, "clip")]))
    monkeypatch.setenv("ADVISOR_LMSTUDIO_MODELS", str(root))
    assert [n for n, _p, _s in lmstudio_models()] == ["lmstudio-community/Tiny-GGUF/Tiny-Q8_0.gguf"]
    rm = resolve_model("lmstudio:lmstudio-community/Tiny-GGUF", bundled_catalog())
    assert rm.source == "lmstudio" and rm.params == expected["params"]
    write_gguf(folder / "Tiny-Q4_0.gguf")
    with pytest.raises(ModelSpecError, match="holds 2 GGUF files; name one"):
        resolve_model("lmstudio:lmstudio-community/Tiny-GGUF", bundled_catalog())


def test_discover_lists_every_store_and_keeps_unreadable_models_as_errors(tmp_path, hf_cache, monkeypatch):
    add_to_hf_cache(hf_cache, "Qwen/Qwen2.5-7B", {"config.json": config_bytes(configs.QWEN25_7B)})
    add_to_hf_cache(hf_cache, "state-spaces/mamba-130m", {"config.json": config_bytes({"model_type": "mamba"})})
    gguf = tmp_path / "w.gguf"
    write_gguf(gguf)
    _ollama_store(tmp_path / "ollama", "tiny", "latest", gguf.read_bytes())
    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path / "ollama"))
    found = discover_models()
    assert [(f.store, f.name) for f in found] == [("hf-cache", "Qwen/Qwen2.5-7B"), ("hf-cache", "state-spaces/mamba-130m"),
                                                  ("ollama", "tiny:latest")]
    assert found[0].model.params == pytest.approx(7.6156e9, rel=1e-3) and found[0].spec == "hf:Qwen/Qwen2.5-7B"
    assert found[1].model is None and "model_type 'mamba' is not supported" in found[1].error
    assert found[2].model.source == "ollama" and found[2].disk_bytes == gguf.stat().st_size + 5


def test_split_gguf_sums_every_part_and_lists_once(tmp_path, monkeypatch):
    import gguf
    import numpy as np

    folder = tmp_path / "lms" / "pub" / "Big-GGUF"
    folder.mkdir(parents=True)
    first = write_gguf(folder / "Big-Q8_0-00001-of-00002.gguf")
    w = gguf.GGUFWriter(str(folder / "Big-Q8_0-00002-of-00002.gguf"), "llama")
    w.add_tensor("output.weight", np.zeros((64, 256), dtype=np.float16))  # 64*256 values of 2 bytes
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    monkeypatch.setenv("ADVISOR_LMSTUDIO_MODELS", str(tmp_path / "lms"))
    assert [n for n, _p, _s in lmstudio_models()] == ["pub/Big-GGUF/Big-Q8_0-00001-of-00002.gguf"]
    for part in ("Big-Q8_0-00001-of-00002.gguf", "Big-Q8_0-00002-of-00002.gguf"):
        rm = read_gguf(folder / part)
        assert rm.params == first["params"] + 64 * 256 and rm.weight_bytes == first["bytes"] + 64 * 256 * 2
        assert rm.arch.tied is False  # the output head sits in the second part
    (folder / "Big-Q8_0-00002-of-00002.gguf").unlink()
    with pytest.raises(ModelSpecError, match="missing part"):
        read_gguf(folder / "Big-Q8_0-00001-of-00002.gguf")
