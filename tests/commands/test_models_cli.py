"""``advisor models``: the models on this machine with their fit, one model by spec, bad files exit 2 with one line."""

from __future__ import annotations

import json

import pytest

from advisor.cli import main
from tests.models import configs
from tests.models.conftest import add_to_hf_cache, config_bytes, write_gguf

GIB = 2**30


@pytest.fixture(autouse=True)
def _stores(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path / "ollama"))
    monkeypatch.setenv("ADVISOR_LMSTUDIO_MODELS", str(tmp_path / "lms"))
    (tmp_path / "hub").mkdir()


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_lists_hf_cache_and_lmstudio_with_fits_on_two_4090s(capsys, tmp_path):
    add_to_hf_cache(tmp_path / "hub", "Qwen/Qwen2.5-7B", {"config.json": config_bytes(configs.QWEN25_7B)})
    folder = tmp_path / "lms" / "bartowski" / "Tiny-GGUF"
    folder.mkdir(parents=True)
    tiny = write_gguf(folder / "Tiny-Q8_0.gguf")
    code, out, err = run(capsys, "models", "--json", "--fake-gpu", "2x4090")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["schema"] == "advisor.models/1" and doc["machine"]["simulated"] is True
    assert len(doc["machine"]["gpus"]) == 2
    qwen, small = doc["models"]
    assert qwen["spec"] == "hf:Qwen/Qwen2.5-7B" and small["store"] == "lmstudio"
    # The plan on this machine (advisor plan's own answer): Qwen2.5-7B under llama.cpp in its usual Q4_K_M file
    # (4.8944 bits a weight) on one 4090: weights, the KV cache of 4096 tokens (2 x 28 layers x 4 heads x 128 x
    # 2 B) and the 1 GiB llama.cpp keeps for its compute buffers (serve_spec.reserve_bytes).
    inf = qwen["fits"]["inference"]
    # the weights priced tensor by tensor as llama-quantize types them (memory.format_weight_bytes), near the
    # README's 4.8944 bits a weight
    from advisor.estimate.memory import format_weight_bytes
    from advisor.models.hf import arch_from_config

    weights = format_weight_bytes(arch_from_config(configs.QWEN25_7B, "q", "q"), 7_615_616_512, "q4_k_m")
    assert weights == pytest.approx(7_615_616_512 * 4.8944 / 8, rel=0.1)
    expected = int(weights) + 2 * 28 * 4 * 128 * 2 * 4096 + GIB
    assert inf["per_device_bytes"] == pytest.approx(expected, rel=1e-6)
    assert inf["weight_format"] == "q4_k_m" and inf["devices"] == 1 and inf["tokens_per_s"] > 50
    assert qwen["fits"]["inference"]["fits"] is True and qwen["fits"]["qlora"]["fits"] is True
    assert small["model"]["weight_bytes"] == tiny["bytes"] and small["model"]["params"] == tiny["params"]


def test_one_model_by_spec_and_what_does_not_fit(capsys):
    code, out, _ = run(capsys, "models", "llama-3.1-70b", "--json", "--fake-gpu", "2x4090")
    assert code == 0
    fits = json.loads(out)["models"][0]["fits"]
    # its usual Q4_K_M file (43 GB) split over both 24 GiB cards, as llama.cpp and Ollama run it
    assert fits["inference"]["fits"] is True and fits["inference"]["devices"] == 2
    assert 20e9 < fits["inference"]["per_device_bytes"] < 24 * GIB
    assert fits["lora"]["fits"] is False  # 141 GB of bf16 base weights
    code, out, _ = run(capsys, "models", "llama-3.1-8b", "--fake-gpu", "2x4090")
    assert code == 0 and "SIMULATED" in out
    # the name printed is one --model takes back
    printed = out.splitlines()[3].split()[0]
    assert printed == "llama-3.1-8b"
    assert run(capsys, "plan", "--model", printed, "--workload", "inference", "--fake-gpu", "2x4090")[0] == 0


def test_no_gpu_means_no_verdict(capsys):
    code, out, _ = run(capsys, "models", "smollm2-135m", "--json", "--fake-gpu", "no-driver")
    assert code == 0
    assert json.loads(out)["models"][0]["fits"]["inference"]["fits"] is None


def test_empty_machine_says_how_to_get_a_model(capsys):
    code, out, _ = run(capsys, "models", "--fake-gpu", "2x4090")
    assert code == 0 and "No models found" in out and "hf download" in out


@pytest.mark.parametrize("kind, message", [
    ("missing-key", "has no 'num_attention_heads'"),
    ("unknown-arch", "model_type 'rwkv' is not supported"),
    ("bad-json", "not valid JSON"),
    ("truncated-gguf", "truncated"),
    ("not-cached", "not in the Hugging Face cache"),
    ("unknown-name", "unknown model 'no-such-model'"),
])
def test_bad_models_exit_2_with_one_line(capsys, tmp_path, kind, message):
    if kind == "missing-key":
        spec = tmp_path / "config.json"
        spec.write_text(json.dumps({k: v for k, v in configs.LLAMA31_8B.items() if k != "num_attention_heads"}))
    elif kind == "unknown-arch":
        spec = tmp_path / "config.json"
        spec.write_text(json.dumps({"model_type": "rwkv", "hidden_size": 2048}))
    elif kind == "bad-json":
        spec = tmp_path / "config.json"
        spec.write_text("{not json")
    elif kind == "truncated-gguf":
        good = tmp_path / "g.gguf"
        write_gguf(good)
        spec = tmp_path / "t.gguf"
        spec.write_bytes(good.read_bytes()[:-500])
    elif kind == "not-cached":
        spec = "hf:Qwen/Qwen2.5-7B"
    else:
        spec = "no-such-model"
    code, out, err = run(capsys, "models", str(spec))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: ") and message in err
