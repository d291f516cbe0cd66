"""All-reduce: the busbw formula, and a real run with two gloo ranks on loopback."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from advisor.probes import drive, open_probe
from advisor.probes.allreduce import bus_bandwidth, default_sizes


@pytest.mark.parametrize("ranks,factor", [(1, 0.0), (2, 1.0), (4, 1.5), (8, 1.75)])
def test_busbw_factor(ranks, factor):
    assert bus_bandwidth(10.0, ranks) == pytest.approx(10.0 * factor)


@given(st.floats(min_value=1e-6, max_value=1e6), st.integers(min_value=2, max_value=4096))
def test_busbw_between_algbw_and_twice(algbw, ranks):
    bus = bus_bandwidth(algbw, ranks)
    assert algbw <= bus < 2 * algbw


def test_busbw_rejects_no_ranks():
    with pytest.raises(ValueError):
        bus_bandwidth(1.0, 0)


def test_default_sweep_is_x4_from_4k():
    sizes = default_sizes("cpu", True)
    assert sizes[0] == 4096 and sizes[-1] == 16 << 20
    assert all(b == 4 * a for a, b in zip(sizes, sizes[1:]))


def test_two_gloo_ranks_on_loopback():
    sizes = [4096, 1 << 18]
    r = drive(open_probe("allreduce", sizes=sizes, iters=3, warmup=1))
    assert r.skipped is None, r.skipped
    assert r.params["backend"] == "gloo" and r.params["ranks"] == 2 and r.params["launch"] == "local-loopback"
    sweep = r.details["table"]
    assert [row["size_bytes"] for row in sweep] == sizes
    assert [x for x, _ in r.details["sweep"]["busbw"]] == sizes
    for row in sweep:
        assert row["algbw_best"] >= row["algbw_median"] > 0
        assert row["busbw_best"] == pytest.approx(row["algbw_best"])  # 2(n-1)/n = 1 for n = 2
    assert r.results["busbw"].best == pytest.approx(r.results["algbw"].best)
    assert r.results["algbw"].best == pytest.approx(sweep[-1]["algbw_best"])
    assert r.results["algbw"].repetitions == 3


def test_a_failing_rank_gives_its_message(monkeypatch, tmp_path):
    import advisor.probes.allreduce as ar

    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'warning: noise' >&2\necho 'RuntimeError: rendezvous failed' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setattr(ar.sys, "executable", str(fake))
    r = drive(open_probe("allreduce", sizes=[4096], iters=1))
    assert r.skipped == "an all-reduce rank failed: RuntimeError: rendezvous failed"


RANK_SCRIPT = """
import json, sys
from advisor.probes import drive, open_probe
r = drive(open_probe("allreduce", sizes=[4096, 65536], iters=2, warmup=1))
print(json.dumps({"skipped": r.skipped, "launch": r.params.get("launch"), "ranks": r.params.get("ranks"),
                  "sizes": [row["size_bytes"] for row in r.details.get("table", [])]}))
"""


@pytest.mark.slow
def test_under_torchrun_each_process_is_a_rank(tmp_path):
    import os
    import subprocess
    import sys

    from advisor.probes.allreduce import free_port

    script = tmp_path / "rank.py"
    script.write_text(RANK_SCRIPT)
    env = {**os.environ, "GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
                          "--master-addr", "127.0.0.1", "--master-port", str(free_port()), str(script)],
                         capture_output=True, text=True, timeout=180, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    # both ranks print to one pipe: their lines may run together ("{...}{...}\n\n"), so read documents, not lines
    docs, text, decoder = [], out.stdout, json.JSONDecoder()
    i = text.find("{")
    while i != -1:
        doc, end = decoder.raw_decode(text, i)
        docs.append(doc)
        i = text.find("{", end)
    assert len(docs) == 2
    for doc in docs:
        assert doc == {"skipped": None, "launch": "torchrun", "ranks": 2, "sizes": [4096, 65536]}
