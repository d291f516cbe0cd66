"""A seeded, bounded fuzz test per importer (issue 38): generated llama-bench files (JSON, JSONL, CSV), Trainer
states, vLLM results and advisor job recordings, their fields replaced by extreme floats, huge integers,
control characters, lists, tables and deep nesting, end in one clear line (``RunImportError``) or stored
records, never another exception, and a plan on the same accelerator that learns from what was stored
still gives finite figures.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from advisor.runs import ImportOptions, RunImportError, import_file

FIX = Path(__file__).parent / "fixtures"
SETTINGS = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

_floats = st.sampled_from([0.0, -0.0, 5e-324, 1e-300, 1e-9, 1e-3, 1.0, 117.5, 1e9, 1e22, 1e30, 1e300, 1.7e308, -1.0])
_ints = st.sampled_from([0, 1, -1, 7, 2**31, 2**63, 10**18, 10**30])
_texts = st.text(alphabet=st.sampled_from(list("ab7-. \x1b]\x07\x00\u202e[/\n\r\t\"'=,{")), max_size=40)
_deep = st.integers(1, 3000).map(lambda n: json.loads("[" * n + "]" * n) if n < 900 else {"deep": n})
_others = st.one_of(_ints, _texts, st.booleans(), st.none(), st.lists(_ints, max_size=3),
                    st.dictionaries(_texts, _ints, max_size=2), _deep)
_values = st.one_of(_floats, _others)  # half of the values an extreme float


def _mutate(doc: dict, data, keys) -> dict:
    out = dict(doc)
    for key in data.draw(st.lists(st.sampled_from(sorted(keys)), min_size=1, max_size=2, unique=True)):
        out[key] = data.draw(_values)
    return out


def _write(tmp: Path, name: str, text: str) -> Path:
    p = tmp / name
    p.write_text(text, encoding="utf-8", errors="surrogatepass")
    return p


def _dumps(doc) -> str:
    try:
        return json.dumps(doc)  # 1e999 and NaN are written as Infinity/NaN: refused at the border
    except (RecursionError, ValueError):
        return json.dumps({"unwritable": True})


def _plan_stays_finite(records, workload: str) -> None:
    from advisor.catalog import load_catalog
    from advisor.planner import PlanRequest, plan
    from advisor.store.calibration import with_runs

    calibration = with_runs(None, records, "0123456789abcdef")
    values = {"params": 7e9, "workload": workload, "accelerator": ["rtx-4090"], "gpus": 1, "own": ["1xrtx-4090"]}
    if workload != "inference":
        values.update(params=1e9, tokens=1e9, seq_len=2048)
    result = plan(PlanRequest.from_mapping(values), load_catalog(), calibration, advise=False)
    for o in result.options:
        for v in (o.tokens_per_s, o.hours):
            assert v is None or math.isfinite(v)


def _outcome(path: Path, workload: str) -> None:
    try:
        records = import_file(path, ImportOptions(accelerator="rtx-4090", this_machine_id="0123456789abcdef"))
    except RunImportError as exc:
        assert "\n" not in str(exc) and str(exc).startswith(str(path))
        return
    assert records
    _plan_stays_finite(records, workload)


def _bench_row() -> dict:
    return json.loads((FIX / "llama-bench" / "llama-bench-rtx4080.json").read_text())[0] | {
        "gpu_info": "NVIDIA GeForce RTX 4090"}


@seed(38)
@SETTINGS
@given(st.data(), st.sampled_from(["json", "jsonl", "csv"]))
def test_fuzz_llama_bench(tmp_path_factory, data, form):
    base = _bench_row()
    focus = ("avg_ts", "model_size", "model_n_params", "n_prompt", "n_gen", "n_depth", "test_time", "model_type",
             "gpu_info", "n_gpu_layers", "build_number", "model_filename")
    rows = [_mutate(base, data, focus), {**base, "n_prompt": 0, "n_gen": 128}]
    tmp = tmp_path_factory.mktemp("lb")
    if form == "json":
        text = _dumps(rows)
    elif form == "jsonl":
        text = "\n".join(_dumps(r) for r in rows) + "\n"
        if data.draw(st.booleans()):
            text += '{"a": ' * 100_000 + "1" + "}" * 100_000 + "\n"
    else:
        import csv
        import io

        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=list(base))
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k) for k in base})
        text = buf.getvalue()
    _outcome(_write(tmp, f"bench.{form}", text), "inference")


@seed(38)
@SETTINGS
@given(st.data())
def test_fuzz_trainer_state(tmp_path_factory, data):
    src = FIX / "hf-trainer" / "small-4x256"
    tmp = tmp_path_factory.mktemp("tr")
    for name in ("config.json", "training_args.json"):
        (tmp / name).write_text((src / name).read_text())
    state = json.loads((src / "trainer_state.json").read_text())
    if data.draw(st.integers(0, 3)) == 0:
        state = _mutate(state, data, ("global_step", "train_batch_size", "num_input_tokens_seen", "total_flos",
                                      "log_history"))
    else:
        state["log_history"][-1] = _mutate(state["log_history"][-1], data,
                                           ("train_runtime", "total_flos", "num_input_tokens_seen"))
    _outcome(_write(tmp, "trainer_state.json", _dumps(state)), "finetune")


@seed(38)
@SETTINGS
@given(st.data())
def test_fuzz_vllm_bench(tmp_path_factory, data):
    doc = json.loads((FIX / "vllm-bench" / "vllm-inf-concurrency32.json").read_text())
    tmp = tmp_path_factory.mktemp("vb")
    focus = ("output_throughput", "duration", "completed", "total_input_tokens", "total_output_tokens",
             "request_throughput", "median_ttft_ms", "p99_tpot_ms", "max_concurrency", "date", "model_id")
    _outcome(_write(tmp, "result.json", _dumps(_mutate(doc, data, focus))), "inference")


@seed(38)
@SETTINGS
@given(st.data())
def test_fuzz_job_recording(tmp_path_factory, data):
    doc = {"schema": "advisor.job/1", "pid": 5, "name": "train.py", "started_at": "2026-01-01T00:00:00+00:00",
           "duration_s": 100.0, "gpus": [{"index": 0, "name": "NVIDIA GeForce RTX 4090", "catalog_id": "rtx-4090"}],
           "machine_id": "0123456789abcdef", "gpu_hours": 0.03, "energy_j": 30000.0, "tokens": 1e6,
           "model": "llama-3.2-1b", "params": 1_235_814_400, "layers": 16, "hidden": 2048, "heads": 32,
           "vocab": 128256, "seq_len": 2048, "batch": 4, "precision": "bf16", "workload": "finetune"}
    tmp = tmp_path_factory.mktemp("job")
    keys = ("duration_s", "tokens", "gpu_hours", "energy_j", "params", "layers", "hidden", "seq_len", "started_at",
            "machine_id", "gpus", "workload", "precision", "name")
    _outcome(_write(tmp, "job.json", _dumps(_mutate(doc, data, keys))), "finetune")


def test_the_plan_check_sees_what_the_planner_learns(tmp_path):
    """The fuzz tests' plan check plans with the imported record learned (so a record that broke a plan would
    show): a decode at 100 tokens/s of a 4.7 GB file on an RTX 4090 teaches a factor on the runtime's decode, and
    the plan on that GPU carries it."""
    from advisor.catalog import load_catalog
    from advisor.planner import PlanRequest, plan
    from advisor.store.calibration import with_runs

    row = _bench_row() | {"n_prompt": 0, "n_gen": 128, "avg_ts": 100.0}
    (rec,) = import_file(_write(tmp_path, "lb.json", json.dumps([row])), ImportOptions(accelerator="rtx-4090"))
    _plan_stays_finite([rec], "inference")
    req = PlanRequest.from_mapping({"params": 7e9, "workload": "inference", "accelerator": ["rtx-4090"], "gpus": 1,
                                    "own": ["1xrtx-4090"], "runtime": "llama.cpp", "quant": "q4_k_m"})
    result = plan(req, load_catalog(), with_runs(None, [rec], "0123456789abcdef"), advise=False)
    # learning is the plan run backwards: the run's factor on the runtime's published decode (learned.serving_scale)
    assert all("from your run of" in o.mfu_origin and "the runtime's published speed" in o.mfu_origin
               for o in result.options)
