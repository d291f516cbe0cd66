"""A fleet: the machine profiles (``advisor detect --json``) of many machines, kept in one file.

Gather them anywhere, e.g. on a Slurm cluster ``srun --ntasks-per-node=1 advisor detect --json > nodes.json``
(one file holding the documents of every node back to back is fine), then ``advisor fleet import nodes.json``;
or in one step ``advisor fleet collect --slurm`` (``store.fleet_collect``). A machine is keyed by its
``machine_id`` (``advisor detect --json``: a hash of the OS machine id, MAC addresses and GPU UUIDs), so
a renamed host replaces its old entry and two containers with the same host name stay two machines;
documents without one (older advisors) are keyed by a hash of host name, CPU, memory and GPU UUIDs.
The planner plans against ``fleet_accelerators(fleet)``: catalog accelerator id -> number of GPUs.

The file is JSON (``advisor.fleet/1``) in ``paths.data_dir()``, written atomically under a file lock
(``fleet.json.lock``), so two imports at once keep both; a broken file is kept aside and reported.

Nothing a node sends is trusted: each document is read with ``catalog.readfile.parse_json`` (bounded nesting,
long integers, bad UTF-8 replaced) and checked field by field: a GPU count within the ``--gpus`` flag's range,
memory sizes positive and bounded, catalog ids of the job schema's id form. A document that fails is one line
naming where it came from and the field; the other documents of the same file or collection still import.
A GPU whose memory the node could not read (a laptop GPU asleep) imports with its memory "not read".
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import hashlib
import json
import math
import os
import re
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from advisor import paths
from advisor.catalog.readfile import BadJson, UnreadableFile, parse_json, parse_json_stream, read_regular_file
from advisor.job.bounds import job_range, shown, whole
from advisor.job.schema import _ID_PATTERN
from advisor.store.atomic import keep_aside, locked, write_atomic

SCHEMA = "advisor.fleet/1"
DETECT_SCHEMA = "advisor.detect/1"
FILE_NAME = "fleet.json"
LOCK_TIMEOUT_S = 60.0
_MACHINE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,63}")
_CATALOG_ID = re.compile(_ID_PATTERN)  # the job schema's accelerator id (--accelerator)
# Bounds of what a node may claim. No GPU has a terabyte of memory yet (B300: 288 GB) and no single host 64 TiB
# of RAM (the largest shared-memory servers, HPE Superdome Flex, take 48 TB): beyond these a figure is not true.
MAX_GPU_MEMORY_BYTES = 2**40
MAX_HOST_MEMORY_BYTES = 2**46
MAX_LOGICAL_CORES = 2**20
MAX_TEXT = 256  # host names, CPU and GPU names are cut here
MAX_FILE_BYTES = 256 * 2**20  # a fleet file or detect output: a detect document is about 5 kB


class FleetError(ValueError):
    """A detect document or fleet file that cannot be used; one line naming the file and field."""


class FleetWriteError(FleetError):
    """The fleet file (or its lock) cannot be written: read-only folder, full disk, lock held too long."""


@dataclass(frozen=True)
class FleetGpu:
    """One GPU of a fleet machine."""

    index: int
    name: str
    uuid: str
    memory_total_bytes: int | None  # None: not read (a GPU asleep when the node was asked)
    catalog_id: str | None


@dataclass(frozen=True)
class FleetMachine:
    """One machine's profile, reduced to what planning needs."""

    hostname: str
    cpu_model: str
    logical_cores: int
    memory_total_bytes: int
    gpus: tuple[FleetGpu, ...]
    simulated: bool = False
    imported_at: str = ""
    machine_id: str = ""  # the key; legacy_machine_id() for documents that carry none


@dataclass(frozen=True)
class Fleet:
    """Machines by machine id, in import order."""

    machines: tuple[FleetMachine, ...] = ()
    schema: str = SCHEMA
    # The all-reduce probe across the machines (``fleet collect --allreduce``): busbw_gbps, nodes, measured_at.
    inter_node: dict | None = None


def fleet_file() -> Path:
    """Path of the fleet file (it may not exist)."""
    return paths.data_dir() / FILE_NAME


# ------------------------------------------------------------------------------------------- detect docs
def _need(doc: dict, key: str, kind, where: str):
    value = doc.get(key)
    if isinstance(value, bool) and kind is not bool or not isinstance(value, kind):
        name = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise FleetError(f"{where}: field {key!r} must be {name}, got {shown(value)}")
    return value


def _count(doc: dict, key: str, low: float, high: float, where: str, *, optional: bool = False) -> int | None:
    value = doc.get(key)
    if value is None and optional:
        return None
    try:
        return whole(value, low, high)
    except ValueError as exc:
        raise FleetError(f"{where}: field {key!r} {exc}") from None


def _text(value) -> str:
    return value[:MAX_TEXT] if isinstance(value, str) else ""


def machine_from_detect(doc, where: str = "detect document", imported_at: str = "") -> FleetMachine:
    """A fleet machine from one ``advisor.detect/1`` document.

    A GPU's ``memory_total_bytes`` may be null (not read: a GPU asleep); every other figure must be there
    and true (``MAX_*`` above; at most the ``--gpus`` flag's maximum of GPUs).
    Raises:
        FleetError: naming ``where`` and the bad field.
    """
    if not isinstance(doc, dict):
        raise FleetError(f"{where}: not a JSON object")
    if doc.get("schema") != DETECT_SCHEMA:
        raise FleetError(f"{where}: field 'schema' must be {DETECT_SCHEMA!r}, got {shown(doc.get('schema'))}")
    cpu = _need(doc, "cpu", dict, where)
    mem = _need(doc, "memory", dict, where)
    gpus_in = _need(doc, "gpus", list, where)
    most_gpus = job_range("gpus")[1]
    if len(gpus_in) > most_gpus:
        raise FleetError(f"{where}: field 'gpus' lists {len(gpus_in)} GPUs, more than the {most_gpus:.0f} a plan "
                         "may use (--gpus)")
    host = doc.get("host") if isinstance(doc.get("host"), dict) else {}
    gpus = []
    for i, g in enumerate(gpus_in):
        at = f"{where} gpus[{i}]"
        if not isinstance(g, dict):
            raise FleetError(f"{at}: not a JSON object")
        cat = g.get("catalog_id")
        if cat is not None and not (isinstance(cat, str) and _CATALOG_ID.fullmatch(cat)):
            raise FleetError(f"{at}: field 'catalog_id' must be a catalog id (letters, digits, ._+-) or null, "
                             f"got {shown(cat)}")
        gpus.append(FleetGpu(index=_count(g, "index", 0, most_gpus, at), name=_text(_need(g, "name", str, at)),
                             uuid=_text(g.get("uuid")),
                             memory_total_bytes=_count(g, "memory_total_bytes", 1, MAX_GPU_MEMORY_BYTES, at,
                                                       optional=True),
                             catalog_id=cat))
    hostname = _text(host.get("hostname")) or None
    if hostname is None:  # no name: a stable key from what identifies the hardware
        ident = json.dumps([_text(cpu.get("model")), [g.uuid for g in gpus], shown(mem.get("total_bytes"))])
        hostname = "machine-" + hashlib.sha1(ident.encode()).hexdigest()[:8]
    mid = doc.get("machine_id")
    if mid is not None and not (isinstance(mid, str) and _MACHINE_ID.fullmatch(mid)):
        raise FleetError(f"{where}: field 'machine_id' must be up to 64 letters, digits and ._:-, got {shown(mid)}")
    machine = FleetMachine(hostname=hostname, cpu_model=_text(cpu.get("model")),
                           logical_cores=_count(cpu, "logical_cores", 1, MAX_LOGICAL_CORES, f"{where} cpu"),
                           memory_total_bytes=_count(mem, "total_bytes", 1, MAX_HOST_MEMORY_BYTES, f"{where} memory"),
                           gpus=tuple(gpus), simulated=doc.get("simulated") is True, imported_at=imported_at,
                           machine_id=mid or "")
    return machine if mid else _with_legacy_id(machine)


def legacy_machine_id(m: FleetMachine) -> str:
    """The key of a machine whose document has no ``machine_id``: host name, CPU, memory and GPU UUIDs."""
    ident = json.dumps([m.hostname, m.cpu_model, m.memory_total_bytes, sorted(g.uuid for g in m.gpus)])
    return "h-" + hashlib.sha256(ident.encode()).hexdigest()[:16]


def _with_legacy_id(m: FleetMachine) -> FleetMachine:
    from dataclasses import replace

    return replace(m, machine_id=legacy_machine_id(m))


def parse_detect_text(text: str | bytes, where: str = "detect output") -> list:
    """The JSON documents in ``text``: one document, a JSON array of them, or several back to back
    (as ``srun ... advisor detect --json`` prints them). Bytes that are not UTF-8 are replaced. A document
    that is not JSON is a :class:`FleetError` in the list (naming ``where``), the others are still read.

    Raises:
        FleetError: the text holds no document at all.
    """
    if not (text.strip() if isinstance(text, str) else text.strip()):
        raise FleetError(f"{where}: no detect documents (empty file)")
    docs: list = []
    for value in parse_json_stream(text):
        if isinstance(value, BadJson):
            docs.append(FleetError(f"{where}: {value}"))
        else:
            docs.extend(value if isinstance(value, list) else [value])
    return docs


def machines_from_text(text: str | bytes, where: str, stamp: str = "") -> tuple[list[FleetMachine], list[str]]:
    """The machines of one file or reply and the documents refused, one line each (the others still count).

    Raises:
        FleetError: the text holds no document.
    """
    docs = parse_detect_text(text, where)
    machines, failures = [], []
    for i, doc in enumerate(docs):
        try:
            if isinstance(doc, FleetError):
                raise doc
            machines.append(machine_from_detect(doc, where if len(docs) == 1 else f"{where} document {i + 1}", stamp))
        except FleetError as exc:
            failures.append(" ".join(str(exc).split()))
    return machines, failures


def read_detect_files(files) -> tuple[list[FleetMachine], list[str]]:
    """Fleet machines from detect output files, and the files or documents refused (one line each, naming
    the file and the field); a bad document does not stop the others."""
    stamp = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    machines, failures = [], []
    for f in files:
        path = Path(f)
        try:
            found, bad = machines_from_text(read_regular_file(path, MAX_FILE_BYTES), str(path), stamp)
        except UnreadableFile as exc:
            failures.append(f"{path}: cannot read: {exc.strerror}")
            continue
        except OSError as exc:
            failures.append(f"{path}: cannot read: {exc.strerror or exc}")
            continue
        except FleetError as exc:
            failures.append(" ".join(str(exc).split()))
            continue
        machines.extend(found)
        failures.extend(bad)
    return machines, failures


# ------------------------------------------------------------------------------------------ fleet file
def merge_machines(fleet: Fleet, machines, inter_node: dict | None = None) -> Fleet:
    """The fleet with ``machines`` added; a machine with a known machine id replaces the old entry
    (a renamed host), machines with the same host name but other ids stay apart. ``inter_node`` (a new
    all-reduce measurement) replaces the old one."""
    by_id = {m.machine_id: m for m in fleet.machines}
    for m in machines:
        by_id[m.machine_id] = m
    return Fleet(machines=tuple(by_id.values()), inter_node=inter_node or fleet.inter_node)


def fleet_to_dict(fleet: Fleet) -> dict:
    return {"schema": SCHEMA, "machines": [asdict(m) for m in fleet.machines],
            "accelerators": fleet_accelerators(fleet), "inter_node": fleet.inter_node}


def fleet_from_dict(doc, where: str = "fleet", warnings: list | None = None) -> Fleet:
    """The fleet of a saved document; a machine entry that cannot be used is skipped (a line in ``warnings``
    naming the entry and field, when given).

    Raises:
        FleetError: the document itself is not a fleet (schema, machines list, inter_node).
    """
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise FleetError(f"{where}: field 'schema' must be {SCHEMA!r}")
    machines = []
    for i, m in enumerate(_need(doc, "machines", list, where)):
        try:
            machines.append(_saved_machine(m, f"{where} machines[{i}]"))
        except FleetError as exc:
            if warnings is not None:
                warnings.append(f"{' '.join(str(exc).split())}: skipped")
    inter = doc.get("inter_node")
    if inter is not None and not (isinstance(inter, dict) and isinstance(inter.get("busbw_gbps"), (int, float))
                                  and math.isfinite(inter["busbw_gbps"]) and inter["busbw_gbps"] > 0):
        raise FleetError(f"{where}: field 'inter_node' must hold a positive busbw_gbps")
    return Fleet(machines=tuple(machines), inter_node=inter)


def _saved_machine(m, at: str) -> FleetMachine:
    """One machine of the fleet file, checked as a node's document is."""
    if not isinstance(m, dict):
        raise FleetError(f"{at}: not a JSON object")
    gpus_in = _need(m, "gpus", list, at)
    if len(gpus_in) > job_range("gpus")[1]:
        raise FleetError(f"{at}: field 'gpus' lists {len(gpus_in)} GPUs")
    gpus = []
    for j, g in enumerate(gpus_in):
        g_at = f"{at} gpus[{j}]"
        if not isinstance(g, dict):
            raise FleetError(f"{g_at}: not a JSON object")
        cat = g.get("catalog_id")
        if cat is not None and not (isinstance(cat, str) and _CATALOG_ID.fullmatch(cat)):
            raise FleetError(f"{g_at}: field 'catalog_id' is not a catalog id")
        gpus.append(FleetGpu(index=_count(g, "index", 0, job_range("gpus")[1], g_at),
                             name=_text(_need(g, "name", str, g_at)), uuid=_text(g.get("uuid")),
                             memory_total_bytes=_count(g, "memory_total_bytes", 1, MAX_GPU_MEMORY_BYTES, g_at,
                                                       optional=True), catalog_id=cat))
    mid = m.get("machine_id")
    if mid is not None and not (isinstance(mid, str) and (mid == "" or _MACHINE_ID.fullmatch(mid))):
        raise FleetError(f"{at}: field 'machine_id' is not a machine id")
    machine = FleetMachine(hostname=_text(_need(m, "hostname", str, at)), cpu_model=_text(m.get("cpu_model")),
                           logical_cores=_count(m, "logical_cores", 1, MAX_LOGICAL_CORES, at),
                           memory_total_bytes=_count(m, "memory_total_bytes", 1, MAX_HOST_MEMORY_BYTES, at),
                           gpus=tuple(gpus), simulated=m.get("simulated") is True,
                           imported_at=_text(m.get("imported_at")), machine_id=mid or "")
    return machine if machine.machine_id else _with_legacy_id(machine)


def load_fleet(path: str | os.PathLike | None = None) -> Fleet:
    """The saved fleet (empty when there is none).

    A file that cannot be read as a fleet is moved aside (``<name>.broken-<time>``), reported on stderr,
    and treated as an empty fleet.
    """
    path = Path(path) if path is not None else fleet_file()
    if not path.exists():
        return Fleet()
    warnings: list[str] = []
    try:
        fleet = fleet_from_dict(parse_json(read_regular_file(path, MAX_FILE_BYTES)), str(path), warnings)
        for line in warnings:  # one machine entry that cannot be used: the rest of the fleet still plans
            print(f"warning: {line}", file=sys.stderr)
        return fleet
    except UnreadableFile as exc:
        raise FleetError(f"cannot read the fleet file {path}: {exc.strerror}") from None
    except OSError as exc:
        raise FleetError(f"cannot read the fleet file {path}: {exc.strerror or exc}") from None
    except (BadJson, FleetError) as exc:
        why = " ".join(str(exc).split())
        try:
            aside = keep_aside(path)
        except OSError as err:  # a read-only folder: report, keep the file where it is
            print(f"warning: fleet file {path} is broken ({why}); it could not be moved aside "
                  f"({err.strerror or err})", file=sys.stderr)
            return Fleet()
        print(f"warning: fleet file {path} is broken ({why}); kept as {aside}", file=sys.stderr)
        return Fleet()


def save_fleet(fleet: Fleet, path: str | os.PathLike | None = None) -> Path:
    """Write the fleet file atomically. Returns the path.

    Raises:
        FleetWriteError: the folder cannot be written (the old file is then untouched).
    """
    path = Path(path) if path is not None else fleet_file()
    try:
        return write_atomic(path, json.dumps(fleet_to_dict(fleet), indent=1, allow_nan=False) + "\n")
    except OSError as exc:
        raise FleetWriteError(f"cannot write the fleet file {path}: {exc.strerror or exc}") from None


@contextlib.contextmanager
def fleet_lock(path: str | os.PathLike | None = None, timeout_s: float = LOCK_TIMEOUT_S):
    """Hold the fleet file's lock (``store.atomic.locked``) around a read-modify-write of it.

    Raises:
        FleetWriteError: the lock file cannot be created (read-only folder) or stays held past the timeout.
    """
    path = Path(path) if path is not None else fleet_file()
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(locked(path, timeout_s))
        except OSError as exc:
            if exc.errno == errno.EBUSY:
                raise FleetWriteError(f"the fleet file {path} is locked by another advisor for {timeout_s:.0f} s") from None
            raise FleetWriteError(f"cannot lock the fleet file {path}: {exc.strerror or exc}") from None
        yield


def import_machines(machines, path: str | os.PathLike | None = None, inter_node: dict | None = None) -> Fleet:
    """Merge machines (and an inter-node all-reduce figure) into the saved fleet under the file lock.

    Returns:
        The saved fleet.
    Raises:
        FleetWriteError: the fleet file cannot be locked or written (it is then untouched).
    """
    with fleet_lock(path):
        fleet = merge_machines(load_fleet(path), machines, inter_node)
        save_fleet(fleet, path)
    return fleet


def clear_fleet(path: str | os.PathLike | None = None) -> Path:
    """Forget every machine (under the file lock). Returns the path. Raises FleetWriteError."""
    with fleet_lock(path):
        return save_fleet(Fleet(), path)


def import_detect_files(files, path: str | os.PathLike | None = None) -> tuple[Fleet, list[FleetMachine], list[str]]:
    """Read detect files and merge the good documents into the saved fleet.

    Returns:
        (the saved fleet, the machines imported, the files and documents refused, one line each).
    Raises:
        FleetError: no document could be used (naming the first reason), or FleetWriteError (the fleet file
            is then untouched).
    """
    machines, failures = read_detect_files(files)
    if not machines:
        raise FleetError(failures[0] if failures else "no detect documents")
    return import_machines(machines, path), machines, failures


# ------------------------------------------------------------------------------------------- planning
def fleet_accelerators(fleet: Fleet) -> dict[str, int]:
    """Catalog accelerator id -> number of such GPUs in the fleet (GPUs not in the catalog are left out)."""
    out: dict[str, int] = {}
    for m in fleet.machines:
        for g in m.gpus:
            if g.catalog_id and _CATALOG_ID.fullmatch(g.catalog_id):
                out[g.catalog_id] = out.get(g.catalog_id, 0) + 1
    return dict(sorted(out.items()))


def fleet_unmatched(fleet: Fleet) -> dict[str, int]:
    """Driver name -> count of the fleet's GPUs that have no catalog id (the planner cannot use them)."""
    out: dict[str, int] = {}
    for m in fleet.machines:
        for g in m.gpus:
            if not g.catalog_id:
                out[g.name] = out.get(g.name, 0) + 1
    return out


def fleet_nodes(fleet: Fleet, accelerator_id: str) -> list[tuple[str, int]]:
    """(host name, GPUs of ``accelerator_id``) for each machine holding that accelerator, most GPUs first."""
    rows = [(m.hostname, sum(1 for g in m.gpus if g.catalog_id == accelerator_id)) for m in fleet.machines]
    return sorted([r for r in rows if r[1]], key=lambda r: (-r[1], r[0]))
