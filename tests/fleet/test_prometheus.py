"""A real Prometheus server (Debian package ``prometheus``; .ci/run installs it) scrapes two advisor exporters on
simulated GPUs; the test reads the per-GPU and per-process series back through Prometheus's HTTP API and
through ``advisor fleet watch --prometheus``."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import pytest

from advisor.fleet.model import DOWN, UP
from advisor.fleet.sources import PrometheusSource
from advisor.fleet.watch import FleetWatcher

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("prometheus") is None,
                                 reason="the prometheus server is not installed (Debian package prometheus; .ci/run "
                                        "installs it)")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _query(base: str, q: str) -> list:
    url = f"{base}/api/v1/query?{urllib.parse.urlencode({'query': q})}"
    with urllib.request.urlopen(url, timeout=5) as r:
        doc = json.load(r)
    assert doc["status"] == "success"
    return doc["data"]["result"]


def _until(fn, timeout_s: float = 45.0, step_s: float = 0.5):
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            value = fn()
            if value:
                return value
        except OSError:
            pass
        if time.monotonic() > deadline:
            return fn()
        time.sleep(step_s)


@pytest.fixture
def prometheus_and_exporters(tmp_path):
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    ports = [_free_port(), _free_port()]
    exporters = [subprocess.Popen([sys.executable, "-m", "advisor", "monitor", "--fake-gpu", sc, "--interval", "0.5",
                                   "--serve-metrics", f"127.0.0.1:{p}"], env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                 for sc, p in zip(("2x4090", "8xh100-sxm"), ports)]
    prom_port = _free_port()
    config = tmp_path / "prometheus.yml"
    targets = ", ".join(f'"127.0.0.1:{p}"' for p in ports)
    config.write_text("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                      f"scrape_configs:\n  - job_name: advisor\n    static_configs:\n      - targets: [{targets}]\n")
    server = subprocess.Popen(["prometheus", f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'data'}",
                               f"--web.listen-address=127.0.0.1:{prom_port}"],
                              stdout=subprocess.DEVNULL, stderr=(tmp_path / "prometheus.log").open("w"))
    try:
        yield f"http://127.0.0.1:{prom_port}", exporters, ports
    finally:
        for p in (server, *exporters):
            p.terminate()
        for p in (server, *exporters):
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def test_prometheus_scrapes_two_exporters_and_the_fleet_reads_them_back(prometheus_and_exporters):
    base, exporters, ports = prometheus_and_exporters
    util = _until(lambda: len(r := _query(base, "DCGM_FI_DEV_GPU_UTIL")) >= 10 and r)
    assert len(util) == 10  # 2 + 8 simulated GPUs, one series each
    by_instance = {}
    for s in util:
        by_instance.setdefault(s["metric"]["instance"], set()).add(s["metric"]["gpu"])
        assert s["metric"]["vendor"] == "nvidia" and s["metric"]["UUID"].startswith("GPU-")
    assert by_instance == {f"127.0.0.1:{ports[0]}": {"0", "1"}, f"127.0.0.1:{ports[1]}": {str(i) for i in range(8)}}
    energy = _until(lambda: _query(base, "advisor_process_energy_joules_total"))
    assert {s["metric"]["instance"] for s in energy} == set(by_instance)
    assert all(float(s["value"][1]) >= 0 for s in energy)
    assert all(s["metric"]["pid"].isdigit() for s in energy)

    w = FleetWatcher(PrometheusSource(base, timeout_s=5.0), interval_s=1.0)
    try:
        view = w.snapshot()
        assert [n.state for n in view.nodes] == [UP, UP]
        assert sorted(len(n.gpus) for n in view.nodes) == [2, 8]
        assert all(n.processes for n in view.nodes)
        assert all(n.age_s is not None and n.age_s < 5 for n in view.nodes)

        exporters[0].terminate()  # the first node dies: Prometheus's next scrape fails (up == 0)
        exporters[0].wait(15)
        dead = f"127.0.0.1:{ports[0]}"
        assert _until(lambda: any(s["metric"]["instance"] == dead and s["value"][1] == "0"
                                  for s in _query(base, "up")), timeout_s=20)
        states = {n.name: n.state for n in w.snapshot().nodes}
        assert states == {dead: DOWN, f"127.0.0.1:{ports[1]}": UP}
    finally:
        w.close()
