"""``advisor gui [--fake-gpu S] [--screenshot DIR]``: the desktop app."""

from __future__ import annotations

from advisor.cli import add_fake_gpu


def register(subparsers) -> None:
    """Add the ``gui`` subcommand."""
    p = subparsers.add_parser("gui", help="open the desktop app",
                              description="Open the desktop app. With --screenshot, render every page to "
                                          "DIR/<page>.png and exit.")
    add_fake_gpu(p)
    p.add_argument("--screenshot", metavar="DIR", default=None,
                   help="render every page, populated, to DIR/<page>.png and exit")
    p.set_defaults(run=run)


def run(args) -> int:
    """Start the app (Qt is imported only here).

    Raises:
        UsageError: an unknown ``--fake-gpu`` scenario (exit status 2, one line).
    """
    import os

    from advisor.cli import UsageError

    scenario = args.fake_gpu if args.fake_gpu is not None else (os.environ.get("ADVISOR_FAKE_GPU") or None)
    if scenario is not None:
        from advisor.hw.fake import SCENARIOS

        if scenario not in SCENARIOS:
            raise UsageError(f"--fake-gpu: unknown scenario {scenario!r} (known: {', '.join(SCENARIOS)})")
    if args.screenshot is not None:
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from advisor import app

    return app.run(fake_gpu=args.fake_gpu, screenshot_dir=args.screenshot)
