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
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import hashlib
import json
import os
import re
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from advisor import paths
from advisor.store.atomic import keep_aside, locked, write_atomic

SCHEMA = "advisor.fleet/1"
DETECT_SCHEMA = "advisor.detect/1"
FILE_NAME = "fleet.json"
LOCK_TIMEOUT_S = 60.0
_MACHINE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,63}")


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
    memory_total_bytes: int
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
        raise FleetError(f"{where}: field {key!r} must be {name}, got {value!r}")
    return value


def machine_from_detect(doc, where: str = "detect document", imported_at: str = "") -> FleetMachine:
    """A fleet machine from one ``advisor.detect/1`` document.

    Raises:
        FleetError: naming ``where`` and the bad field.
    """
    if not isinstance(doc, dict):
        raise FleetError(f"{where}: not a JSON object")
    if doc.get("schema") != DETECT_SCHEMA:
        raise FleetError(f"{where}: field 'schema' must be {DETECT_SCHEMA!r}, got {doc.get('schema')!r}")
    cpu = _need(doc, "cpu", dict, where)
    mem = _need(doc, "memory", dict, where)
    gpus_in = _need(doc, "gpus", list, where)
    host = doc.get("host") if isinstance(doc.get("host"), dict) else {}
    gpus = []
    for i, g in enumerate(gpus_in):
        at = f"{where} gpus[{i}]"
        if not isinstance(g, dict):
            raise FleetError(f"{at}: not a JSON object")
        cat = g.get("catalog_id")
        if cat is not None and not isinstance(cat, str):
            raise FleetError(f"{at}: field 'catalog_id' must be a string or null")
        gpus.append(FleetGpu(index=_need(g, "index", int, at), name=_need(g, "name", str, at),
                             uuid=str(g.get("uuid") or ""), memory_total_bytes=_need(g, "memory_total_bytes", int, at),
                             catalog_id=cat))
    hostname = host.get("hostname") if isinstance(host.get("hostname"), str) and host.get("hostname") else None
    if hostname is None:  # no name: a stable key from what identifies the hardware
        ident = json.dumps([cpu.get("model"), [g.uuid for g in gpus], mem.get("total_bytes")])
        hostname = "machine-" + hashlib.sha1(ident.encode()).hexdigest()[:8]
    mid = doc.get("machine_id")
    if mid is not None and not (isinstance(mid, str) and _MACHINE_ID.fullmatch(mid)):
        raise FleetError(f"{where}: field 'machine_id' must be up to 64 letters, digits and ._:-, got {mid!r}")
    machine = FleetMachine(hostname=hostname, cpu_model=str(cpu.get("model") or ""),
                           logical_cores=_need(cpu, "logical_cores", int, f"{where} cpu"),
                           memory_total_bytes=_need(mem, "total_bytes", int, f"{where} memory"),
                           gpus=tuple(gpus), simulated=bool(doc.get("simulated", False)), imported_at=imported_at,
                           machine_id=mid or "")
    return machine if mid else _with_legacy_id(machine)


def legacy_machine_id(m: FleetMachine) -> str:
    """The key of a machine whose document has no ``machine_id``: host name, CPU, memory and GPU UUIDs."""
    ident = json.dumps([m.hostname, m.cpu_model, m.memory_total_bytes, sorted(g.uuid for g in m.gpus)])
    return "h-" + hashlib.sha256(ident.encode()).hexdigest()[:16]


def _with_legacy_id(m: FleetMachine) -> FleetMachine:
    from dataclasses import replace

    return replace(m, machine_id=legacy_machine_id(m))


def parse_detect_text(text: str, where: str = "detect output") -> list[dict]:
    """The JSON documents in ``text``: one document, a JSON array of them, or several back to back
    (as ``srun ... advisor detect --json`` prints them).

    Raises:
        FleetError: naming ``where`` and the position of the first bad byte.
    """
    decoder = json.JSONDecoder()
    docs: list = []
    pos, n = 0, len(text)
    while True:
        while pos < n and text[pos].isspace():
            pos += 1
        if pos >= n:
            break
        try:
            value, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise FleetError(f"{where}: not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
        docs.extend(value if isinstance(value, list) else [value])
    if not docs:
        raise FleetError(f"{where}: no detect documents (empty file)")
    return docs


def read_detect_files(files) -> list[FleetMachine]:
    """Fleet machines from detect output files; all are validated before any is returned.

    Raises:
        FleetError: for the first unreadable file or bad document (naming the file and field).
    """
    stamp = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    machines = []
    for f in files:
        path = Path(f)
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise FleetError(f"{path}: cannot read: {exc.strerror or exc}") from None
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise FleetError(f"{path}: not UTF-8 text (byte {exc.start})") from None
        docs = parse_detect_text(text, str(path))
        for i, doc in enumerate(docs):
            where = str(path) if len(docs) == 1 else f"{path} document {i + 1}"
            machines.append(machine_from_detect(doc, where, stamp))
    return machines


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


def fleet_from_dict(doc, where: str = "fleet") -> Fleet:
    """Raises FleetError naming the bad field."""
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise FleetError(f"{where}: field 'schema' must be {SCHEMA!r}")
    machines = []
    for i, m in enumerate(_need(doc, "machines", list, where)):
        at = f"{where} machines[{i}]"
        if not isinstance(m, dict):
            raise FleetError(f"{at}: not a JSON object")
        gpus = []
        for j, g in enumerate(_need(m, "gpus", list, at)):
            if not isinstance(g, dict):
                raise FleetError(f"{at} gpus[{j}]: not a JSON object")
            try:
                gpus.append(FleetGpu(**g))
            except TypeError as exc:
                raise FleetError(f"{at} gpus[{j}]: {exc}") from None
        mid = m.get("machine_id")
        if mid is not None and not (isinstance(mid, str) and (mid == "" or _MACHINE_ID.fullmatch(mid))):
            raise FleetError(f"{at}: field 'machine_id' is not a machine id")
        machine = FleetMachine(hostname=_need(m, "hostname", str, at), cpu_model=str(m.get("cpu_model", "")),
                               logical_cores=_need(m, "logical_cores", int, at),
                               memory_total_bytes=_need(m, "memory_total_bytes", int, at), gpus=tuple(gpus),
                               simulated=bool(m.get("simulated", False)),
                               imported_at=str(m.get("imported_at", "")), machine_id=mid or "")
        machines.append(machine if machine.machine_id else _with_legacy_id(machine))
    inter = doc.get("inter_node")
    if inter is not None and not (isinstance(inter, dict) and isinstance(inter.get("busbw_gbps"), (int, float))
                                  and inter["busbw_gbps"] > 0):
        raise FleetError(f"{where}: field 'inter_node' must hold a positive busbw_gbps")
    return Fleet(machines=tuple(machines), inter_node=inter)


def load_fleet(path: str | os.PathLike | None = None) -> Fleet:
    """The saved fleet (empty when there is none).

    A file that cannot be read as a fleet is moved aside (``<name>.broken-<time>``), reported on stderr,
    and treated as an empty fleet.
    """
    path = Path(path) if path is not None else fleet_file()
    if not path.exists():
        return Fleet()
    try:
        return fleet_from_dict(json.loads(path.read_bytes().decode("utf-8")), str(path))
    except OSError as exc:
        raise FleetError(f"cannot read the fleet file {path}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError, FleetError) as exc:
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


def import_detect_files(files, path: str | os.PathLike | None = None) -> tuple[Fleet, list[FleetMachine]]:
    """Read detect files and merge them into the saved fleet; nothing is saved when any file is bad.

    Returns:
        (the saved fleet, the machines imported).
    Raises:
        FleetError: naming the bad file and field, or FleetWriteError (the fleet file is then untouched).
    """
    machines = read_detect_files(files)
    return import_machines(machines, path), machines


# ------------------------------------------------------------------------------------------- planning
def fleet_accelerators(fleet: Fleet) -> dict[str, int]:
    """Catalog accelerator id -> number of such GPUs in the fleet (GPUs not in the catalog are left out)."""
    out: dict[str, int] = {}
    for m in fleet.machines:
        for g in m.gpus:
            if g.catalog_id:
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
