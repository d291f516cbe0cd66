"""Price-list downloads: the advisor's only network access, over HTTPS only, and only when the user asks.

``download_prices(url)`` fetches a price list into the cache directory. The URL must be ``https://``, and
so must every redirect hop (a redirect to ``http://`` is refused before it is followed, so no price from a
plain connection is ever offered for ``--apply``). The certificate is checked against the system's trust
store (Python's default SSL context; ``SSL_CERT_FILE`` points it at another bundle). Answers over
``MAX_DOWNLOAD_BYTES`` are refused. Parsing the file is the catalog's job (``catalog.importer``).
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlparse

from advisor.catalog.importer import MAX_PRICE_LIST_BYTES as MAX_DOWNLOAD_BYTES
from advisor.catalog.load import CatalogError
from advisor.store.atomic import write_atomic

MAX_REDIRECTS = 5


class DownloadError(CatalogError):
    """A download refused or failed (not HTTPS, a redirect off HTTPS, network, TLS, size); one line."""


class _HttpsOnlyRedirects(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only to another ``https://`` URL, at most ``MAX_REDIRECTS`` times."""

    max_redirections = MAX_REDIRECTS

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        if urlparse(newurl).scheme != "https":
            raise DownloadError(f"url: {req.full_url} redirects to {newurl!r}: refused, only https:// is followed")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def urlopen_https(url: str, timeout_s: float):
    """Open ``url`` with certificate checks and HTTPS-only redirects (the one place that opens a connection)."""
    import ssl

    opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=ssl.create_default_context()),
                                         _HttpsOnlyRedirects())
    return opener.open(url, timeout=timeout_s)


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


def download_prices(url: str, *, timeout_s: float = 30.0) -> Path:
    """Download a price list over HTTPS into the cache directory (only ever called on the user's request).

    Returns:
        The downloaded file (suffix kept from the URL so its format is recognised).
    Raises:
        DownloadError: a non-HTTPS URL or redirect, a network or certificate failure, an oversized answer.
    """
    parsed = urlparse(url)
    if parsed.scheme != "https" or not parsed.netloc:
        raise DownloadError(f"url: refusing {url!r}: only https:// URLs are used for price updates")
    try:
        with urlopen_https(url, timeout_s) as resp:
            if urlparse(resp.geturl()).scheme != "https":  # belt and braces: where the answer came from
                raise DownloadError(f"url: {url} was answered from {resp.geturl()!r}: refused")
            data = resp.read(MAX_DOWNLOAD_BYTES + 1)
    except urllib.error.HTTPError as exc:
        raise DownloadError(f"url: download of {url} failed: HTTP {exc.code} {exc.reason}") from None
    except OSError as exc:
        reason = getattr(exc, "reason", None) or exc
        raise DownloadError(f"url: download of {url} failed: {' '.join(str(reason).split())}") from None
    if len(data) > MAX_DOWNLOAD_BYTES:
        raise DownloadError(f"url: {url} sent more than {MAX_DOWNLOAD_BYTES // 2**20} MiB")
    from advisor import paths

    suffix = ".toml" if parsed.path.lower().endswith(".toml") else ".csv"
    name = Path(parsed.path).stem or "prices"
    return write_atomic(paths.cache_dir(create=True) / f"download-{name}{suffix}", data)
