"""``advisor gui [--fake-gpu S] [--open FILE] [--screenshot DIR] [--theme light|dark]``: the desktop app."""

from __future__ import annotations

from advisor.cli import add_fake_gpu


def register(subparsers) -> None:
    """Add the ``gui`` subcommand."""
    p = subparsers.add_parser("gui", help="open the desktop app",
                              description="Open the desktop app. With --open, start on a scenario file's job. "
                                          "With --screenshot, render every page to DIR/<page>.png, write the "
                                          "app's current plan to DIR/plan.json (advisor.plan/1) and exit.")
    add_fake_gpu(p)
    p.add_argument("--open", metavar="FILE", default=None, dest="open_file",
                   help="open a scenario file (TOML) as the current job")
    p.add_argument("--screenshot", metavar="DIR", default=None,
                   help="render every page, populated, to DIR/<page>.png, write DIR/plan.json, and exit")
    p.add_argument("--size", metavar="WxH", default=None, type=_size,
                   help="window size in pixels, e.g. 1280x720 (screenshots default to 1440x900)")
    p.add_argument("--theme", choices=("light", "dark"), default=None,
                   help="light or dark colours (default: follow the system)")
    p.set_defaults(run=run)


MIN_SIZE = (640, 480)
MAX_SIZE = (7680, 4320)


def _size(text: str) -> tuple[int, int]:
    """``"1280x720"`` -> (1280, 720); between 640x480 and 7680x4320."""
    import argparse

    w, sep, h = text.lower().partition("x")
    if not sep or not (w + h).isascii() or not w.isdigit() or not h.isdigit():
        raise argparse.ArgumentTypeError(f"not a size WxH (for example 1280x720): {text!r}")
    size = (int(w), int(h))
    if not (MIN_SIZE[0] <= size[0] <= MAX_SIZE[0] and MIN_SIZE[1] <= size[1] <= MAX_SIZE[1]):
        raise argparse.ArgumentTypeError(f"size {text!r} outside {MIN_SIZE[0]}x{MIN_SIZE[1]} to "
                                         f"{MAX_SIZE[0]}x{MAX_SIZE[1]}")
    return size


def run(args) -> int:
    """Start the app (Qt is imported only here).

    Raises:
        UsageError: an unknown ``--fake-gpu`` scenario, a scenario file that cannot be used, or no display to
            open a window on (what is missing: the display, or the libraries Qt's X11 plugin links to, with
            their packages); exit 2, one line.
    """
    import os

    from advisor.cli import UsageError

    scenario = args.fake_gpu if args.fake_gpu is not None else (os.environ.get("ADVISOR_FAKE_GPU") or None)
    if scenario is not None:
        from advisor.hw.fake import SCENARIOS

        if scenario not in SCENARIOS:
            raise UsageError(f"--fake-gpu: unknown scenario {scenario!r} (known: {', '.join(SCENARIOS)})")
    if args.open_file is not None:
        _check_scenario_file(args.open_file)
    if args.screenshot is not None:
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from advisor.display import display_problem

    problem = display_problem()  # before Qt, which aborts the process when it cannot open a window
    if problem:
        raise UsageError(problem)
    from advisor import app

    try:
        return app.run(fake_gpu=args.fake_gpu, screenshot_dir=args.screenshot, size=args.size,
                       theme=args.theme, open_path=args.open_file)
    except OSError as exc:
        if args.screenshot is None:
            raise
        where = exc.filename or args.screenshot
        raise UsageError(f"--screenshot: cannot write {where}: {exc.strerror or exc}") from None


def _check_scenario_file(path: str) -> None:
    """Refuse a scenario file that cannot be opened before Qt starts (one line, exit 2)."""
    from advisor.cli import UsageError
    from advisor.job import Job, JobInputError
    from advisor.store.scenario import ScenarioError, job_values, load_scenario

    try:
        Job.from_mapping(job_values(load_scenario(path)))
    except ScenarioError as exc:
        raise UsageError(str(exc)) from None
    except JobInputError as exc:
        raise UsageError(f"{path}: plan.{exc}") from None
