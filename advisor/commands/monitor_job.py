"""``advisor monitor --pid PID``: follow one job to its end, print its books, and keep them as a run record.

    advisor monitor --pid 12345 [--tokens N | --trainer-state FILE] [--save FILE] [--save-run]

The summary line is the process's books (``monitor.accounting``): wall time, GPU-hours, energy, cost at the
electricity price, peak GPU memory and mean utilisation. ``--save FILE`` writes them as an ``advisor.job/1``
document (what ``advisor runs import`` reads); ``--save-run`` stores them in the run store at once. Tokens come
from ``--tokens`` or from a ``trainer_state.json`` (``--trainer-state``), so the record teaches the planner a
speed; without tokens it keeps the books only.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import sys
from pathlib import Path

from advisor.untrusted import plain_text

SCHEMA = "advisor.job/1"


def _pid(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a process id: {text!r}") from None
    if not 1 <= v <= 2**31 - 1:
        raise argparse.ArgumentTypeError(f"not a process id: {text!r}")
    return v


def token_count(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 1 <= v <= 1e18:
        raise argparse.ArgumentTypeError(f"must be between 1 and 1e18, got {text!r}")
    return v


def register_flags(p) -> None:
    g = p.add_argument_group("one job (--pid)")
    g.add_argument("--pid", type=_pid, default=None, metavar="PID",
                   help="follow this process until it ends (or --duration), then print its books")
    g.add_argument("--save", metavar="FILE", default=None, help="with --pid: write the books as advisor.job/1 JSON")
    g.add_argument("--save-run", action="store_true", help="with --pid: keep the books as a run record (advisor runs)")
    g.add_argument("--tokens", type=token_count, default=None, metavar="N", help="with --pid: tokens the job processed")
    g.add_argument("--trainer-state", metavar="FILE", default=None,
                   help="with --pid: read the job's tokens from its trainer_state.json")


def follow(sampler, gpu, banner: str, args) -> int:
    """Sample until the process ends or ``--duration`` passes; print and save its books.

    The process is its PID and its start time: a PID the system hands to another process meanwhile ends
    the follow, and that process's books are not counted. ``--save`` is checked before the job is followed
    (a long job's recording is not lost to a bad target at its end)."""
    from advisor.cli import UsageError
    from advisor.commands._terminal import echo
    from advisor.commands.monitor_run import run_sampler, usd_per_kwh
    from advisor.monitor.accounting import merge, process_key
    from advisor.monitor.books import BookKeeper

    host = sampler.host
    if not host.process_alive(args.pid):
        raise UsageError(f"--pid: no running process {args.pid}")
    if args.save:
        _check_save(args.save)
    started_s = _start_time(host, args.pid)
    trainer = _trainer_run(args.trainer_state) if args.trainer_state else None
    tokens = args.tokens or (trainer.tokens if trainer else None)
    keeper = BookKeeper(sampler, usd_per_kwh(args))
    started = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")

    def _same_process() -> bool:
        return host.process_alive(args.pid) and _start_time(host, args.pid) in (None, started_s)

    def _until_gone(sample) -> None:
        if not _same_process():
            sampler.stop()

    sampler.add_listener(keeper)
    sampler.add_listener(_until_gone)
    for line in (banner, f"following PID {args.pid} until it ends (Ctrl-C stops)"):
        echo(line, file=sys.stderr, flush=True)
    run_sampler(sampler, args.duration)
    still = _same_process()
    mine = [b for b in keeper.finish() if b.pid == args.pid and (started_s is None or process_key(b)[1] == started_s)]
    if not mine:
        print(f"PID {args.pid} used no GPU while it was followed: no books", flush=True)
        return 0
    books = merge(mine)
    echo(("still running: " if still else "ended: ") + books.summary(), flush=True)
    doc = job_document(books, gpu, started, tokens, trainer)
    if args.save:
        from advisor.store.atomic import write_atomic

        try:
            write_atomic(Path(args.save), json.dumps(doc, indent=2) + "\n")
        except OSError as exc:
            raise UsageError(f"--save: cannot write {plain_text(args.save)!r}: {exc.strerror or exc}") from None
        echo(f"books saved to {args.save}", file=sys.stderr)
    if args.save_run:
        _save_run(doc, args)
    return 0


def _start_time(host, pid: int) -> float | None:
    """When ``pid`` started (epoch seconds), None when the host does not say."""
    details = getattr(host, "process_details", None)
    started = getattr(details(pid), "started_s", None) if details else None
    return started if isinstance(started, (int, float)) else None


def _check_save(target: str) -> None:
    """Refuse a ``--save`` target that could not be written at the job's end: not a regular file (a link, a
    folder, a FIFO: ``store.atomic.check_target``), or a folder that does not exist or cannot be written."""
    import os

    from advisor.cli import UsageError
    from advisor.store.atomic import check_target

    path = Path(target)
    try:
        check_target(path)
    except OSError as exc:
        raise UsageError(f"--save: {plain_text(target)!r}: {exc.strerror or exc}") from None
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise UsageError(f"--save: {plain_text(target)!r}: its folder does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"--save: {plain_text(target)!r}: its folder cannot be written")


def job_document(books, gpu, started_at: str, tokens: float | None, trainer=None) -> dict:
    """The ``advisor.job/1`` document of a followed process; a Trainer run record (``trainer``) adds the
    model, lengths and precision, so the record teaches the planner a utilisation."""
    from advisor.catalog import load_catalog
    from advisor.hw.match import match_catalog_id
    from advisor.store.runs import this_machine_id

    names = {a.id: a.name for a in load_catalog().accelerators.values()}
    gpus = []
    for i in books.gpus:
        info = gpu.gpu_info(i) if i < gpu.device_count() else None
        name = info.name if info else None
        gpus.append({"index": i, "name": name,
                     "catalog_id": match_catalog_id(name, info.memory_total_bytes, names) if name else None})
    return {"schema": SCHEMA, "pid": books.pid, "name": books.name, "started_at": started_at,
            "duration_s": max(books.duration_s, 1e-3), "gpus": gpus, "machine_id": this_machine_id(),
            "simulated": bool(gpu.simulated), "gpu_hours": books.gpu_hours, "energy_j": books.energy_j,
            "cost_usd": books.cost_usd, "peak_gpu_mem_bytes": books.peak_gpu_mem_bytes,
            "mean_util_pct": books.mean_util_pct, "tokens": tokens,
            **({} if trainer is None else {k: getattr(trainer, k) for k in TRAINER_FIELDS})}


TRAINER_FIELDS = ("model", "params", "layers", "hidden", "heads", "vocab", "seq_len", "batch", "precision", "workload",
                  "software", "software_version", "recompute")


def _trainer_run(path: str):
    """The Trainer run record of ``--trainer-state`` (its tokens, model and lengths; the accelerator is the
    monitor's)."""
    from advisor.cli import UsageError
    from advisor.runs import ImportOptions, RunImportError, import_file

    try:
        (rec,) = import_file(path, ImportOptions(accelerator="cpu"))  # only the tokens are read from it
    except RunImportError as exc:
        raise UsageError(f"--trainer-state: {exc}") from None
    except ValueError:
        raise UsageError(f"--trainer-state: {path}: not one Trainer run") from None
    if rec.kind != "hf-trainer" or not rec.tokens:
        raise UsageError(f"--trainer-state: {path}: not a Trainer state with its tokens")
    return rec


def _save_run(doc: dict, args) -> None:
    """Store the books as a run record (the same path as ``advisor runs import`` of a saved file)."""
    from advisor.cli import UsageError
    from advisor.runs import ImportOptions, RunImportError, checked
    from advisor.runs.common import content_hash
    from advisor.runs.monitor_job import read_monitor_job
    from advisor.store.runs import RunStore, RunStoreError, this_machine_id

    data = json.dumps(doc, sort_keys=True).encode()
    where = Path(args.save) if args.save else Path(f"advisor-job-{doc['pid']}.json")
    try:
        rec = read_monitor_job(where, data, json.loads(data), ImportOptions(this_machine_id=this_machine_id()))
    except RunImportError as exc:
        raise UsageError(f"--save-run: {exc}") from None
    rec = rec.__class__(**{**rec.__dict__, "content_sha256": content_hash(data)})
    try:
        (rec,) = checked(where, [rec])
    except RunImportError as exc:
        raise UsageError(f"--save-run: {exc}") from None
    try:
        with RunStore() as store:
            run_id, _ = store.add(rec)
    except RunStoreError as exc:
        raise UsageError(f"--save-run: {exc}") from None
    print(f"kept as run {run_id} (advisor runs)", file=sys.stderr)
