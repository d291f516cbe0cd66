"""``advisor fleet``: import the ``advisor detect --json`` output of many machines and show the fleet.

On a Slurm cluster, for example: ``srun --ntasks-per-node=1 advisor detect --json > nodes.json`` then
``advisor fleet import nodes.json``. ``advisor plan --fleet`` (when offered) plans against the fleet's GPUs.
"""

from __future__ import annotations

from advisor.commands._json import print_json
from advisor.commands._terminal import echo
from advisor.units import fmt_mem


def register(subparsers) -> None:
    p = subparsers.add_parser("fleet", help="machine profiles of many machines (from advisor detect --json)",
                              description="A fleet of machines imported from 'advisor detect --json' documents.")
    sub = p.add_subparsers(dest="fleet_command", metavar="ACTION", parser_class=type(p))
    sub.required = True
    imp = sub.add_parser("import", help="add detect documents (one file per machine, or many in one file)")
    imp.add_argument("files", nargs="+", metavar="FILE")
    imp.add_argument("--json", action="store_true", help="print the fleet as one JSON document")
    show = sub.add_parser("show", help="show the machines and GPUs of the fleet")
    show.add_argument("--json", action="store_true", help="print one JSON document")
    sub.add_parser("clear", help="forget every machine of the fleet")
    from advisor.commands.fleet_collect import register_collect

    register_collect(sub)
    from advisor.commands.fleet_watch import register_watch

    register_watch(sub)
    p.set_defaults(run=run)


def run(args) -> int:
    from advisor.cli import UsageError
    from advisor.store import fleet as fl

    if args.fleet_command == "import":
        try:
            fleet, machines, refused = fl.import_detect_files(args.files)
        except fl.FleetError as exc:
            raise UsageError(" ".join(str(exc).split())) from None
        import sys

        for line in refused:  # one bad document is a line; the others are imported
            echo(f"warning: {line}: not imported", file=sys.stderr)
        if args.json:
            print_json(fl.fleet_to_dict(fleet))
        else:
            gpus = sum(len(m.gpus) for m in machines)
            print(f"imported {len(machines)} machine(s) with {gpus} GPU(s); "
                  f"the fleet now has {len(fleet.machines)} machine(s)")
        return 0
    if args.fleet_command == "clear":
        try:
            path = fl.clear_fleet()
        except fl.FleetError as exc:
            raise UsageError(" ".join(str(exc).split())) from None
        echo(f"fleet cleared ({path})")
        return 0
    if args.fleet_command == "watch":
        from advisor.commands.fleet_watch import run_watch

        return run_watch(args)
    if args.fleet_command == "collect":
        from advisor.commands.fleet_collect import run_collect

        return run_collect(args)
    try:
        fleet = fl.load_fleet()
    except fl.FleetError as exc:
        raise UsageError(" ".join(str(exc).split())) from None
    if args.json:
        print_json(fl.fleet_to_dict(fleet))
        return 0
    if not fleet.machines:
        print("the fleet is empty: import 'advisor detect --json' output with 'advisor fleet import FILE'")
        return 0
    for m in fleet.machines:
        gpus = ", ".join(f"{g.index}: {g.name} ({g.catalog_id or 'not in catalog'}"
                         f"{'' if g.memory_total_bytes else ', memory not read'})" for g in m.gpus) or "no GPU"
        sim = " [simulated]" if m.simulated else ""
        echo(f"{m.hostname} [{m.machine_id}]{sim}: {m.logical_cores} threads, {fmt_mem(m.memory_total_bytes)} RAM; {gpus}")
    acc = fl.fleet_accelerators(fleet)
    total = ", ".join(f"{n}x {a}" for a, n in acc.items()) or "none in the catalog"
    echo(f"{len(fleet.machines)} machine(s); GPUs for planning: {total}")
    for name, n in fl.fleet_unmatched(fleet).items():
        echo(f"  {n}x {name}: not in the catalog, not used for planning")
    return 0
