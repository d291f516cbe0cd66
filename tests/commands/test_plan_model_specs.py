"""``advisor plan --model SPEC``: Hugging Face configs from the cache, GGUF files with their exact weight bytes,
and bad files as one line with exit 2 (offline: nothing here may open a connection)."""

from __future__ import annotations

import json

import pytest

from advisor.cli import main
from tests.models import configs
from tests.models.conftest import add_to_hf_cache, config_bytes, write_gguf


@pytest.fixture
def hub(tmp_path, monkeypatch):
    cache = tmp_path / "hub"
    cache.mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # a connection attempt would fail the test, not pass it
    return cache


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(("repo", "config", "published"), [
    ("Qwen/Qwen2.5-7B", configs.QWEN25_7B, 7_615_616_512),  # model card: 7.61B; safetensors total 7,615,616,512
    ("meta-llama/Llama-3.1-8B", configs.LLAMA31_8B, 8_030_261_248),  # safetensors total of the repository
    ("Qwen/Qwen3-30B-A3B", configs.QWEN3_30B_A3B, 30.5e9),  # model card: 30.5B total, 3.3B activated
])
def test_hf_cache_models_plan_offline_within_one_percent(capsys, hub, repo, config, published):
    add_to_hf_cache(hub, repo, {"config.json": config_bytes(config)})
    code, out, err = run(capsys, "plan", "--model", f"hf:{repo}", "--workload", "inference", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["model"]["params"] == pytest.approx(published, rel=0.01)
    assert doc["model"]["name"] == repo
    assert doc["options"] and doc["inputs"]["model"]["value"] == f"hf:{repo}"
    if "A3B" in repo:  # model card: 3.3B activated
        assert doc["model"]["active_params"] == pytest.approx(3.3e9, rel=0.03)


def test_hf_model_missing_from_the_cache_says_how_to_get_it(capsys, hub):
    code, out, err = run(capsys, "plan", "--model", "hf:Qwen/Qwen2.5-7B", "--workload", "inference")
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "--download" in err and "Traceback" not in err


def test_gguf_file_plans_with_its_exact_weight_bytes(capsys, tmp_path):
    path = tmp_path / "tiny-Q8_0.gguf"
    expected = write_gguf(path)
    code, out, err = run(capsys, "plan", "--model", str(path), "--workload", "inference", "--gpus", "1", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["model"]["params"] == expected["params"]
    assert doc["memory"]["per_device_bytes"]["weights"] == expected["bytes"]  # the tensors' bytes, not params x 2
    # A quantisation asked for overrides the file's format: params x 8.5 bits (q8_0) / 8, priced tensor by tensor
    # (memory.format_weight_bytes: the tensors llama-quantize keeps at other types), within 1 %
    code, out, err = run(capsys, "plan", "--model", str(path), "--workload", "inference", "--gpus", "1",
                         "--quant", "q8_0", "--json")
    assert code == 0, err
    weights = json.loads(out)["memory"]["per_device_bytes"]["weights"]
    assert weights == pytest.approx(expected["params"] * 8.5 / 8, rel=0.01) and weights != expected["bytes"]


def test_gguf_decode_reads_the_exact_bytes(capsys, tmp_path):
    """Decode reads the weights: the same file planned as bf16 (params x 2 bytes) spends longer reading by about
    the ratio of the bytes read per token (the KV cache at a short context is a small share here); the runtime's
    per-step launch overhead, the same for both, is most of a step of so tiny a model and is taken out."""
    path = tmp_path / "tiny.gguf"
    expected = write_gguf(path, layers=4, hidden=512, ffn=1024)
    common = ("plan", "--model", str(path), "--workload", "inference", "--gpus", "1", "--accelerator", "rtx-4090",
              "--context", "16", "--output-tokens", "1", "--json")
    exact = json.loads(run(capsys, *common)[1])["options"][0]
    bf16 = json.loads(run(capsys, *common, "--precision", "bf16")[1])["options"][0]
    assert exact["decode_overhead_s"] == bf16["decode_overhead_s"] > 0

    def read_s(o):
        return 1 / o["tokens_per_s"] - o["decode_overhead_s"]

    assert read_s(bf16) / read_s(exact) == pytest.approx(expected["params"] * 2 / expected["bytes"], rel=0.1)


@pytest.mark.parametrize("kind", ["truncated-gguf", "config-missing-key", "unknown-architecture", "not-a-model"])
def test_bad_model_files_exit_2_with_one_line(capsys, tmp_path, kind):
    if kind == "truncated-gguf":
        good = tmp_path / "good.gguf"
        write_gguf(good)
        path = tmp_path / "cut.gguf"
        path.write_bytes(good.read_bytes()[:200])
    elif kind == "config-missing-key":
        cfg = dict(configs.QWEN25_7B)
        del cfg["num_hidden_layers"]
        path = tmp_path / "config.json"
        path.write_bytes(config_bytes(cfg))
    elif kind == "unknown-architecture":
        path = tmp_path / "config.json"
        path.write_bytes(config_bytes({**configs.QWEN25_7B, "model_type": "no-such-arch", "architectures": ["X"]}))
    else:
        path = tmp_path / "weights.bin"
        path.write_bytes(b"\x00" * 64)
    code, out, err = run(capsys, "plan", "--model", str(path), "--workload", "inference")
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: plan: model:") and "Traceback" not in err


def test_download_is_a_default_off_flag_and_a_scenario_key(capsys):
    from advisor.job import JOB_FIELDS

    meta = JOB_FIELDS["download"]
    assert meta.flag == "--download" and meta.default is False and meta.kind == "bool"
    code, out, err = run(capsys, "plan", "--model", "llama-3.1-8b", "--workload", "inference", "--download", "--json")
    assert code == 0, err
    assert json.loads(out)["inputs"]["download"]["value"] is True
