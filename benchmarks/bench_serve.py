"""Benchmark: size one serving job against the whole catalog (target: median under 50 ms), caches cleared
before each run so every run solves every replica's queue again; and, with ``--truth``, the serving model
against the published serving runs of the calibration set (``resources/measurements/serving.csv`` and
``ttft.csv``): output tokens/s of all users and the time to first token at the stated concurrency, each
within 25 % or not. The serving model fits nothing on these rows (its efficiencies are the runtime profiles'),
so every row is held out whichever source is left out.

Run: python benchmarks/bench_serve.py [--repeat N] [--truth [DIR]]
"""

from __future__ import annotations

import argparse
import csv
import io
import math
import re
import statistics
import time
from dataclasses import replace
from pathlib import Path

from advisor.catalog import load_catalog
from advisor.estimate.serving_queue import clear_caches
from advisor.job.serve import ServeJob
from advisor.planner.owned import parse_own
from advisor.planner.serve import serve_plan

SCENARIOS = {
    "five friends 70B q4": dict(model="llama-3.3-70b", quant="q4_k_m", runtime="llama.cpp", own=["2xrtx-3090"],
                                users=5, prompt_tokens=1000, output_tokens=300, ttft_p95_s=2.0),
    "8B vllm 2 req/s": dict(model="llama-3-8b", runtime="vllm", requests_per_s=2.0, prompt_tokens=500,
                            output_tokens=200, ttft_p95_s=1.0, tpot_p95_s=0.05),
    "8B sharegpt 200 users": dict(model="llama-3-8b", users=200, lengths="sharegpt", ttft_p95_s=1.0),
}


# The calibration set names the software as its source does; the runtime profile each stands for.
RUNTIME_OF = {"nim (tensorrt-llm)": "tensorrt-llm", "tensorrt-llm": "tensorrt-llm", "vllm": "vllm",
              "sglang": "sglang", "llama.cpp": "llama.cpp"}


def _rows(folder: Path | None, name: str) -> list[dict]:
    if folder is not None:
        text = (folder / name).read_text(encoding="utf-8")
    else:
        from advisor.catalog.load import _resource_text

        try:
            text = _resource_text(f"measurements/{name}")
        except (FileNotFoundError, OSError):
            return []
    return [r for r in csv.DictReader(io.StringIO(text)) if not (r.get("excluded") or "").strip()]


def predict(row: dict, catalog):
    """The serving model's steady state for one published run: one replica of the run's devices at its
    concurrency (a closed loop, as load generators run it) or, for MLPerf's server scenario, at its Poisson
    arrival rate; its weight format and runtime. None when the row names what it cannot plan."""
    from advisor.estimate.serving import Lengths
    from advisor.estimate.serving_queue import serve_at
    from advisor.planner.request import resolve_job_model, runtime_choice
    from advisor.planner.serve_spec import model_serving, replica_spec

    runtime = RUNTIME_OF.get(row["software"].strip().lower())
    if runtime is None or row["accelerator_id"] not in catalog.accelerators:
        return None
    precision = row["precision"] or "bf16"
    values = dict(model=row["model"], runtime=runtime, precision=precision, users=int(row["batch"]),
                  prompt_tokens=int(row["prompt_tokens"]), output_tokens=int(row["output_tokens"]),
                  kv_cache_bits=8 if precision == "fp8" else 16)
    if row["quant"] and row["quant"] != precision:
        values["quant"] = row["quant"]
    job = ServeJob.from_mapping(values)
    acc = catalog.accelerators[row["accelerator_id"]]
    jm = resolve_job_model(job, catalog)
    model = model_serving(jm.arch, jm.params, jm.active_params, precision, job.kv_cache_bits)
    lengths = Lengths(float(job.prompt_tokens), float(job.output_tokens))
    # the run's own batch limit where it is larger than the server's default (MLPerf's gpu_batch_size)
    spec, _ = replica_spec(model, acc, int(row["devices"]), runtime_choice(job, acc), max_seqs=None,
                           lengths=lengths)
    if spec.max_seqs < int(row["batch"]):
        spec = replace(spec, max_seqs=int(row["batch"]))
    # MLPerf's server scenario sends Poisson arrivals at a rate (its notes give it): an open queue there
    rate = None
    if rate:
        return serve_at(spec, lengths, requests_per_s=float(rate.group(1)))
    return serve_at(spec, lengths, users=int(row["batch"]))


def truth(folder: Path | None) -> None:
    """Print each published serving figure against the model, and the share within 25 % per figure."""
    catalog = load_catalog(use_user_file=False)
    for name, what in (("serving.csv", "throughput"), ("ttft.csv", "ttft")):
        rows = _rows(folder, name)
        within, n = 0, 0
        print(f"{name}: {len(rows)} rows")
        for r in rows:
            p = predict(r, catalog)
            if p is None:
                print(f"  {r['row_id']}: not planned ({r['software']} on {r['accelerator_id']})")
                continue
            published = float(r["value"]) / (1000.0 if r["unit"] == "ms" else 1.0)
            # the sources publish the mean time to first token (AIPerf, MLPerf): compared with the model's mean
            mine = p.output_tokens_per_s if what == "throughput" else p.ttft_mean_s
            ratio = mine / published if published > 0 and math.isfinite(mine) else math.inf
            ok = 0.75 <= ratio <= 1.25
            within += ok
            n += 1
            print(f"  {r['row_id']:<52} {r['source_id']:<32} published {published:9.3f}  model {mine:9.3f}  "
                  f"x{ratio:5.2f} {'ok' if ok else 'MISS'}")
        if n:
            print(f"  {what}: {within}/{n} within 25 % ({within / n:.0%}); every row held out (nothing fitted)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--truth", nargs="?", const="", default=None, metavar="DIR",
                        help="compare with the published serving runs (the calibration set, or CSVs in DIR)")
    args = parser.parse_args()
    if args.truth is not None:
        truth(Path(args.truth) if args.truth else None)
        return
    catalog = load_catalog(use_user_file=False)
    for name, values in SCENARIOS.items():
        job = ServeJob.from_mapping(values)
        owned = tuple(parse_own(job.own, catalog))
        times, cpu = [], []
        for _ in range(args.repeat):
            clear_caches()
            t0, c0 = time.perf_counter(), time.process_time()
            result = serve_plan(job.model_copy(update={"own": ()}), catalog, owned=owned)
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        # CPU time as well: on a shared, oversubscribed machine the wall clock counts other processes' turns
        print(f"{name:<24} {len(result.options):>4} options  median {statistics.median(times) * 1e3:6.2f} ms  "
              f"best {min(times) * 1e3:6.2f} ms  CPU median {statistics.median(cpu) * 1e3:6.2f} ms  "
              "(target < 50 ms)")


if __name__ == "__main__":
    main()
