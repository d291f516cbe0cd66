"""Host memory bandwidth: STREAM-style copy, scale, add and triad on all physical cores.

Method (docs/method.md, after McCalpin's STREAM): three preallocated arrays of random data, each at least
4x the last-level cache and 256 MB; every kernel writes into a preallocated output (``out=``), so no
allocation is timed; warm-up by time; many repetitions; the best and median in decimal GB/s.
Bytes counted per element: copy 2, scale 2, add 3, triad 3 (``a = b + s*c`` reads b and c, writes a).

Quick mode (a few seconds, for the CPU target of the planner) times the triad alone, the kernel the
planner uses, on arrays of 4x the last-level cache bounded to 256-640 MB (640 MB = STREAM's 80 million
doubles), filled with ascending numbers rather than random ones (filling is not timed, but random generation
of gigabytes takes seconds; a constant fill would let a host merge identical pages, read from cache),
for at most ``QUICK_BUDGET_S`` of timed repetitions. The headline (``best``) is the best of per-trial medians
(``_common.headline_time``), so one lucky repetition on a busy machine does not make it.
"""

from __future__ import annotations

import time

from advisor.probes._common import (
    GB,
    Timer,
    available_memory_bytes,
    last_level_cache_bytes,
    physical_cores,
    probe,
    rate_result,
    require_torch,
    time_reps,
    torch_threads,
)
from advisor.probes._types import CancelToken, ProbeResult, ProbeSkipped, Progress

NAME = "host-bandwidth"
#: bytes counted per element, in units of the element size (docs/method.md table)
STREAMS = {"copy": 2, "scale": 2, "add": 3, "triad": 3}
SCALAR = 3.0
QUICK_MAX_ARRAY_BYTES = 640 * 10**6  # STREAM's reference size (80 million doubles per array)
QUICK_BUDGET_S = 1.5  # timed triad repetitions in quick mode stop after this long (at least 3)


def kernels(torch, a, b, c):
    """The timed kernels over preallocated arrays: each writes into an existing tensor."""
    return {
        "copy": lambda: c.copy_(a),
        "scale": lambda: torch.mul(c, SCALAR, out=b),
        "add": lambda: torch.add(a, b, out=c),
        "triad": lambda: torch.add(b, c, alpha=SCALAR, out=a),
    }


def default_elements(quick: bool, itemsize: int) -> int:
    """Elements per array: >= 4x the last-level cache and >= 640 MB (full); quick: 4x the cache within
    256 to 640 MB (a virtual machine may report its host's whole L3 as its own)."""
    if quick:
        per_array = min(max(4 * last_level_cache_bytes(), 256 * 10**6), QUICK_MAX_ARRAY_BYTES)
    else:
        per_array = max(4 * last_level_cache_bytes(), 640 * 10**6)
    return per_array // itemsize


@probe(NAME)
def run(device: str = "cpu", quick: bool = False, cancel: CancelToken | None = None, *,
        elements: int | None = None, reps: int | None = None, warmup_s: float | None = None,
        dtype: str = "float64", threads: int | None = None, trials: int | None = None,
        triad_reps: int | None = None, peak_gbps: float | None = None, timer: Timer = time.perf_counter):
    """Measure host memory bandwidth.

    Args:
        device: must be ``"cpu"`` (device memory is the device-bandwidth probe).
        elements: elements per array (default from the cache size, see :func:`default_elements`).
        reps: timed repetitions per kernel per trial (default 10 quick, 20 full).
        warmup_s: warm-up time per kernel.
        dtype: ``float64`` (as STREAM) or ``float32``.
        threads: torch threads (default: all physical cores).
        trials: rounds over all kernels; the best over all rounds is kept (default 1 quick, 4 full).
        triad_reps: repetitions of the triad per trial (default ``reps`` quick, 2.5x ``reps`` full): the
            headline kernel gets more samples, so a busy machine's quiet moments are caught.
        peak_gbps: the machine's physical memory bandwidth when known (channels x transfer rate x 8 bytes):
            a figure above it is refused with a note (``_types.refuse_impossible``).
        timer: clock for the timed calls (tests inject a fake one).
    Returns:
        ProbeResult with kernels copy, scale, add, triad in GB/s.
    """
    if device != "cpu":
        raise ProbeSkipped("host-bandwidth measures host memory: use --device cpu "
                           "(the device-bandwidth probe measures GPU memory)")
    torch = require_torch()
    tdtype = {"float64": torch.float64, "float32": torch.float32}[dtype]
    itemsize = torch.empty((), dtype=tdtype).element_size()
    n = int(elements or default_elements(quick, itemsize))
    need = 3 * n * itemsize
    avail = available_memory_bytes()
    if avail is not None and need > 0.6 * avail:
        n = int(0.6 * avail / 3 / itemsize)
        if n * itemsize < 64 * 10**6:
            raise ProbeSkipped(f"not enough free host memory for the arrays: {avail / GB:.1f} GB available")
    reps = int(reps or (30 if quick else 20))
    trials = int(trials or (1 if quick else 4))
    triad_reps = int(triad_reps or (reps if quick else int(2.5 * reps)))
    warmup_s = 0.1 if quick and warmup_s is None else (0.3 if warmup_s is None else warmup_s)
    nthreads = int(threads or physical_cores())

    yield Progress(0.0, f"allocating 3 x {n * itemsize / GB:.2f} GB of {'ascending' if quick else 'random'} {dtype}")
    names = ("triad",) if quick else tuple(STREAMS)
    times: dict[str, list[float]] = {k: [] for k in names}
    with torch_threads(torch, nthreads):
        if quick:  # filled in parallel by torch (first touch on every thread), as STREAM does; every page holds
            # distinct values: a guard, since a page of one constant can be merged with its copies by a host (KSM,
            # zero pages) and merged pages read from cache, not memory
            a = torch.arange(n, dtype=tdtype)
            b = torch.arange(1, n + 1, dtype=tdtype)
            c = torch.arange(2, n + 2, dtype=tdtype)
        else:
            a = torch.rand(n, dtype=tdtype)
            b = torch.rand(n, dtype=tdtype)
            c = torch.rand(n, dtype=tdtype)
        try:
            calls = {k: v for k, v in kernels(torch, a, b, c).items() if k in names}
            steps = trials * len(calls)
            for t in range(trials):
                for i, (name, fn) in enumerate(calls.items()):
                    yield Progress((t * len(calls) + i) / steps, f"{name}: trial {t + 1}/{trials}")
                    n_reps = triad_reps if name == "triad" else reps
                    times[name] += time_reps(fn, reps=n_reps, warmup_s=warmup_s, cancel=cancel, timer=timer,
                                             budget_s=QUICK_BUDGET_S if quick else None)
        finally:
            del a, b, c
    results = {name: rate_result(STREAMS[name] * itemsize * n, ts, GB, "GB/s", peak=peak_gbps,
                                 bytes_per_call=STREAMS[name] * itemsize * n)
               for name, ts in times.items()}
    return ProbeResult(
        probe=NAME, device=device, results=results,
        peak={"GB/s": peak_gbps, "origin": "given"} if peak_gbps else None,
        params={"quick": quick, "elements": n, "array_bytes": n * itemsize, "dtype": dtype, "reps": reps,
                "triad_reps": triad_reps, "trials": trials, "threads": nthreads, "warmup_s": warmup_s},
        notes=("decimal GB/s; copy/scale count 2 arrays, add/triad 3; best of the per-trial medians",)
        + (("quick: the triad only, on arrays of at most 640 MB",) if quick else ()))
