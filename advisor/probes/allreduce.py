"""All-reduce bandwidth with torch.distributed: gloo on CPUs, NCCL on GPUs, over a size sweep.

Launch: when the command already runs under torchrun (``RANK`` and ``WORLD_SIZE`` set, with the usual
``MASTER_ADDR``/``MASTER_PORT`` rendezvous, across nodes or under Slurm), every process measures as one
rank. Otherwise the probe starts ``ranks`` local processes with the same variables on loopback
(``127.0.0.1``, ``GLOO_SOCKET_IFNAME``/``NCCL_SOCKET_IFNAME=lo``) and collects rank 0's rows.

Figures (nccl-tests' definitions): for S bytes in time t on n ranks, algbw = S/t and
busbw = algbw * 2(n-1)/n, the rate each link carries in a ring all-reduce; t is the slowest rank's.
"""

from __future__ import annotations

import json
import os
import queue
import socket
import subprocess
import sys
import threading
import time

from advisor.probes._common import GB, parse_device, physical_cores, probe, rate_result, require_torch, resolve_device
from advisor.probes._types import CancelToken, ProbeResult, ProbeSkipped, Progress
from advisor.subproc import end_group, start

NAME = "allreduce"
START_TIMEOUT_S = 120.0


def bus_bandwidth(algbw: float, ranks: int) -> float:
    """busbw = algbw * 2(n-1)/n (nccl-tests, doc/PERFORMANCE.md, all-reduce)."""
    if ranks < 1:
        raise ValueError("ranks must be >= 1")
    return algbw * 2.0 * (ranks - 1) / ranks


def default_sizes(kind: str, quick: bool) -> list[int]:
    """Bytes per all-reduce: 4 KiB up to 16 MiB (CPU quick) or 1 GiB (GPU full), x4 steps."""
    top = {("cpu", True): 16 << 20, ("cpu", False): 128 << 20,
           ("cuda", True): 256 << 20, ("cuda", False): 1 << 30}[(kind, quick)]
    sizes, s = [], 4096
    while s <= top:
        sizes.append(s)
        s *= 4
    return sizes


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rows_to_result(rows, ranks, device, backend, params, launch) -> ProbeResult:
    if not rows:
        raise ProbeSkipped("the all-reduce ranks returned no measurement")
    sweep = []
    for row in rows:
        alg = rate_result(row["size_bytes"], row["times_s"], GB, "GB/s")
        sweep.append({"size_bytes": row["size_bytes"], "algbw_best": alg.best, "algbw_median": alg.median,
                      "busbw_best": bus_bandwidth(alg.best, ranks), "busbw_median": bus_bandwidth(alg.median, ranks),
                      "time_median_s": row["size_bytes"] / (alg.median * GB)})
    top = rows[-1]
    alg = rate_result(top["size_bytes"], top["times_s"], GB, "GB/s", size_bytes=top["size_bytes"])
    bus = rate_result(top["size_bytes"] * 2.0 * (ranks - 1) / ranks, top["times_s"], GB, "GB/s",
                      size_bytes=top["size_bytes"])
    return ProbeResult(
        probe=NAME, device=device, results={"algbw": alg, "busbw": bus}, peak=None,
        params={**params, "ranks": ranks, "backend": backend, "launch": launch},
        details={"sweep": {"algbw": [[r["size_bytes"], r["algbw_best"]] for r in sweep],
                           "busbw": [[r["size_bytes"], r["busbw_best"]] for r in sweep]},
                 "sweep_x": "bytes per all-reduce", "table": sweep},
        notes=(f"{backend} all-reduce (sum, float32) on {ranks} ranks; algbw = S/t, busbw = algbw*2(n-1)/n; "
               "figures at the largest size, t = the slowest rank's time",))


@probe(NAME)
def run(device: str = "cpu", quick: bool = False, cancel: CancelToken | None = None, *,
        ranks: int = 2, sizes: list[int] | None = None, iters: int | None = None, warmup: int = 2,
        env: dict | None = None):
    """Measure all-reduce bandwidth.

    Args:
        ranks: local processes to start when not already under torchrun (default 2; one GPU each on NCCL).
        sizes: bytes per all-reduce (default: a x4 sweep from 4 KiB).
        iters: timed iterations per size (default 5 quick, 20 full).
        env: environment to read the torchrun variables from (default ``os.environ``).
    Returns:
        ProbeResult with ``algbw`` and ``busbw`` at the largest size; ``details["sweep"]`` gives the curves
        (``{"algbw"|"busbw": [[bytes, best GB/s], ...]}``) and ``details["table"]`` every figure per size.
    """
    kind, index = parse_device(device)
    env = dict(os.environ if env is None else env)
    sizes = [int(s) for s in (sizes or default_sizes(kind, quick))]
    iters = int(iters or (5 if quick else 20))
    params = {"quick": quick, "sizes": sizes, "iters": iters, "warmup": warmup}
    backend = "nccl" if kind == "cuda" else "gloo"
    if "RANK" in env and "WORLD_SIZE" in env and int(env["WORLD_SIZE"]) > 1:
        result = yield from _run_in_process(device, kind, backend, sizes, iters, warmup, cancel, params)
        return result
    torch = require_torch()
    ranks = int(ranks)
    if ranks < 2:
        raise ValueError("ranks must be at least 2")
    if kind == "cuda":
        resolve_device(torch, device)  # the plain reason when torch has no CUDA or no GPU is visible
        count = torch.cuda.device_count()
        if count < ranks:
            raise ProbeSkipped(f"NCCL all-reduce needs {ranks} GPUs on this node, {count} visible "
                               "(use --device cpu for gloo on loopback, or torchrun across nodes)")
    rows = yield from _spawn(ranks, backend, sizes, iters, warmup, cancel, env)
    result = _rows_to_result(rows, ranks, device, backend, params, "local-loopback")
    if kind == "cuda":  # the GPUs' own link (NVLink or PCIe): the planner's intra-node bandwidth for them
        from dataclasses import replace

        from advisor.probes._device_info import cuda_facts

        facts = cuda_facts(torch, resolve_device(torch, device))
        result = replace(result, calibration=allreduce_offer(result, facts.catalog_id))
    return result


def allreduce_offer(result: ProbeResult, accelerator_id: str | None) -> dict | None:
    """The calibration a GPU all-reduce offers: the median bus bandwidth (bytes/s) at the largest size, for
    the accelerator measured (None when the GPU is not in the catalog)."""
    if not accelerator_id:
        return None
    return {"allreduce_bus_bps": result.results["busbw"].median * GB, "accelerator_id": accelerator_id}


def _spawn(ranks, backend, sizes, iters, warmup, cancel, env):
    port = free_port()
    threads = max(1, physical_cores() // ranks)
    cmd = [sys.executable, "-m", "advisor.probes._allreduce_worker", "--backend", backend,
           "--sizes", ",".join(map(str, sizes)), "--iters", str(iters), "--warmup", str(warmup),
           "--threads", str(threads)]
    base = {**env, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "WORLD_SIZE": str(ranks),
            "LOCAL_WORLD_SIZE": str(ranks), "GLOO_SOCKET_IFNAME": env.get("GLOO_SOCKET_IFNAME", "lo"),
            "NCCL_SOCKET_IFNAME": env.get("NCCL_SOCKET_IFNAME", "lo"), "OMP_NUM_THREADS": str(threads)}
    procs: list[subprocess.Popen] = []
    lines: queue.Queue = queue.Queue()
    rows = []
    yield Progress(0.0, f"starting {ranks} {backend} ranks on loopback (port {port})")
    try:
        for r in range(ranks):
            penv = {**base, "RANK": str(r), "LOCAL_RANK": str(r)}
            procs.append(start(cmd, env=penv, stdout=subprocess.PIPE if r == 0 else subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True))
        reader = threading.Thread(target=_pump, args=(procs[0].stdout, lines), name="allreduce-reader", daemon=True)
        reader.start()
        done = False
        deadline = time.monotonic() + START_TIMEOUT_S + 10.0 * len(sizes)
        while not done:
            cancel.check()
            try:
                line = lines.get(timeout=0.2)
            except queue.Empty:
                if any(p.poll() not in (None, 0) for p in procs):
                    err = next(p for p in procs if p.poll() not in (None, 0)).stderr.read()
                    tail = [x for x in (err or "").strip().splitlines() if x.strip()][-1:] or ["no message"]
                    raise ProbeSkipped(f"an all-reduce rank failed: {tail[0][:200]}") from None
                if procs[0].poll() == 0 and lines.empty():
                    break
                if time.monotonic() > deadline:
                    raise ProbeSkipped("the all-reduce ranks did not finish in time (rendezvous on loopback failed?)") from None
                continue
            if line is None:
                continue
            doc = json.loads(line)
            if doc.get("done"):
                done = True
            else:
                rows.append(doc)
                alg = doc["size_bytes"] / min(doc["times_s"]) / GB
                yield Progress(len(rows) / len(sizes), f"{doc['size_bytes']} bytes: busbw "
                               f"{bus_bandwidth(alg, ranks):.2f} GB/s",
                               point={"series": "busbw", "x": doc["size_bytes"], "y": bus_bandwidth(alg, ranks)})
        grace = time.monotonic() + 1.0  # rows are complete: let the ranks leave cleanly, briefly
        for p in procs:
            try:
                p.wait(timeout=max(0.05, grace - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        reader.join(timeout=1)
    finally:
        for p in procs:  # each rank and whatever it started (its own group)
            end_group(p)
        for p in procs:
            for stream in (p.stdout, p.stderr):
                if stream is not None:
                    stream.close()
    return rows


def _pump(stream, lines: queue.Queue) -> None:
    try:
        for line in stream:
            if line.strip().startswith("{"):
                lines.put(line)
    except (ValueError, OSError):
        pass
    lines.put(None)


def _run_in_process(device, kind, backend, sizes, iters, warmup, cancel, params):
    """This process is one rank of a torchrun job: measure with the others."""
    torch = require_torch()
    import torch.distributed as dist

    world = int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if kind == "cuda":
        torch.cuda.set_device(local)
        dev = torch.device("cuda", local)
    else:
        dev = torch.device("cpu")
    rows = []
    owns = not dist.is_initialized()
    if owns:
        dist.init_process_group(backend, init_method="env://")
    try:
        yield Progress(0.0, f"rank {dist.get_rank()} of {world} ({backend})")
        measure_rows(torch, dist, dev, sizes, iters, warmup, rows, cancel)
    finally:
        if owns:
            dist.destroy_process_group()
    return _rows_to_result(rows, world, f"{kind}:{local}" if kind == "cuda" else device, backend, params,
                           "torchrun")


def measure_rows(torch, dist, dev, sizes, iters, warmup, rows, cancel):
    from advisor.probes._allreduce_worker import measure

    measure(torch, dist, dev, sizes, iters, warmup, rows.append, should_stop=lambda: cancel.cancelled)
    cancel.check()
