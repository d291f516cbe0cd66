"""``advisor fleet watch``: the live fleet in the terminal.

    advisor fleet watch --scrape http://node1:9400 http://node2:9400     # exporters read directly
    advisor fleet watch --prometheus http://prometheus:9090              # a Prometheus server's instant queries
    advisor fleet watch --scrape URL... --once --json                    # one advisor.fleet/1 document

Every node is read on its own (``fleet.watch``): a node that stops answering is greyed by the second refresh,
and the others keep their cadence. ``add_source_flags`` and ``source_from_args`` are shared with
``advisor plan --fleet``.
"""

from __future__ import annotations

import argparse
import math
import sys

from advisor.commands._json import print_json

DEFAULT_INTERVAL_S = 1.0


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(value) or not 0.1 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"must be from 0.1 to 3600 seconds, got {text!r}")
    return value


def add_source_flags(p, required: bool = False) -> None:
    """``--prometheus URL`` | ``--scrape URL...`` and ``--timeout S`` (one declaration for every command)."""
    src = p.add_mutually_exclusive_group(required=required)
    src.add_argument("--prometheus", metavar="URL", default=None,
                     help="read the fleet from a Prometheus server (instant queries of the DCGM and advisor series)")
    src.add_argument("--scrape", metavar="URL", nargs="+", default=None,
                     help="read exporters directly (advisor monitor --serve-metrics or NVIDIA's DCGM exporter)")
    p.add_argument("--fleet-timeout", type=_seconds, default=2.0, metavar="S",
                   help="longest wait for one exporter or Prometheus answer (default 2 s)")


def source_from_args(args):
    """The fleet source the flags name, or None when none is named.

    Raises:
        UsageError: a bad URL (one line).
    """
    from advisor.cli import UsageError
    from advisor.fleet.sources import PrometheusSource, ScrapeSource, SourceError

    try:
        if args.prometheus:
            return PrometheusSource(args.prometheus, timeout_s=args.fleet_timeout)
        if args.scrape:
            return ScrapeSource(args.scrape, timeout_s=args.fleet_timeout)
    except SourceError as exc:
        raise UsageError(str(exc)) from None
    return None


def register_watch(sub) -> None:
    w = sub.add_parser("watch", help="the live fleet: every node's GPUs and processes, from exporters or Prometheus",
                       description="Watch many machines live, read from Prometheus exporters (--scrape) or a "
                                   "Prometheus server (--prometheus). A node that stops answering is greyed.")
    add_source_flags(w, required=True)
    w.add_argument("--interval", type=_seconds, default=DEFAULT_INTERVAL_S, metavar="S",
                   help="seconds between refreshes (default 1)")
    w.add_argument("--duration", type=_seconds, default=None, metavar="S", help="stop after S seconds (default: Ctrl-C)")
    w.add_argument("--once", action="store_true", help="read every node once and exit")
    w.add_argument("--json", action="store_true", help="with --once: print one advisor.fleet/1 document")


def run_watch(args) -> int:
    from advisor.cli import UsageError
    from advisor.fleet.model import fleet_document
    from advisor.fleet.watch import FleetWatcher

    if args.json and not args.once:
        raise UsageError("--json: only with --once (one advisor.fleet/1 document)")
    source = source_from_args(args)
    watcher = FleetWatcher(source, interval_s=args.interval)
    try:
        if args.once:
            view = watcher.snapshot()
            if args.json:
                print_json(fleet_document(view), indent=2)
            else:
                print(view_text(view))
            return 0
        return _loop(watcher, args)
    finally:
        watcher.close()


def _loop(watcher, args) -> int:
    import time

    tty = sys.stdout.isatty()
    start = time.monotonic()
    k = 0
    live = None
    try:
        if tty:
            from rich.live import Live

            live = Live(auto_refresh=False, transient=False)
            live.start()
        while args.duration is None or time.monotonic() - start < args.duration:
            view = watcher.snapshot(args.interval) if k == 0 else watcher.refresh()  # the first view filled
            if live is not None:
                live.update(view_table(view), refresh=True)
            else:
                print(view_text(view), flush=True)
            k += 1
            time.sleep(max(0.0, start + k * args.interval - time.monotonic()))  # drift-free cadence
    except KeyboardInterrupt:
        pass
    finally:
        if live is not None:
            live.stop()
    return 0


def _row(node) -> list[str]:
    from advisor.fleet.model import summarise
    from advisor.units import fmt_mem

    s = summarise(node)
    util = "-" if s.mean_util_pct is None else f"{s.mean_util_pct:.0f} %"
    free = "-" if s.mem_free_bytes is None else fmt_mem(s.mem_free_bytes)
    total = "-" if s.mem_total_bytes is None else fmt_mem(s.mem_total_bytes)
    power = "-" if s.power_w is None else f"{s.power_w:.0f} W"
    age = "-" if node.age_s is None else f"{node.age_s:.1f} s"
    return [node.name, node.state, age, str(s.gpus), util, f"{free} / {total}", power, str(s.processes),
            node.error or ""]


HEADERS = ("node", "state", "age", "GPUs", "util", "free / total memory", "power", "processes", "note")


def view_text(view) -> str:
    """The view as plain lines (piped output, ``--once`` without ``--json``)."""
    from advisor.commands._terminal import cell

    rows = [list(HEADERS)] + [[cell(c) for c in _row(n)] for n in view.nodes]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADERS))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    if view.simulated:
        lines.append("[simulated]")
    return "\n".join(lines)


def view_table(view):
    """The view as a rich table; a node that is not up is dim (greyed)."""
    from rich.table import Table

    from advisor.commands._terminal import term_text

    table = Table(title=f"fleet ({view.source}{', simulated' if view.simulated else ''})")
    for h in HEADERS:
        table.add_column(h)
    for n in view.nodes:
        style = "dim" if n.greyed else ""
        table.add_row(*(term_text(c, style=style) for c in _row(n)))
    return table
