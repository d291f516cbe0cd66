"""Hostile run files and a damaged run store (issue 38, items 1-3 and 5): figures the hardware cannot reach,
overflowing figures, deep nesting, damaged rows, a store two processes find damaged at once, a 23-digit id,
escape sequences in names, and the cost of importing and listing many records.

Figures: an RTX 4090 reads 1,008 GB/s (NVIDIA Ada AD102 whitepaper, 2022; the catalog's figure), so a 4.0 GB
model decodes at most 1008e9 / 4e9 = 252 tokens/s at batch 1 (the roofline of docs/method.md, "Inference
speed"); 50,000 tokens/s is 198 times that, 0.01 tokens/s 4e-5 of it.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import os
from pathlib import Path

import pytest

from advisor.cli import main
from advisor.runs import ImportOptions, RunImportError, import_file
from advisor.store.runs import RunStore, runs_file

FIX = Path(__file__).parent / "fixtures"
STATE_DIR = FIX / "hf-trainer" / "small-4x256"
ESC = "\x1b]0;owned\x07\x1b[2J"


def _bench_row(avg_ts: float, *, n_gen: int = 128, n_prompt: int = 0, model_type: str = "llama 7B Q4_K - Medium",
               gpu: str = "NVIDIA GeForce RTX 4090", test_time: str = "2026-01-01T00:00:00Z", i: int = 0) -> dict:
    return {"build_commit": "abc", "build_number": 1, "cpu_info": "x", "gpu_info": gpu, "backends": "CUDA",
            "model_filename": f"m{i}.gguf", "model_type": model_type, "model_size": 4_000_000_000,
            "model_n_params": 7_000_000_000, "n_gpu_layers": 99, "n_prompt": n_prompt, "n_gen": n_gen, "n_depth": 0,
            "test_time": test_time, "avg_ts": avg_ts}


def _write(tmp_path: Path, name: str, doc) -> Path:
    p = tmp_path / name
    p.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return p


def _plan_ok(capsys, accelerator: str = "rtx-4090", workload: str = "inference") -> dict:
    args = ["plan", "--params", "7e9", "--workload", workload, "--accelerator", accelerator, "--json"]
    if workload != "inference":
        args += ["--tokens", "1e9"]
    assert main(args) == 0, capsys.readouterr().err
    doc = json.loads(capsys.readouterr().out)
    for o in doc["options"]:
        for key in ("hours", "tokens_per_s"):
            v = o.get(key)
            assert v is None or (isinstance(v, (int, float)) and math.isfinite(v))
    return doc


def test_a_tiny_llama_bench_speed_is_refused_and_plans_keep_working(tmp_path, capsys):
    f = _write(tmp_path, "lb.json", [_bench_row(1e-300)])
    assert main(["runs", "import", str(f), "--accelerator", "rtx-4090"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "tokens_per_s" in err
    _plan_ok(capsys)


def test_a_decode_far_above_the_roofline_is_refused(tmp_path, capsys):
    f = _write(tmp_path, "lb.json", [_bench_row(50_000.0)])
    assert main(["runs", "import", str(f), "--accelerator", "rtx-4090"]) == 2
    assert "198 times" in capsys.readouterr().err  # 50,000 / (1008e9 / 4e9)


def test_a_decode_far_below_the_roofline_is_kept_but_not_learned(tmp_path, capsys):
    before = _plan_ok(capsys)
    f = _write(tmp_path, "lb.json", [_bench_row(0.01)])
    assert main(["runs", "import", str(f), "--accelerator", "rtx-4090"]) == 0
    assert "not learned from" in capsys.readouterr().out
    after = _plan_ok(capsys)
    assert [o["tokens_per_s"] for o in after["options"]] == [o["tokens_per_s"] for o in before["options"]]
    assert main(["runs"]) == 0
    out = capsys.readouterr().out
    assert max(len(ln) for ln in out.splitlines()[:2]) < 160  # no 300-digit error factor


def test_a_stored_record_below_the_floor_cannot_break_a_plan(capsys):
    """A row put in the store by hand (no import check): the learned bound keeps every plan finite."""
    from advisor.estimate.run_record import Measured, RunRecord

    rec = RunRecord(kind="llama-bench", source_file="/x/lb.json", content_sha256="a" * 64,
                    recorded_at="2026-01-01T00:00:00Z", workload="inference",
                    measured=Measured(tokens_per_s=1e-300, decode_tokens_per_s=1e-300), params=7_000_000_000,
                    weight_bytes=4_000_000_000, quant="q4_k_m", software="llama.cpp", accelerator_id="rtx-4090",
                    batch=1, output_tokens=128)
    with RunStore() as store:
        store.add(rec)
    _plan_ok(capsys)


@pytest.mark.parametrize("log, state_extra, why", [
    ({"train_runtime": 1e-300}, {}, "out of range"),
    ({"train_runtime": 1e-9, "total_flos": 1e30}, {}, "out of range"),
])
def test_trainer_figures_that_overflow_are_one_line(tmp_path, capsys, log, state_extra, why):
    run = tmp_path / "run"
    run.mkdir()
    for name in ("config.json", "training_args.json"):
        (run / name).write_text((STATE_DIR / name).read_text())
    state = json.loads((STATE_DIR / "trainer_state.json").read_text())
    state["log_history"][-1].update(log)
    state.update(state_extra)
    (run / "trainer_state.json").write_text(json.dumps(state))
    assert main(["runs", "import", str(run), "--accelerator", "rtx-4090"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and why in err and "internal error" not in err


def test_tokens_from_flags_that_overflow_are_one_line(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text((STATE_DIR / "config.json").read_text())
    (run / "training_args.json").write_text(json.dumps({"per_device_train_batch_size": 10**7,
                                                        "gradient_accumulation_steps": 10**7}))
    state = json.loads((STATE_DIR / "trainer_state.json").read_text())
    state.pop("num_input_tokens_seen", None)
    for e in state["log_history"]:
        e.pop("num_input_tokens_seen", None)
    state["global_step"] = 10**9
    (run / "trainer_state.json").write_text(json.dumps(state))
    assert main(["runs", "import", str(run), "--accelerator", "rtx-4090", "--seq-len", "10000000",
                 "--devices", "1000"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error" not in err


def _job(**kw) -> dict:
    doc = {"schema": "advisor.job/1", "pid": 5, "name": "train.py", "started_at": "2026-01-01T00:00:00+00:00",
           "duration_s": 100.0, "gpus": [{"index": 0, "name": "NVIDIA GeForce RTX 4090", "catalog_id": "rtx-4090"}],
           "machine_id": "0123456789abcdef", "gpu_hours": 0.03, "energy_j": 30000.0, "tokens": 1e6}
    doc.update(kw)
    return doc


@pytest.mark.parametrize("change, why", [
    ({"duration_s": 1e-300}, "duration_s"),
    ({"gpus": [{"index": 0, "name": "x", "catalog_id": "rtx-4090\nfake  row"}]}, "not a valid id"),
    ({"machine_id": "abc\x1b[2J"}, "not a valid id"),
    ({"started_at": 17}, "started_at"),
    # 1e14 J over 0.03 GPU-hours is 926 MW: the $871 million bill NVML's "no value" made (4090 board power 450 W)
    ({"energy_j": 1e14}, "energy"),
])
def test_job_recordings_check_figures_and_ids(tmp_path, capsys, change, why):
    f = _write(tmp_path, "job.json", _job(**change))
    assert main(["runs", "import", str(f)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and why in err and "\x1b" not in err


def test_jsonl_nested_100000_deep_is_one_line(tmp_path, capsys):
    deep = '{"a": ' * 100_000 + "1" + "}" * 100_000
    f = _write(tmp_path, "deep.jsonl", json.dumps(_bench_row(100.0)) + "\n" + deep + "\n")
    assert main(["runs", "import", str(f), "--accelerator", "rtx-4090"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nested too deeply" in err


def _damage_row(sql: str, args=()) -> None:
    import sqlite3

    db = sqlite3.connect(runs_file())
    with db:
        db.execute(sql, args)
    db.close()


@pytest.mark.parametrize("field, value", [("recorded_at", 20260101), ("software", ["llama.cpp"]),
                                          ("accelerator_id", "rtx-4090\n  99  forged row"),
                                          ("simulated", "yes"), ("devices", 1.5)])
def test_a_damaged_row_is_skipped_with_one_warning(tmp_path, capsys, field, value):
    good = _write(tmp_path, "a.json", [_bench_row(120.0, i=1)])
    bad = _write(tmp_path, "b.json", [_bench_row(121.0, i=2)])
    assert main(["runs", "import", str(good), str(bad), "--accelerator", "rtx-4090"]) == 0
    capsys.readouterr()
    with RunStore() as store:
        rid = store.list()[-1].id
        row = json.loads(store._db.execute("SELECT record FROM runs WHERE id = ?", (rid,)).fetchone()[0])
    row[field] = value
    _damage_row("UPDATE runs SET record = ? WHERE id = ?", (json.dumps(row), rid))
    assert main(["runs"]) == 0
    out, err = capsys.readouterr()
    assert f"run {rid} " in err and err.count("warning") == 1 and "forged" not in out
    assert len([ln for ln in out.splitlines() if "llama-bench" in ln]) == 1
    _plan_ok(capsys)


def _add_one(args) -> str:
    home, n = args
    os.environ["ADVISOR_HOME"] = home
    from advisor.estimate.run_record import Measured, RunRecord
    from advisor.store.runs import RunStore, RunStoreError

    rec = RunRecord(kind="llama-bench", source_file=f"/x/{n}.json", content_sha256=f"{n:064x}",
                    recorded_at="2026-01-01T00:00:00Z", workload="inference", measured=Measured(tokens_per_s=100.0))
    try:
        with RunStore() as store:
            store.add(rec)
        return "ok"
    except RunStoreError as exc:
        return f"store error: {exc}"
    except Exception as exc:  # what the race gave: FileNotFoundError, the record lost
        return f"{type(exc).__name__}: {exc}"


def test_a_damaged_store_is_moved_aside_once_under_concurrent_imports():
    home = os.environ["ADVISOR_HOME"]
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(4) as pool:
        for round_ in range(3):
            path = runs_file()
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"this is not an SQLite database, it is damage " * 100)
            results = pool.map(_add_one, [(home, round_ * 10 + k) for k in range(4)])
            assert results == ["ok"] * 4, results
            with RunStore() as store:
                assert len(store.list()) == 4  # no record lost
            asides = list(path.parent.glob(f"{path.name}.broken-*"))
            assert len(asides) == round_ + 1  # moved aside once each time
            runs_file().unlink()


def test_forget_with_a_23_digit_id_is_one_line(capsys):
    assert main(["runs", "--forget", "12345678901234567890123"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a run id" in err
    assert main(["runs", "--forget", "9223372036854775807"]) == 2  # the largest id SQLite has: no such run
    assert "no run with id" in capsys.readouterr().err


def test_names_from_run_files_reach_the_terminal_inert(tmp_path, capsys):
    f = _write(tmp_path, "lb.json", [_bench_row(120.0, model_type=f"llama {ESC} 7B Q4_0", gpu=f"RTX{ESC}",
                                                test_time=f"2026{ESC}")])
    assert main(["runs", "import", str(f), "--accelerator", "rtx-4090"]) == 0
    assert main(["runs"]) == 0
    out, err = capsys.readouterr()
    for raw in ("\x1b", "\x07"):
        assert raw not in out and raw not in err
    assert "\\x1b" in out


def test_import_and_listing_scale_with_the_records(tmp_path, capsys):
    """300 models took 42 s to import before (each plan compared every pair of matching records): a plan now
    weighs n matching records in O(n). 200 models import and list here in a few seconds on a shared machine."""
    import time

    rows = []
    for i in range(200):
        rows += [_bench_row(100.0 + i % 50, i=i), _bench_row(3000.0, n_gen=0, n_prompt=512, i=i)]
    f = _write(tmp_path, "many.json", rows)
    t0 = time.process_time()
    assert main(["runs", "import", str(f), "--accelerator", "rtx-4090"]) == 0
    capsys.readouterr()
    assert main(["runs", "--json"]) == 0
    took = time.process_time() - t0
    # each model's prompt and generation tests are a record each (they teach prefill and decode apart)
    assert len(json.loads(capsys.readouterr().out)["runs"]) == 400
    assert took < 20.0, took


def test_import_file_never_raises_anything_but_one_line(tmp_path):
    f = _write(tmp_path, "x.json", [_bench_row(float("1e308"))])
    with pytest.raises(RunImportError) as exc:
        import_file(f, ImportOptions(accelerator="rtx-4090"))
    assert "\n" not in str(exc.value)


def test_a_serving_rate_above_the_compute_ceiling_is_refused(tmp_path, capsys):
    """A generated token costs 2P FLOPs at any batch: 8B parameters on one H100 SXM (989 dense bf16 TFLOPS,
    1,979 fp8; NVIDIA H100 datasheet) generate at most 1979e12 / 1.6e10 = 124,000 tokens/s; 1e7 is 80 times that."""
    doc = json.loads((FIX / "vllm-bench" / "vllm-inf-concurrency32.json").read_text())
    published = dict(doc)
    # 1e7 tokens/s and the figures it implies, so that the file agrees with itself (check_consistent)
    doc["output_throughput"] = 1e7
    doc["duration"] = doc["total_output_tokens"] / 1e7
    doc["mean_e2e_latency_ms"] = 1000.0 * doc["duration"]
    f = _write(tmp_path, "vllm.json", doc)
    assert main(["runs", "import", str(f), "--accelerator", "h100-sxm", "--model", "llama-3.1-8b"]) == 2
    err = capsys.readouterr().err
    assert "generation" in err and err.count("\n") == 1
    f = _write(tmp_path, "vllm-ok.json", published)  # the published run (434.4 tokens/s): stored
    assert main(["runs", "import", str(f), "--accelerator", "h100-sxm", "--model", "llama-3.1-8b"]) == 0
