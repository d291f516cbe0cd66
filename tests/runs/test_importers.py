"""The importers on files the real tools wrote (fixtures/README.md says where each comes from), and on bad files."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from advisor.runs import ImportOptions, RunImportError, import_file
from advisor.store.runs import RunStore, runs_file, this_machine_id

FIX = Path(__file__).parent / "fixtures"
BENCH = FIX / "llama-bench"


def _opts(**kw) -> ImportOptions:
    return ImportOptions(this_machine_id=this_machine_id(), this_cpu="Some CPU", **kw)


@pytest.mark.parametrize("name", ["llama-bench-rtx4080.json", "llama-bench-rtx4080.jsonl", "llama-bench-rtx4080.csv"])
def test_llama_bench_json_jsonl_and_csv_read_the_same_run(name):
    pp, tg = import_file(BENCH / name, _opts())  # the prompt test and the generation test, each its own job
    for rec in (pp, tg):
        assert rec.kind == "llama-bench" and rec.workload == "inference" and rec.software == "llama.cpp"
        assert rec.params == 7615616512 and rec.weight_bytes == 4677120000 and rec.quant == "q4_k_m"
        assert rec.accelerator_id == "rtx-4080" and rec.devices == 1
        assert rec.accelerator_name == "NVIDIA GeForce RTX 4080" and rec.recorded_at.startswith("2025-04-24")
        # this machine has no RTX 4080: the record is marked as another machine's
        assert rec.machine_id is None and "another machine" in rec.machine_note
    # the published pp512 / tg128 figures of the README's three examples (7100.0 / 118.9, 7263.6 / 119.8, 7285.7 / 119.9)
    assert 7000 < pp.measured.prefill_tokens_per_s < 7300 and pp.measured.tokens_per_s is None
    assert 118 < tg.measured.decode_tokens_per_s < 120.5 and tg.measured.tokens_per_s == tg.measured.decode_tokens_per_s
    assert (pp.prompt_tokens, pp.output_tokens) == (512, None) and (tg.prompt_tokens, tg.output_tokens) == (None, 128)
    assert pp.content_sha256 != tg.content_sha256


def test_vllm_bench_result():
    (rec,) = import_file(FIX / "vllm-bench" / "vllm-inf-concurrency32.json", _opts(accelerator="h100-sxm",
                                                                                   model="llama-3.1-8b"))
    m = rec.measured
    assert rec.kind == "vllm-bench" and rec.software == "vllm" and rec.batch == 32
    assert m.tokens_per_s == 434.40 and m.requests_per_s == 0.21 and m.duration_s == 150.87
    assert m.ttft_p50_s == pytest.approx(7.09988) and m.ttft_p99_s == pytest.approx(10.99946)
    assert m.tpot_p50_s == pytest.approx(0.07023) and m.tpot_p99_s == pytest.approx(0.07263)
    assert rec.prompt_tokens == 2048 and rec.output_tokens == 2048 and rec.recorded_at == "2025-06-10T10:15:00+00:00"
    assert rec.params and rec.params > 7e9
    with pytest.raises(RunImportError, match="--accelerator"):
        import_file(FIX / "vllm-bench" / "vllm-inf-concurrency32.json", _opts())


def test_importing_the_same_file_twice_keeps_one_record():
    rec = import_file(BENCH / "llama-bench-rtx4080.json", _opts())[1]
    with RunStore() as store:
        first = store.add(rec)
        again = store.add(import_file(BENCH / "llama-bench-rtx4080.json", _opts())[1])
        assert first[1] and not again[1] and first[0] == again[0]
        assert len(store.list()) == 1
        assert store.forget(first[0]) and store.list() == []


def _bad(tmp_path, name: str, content: bytes | str) -> Path:
    p = tmp_path / name
    p.write_bytes(content if isinstance(content, bytes) else content.encode())
    return p


BAD = {
    "truncated.json": (BENCH / "llama-bench-rtx4080.json").read_text()[:700],
    "truncated.csv": (BENCH / "llama-bench-rtx4080.csv").read_text()[:600],
    "unrelated.json": json.dumps({"name": "my-package", "version": "1.0.0", "dependencies": {}}),
    "unrelated.csv": "city,population\nParis,2100000\n",
    "nan.json": '[{"model_type": "x", "model_size": 1, "model_n_params": 1, "n_prompt": 0, "n_gen": 128, "avg_ts": NaN}]',
    "negative.json": json.dumps([{"model_type": "x", "model_size": 1, "model_n_params": 1, "n_prompt": 0, "n_gen": 128,
                                  "avg_ts": -5}]),
    "deep.json": "[" * 100_000 + "]" * 100_000,
    "binary.json": b"\x89PNG\r\n\x1a\n\x00\x00",
    "empty.json": "",
    "state-unfinished.json": json.dumps({"global_step": 3, "log_history": [{"loss": 2.0, "step": 3}]}),
    "state-hostile.json": json.dumps({"global_step": 10**12, "log_history": [{"train_runtime": 1.0}]}),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_files_are_one_line_naming_the_file(tmp_path, name):
    path = _bad(tmp_path, name, BAD[name])
    with pytest.raises(RunImportError) as info:
        import_file(path, _opts(accelerator="cpu"))
    text = str(info.value)
    assert text.startswith(str(path)) and "\n" not in text and len(text) < 400


def test_cli_bad_input_exit_2_and_nothing_stored(tmp_path, capsys):
    from advisor.cli import main

    good = BENCH / "llama-bench-rtx4080.json"
    bad = _bad(tmp_path, "cut.json", BAD["truncated.json"])
    assert main(["runs", "import", str(good), str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and str(bad) in err and "not valid JSON" in err
    assert not runs_file().exists() or not RunStore().list()  # the good file before it was not stored either
    fifo = tmp_path / "fifo.json"
    if hasattr(os, "mkfifo"):
        os.mkfifo(fifo)
        assert main(["runs", "import", str(fifo)]) == 2
        assert "not a regular file" in capsys.readouterr().err


def test_cli_import_list_json_forget_reset(capsys):
    from advisor.cli import main

    assert main(["runs", "import", str(BENCH / "llama-bench-rtx4080.csv")]) == 0
    assert "another machine" in capsys.readouterr().out
    assert main(["runs", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "advisor.runs/1" and len(doc["runs"]) == 2  # the prompt test and the generation test
    pp, r = doc["runs"]
    # each is compared on the figure it measured: prompt tokens/s, generated tokens/s
    assert pp["compared"] == {"figure": "prefill_tokens_per_s", "label": "prompt",
                              "measured": pp["measured"]["prefill_tokens_per_s"], "unit": "tokens/s"}
    assert r["compared"]["label"] == "decode"
    assert pp["predicted_now"]["figure"] == "prefill_tokens_per_s"
    assert pp["error_factor"] == pytest.approx(pp["predicted_now"]["tokens_per_s"] / pp["compared"]["measured"])
    for key in ("id", "source_file", "machine", "accelerator", "software", "measured", "predicted_at_import",
                "predicted_now", "error_factor"):
        assert key in r
    assert r["machine"]["this_machine"] is False and r["accelerator"]["id"] == "rtx-4080"
    assert r["predicted_now"]["tokens_per_s"] > 0
    assert r["error_factor"] == pytest.approx(r["predicted_now"]["tokens_per_s"] / r["measured"]["tokens_per_s"])
    assert main(["runs", "--forget", "999"]) == 2
    assert main(["runs", "--forget", str(r["id"])]) == 0
    assert main(["runs", "import", str(BENCH / "llama-bench-rtx4080.csv")]) == 0
    assert main(["runs", "--reset"]) == 0
    assert "forgot 2 run" in capsys.readouterr().out


def test_a_damaged_store_is_kept_aside(capsys):
    path = runs_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"this is not sqlite" * 100)
    with RunStore() as store:
        assert store.list() == []
    assert "kept aside" in capsys.readouterr().err
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == 1


def test_trainer_files_beside_the_state(tmp_path):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(FIX / "hf-trainer" / "small-4x256", run)
    (run / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "r": 16}))
    (rec,) = import_file(run / "trainer_state.json", _opts())
    assert rec.workload == "lora"
    (run / "training_args.json").unlink()
    (run / "training_args.bin").write_bytes(b"\x80\x04not unpickled")
    with pytest.raises(RunImportError, match="--accelerator"):
        import_file(run / "trainer_state.json", _opts())
    (rec,) = import_file(run / "trainer_state.json", _opts(accelerator="cpu"))
    assert any("pickle" in n for n in rec.notes) and any("bf16 assumed" in n for n in rec.notes)
    (run / "config.json").write_text('{"hidden_size": ')
    with pytest.raises(RunImportError, match="config.json"):
        import_file(run / "trainer_state.json", _opts(accelerator="cpu"))


def test_cli_same_file_twice_in_one_import_and_again_keeps_one(capsys):
    from advisor.cli import main

    f = str(BENCH / "llama-bench-rtx4080.jsonl")
    assert main(["runs", "import", f, f]) == 0
    assert main(["runs", "import", f]) == 0
    assert "already imported" in capsys.readouterr().out
    with RunStore() as store:
        assert len(store.list()) == 2  # its prompt test and its generation test


def test_trainer_run_without_a_device_in_its_files_is_this_machines_gpu(tmp_path):
    import shutil

    run = tmp_path / "gpu-run"
    shutil.copytree(FIX / "hf-trainer" / "small-4x256", run)
    args = json.loads((run / "training_args.json").read_text())
    args["use_cpu"] = False
    (run / "training_args.json").write_text(json.dumps(args))
    (rec,) = import_file(run / "trainer_state.json", _opts(this_gpus=("NVIDIA GeForce RTX 4090",)))
    assert rec.accelerator_id == "rtx-4090" and any("assumed" in n for n in rec.notes)


def test_a_trainer_output_folder_reads_its_state_and_another_folder_is_refused(tmp_path):
    (rec,) = import_file(FIX / "hf-trainer" / "small-4x256", _opts())
    assert rec.kind == "hf-trainer" and rec.source_file.endswith("trainer_state.json")
    with pytest.raises(RunImportError, match="not a regular file"):
        import_file(tmp_path, _opts())


def test_sglang_bench_serving_lines_each_a_run():
    f = FIX / "sglang-bench" / "sglang-random-1024-512.jsonl"
    with pytest.raises(RunImportError, match="--model"):  # the lines name no model
        import_file(f, _opts(accelerator="h100-sxm"))
    one, sixteen = import_file(f, _opts(accelerator="h100-sxm", model="llama-3.1-8b"))
    for rec in (one, sixteen):
        assert rec.kind == "sglang-bench" and rec.software == "sglang" and rec.accelerator_id == "h100-sxm"
        assert rec.prompt_tokens == 1024 and rec.output_tokens == 512 and rec.params == 8030261248
    # the second line: 160 requests x 512 output tokens in 61.7 s, concurrency 16, median TTFT 88 ms, TPOT 11.6 ms
    assert sixteen.batch == 16 and sixteen.measured.tokens_per_s == pytest.approx(160 * 512 / 61.7, rel=1e-3)
    assert sixteen.measured.ttft_p50_s == pytest.approx(0.088) and sixteen.measured.tpot_p50_s == pytest.approx(0.0116)
    assert one.batch == 1 and one.content_sha256 != sixteen.content_sha256


def test_guidellm_report_a_run_per_benchmark():
    f = FIX / "guidellm" / "benchmarks.json"
    sync, conc = import_file(f, _opts(accelerator="l40s"))
    for rec in (sync, conc):
        # the model from the report's worker (meta-llama/Llama-3.1-8B-Instruct -> the llama-3.1-8b preset)
        assert rec.kind == "guidellm" and rec.params == 8030261248 and rec.accelerator_id == "l40s"
        assert rec.prompt_tokens == 512 and rec.output_tokens == 256
    # synchronous: one at a time, 30 x 256 tokens over 120 s; concurrent at 8 streams: 160 x 256 over 90 s
    assert sync.batch == 1 and sync.measured.tokens_per_s == pytest.approx(30 * 256 / 120.0)
    assert conc.batch == 8 and conc.measured.tokens_per_s == pytest.approx(160 * 256 / 90.0)
    assert conc.measured.ttft_p50_s == pytest.approx(0.038) and conc.measured.ttft_p99_s == pytest.approx(0.070)
    assert conc.measured.tpot_p50_s == pytest.approx(0.0088) and conc.recorded_at.startswith("2025-06-10")


def test_guidellm_later_schema_scheduler_strategy(tmp_path):
    doc = json.loads((FIX / "guidellm" / "benchmarks.json").read_text())
    for b in doc["benchmarks"]:  # the later report: scheduler.strategy, benchmarker.backend, no args or worker
        b["scheduler"] = {"strategy": b.pop("args")["strategy"]}
        b["benchmarker"] = {"backend": {"model": b.pop("worker")["backend_model"]}}
        del b["run_stats"]
    p = tmp_path / "later.json"
    p.write_text(json.dumps(doc))
    sync, conc = import_file(p, _opts(accelerator="l40s"))
    assert (sync.batch, conc.batch) == (1, 8) and conc.params == 8030261248


def test_vllm_bench_names_its_model_by_model_id():
    (rec,) = import_file(FIX / "vllm-bench" / "vllm-inf-concurrency32.json", _opts(accelerator="h100-sxm"))
    assert rec.params == 8030261248 and rec.layers == 32 and not rec.notes  # the llama-3.1-8b preset, no --model


def test_the_empty_list_names_every_kind_of_file_the_importers_read(capsys, tmp_path, monkeypatch):
    from advisor.cli import main
    from advisor.runs import READS

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))  # an empty run store
    assert main(["runs"]) == 0
    assert READS in capsys.readouterr().out
    # one name for each importer (advisor.runs: trainer, llama_bench, vllm_bench, sglang_bench, guidellm, vllm_startup,
    # monitor_job), so a file the importers read is never missing from what the hint asks for
    for name in ("trainer_state.json", "llama-bench", "vllm bench serve", "bench_serving", "GuideLLM", "start-up log",
                 "monitor job"):
        assert name in READS


@pytest.mark.parametrize("change, says", [
    ({"output_throughput": 500.0}, "not total_output_tokens over duration"),  # 20,480 tokens in 167.35 s: 122.4/s
    ({"mean_e2e_latency_ms": 20000.0, "concurrency": None}, "need more than 1 at a time"),  # 40 x 20 s > 167 s
    ({"concurrency": 0.3}, "is not the requests' latencies over the duration"),  # 40 x 4.1 s / 167.35 s = 0.98
])
def test_a_bench_serving_line_whose_figures_disagree_is_refused(tmp_path, change, says):
    first = json.loads((FIX / "sglang-bench" / "sglang-random-1024-512.jsonl").read_text().splitlines()[0])
    bad = tmp_path / "bench.jsonl"
    bad.write_text(json.dumps({**first, **change}) + "\n")
    with pytest.raises(RunImportError, match=says):
        import_file(bad, _opts(accelerator="h100-sxm", model="llama-3.1-8b"))
