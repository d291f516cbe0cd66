"""Ring-buffer history: bounded, ordered, windows by time."""

from __future__ import annotations

import math
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.monitor import History, csv_columns, metric_names


def test_window_by_time_and_latest():
    h = History(["a", "b"], capacity=100)
    for k in range(10):
        h.append(k * 0.5, [k, None if k % 2 else k * 10])
    t, a = h.window("a", 2.0)
    assert list(t) == [2.5, 3.0, 3.5, 4.0, 4.5] and list(a) == [5, 6, 7, 8, 9]
    t, b = h.window("b")
    assert len(t) == 10 and math.isnan(b[1]) and b[2] == 20
    assert h.latest("a") == 9 and h.latest("b") is None  # the newest b was not available
    with pytest.raises(KeyError):
        h.window("c")


def test_wraparound_keeps_the_newest_in_order():
    h = History(["x"], capacity=3)
    for k in range(7):
        h.append(float(k), [k * 2])
    t, x = h.window("x")
    assert list(t) == [4.0, 5.0, 6.0] and list(x) == [8, 10, 12]
    assert len(h) == 3 and h.capacity == 3


def test_memory_is_fixed():
    h = History(metric_names(8, 16), capacity=3600)
    size = h._values.nbytes + h._times.nbytes
    for k in range(5000):
        h.append(float(k), [1.0] * len(h.metrics))
    assert h._values.nbytes + h._times.nbytes == size
    assert size == 3600 * 8 * (len(metric_names(8, 16)) + 1)


def test_empty_and_clear_and_bad_rows():
    h = History(["x"], capacity=2)
    assert h.latest("x") is None and len(h.window("x", 5)[0]) == 0
    with pytest.raises(ValueError):
        h.append(0.0, [1, 2])
    with pytest.raises(ValueError):
        History(["x"], capacity=0)
    h.append(0.0, [1])
    h.clear()
    assert len(h) == 0 and "x" in h and "y" not in h


def test_concurrent_reader_sees_whole_rows():
    h = History(["a", "b"], capacity=50)
    stop = threading.Event()

    def writer():
        k = 0
        while not stop.is_set():
            h.append(float(k), [k, k])
            k += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        for _ in range(200):
            ta, a = h.window("a")
            assert np.all(np.diff(ta) > 0)  # ordered, no torn wraparound
    finally:
        stop.set()
        thread.join()


@settings(max_examples=60, deadline=None)
@given(capacity=st.integers(1, 20), n=st.integers(0, 60), seconds=st.one_of(st.none(), st.floats(0, 30)))
def test_window_is_the_tail_of_what_was_appended(capacity, n, seconds):
    h = History(["v"], capacity=capacity)
    for k in range(n):
        h.append(k * 0.5, [k])
    t, v = h.window("v", seconds)
    kept = list(range(max(0, n - capacity), n))
    if seconds is not None and kept:
        kept = [k for k in kept if k * 0.5 >= kept[-1] * 0.5 - seconds - 1e-9]
    assert list(v) == kept and list(t) == [k * 0.5 for k in kept]


def test_a_window_reads_what_it_holds_not_the_whole_ring():
    """An hour at 10 Hz is kept; a minute's chart copies its 601 rows, not the 36,000 (measured with tracemalloc,
    which numpy reports its buffers to): the monitor runs all day, and charts ask for a window several times a
    second per curve."""
    import tracemalloc

    h = History(["a", "b"], capacity=36_000)
    for k in range(36_000 + 1234):  # wrapped: the minute straddles no seam here, the ring is read in two runs
        h.append(k * 0.1, [k, -k])
    tracemalloc.start()
    try:
        t, a = h.window("a", 60.0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(t) == 601 and a[-1] == 36_000 + 1233 and t[0] == pytest.approx(t[-1] - 60.0)
    assert peak < 4 * 601 * 8 + 4096  # the two copies of 601 rows (and the runs' concatenation), not 36,000 rows


def test_names_match_the_contract():
    cols = csv_columns(2)
    for need in ("time_s", "cpu_util_pct", "mem_used_bytes", "gpu0_util_pct", "gpu0_mem_used_bytes",
                 "gpu0_power_w", "gpu0_temp_c", "gpu1_util_pct", "gpu1_power_w"):
        assert need in cols
    assert cols[0] == "time_s" and len(cols) == len(set(cols))
    assert cols[:3] == ("time_s", "wall_time_utc", "simulated")
    assert set(cols[3:]) <= set(metric_names(2, 4)) and "cpu3_util_pct" in metric_names(2, 4)


@settings(max_examples=60, deadline=None)
@given(capacity=st.integers(1, 40), n=st.integers(0, 100), seconds=st.one_of(st.none(), st.floats(0, 30)))
def test_windows_give_every_metric_on_one_time_axis(capacity, n, seconds):
    h = History(("a", "b", "c"), capacity=capacity)
    for k in range(n):
        h.append(k * 0.5, [k, None if k % 3 else -k, 2 * k])
    times, rows = h.windows(("c", "b", "a"), seconds)
    kept = list(range(max(0, n - capacity), n))  # the rows the ring still holds, oldest first
    if seconds is not None and kept:
        kept = [k for k in kept if k * 0.5 >= kept[-1] * 0.5 - seconds - 1e-9]
    assert list(times) == [k * 0.5 for k in kept] and rows.shape == (3, len(kept))
    assert list(rows[0]) == [2 * k for k in kept] and list(rows[2]) == [k for k in kept]
    assert [None if math.isnan(v) else v for v in rows[1]] == [None if k % 3 else -k for k in kept]
    assert h.windows((), seconds)[1].shape == (0, len(kept))
    with pytest.raises(KeyError):
        h.windows(("a", "nope"))
