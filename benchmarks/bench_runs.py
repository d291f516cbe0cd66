"""Benchmark the run store: import 1,000 llama-bench rows (one file) and list them with plan against actual.

Each record is planned once at import (what the advisor would have said without it) and once when listed
(what it says now, the record left out); a plan weighs its matching records in O(n) (the 80 % range from
the pairs of the ``learned.PAIR_RECORDS`` that weigh most). Target: both in seconds, not minutes (before:
300 rows took 42 s to import, 1,000 did not finish in 11 minutes).

The rows are 1,000 models of one RTX 4090 (a tg128 and a pp512 test each, speeds near the published Llama 2 7B
Q4_0 figures of llama.cpp discussion #15013), written to a temporary folder; the store is a temporary
ADVISOR_HOME, so nothing of the user's is read or written.

Run: python benchmarks/bench_runs.py [--rows N] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from verdict import Target, exit_code  # noqa: E402

# "1,000 records import and list in seconds" (issue 38): each command a fresh process, start-up included
IMPORT_S = Target("import 1,000 llama-bench models", "<", 10.0, "s")
LIST_S = Target("list them (plan against actual)", "<", 10.0, "s")


def write_rows(path: Path, n: int) -> None:
    rows = []
    for i in range(n):
        base = {"build_commit": "5f0b2b5", "build_number": 6000, "cpu_info": "AMD Ryzen 9 7950X 16-Core Processor",
                "gpu_info": "NVIDIA GeForce RTX 4090", "backends": "CUDA", "model_filename": f"models/m{i}.gguf",
                "model_type": "llama 7B Q4_0", "model_size": 3_825_000_000 + i, "model_n_params": 6_738_000_000 + i,
                "n_gpu_layers": 99, "n_depth": 0, "test_time": "2026-11-30T10:00:00Z"}
        rows.append({**base, "n_prompt": 0, "n_gen": 128, "avg_ts": 150.0 + (i % 50)})
        rows.append({**base, "n_prompt": 512, "n_gen": 0, "avg_ts": 11_000.0 + 10 * (i % 50)})
    path.write_text(json.dumps(rows))


def _timed(args: list[str], env: dict) -> float:
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "advisor", *args], env=env, capture_output=True, text=True)
    took = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"advisor {' '.join(args)} failed: {done.stderr.strip()[-500:]}")
    return took


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1000, help="models in the file (default 1000)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "ADVISOR_HOME": str(Path(tmp) / "home")}
        bench = Path(tmp) / "llama-bench.json"
        write_rows(bench, args.rows)
        imported = _timed(["runs", "import", str(bench), "--accelerator", "rtx-4090"], env)
        listed = _timed(["runs"], env)
        listed_json = _timed(["runs", "--json"], env)
    result = {"rows": args.rows, "import_s": round(imported, 2), "list_s": round(listed, 2),
              "list_json_s": round(listed_json, 2)}
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{args.rows} llama-bench models: import {imported:.2f} s, list {listed:.2f} s, "
              f"list --json {listed_json:.2f} s (each a fresh process, start-up included)")
    judged = args.rows == 1000  # the targets are for 1,000 models
    if judged and not args.json:
        print(IMPORT_S.line(imported))
        print(LIST_S.line(max(listed, listed_json)))
    return exit_code([IMPORT_S.met(imported), LIST_S.met(max(listed, listed_json))]) if judged else 0


if __name__ == "__main__":
    raise SystemExit(main())
