"""``advisor fleet collect``: gather the fleet with the cluster's launcher and import it in one step.

    advisor fleet collect --slurm [--partition P] [--allreduce]
    advisor fleet collect --hosts hosts.txt
"""

from __future__ import annotations

import shlex
import sys

from advisor.commands._json import print_json
from advisor.commands._terminal import echo


def register_collect(sub) -> None:
    c = sub.add_parser("collect", help="run 'advisor detect --json' on every node (srun or ssh) and import it",
                       description="Run one 'advisor detect --json' per node through Slurm's srun (--slurm) or "
                                   "over ssh (--hosts FILE), and import the documents in one step.")
    how = c.add_mutually_exclusive_group(required=True)
    how.add_argument("--slurm", action="store_true", help="every node of the partition (sinfo), through srun")
    how.add_argument("--hosts", metavar="FILE", help="host names, one per line (ssh in batch mode: keys, no prompts)")
    c.add_argument("--partition", metavar="P", help="Slurm partition (default: every node sinfo lists)")
    c.add_argument("--nodes", metavar="N1,N2", help="Slurm nodes to use instead of every node of the partition")
    c.add_argument("--advisor", default="advisor", metavar="CMD",
                   help="how the nodes run the advisor (default 'advisor'; e.g. 'python3 -m advisor')")
    c.add_argument("--allreduce", action="store_true",
                   help="also run the all-reduce probe across the nodes (Slurm) and keep its bandwidth")
    c.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for srun/ssh (default 300)")
    c.add_argument("--json", action="store_true", help="print the fleet as one JSON document")


def run_collect(args) -> int:
    from advisor.cli import UsageError
    from advisor.store import fleet as fl
    from advisor.store import fleet_collect as fc

    def one_line(exc) -> str:
        return " ".join(str(exc).split())

    if args.partition and not args.slurm:
        raise UsageError("--partition is for --slurm")
    if args.allreduce and not args.slurm:
        raise UsageError("--allreduce runs through srun: use it with --slurm")
    if not 0 < args.timeout <= 86400:
        raise UsageError("--timeout must be more than 0 and at most 86400 seconds")
    try:
        advisor = fc.check_advisor_command(shlex.split(args.advisor))
        inter = None
        if args.slurm:
            nodes = [fc.check_host(n.strip(), "--nodes") for n in args.nodes.split(",")] if args.nodes else None
            result, nodes = fc.collect_slurm(args.partition, advisor=advisor, timeout_s=args.timeout, nodes=nodes)
            if args.allreduce:
                if len(nodes) < 2:
                    print("all-reduce across nodes needs two nodes or more: skipped", file=sys.stderr)
                else:
                    inter = fc.measure_allreduce(nodes, args.partition, advisor=advisor, timeout_s=args.timeout)
        else:
            result = fc.collect_hosts(fc.read_hosts_file(args.hosts), advisor=advisor, timeout_s=args.timeout)
        for line in result.failures:
            echo(f"warning: {line}", file=sys.stderr)
        if not result.machines:
            raise UsageError("fleet collect: no machine answered" + (f" ({result.failures[0]})" if result.failures else ""))
        fleet = fl.import_machines(result.machines, inter_node=inter)
    except fl.FleetError as exc:
        raise UsageError(one_line(exc)) from None
    if args.json:
        print_json(fl.fleet_to_dict(fleet))
    else:
        gpus = sum(len(m.gpus) for m in result.machines)
        print(f"collected {len(result.machines)} machine(s) with {gpus} GPU(s); "
              f"the fleet now has {len(fleet.machines)} machine(s)")
        if inter:
            print(f"all-reduce across {inter['nodes']} nodes: bus bandwidth {inter['busbw_gbps']:.2f} GB/s")
    return 0
