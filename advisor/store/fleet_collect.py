"""Collect a fleet with the cluster's own launcher: one ``advisor detect --json`` per node through Slurm's
``srun`` (or ``ssh`` for machines without a scheduler), imported in one step; optionally the all-reduce
probe across the same nodes (through ``srun`` and ``torchrun``'s c10d rendezvous).

Every command is an argument list (never a shell string); node and host names are validated against
RFC 1123 host names before they reach a command line; the advisor command run on the nodes is checked
to be plain words (no shell metacharacters).
"""

from __future__ import annotations

import datetime as _dt
import json
import re
import subprocess
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from advisor.catalog.readfile import UnreadableFile, decode_text, read_regular_file
from advisor.store.fleet import FleetError, FleetMachine, machines_from_text

HOSTNAME = re.compile(r"(?=.{1,253}\Z)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                      r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*")
PARTITION = re.compile(r"[A-Za-z0-9_.-]{1,64}")
WORD = re.compile(r"[A-Za-z0-9_./=:+-]{1,256}")
DEFAULT_ADVISOR = ("advisor",)
TIMEOUT_S = 300.0
ALLREDUCE_PORT = 29511
MAX_REPLY_BYTES = 4 * 2**20  # one node's detect document is about 5 kB; a reply over this is refused
MAX_HOSTS_FILE_BYTES = 2**20

Runner = Callable[..., subprocess.CompletedProcess]


@dataclass(frozen=True)
class CollectResult:
    """What a collection brought back: machines (validated detect documents) and the failures, one line each."""

    machines: tuple[FleetMachine, ...]
    failures: tuple[str, ...] = ()


def check_host(name: str, where: str = "host") -> str:
    """``name`` when it is a valid host name (RFC 1123), else FleetError naming it."""
    if not isinstance(name, str) or not HOSTNAME.fullmatch(name):
        raise FleetError(f"{where}: {name!r} is not a valid host name")
    return name


def check_partition(name: str) -> str:
    if not PARTITION.fullmatch(name or ""):
        raise FleetError(f"--partition: {name!r} is not a valid Slurm partition name")
    return name


def check_advisor_command(words: Sequence[str]) -> tuple[str, ...]:
    """The command that runs the advisor on the nodes, as plain words (``advisor`` or ``python3 -m advisor``)."""
    words = tuple(words)
    if not words or not all(isinstance(w, str) and WORD.fullmatch(w) for w in words):
        raise FleetError(f"--advisor: {' '.join(map(str, words))!r} must be plain words (letters, digits, ./_=:+-)")
    return words


def read_hosts_file(path: str | Path) -> list[str]:
    """Host names from a file, one per line; blank lines and ``#`` comments skipped; duplicates dropped.

    Raises:
        FleetError: unreadable file or an invalid name (naming the line).
    """
    path = Path(path)
    try:
        text = decode_text(read_regular_file(path, MAX_HOSTS_FILE_BYTES))  # a FIFO or /dev/zero is refused
    except UnreadableFile as exc:
        raise FleetError(f"{path}: cannot read: {exc.strerror}") from None
    except OSError as exc:
        raise FleetError(f"{path}: cannot read: {exc.strerror or exc}") from None
    hosts: list[str] = []
    for i, line in enumerate(text.splitlines(), start=1):
        name = line.split("#", 1)[0].strip()
        if name:
            check_host(name, f"{path} line {i}")
            if name not in hosts:
                hosts.append(name)
    if not hosts:
        raise FleetError(f"{path}: no host names")
    return hosts


def detect_args(advisor: Sequence[str] = DEFAULT_ADVISOR) -> list[str]:
    return [*check_advisor_command(advisor), "detect", "--json", "--no-frameworks"]


def sinfo_command(partition: str | None) -> list[str]:
    cmd = ["sinfo", "--noheader", "--Node", "--format=%N"]
    return cmd + ([f"--partition={check_partition(partition)}"] if partition else [])


def srun_prefix(nodes: Sequence[str], partition: str | None) -> list[str]:
    cmd = ["srun", f"--nodes={len(nodes)}", "--ntasks-per-node=1", f"--nodelist={','.join(nodes)}"]
    return cmd + ([f"--partition={check_partition(partition)}"] if partition else [])


def ssh_command(host: str, advisor: Sequence[str] = DEFAULT_ADVISOR) -> list[str]:
    return ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "--", check_host(host), *detect_args(advisor)]


def allreduce_command(nodes: Sequence[str], partition: str | None, advisor: Sequence[str] = DEFAULT_ADVISOR,
                      port: int = ALLREDUCE_PORT) -> list[str]:
    """``srun`` one ``torchrun`` per node, ranks agreed by c10d rendezvous on the first node, running
    ``advisor probe allreduce --json`` (rank 0 prints the result)."""
    first = check_host(nodes[0], "node")
    adv = check_advisor_command(advisor)
    module = ["-m", "advisor"] if adv == DEFAULT_ADVISOR or adv[-2:] == ("-m", "advisor") else None
    if module is None:
        raise FleetError("--allreduce needs the advisor as a Python module on the nodes (--advisor 'python3 -m advisor')")
    python = adv[0] if adv[-2:] == ("-m", "advisor") else "python3"
    return [*srun_prefix(nodes, partition), python, "-m", "torch.distributed.run", f"--nnodes={len(nodes)}",
            "--nproc-per-node=1", "--rdzv-backend=c10d", f"--rdzv-endpoint={first}:{port}", "--rdzv-id=advisor-fleet",
            *module, "probe", "allreduce", "--json", "--no-save", "--quick"]


def bounded_run(cmd: list[str], *, timeout: float | None = None, max_bytes: int = MAX_REPLY_BYTES,
                **_kw) -> subprocess.CompletedProcess:
    """``subprocess.run`` for a command whose output is not trusted: stdout is kept up to ``max_bytes + 1``
    bytes (the command is then killed: a node answering 200 MB never fills the memory), stderr's last 4 KiB.

    Raises:
        subprocess.TimeoutExpired: the command ran past ``timeout`` (it is killed).
        FileNotFoundError: the program does not exist.
    """
    out, err = bytearray(), bytearray()
    with subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        def pump_out() -> None:
            while len(out) <= max_bytes:
                chunk = proc.stdout.read1(1 << 16)
                if not chunk:
                    return
                out.extend(chunk)
            proc.kill()  # enough: the reply is refused for its size, the rest is not waited for

        def pump_err() -> None:
            while chunk := proc.stderr.read1(1 << 16):
                err.extend(chunk)
                del err[:-4096]

        pumps = [threading.Thread(target=f, daemon=True) for f in (pump_out, pump_err)]
        for t in pumps:
            t.start()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
        finally:
            for t in pumps:
                t.join(5)
    return subprocess.CompletedProcess(cmd, proc.returncode, bytes(out), bytes(err))


def _run(run: Runner, cmd: list[str], timeout_s: float, max_bytes: int = MAX_REPLY_BYTES) -> subprocess.CompletedProcess:
    """Run ``cmd``; its output comes back as text, bytes that are not UTF-8 replaced (a node's reply is not
    trusted to be text), at most ``max_bytes`` of it kept by the default runner."""
    try:
        proc = run(cmd, capture_output=True, timeout=timeout_s, check=False, max_bytes=max_bytes)
    except FileNotFoundError:
        raise FleetError(f"{cmd[0]} not found: is this a Slurm login node (or ssh installed)?") from None
    except subprocess.TimeoutExpired:
        raise FleetError(f"{cmd[0]} did not finish within {timeout_s:.0f} s") from None
    out, err = proc.stdout or b"", proc.stderr or b""
    return subprocess.CompletedProcess(proc.args, proc.returncode,
                                       decode_text(out) if isinstance(out, bytes) else out,
                                       decode_text(err[-4096:]) if isinstance(err, bytes) else err[-4096:])


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return lines[-1][:200] if lines else "no output"


def slurm_nodes(partition: str | None = None, *, run: Runner = bounded_run, timeout_s: float = 60.0) -> list[str]:
    """Node names of the partition (or the cluster) from ``sinfo``, validated, in order, without repeats."""
    proc = _run(run, sinfo_command(partition), timeout_s)
    if proc.returncode != 0:
        raise FleetError(f"sinfo failed: {_last_line(proc.stderr)}")
    nodes: list[str] = []
    for name in proc.stdout.split():
        check_host(name, "sinfo node")
        if name not in nodes:
            nodes.append(name)
    if not nodes:
        raise FleetError(f"sinfo lists no node{' in partition ' + partition if partition else ''}")
    return nodes


def _machines(text: str, where: str, stamp: str, nodes: int = 1) -> tuple[list[FleetMachine], list[str]]:
    """The machines of a reply and the documents refused (one line each); the reply's size is bounded."""
    if len(text) > MAX_REPLY_BYTES * nodes:
        raise FleetError(f"{where}: a reply of {len(text) / 2**20:.0f} MiB, over the limit of "
                         f"{MAX_REPLY_BYTES * nodes / 2**20:.0f} MiB ({MAX_REPLY_BYTES / 2**20:.0f} MiB a node): refused")
    return machines_from_text(text, where, stamp)


def collect_slurm(partition: str | None = None, *, advisor: Sequence[str] = DEFAULT_ADVISOR,
                  run: Runner = bounded_run, timeout_s: float = TIMEOUT_S,
                  nodes: Sequence[str] | None = None) -> tuple[CollectResult, list[str]]:
    """One ``advisor detect --json`` per node through ``srun``.

    Returns:
        (the machines, the node names used).
    Raises:
        FleetError: sinfo/srun missing or failing, or output that is not detect documents.
    """
    nodes = list(nodes) if nodes else slurm_nodes(partition, run=run)
    for n in nodes:
        check_host(n, "node")
    stamp = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    proc = _run(run, [*srun_prefix(nodes, partition), *detect_args(advisor)], timeout_s, MAX_REPLY_BYTES * len(nodes))
    if proc.returncode != 0 and not proc.stdout.strip():
        raise FleetError(f"srun failed: {_last_line(proc.stderr)}")
    machines, bad = _machines(proc.stdout, "srun output", stamp, len(nodes))
    failures = tuple(bad)
    if proc.returncode != 0:
        failures += (f"srun exited {proc.returncode}: {_last_line(proc.stderr)}",)
    if len(machines) < len(nodes):
        failures += (f"{len(nodes) - len(machines)} of {len(nodes)} nodes sent no detect document",)
    return CollectResult(tuple(machines), failures), nodes


def collect_hosts(hosts: Sequence[str], *, advisor: Sequence[str] = DEFAULT_ADVISOR, run: Runner = bounded_run,
                  timeout_s: float = 120.0) -> CollectResult:
    """One ``advisor detect --json`` per host over ``ssh`` (batch mode: keys, no password prompts).

    A host that fails is reported (one line) and the others are still collected.
    """
    stamp = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    machines: list[FleetMachine] = []
    failures: list[str] = []
    for host in hosts:
        try:
            proc = _run(run, ssh_command(host, advisor), timeout_s)
            if proc.returncode != 0:
                raise FleetError(f"ssh exited {proc.returncode}: {_last_line(proc.stderr)}")
            found, bad = _machines(proc.stdout, f"{host}", stamp)
            machines.extend(found)
            failures.extend(bad)
        except FleetError as exc:
            line = " ".join(str(exc).split())
            failures.append(line if line.startswith(f"{host}: ") else f"{host}: {line}")
    return CollectResult(tuple(machines), tuple(failures))


def measure_allreduce(nodes: Sequence[str], partition: str | None = None, *,
                      advisor: Sequence[str] = DEFAULT_ADVISOR, run: Runner = bounded_run,
                      timeout_s: float = TIMEOUT_S) -> dict:
    """The all-reduce probe across ``nodes``: ``{"busbw_gbps", "nodes", "measured_at", "size_bytes"}``.

    Raises:
        FleetError: the launch failed or printed no probe document.
    """
    proc = _run(run, allreduce_command(nodes, partition, advisor), timeout_s)
    doc = None
    decoder = json.JSONDecoder()
    text, pos = proc.stdout or "", 0
    while True:
        start = text.find("{", pos)
        if start < 0:
            break
        try:
            value, pos = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            pos = start + 1
            continue
        if isinstance(value, dict) and value.get("schema") == "advisor.probe/1":
            doc = value
    if doc is None or doc.get("skipped"):
        why = doc.get("skipped") if doc else _last_line(proc.stderr)
        raise FleetError(f"all-reduce across {len(nodes)} nodes failed: {why}")
    bus = (doc.get("results") or {}).get("busbw")
    best = bus.get("best") if isinstance(bus, dict) else None
    if not isinstance(best, (int, float)) or best <= 0:
        raise FleetError("all-reduce probe printed no bus bandwidth")
    return {"busbw_gbps": float(best), "nodes": len(nodes),
            "measured_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")}
