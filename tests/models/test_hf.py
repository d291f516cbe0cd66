"""Hugging Face configs onto the planner's architecture: published configs, counts within 1 %, and bad input."""

from __future__ import annotations

import json
import re
import struct

import pytest

from advisor.catalog.load import bundled_catalog
from advisor.estimate.model import active_param_count, embedding_params, param_count
from advisor.models import ModelSpecError, resolve_model
from advisor.models.hf import arch_from_config, folder_weights, resolve_config_file
from tests.models import configs
from tests.models.conftest import add_to_hf_cache, config_bytes

# (config, published total, published active or None, source)
PUBLISHED = [
    (configs.QWEN25_7B, 7_615_616_512, None, "https://huggingface.co/Qwen/Qwen2.5-7B: 7.61B"),
    (configs.LLAMA31_8B, 8_030_261_248, None, "https://huggingface.co/meta-llama/Llama-3.1-8B: 8.03B"),
    (configs.QWEN3_30B_A3B, 30.5e9, 3.3e9, "https://huggingface.co/Qwen/Qwen3-30B-A3B: 30.5B, 3.3B activated"),
    (configs.MIXTRAL_8X7B, 46.7e9, 12.9e9, "Jiang et al. 2024 (Mixtral of Experts): 47B total, 13B active"),
    (configs.DEEPSEEK_V3, 671e9, 37e9, "DeepSeek-V3 technical report (2024): 671B total, 37B activated"),
    (configs.GPT_OSS_20B, 20.91e9, None, "OpenAI gpt-oss model card (2025-08-05), table 1: 20.91B"),
    (configs.GEMMA3_4B, 3.884e9, None, "Gemma 3 technical report (2025), table 1: 675M + 3,209M (language model)"),
]


@pytest.mark.parametrize("cfg, total, active, source", PUBLISHED, ids=lambda v: v if isinstance(v, str) else None)
def test_published_configs_count_within_one_percent(cfg, total, active, source):
    arch = arch_from_config(cfg, "m", "m")
    assert param_count(arch) == pytest.approx(total, rel=0.01), source
    if active:
        assert active_param_count(arch) == pytest.approx(active, rel=0.02), source


def test_mapped_fields_match_the_presets_from_the_same_configs():
    cat = bundled_catalog()
    for cfg, preset in ((configs.QWEN25_7B, "qwen2.5-7b"), (configs.LLAMA31_8B, "llama-3.1-8b"),
                        (configs.QWEN3_30B_A3B, "qwen3-30b-a3b"), (configs.DEEPSEEK_V3, "deepseek-v3"),
                        (configs.GPT_OSS_20B, "gpt-oss-20b"), (configs.GEMMA3_4B, "gemma-3-4b")):
        arch, ref = arch_from_config(cfg, "m", "m"), cat.model(preset)
        for key in ("layers", "hidden", "heads", "kv_heads", "d_head", "vocab", "tied", "experts",
                    "experts_per_token", "kv_lora_rank", "q_lora_rank", "dense_layers", "bias", "norms_per_layer"):
            assert getattr(arch, key) == getattr(ref, key), (preset, key)
        assert param_count(arch) == param_count(ref), preset


def test_gemma3_multimodal_reads_the_text_model_and_says_the_vision_tower_is_left_out(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(configs.GEMMA3_4B))
    rm = resolve_config_file(tmp_path / "config.json")
    assert rm.arch.heads == 8 and rm.arch.vocab == 262208 and rm.arch.max_context == 131072
    assert any("vision" in n for n in rm.notes)


def test_hf_cache_resolves_offline_with_published_counts(hf_cache):
    for repo, cfg in (("Qwen/Qwen2.5-7B", configs.QWEN25_7B), ("meta-llama/Llama-3.1-8B", configs.LLAMA31_8B),
                      ("Qwen/Qwen3-30B-A3B", configs.QWEN3_30B_A3B)):
        add_to_hf_cache(hf_cache, repo, {"config.json": config_bytes(cfg)})
    cat = bundled_catalog()
    qwen = resolve_model("hf:Qwen/Qwen2.5-7B", cat)
    assert qwen.source == "hf-cache" and qwen.name == "Qwen/Qwen2.5-7B"
    assert qwen.params == pytest.approx(7_615_616_512, rel=0.01) and qwen.arch.bias == "qkv"
    llama = resolve_model("hf:meta-llama/Llama-3.1-8B", cat)
    assert llama.params == pytest.approx(8_030_261_248, rel=0.01) and llama.arch.max_context == 131072
    moe = resolve_model("hf:Qwen/Qwen3-30B-A3B", cat)
    assert moe.params == pytest.approx(30.5e9, rel=0.01) and moe.active_params == pytest.approx(3.3e9, rel=0.02)
    assert moe.quant == "bf16"


def _safetensors(tensors: dict[str, tuple[str, list[int]]]) -> bytes:
    """A real safetensors file: header length, JSON header, then zeroed tensor data."""
    sizes = {"BF16": 2, "F32": 4}
    header, offset = {}, 0
    for name, (dtype, shape) in tensors.items():
        n = sizes[dtype]
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + bytes(offset)


def test_model_folder_weights_from_safetensors_headers_and_index(tmp_path):
    cfg = dict(configs.LLAMA31_8B, num_hidden_layers=1, hidden_size=64, intermediate_size=128, vocab_size=100,
               num_attention_heads=4, num_key_value_heads=2)
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    (tmp_path / "model-00001-of-00002.safetensors").write_bytes(_safetensors({"a": ("BF16", [100, 64])}))
    (tmp_path / "model-00002-of-00002.safetensors").write_bytes(_safetensors({"b": ("BF16", [128, 64]), "n": ("F32", [64])}))
    index = {"metadata": {"total_size": 100 * 64 * 2 + 128 * 64 * 2 + 64 * 4},
             "weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors",
                            "n": "model-00002-of-00002.safetensors"}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    assert folder_weights(tmp_path) == (100 * 64 + 128 * 64 + 64, 29440)
    rm = resolve_model(str(tmp_path), bundled_catalog())
    assert rm.source == "hf-dir" and rm.params == 14656 and rm.weight_bytes == 29440
    (tmp_path / "model-00002-of-00002.safetensors").unlink()  # shards missing: the index's total still counts
    rm = resolve_model(str(tmp_path / "config.json"), bundled_catalog())
    assert rm.weight_bytes == 29440 and rm.params == param_count(rm.arch)


@pytest.mark.parametrize("cfg, message", [
    ({"model_type": "llama", "hidden_size": 64}, "has no 'num_attention_heads', which model_type 'llama' needs"),
    (dict(configs.QWEN25_7B, model_type="mamba"), "model_type 'mamba' is not supported"),
    ({"hidden_size": 64}, "has no 'model_type'"),
    (dict(configs.LLAMA31_8B, hidden_size="big"), "'hidden_size' must be a whole number between 1 and 1,000,000"),
    # the ranges of the flags (--layers 1 to 10,000, --hidden, --context), finite numbers only
    (dict(configs.LLAMA31_8B, num_hidden_layers=1e18), "'num_hidden_layers' must be a whole number between 1 and "
                                                       "10,000, got 1e+18"),
    (dict(configs.LLAMA31_8B, hidden_size=float("inf")), "'hidden_size' must be a whole number"),
    (dict(configs.LLAMA31_8B, hidden_size=float("nan")), "'hidden_size' must be a whole number"),
    (dict(configs.LLAMA31_8B, hidden_size=1e308), "'hidden_size' must be a whole number"),
    (dict(configs.LLAMA31_8B, max_position_embeddings=-5), "'max_position_embeddings' must be a whole number "
                                                           "between 0 and 16,777,216"),
    (dict(configs.LLAMA31_8B, num_key_value_heads=5), "must be a multiple of kv_heads"),
    ([1, 2], "expected a JSON object"),
])
def test_bad_configs_name_what_is_wrong(cfg, message):
    with pytest.raises(ModelSpecError, match=re.escape(message)):
        arch_from_config(cfg, "m", "m")


def test_bad_json_and_missing_files_are_one_line(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text('{"model_type": "llama",\n  "hidden_size": ')
    with pytest.raises(ModelSpecError, match="not valid JSON") as exc:
        resolve_model(str(bad), bundled_catalog())
    assert "\n" not in str(exc.value)
    with pytest.raises(ModelSpecError, match="no such file"):
        resolve_model(str(tmp_path / "nope" / "config.json"), bundled_catalog())
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ModelSpecError, match="no config.json"):
        resolve_model(str(empty), bundled_catalog())


def test_embedding_share_of_the_mapped_llama():
    arch = arch_from_config(configs.LLAMA31_8B, "m", "m")
    assert embedding_params(arch) == 2 * 128256 * 4096 + 4096  # untied input and output embeddings, final norm


def test_a_snapshot_folder_is_named_after_its_repository(tmp_path):
    snap = add_to_hf_cache(tmp_path / "hub", "meta-llama/Llama-3.1-8B", {"config.json": config_bytes(configs.LLAMA31_8B)},
                           revision="abc123" + "0" * 34)
    cat = bundled_catalog()
    assert resolve_model(str(snap), cat).name == "meta-llama/Llama-3.1-8B"
    assert resolve_model(str(snap / "config.json"), cat).name == "meta-llama/Llama-3.1-8B"
    plain = tmp_path / "my-model"
    plain.mkdir()
    (plain / "config.json").write_bytes(config_bytes(configs.LLAMA31_8B))
    assert resolve_model(str(plain), cat).name == "my-model"
