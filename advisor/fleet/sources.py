"""Where the live fleet is read from: exporters scraped directly (``--scrape URL...``), a Prometheus server
(``--prometheus URL``, instant queries), or simulated nodes (tests, benchmarks, ``--fake-gpu`` screenshots).

A source has ``targets()`` (what is asked, one request each) and ``fetch(target)``, which returns the
``Answer`` of every node that target speaks for (one for an exporter, every instance for Prometheus). Each
request is bounded in time (``timeout_s``, the whole exchange) and bytes (``read.MAX_SCRAPE_BYTES`` /
``MAX_QUERY_BYTES``) through ``store.download.fetch``, the advisor's one place that opens a connection.
"""

from __future__ import annotations

import math
import time
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass

from advisor.fleet.model import NodeReading
from advisor.fleet.read import (
    MAX_QUERY_BYTES,
    MAX_SCRAPE_BYTES,
    FleetReadError,
    reading_from_samples,
    samples_from_query,
    samples_from_text,
)
from advisor.untrusted import plain_text

DEFAULT_TIMEOUT_S = 2.0
MAX_URL_CHARS = 2048
MAX_TARGETS = 4096
# What the fleet reads from Prometheus: the device series the model holds (DCGM names), the books, and each
# target's health; only those names, so a server with every DCGM field answers no more than needed.


def data_query() -> str:
    from advisor.fleet.read import PROCESS_SERIES, device_series

    return '{__name__=~"' + "|".join(sorted(device_series()) + sorted(PROCESS_SERIES)) + '"}'


HEALTH_QUERY = "up"
SCRAPE_TIME_QUERY = "timestamp(up)"


class SourceError(ValueError):
    """A source that cannot be used as given (a bad URL, too many targets); one line."""


@dataclass(frozen=True)
class Answer:
    """One node's answer: its reading, or why there is none (``reading`` None, ``error`` set)."""

    name: str
    url: str
    reading: NodeReading | None
    error: str | None = None
    age_s: float | None = None  # how old the figures were when they arrived (Prometheus's last scrape), if known


def check_url(url: str, what: str, default_path: str = "") -> str:
    """An ``http(s)://host[:port][/path]`` URL (``host:port`` alone is ``http://``), with ``default_path``
    when it has none.

    Raises:
        SourceError: another scheme, no host, credentials in it, or over ``MAX_URL_CHARS``.
    """
    if not isinstance(url, str) or not url or len(url) > MAX_URL_CHARS:
        raise SourceError(f"{what}: {plain_text(url, 80)!r} is not a URL")
    url = url.strip()
    if "://" not in url:
        url = "http://" + url  # HOST:PORT, as a Prometheus target is written
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SourceError(f"{what}: {plain_text(url, 80)!r} must be http://HOST[:PORT][/PATH] or https://...")
    if parts.username or parts.password:
        raise SourceError(f"{what}: {plain_text(url, 80)!r}: credentials in a URL are refused")
    try:
        parts.port  # noqa: B018 - raises on a port that is not a number or out of range
    except ValueError:
        raise SourceError(f"{what}: {plain_text(url, 80)!r}: the port is not a number from 0 to 65535") from None
    path = parts.path if parts.path not in ("", "/") else default_path
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def instance_of(url: str) -> str:
    """``host:port`` of a URL, as Prometheus names a target's ``instance``."""
    parts = urllib.parse.urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    host = parts.hostname or ""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _get(url: str, timeout_s: float, max_bytes: int) -> bytes:
    from advisor.store.download import DownloadError, fetch

    try:
        return fetch(url, timeout_s=timeout_s, total_s=timeout_s, max_bytes=max_bytes, plain_http=True)
    except DownloadError as exc:
        text = " ".join(str(exc).split()).removeprefix("url: ").replace(f"download of {url} failed: ", "")
        raise FleetReadError(text.replace("download of ", "")) from None


class ScrapeSource:
    """Exporters read directly, one request per URL (``/metrics`` unless the URL names a path)."""

    simulated = False

    def __init__(self, urls: Sequence[str], timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        if not urls:
            raise SourceError("--scrape: name at least one exporter URL")
        if len(urls) > MAX_TARGETS:
            raise SourceError(f"--scrape: at most {MAX_TARGETS} exporters")
        self.urls = list(dict.fromkeys(check_url(u, "--scrape", "/metrics") for u in urls))
        self.timeout_s = timeout_s
        self.label = "scrape"
        # a node is named as Prometheus names a target (host:port); exporters behind one address keep their path
        counts: dict[str, int] = {}
        for u in self.urls:
            counts[instance_of(u)] = counts.get(instance_of(u), 0) + 1
        self._names = {u: instance_of(u) if counts[instance_of(u)] == 1 else
                       instance_of(u) + urllib.parse.urlsplit(u).path for u in self.urls}

    def targets(self) -> list[str]:
        return list(self.urls)

    def names(self, target: str) -> list[str]:
        return [self._names[target]]

    def fetch(self, target: str) -> list[Answer]:
        name = self._names[target]
        try:
            raw = _get(target, self.timeout_s, MAX_SCRAPE_BYTES)
            return [Answer(name, target, reading_from_samples(samples_from_text(raw)))]
        except FleetReadError as exc:
            return [Answer(name, target, None, plain_text(str(exc), 200))]


class PrometheusSource:
    """A Prometheus server: three instant queries per refresh (the data, ``up``, ``timestamp(up)``); a node is
    a target ``instance``, down when Prometheus's last scrape of it failed."""

    simulated = False

    def __init__(self, url: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.url = check_url(url, "--prometheus").rstrip("/")
        self.timeout_s = timeout_s
        self.label = "prometheus"

    def targets(self) -> list[str]:
        return [self.url]

    def names(self, target: str) -> list[str]:
        return []  # known only from the answers

    def _query(self, query: str, deadline: float) -> list:
        left = deadline - time.monotonic()
        if left <= 0:
            raise FleetReadError(f"no answer within {self.timeout_s:g} s")
        url = f"{self.url}/api/v1/query?{urllib.parse.urlencode({'query': query})}"
        return samples_from_query(_get(url, left, MAX_QUERY_BYTES))

    def fetch(self, target: str) -> list[Answer]:
        deadline = time.monotonic() + self.timeout_s
        try:
            data = self._query(data_query(), deadline)
            health = self._query(HEALTH_QUERY, deadline)
            scraped = self._query(SCRAPE_TIME_QUERY, deadline)
        except FleetReadError as exc:
            raise SourceFailed(f"{self.url}: {plain_text(str(exc), 200)}") from None
        by_node: dict[str, list] = {}
        for s in data:
            inst = s[1].get("instance")
            if isinstance(inst, str) and inst and isinstance(s[0], str):
                by_node.setdefault(inst, []).append(s)
        up = {s[1].get("instance"): s[2] for s in health if isinstance(s[1].get("instance"), str)}
        now = time.time()
        last = {s[1].get("instance"): s[2] for s in scraped if isinstance(s[1].get("instance"), str)}
        out = []
        for inst in sorted(set(by_node) | set(up))[:MAX_TARGETS]:
            name = plain_text(inst, 200)
            ts = last.get(inst)
            age = max(0.0, now - ts) if isinstance(ts, float) and math.isfinite(ts) else None
            if up.get(inst) == 0:
                out.append(Answer(name, self.url, None, "Prometheus could not scrape it (up == 0)", age))
            elif inst in by_node:
                out.append(Answer(name, self.url, reading_from_samples(by_node[inst]), None, age))
        return out


class SourceFailed(Exception):
    """The whole source did not answer (a Prometheus server down): every node it spoke for is down."""


class SimulatedSource:
    """Simulated nodes (``fleet.simulated.SimulatedNode``), read through the same exposition text and reader
    as real exporters; names in ``dead`` never answer."""

    simulated = True

    def __init__(self, nodes: dict, dead: Sequence[str] = ()) -> None:
        self.nodes = dict(nodes)
        self.dead = list(dead)
        self.label = "simulated"

    def targets(self) -> list[str]:
        return [*self.nodes, *self.dead]

    def names(self, target: str) -> list[str]:
        return [target]

    def fetch(self, target: str) -> list[Answer]:
        url = f"simulated://{target}/metrics"
        node = self.nodes.get(target)
        if node is None:
            return [Answer(target, url, None, "connection refused (simulated dead node)")]
        return [Answer(target, url, reading_from_samples(samples_from_text(node.text())))]
