"""``advisor detect [--json] [--fake-gpu S]``: what this machine is and what its parts can do on paper."""

from __future__ import annotations

import argparse

from advisor.commands._json import print_json
from advisor.commands._terminal import cell, lines_text
from advisor.units import fmt_bytes, fmt_mem
from advisor.untrusted import NAME_MAX_CHARS


def register(subparsers) -> None:
    from advisor.cli import add_fake_gpu

    p = subparsers.add_parser("detect", help="describe this machine: CPU, memory, GPUs with catalog matches",
                              description="Describe this machine: CPU, memory, disks, GPUs matched to the catalog "
                                          "(with the driver-derived and the catalog memory bandwidth), torch and "
                                          "JAX devices.")
    p.add_argument("--json", action="store_true", help="print one advisor.detect/1 JSON document")
    p.add_argument("--no-frameworks", action="store_true", help="do not query torch and JAX (faster)")
    add_fake_gpu(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from advisor.cli import UsageError
    from advisor.hw import detect_machine, profile_to_json, select_backend, select_host_backend
    from advisor.hw.detect import UnknownScenario

    try:
        gpu = select_backend(args.fake_gpu)
    except UnknownScenario as exc:
        raise UsageError(f"--fake-gpu: {exc}") from None
    try:
        profile = detect_machine(gpu, select_host_backend(gpu), frameworks=not args.no_frameworks)
    finally:
        gpu.close()
    if args.json:
        print_json(profile_to_json(profile), indent=2)
    else:
        print(format_profile(profile))
    return 0




def format_profile(profile) -> str:
    """The human-readable ``advisor detect`` report."""
    h, b = profile.host, profile.gpu_backend
    lines = []
    if profile.simulated:
        lines.append(f"*** SIMULATED HARDWARE: GPUs from the fake scenario {b.scenario!r}, not this machine ***")
    lines += [
        f"Host     {h.hostname}  ({h.os}, Python {h.python})",
        f"CPU      {h.cpu.model}: {h.cpu.physical_cores or '?'} cores / {h.cpu.logical_cores} threads"
        + (f", up to {h.cpu.max_freq_mhz:.0f} MHz" if h.cpu.max_freq_mhz else ""),
        f"Memory   {fmt_mem(h.memory.total_bytes)} total, {fmt_mem(h.memory.available_bytes)} available"
        + (f", swap {fmt_mem(h.memory.swap_total_bytes)}" if h.memory.swap_total_bytes else ""),
    ]
    for d in h.disks:
        lines.append(f"Disk     {d.mountpoint} ({d.fstype}): {fmt_bytes(d.free_bytes)} free of "
                     f"{fmt_bytes(d.total_bytes)}")
    lines.append(f"GPUs     [{b.name}] {b.status}")
    for g in profile.gpus:
        i = g.info
        if not i.available:
            lines.append(f"  gpu{i.index}  {cell(i.name, NAME_MAX_CHARS)}: {i.state}")
            continue
        bw_nvml = g.nvml_mem_bandwidth_bps
        bw_cat = g.catalog_mem_bandwidth_bps
        cc = "%d.%d" % i.compute_capability if i.compute_capability else "?"
        lines.append(f"  gpu{i.index}  {cell(i.name, NAME_MAX_CHARS)}  {fmt_mem(i.memory_total_bytes)}  cc {cc}  "
                     f"catalog: {g.catalog_id or 'no match'}")
        lines.append(f"        memory bandwidth: {'n/a' if bw_nvml is None else f'{bw_nvml / 1e9:.0f} GB/s'} "
                     f"from the driver, {'n/a' if bw_cat is None else f'{bw_cat / 1e9:.0f} GB/s'} in the catalog;"
                     f" power limit {'n/a' if i.power_limit_w is None else f'{i.power_limit_w:.0f} W'}")
        pcie = (f"PCIe gen{i.pcie_gen_current or '?'} x{i.pcie_width_current or '?'} "
                f"(max gen{i.pcie_gen_max or '?'} x{i.pcie_width_max or '?'})")
        extra = [pcie]
        if i.nvlink_links_active:
            extra.append(f"NVLink {i.nvlink_links_active} links")
        if i.mig_enabled:
            extra.append("MIG on")
        if i.ecc_enabled is not None:
            extra.append(f"ECC {'on' if i.ecc_enabled else 'off'}")
        if g.torch_device:
            extra.append(f"torch {g.torch_device}")
        lines.append("        " + ", ".join(extra))
    lines.append(f"torch    {profile.torch.status}")
    lines.append(f"JAX      {profile.jax.status}")
    return lines_text(lines)  # names from the driver, the OS and the disks: control characters shown
