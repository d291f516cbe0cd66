"""Host memory bandwidth: STREAM-style copy, scale, add and triad on all physical cores and on one fewer.

Method (docs/method.md, after McCalpin's STREAM): three preallocated arrays, each at least 4x the last-level
cache and 640 MB (full), filled in parallel by torch with ascending numbers (every page written by the fill, so
no first touch is timed; every page distinct, since a page of one constant can be merged with its copies by a
host, KSM or the zero page, and merged pages read from cache); every kernel writes into a preallocated output
(``out=``), so no allocation is timed; a warm-up until the speed stops rising (``warm_until_steady``); timed
repetitions within a time budget per kernel and trial; the best and median in decimal GB/s. Bytes counted per
element: copy 2, scale 2, add 3, triad 3 (``a = b + s*c`` reads b and c, writes a). As in STREAM, the read of the
written array that the cache makes before writing it (write-allocate: 4 arrays of traffic for the triad) is not
counted, nor avoided: ATen's stores are ordinary ones, as a compiled triad's are unless it asks for streaming
stores.

The headline (``best``) is the best of per-trial medians (``_common.headline_time``), so one lucky repetition on a
busy machine does not make it. Trials run on all physical cores and on one fewer (``thread_counts``; each count
once, then the faster so far two trials in three, ``next_count``): where other processes hold a core, a thread
waiting for its turn holds up each call. The full probe takes about 20 s: its
repetitions stop at a time budget (``FULL_BUDGET_S``, at least one headline trial of ``TRIAL_REPS`` calls each), and
its rounds of kernels at a deadline (``FULL_DEADLINE_S``, each thread count's round once at least), so
a machine whose memory is busy gives fewer samples, not a longer probe (fixed counts of 20 to 50 calls of 1.9 GB
took 113 s on a two-core machine whose memory other processes kept busy), and random numbers are not generated
(torch fills random numbers on one thread: 4.4 s for the three arrays there).

Quick mode (a few seconds, for the CPU target of the planner) times the triad alone, the kernel the
planner uses, on arrays of 4x the last-level cache bounded to 256-640 MB (640 MB = STREAM's 80 million
doubles), in trials of ``TRIAL_REPS`` calls (each thread count once, then two trials in three on the faster count
so far: ``next_count``) until ``QUICK_DEADLINE_S`` after the probe started (torch's import and the fill included,
each thread count timed once at least): a slow start (torch imported while the disk or the cores are busy, pages
backed slowly by the host) leaves fewer trials instead of a longer probe, and a quick one more trials, so a busy
machine's quiet moments are caught. Its warm-up is short
(``WARMUP_MAX_S``, groups of ``QUICK_WARMUP_GROUP``) and no call is set apart before a thread count's first trial:
the pages are written and the thread pool started by the fill, a trial's median stands a slow call, and a slow
trial cannot make the headline (the best trial does), so warm-up calls only take time from the trials.
"""

from __future__ import annotations

import math
import statistics
import time

from advisor.probes._common import (
    GB,
    TRIAL_REPS,
    Timer,
    available_memory_bytes,
    last_level_cache_bytes,
    physical_cores,
    probe,
    rate_result,
    require_torch,
    time_reps,
    torch_threads,
    warm_until_steady,
)
from advisor.probes._types import CancelToken, ProbeResult, ProbeSkipped, Progress

NAME = "host-bandwidth"
#: bytes counted per element, in units of the element size (docs/method.md table)
STREAMS = {"copy": 2, "scale": 2, "add": 3, "triad": 3}
SCALAR = 3.0
QUICK_MAX_ARRAY_BYTES = 640 * 10**6  # STREAM's reference size (80 million doubles per array)
#: quick mode: no trial starts that would end later than this after the probe started (torch imported, arrays filled)
QUICK_DEADLINE_S = 3.8
QUICK_WARMUP_GROUP = 3  # calls per group of the quick warm-up (it ends at the first group no faster than the best)
# Full mode: timed repetitions of each kernel in each trial stop after this long (at least TRIAL_REPS); the headline
# kernel gets 2.5x the time, as it gets 2.5x the repetitions.
FULL_BUDGET_S = {"copy": 0.6, "scale": 0.6, "add": 0.6, "triad": 1.5}
#: full mode: a round of the kernels after each thread count's first is not started where it would end (at the last
#: round's length) later than this after the probe started: at load 5-6 the four rounds took the probe to 19-26 s
FULL_DEADLINE_S = 24.0
WARMUP_MAX_S = {True: 0.15, False: 1.0}  # quick, full: the longest warm-up (it ends once the speed stops rising)


def kernels(torch, a, b, c):
    """The timed kernels over preallocated arrays: each writes into an existing tensor."""
    return {
        "copy": lambda: c.copy_(a),
        "scale": lambda: torch.mul(c, SCALAR, out=b),
        "add": lambda: torch.add(a, b, out=c),
        "triad": lambda: torch.add(b, c, alpha=SCALAR, out=a),
    }


def fill_arrays(torch, n: int, dtype):
    """The three arrays, ``a = 0, 1, 2, ...``, ``b = a + 1``, ``c = a + 2``: filled in parallel by torch (first touch
    on every thread, as STREAM's fill; every page written before any is timed) with distinct values on every page."""
    return (torch.arange(n, dtype=dtype), torch.arange(1, n + 1, dtype=dtype), torch.arange(2, n + 2, dtype=dtype))


def thread_counts(cores: int, given: bool = False) -> tuple[int, ...]:
    """The thread counts the kernels are timed on, trial by trial in turn: all physical cores, and one fewer.

    torch splits a kernel into one equal share per thread and the call ends when the last share is done, so on a
    machine where other processes hold a core (a shared two-core machine) a thread waiting for its turn holds up
    the whole call: there one thread fewer streams faster than all (one thread of two gave 1.03-1.34 of the
    compiled two-thread triad at load average 3.3-5.0 where two threads gave 0.84-0.90, best trial medians). On a
    quiet machine the trials on all cores give the headline. A count the caller gives is used alone."""
    if given or cores < 2:
        return (cores,)
    return (cores, cores - 1)


def next_count(k: int, counts: tuple[int, ...], best_s: dict[int, float]) -> int:
    """The thread count of trial ``k`` (quick) or of round ``k`` of the kernels (full, by the triad's trials): each
    count once in turn, then the one whose best trial median so far is the shortest (``best_s``: thread count ->
    seconds), except every third trial after those, which goes to the other counts in turn, so a machine whose
    neighbours come or go can still turn the order round. The leader gets two trials in three instead of one in
    two: the headline is the best of its trials, so it is drawn from more."""
    if k < len(counts):
        return counts[k]
    leader = min(counts, key=lambda c: best_s.get(c, math.inf))
    others = [c for c in counts if c != leader]
    j = k - len(counts)
    if others and j % 3 == 2:
        return others[(j // 3) % len(others)]
    return leader


def headline_threads(times: list[float], threads_of: list[int]) -> int | None:
    """The thread count of the trial the headline stands on (``headline_time``'s trials, calls in order)."""
    good = [(t, n) for t, n in zip(times, threads_of) if t > 0]
    if not good:
        return None
    if len(good) < 4:
        return good[0][1]
    size = min(TRIAL_REPS, len(good) // 2)
    trials = [good[i:i + size] for i in range(0, len(good) - size + 1, size)]
    trials[-1] = good[(len(trials) - 1) * size:]
    best = min(trials, key=lambda trial: statistics.median(t for t, _ in trial))
    return statistics.mode(n for _, n in best)


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
        triad_reps: int | None = None, peak_gbps: float | None = None, timer: Timer = time.perf_counter,
        clock: Timer | None = None):
    """Measure host memory bandwidth.

    Args:
        device: must be ``"cpu"`` (device memory is the device-bandwidth probe).
        elements: elements per array (default from the cache size, see :func:`default_elements`).
        reps: the most timed repetitions per kernel per trial (default 100 quick, 20 full); fewer when the
            time ends first (``QUICK_DEADLINE_S``, ``FULL_BUDGET_S``).
        warmup_s: the longest warm-up, before the first timed kernel (default 0.15 s quick, 1 s full); it ends
            once the speed has stopped rising (``warm_until_steady``); 0 for none.
        dtype: ``float64`` (as STREAM) or ``float32``.
        threads: torch threads, used alone (default: all physical cores and one fewer, each once, then the faster
            so far two trials in three, ``next_count``; the result's ``triad_threads`` is the count of the headline
            triad's trial).
        trials: rounds over all kernels, each on one thread count (``next_count``); the best over all rounds is kept
            (default 4 full, fewer where a round would end past ``FULL_DEADLINE_S``; quick mode times trials until
            its deadline, ``QUICK_DEADLINE_S``).
        triad_reps: repetitions of the triad per trial (default ``reps`` quick, 2.5x ``reps`` full): the
            headline kernel gets more samples, so a busy machine's quiet moments are caught.
        peak_gbps: the machine's physical memory bandwidth when known (channels x transfer rate x 8 bytes):
            a figure above it is refused with a note (``_types.refuse_impossible``).
        timer: clock for the timed calls (tests inject a fake one).
        clock: clock for the deadlines (``QUICK_DEADLINE_S``, ``FULL_DEADLINE_S``) and the trials' lengths (default
            ``time.perf_counter``); a caller that pauses the probe between its trials (``bench_probe_host.py`` runs
            the reference's trials there) gives one that stands still while paused, so the probe times as many
            trials as it would alone.
    Returns:
        ProbeResult with kernels copy, scale, add, triad in GB/s.
    """
    clock = clock or time.perf_counter
    started = clock()  # quick mode's deadline counts from here: torch's import and the fill included
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
    reps = int(reps or (100 if quick else 20))
    trials = int(trials or (1 if quick else 4))
    triad_reps = int(triad_reps or (reps if quick else int(2.5 * reps)))
    warmup_s = WARMUP_MAX_S[quick] if warmup_s is None else float(warmup_s)
    nthreads = int(threads or physical_cores())

    # all physical cores, and one fewer (trials alternate): see thread_counts
    counts = thread_counts(nthreads, given=threads is not None)
    yield Progress(0.0, f"allocating 3 x {n * itemsize / GB:.2f} GB of ascending {dtype}")
    names = ("triad",) if quick else tuple(STREAMS)
    times: dict[str, list[float]] = {k: [] for k in names}
    threads_of: dict[str, list[int]] = {k: [] for k in names}  # the thread count of each timed call
    with torch_threads(torch, nthreads):
        a, b, c = fill_arrays(torch, n, tdtype)
        try:
            calls = {k: v for k, v in kernels(torch, a, b, c).items() if k in names}
            yield Progress(0.0, "warming up")
            warmed_s = warm_until_steady(calls[names[0]], max_s=warmup_s, cancel=cancel, timer=timer,
                                         group=QUICK_WARMUP_GROUP if quick else TRIAL_REPS)
            set_up: set[tuple[str, int]] = set()

            def timed(name: str, fn, count: int, n_reps: int, budget_s: float) -> None:
                torch.set_num_threads(count)
                # full: one untimed call before a kernel's first trial on a thread count (its first call sets up its
                # code path); the memory, the threads and the clocks were warmed above. Quick: none, as a trial's
                # median stands one slow call, and under load each such call takes 0.1-0.2 s from the trials
                first = (name, count) not in set_up and warmup_s > 0 and not quick
                set_up.add((name, count))
                got = time_reps(fn, reps=n_reps, warmup_s=0.0, cancel=cancel, timer=timer, budget_s=budget_s,
                                min_reps=min(TRIAL_REPS, n_reps), first_call=first, whole_trials=True)
                times[name] += got
                threads_of[name] += [count] * len(got)

            if quick:
                # trials of TRIAL_REPS calls, the thread counts in turn, each count once at least, then as many as
                # end by the deadline (a trial is not started where the last one's length would take it past), at
                # most ``reps`` calls in all
                start, k, last_s = clock(), 0, 0.0
                deadline = started + QUICK_DEADLINE_S
                best_s: dict[int, float] = {}  # thread count -> its best trial median so far (next_count)
                while len(times["triad"]) < reps and (k < len(counts) or clock() + last_s <= deadline):
                    yield Progress(min(1.0, (clock() - start) / max(deadline - start, 1e-3)),
                                   f"triad: trial {k + 1}")
                    n_trial = min(TRIAL_REPS, reps - len(times["triad"]))
                    count, done = next_count(k, counts, best_s), len(times["triad"])
                    began = clock()
                    timed("triad", calls["triad"], count, n_trial, budget_s=0.0)
                    last_s = clock() - began
                    best_s[count] = min(best_s.get(count, math.inf), statistics.median(times["triad"][done:]))
                    k += 1
                trials = k  # the trials run, for the result's params
            else:
                # each round of the kernels on one thread count: each count once, then the triad's faster count
                # two rounds in three (next_count, by the triad's best trial median so far)
                steps, best_s, last_s = trials * len(calls), {}, 0.0
                for t in range(trials):
                    if t >= len(counts) and clock() + last_s > started + FULL_DEADLINE_S:
                        trials = t  # the rounds run, for the result's params
                        break  # the next round, as long as the last, would end past the deadline
                    began, count = clock(), next_count(t, counts, best_s)
                    for i, (name, fn) in enumerate(calls.items()):
                        yield Progress((t * len(calls) + i) / steps, f"{name}: trial {t + 1}/{trials}")
                        done = len(times[name])
                        timed(name, fn, count, triad_reps if name == "triad" else reps, FULL_BUDGET_S[name])
                        if name == "triad":
                            block = times[name][done:]
                            best_s[count] = min([best_s.get(count, math.inf)] + [
                                statistics.median(block[j:j + TRIAL_REPS]) for j in range(0, len(block), TRIAL_REPS)])
                    last_s = clock() - began
        finally:
            del a, b, c
    results = {name: rate_result(STREAMS[name] * itemsize * n, ts, GB, "GB/s", peak=peak_gbps,
                                 bytes_per_call=STREAMS[name] * itemsize * n)
               for name, ts in times.items()}
    return ProbeResult(
        probe=NAME, device=device, results=results,
        peak={"GB/s": peak_gbps, "origin": "given"} if peak_gbps else None,
        params={"quick": quick, "elements": n, "array_bytes": n * itemsize, "dtype": dtype, "reps": reps,
                "triad_reps": triad_reps, "trials": trials, "threads": nthreads, "thread_counts": list(counts),
                "triad_threads": headline_threads(times["triad"], threads_of["triad"]),
                "warmup_s": warmup_s, "warmed_s": round(warmed_s, 3)},
        notes=("decimal GB/s; copy/scale count 2 arrays, add/triad 3 (write-allocate not counted, as STREAM); "
               "best of the per-trial medians",)
        + (("quick: the triad only, on arrays of at most 640 MB",) if quick else ()))
