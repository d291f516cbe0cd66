"""``advisor plan ... --fleet --prometheus URL`` (or ``--scrape URL...``): the plan's job placed on the live
fleet (``fleet.fit``): the nodes ranked by what is free now and the launch line of the choice.

``read_live_fleet(args)`` reads the fleet once (bounded by ``--fleet-timeout``); ``fleet.fit.fleet_now(view, doc)`` places
the plan document's job and returns the ``"fleet_now"`` JSON part; ``fleet_now_text`` prints it.
"""

from __future__ import annotations

from advisor.units import fmt_mem


def read_live_fleet(args):
    """The live fleet named by ``--prometheus``/``--scrape``, read once; None when neither is given."""
    from advisor.commands.fleet_watch import source_from_args
    from advisor.fleet.watch import FleetWatcher

    source = source_from_args(args)
    if source is None:
        return None
    watcher = FleetWatcher(source)
    try:
        return watcher.snapshot()
    finally:
        watcher.close()


def fleet_now_text(part: dict) -> str:
    """The ranking and the launch lines, as the text output's last section."""
    from advisor.commands._terminal import cell, lines_text

    sim = ", simulated" if part["simulated"] and part["source"] != "simulated" else ""
    lines = [f"Where it fits now ({part['source']}{sim}): "
             f"{part['gpus_needed']} GPU(s) with {fmt_mem(part['need_bytes_per_gpu'])} free each"]
    names = [cell(r["node"], 40) for r in part["ranked"]] + [cell(n, 40) for n in part["left_out"]]
    w = max(map(len, names), default=4)
    for r, name in zip(part["ranked"], names):
        usable = ",".join(map(str, r["usable_gpus"])) or "none"
        lines.append(f"  {name:<{w}}  {'fits' if r['fits'] else '    '}  usable GPUs (most free first) {usable} of "
                     f"{r['gpus']}; {fmt_mem(r['node_free_bytes'])} free")
    for name in names[len(part["ranked"]):]:
        lines.append(f"  {name:<{w}}  not answering: left out")
    if part["placement"]:
        where = "; ".join(f"{p['host']} GPUs {','.join(map(str, p['gpus']))}" for p in part["placement"])
        lines.append(f"Choice: {where}")
        lines += [f"  {line}" for line in part["launch"]]
    else:
        lines.append("Choice: no node (or set of nodes) has enough free GPUs for this job now")
    return lines_text(lines) + "\n"
