"""Reading a file the user named, without trusting it: a regular file only, of bounded size, and JSON of
bounded nesting with numbers Python can hold.

A FIFO would block the reader forever, ``/dev/zero`` never ends, a multi-gigabyte file fills the memory:
``read_regular_file`` opens without blocking, checks the kind of file on the open descriptor (no race with
a rename), and reads at most ``max_bytes + 1`` bytes. ``open_regular`` gives the same check to readers that
seek (safetensors and GGUF headers). ``parse_json`` is the one JSON parser for what comes from outside (model
configs, safetensors headers and indexes, Ollama manifests, node replies, the fleet file): bytes decoded as
UTF-8 with replacement, integers of more than ``MAX_INT_DIGITS`` digits read as floats (``inf`` for the
absurd ones, which the field checks then refuse by name), at most ``MAX_JSON_DEPTH`` levels of nesting.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
from pathlib import Path

DEFAULT_MAX_BYTES = 16 * 2**20  # scenario files, user catalogs and price lists are kilobytes
MAX_JSON_DEPTH = 32  # the deepest document read (a detect document) nests 5 levels
MAX_INT_DIGITS = 20  # 2**64 has 20 digits; anything longer is no count or byte size


class UnreadableFile(OSError):
    """Not a regular file, or larger than allowed; ``strerror`` says which."""


class BadJson(ValueError):
    """A JSON document that cannot be used; ``str()`` is one line (without the file name)."""


def _open_checked(path: Path) -> int:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = "a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "a device or socket"
            raise UnreadableFile(errno.EINVAL, f"not a regular file (it is {kind})", str(path))
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular_file(path: str | os.PathLike, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """The bytes of ``path`` when it is a regular file of at most ``max_bytes``.

    Raises:
        UnreadableFile: a FIFO, device, socket or directory, or a file over ``max_bytes``.
        OSError: the file cannot be opened or read (missing, no permission).
    """
    path = Path(path)
    fd = _open_checked(path)
    try:
        chunks, size = [], 0
        while size <= max_bytes:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > max_bytes:
        raise UnreadableFile(errno.EFBIG, f"larger than {max_bytes / 2**20:g} MiB, not a file the advisor reads",
                             str(path))
    return b"".join(chunks)


@contextlib.contextmanager
def open_regular(path: str | os.PathLike):
    """A binary file object of ``path`` when it is a regular file (for readers that seek: model headers).

    Raises:
        UnreadableFile: a FIFO, device, socket or directory.
        OSError: the file cannot be opened.
    """
    fd = _open_checked(Path(path))
    with os.fdopen(fd, "rb") as f:
        yield f


def _parse_int(text: str):
    return int(text) if len(text.lstrip("-")) <= MAX_INT_DIGITS else float(text)


def _depth(value) -> int:
    """Nesting depth of a parsed document, walked without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            v = list(v.values())
        if isinstance(v, list):
            deepest = max(deepest, d)
            if d > MAX_JSON_DEPTH:
                return d
            stack.extend((x, d + 1) for x in v if isinstance(x, (dict, list)))
    return deepest


def decode_text(raw: bytes) -> str:
    """Bytes from outside as text: UTF-8 (a byte-order mark dropped), a bad byte shown as U+FFFD."""
    return raw.decode("utf-8-sig", errors="replace")


def _decode_one(decoder: json.JSONDecoder, text: str, pos: int):
    try:
        value, end = decoder.raw_decode(text, pos)
    except json.JSONDecodeError as exc:
        return BadJson(f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"), None
    except RecursionError:
        return BadJson(f"nested deeper than {MAX_JSON_DEPTH} levels"), None
    except ValueError as exc:  # a number json cannot build
        return BadJson(f"not valid JSON: {' '.join(str(exc).split())[:120]}"), None
    if _depth(value) > MAX_JSON_DEPTH:
        return BadJson(f"nested deeper than {MAX_JSON_DEPTH} levels"), end
    return value, end


def parse_json(raw: bytes | str):
    """Parse one JSON document from outside: text decoded with replacement, long integers as floats,
    nesting bounded.

    Raises:
        BadJson: not JSON (with line and column), nested deeper than ``MAX_JSON_DEPTH``, or extra data after it.
    """
    text = decode_text(raw) if isinstance(raw, bytes) else raw
    value, end = _decode_one(json.JSONDecoder(parse_int=_parse_int), text, _skip_space(text, 0))
    if isinstance(value, BadJson):
        raise value
    end = _skip_space(text, end)
    if end < len(text):
        line = text.count("\n", 0, end) + 1
        raise BadJson(f"not valid JSON (line {line}: extra data after the document)")
    return value


def _skip_space(text: str, pos: int) -> int:
    n = len(text)
    while pos < n and text[pos].isspace():
        pos += 1
    return pos


def parse_json_stream(raw: bytes | str) -> list:
    """Every JSON document in ``raw`` back to back (what ``srun ... --json`` prints), each parsed as
    ``parse_json`` does; a document that cannot be parsed is a :class:`BadJson` in the list, and reading
    goes on at the next line that starts with ``{`` or ``[`` (one broken node does not hide the others).
    """
    text = decode_text(raw) if isinstance(raw, bytes) else raw
    decoder = json.JSONDecoder(parse_int=_parse_int)
    out: list = []
    pos = _skip_space(text, 0)
    while pos < len(text):
        value, end = _decode_one(decoder, text, pos)
        out.append(value)
        if end is None:  # resume at the next document's first line
            nxt = min((i for i in (text.find("\n{", pos + 1), text.find("\n[", pos + 1)) if i >= 0), default=-1)
            if nxt < 0:
                break
            end = nxt
        pos = _skip_space(text, end)
    return out
