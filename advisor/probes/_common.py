"""Helpers every probe uses: the generator wrapper, honest timing, torch and device checks, host facts."""

from __future__ import annotations

import contextlib
import datetime as _dt
import functools
import gc
import math
import os
import re
import statistics
import sys
import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import replace
from pathlib import Path

from advisor.probes._types import CancelToken, KernelResult, ProbeResult, ProbeSkipped, Progress, refuse_impossible

Timer = Callable[[], float]
GB = 1e9
TFLOP = 1e12


def now_iso() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def probe(name: str):
    """Turn a generator body into a probe: skip reasons become results, out-of-memory becomes a skip.

    The body is called as ``body(device=, quick=, cancel=, **params)`` and returns a ProbeResult.
    """
    def deco(body):
        @functools.wraps(body)
        def run(device: str = "cpu", quick: bool = False, cancel: CancelToken | None = None, **params
                ) -> Generator[Progress, None, ProbeResult]:
            cancel = cancel or CancelToken()
            started, t0 = now_iso(), time.perf_counter()
            try:
                cancel.check()
                yield Progress(0.0, f"starting on {device}")
                result = yield from body(device=device, quick=quick, cancel=cancel, **params)
            except ProbeSkipped as exc:
                result = ProbeResult(probe=name, device=device, skipped=str(exc),
                                     params={"quick": quick, **_plain(params)})
            except (MemoryError, RuntimeError) as exc:
                if not is_oom(exc):
                    raise
                result = ProbeResult(probe=name, device=device, params={"quick": quick, **_plain(params)},
                                     skipped=f"not enough memory on {device}: {str(exc).splitlines()[0][:160]}")
            finally:
                gc.collect()
                _empty_cuda_cache()
            yield Progress(1.0, "done")
            return replace(refuse_impossible(result), started_at=started,
                           duration_s=round(time.perf_counter() - t0, 3))
        run.probe_name = name
        return run
    return deco


def _plain(params: dict) -> dict:
    return {k: v for k, v in params.items() if isinstance(v, (int, float, str, bool, list, tuple, type(None)))}


def is_oom(exc: BaseException) -> bool:
    """Whether an exception is an out-of-memory failure (CPU or GPU)."""
    if isinstance(exc, MemoryError):
        return True
    text = str(exc).lower()
    return "out of memory" in text or "can't allocate memory" in text or "cannot allocate memory" in text


def _empty_cuda_cache() -> None:
    torch = __import__("sys").modules.get("torch")
    if torch is not None:
        try:
            if torch.cuda.is_initialized():
                torch.cuda.empty_cache()
        except Exception:  # noqa: BLE001 - freeing is best effort after a failure
            pass


def require_torch():
    """Import torch for a probe, or skip with a plain reason."""
    try:
        import torch
    except ImportError:
        if getattr(sys, "frozen", False):
            raise ProbeSkipped("this packaged app is built without torch, so probes cannot run here: install the "
                               "Python package with probes (pip install 'hardware-advisor[probes]') or rebuild the "
                               "app with ADVISOR_FREEZE_TORCH=1 packaging/build_frozen.sh") from None
        raise ProbeSkipped("torch is not installed: install the probes extra "
                           "(pip install 'hardware-advisor[probes]')") from None
    return torch


_DEVICE_RE = re.compile(r"^(cpu|cuda)(?::(\d+))?$")


def parse_device(device: str) -> tuple[str, int | None]:
    """Split ``"cuda:1"`` into ``("cuda", 1)``.

    Raises:
        ValueError: not ``cpu``, ``cuda`` or ``cuda:N``.
    """
    m = _DEVICE_RE.match(device or "")
    if not m:
        raise ValueError(f"device must be cpu or cuda:N, not {device!r}")
    kind, index = m.group(1), m.group(2)
    if kind == "cpu":
        if index is not None:
            raise ValueError(f"device must be cpu or cuda:N, not {device!r}")
        return "cpu", None
    return "cuda", int(index or 0)


def resolve_device(torch, device: str):
    """The torch.device for ``device``, or skip when it is not there.

    Raises:
        ProbeSkipped: CUDA asked for but torch has no CUDA, no GPU is visible, or the index is out of range.
    """
    kind, index = parse_device(device)
    if kind == "cpu":
        return torch.device("cpu")
    if not torch.backends.cuda.is_built():
        raise ProbeSkipped(f"no GPU support: this torch ({torch.__version__}) is a CPU-only build")
    if not torch.cuda.is_available():
        raise ProbeSkipped("no CUDA GPU is visible (no NVIDIA driver or no device)")
    count = torch.cuda.device_count()
    if index >= count:
        raise ProbeSkipped(f"no such GPU: cuda:{index} (this machine has {count})")
    return torch.device("cuda", index)


def require_cuda(device: str, what: str) -> None:
    """Skip on a CPU device for probes that measure a GPU path."""
    if parse_device(device)[0] != "cuda":
        raise ProbeSkipped(f"{what} needs a GPU: run with --device cuda:N")


def physical_cores() -> int:
    """Physical cores this process may run on (hyper-threads counted once)."""
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)
    cores = set()
    for cpu in cpus:
        base = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology")
        try:
            cores.add((base.joinpath("physical_package_id").read_text().strip(),
                       base.joinpath("core_id").read_text().strip()))
        except OSError:
            return max(1, len(cpus))
    return max(1, len(cores))


def available_memory_bytes() -> int | None:
    """Host memory available to a new allocation without swapping (Linux MemAvailable), or None."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def total_memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def last_level_cache_bytes() -> int:
    """Largest CPU cache size from sysfs (32 MiB when unknown)."""
    best = 0
    for f in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        try:
            text = f.read_text().strip().upper()
            mult = {"K": 1024, "M": 1024**2, "G": 1024**3}.get(text[-1], 1)
            best = max(best, int(text.rstrip("KMG")) * mult)
        except (OSError, ValueError):
            continue
    return best or 32 * 1024**2


@contextlib.contextmanager
def torch_threads(torch, n: int):
    """Run torch's intra-op pool on ``n`` threads, restoring the previous count afterwards."""
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield n
    finally:
        torch.set_num_threads(before)


def _timed_call(fn: Callable[[], object], cancel: CancelToken, timer: Timer,
                sync: Callable[[], object] | None) -> float:
    """Seconds of one call of ``fn`` (the device synchronised after it), the cancel token checked first."""
    cancel.check()
    t0 = timer()
    fn()
    if sync:
        sync()
    return timer() - t0


def time_reps(fn: Callable[[], object], *, reps: int, warmup_s: float, cancel: CancelToken,
              timer: Timer = time.perf_counter, sync: Callable[[], object] | None = None,
              budget_s: float | None = None, min_reps: int = 3, first_call: bool = False,
              whole_trials: bool = False) -> list[float]:
    """Warm ``fn`` up by time, then time ``reps`` calls one by one (seconds each).

    The cancel token is checked between calls, so a call must take well under a second.
    ``warmup_s <= 0`` skips the warm-up. ``budget_s`` stops the timed loop early (after ``min_reps``)
    when a slow device would run too long; with ``whole_trials`` only after a multiple of ``min_reps`` calls, where
    one more trial at the pace so far would end past the budget, so the calls split into whole trials of
    ``min_reps`` (``headline_time``'s unit) within about the budget. ``first_call``: one untimed call before the
    timed ones.
    """
    if first_call:
        cancel.check()
        fn()
        if sync:
            sync()
    start = timer()
    while warmup_s > 0:
        cancel.check()
        fn()
        if sync:
            sync()
        if timer() - start >= warmup_s:
            break
    times: list[float] = []
    loop_start = time.perf_counter()
    for i in range(reps):
        times.append(_timed_call(fn, cancel, timer, sync))
        if budget_s is None or i + 1 < min_reps:
            continue
        spent = time.perf_counter() - loop_start
        if not whole_trials:
            if spent > budget_s:
                break
        elif (i + 1) % min_reps == 0 and spent + spent / (i + 1) * min_reps > budget_s:
            break  # the next whole trial would end past the budget: stop before it, not inside it
    return times


def cuda_time_reps(torch, fn: Callable[[], object], *, reps: int, warmup_s: float, cancel: CancelToken,
                   inner: int = 1, budget_s: float | None = None, min_reps: int = 3) -> list[float]:
    """Like :func:`time_reps` on a GPU: CUDA events on the current stream around ``inner`` launches.

    Returns seconds per single call.
    """
    start = time.perf_counter()
    while True:
        cancel.check()
        for _ in range(inner):
            fn()
        torch.cuda.synchronize()
        if time.perf_counter() - start >= warmup_s:
            break
    times: list[float] = []
    loop_start = time.perf_counter()
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for i in range(reps):
        cancel.check()
        begin.record()
        for _ in range(inner):
            fn()
        end.record()
        end.synchronize()
        times.append(begin.elapsed_time(end) / 1e3 / inner)
        if budget_s is not None and i + 1 >= min_reps and time.perf_counter() - loop_start > budget_s:
            break
    return times


TRIAL_REPS = 5  # timed calls per trial for the headline (best of the trials' medians)


def warm_until_steady(fn: Callable[[], object], *, max_s: float, cancel: CancelToken,
                      timer: Timer = time.perf_counter, sync: Callable[[], object] | None = None,
                      group: int = TRIAL_REPS, rise: float = 0.02) -> float:
    """Call ``fn`` (results not kept) until its speed has stopped rising, for at most ``max_s``; returns the seconds
    spent.

    Calls run in groups of ``group``; the warm-up ends at the first group whose median call is not more than
    ``rise`` faster than the fastest group before it (so after two groups at least), or once ``max_s`` has passed.
    A warm-up of fixed length ends too early wherever the first calls are slow for longer than it lasts (a thread
    pool starting, clocks ramping up, a hypervisor backing memory the guest touched for the first time) and
    wastes time where they are not; this one lasts as long as the speed still rises. ``max_s <= 0``: no warm-up.
    """
    if max_s <= 0:
        return 0.0
    start = timer()
    best = math.inf
    while True:
        times = [_timed_call(fn, cancel, timer, sync) for _ in range(group)]
        median = statistics.median(times)
        steady = median >= best * (1 - rise)
        best = min(best, median)
        if steady or timer() - start >= max_s:
            break
    return timer() - start


def headline_time(times: Sequence[float]) -> float:
    """The call time a probe's headline stands on: the best (shortest) of the per-trial medians, trials being
    ``TRIAL_REPS`` consecutive calls (two trials at least when there are 4 calls or more).

    One lucky call on a noisy machine (a neighbour pausing, a page served from a shared cache) does not make
    the headline: a whole trial has to be that fast. Never shorter than the fastest call, never longer than
    the slowest trial's median nor than the median of all calls (so the headline rate is at least the median
    rate); the calls past the last whole trial belong to it.
    """
    good = [t for t in times if t > 0]
    if not good:
        raise ValueError("no positive timings")
    if len(good) < 4:
        return statistics.median(good)
    size = min(TRIAL_REPS, len(good) // 2)
    trials = [good[i:i + size] for i in range(0, len(good) - size + 1, size)]
    trials[-1] = good[(len(trials) - 1) * size:]  # the calls past the last whole trial belong to it: every call counts
    return min(min(statistics.median(t) for t in trials), statistics.median(good))  # never slower than the median


def rate_result(work: float, times: Sequence[float], unit_scale: float, unit: str,
                peak: float | None = None, **extra) -> KernelResult:
    """Figures of a kernel that does ``work`` (bytes or FLOPs) per call from its call times.

    ``best`` is the headline (``headline_time``: the best of per-trial medians); the single fastest call is
    kept as ``fastest`` beside it.

    Args:
        work: bytes moved or FLOPs done by one call, as counted in docs/method.md.
        times: seconds per call.
        unit_scale: 1e9 for GB/s, 1e12 for TFLOP/s.
        peak: the peak in the same unit, for ``fraction_of_peak``.
    """
    good = [t for t in times if t > 0]
    if not good:
        raise ValueError("no positive timings")
    best = work / headline_time(good) / unit_scale
    median = work / statistics.median(good) / unit_scale
    worst = work / max(good) / unit_scale
    frac = best / peak if peak else None
    return KernelResult(best=best, median=median, unit=unit, worst=worst, repetitions=len(good),
                        fraction_of_peak=frac, extra={"fastest": work / min(good) / unit_scale, **extra})


def sync_for(torch, dev) -> Callable[[], None] | None:
    if dev.type == "cuda":
        return lambda: torch.cuda.synchronize(dev)
    return None
