"""Matmul throughput per precision, against the dense peak.

Method (docs/method.md, after mamf-finder): random operands preallocated, output written in place
(``out=``), warm-up by time, a small sweep of aligned sizes, the best over sizes reported.
FLOPs counted: 2*M*N*K per matmul. fp32 is true fp32 (TF32 off); tf32 is fp32 operands with TF32 on
(GPU only); fp8 uses ``torch._scaled_mm`` on compute capability 8.9+; int8 uses ``torch._int_mm``.
On the CPU the same probe gives the CPU's figures (still in TFLOP/s).
"""

from __future__ import annotations

import contextlib
import time

from advisor.probes._common import (
    TFLOP,
    Timer,
    cuda_time_reps,
    physical_cores,
    probe,
    rate_result,
    require_torch,
    resolve_device,
    time_reps,
    torch_threads,
)
from advisor.probes._types import CancelToken, ProbeResult, Progress

NAME = "matmul"
PRECISIONS = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8")


def default_sizes(kind: str, quick: bool) -> list[int]:
    """Square sizes to try: 4096..16384 on a GPU, small enough on a CPU that one call stays well under a second."""
    if kind == "cuda":
        return [4096, 8192] if quick else [4096, 8192, 12288, 16384]
    return [512, 1024] if quick else [1024, 1536, 2048]


def supported(torch, dev, precision: str) -> str | None:
    """None when the precision can run on ``dev``, else the reason it cannot."""
    if dev.type == "cpu":
        if precision == "tf32":
            return "TF32 is a GPU tensor-core mode"
        if precision == "fp8":
            return "fp8 matmul needs a GPU with compute capability 8.9 or newer"
        return None
    cc = torch.cuda.get_device_capability(dev)
    if precision == "bf16" and cc < (8, 0):
        return f"bf16 tensor cores need compute capability 8.0+ (this GPU is {cc[0]}.{cc[1]})"
    if precision == "tf32" and cc < (8, 0):
        return f"TF32 needs compute capability 8.0+ (this GPU is {cc[0]}.{cc[1]})"
    if precision == "fp8" and (cc < (8, 9) or not hasattr(torch, "_scaled_mm")):
        return f"fp8 needs compute capability 8.9+ and torch._scaled_mm (this GPU is {cc[0]}.{cc[1]})"
    if precision == "int8" and (cc < (7, 5) or not hasattr(torch, "_int_mm")):
        return "int8 matmul needs compute capability 7.5+ and torch._int_mm"
    return None


@contextlib.contextmanager
def _tf32(torch, on: bool):
    before = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = on
    torch.backends.cudnn.allow_tf32 = on
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before


def _operands(torch, dev, precision: str, n: int):
    """(callable doing one matmul into a preallocated output, tensors to free)."""
    if precision in ("fp32", "tf32"):
        a, b = torch.randn(n, n, device=dev), torch.randn(n, n, device=dev)
        out = torch.empty(n, n, device=dev)
        return (lambda: torch.mm(a, b, out=out)), [a, b, out]
    if precision in ("bf16", "fp16"):
        dt = torch.bfloat16 if precision == "bf16" else torch.float16
        a, b = torch.randn(n, n, device=dev, dtype=dt), torch.randn(n, n, device=dev, dtype=dt)
        out = torch.empty(n, n, device=dev, dtype=dt)
        return (lambda: torch.mm(a, b, out=out)), [a, b, out]
    if precision == "int8":
        a = torch.randint(-128, 127, (n, n), device=dev, dtype=torch.int8)
        b = torch.randint(-128, 127, (n, n), device=dev, dtype=torch.int8)
        out = torch.empty(n, n, device=dev, dtype=torch.int32)
        return (lambda: torch._int_mm(a, b, out=out)), [a, b, out]
    if precision == "fp8":
        a = torch.randn(n, n, device=dev).to(torch.float8_e4m3fn)
        b = torch.randn(n, n, device=dev).to(torch.float8_e4m3fn).t()  # column-major second operand
        one = torch.ones((), device=dev, dtype=torch.float32)
        return (lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)), [a, b, one]
    raise ValueError(f"unknown precision {precision!r}")


@probe(NAME)
def run(device: str = "cpu", quick: bool = False, cancel: CancelToken | None = None, *,
        precisions: tuple[str, ...] | list[str] | None = None, sizes: list[int] | None = None,
        reps: int | None = None, warmup_s: float | None = None, timer: Timer = time.perf_counter):
    """Measure matmul throughput for each precision the device supports.

    Args:
        precisions: subset of fp32, tf32, bf16, fp16, fp8, int8 (default: all; fp16/int8 skipped on CPU in quick).
        sizes: square sizes (multiples of 16) to try; the best is reported.
        timer: clock for CPU timing (tests inject a fake one).
    Returns:
        ProbeResult with one kernel per measured precision in TFLOP/s (int8: TOP/s), the dense peak per
        precision where the catalog knows the GPU, and ``details["unsupported"]`` with the reasons.
    """
    torch = require_torch()
    dev = resolve_device(torch, device)
    sizes = [int(s) for s in (sizes or default_sizes(dev.type, quick))]
    if precisions is None:
        precisions = PRECISIONS if (dev.type == "cuda" or not quick) else ("fp32", "bf16")
    unknown = [p for p in precisions if p not in PRECISIONS]
    if unknown:
        raise ValueError(f"unknown precision {unknown[0]!r} (known: {', '.join(PRECISIONS)})")
    reps = int(reps or (5 if quick else 20))
    warmup_s = warmup_s if warmup_s is not None else (0.05 if dev.type == "cpu" and quick else 0.5)
    acc = facts = None
    if dev.type == "cuda":
        from advisor.probes._device_info import catalog_accelerator, cuda_facts

        facts = cuda_facts(torch, dev)
        acc = catalog_accelerator(facts.catalog_id)
    unsupported, results, per_size = {}, {}, {}
    todo = [p for p in precisions if not _note(unsupported, p, supported(torch, dev, p))]
    steps = max(1, len(todo))
    nthreads = physical_cores()
    with torch_threads(torch, nthreads):
        for pi, prec in enumerate(todo):
            best = None
            prec_sizes = sizes if dev.type == "cuda" else _cpu_sizes(torch, dev, prec, sizes, cancel)
            for si, n in enumerate(prec_sizes):
                yield Progress((pi + si / len(prec_sizes)) / steps, f"{prec} {n}x{n}x{n}")
                fn, tensors = _operands(torch, dev, prec, n)
                try:
                    with _tf32(torch, prec == "tf32") if dev.type == "cuda" else contextlib.nullcontext():
                        if dev.type == "cuda":
                            ts = cuda_time_reps(torch, fn, reps=reps, warmup_s=warmup_s, cancel=cancel,
                                                budget_s=3.0)
                        else:
                            ts = time_reps(fn, reps=reps, warmup_s=warmup_s, cancel=cancel, timer=timer,
                                           budget_s=1.5 if quick else 4.0)
                except RuntimeError as exc:
                    if "out of memory" in str(exc).lower():
                        raise
                    unsupported[prec] = f"failed at {n}x{n} on this device: {str(exc).splitlines()[0][:120]}"
                    break
                finally:
                    del fn, tensors
                peak = acc.peak_flops(prec) / TFLOP if acc is not None and acc.peak_flops(prec) else None
                res = rate_result(2.0 * n**3, ts, TFLOP, "TOP/s" if prec == "int8" else "TFLOP/s", peak=peak,
                                  size=n)
                per_size.setdefault(prec, []).append([n, res.best])
                yield Progress((pi + (si + 1) / len(prec_sizes)) / steps, f"{prec} {n}: {res.best:.3f} {res.unit}",
                               point={"series": prec, "x": n, "y": res.best})
                if best is None or res.best > best.best:
                    best = res
            if best is not None:
                results[prec] = best
    peak = None
    if acc is not None:
        peak = {p: acc.peak_flops(p) / TFLOP for p in results if acc.peak_flops(p)}
        peak.update({"unit": "TFLOP/s", "origin": f"catalog:{acc.id} (dense)"})
    notes = ["2*M*N*K FLOPs per matmul; best over the size sweep; dense peaks"]
    if dev.type == "cuda" and acc is not None and acc.kind == "consumer":
        notes.append("GeForce cards run bf16/fp16 with fp32 accumulation at half the marketed tensor rate")
    return ProbeResult(probe=NAME, device=device, results=results, peak=peak,
                       params={"quick": quick, "sizes": sizes, "precisions": list(precisions), "reps": reps,
                               "threads": nthreads, "warmup_s": warmup_s},
                       details={"sweep": per_size, "sweep_x": "matrix size n", "unsupported": unsupported,
                                "device": facts.to_dict() if facts else None}, notes=tuple(notes))


def _cpu_sizes(torch, dev, prec: str, sizes: list[int], cancel: CancelToken, max_call_s: float = 0.25) -> list[int]:
    """The sizes whose single call stays under ``max_call_s`` on this CPU, so cancelling stays prompt.

    A CPU without native bf16/fp16/int8 paths runs them a hundred times slower than fp32.
    """
    n0 = 256
    fn, tensors = _operands(torch, dev, prec, n0)
    try:
        fn()
        cancel.check()
        dt = 1e9
        for _ in range(3):
            t0 = time.perf_counter()
            fn()
            dt = min(dt, max(time.perf_counter() - t0, 1e-6))
    finally:
        del fn, tensors
    rate = 2.0 * n0**3 / dt
    n_max = int((max_call_s * rate / 2) ** (1 / 3)) // 64 * 64
    fit = [n for n in sizes if n <= n_max]
    return fit or [max(128, n_max)]


def _note(unsupported: dict, prec: str, reason: str | None) -> bool:
    if reason:
        unsupported[prec] = reason
    return bool(reason)
