"""Network only when asked: resolving and listing models opens no socket unless download=True."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from advisor.catalog.load import bundled_catalog
from advisor.models import ModelSpecError, discover_models, resolve_model
from tests.models import configs
from tests.models.conftest import add_to_hf_cache, config_bytes, write_gguf


@pytest.fixture
def connections(monkeypatch):
    """Every attempt to connect, recorded and refused."""
    attempts = []

    def refuse(self, address):
        attempts.append(address)
        raise OSError("network disabled by the test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: refuse(None, a[:2]))
    return attempts


def test_offline_resolution_and_listing_open_no_socket(connections, hf_cache, tmp_path):
    add_to_hf_cache(hf_cache, "Qwen/Qwen2.5-7B", {"config.json": config_bytes(configs.QWEN25_7B)})
    write_gguf(tmp_path / "m.gguf")
    cat = bundled_catalog()
    assert resolve_model("hf:Qwen/Qwen2.5-7B", cat).source == "hf-cache"
    assert resolve_model(str(tmp_path / "m.gguf"), cat).source == "gguf"
    assert resolve_model("llama-3-8b", cat).source == "preset"
    assert len(discover_models()) == 1
    with pytest.raises(ModelSpecError, match=r"not in the Hugging Face cache .*--download.*hf download Qwen/Qwen3-8B"):
        resolve_model("hf:Qwen/Qwen3-8B", cat)
    with pytest.raises(ModelSpecError, match="unknown model 'llama9'"):
        resolve_model("llama9", cat)
    assert connections == []


def test_download_fetches_config_and_index_through_huggingface_hub(connections, hf_cache, monkeypatch):
    """--download calls hf_hub_download for config.json and the safetensors index into the same cache (faked here:
    the real call would be HTTPS to huggingface.co); without it nothing is fetched."""
    calls = []

    def fake_download(repo_id, filename, *, cache_dir, **_kw):
        calls.append((repo_id, filename, cache_dir))
        data = {"config.json": config_bytes(configs.LLAMA31_8B),
                "model.safetensors.index.json": json.dumps({"metadata": {"total_size": 16_060_522_496},
                                                            "weight_map": {}}).encode()}[filename]
        return str(add_to_hf_cache(Path(cache_dir), repo_id, {filename: data}) / filename)

    monkeypatch.setattr("huggingface_hub.hf_hub_download", fake_download)
    cat = bundled_catalog()
    with pytest.raises(ModelSpecError, match="not in the Hugging Face cache"):
        resolve_model("hf:meta-llama/Llama-3.1-8B", cat)
    assert calls == []
    rm = resolve_model("hf:meta-llama/Llama-3.1-8B", cat, download=True)
    assert [c[1] for c in calls] == ["config.json", "model.safetensors.index.json"]
    assert all(c[2] == str(hf_cache) for c in calls)
    assert rm.source == "hf-download" and rm.weight_bytes == 16_060_522_496  # bf16: 2 bytes x 8,030,261,248
    assert resolve_model("hf:meta-llama/Llama-3.1-8B", cat).source == "hf-cache"  # cached from now on
    assert connections == []
