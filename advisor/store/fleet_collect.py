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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from advisor.catalog.readfile import UnreadableFile, decode_text, read_regular_file
from advisor.store.fleet import FleetError, FleetMachine, machines_from_text
from advisor.subproc import bounded_run

HOSTNAME = re.compile(r"(?=.{1,253}\Z)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                      r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*")
PARTITION = re.compile(r"[A-Za-z0-9_.-]{1,64}")
WORD = re.compile(r"[A-Za-z0-9_./=:+-]{1,256}")
DEFAULT_ADVISOR = ("advisor",)
TIMEOUT_S = 300.0
ALLREDUCE_PORT = 29511
MAX_REPLY_BYTES = 4 * 2**20  # one node's detect document is about 5 kB; a reply over this is refused
MAX_HOSTS_FILE_BYTES = 2**20
SSH_PARALLEL = 16  # hosts asked at once: one that does not answer holds up only its own slot

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


class NoAnswer(FleetError):
    """The command ran past its deadline; ``partial`` is the text it printed before (its group is ended)."""

    def __init__(self, message: str, partial: str = "") -> None:
        super().__init__(message)
        self.partial = partial


def no_answer(timeout_s: float) -> str:
    return f"no answer within {timeout_s:g} s"


def _run(run: Runner, cmd: list[str], timeout_s: float, max_bytes: int = MAX_REPLY_BYTES) -> subprocess.CompletedProcess:
    """Run ``cmd``; its output comes back as text, bytes that are not UTF-8 replaced (a node's reply is not
    trusted to be text), at most ``max_bytes`` of it kept by the default runner.

    Raises:
        NoAnswer: past ``timeout_s`` (the command and whatever it started are ended by ``advisor.subproc``).
        FleetError: the program is missing.
    """
    try:
        proc = run(cmd, capture_output=True, timeout=timeout_s, check=False, max_bytes=max_bytes)
    except FileNotFoundError:
        raise FleetError(f"{cmd[0]} not found: is this a Slurm login node (or ssh installed)?") from None
    except subprocess.TimeoutExpired as exc:
        partial = exc.output or b""
        raise NoAnswer(f"{cmd[0]}: {no_answer(timeout_s)}",
                       decode_text(partial[:max_bytes]) if isinstance(partial, bytes) else partial) from None
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
    late = False
    try:
        proc = _run(run, [*srun_prefix(nodes, partition), *detect_args(advisor)], timeout_s, MAX_REPLY_BYTES * len(nodes))
    except NoAnswer as exc:  # the nodes that answered before the deadline are kept
        late = True
        proc = subprocess.CompletedProcess([], None, exc.partial, "")
    if proc.returncode != 0 and not proc.stdout.strip():
        raise FleetError(f"srun: {no_answer(timeout_s)}" if late else f"srun failed: {_last_line(proc.stderr)}")
    machines, bad = _machines(proc.stdout, "srun output", stamp, len(nodes))
    failures = tuple(bad)
    if proc.returncode not in (0, None):
        failures += (f"srun exited {proc.returncode}: {_last_line(proc.stderr)}",)
    if len(machines) < len(nodes):
        names = {m.hostname.split(".")[0] for m in machines}
        silent = [n for n in nodes if n.split(".")[0] not in names]
        if late and len(silent) == len(nodes) - len(machines):
            failures += tuple(f"{n}: {no_answer(timeout_s)}" for n in silent)
        else:
            why = no_answer(timeout_s) if late else "sent no detect document"
            failures += (f"{len(nodes) - len(machines)} of {len(nodes)} nodes: {why}",)
    return CollectResult(tuple(machines), failures), nodes


def collect_hosts(hosts: Sequence[str], *, advisor: Sequence[str] = DEFAULT_ADVISOR, run: Runner = bounded_run,
                  timeout_s: float = 120.0, parallel: int = SSH_PARALLEL) -> CollectResult:
    """One ``advisor detect --json`` per host over ``ssh`` (batch mode: keys, no password prompts), up to
    ``parallel`` hosts at once, each bounded by ``timeout_s``.

    A host that fails or does not answer in time is reported (one line) and the others are still collected.
    """
    from concurrent.futures import ThreadPoolExecutor

    stamp = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    commands = [ssh_command(host, advisor) for host in hosts]  # every name validated before anything starts

    def one(host: str, cmd: list[str]) -> tuple[list[FleetMachine], list[str]]:
        try:
            proc = _run(run, cmd, timeout_s)
            if proc.returncode != 0:
                raise FleetError(f"ssh exited {proc.returncode}: {_last_line(proc.stderr)}")
            return _machines(proc.stdout, f"{host}", stamp)
        except NoAnswer:
            return [], [f"{host}: {no_answer(timeout_s)}"]
        except FleetError as exc:
            line = " ".join(str(exc).split())
            return [], [line if line.startswith(f"{host}: ") else f"{host}: {line}"]

    machines: list[FleetMachine] = []
    failures: list[str] = []
    with ThreadPoolExecutor(max_workers=max(1, min(parallel, len(hosts))), thread_name_prefix="fleet-ssh") as pool:
        for found, bad in pool.map(one, hosts, commands):
            machines.extend(found)
            failures.extend(bad)
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
