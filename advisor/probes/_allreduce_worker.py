"""One rank of the all-reduce probe, started with torchrun's environment variables.

    RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 python -m advisor.probes._allreduce_worker \
        --backend gloo --sizes 4096,1048576 --iters 5 --warmup 2

Rank 0 prints one JSON line per size: ``{"size_bytes", "times_s": [...]}`` where each time is the slowest
rank's time for that iteration. The same ``measure`` function runs inside ``advisor probe allreduce``
when that command is itself started by torchrun (multi-node).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence


def measure(torch, dist, device, sizes: Sequence[int], iters: int, warmup: int,
            emit: Callable[[dict], None], should_stop: Callable[[], bool] = lambda: False) -> None:
    """All-reduce (sum) a float32 buffer of each size; ``emit`` gets the row per size on every rank
    (the same on all: each iteration's time is the slowest rank's)."""
    sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)
    largest = max(sizes) // 4
    buf = torch.rand(largest, device=device)
    try:
        for size in sizes:
            n = max(1, size // 4)
            view = buf[:n]
            for _ in range(warmup):
                dist.all_reduce(view)
            sync()
            dist.barrier()
            times = []
            for _ in range(iters):
                t0 = time.perf_counter()
                dist.all_reduce(view)
                sync()
                times.append(time.perf_counter() - t0)
            slowest = torch.tensor(times, dtype=torch.float64, device=device)
            dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
            stop = torch.tensor([1.0 if should_stop() else 0.0], device=device)
            dist.all_reduce(stop, op=dist.ReduceOp.MAX)
            emit({"size_bytes": n * 4, "times_s": slowest.cpu().tolist()})
            if stop.item() > 0:
                return
    finally:
        del buf


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="advisor-allreduce-worker")
    parser.add_argument("--backend", choices=("gloo", "nccl"), required=True)
    parser.add_argument("--sizes", required=True, help="comma-separated bytes")
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--threads", type=int, default=0)
    args = parser.parse_args(argv)
    import torch
    import torch.distributed as dist

    if args.threads:
        torch.set_num_threads(args.threads)
    local_rank = int(os.environ.get("LOCAL_RANK", os.environ.get("RANK", "0")))
    if args.backend == "nccl":
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    dist.init_process_group(args.backend, init_method="env://")
    try:
        rank0 = dist.get_rank() == 0

        def emit(row: dict) -> None:
            if rank0:
                print(json.dumps(row), flush=True)

        measure(torch, dist, device, [int(s) for s in args.sizes.split(",")], args.iters, args.warmup, emit)
        if rank0:
            print(json.dumps({"done": True}), flush=True)
    finally:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
