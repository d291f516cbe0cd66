"""The header of a GGUF file read with bounds: metadata, array lengths and the tensor table, nothing else.

Layout (ggml-org/ggml ``docs/gguf.md``, "File Structure"; versions 2 and 3): the magic ``GGUF``, a uint32
version, uint64 tensor and key-value counts; each key-value pair is a string key (uint64 length, UTF-8
bytes), a uint32 value type and the value (scalars; strings; arrays as item type, uint64 count, items);
then each tensor's name, uint32 dimension count, uint64 dimensions, uint32 ggml type and uint64 offset
into the data, which starts at the next multiple of ``general.alignment`` (default 32) after the table.

Why not ``gguf.GGUFReader``: it builds a numpy view per array item, so a 1-million-token vocabulary takes
tens of seconds and over a gigabyte. Here arrays the advisor does not need are skipped (numeric ones by
seeking, string ones by reading each length), small numeric arrays (per-layer figures) are kept, and every
count and length is checked against the file's size, so a truncated or hostile file is one line, not a
numpy error or an allocation of what the file claims.
"""

from __future__ import annotations

import mmap
import os
import struct
from dataclasses import dataclass
from typing import Any

from advisor.job.bounds import params_maximum

_SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
STRING, ARRAY = 8, 9
MAX_KV = 1 << 16  # key-value pairs (published models have under 100)
MAX_TENSORS = 1 << 20  # DeepSeek-V3 has about 1,100 tensors per split part
MAX_KEY_BYTES = 1 << 16
MAX_TEXT_CHARS = 4096  # a metadata string kept (names, architecture); longer ones are cut
MAX_KEPT_ARRAY = 1 << 16  # numeric arrays kept (per-layer figures: at most the 10,000 layers of --layers)
MAX_DIMS = 4  # GGML_MAX_DIMS (ggml/include/ggml.h)


class GgufError(ValueError):
    """A GGUF header that cannot be read; ``truncated`` when the file ends inside it."""

    def __init__(self, message: str, truncated: bool = False) -> None:
        super().__init__(message)
        self.truncated = truncated


@dataclass(frozen=True)
class GgufTensor:
    """One tensor of the table: its name, shape, ggml type, offset into the data and size."""

    name: str
    shape: tuple[int, ...]
    ggml_type: int
    offset: int
    n_elements: int
    n_bytes: int


@dataclass(frozen=True)
class GgufHeader:
    """What the advisor reads of a GGUF file.

    Attributes:
        fields: metadata key -> value (numbers, text, bools; a kept numeric array as a list).
        array_lengths: array key -> number of items (every array, kept or skipped).
        tensors: the tensor table.
    """

    version: int
    fields: dict[str, Any]
    array_lengths: dict[str, int]
    tensors: tuple[GgufTensor, ...]


class _Cursor:
    def __init__(self, buf, order: str) -> None:
        self.buf, self.pos, self.order, self.size = buf, 0, order, len(buf)

    def need(self, n: int, what: str) -> None:
        if n < 0 or self.pos + n > self.size:
            raise GgufError(f"truncated GGUF file (it ends inside {what}, at byte {self.size})", truncated=True)

    def unpack(self, fmt: str, what: str):
        n = struct.calcsize(fmt)
        self.need(n, what)
        (value,) = struct.unpack_from(self.order + fmt, self.buf, self.pos)
        self.pos += n
        return value

    def string(self, what: str, limit: int | None = None) -> str:
        n = self.unpack("Q", what)
        if limit is not None and n > limit:
            raise GgufError(f"corrupt GGUF file ({what} of {n} bytes)")
        self.need(n, what)
        raw = bytes(self.buf[self.pos:self.pos + min(n, MAX_TEXT_CHARS * 4)])
        self.pos += n
        return raw.decode("utf-8", errors="replace")[:MAX_TEXT_CHARS]

    def skip_strings(self, count: int, what: str) -> None:
        """Step over ``count`` strings, reading only their lengths (a vocabulary is skipped this way)."""
        pos, buf, size, fmt, unpack = self.pos, self.buf, self.size, self.order + "Q", struct.unpack_from
        for _ in range(count):
            if pos + 8 > size:
                pos = size + 1
                break
            pos += 8 + unpack(fmt, buf, pos)[0]
        if pos > size:
            raise GgufError(f"truncated GGUF file (it ends inside {what}, at byte {size})", truncated=True)
        self.pos = pos


def _value(cur: _Cursor, vtype: int, key: str, depth: int = 0):
    if vtype in _SCALAR:
        return cur.unpack(_SCALAR[vtype], f"the value of {key!r}")
    if vtype == STRING:
        return cur.string(f"the value of {key!r}")
    if vtype == ARRAY and depth == 0:
        itype = cur.unpack("I", f"the array {key!r}")
        count = cur.unpack("Q", f"the array {key!r}")
        if itype in _SCALAR:
            width = struct.calcsize(_SCALAR[itype])
            cur.need(count * width, f"the array {key!r}")
            if count <= MAX_KEPT_ARRAY:
                values = list(struct.unpack_from(f"{cur.order}{count}{_SCALAR[itype]}", cur.buf, cur.pos))
                cur.pos += count * width
                return count, values
            cur.pos += count * width
            return count, None
        if itype == STRING:
            cur.need(count * 8, f"the array {key!r}")  # every item has at least its length
            cur.skip_strings(count, f"the array {key!r}")
            return count, None
        raise GgufError(f"corrupt GGUF file (array {key!r} of value type {itype})")
    raise GgufError(f"corrupt GGUF file (key {key!r} has value type {vtype})")


def read_header(buf, file_size: int | None = None) -> GgufHeader:
    """The header of a GGUF file held in ``buf`` (bytes or a memory map of the whole file; or its first bytes
    when ``file_size`` gives the whole file's size, as a range request reads it).

    Raises:
        GgufError: not GGUF, an unsupported version, truncated (``truncated`` set), or counts and sizes that
            cannot be true of this file.
    """
    from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

    if bytes(buf[:4]) != b"GGUF":
        raise GgufError("not a GGUF file (it does not start with 'GGUF')")
    cur = _Cursor(buf, "<")
    cur.pos = 4
    version = cur.unpack("I", "the header")
    if version & 0xFFFF == 0 and version:  # written big-endian
        cur.order, version = ">", struct.unpack(">I", struct.pack("<I", version))[0]
    if version not in (2, 3):
        raise GgufError(f"GGUF version {version} is not read (versions 2 and 3 are)")
    n_tensors = cur.unpack("Q", "the header")
    n_kv = cur.unpack("Q", "the header")
    if n_tensors > MAX_TENSORS or n_kv > MAX_KV:
        raise GgufError(f"corrupt GGUF file ({n_tensors} tensors, {n_kv} metadata keys)")
    fields: dict[str, Any] = {}
    lengths: dict[str, int] = {}
    for i in range(n_kv):
        key = cur.string(f"metadata key {i + 1}", MAX_KEY_BYTES)
        vtype = cur.unpack("I", f"the type of {key!r}")
        value = _value(cur, vtype, key)
        if vtype == ARRAY:
            lengths[key], value = value
            if value is None:
                continue
        fields[key] = value
    most = params_maximum()
    tensors = []
    for i in range(n_tensors):
        name = cur.string(f"tensor {i + 1}'s name", MAX_KEY_BYTES)
        n_dims = cur.unpack("I", f"tensor {name!r}")
        if not 1 <= n_dims <= MAX_DIMS:
            raise GgufError(f"corrupt GGUF file (tensor {name!r} has {n_dims} dimensions)")
        shape = tuple(cur.unpack("Q", f"tensor {name!r}") for _ in range(n_dims))
        ggml_type = cur.unpack("I", f"tensor {name!r}")
        offset = cur.unpack("Q", f"tensor {name!r}")
        count = 1
        for d in shape:
            count *= d
        try:
            block, type_bytes = GGML_QUANT_SIZES[GGMLQuantizationType(ggml_type)]
        except (ValueError, KeyError):
            raise GgufError(f"corrupt GGUF file (tensor {name!r} has unknown type {ggml_type})") from None
        if count > most or shape[0] % block:
            raise GgufError(f"corrupt GGUF file (tensor {name!r} of shape {list(shape)})")
        tensors.append(GgufTensor(name, shape, ggml_type, offset, count, count // block * type_bytes))
    align = fields.get("general.alignment", 32)
    if not isinstance(align, int) or isinstance(align, bool) or align <= 0 or align & (align - 1) or align > 1 << 20:
        raise GgufError(f"corrupt GGUF file (general.alignment {align!r} is not a power of two)")
    data_start = -(-cur.pos // align) * align
    size = cur.size if file_size is None else file_size
    for t in tensors:
        end = data_start + t.offset + t.n_bytes
        if end > size:
            raise GgufError(f"truncated GGUF file (tensor {t.name!r} ends at byte {end}, past the end of the file "
                            f"at {size})", truncated=file_size is None)
    return GgufHeader(version, fields, lengths, tuple(tensors))


def read_header_file(f) -> GgufHeader:
    """``read_header`` of an open regular file, memory-mapped (nothing beyond the header is touched)."""
    size = os.fstat(f.fileno()).st_size
    if size < 4:
        raise GgufError("truncated GGUF file (shorter than its magic bytes)", truncated=True)
    with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        return read_header(mm)
