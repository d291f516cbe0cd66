"""Benchmark: plan one scenario against the whole catalog (target: median under 5 ms for every scenario).

Prints each scenario's median beside the target with PASS or FAIL; exits 1 when any misses it. Each run is an
edit of the job as a user makes one in the Planner, with a value not asked before: the jobs a month (which prices
every rig and server again, and a cloud offer only where a reserved term spreads over the use) and, where the
scenario has a token budget, the budget (each option's hours and prices again). What a plan keeps between calls
for the parts the edit leaves stays kept, as in the app (``planner.service._Kept``, by the job's timing key: the
layouts and timings, each accelerator's groups of options on the catalog's nodes with their figures whatever the
budget, each group's last quotes and the options built of them); the same job asked again would only replay what
is kept, so no run asks it. A plan with nothing kept is printed beside it as ``cold``, without a target. The CPU
time's median and least are printed too, with the load average: on a shared machine the wall clock counts others'
turns.

``--instructions N`` counts instead of timing (a busy machine stretches wall and CPU time both): each scenario's
instructions per edit, N edits after three warm ones under callgrind (valgrind), only the edits counted. The same
tree gives the same count to within a fraction of a percent; compare two trees with it.

Run: python benchmarks/bench_plan.py [--repeat N] [--instructions N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from verdict import Target, exit_code

from advisor.catalog import load_catalog
from advisor.planner import PlanRequest, plan
from advisor.planner.service import forget_kept

SCENARIOS = {
    "llama-3-8b lora": dict(model="llama-3-8b", workload="lora", tokens=2e8),
    "llama-3-70b pretrain": dict(model="llama-3-70b", workload="pretrain", tokens=1e12),
    "mixtral inference": dict(model="mixtral-8x7b", workload="inference", batch=16, context=4096),
}
PLAN_MS = Target("plan over the catalog, median", "<", 5.0, "ms")


def edited(values: dict, i: int) -> dict:
    """The ``i``-th edit of a scenario: a value not asked before for the jobs a month and the token budget."""
    out = dict(values, jobs_per_month=1.0 + (i + 1) / 1000.0)
    if "tokens" in values:
        out["tokens"] = values["tokens"] * (1.0 + (i + 1) / 1000.0)
    return out


def count_edits(name: str, edits: int) -> None:
    """Under callgrind (started by :func:`instructions_per_edit`): three warm edits, then ``edits`` edits of the
    scenario ``name`` instrumented; nothing else (start-up, the catalog, the warm edits) is counted."""
    catalog = load_catalog(use_user_file=False)
    values = SCENARIOS[name]
    for i in range(3):
        plan(PlanRequest.from_mapping(edited(values, 10_000 + i)), catalog=catalog)
    _callgrind(True)
    for i in range(edits):
        plan(PlanRequest.from_mapping(edited(values, i)), catalog=catalog)
    _callgrind(False)


def _callgrind(on: bool) -> None:
    subprocess.run(["callgrind_control", "-i", "on" if on else "off", str(os.getpid())], capture_output=True,
                   check=True)


def instructions_per_edit(name: str, edits: int) -> float:
    """A scenario's instructions per edit, counted by callgrind over ``edits`` edits (:func:`count_edits`)."""
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        raise SystemExit("--instructions needs valgrind (callgrind)")
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, ADVISOR_HOME=out)
        subprocess.run(["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}/cg.out",
                        sys.executable, os.path.abspath(__file__), "--count-edits", name, str(edits)], cwd=out,
                       env=env, check=True, capture_output=True, timeout=3600)
        with open(os.path.join(out, "cg.out")) as f:
            total = next(int(line.split()[1]) for line in f if line.startswith("totals:"))
    return total / edits


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--instructions", type=int, metavar="N",
                        help="count each scenario's instructions per edit over N edits (callgrind) instead")
    parser.add_argument("--count-edits", nargs=2, help=argparse.SUPPRESS)  # the counted run, under callgrind
    args = parser.parse_args()
    if args.count_edits:
        count_edits(args.count_edits[0], int(args.count_edits[1]))
        return 0
    if args.instructions:
        for name in SCENARIOS:
            per_edit = instructions_per_edit(name, args.instructions)
            print(f"{name:<22} {per_edit / 1e6:6.2f} M instructions per edit ({args.instructions} edits counted by "
                  "callgrind)")
        return 0
    catalog = load_catalog(use_user_file=False)
    met = []
    for name, values in SCENARIOS.items():
        times, cpu = [], []
        for i in range(args.repeat):
            edit = edited(values, i)  # an edit: a value not asked before, validated and planned
            t0, c0 = time.perf_counter(), time.process_time()
            result = plan(PlanRequest.from_mapping(edit), catalog=catalog)
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)  # on a shared machine the wall clock counts others' turns too
        cold = []
        for _ in range(max(3, args.repeat // 10)):  # with nothing kept (no target)
            forget_kept()
            t0 = time.perf_counter()
            plan(PlanRequest.from_mapping(values), catalog=catalog)
            cold.append(time.perf_counter() - t0)
        median_ms = statistics.median(times) * 1e3
        print(f"{name:<22} {len(result.options):>4} options  median {median_ms:6.2f} ms  best {min(times) * 1e3:6.2f} ms"
              f"  CPU median {statistics.median(cpu) * 1e3:6.2f} ms, least {min(cpu) * 1e3:6.2f} ms"
              f"  (cold: median {statistics.median(cold) * 1e3:6.2f} ms)")
        print("  " + PLAN_MS.line(median_ms, label=name))
        met.append(PLAN_MS.met(median_ms))
    print(f"(load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs)")
    return exit_code(met)


if __name__ == "__main__":
    sys.exit(main())
