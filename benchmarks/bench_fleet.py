"""Benchmark the fleet: the exporter's scrape, and the fleet view's cost.

1. One scrape of 16 simulated GPUs with their processes (the ``16xv100`` scenario: 16 GPUs, 33 processes):
   a GET of ``/metrics`` from the exporter's HTTP server (``monitor.exporter.serve``) to the last byte, median
   of 50; target under 20 ms. The collector alone (``exposition``) is reported too.
2. A fleet view of 64 nodes of 8 GPUs (``8xh100-sxm``, 17 processes each) refreshed every second: the
   watcher's process CPU time (every thread: requests, parsing, the model) over 10 refreshes, as a share of
   one core; target under 10 %. The answers come from a server in another process (its CPU is not counted):
   through a Prometheus server's API (the three instant queries of ``--prometheus``: the series they name,
   as Prometheus 2.x formats them), and, reported beside it, by scraping the 64 exporters' texts directly
   (``--scrape``: 64 text parses a second).

Run: python benchmarks/bench_fleet.py [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

NODES, REFRESHES = 64, 10
SCRAPE_TARGET_MS, VIEW_TARGET_PCT = 20.0, 10.0

SERVER = r"""
import sys, urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
root = Path(sys.argv[1])
files = {p.name: p.read_bytes() for p in root.iterdir()}
class H(BaseHTTPRequestHandler):
    def do_GET(self):
        u = urllib.parse.urlsplit(self.path)
        if u.path == "/api/v1/query":
            q = urllib.parse.parse_qs(u.query)["query"][0]
            body = files[{"up": "up.json", "timestamp(up)": "ts.json"}.get(q, "data.json")]
        else:
            body = files[u.path.strip("/").replace("/", "_")]
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
s = ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
"""


def bench_scrape(runs: int = 50) -> dict:
    from advisor.fleet.simulated import SimulatedNode
    from advisor.monitor.exporter import exposition, serve

    node = SimulatedNode("16xv100")
    for _ in range(3):
        node.advance(1.0)
    for _ in range(5):  # warm: the first expositions build the library's caches
        exposition(node.exporter)
    collector = []
    for _ in range(runs):
        t0 = time.perf_counter()
        text = exposition(node.exporter)
        collector.append(time.perf_counter() - t0)
    server, thread = serve(node.exporter, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.server_address[1]}/metrics"
    http = []
    try:
        for _ in range(runs):
            t0 = time.perf_counter()
            with urllib.request.urlopen(url, timeout=5) as r:
                body = r.read()
            http.append(time.perf_counter() - t0)
    finally:
        server.shutdown()
        server.server_close()
    lines = [ln for ln in body.decode().splitlines() if ln and not ln.startswith("#")]
    return {"gpus": node.gpu.device_count(), "series": len(lines), "bytes": len(text),
            "processes": len({ln.split('pid="')[1].split('"')[0] for ln in lines if 'pid="' in ln}),
            "collector_median_ms": statistics.median(collector) * 1e3, "http_median_ms": statistics.median(http) * 1e3}


def _payloads(folder: Path) -> None:
    """64 exporters' texts and the Prometheus answers for the same 64 nodes."""
    from prometheus_client.parser import text_string_to_metric_families

    from advisor.fleet.simulated import SimulatedNode

    node = SimulatedNode("8xh100-sxm")
    for _ in range(3):
        node.advance(1.0)
    text = node.text()
    from advisor.fleet.read import PROCESS_SERIES, device_series

    asked = set(device_series()) | set(PROCESS_SERIES)  # what the --prometheus query names: all Prometheus sends
    samples = [s for fam in text_string_to_metric_families(text.decode()) for s in fam.samples if s.name in asked]
    now = time.time()
    result, up, ts = [], [], []
    for i in range(NODES):
        (folder / f"node{i}_metrics").write_bytes(text)
        inst = f"node{i}:9400"
        for s in samples:
            result.append({"metric": {"__name__": s.name, **s.labels, "instance": inst, "job": "advisor"},
                           "value": [now, repr(float(s.value))]})
        up.append({"metric": {"__name__": "up", "instance": inst, "job": "advisor"}, "value": [now, "1"]})
        ts.append({"metric": {"instance": inst, "job": "advisor"}, "value": [now, repr(now - 0.5)]})
    for name, res in (("data.json", result), ("up.json", up), ("ts.json", ts)):
        (folder / name).write_text(json.dumps({"status": "success", "data": {"resultType": "vector", "result": res}}))


def bench_view(source_kind: str, base: str) -> dict:
    from advisor.fleet.sources import PrometheusSource, ScrapeSource
    from advisor.fleet.watch import FleetWatcher

    source = (PrometheusSource(base, timeout_s=5.0) if source_kind == "prometheus"
              else ScrapeSource([f"{base}/node{i}/metrics" for i in range(NODES)], timeout_s=5.0))
    w = FleetWatcher(source, interval_s=1.0)
    try:
        view = w.snapshot()  # warm: the first answers in (not timed)
        assert len(view.nodes) == NODES and all(n.state == "up" for n in view.nodes), [n.error for n in view.nodes][:3]
        cpu0, wall0 = time.process_time(), time.monotonic()
        for k in range(1, REFRESHES + 1):
            view = w.refresh()
            time.sleep(max(0.0, wall0 + k - time.monotonic()))
        w.snapshot()  # the last requests' work counted too
        cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
    finally:
        w.close()
    gpus = sum(len(n.gpus) for n in view.nodes)
    return {"nodes": len(view.nodes), "gpus": gpus, "refreshes": REFRESHES, "cpu_s": cpu, "wall_s": wall,
            "cpu_pct_of_one_core": 100.0 * cpu / wall}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    out = {"scrape": bench_scrape()}
    with tempfile.TemporaryDirectory() as tmp:
        _payloads(Path(tmp))
        server = subprocess.Popen([sys.executable, "-c", SERVER, tmp], stdout=subprocess.PIPE, text=True,
                                  env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
        try:
            base = f"http://127.0.0.1:{server.stdout.readline().strip()}"
            out["view_prometheus"] = bench_view("prometheus", base)
            out["view_scrape"] = bench_view("scrape", base)
        finally:
            server.terminate()
            server.wait(10)
            server.stdout.close()
    s, vp, vs = out["scrape"], out["view_prometheus"], out["view_scrape"]
    ok_scrape = s["http_median_ms"] < SCRAPE_TARGET_MS
    ok_view = vp["cpu_pct_of_one_core"] < VIEW_TARGET_PCT
    out["pass"] = ok_scrape and ok_view
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"{'PASS' if ok_scrape else 'FAIL'}  scrape of {s['gpus']} simulated GPUs ({s['processes']} processes, "
              f"{s['series']} series, {s['bytes'] / 1e3:.0f} kB): {s['http_median_ms']:.1f} ms median over HTTP "
              f"(collector alone {s['collector_median_ms']:.1f} ms); target < {SCRAPE_TARGET_MS:g} ms")
        print(f"{'PASS' if ok_view else 'FAIL'}  fleet view of {vp['nodes']} nodes x 8 GPUs ({vp['gpus']} GPUs) from "
              f"Prometheus, refreshed every second: {vp['cpu_pct_of_one_core']:.1f} % of one core "
              f"({vp['cpu_s']:.2f} s CPU over {vp['wall_s']:.1f} s); target < {VIEW_TARGET_PCT:g} %")
        print(f"{'info':4}  the same view scraping the {vs['nodes']} exporters directly: "
              f"{vs['cpu_pct_of_one_core']:.1f} % of one core ({vs['cpu_s']:.2f} s CPU over {vs['wall_s']:.1f} s)")
    return 0 if out["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
