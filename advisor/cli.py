"""The ``advisor`` command line: argparse subcommands, the desktop app when none is given.

Each subcommand lives in ``advisor.commands.<name>`` with ``register(subparsers)`` and ``run(args)``.
Those modules import heavy libraries (Qt, torch, NVML) only inside ``run``, so ``advisor --version``
and ``import advisor.cli`` stay light.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import re
import sys

from advisor import __version__

COMMANDS = ("gui", "detect", "monitor", "probe", "plan", "serve", "buy", "models", "catalog", "fleet", "runs")


class UsageError(Exception):
    """Bad input from the user: reported as one line on stderr with exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, no usage dump
        unknown = re.match(r"argument COMMAND: invalid choice: '([^']*)'", message)
        if unknown:  # any name that no registered command module answers to
            raise UsageError(f"{self.prog}: unknown command {unknown.group(1)!r} (commands: "
                             f"{', '.join(_registered(self))}; see 'advisor --help')")
        raise UsageError(f"{self.prog}: {message}")


def _registered(parser: argparse.ArgumentParser) -> list[str]:
    """The subcommands a parser has (those whose module exists), in order."""
    for action in parser._actions:  # argparse keeps subparsers only here
        if isinstance(action, argparse._SubParsersAction):
            return list(action.choices)
    return []


def build_parser(commands: tuple[str, ...] = COMMANDS) -> argparse.ArgumentParser:
    """The parser with ``commands`` registered (each command module adds its flags, some from the job schema)."""
    parser = _Parser(prog="advisor", description="Hardware Advisor: know the machine, watch it, measure it, "
                     "plan an LLM job and price it. Without a command, opens the desktop app.")
    parser.add_argument("--version", action="version", version=f"advisor {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="log progress on stderr (-vv for debug); the log file is always written")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser, metavar="COMMAND")
    for name in commands:
        module = _command_module(name)
        if module is not None:
            module.register(sub)
    return parser


def commands_for(argv: list[str]) -> tuple[str, ...]:
    """The commands a command line needs registered: the one it names, none for a bare ``--version`` (no
    command's flags, and their job schema, to import), else all (help lists them; the app takes the rest)."""
    first = next((a for a in argv if not a.startswith("-")), None)
    if first in COMMANDS:
        return (first,)
    if first is None and "--version" in argv:
        return ()
    return COMMANDS


def _command_module(name: str):
    try:
        return importlib.import_module(f"advisor.commands.{name}")
    except ModuleNotFoundError as exc:
        if exc.name == f"advisor.commands.{name}":
            return None
        raise


def add_fake_gpu(parser: argparse.ArgumentParser) -> None:
    """The shared ``--fake-gpu SCENARIO`` flag (also read from ``ADVISOR_FAKE_GPU``)."""
    from advisor.hw.fake import SCENARIOS

    parser.add_argument("--fake-gpu", metavar="SCENARIO", default=None,
                        help=f"simulate GPUs from a named scenario ({', '.join(SCENARIOS)}); also ADVISOR_FAKE_GPU")


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """Parse ``argv``; without a command it is the app's (``advisor --fake-gpu 2x4090`` opens it)."""
    verbose = sum(a.count("v") if re.fullmatch(r"-v+", a) else 1 for a in argv if re.fullmatch(r"-v+|--verbose", a))
    rest = [a for a in argv if not re.fullmatch(r"-v+|--verbose", a)]
    try:
        args = parser.parse_args(argv)
    except UsageError:
        if not rest or not rest[0].startswith("-") or rest[0] in ("-h", "--help", "--version"):
            raise
        args = argparse.Namespace(command=None)  # flags of the app: let 'gui' parse them
    if args.command is None:
        args = parser.parse_args(["gui", *rest])
        args.verbose = verbose
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit status (2 for bad input)."""
    argv = sys.argv[1:] if argv is None else argv
    log = logging.getLogger("advisor.cli")
    try:
        parser = build_parser(commands_for(argv))
        args = _parse(parser, argv)
        from advisor.logs import setup_logging

        setup_logging(args.verbose)
        if getattr(args, "command", None) != "gui":  # the app applies its own settings once Qt is up
            from advisor import units
            from advisor.store.display import memory_binary

            units.set_memory_binary(memory_binary())
        log.info("advisor %s: %s", __version__, " ".join(argv) or "gui")
        return int(args.run(args) or 0)
    except UsageError as exc:
        from advisor.untrusted import plain_text

        # a message may quote a name from outside (a file, a node's reply): its control characters are shown
        print("error: " + "\n".join(plain_text(line) for line in str(exc).split("\n")), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:
        from advisor.report.content import ReportError
        from advisor.untrusted import plain_text

        if isinstance(exc, ReportError):
            print(f"error: {plain_text(' '.join(str(exc).split()))}", file=sys.stderr)
            return 2
        # a bug: the traceback goes to the log, the user gets one line
        from advisor.logs import log_file

        log.exception("unexpected error")
        print(f"error: internal error: {type(exc).__name__}: {plain_text(' '.join(str(exc).split()))} "
              f"(details in {log_file()})", file=sys.stderr)
        return 1


def gui_main() -> int:
    """Entry point of the ``advisor-gui`` launcher."""
    return main(["gui", *sys.argv[1:]])


if __name__ == "__main__":
    raise SystemExit(main())
