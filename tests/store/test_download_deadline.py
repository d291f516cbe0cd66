"""A price download has a total time limit as well as the per-read one (issue 28). A local server sends a
byte every 0.2 s, which never trips a per-read timeout: before, ``catalog check-updates`` waited for as long
as the server kept dripping (``resp.read(MAX + 1)`` returns only at the end)."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from advisor.store.download import DownloadError, fetch

DRIP_S = 0.2


class _Drip(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - http.server's name
        stop = self.server.stop
        if self.path == "/slow-headers":  # even the status line comes a byte at a time
            for b in b"HTTP/1.0 200 OK\r\n":
                if stop.is_set():
                    return
                self.wfile.write(bytes([b]))
                self.wfile.flush()
                time.sleep(DRIP_S)
            return
        self.send_response(200)
        self.send_header("Content-Length", "100000")
        self.end_headers()
        if self.path == "/fast":
            self.wfile.write(b"x" * 100000)
            return
        while not stop.is_set():
            try:
                self.wfile.write(b"x")
                self.wfile.flush()
            except OSError:
                return
            time.sleep(DRIP_S)

    def log_message(self, *args):
        pass


@pytest.fixture
def drip_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Drip)
    server.daemon_threads = True
    server.stop = threading.Event()
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.stop.set()
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("path", ["/slow-body", "/slow-headers"])
def test_a_dripping_server_is_stopped_at_the_total_limit(drip_server, path):
    start = time.monotonic()
    with pytest.raises(DownloadError, match="at most 0.8 s"):
        fetch(drip_server + path, timeout_s=5, total_s=0.8, max_bytes=2**20, plain_http=True)
    assert time.monotonic() - start < 1.5  # the limit plus the time to notice, not the server's pace


def test_a_prompt_answer_is_read_whole_and_a_large_one_refused(drip_server):
    assert fetch(drip_server + "/fast", timeout_s=5, total_s=5, max_bytes=2**20, plain_http=True) == b"x" * 100000
    with pytest.raises(DownloadError, match="sent more than"):
        fetch(drip_server + "/fast", timeout_s=5, total_s=5, max_bytes=1000, plain_http=True)
