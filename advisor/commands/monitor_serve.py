"""``advisor monitor --serve-metrics [HOST:]PORT``: the monitor as a Prometheus exporter (``monitor.exporter``).

    advisor monitor --serve-metrics 9400                  # http://127.0.0.1:9400/metrics
    advisor monitor --serve-metrics 0.0.0.0:9400 --job train-7b

Bound to 127.0.0.1 unless a host is named. It samples on the monitor's schedule (``--interval``) until
Ctrl-C or ``--duration``; the banner and the address go to stderr.
"""

from __future__ import annotations

import argparse
import sys


def _listen(text: str) -> tuple[str, int]:
    from advisor.monitor.exporter import parse_listen

    try:
        return parse_listen(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def register_flags(p) -> None:
    g = p.add_argument_group("Prometheus endpoint (--serve-metrics)")
    g.add_argument("--serve-metrics", type=_listen, default=None, metavar="[HOST:]PORT",
                   help="serve Prometheus metrics on /metrics (DCGM exporter names; 127.0.0.1 unless HOST is named)")
    g.add_argument("--job", default=None, metavar="NAME",
                   help="with --serve-metrics: the job label of processes whose environment names no Slurm job")
    g.add_argument("--plan", metavar="FILE", default=None,
                   help="with --serve-metrics: an 'advisor plan --json' document; its predicted peak memory and rate "
                        "are exported beside the observed books (labelled with --job)")
    g.add_argument("--export-cmdline", action="store_true",
                   help="with --serve-metrics: add each process's command line as a label (off: they may hold secrets)")


def serve_metrics(sampler, gpu, banner: str, args, price: float) -> int:
    """Sample and serve until Ctrl-C or ``--duration``."""
    from advisor.cli import UsageError
    from advisor.commands._terminal import echo
    from advisor.commands.monitor_run import run_sampler
    from advisor.monitor.books import BookKeeper
    from advisor.monitor.exporter import MetricsExporter, serve
    from advisor.monitor.snapshot import read_infos

    host, port = args.serve_metrics
    plan = _planned(args.plan, args.job) if args.plan else None
    keeper = BookKeeper(sampler, price)
    exporter = MetricsExporter(sampler, keeper, read_infos(gpu), sampler.host.info().hostname, job=args.job,
                               read_environ=not gpu.simulated, export_cmdline=args.export_cmdline, plan=plan)
    try:
        server, thread = serve(exporter, host, port)
    except OSError as exc:
        raise UsageError(f"--serve-metrics: cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    try:
        sampler.add_listener(keeper)
        sampler.add_listener(exporter)
        where = host if ":" not in host else f"[{host}]"
        echo(banner, file=sys.stderr, flush=True)
        echo(f"serving metrics on http://{where}:{server.server_address[1]}/metrics", file=sys.stderr, flush=True)
        run_sampler(sampler, args.duration)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
    return 0


def _planned(path: str, job: str | None):
    """The ``--plan`` file's prediction, read at the border (a regular file, bounded, JSON checked)."""
    from advisor.catalog.readfile import BadJson, UnreadableFile, parse_json, read_regular_file
    from advisor.cli import UsageError
    from advisor.monitor.exporter import planned_job

    try:
        return planned_job(parse_json(read_regular_file(path, 64 * 2**20)), job)
    except (UnreadableFile, OSError) as exc:
        raise UsageError(f"--plan: cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    except (BadJson, ValueError) as exc:
        raise UsageError(f"--plan: {path}: {' '.join(str(exc).split())}") from None
