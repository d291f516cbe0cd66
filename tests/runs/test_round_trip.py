"""Learning is the forward model run backwards: for every importer and generated jobs, a run imported and its own
job planned again gives the measured figure within 2 %, inside the plan's 80 % range.

Each case writes the file the tool writes (a Trainer state with its arguments, llama-bench JSON with a prompt and
a generation test, a ``vllm bench serve`` result, SGLang's bench_serving line, a GuideLLM report, the monitor's
job recording), with a measured figure a drawn
factor (0.5 to 1.2) away from what the advisor plans for that job before it has seen the run: the learned
efficiency has to move the plan there.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.catalog import load_catalog
from advisor.runs import ImportOptions, import_file
from advisor.runs.load import at_load, learned_pair, plan_format
from advisor.runs.predict import compared_figure, predict, teaches
from advisor.store.calibration import with_runs

CATALOG = load_catalog()
HERE = "this-machine"
TOLERANCE = 0.02  # the bound: the measured figure back within 2 %
SETTINGS = settings(max_examples=25, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
factors = st.floats(min_value=0.5, max_value=1.2)


def _opts(**kw) -> ImportOptions:
    return ImportOptions(this_machine_id=HERE, **kw)


def _round_trip(path: Path, opts: ImportOptions) -> None:
    """Import ``path`` (its measured figures already a factor away from the plan of its job unseen) and plan each
    record's job again with what it teaches."""
    for rec in import_file(path, opts):
        assert rec.machine_id == HERE
        before = predict(rec, catalog=CATALOG, calibration=None)
        assert before is not None, rec
        measured = getattr(rec.measured, compared_figure(rec))
        after = predict(rec, catalog=CATALOG, calibration=with_runs(None, [rec], HERE), leave_out=False)
        assert after is not None, rec
        assert after.tokens_per_s == pytest.approx(measured, rel=TOLERANCE), (rec.kind, compared_figure(rec),
                                                                               before.tokens_per_s)
        assert after.low <= measured <= after.high
        assert teaches(rec, CATALOG) is True
        if rec.workload == "inference":  # the format the load and the learner plan in is the plan's own
            assert plan_format(rec, CATALOG.accelerators[rec.accelerator_id]) == _planned_format(rec)
        pair = learned_pair(rec, CATALOG.accelerators[rec.accelerator_id], CATALOG) if at_load(rec) else None
        if pair is not None and pair[1] is not None:  # a first token the run teaches comes back too
            ttft = after.load["figures"]["ttft_p50_s"]
            assert ttft["predicted"] == pytest.approx(rec.measured.ttft_p50_s, rel=TOLERANCE)
            assert ttft["low"] <= rec.measured.ttft_p50_s <= ttft["high"]


def _planned_format(rec) -> str:
    """The weight format of the plan's option for the record's own job on its accelerator."""
    from advisor.planner import PlanRequest, plan
    from advisor.runs.predict import request_values

    result = plan(PlanRequest.from_mapping(request_values(rec)), CATALOG, None, advise=False)
    (o, *_) = [o for o in result.options if o.accelerator == rec.accelerator_id and o.devices == rec.devices
               and o.feasible]
    return o.serving.software.weight_format.id


def _reach(path: Path, opts: ImportOptions) -> list[float]:
    """The fastest each record's figure can be: the plan's forward model at the largest factor (every efficiency
    capped at 1)."""
    from advisor.estimate.learned import MAX_SCALE
    from advisor.runs.load import record_forward  # the learner's own: a serving run through its load's plan

    out = []
    for r in import_file(path, opts):
        what = "prefill" if compared_figure(r) == "prefill_tokens_per_s" else "decode"
        out.append(record_forward(r, CATALOG.accelerators[r.accelerator_id], what, CATALOG)(MAX_SCALE))
    return out


def _predicted(path: Path, opts: ImportOptions) -> list[float]:
    return [predict(r, catalog=CATALOG, calibration=None).tokens_per_s for r in import_file(path, opts)]


@SETTINGS
@given(acc=st.sampled_from(["rtx-4090", "rtx-3090", "a100-80gb-sxm", "h100-sxm"]),
       params=st.floats(min_value=5e8, max_value=1.4e10),
       quant=st.sampled_from([("Q4_K - Medium", 4.85), ("Q8_0", 8.5), ("F16", 16.0)]),
       n_prompt=st.integers(min_value=64, max_value=4096), n_gen=st.integers(min_value=16, max_value=512),
       f_pp=factors, f_tg=factors)
def test_llama_bench_prompt_and_generation_tests(tmp_path, acc, params, quant, n_prompt, n_gen, f_pp, f_tg):
    name, bits = quant
    row = {"model_type": f"llama ?B {name}", "model_size": int(params * bits / 8), "model_n_params": int(params),
           "n_gpu_layers": 99, "backends": "CUDA"}

    def write(pp: float, tg: float) -> Path:
        p = tmp_path / "bench.json"
        p.write_text(json.dumps([{**row, "n_prompt": n_prompt, "n_gen": 0, "avg_ts": pp},
                                 {**row, "n_prompt": 0, "n_gen": n_gen, "avg_ts": tg}]))
        return p

    opts = _opts(accelerator=acc)
    first = write(1000.0, 10.0)
    (pp0, tg0), (pp_max, tg_max) = _predicted(first, opts), _reach(first, opts)
    # a measured figure the forward model can reach at some efficiency (each capped at 1): a tiny model's short
    # prompt can be drawn faster than reading its weights at the full bandwidth, which no run measures
    _round_trip(write(min(pp0 * f_pp, 0.98 * pp_max), min(tg0 * f_tg, 0.98 * tg_max)), opts)


@SETTINGS
@given(acc=st.sampled_from(["rtx-4090", "a100-80gb-sxm", "h100-sxm"]),
       model=st.sampled_from(["qwen2.5-0.5b", "llama-3.2-1b", "qwen3-1.7b"]),
       workload=st.sampled_from(["finetune", "lora"]), precision=st.sampled_from(["bf16", "fp16"]),
       seq=st.sampled_from([512, 1024, 2048]), batch=st.integers(min_value=1, max_value=8),
       steps=st.integers(min_value=10, max_value=500), devices=st.sampled_from([1, 2, 4, 8]), factor=factors)
def test_trainer_state(tmp_path, acc, model, workload, precision, seq, batch, steps, devices, factor):
    run = tmp_path / "run"
    run.mkdir(exist_ok=True)
    tokens = steps * batch * seq * devices
    (run / "training_args.json").write_text(json.dumps({"per_device_train_batch_size": batch,
                                                        precision: True}))

    def write(runtime: float) -> Path:
        p = run / "trainer_state.json"
        p.write_text(json.dumps({"global_step": steps, "train_batch_size": batch, "num_input_tokens_seen": tokens,
                                 "log_history": [{"train_runtime": runtime, "num_input_tokens_seen": tokens}]}))
        return p

    opts = _opts(accelerator=acc, devices=devices, model=model, workload=workload)
    (tps0,) = _predicted(write(100.0), opts)
    _round_trip(write(tokens / (tps0 * factor)), opts)


@SETTINGS
@given(acc=st.sampled_from(["a100-80gb-sxm", "h100-sxm", "l40s"]),
       model=st.sampled_from(["meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen3-8B"]),
       concurrency=st.integers(min_value=1, max_value=64), prompt=st.integers(min_value=64, max_value=2048),
       output=st.integers(min_value=16, max_value=1024), factor=factors)
def test_vllm_bench_serve(tmp_path, acc, model, concurrency, prompt, output, factor):
    n = 100

    def write(rate: float) -> Path:
        p = tmp_path / "vllm.json"
        p.write_text(json.dumps({"date": "20250610-101500", "backend": "vllm", "model_id": model,
                                 "num_prompts": n, "max_concurrency": concurrency, "duration": n * output / rate,
                                 "completed": n, "total_input_tokens": n * prompt, "total_output_tokens": n * output,
                                 "output_throughput": rate, "median_ttft_ms": 100.0, "median_tpot_ms": 20.0}))
        return p

    opts = _opts(accelerator=acc)
    (tps0,), (top,) = _predicted(write(100.0), opts), _reach(write(100.0), opts)
    # a measured figure the forward model can reach (as for llama-bench above): where the plan of the job unseen
    # lies within 1.2 times of the bandwidth bound's reach, the largest drawn factor asks for more than any
    # efficiency gives, which teaches nothing (test_a_figure_no_efficiency_reaches_teaches_nothing)
    _round_trip(write(min(tps0 * factor, 0.98 * top)), opts)


@SETTINGS
@given(acc=st.sampled_from(["a100-80gb-sxm", "h100-sxm"]), concurrency=st.integers(min_value=1, max_value=64),
       prompt=st.integers(min_value=64, max_value=2048), output=st.integers(min_value=16, max_value=1024),
       factor=factors)
def test_sglang_bench_serving(tmp_path, acc, concurrency, prompt, output, factor):
    n = 100

    def write(rate: float) -> Path:
        p = tmp_path / "sglang.jsonl"
        p.write_text(json.dumps({"backend": "sglang", "request_rate": float("inf"), "max_concurrency": concurrency,
                                 "duration": n * output / rate, "completed": n, "total_input_tokens": n * prompt,
                                 "total_output_tokens": n * output, "total_output_tokens_retokenized": n * output,
                                 "output_throughput": rate, "median_ttft_ms": 50.0, "median_tpot_ms": 10.0}) + "\n")
        return p

    opts = _opts(accelerator=acc, model="qwen3-8b")
    (tps0,), (top,) = _predicted(write(100.0), opts), _reach(write(100.0), opts)
    # a measured figure the forward model can reach (as for llama-bench above): where the plan of the job unseen
    # lies within 1.2 times of the bandwidth bound's reach, the largest drawn factor asks for more than any
    # efficiency gives, which teaches nothing (test_a_figure_no_efficiency_reaches_teaches_nothing)
    _round_trip(write(min(tps0 * factor, 0.98 * top)), opts)


@SETTINGS
@given(acc=st.sampled_from(["l40s", "h100-sxm"]), streams=st.sampled_from([None, 2, 8, 32]),
       prompt=st.integers(min_value=64, max_value=2048), output=st.integers(min_value=16, max_value=1024),
       factor=factors)
def test_guidellm_report(tmp_path, acc, streams, prompt, output, factor):
    n = 200

    def write(rate: float) -> Path:
        span = n * output / rate
        strategy = {"type_": "concurrent", "streams": streams} if streams else {"type_": "synchronous"}

        def dist(v, total=None):
            return {"successful": {"mean": v, "median": v, "count": n, "total_sum": total, "percentiles": {}}}

        p = tmp_path / "benchmarks.json"
        p.write_text(json.dumps({"benchmarks": [{
            "args": {"strategy": strategy}, "start_time": 1.75e9, "end_time": 1.75e9 + span,
            "worker": {"backend_model": "Qwen/Qwen3-8B"},
            "metrics": {"prompt_token_count": dist(prompt, prompt * n), "output_token_count": dist(output, output * n),
                        "time_to_first_token_ms": dist(50.0), "inter_token_latency_ms": dist(10.0)}}]}))
        return p

    opts = _opts(accelerator=acc)
    (tps0,), (top,) = _predicted(write(100.0), opts), _reach(write(100.0), opts)
    # a measured figure the forward model can reach (as for llama-bench above): where the plan of the job unseen
    # lies within 1.2 times of the bandwidth bound's reach, the largest drawn factor asks for more than any
    # efficiency gives, which teaches nothing (test_a_figure_no_efficiency_reaches_teaches_nothing)
    _round_trip(write(min(tps0 * factor, 0.98 * top)), opts)


@SETTINGS
@given(acc=st.sampled_from(["rtx-4090", "h100-sxm"]), model=st.sampled_from(["llama-3.2-1b", "qwen3-1.7b"]),
       seq=st.sampled_from([1024, 2048]), batch=st.integers(min_value=1, max_value=8),
       devices=st.sampled_from([1, 2, 4]), factor=factors)
def test_monitor_job_record(tmp_path, acc, model, seq, batch, devices, factor):
    arch = CATALOG.models[model]
    from advisor.estimate.model import param_count

    tokens = 1e7

    def write(duration: float) -> Path:
        p = tmp_path / "job.json"
        p.write_text(json.dumps({"schema": "advisor.job/1", "pid": 4242, "started_at": "2026-11-01T10:00:00+00:00",
                                 "duration_s": duration,
                                 "gpus": [{"index": i, "catalog_id": acc} for i in range(devices)],
                                 "machine_id": HERE, "gpu_hours": devices * duration / 3600, "tokens": tokens,
                                 "workload": "finetune", "model": model, "params": param_count(arch),
                                 "layers": arch.layers, "hidden": arch.hidden, "heads": arch.heads,
                                 "vocab": arch.vocab, "seq_len": seq, "batch": batch, "precision": "bf16",
                                 "software": "transformers"}))
        return p

    opts = _opts()
    (tps0,) = _predicted(write(1000.0), opts)
    _round_trip(write(tokens / (tps0 * factor)), opts)


def test_a_figure_no_efficiency_reaches_teaches_nothing(tmp_path):
    # 8B at Q4_K_M on an RTX 4090: 4.92 GB a token at 1,008 GB/s is at most 205 tokens/s; 2,000 is no real run
    row = {"model_type": "llama 8B Q4_K - Medium", "model_size": 4920733696, "model_n_params": 8030261248,
           "n_gpu_layers": 99, "backends": "CUDA", "n_prompt": 0, "n_gen": 128, "avg_ts": 2000.0}
    p = tmp_path / "fast.json"
    p.write_text(json.dumps([row]))
    (rec,) = import_file(p, _opts(accelerator="rtx-4090"))
    unseen = predict(rec, catalog=CATALOG, calibration=None)
    taught = predict(rec, catalog=CATALOG, calibration=with_runs(None, [rec], HERE), leave_out=False)
    assert taught.tokens_per_s == pytest.approx(unseen.tokens_per_s, rel=1e-12) and taught.tokens_per_s < 205
    assert teaches(rec, CATALOG) is False  # `advisor runs` says so


def test_a_llama_bench_file_of_llama_3_8b_teaches_the_plan_of_that_model(tmp_path, capsys):
    """llama-bench names no shape, only ``model_n_params``; 8,030,261,248 is Llama 3 8B's exact count
    (planner.record_job.preset_of), so the run is learned on its shape (a prompt token multiplied by all but the
    embedding and the head) and the plan of Llama 3.1 8B, the same shape, gives both figures back."""
    from advisor.cli import main
    from advisor.planner.record_job import preset_of

    assert preset_of(8030261248) in ("llama-3-8b", "llama-3.1-8b", "deepseek-r1-distill-llama-8b")
    assert preset_of(8030261249) is None  # no preset of that count: the generic shape of its size
    row = {"model_type": "llama 8B Q4_K - Medium", "model_size": 4920733696, "model_n_params": 8030261248,
           "gpu_info": "NVIDIA GeForce RTX 4090"}
    path = tmp_path / "bench.json"
    path.write_text(json.dumps([{**row, "n_prompt": 0, "n_gen": 128, "avg_ts": 150.0},
                                {**row, "n_prompt": 512, "n_gen": 0, "avg_ts": 9000.0}]))
    assert main(["runs", "import", str(path)]) == 0
    capsys.readouterr()
    assert main(["plan", "--model", "llama-3.1-8b", "--workload", "inference", "--quant", "q4_k_m", "--runtime",
                 "llama.cpp", "--accelerator", "rtx-4090", "--no-own", "--prompt-tokens", "512", "--output-tokens",
                 "128", "--json"]) == 0
    doc = json.loads(capsys.readouterr()[0])
    o = next(x for x in doc["options"] if x["accelerator"] == "rtx-4090" and x["devices"] == 1)
    # the plan's request (512 + 128) is not the tests' own (a prompt test, a generation test from an empty cache)
    assert o["prefill_tokens_per_s"] == pytest.approx(9000.0, rel=0.04)
    assert o["decode_tokens_per_s"] == pytest.approx(150.0, rel=0.04)
