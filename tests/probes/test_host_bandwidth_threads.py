"""Host bandwidth on all physical cores and on one fewer, trial by trial in turn: the headline is the best
per-trial median over both, and the result says which thread count it came from."""

from __future__ import annotations

import pytest

import advisor.probes.host_bandwidth as hb
from advisor.probes import drive, open_probe
from advisor.probes._common import TRIAL_REPS, CancelToken, time_reps


def thread_timer(monkeypatch, seconds_per_call: dict[int, float]):
    """A clock on which each kernel call lasts ``seconds_per_call[threads]``, torch's thread count at the call."""
    import torch

    now = [0.0]
    kernels = hb.kernels

    def timed_kernels(*args):
        def lasting(fn):
            def call():
                fn()
                now[0] += seconds_per_call[torch.get_num_threads()]
            return call
        return {name: lasting(fn) for name, fn in kernels(*args).items()}

    monkeypatch.setattr(hb, "kernels", timed_kernels)

    def clock():
        return now[0]

    clock.now = now  # tests that move the clock themselves (a slow import)
    return clock


def test_thread_counts_are_all_cores_and_one_fewer_unless_given():
    assert hb.thread_counts(2) == (2, 1)
    assert hb.thread_counts(16) == (16, 15)
    assert hb.thread_counts(1) == (1,)
    assert hb.thread_counts(2, given=True) == (2,)


@pytest.mark.parametrize("faster, expected", [(1, 1), (2, 2)])
def test_quick_trials_take_turns_and_the_headline_is_the_faster_count(monkeypatch, faster, expected):
    monkeypatch.setattr(hb, "physical_cores", lambda: 2)
    n = 4096
    per_call = {faster: 1e-3, 3 - faster: 2e-3}  # the faster count's calls take 1 ms, the other's 2 ms
    r = drive(open_probe("host-bandwidth", quick=True, elements=n, reps=4 * TRIAL_REPS, warmup_s=0.0,
                         timer=thread_timer(monkeypatch, per_call)))
    triad = r.results["triad"]
    assert r.params["thread_counts"] == [2, 1] and r.params["triad_threads"] == expected and r.params["trials"] == 4
    assert triad.repetitions == 4 * TRIAL_REPS  # four whole trials: 2, 1, then the faster count twice
    assert triad.best == pytest.approx(3 * 8 * n / 1e-3 / 1e9)  # the 1 ms calls: 24 bytes an element
    assert triad.median == pytest.approx(3 * 8 * n / 1e-3 / 1e9)  # three trials in four at the faster count
    assert triad.worst == pytest.approx(3 * 8 * n / 2e-3 / 1e9)  # and one at the slower


def test_quick_trials_go_two_in_three_to_the_faster_count_so_far():
    fast_one = {2: 2.0, 1: 1.0}
    assert [hb.next_count(k, (2, 1), fast_one) for k in range(11)] == [2, 1, 1, 1, 2, 1, 1, 2, 1, 1, 2]
    fast_two = {2: 1.0, 1: 2.0}
    assert [hb.next_count(k, (2, 1), fast_two) for k in range(8)] == [2, 1, 2, 2, 1, 2, 2, 1]
    assert [hb.next_count(k, (4,), {4: 1.0}) for k in range(4)] == [4, 4, 4, 4]  # one count: all its trials


def test_a_given_thread_count_is_used_alone(monkeypatch):
    monkeypatch.setattr(hb, "physical_cores", lambda: 2)
    r = drive(open_probe("host-bandwidth", quick=True, elements=4096, reps=2 * TRIAL_REPS, warmup_s=0.0, threads=2,
                         timer=thread_timer(monkeypatch, {2: 2e-3, 1: 1e-3})))
    assert r.params["thread_counts"] == [2] and r.params["triad_threads"] == 2
    assert r.results["triad"].best == pytest.approx(3 * 8 * 4096 / 2e-3 / 1e9)


def test_full_trials_alternate_per_kernel(monkeypatch):
    monkeypatch.setattr(hb, "physical_cores", lambda: 2)
    r = drive(open_probe("host-bandwidth", elements=4096, reps=TRIAL_REPS, trials=2, warmup_s=0.0,
                         timer=thread_timer(monkeypatch, {2: 1e-3, 1: 4e-3})))
    assert r.params["triad_threads"] == 2
    for kernel, arrays in hb.STREAMS.items():  # trial 1 on two threads gives every kernel its headline
        assert r.results[kernel].best == pytest.approx(arrays * 8 * 4096 / 1e-3 / 1e9)


@pytest.mark.parametrize("faster", [1, 2])
def test_full_rounds_go_two_in_three_to_the_triads_faster_count(monkeypatch, faster):
    """Four rounds: 2 threads, 1 thread, then the triad's faster count twice; every kernel's calls follow the round."""
    monkeypatch.setattr(hb, "physical_cores", lambda: 2)
    r = drive(open_probe("host-bandwidth", elements=4096, reps=TRIAL_REPS, triad_reps=TRIAL_REPS, trials=4,
                         warmup_s=0.0, timer=thread_timer(monkeypatch, {faster: 1e-3, 3 - faster: 4e-3})))
    assert r.params["triad_threads"] == faster
    for kernel, arrays in hb.STREAMS.items():  # three rounds of 1 ms calls, one of 4 ms: the median call is 1 ms
        k = r.results[kernel]
        assert k.repetitions == 4 * TRIAL_REPS
        assert k.median == pytest.approx(arrays * 8 * 4096 / 1e-3 / 1e9)
        assert k.worst == pytest.approx(arrays * 8 * 4096 / 4e-3 / 1e9)


def test_headline_threads_follows_headline_time_trials():
    times = [2.0] * 5 + [1.0] * 5 + [1.5] * 5
    assert hb.headline_threads(times, [2] * 5 + [1] * 5 + [2] * 5) == 1
    assert hb.headline_threads([], []) is None


def test_whole_trials_stop_only_after_a_multiple_of_the_trial():
    clock = iter(range(10**6))
    calls = []
    got = time_reps(lambda: calls.append(1), reps=23, warmup_s=0.0, cancel=CancelToken(),
                    timer=lambda: next(clock) * 1e-3, budget_s=0.0, min_reps=5, whole_trials=True)
    assert len(got) == 5  # the budget is spent at once: one whole trial
    got = time_reps(lambda: None, reps=7, warmup_s=0.0, cancel=CancelToken(), timer=lambda: next(clock) * 1e-3,
                    budget_s=None, min_reps=5, whole_trials=True)
    assert len(got) == 7  # no budget: every call asked for


def test_whole_trials_end_within_the_budget_at_the_pace_so_far(monkeypatch):
    """10 ms calls, a 0.1 s budget, trials of 5: two trials end at 0.1 s; a third would end past it."""
    import advisor.probes._common as common

    now = [0.0]
    monkeypatch.setattr(common.time, "perf_counter", lambda: now[0])

    def call():
        now[0] += 0.01

    got = time_reps(call, reps=100, warmup_s=0.0, cancel=CancelToken(), timer=lambda: now[0], budget_s=0.1,
                    min_reps=5, whole_trials=True)
    assert len(got) == 10 and got == pytest.approx([0.01] * 10)


@pytest.mark.parametrize("import_s, deadline_s, trials", [
    (0.0, 2.5, 4),   # calls of 0.125 s, trials of 5 (0.625 s): four end by 2.5 s, a fifth would end at 3.125 s
    (1.25, 2.5, 2),  # a slow start (torch's import) leaves time for two
    (0.0, 0.0, 2),   # a deadline past at once: each thread count still timed once
])
def test_quick_trials_end_by_the_deadline_counted_from_the_probe_start(monkeypatch, import_s, deadline_s, trials):
    import torch

    monkeypatch.setattr(hb, "physical_cores", lambda: 2)
    monkeypatch.setattr(hb, "QUICK_DEADLINE_S", deadline_s)
    timer = thread_timer(monkeypatch, {2: 0.125, 1: 0.125})
    monkeypatch.setattr(hb.time, "perf_counter", timer)  # the clock moves only with the calls (and the import)
    now = timer.now

    def slow_import():
        now[0] += import_s
        return torch

    monkeypatch.setattr(hb, "require_torch", slow_import)
    r = drive(open_probe("host-bandwidth", quick=True, elements=4096, warmup_s=0.0))
    assert r.params["trials"] == trials and r.results["triad"].repetitions == trials * TRIAL_REPS
    assert r.params["reps"] == 100  # the deadline, not the count, ended the trials


def test_quick_sets_no_call_apart_beyond_its_warm_up(monkeypatch):
    """Calls of a steady 1 ms: the warm-up ends after two groups of QUICK_WARMUP_GROUP (the second no faster), then
    the trials' calls, each timed: no untimed call before a thread count's first trial."""
    monkeypatch.setattr(hb, "physical_cores", lambda: 2)
    timer = thread_timer(monkeypatch, {2: 1e-3, 1: 1e-3})
    calls = []
    timed_kernels = hb.kernels

    def counted(*args):
        return {name: (lambda fn=fn: (calls.append(1), fn())) for name, fn in timed_kernels(*args).items()}

    monkeypatch.setattr(hb, "kernels", counted)
    r = drive(open_probe("host-bandwidth", quick=True, elements=4096, reps=2 * TRIAL_REPS, warmup_s=0.15,
                         timer=timer))
    assert r.results["triad"].repetitions == 2 * TRIAL_REPS
    assert len(calls) == 2 * hb.QUICK_WARMUP_GROUP + 2 * TRIAL_REPS


@pytest.mark.parametrize("deadline_s, rounds", [
    (100.0, 4),  # time for all four rounds
    (7.5, 3),    # rounds of 2.5 s (4 kernels x 5 calls of 0.125 s): a third ends at 7.5 s, a fourth would at 10 s
    (6.0, 2),
    (0.0, 2),    # a deadline past at once: each thread count's round still run
])
def test_full_rounds_end_by_the_deadline_counted_from_the_probe_start(monkeypatch, deadline_s, rounds):
    monkeypatch.setattr(hb, "physical_cores", lambda: 2)
    monkeypatch.setattr(hb, "FULL_DEADLINE_S", deadline_s)
    timer = thread_timer(monkeypatch, {2: 0.125, 1: 0.125})
    monkeypatch.setattr(hb.time, "perf_counter", timer)  # the clock moves only with the calls
    r = drive(open_probe("host-bandwidth", elements=4096, reps=TRIAL_REPS, triad_reps=TRIAL_REPS, trials=4,
                         warmup_s=0.0, timer=timer))
    assert r.params["trials"] == rounds
    assert all(k.repetitions == rounds * TRIAL_REPS for k in r.results.values())


@pytest.mark.parametrize("paused_clock, trials", [(True, 4), (False, 2)])
def test_a_clock_that_stands_still_while_paused_keeps_the_quick_trials(monkeypatch, paused_clock, trials):
    """The benchmark pauses the probe before each triad trial (the reference runs then): 1 s pauses, calls of
    0.125 s, a 2.5 s deadline. On a clock less the pauses the probe runs the four trials it runs alone
    (test_quick_trials_end_by_the_deadline_counted_from_the_probe_start); on the wall clock only each thread
    count's one."""
    monkeypatch.setattr(hb, "physical_cores", lambda: 2)
    monkeypatch.setattr(hb, "QUICK_DEADLINE_S", 2.5)
    timer = thread_timer(monkeypatch, {2: 0.125, 1: 0.125})
    monkeypatch.setattr(hb.time, "perf_counter", timer)
    now, paused = timer.now, [0.0]
    gen = open_probe("host-bandwidth", quick=True, elements=4096, warmup_s=0.0,
                     clock=(lambda: now[0] - paused[0]) if paused_clock else None)
    try:
        while True:
            if next(gen).message.startswith("triad:"):
                now[0] += 1.0  # the pause: the wall clock moves, the probe does nothing
                paused[0] += 1.0
    except StopIteration as stop:
        r = stop.value
    assert r.params["trials"] == trials and r.results["triad"].repetitions == trials * TRIAL_REPS
