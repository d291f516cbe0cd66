"""Every program the advisor starts on a user's behalf (``srun``, ``ssh``, ``xpu-smi``, ``ioreg``, the
all-reduce ranks, the engines it runs for checks) starts and ends here, so that its deadline holds.

A child runs in its own session and process group (``start_new_session``), and ending it ends the group:
a login script, a wrapper or a stuck ``ControlMaster`` that forks a grandchild holding the child's stdout
open is ended with it. ``bounded_run`` reads the child's output itself, on one thread, with ``select`` and
a deadline: reads stop at the deadline whoever holds the pipe, and a reply larger than its bound is cut
there (the child is ended). A grandchild that left the group (``setsid``) cannot be reached from here; its
pipe is closed on our side and it is no longer waited for.

Standard library only; nothing here reads hardware or files.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence

POSIX = os.name == "posix"
STDERR_KEEP_BYTES = 4096  # the tail of stderr kept: enough for the last lines of an error
EXIT_GRACE_S = 0.5  # after the child exits, how long a grandchild holding its pipe may still write
TERM_GRACE_S = 0.3  # between SIGTERM and SIGKILL when a group is ended
MAX_BYTES = 4 * 2**20


def start(cmd: Sequence[str], **popen_kw) -> subprocess.Popen:
    """``subprocess.Popen(cmd)`` in a new session and process group (POSIX), stdin from /dev/null unless given.

    Raises:
        FileNotFoundError: the program does not exist.
        OSError: it cannot be started.
    """
    popen_kw.setdefault("stdin", subprocess.DEVNULL)
    if POSIX:
        popen_kw["start_new_session"] = True
    return subprocess.Popen(list(cmd), **popen_kw)


def end_group(proc: subprocess.Popen, grace_s: float = TERM_GRACE_S) -> None:
    """End ``proc`` and every process of its group: SIGTERM, then SIGKILL after ``grace_s``; reaps ``proc``.

    Safe to call on a process that has exited (its group may still hold grandchildren: they are ended too).
    """
    def signal_group(sig) -> bool:
        if not POSIX:
            return False
        try:
            os.killpg(proc.pid, sig)  # the group id is the child's pid (start_new_session)
            return True
        except (ProcessLookupError, PermissionError):
            return False

    alive = signal_group(signal.SIGTERM)
    if proc.poll() is None and not POSIX:
        proc.terminate()
    deadline = time.monotonic() + grace_s
    while alive and time.monotonic() < deadline:
        time.sleep(0.02)
        alive = signal_group(0)  # signal 0: is any process of the group left?
    signal_group(signal.SIGKILL)
    if proc.poll() is None:
        proc.kill()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:  # a process in uninterruptible sleep: not waited for further
        pass


def bounded_run(cmd: Sequence[str], *, timeout: float | None = None, max_bytes: int = MAX_BYTES,
                env: Mapping[str, str] | None = None, cwd: str | None = None, **_ignored) -> subprocess.CompletedProcess:
    """Run ``cmd`` to its end or its deadline, whichever comes first; its output is not trusted.

    stdout is kept up to ``max_bytes + 1`` bytes (the group is then ended: a node answering 200 MB never
    fills the memory, and the caller sees the reply is over the bound), stderr's last 4 KiB. Once the child
    has exited, a grandchild still holding its pipes gets ``EXIT_GRACE_S`` and is then ended with the group.
    Extra keyword arguments of ``subprocess.run`` (``capture_output``, ``check``, ``text``) are accepted and
    ignored: output is always captured, as bytes.

    Returns:
        ``CompletedProcess`` with bytes ``stdout`` and ``stderr``.
    Raises:
        subprocess.TimeoutExpired: the deadline passed; the group is ended and the exception's ``output`` and
            ``stderr`` hold what came before it.
        FileNotFoundError: the program does not exist.
    """
    start_t = time.monotonic()
    deadline = None if timeout is None else start_t + max(0.0, float(timeout))
    out, err = bytearray(), bytearray()
    proc = start(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=None if env is None else dict(env), cwd=cwd)
    sel = selectors.DefaultSelector()
    streams = {proc.stdout.fileno(): out, proc.stderr.fileno(): err}
    for fd in streams:
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ)
    timed_out = False
    exited_at = None
    try:
        while streams:
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                timed_out = proc.poll() is None  # an exited child answered; a grandchild's pipe is not its answer
                break
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            if exited_at is not None and now - exited_at >= EXIT_GRACE_S:
                break  # the child is done; whoever still holds its pipes is not waited for
            wait = 0.1 if deadline is None else min(0.1, deadline - now)
            for key, _ in sel.select(max(0.0, wait)):
                fd = key.fd
                try:
                    chunk = os.read(fd, 1 << 16)
                except BlockingIOError:
                    continue
                buf = streams[fd]
                if not chunk:
                    sel.unregister(fd)
                    del streams[fd]
                    continue
                buf.extend(chunk)
                if buf is err:
                    del err[:-STDERR_KEEP_BYTES]
                elif len(out) > max_bytes:
                    streams.clear()  # enough: the reply is refused for its size
                    break
        if not timed_out and len(out) <= max_bytes and proc.poll() is None:
            # every pipe closed and the child still finishing (an interpreter closes stdout before it exits):
            # waited for within the deadline, so its exit status is its own and not the signal that ends the group
            try:
                proc.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                timed_out = True
    finally:
        sel.close()
        end_group(proc)
        for stream in (proc.stdout, proc.stderr):
            stream.close()
    if timed_out:
        raise subprocess.TimeoutExpired(list(cmd), timeout, output=bytes(out), stderr=bytes(err))
    return subprocess.CompletedProcess(list(cmd), proc.returncode, bytes(out), bytes(err))


def bounded_text(cmd: Sequence[str], timeout: float, max_bytes: int = MAX_BYTES) -> str | None:
    """The stdout of a helper program as text, or None when it is missing, fails or runs past ``timeout``."""
    try:
        done = bounded_run(cmd, timeout=timeout, max_bytes=max_bytes)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0 or len(done.stdout) > max_bytes:
        return None
    return done.stdout.decode("utf-8", "replace")
