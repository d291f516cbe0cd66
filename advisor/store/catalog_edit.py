"""Editing the user's catalog file by hand (the app's "Edit overrides"), safe against a concurrent import.

``open_for_edit`` reads the file through the regular-file guard (a FIFO or ``/dev/zero`` is refused, not
waited on) and remembers a SHA-256 of what was read. ``save_edited`` takes the same file lock as
``catalog import --apply`` (``store.atomic.locked`` on the same path, so an import and a save never interleave)
and refuses to write when the file on disk no longer has that digest: an import applied while the editor was
open would otherwise be lost without a word. The caller offers to reload.
"""

from __future__ import annotations

import hashlib
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

from advisor.catalog.readfile import UnreadableFile, read_regular_file
from advisor.store.atomic import locked, write_atomic

LOCK_TIMEOUT_S = 10.0


class CatalogEditError(ValueError):
    """The file cannot be opened or saved; ``str()`` is one line for the user."""


class ChangedOnDisk(CatalogEditError):
    """The file changed since the editor opened it (another advisor, an import); nothing was written."""


@dataclass(frozen=True)
class OpenedCatalog:
    """What the editor opened: the text and the digest of the bytes read (None: there was no file)."""

    path: Path
    text: str
    digest: str | None


def _digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(read_regular_file(path)).hexdigest()
    except FileNotFoundError:
        return None


def open_for_edit(path: str | os.PathLike, template: str = "") -> OpenedCatalog:
    """The user's catalog file to edit (``template`` when there is none).

    Raises:
        CatalogEditError: not a regular file, too large, unreadable, or not UTF-8 text (naming the byte).
    """
    path = Path(path)
    try:
        raw = read_regular_file(path)
    except FileNotFoundError:
        return OpenedCatalog(path, template, None)
    except UnreadableFile as exc:
        raise CatalogEditError(f"{path}: cannot be edited: {exc.strerror}") from None
    except OSError as exc:
        raise CatalogEditError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CatalogEditError(f"{path}: not UTF-8 text (byte {exc.start}); fix or remove that byte in another "
                               "editor, since saving here would change it") from None
    return OpenedCatalog(path, text, hashlib.sha256(raw).hexdigest())


def check_toml(text: str) -> None:
    """Raises CatalogEditError when ``text`` is not valid TOML (one line with the position)."""
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CatalogEditError(f"not valid TOML: {' '.join(str(exc).split())}") from None
    except RecursionError:
        raise CatalogEditError("not valid TOML: nested too deeply") from None


def save_edited(opened: OpenedCatalog, text: str, timeout_s: float = LOCK_TIMEOUT_S) -> OpenedCatalog:
    """Write ``text`` over the file opened as ``opened``, under the catalog file's lock, when it is unchanged.

    Returns:
        The file as now saved (its new digest), for a further save.
    Raises:
        ChangedOnDisk: the file changed since it was opened (nothing written).
        CatalogEditError: not valid TOML, the lock not free in time, or the folder cannot be written.
    """
    check_toml(text)
    path = opened.path
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with locked(path, timeout_s):
            try:
                now = _digest(path)
            except (UnreadableFile, OSError) as exc:
                raise CatalogEditError(f"{path}: cannot be read: {exc.strerror or exc}") from None
            if now != opened.digest:
                raise ChangedOnDisk(f"{path} changed since the editor opened it (an import or another editor); "
                                    "nothing was saved")
            write_atomic(path, text)
    except CatalogEditError:
        raise
    except OSError as exc:
        raise CatalogEditError(f"{path}: not saved: {exc.strerror or exc}") from None
    return OpenedCatalog(path, text, hashlib.sha256(text.encode("utf-8")).hexdigest())
