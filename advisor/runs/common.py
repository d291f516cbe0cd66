"""What every importer shares: the bounded read, the one-line error, the flags that fill gaps, this machine.

Files come from outside: each is read with ``catalog.readfile.read_regular_file`` (a regular file, at most
``MAX_BYTES``), parsed as JSON or CSV, and validated with pydantic models (``extra`` keys ignored, every
number bounded and finite) before a ``RunRecord`` is built. Anything wrong is a ``RunImportError`` naming the
file and the reason in one line; nothing is stored.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from advisor.catalog.readfile import read_regular_file

MAX_BYTES = 64 * 2**20  # a vLLM result saved with --save-detailed keeps every request's latencies
MAX_COUNT = 1e16
MAX_RATE = 1e22


class RunImportError(ValueError):
    """A file that is not a run the advisor reads; ``str()`` is one line naming the file and the reason."""

    def __init__(self, path: str | os.PathLike, reason: str) -> None:
        self.path, self.reason = str(path), " ".join(str(reason).split())
        super().__init__(f"{self.path}: {self.reason}")


@dataclass(frozen=True)
class ImportOptions:
    """What the user says about a run on the command line; each fills what the file leaves out.

    Attributes:
        accelerator: catalog id of the accelerator (``cpu`` for the host CPU); devices: how many were used.
        model: a model spec (preset, config.json, ...) for files that do not name the architecture.
        workload, precision, software: the job's, where the file does not say.
        seq_len, tokens: lengths and tokens processed (a Trainer run without ``num_input_tokens_seen``).
        other_machine: the run was made on another machine (its efficiency counts less).
        this_machine_id: this machine's fingerprint id; this_cpu, this_gpus: its CPU model and GPU names,
            to tell a file that names its hardware whether it was made here.
    """

    accelerator: str | None = None
    devices: int | None = None
    model: str | None = None
    workload: str | None = None
    precision: str | None = None
    software: str | None = None
    seq_len: int | None = None
    tokens: float | None = None
    other_machine: bool = False
    this_machine_id: str | None = None
    this_cpu: str = ""
    this_gpus: tuple[str, ...] = field(default=())


def read_bytes(path: Path) -> bytes:
    """The file's bytes (bounded, regular file only), or ``RunImportError``."""
    try:
        data = read_regular_file(path, MAX_BYTES)
    except OSError as exc:
        raise RunImportError(path, f"cannot read: {exc.strerror or exc}") from None
    if not data.strip():
        raise RunImportError(path, "the file is empty")
    return data


def parse_json(path: Path, data: bytes, infinity: bool = False):
    """JSON of the file, or ``RunImportError`` (truncated, not UTF-8, NaN/Infinity, nesting too deep).

    ``infinity``: read a bare ``Infinity`` as the float (SGLang's bench_serving writes an unbounded request rate
    so, as Python's json does); NaN and -Infinity stay refused, and each figure is validated downstream."""
    def _no_constant(name: str):
        if infinity and name == "Infinity":
            return float("inf")
        raise ValueError(f"{name} is not a number JSON allows")

    try:
        return json.loads(data.decode("utf-8"), parse_constant=_no_constant)
    except UnicodeDecodeError:
        raise RunImportError(path, "not UTF-8 text") from None
    except RecursionError:
        raise RunImportError(path, "JSON nested too deeply") from None
    except ValueError as exc:
        raise RunImportError(path, f"not valid JSON ({exc})") from None


def content_hash(data: bytes, *parts: str) -> str:
    """SHA-256 of the file's bytes (and of what else makes a record unique within one file)."""
    h = hashlib.sha256(data)
    for p in parts:
        h.update(b"\0" + p.encode())
    return h.hexdigest()


def validation_reason(exc: ValidationError) -> str:
    """The first pydantic error as a short phrase: ``field: message``."""
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err.get("loc", ())) or "document"
    return f"{where}: {err.get('msg', 'invalid')}"


def file_time(path: Path) -> str:
    """The file's modification time, ISO 8601 UTC (a run whose file has no date of its own)."""
    try:
        ts = path.stat().st_mtime
    except OSError:
        ts = 0.0
    return _dt.datetime.fromtimestamp(ts, _dt.UTC).isoformat(timespec="seconds")


def finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def machine_of(opts: ImportOptions, *, cpu: str | None = None, gpus: tuple[str, ...] = ()) -> tuple[str | None, str]:
    """``(machine_id, note)`` of a run: another machine when the user says so or when the file names hardware
    that this machine does not have; else this machine (stated or assumed)."""
    if opts.other_machine:
        return None, "another machine (--other-machine)"
    named = [g for g in gpus if g]
    if named and sorted(named) != sorted(opts.this_gpus):
        return None, f"another machine: the file names {', '.join(named)}"
    if not named and cpu and opts.this_cpu and cpu.strip() != opts.this_cpu.strip():
        return None, f"another machine: the file names the CPU {cpu}"
    if named or cpu:
        return opts.this_machine_id, "this machine: the file names its hardware"
    return opts.this_machine_id, "this machine (assumed: imported here; --other-machine says otherwise)"


def model_arch(spec: str | None) -> dict:
    """``{name, params, layers, hidden, heads, vocab}`` of a model spec (``advisor.models``, offline), ``{}``
    when there is none or it cannot be resolved."""
    if not spec:
        return {}
    from advisor.catalog import load_catalog
    from advisor.estimate.model import param_count
    from advisor.models import ModelSpecError, resolve_model

    try:
        model = resolve_model(spec, load_catalog())
    except (ModelSpecError, ValueError, OSError):
        return {}
    a = model.arch
    return {"name": model.name, "params": model.params_exact or param_count(a), "layers": a.layers,
            "hidden": a.hidden, "heads": a.heads, "vocab": a.vocab}
