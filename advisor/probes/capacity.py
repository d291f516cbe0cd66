"""Usable memory capacity: how much a job can really allocate.

On a GPU (docs/method.md): read free/total (torch ``mem_get_info``), allocate in shrinking chunks until
out-of-memory, then free everything and empty the cache. The total is capped at the driver's total
(Windows drivers can silently spill into system RAM) and, on unified-memory devices, at a share of
the free host RAM. A device already busy with other processes is not taken unless allowed.
On the CPU it reports what the OS says is available: filling host RAM would wake the OOM killer.
"""

from __future__ import annotations

import time

from advisor.probes._common import GB, available_memory_bytes, parse_device, probe, require_torch, resolve_device, total_memory_bytes
from advisor.probes._types import CancelToken, KernelResult, ProbeResult, ProbeSkipped, Progress

NAME = "capacity"
BUSY_BYTES = 1 << 30  # memory other processes hold (driver's list) above which the device counts as busy
BUSY_UNATTRIBUTED_BYTES = 2 << 30  # without a process list: used - ours, which includes our CUDA context
MIN_CHUNK = 2 << 20
UNIFIED_HOST_SHARE = 0.75


def _gb(x: float) -> KernelResult:
    return KernelResult(best=x / GB, median=x / GB, unit="GB", worst=x / GB, repetitions=1)


@probe(NAME)
def run(device: str = "cpu", quick: bool = False, cancel: CancelToken | None = None, *,
        allow_busy: bool = False, chunk_bytes: int | None = None, limit_bytes: int | None = None):
    """Measure usable memory on ``device``.

    Args:
        allow_busy: take a GPU that other processes already use (the GUI asks the user first).
        chunk_bytes: first allocation chunk (default 1 GiB; halves on each out-of-memory).
        limit_bytes: stop after allocating this much (tests; default: the driver's total).
    Returns:
        ProbeResult with ``usable`` (allocated before out-of-memory), ``free`` and ``total`` in GB.
    """
    kind, _ = parse_device(device)
    if kind == "cpu":
        total, avail = total_memory_bytes(), available_memory_bytes()
        if not total or avail is None:
            raise ProbeSkipped("the OS does not report host memory figures")
        yield Progress(0.5, "reading host memory figures")
        return ProbeResult(
            probe=NAME, device=device, results={"usable": _gb(avail), "free": _gb(avail), "total": _gb(total)},
            params={"quick": quick, "method": "os-report"},
            notes=("host memory: the OS's available figure, not allocated to the limit "
                   "(filling host RAM would start the out-of-memory killer)",))
    torch = require_torch()
    dev = resolve_device(torch, device)
    torch.cuda.synchronize(dev)
    free, total = torch.cuda.mem_get_info(dev)
    from advisor.probes._device_info import cuda_facts, other_processes_bytes

    others = other_processes_bytes(cuda_facts(torch, dev).nvml_index)
    limit = BUSY_BYTES
    if others is None:
        others, limit = total - free - torch.cuda.memory_reserved(dev), BUSY_UNATTRIBUTED_BYTES
    if others > limit and not allow_busy:
        raise ProbeSkipped(f"{device} is busy: {others / GB:.1f} GB used by other processes; "
                           "allow it explicitly (--yes) to measure anyway")
    cap = total
    unified = bool(getattr(torch.cuda.get_device_properties(dev), "is_integrated", False))
    if unified:
        host = available_memory_bytes()
        if host:
            cap = min(cap, int(host * UNIFIED_HOST_SHARE))
    if limit_bytes:
        cap = min(cap, int(limit_bytes))
    chunk = int(chunk_bytes or 1 << 30)
    blocks = []
    got = 0
    t0 = time.perf_counter()
    try:
        while chunk >= MIN_CHUNK and got < cap:
            cancel.check()
            size = min(chunk, cap - got)
            try:
                blocks.append(torch.empty(size, dtype=torch.uint8, device=dev))
                got += size
            except torch.cuda.OutOfMemoryError:
                chunk //= 2
                continue
            yield Progress(min(got / max(free, 1), 0.99), f"allocated {got / GB:.2f} GB")
        torch.cuda.synchronize(dev)
    finally:
        blocks.clear()
        torch.cuda.empty_cache()
    notes = ["usable = bytes allocated in shrinking chunks until out-of-memory (GB = 1e9 bytes)"]
    if unified:
        notes.append(f"unified memory: capped at {UNIFIED_HOST_SHARE:.0%} of free host RAM")
    if got >= cap and cap == total:
        notes.append("reached the driver's total: capped there so drivers cannot spill into host RAM")
    return ProbeResult(
        probe=NAME, device=device, results={"usable": _gb(got), "free": _gb(free), "total": _gb(total)},
        params={"quick": quick, "method": "allocate-until-oom", "first_chunk_bytes": int(chunk_bytes or 1 << 30),
                "allow_busy": allow_busy},
        details={"other_processes_bytes": others, "allocate_s": round(time.perf_counter() - t0, 3),
                 "unified_memory": unified}, notes=tuple(notes))
