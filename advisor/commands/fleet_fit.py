"""``advisor plan ... --fleet --prometheus URL`` (or ``--scrape URL...``): the plan's job placed on the live
fleet (``fleet.fit``): the nodes ranked by what is free now and the launch line of the choice.

``read_live_fleet(args)`` reads the fleet once (bounded by ``--fleet-timeout``); ``fleet_now(view, doc)`` places
the plan document's job (its memory per device and device count) and returns the ``"fleet_now"`` JSON part;
``fleet_now_text`` prints it.
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


def fleet_now(view, doc: dict) -> dict:
    """Place the job of one ``advisor.plan/1`` document on ``view``."""
    from advisor.fleet.fit import fit_job, launch_lines

    memory = doc.get("memory") or {}
    need = int((memory.get("per_device_bytes") or {}).get("total") or 0)
    devices = int(memory.get("devices") or 1)
    fit = fit_job(view, need, devices)
    model = (doc.get("model") or {}).get("name") or "MODEL"
    return {
        "source": view.source, "simulated": view.simulated, "need_bytes_per_gpu": need, "gpus_needed": devices,
        "ranked": [{"node": f.node, "host": f.host, "gpus": f.gpus, "usable_gpus": list(f.usable_gpus),
                    "usable_free_bytes": list(f.free_bytes), "node_free_bytes": f.node_free_bytes,
                    "fits": f.fits(devices)} for f in fit.ranked],
        "placement": [{"host": h, "gpus": list(g)} for h, g in fit.placement],
        "left_out": list(fit.left_out),
        "launch": launch_lines(fit, doc.get("workload") or "training", model),
    }


def fleet_now_text(part: dict) -> str:
    """The ranking and the launch lines, as the text output's last section."""
    from advisor.commands._terminal import cell, lines_text

    lines = [f"Where it fits now ({part['source']}{', simulated' if part['simulated'] else ''}): "
             f"{part['gpus_needed']} GPU(s) with {fmt_mem(part['need_bytes_per_gpu'])} free each"]
    for r in part["ranked"]:
        usable = ",".join(map(str, r["usable_gpus"])) or "none"
        lines.append(f"  {cell(r['node'], 40):<40} {'fits' if r['fits'] else '    '}  usable GPUs {usable} of "
                     f"{r['gpus']}; {fmt_mem(r['node_free_bytes'])} free")
    for name in part["left_out"]:
        lines.append(f"  {cell(name, 40):<40} not answering: left out")
    if part["placement"]:
        where = "; ".join(f"{p['host']} GPUs {','.join(map(str, p['gpus']))}" for p in part["placement"])
        lines.append(f"Choice: {where}")
        lines += [f"  {line}" for line in part["launch"]]
    else:
        lines.append("Choice: no node (or set of nodes) has enough free GPUs for this job now")
    return lines_text(lines) + "\n"
