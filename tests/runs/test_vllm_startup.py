"""vLLM start-up logs (issue 36, item 5): the engine's reading of its KV cache imported as a run, listed by
``advisor runs`` beside the advisor's tokens and concurrency for the same cache memory and ``max_model_len``.

The logs under fixtures/vllm-startup are excerpts users pasted (fixtures/README.md names each source). Figures
worked by hand: Llama 3.1 8B caches 2 (K, V) x 32 layers x 8 KV heads x 128 x 2 bytes = 128 KiB a token; vLLM
holds whole blocks of 16 tokens, so a request of 20,000 tokens reserves 1,250 blocks (20,000 tokens) and one of
29,000 reserves 1,813 blocks (29,008 tokens).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.cli import main
from advisor.models.engines import parse_vllm_startup
from advisor.runs import ImportOptions, RunImportError, import_file
from advisor.store.runs import this_machine_id

FIX = Path(__file__).parent / "fixtures" / "vllm-startup"
GIB, KIB = 2**30, 1024


def _opts(**kw) -> ImportOptions:
    return ImportOptions(this_machine_id=this_machine_id(), this_cpu="Some CPU", **kw)


def test_logs_of_several_versions_parse():
    v0 = parse_vllm_startup((FIX / "v0-llama31-8b-rtx3090-29k.log").read_text())
    assert (v0.kv_tokens, v0.max_model_len, v0.max_concurrency) == (1478 * 16, 29000, 0.82)
    assert v0.kv_cache_bytes == pytest.approx(2.89 * GIB) and v0.model is None
    early_v1 = parse_vllm_startup((FIX / "v1-2025-01-llama31-70b-w8a8.log").read_text())
    assert (early_v1.kv_tokens, early_v1.max_model_len, early_v1.max_concurrency) == (1381 * 16, 2048, 10.79)
    v1 = parse_vllm_startup((FIX / "v1-2025-02-kv-tokens.log").read_text())
    assert (v1.kv_tokens, v1.max_model_len, v1.max_concurrency) == (2042016, 2048, 997.08)
    hybrid = parse_vllm_startup((FIX / "v1-2026-06-qwen36-27b-tp2-fp8kv.log").read_text())
    assert (hybrid.model, hybrid.tensor_parallel, hybrid.kv_cache_dtype, hybrid.kv_value_bytes) == (
        "~/.cache/huggingface/qwen3.6-27b-autoround-int4", 2, "fp8_e5m2", 1.0)
    v024 = parse_vllm_startup((FIX / "v0.24-2026-07-qwen36-35b-a3b-rtx5090-fp8kv.log").read_text())
    assert (v024.kv_cache_bytes, v024.kv_tokens, v024.max_model_len, v024.max_concurrency) == (
        pytest.approx(5.98 * GIB), 567978, 131072, 4.33)
    line = ("INFO 09-03 16:28:23 [core.py:75] Initializing a V1 LLM engine (v0.10.2.dev378+g4d7fe40fc.d20250829) with "
            "config: model='/data/models/Qwen2.5-0.5B/', speculative_config=None, tensor_parallel_size=2, "
            "kv_cache_dtype=auto, ")
    cfg = parse_vllm_startup(line)  # the config line of vllm-project/vllm PR 24162 (2025-09-03), path shortened
    assert (cfg.model, cfg.tensor_parallel, cfg.kv_cache_dtype, cfg.version) == (
        "/data/models/Qwen2.5-0.5B/", 2, "auto", "0.10.2.dev378+g4d7fe40fc.d20250829")


@pytest.mark.parametrize("name, tokens, concurrency", [
    # 3.81 GiB / 128 KiB = 31,211.5 tokens (vLLM 1,952 blocks = 31,232); / 20,000 tokens = 1.5606 (vLLM 1.56x)
    ("v0-llama31-8b-rtx3090-20k.log", 3.81 * GIB / (128 * KIB), 3.81 * GIB / (128 * KIB * 20000)),
    # 2.89 GiB in blocks of 16: 23,668.4 tokens (vLLM 1,478 blocks = 23,648); / 29,008 = 0.8160 (vLLM 0.82x)
    ("v0-llama31-8b-rtx3090-29k.log", 2.89 * GIB / (128 * KIB) * 29000 / 29008, 2.89 * GIB / (128 * KIB * 29008)),
])
def test_an_imported_log_is_an_engine_reading_the_plan_meets(name, tokens, concurrency, capsys):
    (rec,) = import_file(FIX / name, _opts(accelerator="rtx-3090", model="llama-3.1-8b"))
    assert (rec.kind, rec.software, rec.workload, rec.model, rec.devices) == (
        "vllm-startup", "vllm", "inference", "llama-3.1-8b", 1)
    assert main(["runs", "import", str(FIX / name), "--accelerator", "rtx-3090", "--model", "llama-3.1-8b"]) == 0
    capsys.readouterr()
    assert main(["runs", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["runs"]
    reading = row["engine_reading"]
    assert reading["kv_cache_tokens"]["advisor"] == pytest.approx(tokens, rel=1e-9)
    assert reading["max_concurrency"]["advisor"] == pytest.approx(concurrency, rel=1e-9)
    # within 1 % of what vLLM logged (the bar is 10 %)
    assert reading["kv_cache_tokens"]["advisor"] == pytest.approx(reading["kv_cache_tokens"]["engine"], rel=0.01)
    assert reading["max_concurrency"]["advisor"] == pytest.approx(reading["max_concurrency"]["engine"], rel=0.01)
    assert row["compared"]["figure"] == "max_concurrency" and row["predicted_now"]["tokens_per_s"] == pytest.approx(
        concurrency)
    assert row["range_held"] is None and row["teaches"] is None  # a reading: no range, no speed to learn
    assert main(["runs"]) == 0
    out = capsys.readouterr().out
    assert "vllm-startup  concurrency" in out and "(vLLM start-up log): KV cache" in out


def test_a_log_naming_a_local_folder_and_tensor_parallelism():
    (rec,) = import_file(FIX / "v1-2026-06-qwen36-27b-tp2-fp8kv.log", _opts(accelerator="rtx-3090"))
    assert rec.devices == 2 and rec.model == "~/.cache/huggingface/qwen3.6-27b-autoround-int4"
    assert rec.measured.kv_cache_tokens == 620944 and rec.measured.kv_value_bytes == 1.0
    assert any("--model gives it" in n for n in rec.notes)  # a folder on the serving machine: not resolved here


def test_the_gpu_comes_from_the_command_line():
    with pytest.raises(RunImportError, match="give --accelerator ID"):
        import_file(FIX / "v1-2025-02-kv-tokens.log", _opts())
    (rec,) = import_file(FIX / "v1-2025-02-kv-tokens.log", _opts(this_gpus=("NVIDIA GeForce RTX 4090",)))
    assert rec.accelerator_id == "rtx-4090"  # this machine's first GPU


@pytest.mark.parametrize("text, reason", [
    ("INFO GPU KV cache size: 0 tokens\n", "without its KV cache size"),
    ("GPU KV cache size: 99999999999999999999999 tokens\n", "without its KV cache size"),
    ("GPU KV cache size: 1,000 tokens\nMaximum concurrency for 2048 tokens per request: 99999999999.00x\n",
     "max_concurrency"),
    ("Available KV cache memory: 500.0 GiB\nGPU KV cache size: 1,000 tokens\n", "KV cache memory: 500 GiB"),
])
def test_hostile_logs_are_one_line_and_exit_2(tmp_path, capsys, text, reason):
    f = tmp_path / "vllm.log"
    f.write_text(text)
    assert main(["runs", "import", str(f), "--accelerator", "rtx-3090"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and reason in err
    assert main(["runs", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["runs"] == []  # nothing stored


def test_a_log_with_escapes_in_its_model_name_stores_none_of_them(tmp_path):
    f = tmp_path / "vllm.log"
    f.write_text("non-default args: {'model': 'org/na\x1b[2Jme'}\nGPU KV cache size: 1,000 tokens\n")
    (rec,) = import_file(f, _opts(accelerator="rtx-3090"))
    assert rec.model is None or "\x1b" not in rec.model


def test_a_reading_is_listed_in_its_own_unit_and_kept_off_the_speed_chart(capsys):
    """The Runs page charts measured against predicted tokens/s: a reading of the cache is not a speed."""
    from advisor.gui.pages.runs import chart_points

    assert main(["runs", "import", str(FIX / "v0-llama31-8b-rtx3090-20k.log"), "--accelerator", "rtx-3090",
                 "--model", "llama-3.1-8b"]) == 0
    capsys.readouterr()
    assert main(["runs", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["runs"]
    assert rows[0]["compared"]["unit"] == "requests at once"
    assert chart_points(rows) == ([], [])
    speed = dict(rows[0], compared={**rows[0]["compared"], "unit": "tokens/s"})
    assert chart_points([speed])[0] == [(1.56, pytest.approx(1.560576))]
