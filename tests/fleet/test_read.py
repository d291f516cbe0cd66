"""The fleet's reader: the advisor's endpoint and NVIDIA's DCGM exporter read to one model; what a node or a
Prometheus server sends is bounded and validated."""

from __future__ import annotations

import json

import pytest

from advisor.fleet.read import (
    MAX_SCRAPE_BYTES,
    FleetReadError,
    reading_from_samples,
    samples_from_query,
    samples_from_text,
)
from advisor.fleet.simulated import SimulatedNode

# As NVIDIA's dcgm-exporter writes it (etc/default-counters.csv names; modelName label; no vendor label).
DCGM_TEXT = b"""# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).
# TYPE DCGM_FI_DEV_FB_USED gauge
DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-abc",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx1"} 1024
DCGM_FI_DEV_FB_USED{gpu="1",UUID="GPU-def",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx1"} 0
# HELP DCGM_FI_DEV_FB_FREE Framebuffer memory free (in MiB).
# TYPE DCGM_FI_DEV_FB_FREE gauge
DCGM_FI_DEV_FB_FREE{gpu="0",UUID="GPU-abc",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx1"} 80000
DCGM_FI_DEV_FB_FREE{gpu="1",UUID="GPU-def",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx1"} 81024
# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Total energy consumption since boot (in mJ).
# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0",UUID="GPU-abc",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx1"} 5000
# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-abc",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx1"} 97
DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-def",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx1"} 1e9
"""


def test_dcgm_exporter_text_reads_to_the_model():
    r = reading_from_samples(samples_from_text(DCGM_TEXT))
    assert r.hostname == "dgx1"
    g0, g1 = r.gpus
    assert (g0.index, g0.name, g0.uuid, g0.vendor) == (0, "NVIDIA H100 80GB HBM3", "GPU-abc", "nvidia")
    assert g0.mem_used_bytes == 1024 * 2**20  # MiB -> bytes
    assert g0.mem_total_bytes == (1024 + 80000) * 2**20  # used + free: the defaults have no total
    assert g0.mem_free_bytes == 80000 * 2**20
    assert g0.energy_j == 5.0  # 5000 mJ
    assert g0.util_pct == 97.0
    assert g1.util_pct is None  # 1e9 % is not a reading: dropped, not clipped
    assert r.processes == ()  # the DCGM exporter has no per-process books outside Kubernetes


def test_the_advisors_endpoint_reads_back_to_the_monitors_figures():
    node = SimulatedNode("8xh100-sxm")
    node.advance(1.0)
    last = node.sampler.tick()
    r = reading_from_samples(samples_from_text(node.text()))
    assert len(r.gpus) == 8
    for g, s in zip(r.gpus, last.gpus):
        assert abs(g.mem_used_bytes - s.mem_used_bytes) <= 1
        assert g.power_w == pytest.approx(s.power_w) and g.temp_c == pytest.approx(s.temp_c)
        assert g.vendor == "nvidia"
    books = node.keeper.current()
    assert {(p.pid, p.gpu) for p in r.processes} == set(books)
    for p in r.processes:
        b = books[(p.pid, p.gpu)]
        assert p.energy_j == pytest.approx(b.energy_j) and p.gpu_seconds == pytest.approx(b.gpu_hours * 3600)
        assert p.running


@pytest.mark.parametrize("raw", [b"{not metrics", b"DCGM_FI_DEV_GPU_UTIL{gpu=\"0\" 5\n", b"\xff\xfe\x00garbage{{{"])
def test_text_that_is_not_the_format_is_one_error(raw):
    with pytest.raises(FleetReadError, match="not Prometheus metrics text"):
        samples_from_text(raw)


def test_oversized_answers_are_refused():
    with pytest.raises(FleetReadError, match="over 4 MiB"):
        samples_from_text(b"#" * (MAX_SCRAPE_BYTES + 1))


def test_hostile_labels_are_inert_and_bounded():
    text = ('DCGM_FI_DEV_GPU_UTIL{gpu="0",modelName="\\u001b]0;pwned\\u0007 <b>x</b>' + "L" * 5000 + '",Hostname="h"} 5\n'
            'DCGM_FI_DEV_GPU_UTIL{gpu="99999999999",Hostname="h"} 5\n'
            'DCGM_FI_DEV_GPU_UTIL{gpu="-1",Hostname="h"} 5\n'
            'DCGM_FI_DEV_GPU_UTIL{gpu="1",Hostname="h"} NaN\n'
            'advisor_process_running{pid="0",gpu="0"} 1\n'
            'advisor_process_running{pid="abc",gpu="0"} 1\n')
    r = reading_from_samples(samples_from_text(text.encode()))
    assert [g.index for g in r.gpus] == [0, 1]  # out-of-range and negative GPU indices ignored
    assert r.gpus[1].util_pct is None  # NaN dropped
    assert len(r.gpus[0].name) <= 200 and "\x1b" not in r.gpus[0].name
    assert r.processes == ()  # pid 0 and a pid that is not a number ignored


def _answer(result, status="success"):
    return json.dumps({"status": status, "data": {"resultType": "vector", "result": result}}).encode()


def test_prometheus_answer_is_validated():
    good = _answer([{"metric": {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "0", "instance": "a:9400"},
                     "value": [1.7e9, "42"]},
                    {"metric": {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "1"}, "value": [1.7e9, "not a number"]},
                    {"metric": "nonsense", "value": [1]}])
    assert samples_from_query(good) == [("DCGM_FI_DEV_GPU_UTIL", {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "0",
                                                                  "instance": "a:9400"}, 42.0)]
    with pytest.raises(FleetReadError, match="the query failed: bad_data"):
        samples_from_query(json.dumps({"status": "error", "error": "bad_data"}).encode())
    with pytest.raises(FleetReadError, match="not an instant vector"):
        samples_from_query(json.dumps({"status": "success", "data": {"resultType": "matrix", "result": []}}).encode())
    with pytest.raises(FleetReadError, match="not JSON"):
        samples_from_query(b"[" * 100_000)


_NAMES = ["DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_POWER_USAGE",
          "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "advisor_process_energy_joules_total", "advisor_process_running",
          "advisor_process_memory_bytes", "other_metric"]


def test_any_samples_give_a_reading_within_bounds():
    """Property: whatever labels and values a node sends, the reader never raises, and every figure it keeps is
    within its physical bound (hypothesis)."""
    import math

    from hypothesis import example, given, settings
    from hypothesis import strategies as st

    from advisor.fleet.read import BOUNDS, MAX_GPUS_PER_NODE, PROCESS_BOUNDS

    label = st.one_of(st.text(max_size=30), st.integers(-5, 300).map(str), st.none())
    sample = st.tuples(st.sampled_from(_NAMES),
                       st.fixed_dictionaries({}, optional={"gpu": label, "pid": label, "UUID": label,
                                                           "modelName": label, "Hostname": label, "user": label}),
                       st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-2**70, 2**70)))

    @settings(max_examples=200, deadline=None)
    @given(st.lists(sample, max_size=40))
    @example([("DCGM_FI_DEV_GPU_UTIL", {"gpu": "\u00b2"}, 1.0)])  # a superscript digit: isdigit(), not int()
    def check(samples):
        samples = [(n, {k: v for k, v in lab.items() if v is not None}, v) for n, lab, v in samples]
        r = reading_from_samples(samples)
        for g in r.gpus:
            assert 0 <= g.index < MAX_GPUS_PER_NODE
            for field, (lo, hi) in BOUNDS.items():
                v = getattr(g, field, None)
                assert v is None or (math.isfinite(v) and lo <= v <= hi)
        for p in r.processes:
            assert 0 < p.pid < 2**31
            for field, (lo, hi) in PROCESS_BOUNDS.items():
                v = getattr(p, field, None)
                if field != "running":
                    assert v is None or (math.isfinite(v) and lo <= v <= hi)

    check()
