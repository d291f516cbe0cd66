"""Measure how long the app takes to show its window on a real X server, frozen build against installed package.

    python packaging/measure_startup.py [--runs N] PROGRAM [PROGRAM ...]

Each PROGRAM is an ``advisor-gui`` executable (``dist/advisor/advisor-gui``, ``.venv/bin/advisor-gui``).
Runs each N times in turn under a private Xvfb (Debian: xvfb, xdotool) and prints the median time from
launch to the main window being mapped, and the median of ``advisor --version`` beside it for scale.
Every run gets a fresh ``ADVISOR_HOME`` so saved window state plays no part.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WINDOW_NAME = "Hardware Advisor"
TIMEOUT_S = 60.0


def _start_xvfb(display: str) -> subprocess.Popen:
    # -noreset: by default Xvfb resets when its last client leaves, and refuses connections meanwhile
    proc = subprocess.Popen(["Xvfb", display, "-screen", "0", "1920x1080x24", "-nolisten", "tcp", "-noreset"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if subprocess.run(["xdpyinfo", "-display", display], capture_output=True).returncode == 0:
            return proc
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"Xvfb did not start on {display}")


def time_to_window(program: Path, display: str) -> float:
    """Seconds from launching ``program`` to its main window being mapped.

    Raises:
        RuntimeError: no window appeared within ``TIMEOUT_S`` or the program exited first.
    """
    with tempfile.TemporaryDirectory() as home:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("QT_QPA", "ADVISOR_", "PYTHON"))}
        env.update(DISPLAY=display, ADVISOR_HOME=home)
        t0 = time.perf_counter()
        proc = subprocess.Popen([str(program)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            while True:
                found = subprocess.run(["xdotool", "search", "--onlyvisible", "--name", WINDOW_NAME],
                                       env=env, capture_output=True, text=True)
                if found.stdout.strip():
                    return time.perf_counter() - t0
                if proc.poll() is not None:
                    raise RuntimeError(f"{program} exited with {proc.returncode}: {proc.stderr.read()[-2000:]!r}")
                if time.perf_counter() - t0 > TIMEOUT_S:
                    raise RuntimeError(f"{program} showed no window in {TIMEOUT_S:.0f} s")
                time.sleep(0.01)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def time_version(program: Path) -> float:
    """Seconds ``advisor --version`` takes, for the ``advisor`` beside ``program``."""
    cli = program.with_name("advisor")
    t0 = time.perf_counter()
    subprocess.run([str(cli), "--version"], check=True, capture_output=True)
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("programs", nargs="+", type=Path)
    args = parser.parse_args(argv)
    for tool in ("Xvfb", "xdotool", "xdpyinfo"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} is missing (Debian: apt-get install xvfb xdotool x11-utils)")
    display = next(f":{n}" for n in range(90, 200) if not Path(f"/tmp/.X11-unix/X{n}").exists()
                   and not Path(f"/tmp/.X{n}-lock").exists())
    xvfb = _start_xvfb(display)
    try:
        windows: dict[Path, list[float]] = {p: [] for p in args.programs}
        versions: dict[Path, list[float]] = {p: [] for p in args.programs}
        time_to_window(args.programs[0], display)  # warm the file cache; not counted
        for _ in range(args.runs):
            for program in args.programs:  # interleaved, so load on the machine hits every program alike
                windows[program].append(time_to_window(program, display))
                versions[program].append(time_version(program))
        for program in args.programs:
            print(f"{program}: window mapped after {statistics.median(windows[program]):.2f} s "
                  f"(median of {args.runs}; min {min(windows[program]):.2f}, max {max(windows[program]):.2f}); "
                  f"--version {statistics.median(versions[program]):.2f} s")
    finally:
        xvfb.terminate()
        xvfb.wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
