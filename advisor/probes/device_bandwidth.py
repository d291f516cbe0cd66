"""Device memory bandwidth: copy, add, triad and read-only, with a size sweep drawn as a curve.

Method (docs/method.md, after BabelStream): preallocated random arrays; kernels write into existing
tensors; warm-up by time; on a GPU, CUDA events around a loop of launches when one call is short.
The sweep goes from cache-resident to DRAM-resident sizes; the reported figures are those of the
largest size. Bytes counted: copy 2 arrays, add and triad 3, read-only (sum) 1. The peak is the
driver's ``max memory clock * bus width * 2 / 8`` (NVML), else the catalog's figure.
"""

from __future__ import annotations

import time

from advisor.probes._common import (
    GB,
    Timer,
    available_memory_bytes,
    cuda_time_reps,
    last_level_cache_bytes,
    physical_cores,
    probe,
    rate_result,
    require_torch,
    resolve_device,
    time_reps,
    torch_threads,
)
from advisor.probes._types import CancelToken, ProbeResult, ProbeSkipped, Progress

NAME = "device-bandwidth"
STREAMS = {"copy": 2, "add": 3, "triad": 3, "read": 1}
SCALAR = 3.0
MIN_CALL_S = 2e-4  # shorter calls are timed in loops so the timer's resolution does not matter


def kernels(torch, a, b, c, s):
    return {
        "copy": lambda: c.copy_(a),
        "add": lambda: torch.add(a, b, out=c),
        "triad": lambda: torch.add(b, c, alpha=SCALAR, out=a),
        "read": lambda: torch.sum(a, dim=0, out=s),
    }


def sweep_sizes(largest_bytes: int, smallest_bytes: int, points: int) -> list[int]:
    """Array sizes (bytes) from smallest to largest on a geometric scale."""
    if points <= 1 or largest_bytes <= smallest_bytes:
        return [largest_bytes]
    ratio = (largest_bytes / smallest_bytes) ** (1 / (points - 1))
    return sorted({int(smallest_bytes * ratio**i) // 4096 * 4096 or 4096 for i in range(points)})


@probe(NAME)
def run(device: str = "cpu", quick: bool = False, cancel: CancelToken | None = None, *,
        largest_bytes: int | None = None, points: int | None = None, reps: int | None = None,
        warmup_s: float | None = None, timer: Timer = time.perf_counter):
    """Measure memory bandwidth of ``device`` over a sweep of array sizes.

    Args:
        largest_bytes: bytes per array at the top of the sweep (default: >= 4x the last-level cache,
            1 GB on a GPU, capped by free memory).
        points: sizes in the sweep (default 4 quick, 8 full).
        reps: timed repetitions per kernel and size.
        timer: clock for CPU timing (tests inject a fake one).
    Returns:
        ProbeResult with kernels copy, add, triad, read in GB/s at the largest size, ``details["sweep"]``
        (kernel -> [[bytes per array, best GB/s], ...]), the peak and, on a GPU, an ``eta_mem`` offer.
    """
    torch = require_torch()
    dev = resolve_device(torch, device)
    dtype = torch.float32
    item = 4
    facts = None
    if dev.type == "cuda":
        from advisor.probes._device_info import cuda_facts

        facts = cuda_facts(torch, dev)
        free, _total = torch.cuda.mem_get_info(dev)
        l2 = int(getattr(torch.cuda.get_device_properties(dev), "L2_cache_size", 0) or 96 * 2**20)
        default_top = max(4 * l2, (256 if quick else 1024) * 10**6)
        cap = int(free * 0.5 / 3)
        smallest = 1 << 20
    else:
        free = available_memory_bytes() or 8 * 10**9
        default_top = max(4 * last_level_cache_bytes(), (256 if quick else 512) * 10**6)
        cap = int(free * 0.3 / 3)
        smallest = 64 * 1024
    top = min(int(largest_bytes or default_top), cap)
    if top < 1 << 20:
        raise ProbeSkipped(f"not enough free memory on {device} for the arrays ({free / GB:.2f} GB free)")
    sizes = sweep_sizes(top, min(smallest, top), int(points or (4 if quick else 8)))
    reps = int(reps or (10 if quick else 30))
    if warmup_s is None:  # an idle GPU needs time to reach full clocks
        warmup_s = (0.1 if quick else 0.3) if dev.type == "cuda" else (0.05 if quick else 0.2)
    sweep: dict[str, list[list[float]]] = {k: [] for k in STREAMS}
    final = {}
    nthreads = physical_cores()
    with torch_threads(torch, nthreads):
        n = top // item
        a = torch.rand(n, dtype=dtype, device=dev)
        b = torch.rand(n, dtype=dtype, device=dev)
        c = torch.rand(n, dtype=dtype, device=dev)
        s = torch.zeros((), dtype=dtype, device=dev)
        try:
            for si, size in enumerate(sizes):
                m = size // item
                calls = kernels(torch, a[:m], b[:m], c[:m], s)
                for ki, (kname, fn) in enumerate(calls.items()):
                    frac = (si * len(calls) + ki) / (len(sizes) * len(calls))
                    yield Progress(frac, f"{kname} at {size / 1e6:.1f} MB per array")
                    work = STREAMS[kname] * item * m
                    inner = _inner_count(torch, dev, fn, timer)
                    if dev.type == "cuda":
                        ts = cuda_time_reps(torch, fn, reps=reps, warmup_s=warmup_s, cancel=cancel, inner=inner,
                                            budget_s=2.0)
                    else:
                        loop = fn if inner == 1 else _looped(fn, inner)
                        ts = [t / inner for t in time_reps(loop, reps=reps, warmup_s=warmup_s, cancel=cancel,
                                                           timer=timer, budget_s=2.0)]
                    res = rate_result(work, ts, GB, "GB/s", bytes_per_array=size, bytes_per_call=work)
                    sweep[kname].append([size, res.best])
                    yield Progress(frac, f"{kname} {res.best:.1f} GB/s at {size / 1e6:.1f} MB",
                                   point={"series": kname, "x": size, "y": res.best})
                    if size == sizes[-1]:
                        final[kname] = res
        finally:
            del a, b, c, s
    peak = calibration = None
    notes = ["decimal GB/s at the largest size; copy counts 2 arrays, add/triad 3, read 1"]
    if facts is not None and facts.mem_peak_bps:
        peak_gbps = facts.mem_peak_bps / GB
        peak = {"GB/s": peak_gbps, "origin": facts.mem_peak_origin}
        final = {k: _with_peak(v, peak_gbps) for k, v in final.items()}
        calibration = {"eta_mem": min(1.0, final["read"].best / peak_gbps), "accelerator_id": facts.catalog_id,
                       "kernel": "read"}
    elif dev.type == "cpu":
        notes.append("no peak for host memory: compare with host-bandwidth and the DIMMs' rated speed")
    else:
        notes.append("memory peak unknown: the driver gave no memory clock or bus width")
    return ProbeResult(
        probe=NAME, device=device, results=final, peak=peak, calibration=calibration,
        params={"quick": quick, "largest_bytes": top, "sizes": sizes, "reps": reps, "dtype": "float32",
                "threads": nthreads, "warmup_s": warmup_s},
        details={"sweep": sweep, "sweep_x": "bytes per array", "device": facts.to_dict() if facts else None}, notes=tuple(notes))


def _with_peak(k, peak):
    from dataclasses import replace

    return replace(k, fraction_of_peak=k.best / peak)


def _looped(fn, inner):
    def loop():
        for _ in range(inner):
            fn()
    return loop


def _inner_count(torch, dev, fn, timer) -> int:
    """Calls per timed sample so that one sample lasts at least MIN_CALL_S."""
    if dev.type == "cuda":
        fn()
        torch.cuda.synchronize(dev)
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize(dev)
        dt = time.perf_counter() - t0
        return 1 if dt >= 5e-5 else min(1000, max(1, int(5e-4 / max(dt, 1e-6))))
    if timer is not time.perf_counter:
        return 1
    t0 = time.perf_counter()
    fn()
    dt = time.perf_counter() - t0
    return 1 if dt >= MIN_CALL_S else min(10000, max(1, int(MIN_CALL_S / max(dt, 1e-7))))
