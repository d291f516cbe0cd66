"""Host-device transfer: pinned and pageable memory, each direction and both at once, against the PCIe link.

Method (docs/method.md, after nvbandwidth): preallocated buffers of 256 MB to 1 GB, random data, copies
timed with CUDA events, the median and the best. Each copy counts the buffer once; "both" counts both
buffers over the time both copies took on two streams. The link rate is the PCIe line rate of the
link's maximum generation and width (NVML); a link trained below its maximum is flagged.
"""

from __future__ import annotations

from advisor.probes._common import GB, probe, rate_result, require_cuda, require_torch, resolve_device
from advisor.probes._types import CancelToken, ProbeResult, ProbeSkipped, Progress

NAME = "transfer"


@probe(NAME)
def run(device: str = "cpu", quick: bool = False, cancel: CancelToken | None = None, *,
        buffer_bytes: int | None = None, reps: int | None = None, warmup_s: float | None = None):
    """Measure host-to-device and device-to-host copies.

    Returns:
        ProbeResult with kernels ``h2d_pinned``, ``d2h_pinned``, ``both_pinned``, ``h2d_pageable``,
        ``d2h_pageable`` in GB/s, and the PCIe link as the peak.
    """
    require_cuda(device, "host-device transfer")
    torch = require_torch()
    dev = resolve_device(torch, device)
    from advisor.probes._device_info import cuda_facts

    facts = cuda_facts(torch, dev)
    free, _ = torch.cuda.mem_get_info(dev)
    size = int(buffer_bytes or (256 if quick else 1024) * 2**20)
    size = min(size, int(free * 0.25))
    if size < 16 * 2**20:
        raise ProbeSkipped(f"not enough free memory on {device} for transfer buffers ({free / GB:.2f} GB free)")
    reps = int(reps or (10 if quick else 30))
    warmup_s = warmup_s if warmup_s is not None else (0.1 if quick else 0.5)
    n = size // 4
    results = {}
    link = facts.pcie_link_bps() / GB if facts.pcie_link_bps() else None
    host_pin = host_pin2 = host_page = host_page2 = dev_a = dev_b = None
    try:
        yield Progress(0.0, f"allocating {size / 1e6:.0f} MB buffers (pinned and pageable)")
        dev_a = torch.rand(n, device=dev)
        dev_b = torch.rand(n, device=dev)
        host_pin = torch.rand(n).pin_memory()
        host_pin2 = torch.rand(n).pin_memory()
        host_page = torch.rand(n)
        host_page2 = torch.rand(n)
        s1, s2 = torch.cuda.Stream(dev), torch.cuda.Stream(dev)
        cases = {
            "h2d_pinned": (lambda: dev_a.copy_(host_pin, non_blocking=True), size),
            "d2h_pinned": (lambda: host_pin.copy_(dev_a, non_blocking=True), size),
            "both_pinned": (None, 2 * size),
            "h2d_pageable": (lambda: dev_a.copy_(host_page), size),
            "d2h_pageable": (lambda: host_page.copy_(dev_a), size),
        }
        for i, (name, (fn, work)) in enumerate(cases.items()):
            yield Progress(i / len(cases), f"{name}: {size / 1e6:.0f} MB copies")
            if name == "both_pinned":
                times = _time_both(torch, dev, s1, s2, dev_b, host_pin2, dev_a, host_pin, reps, warmup_s, cancel)
            else:
                times = _time_one(torch, dev, fn, reps, warmup_s, cancel)
            per_dir_peak = link * 2 if (link and name == "both_pinned") else link
            results[name] = rate_result(work, times, GB, "GB/s", peak=per_dir_peak, bytes_per_call=work)
    finally:
        del host_pin, host_pin2, host_page, host_page2, dev_a, dev_b
    notes = ["decimal GB/s; each copy counts the buffer once; both_pinned counts both directions"]
    degraded = (facts.pcie_gen_current and facts.pcie_gen_max and facts.pcie_width_current and facts.pcie_width_max
                and (facts.pcie_gen_current, facts.pcie_width_current) < (facts.pcie_gen_max, facts.pcie_width_max))
    if degraded:
        notes.append(f"PCIe link runs at Gen{facts.pcie_gen_current} x{facts.pcie_width_current}, below its maximum "
                     f"Gen{facts.pcie_gen_max} x{facts.pcie_width_max} (an idle GPU may lower the link to save power)")
    peak = None
    if link:
        peak = {"GB/s": link, "origin": "nvml", "pcie_gen": facts.pcie_gen_max, "pcie_width": facts.pcie_width_max,
                "per": "direction"}
    else:
        notes.append("PCIe link unknown (no NVML figures, or the device is not on PCIe)")
    return ProbeResult(probe=NAME, device=device, results=results, peak=peak,
                       params={"quick": quick, "buffer_bytes": size, "reps": reps, "warmup_s": warmup_s},
                       details={"device": facts.to_dict(), "link_degraded": bool(degraded)}, notes=tuple(notes))


def _time_one(torch, dev, fn, reps, warmup_s, cancel):
    import time

    start = time.perf_counter()
    while True:
        cancel.check()
        fn()
        torch.cuda.synchronize(dev)
        if time.perf_counter() - start >= warmup_s:
            break
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        cancel.check()
        torch.cuda.synchronize(dev)
        t0 = time.perf_counter()
        begin.record()
        fn()
        end.record()
        end.synchronize()
        wall = time.perf_counter() - t0
        # pageable copies return only after staging through the driver: the wall clock is the honest time
        times.append(max(begin.elapsed_time(end) / 1e3, 0.0) or wall)
    return times


def _time_both(torch, dev, s1, s2, dev_up, host_up, dev_down, host_down, reps, warmup_s, cancel):
    import time

    def both():
        with torch.cuda.stream(s1):
            dev_up.copy_(host_up, non_blocking=True)
        with torch.cuda.stream(s2):
            host_down.copy_(dev_down, non_blocking=True)

    start = time.perf_counter()
    while True:
        cancel.check()
        both()
        torch.cuda.synchronize(dev)
        if time.perf_counter() - start >= warmup_s:
            break
    times = []
    for _ in range(reps):
        cancel.check()
        torch.cuda.synchronize(dev)
        t0 = time.perf_counter()
        both()
        torch.cuda.synchronize(dev)
        times.append(time.perf_counter() - t0)
    return times
