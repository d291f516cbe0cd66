"""``planner.kept.KeptByJob``: what plans and serving sizings keep between calls, job by job."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from advisor.planner.kept import KeptByJob


def test_a_job_keeps_its_value_only_with_the_very_objects_it_rests_on():
    kept = KeptByJob(2, dict)
    fit, other_fit = [1.0], [1.0]  # equal, not the same object: another fit put in force
    a = kept.get(("job-a",), fit)
    assert kept.get(("job-a",), fit) is a
    assert kept.get(("job-a",), other_fit) is not a  # equal is not enough: a fit read again starts anew
    assert kept.get(("job-b",), fit) is not kept.get(("job-a",), fit)


def test_the_least_recently_asked_job_goes_first_beyond_the_size():
    kept = KeptByJob(2, dict)
    rests = object()
    a, b = kept.get(("a",), rests), kept.get(("b",), rests)
    assert kept.get(("a",), rests) is a  # a asked again: b is now the least recent
    kept.get(("c",), rests)
    assert len(kept) == 2 and kept.get(("a",), rests) is a and kept.get(("b",), rests) is not b
    kept.clear()
    assert len(kept) == 0 and kept.get(("a",), rests) is not a


def test_threads_asking_one_job_at_once_share_one_value():
    kept = KeptByJob(4, dict)
    rests = object()
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda _: kept.get(("job",), rests), range(64)))
    assert all(v is got[0] for v in got)
