"""Benchmark: plan one scenario against the whole catalog (target: median under 10 ms).

Run: python benchmarks/bench_plan.py [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import time

from advisor.catalog import load_catalog
from advisor.planner import PlanRequest, plan

SCENARIOS = {
    "llama-3-8b lora": dict(model="llama-3-8b", workload="lora", tokens=2e8),
    "llama-3-70b pretrain": dict(model="llama-3-70b", workload="pretrain", tokens=1e12),
    "mixtral inference": dict(model="mixtral-8x7b", workload="inference", batch=16, context=4096),
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    catalog = load_catalog(use_user_file=False)
    for name, values in SCENARIOS.items():
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            result = plan(PlanRequest.from_mapping(values), catalog=catalog)
            times.append(time.perf_counter() - t0)
        print(f"{name:<22} {len(result.options):>4} options  median {statistics.median(times) * 1e3:6.2f} ms  "
              f"best {min(times) * 1e3:6.2f} ms  (target < 10 ms)")


if __name__ == "__main__":
    main()
