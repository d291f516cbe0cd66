"""Price-list downloads: the advisor's only network access, over HTTPS only, and only when the user asks.

``download_prices(url)`` fetches a price list into the cache directory. The URL must be ``https://``, and
so must every redirect hop (a redirect to ``http://`` is refused before it is followed, so no price from a
plain connection is ever offered for ``--apply``). The certificate is checked against the system's trust
store (Python's default SSL context; ``SSL_CERT_FILE`` points it at another bundle). Answers over
``MAX_DOWNLOAD_BYTES`` are refused. Parsing the file is the catalog's job (``catalog.importer``).

Two time limits: each read waits at most ``timeout_s`` (the socket timeout), and the whole download, from
connecting to the last byte, at most ``total_s``: a server that sends a byte every half second never trips
the first, so a timer shuts the connection's socket down when the second runs out (``_Deadline``), which
ends a read blocked in the headers or the body alike.
"""

from __future__ import annotations

import functools
import http.client
import os
import socket
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlparse

from advisor.catalog.importer import MAX_PRICE_LIST_BYTES as MAX_DOWNLOAD_BYTES
from advisor.catalog.load import CatalogError
from advisor.store.atomic import write_atomic

MAX_REDIRECTS = 5
TOTAL_TIMEOUT_S = 120.0  # a price list is a few hundred kilobytes: two minutes is ample on a slow line


class DownloadError(CatalogError):
    """A download refused or failed (not HTTPS, a redirect off HTTPS, network, TLS, size); one line."""


class _HttpsOnlyRedirects(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only to another ``https://`` URL, at most ``MAX_REDIRECTS`` times."""

    max_redirections = MAX_REDIRECTS

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        if urlparse(newurl).scheme != "https":
            raise DownloadError(f"url: {req.full_url} redirects to {newurl!r}: refused, only https:// is followed")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


class _Deadline:
    """Shuts down every socket the download opened once ``total_s`` has passed (a blocked read then ends)."""

    def __init__(self, total_s: float) -> None:
        self.total_s, self.expired = total_s, False
        self._socks: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(total_s, self._expire)
        self._timer.daemon = True

    def __enter__(self):
        self._timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self._timer.cancel()

    def track(self, sock) -> None:
        with self._lock:
            if self.expired:
                sock.shutdown(socket.SHUT_RDWR)
            self._socks.append(sock)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._socks:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


def _connection(base, deadline: _Deadline | None):
    """An ``http.client`` connection class whose socket the deadline can shut down."""
    class Connection(base):
        def connect(self):
            super().connect()
            if deadline is not None:
                deadline.track(self.sock)
    return Connection


class _HttpsHandler(urllib.request.HTTPSHandler):
    def __init__(self, context, deadline: _Deadline | None) -> None:
        super().__init__(context=context)
        self._deadline = deadline

    def https_open(self, req):
        return self.do_open(_connection(http.client.HTTPSConnection, self._deadline), req, context=self._context)


class _HttpHandler(urllib.request.HTTPHandler):
    """Plain HTTP, for tests against a local server only (``download_prices`` refuses http:// URLs)."""

    def __init__(self, deadline: _Deadline | None) -> None:
        super().__init__()
        self._deadline = deadline

    def http_open(self, req):
        return self.do_open(_connection(http.client.HTTPConnection, self._deadline), req)


@functools.lru_cache(maxsize=4)
def _tls_context(cert_file: str | None, cert_dir: str | None):
    """The default TLS context (system trust store, or ``SSL_CERT_FILE``/``SSL_CERT_DIR``), built once per pair:
    building one reads the trust store (about 20 ms), which a fleet view asking 64 exporters a second cannot pay
    on every request. Keyed by the two variables, so pointing them elsewhere takes effect."""
    import ssl

    return ssl.create_default_context()


def urlopen_https(url: str, timeout_s: float, deadline: _Deadline | None = None, *, plain_http: bool = False):
    """Open ``url`` with certificate checks and HTTPS-only redirects (the one place that opens a connection).

    Args:
        deadline: shuts the connection down when the whole download's time is up.
        plain_http: also open ``http://`` (tests against a local server; never the price download).
    """
    handlers = [_HttpsHandler(_tls_context(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR")), deadline),
                _HttpsOnlyRedirects()]
    if plain_http:
        handlers.append(_HttpHandler(deadline))
    return urllib.request.build_opener(*handlers).open(url, timeout=timeout_s)


def read_body(resp, max_bytes: int, deadline: _Deadline | None = None) -> bytes:
    """The body of a response, read in pieces, at most ``max_bytes + 1`` bytes; stops when the deadline
    has expired (the socket is then shut down: a read returns at once)."""
    read = getattr(resp, "read1", None) or resp.read
    chunks, size = [], 0
    while size <= max_bytes:
        if deadline is not None and deadline.expired:
            break
        chunk = read(min(1 << 16, max_bytes + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def fetch(url: str, *, timeout_s: float, total_s: float, max_bytes: int, plain_http: bool = False) -> bytes:
    """The bytes at ``url`` within both time limits and ``max_bytes``.

    Raises:
        DownloadError: the total time ran out, a read timed out, HTTP or TLS failed, the answer is too large,
            or it came from a non-HTTPS address.
    """
    start = time.monotonic()
    with _Deadline(total_s) as deadline:
        try:
            with urlopen_https(url, timeout_s, deadline, plain_http=plain_http) as resp:
                if urlparse(resp.geturl()).scheme != "https" and not plain_http:  # where the answer came from
                    raise DownloadError(f"url: {url} was answered from {resp.geturl()!r}: refused")
                data = read_body(resp, max_bytes, deadline)
        except urllib.error.HTTPError as exc:
            raise DownloadError(f"url: download of {url} failed: HTTP {exc.code} {exc.reason}") from None
        except (OSError, http.client.HTTPException) as exc:
            if not deadline.expired:
                reason = getattr(exc, "reason", None) or exc
                raise DownloadError(f"url: download of {url} failed: {' '.join(str(reason).split())}") from None
        if deadline.expired:
            raise DownloadError(f"url: download of {url} stopped after {time.monotonic() - start:.1f} s: the whole "
                                f"download may take at most {total_s:g} s")
    if len(data) > max_bytes:
        raise DownloadError(f"url: {url} sent more than {max_bytes / 2**20:g} MiB")
    return data


def provider_from_url(url: str) -> str | None:
    """The provider folder of a skypilot-catalog URL (``.../catalogs/v7/aws/vms.csv`` -> ``aws``), or None."""
    from advisor.catalog.importer import provider_from_path

    return provider_from_path(Path(urlparse(url).path), resolve=False)


def configured_update_url() -> str | None:
    """The price-list URL: ``ADVISOR_PRICES_URL``, else ``[updates] prices_url`` in the user catalog file."""
    url = os.environ.get("ADVISOR_PRICES_URL")
    if url:
        return url
    import tomllib

    from advisor import paths
    from advisor.catalog.readfile import read_regular_file

    try:
        doc = tomllib.loads(read_regular_file(paths.user_catalog_file()).decode("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):
        return None
    updates = doc.get("updates")
    value = updates.get("prices_url") if isinstance(updates, dict) else None
    return value if isinstance(value, str) and value else None


def download_prices(url: str, *, timeout_s: float = 30.0, total_s: float = TOTAL_TIMEOUT_S) -> Path:
    """Download a price list over HTTPS into the cache directory (only ever called on the user's request).

    Args:
        timeout_s: the longest wait for any one read.
        total_s: the longest the whole download may take.
    Returns:
        The downloaded file (suffix kept from the URL so its format is recognised).
    Raises:
        DownloadError: a non-HTTPS URL or redirect, a network or certificate failure, an oversized answer,
            either time limit passed.
    """
    parsed = urlparse(url)
    if parsed.scheme != "https" or not parsed.netloc:
        raise DownloadError(f"url: refusing {url!r}: only https:// URLs are used for price updates")
    data = fetch(url, timeout_s=timeout_s, total_s=total_s, max_bytes=MAX_DOWNLOAD_BYTES)
    from advisor import paths

    suffix = ".toml" if parsed.path.lower().endswith(".toml") else ".csv"
    name = Path(parsed.path).stem or "prices"
    return write_atomic(paths.cache_dir(create=True) / f"download-{name}{suffix}", data)
