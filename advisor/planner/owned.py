"""Hardware the user owns as plan options: this machine's GPUs, cards named with ``--own``, a fleet's machines,
the CPU and Apple Silicon (docs/method.md, "Owned hardware" and "This machine: CPU, Apple Silicon, offload").

The planner never detects anything: the caller (the CLI, the app) passes :class:`OwnedHardware` records built
here from a detected machine profile, a fleet or ``--own`` specs, and :class:`~advisor.estimate.local.HostFigures`
for the CPU. Each owned record becomes one option of kind ``owned``, id ``owned:<accelerator>``, with at most
the devices it holds, priced by ``cost.ownership.owned_job_cost`` (energy, and wear when a rate is set).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from advisor.catalog import Accelerator, Catalog
from advisor.cost.assumptions import CostAssumptions
from advisor.cost.ownership import NO_STATED_USE, Use, owned_job_cost, owned_option_id
from advisor.estimate.compute import DecodeEstimate
from advisor.estimate.local import (
    CPU_ETA_MEM,
    CPU_FLOP_PER_CYCLE,
    HostFigures,
    cpu_peak_flops,
    host_bandwidth,
    layer_sizes,
    offload_plan,
    usable_host_bytes,
)
from advisor.estimate.memory import kv_value_bytes
from advisor.estimate.model import ModelArch
from advisor.estimate.priors import ETA_MEM_PRIOR
from advisor.hw.records import GPU_LOST
from advisor.job import JobInputError

CPU_ID = "cpu"
CPU_CLOCK_PRIOR_HZ = 3.0e9  # assumption: all-core clock when the OS reports none (virtual machines)
# Frameworks that train on each local target: bitsandbytes' 4-bit QLoRA kernels need CUDA (its CPU and
# Metal backends are inference-only as of 2024), so QLoRA is not offered there.
LOCAL_WORKLOADS = {"cpu": ("inference", "lora", "finetune", "pretrain"),
                   "apple": ("inference", "lora", "finetune", "pretrain")}
_OWN_SPEC = re.compile(r"^(?:([1-9][0-9]{0,4})x)?(.+)$")


@dataclass(frozen=True)
class OwnedHardware:
    """GPUs (or a CPU) the user owns, as one plan option.

    Attributes:
        accelerator: the catalog's or a derived ``Accelerator`` (``derived=True`` for one from driver figures).
        count: devices held; a plan on it never uses more.
        per_machine: devices in one machine (a tensor-parallel group larger than it crosses machines).
        origin: where it comes from, for people ("this machine", "--own 2xrtx-3090", "fleet: 3 machines").
        this_machine: True for the GPUs (or CPU) of the machine the advisor runs on: shown first.
        host: this machine's host figures (partial offload reads the host bandwidth and RAM).
        gpu_power_w: power per device while running; None: TDP x load factor (the system power alone
            when the accelerator has no TDP: the CPU, Apple Silicon).
        backend_memory: on a unified-memory or carve-out GPU of this machine, what each backend may allocate
            (``hw.unified``); ``owned_capacity`` fits the job in the runtime's backend's figure.
    """

    accelerator: Accelerator
    count: int = 1
    per_machine: int | None = None
    origin: str = ""
    this_machine: bool = False
    host: HostFigures | None = None
    gpu_power_w: float | None = None
    members: tuple[tuple[Accelerator, int], ...] = ()  # a pool of unequal GPUs (``pool_unequal``): its parts
    # unified or carve-out memory as each backend sees it (``hw.unified.BackendMemory``, from the detected GPU)
    backend_memory: tuple = ()

    @property
    def id(self) -> str:
        return owned_option_id(self.accelerator.id)

    @property
    def tensor_split(self) -> tuple[float, ...]:
        """A pool's share of the layers on each device (by memory, as llama.cpp's ``--tensor-split``), else ()."""
        return tuple(round(acc.usable_memory_bytes / 1e9, 1) for acc, n in self.members for _ in range(n))

    def machines(self, devices: int) -> int:
        """Machines ``devices`` of it take (each adds its system power)."""
        return max(1, math.ceil(devices / (self.per_machine or self.count)))


def parse_own(specs: Iterable[str], catalog: Catalog, origin: str = "--own") -> list[OwnedHardware]:
    """``2xrtx-3090`` (or ``rtx-3090``, one card) -> owned hardware.

    Raises:
        JobInputError: an unknown accelerator id (field ``own``).
    """
    out = []
    for spec in specs:
        m = _OWN_SPEC.match(spec.strip())
        count, acc_id = int(m.group(1) or 1), m.group(2)
        acc = catalog.accelerators.get(acc_id)
        if acc is None:
            raise JobInputError("own", f"unknown accelerator {acc_id!r} in {spec!r} (advisor catalog list)")
        out.append(OwnedHardware(acc, count, origin=f"{origin} {spec}"))
    return out


def cpu_accelerator(host: HostFigures | None) -> Accelerator:
    """This machine's CPU as an accelerator: host RAM (less what the OS keeps), the measured host bandwidth
    (or the prior) and the FP32 peak of its cores (docs/method.md, "This machine: CPU, Apple Silicon, offload")."""
    host = host or HostFigures(memory_total_bytes=16 * 2**30, physical_cores=8)
    bw, bw_origin = host_bandwidth(host)
    peak = cpu_peak_flops(host)
    clock_note = host.fp32_origin or "cores x max clock x 32 FLOP/cycle (two 256-bit FMA units)"
    if peak is None:
        peak = max(1, host.physical_cores) * CPU_CLOCK_PRIOR_HZ * CPU_FLOP_PER_CYCLE
        clock_note = "cores x 3.0 GHz (assumed: no clock reported) x 32 FLOP/cycle"
    return Accelerator(
        id=CPU_ID, vendor="", name="CPU (host RAM)", kind="cpu", memory_bytes=usable_host_bytes(host),
        memory_type="DRAM", mem_bandwidth_bps=bw, fp32_flops=peak, tf32_flops=None, bf16_flops=None,
        fp16_flops=None, fp8_flops=None, int8_ops=None, tdp_w=None, derived=True,
        derivation=(("memory", "host RAM less 2 GiB for the OS"), ("mem_bandwidth", bw_origin),
                    ("fp32", clock_note)))


def local_target(acc_id: str, catalog: Catalog, host: HostFigures | None) -> OwnedHardware | None:
    """``--accelerator cpu`` or an Apple Silicon id as an owned target (priced at its energy), else None."""
    if acc_id == CPU_ID:
        return OwnedHardware(cpu_accelerator(host), 1, origin="this machine's CPU", this_machine=host is not None,
                             host=host)
    acc = catalog.accelerators.get(acc_id)
    if acc is not None and acc.kind == "apple":
        return OwnedHardware(acc, 1, origin="Apple Silicon (--accelerator): priced at its energy, as if owned")
    return None


POOL_KINDS = ("consumer", "workstation")
POOL_ID_PREFIX = "pool-"  # a pool's accelerator id: its parts, "pool-1xrtx-4090-1xrtx-3090"
POOL_DEVICE_RESERVE_BYTES = 2**30  # llama.cpp's compute buffers and context on each device beyond the first


def pool_unequal(owned: Sequence[OwnedHardware]) -> OwnedHardware | None:
    """This machine's unequal GPUs as one pool, the way llama.cpp splits a model's layers over them (the default
    ``--split-mode layer``, ``--tensor-split`` by memory): None unless this machine holds two or more different
    consumer or workstation GPUs of one vendor.

    The pool is one device whose memory is the sum of theirs less the compute buffers each further device keeps
    (``POOL_DEVICE_RESERVE_BYTES``), and which reads, and multiplies, at the memory-weighted harmonic mean of
    theirs: each device holds layers in proportion to its memory and they run one after the other, so a step takes
    ``sum(m_i / bw_i)`` per byte of ``sum(m_i)``. For the same reason its power is one busy card's at a time: each
    card's rated power for its share of a step, ``(m_i / bw_i) / sum(m_j / bw_j)`` (the cards' draw while they wait
    is left out), not the cards' sum: a 4090 (450 W) beside a 3090 (350 W), 24 GB each, 398 W."""
    parts = [hw for hw in owned if hw.this_machine and hw.accelerator.kind in POOL_KINDS and not hw.members]
    if len({hw.accelerator.id for hw in parts}) < 2 or len({hw.accelerator.vendor for hw in parts}) != 1:
        return None
    members = tuple((hw.accelerator, hw.count) for hw in parts)
    mem = [(acc.usable_memory_bytes * n, acc, n) for acc, n in members]
    total = sum(m for m, _, _ in mem)

    def harmonic(figure) -> float | None:
        values = [(m, figure(acc)) for m, acc, _ in mem]
        if any(v is None or v <= 0 for _, v in values):
            return None
        return total / sum(m / v for m, v in values)

    devices = sum(n for _, _, n in mem)
    # each card's share of a step: its layers' bytes at its bandwidth (by memory alone where a card names none)
    read = all(acc.mem_bandwidth_bps for _, acc, _ in mem)
    turns = [(m / acc.mem_bandwidth_bps if read else m, acc) for m, acc, _ in mem]
    power = sum(t * (acc.tdp_w or 0.0) for t, acc in turns) / sum(t for t, _ in turns)
    first = members[0][0]
    name = " + ".join(f"{n} x {acc.name}" if n > 1 else acc.name for acc, n in members)
    pool = replace(
        first, id=POOL_ID_PREFIX + "-".join(f"{n}x{acc.id}" for acc, n in members), name=name,
        memory_bytes=int(total - (devices - 1) * POOL_DEVICE_RESERVE_BYTES), gpu_memory_share=None,
        mem_bandwidth_bps=harmonic(lambda a: a.mem_bandwidth_bps),
        fp32_flops=harmonic(lambda a: a.fp32_flops), tf32_flops=harmonic(lambda a: a.tf32_flops),
        bf16_flops=harmonic(lambda a: a.bf16_flops), fp16_flops=harmonic(lambda a: a.fp16_flops),
        fp8_flops=harmonic(lambda a: a.fp8_flops), fp4_flops=harmonic(lambda a: a.fp4_flops),
        int8_ops=harmonic(lambda a: a.int8_ops),
        tdp_w=power or None, launch_price_usd=None,
        street_price_usd=None, derived=True,
        derivation=(("pool", f"layers split over {name} by memory (llama.cpp --split-mode layer --tensor-split; "
                             "transformers device_map=\"auto\" for a training framework that trains a model so placed): "
                             "memory summed less 1 GiB of compute buffers per further device, bandwidth and compute "
                             "their memory-weighted harmonic mean, power one busy card's at a time (the devices run in "
                             "turn)"),))
    return OwnedHardware(pool, 1, 1, origin=f"this machine: {name}, split by memory", this_machine=True,
                         host=parts[0].host, members=members)


def merge_owned(groups: Iterable[Sequence[OwnedHardware]]) -> tuple[OwnedHardware, ...]:
    """One record per accelerator, the first given winning (this machine before ``--own`` before a scenario)."""
    seen: dict[str, OwnedHardware] = {}
    for group in groups:
        for hw in group:
            seen.setdefault(hw.accelerator.id, hw)
    return tuple(seen.values())


def owned_capacity(hw: OwnedHardware, backend: str | None = None) -> int:
    """Memory a job may use on one owned device: on a unified-memory or carve-out GPU of this machine what the
    runtime's ``backend`` may allocate there (``hw.unified.allocatable``: ROCm and Vulkan differ on an AMD APU;
    without a backend, or one the GPU does not list, the first listed), else the accelerator's (the GPU share of
    unified memory on Apple Silicon)."""
    if hw.backend_memory:
        from advisor.hw.unified import allocatable

        got = (allocatable(hw.backend_memory, backend) if backend else None) or allocatable(hw.backend_memory)
        if got:
            return got
    return hw.accelerator.usable_memory_bytes


def trains_on(hw: OwnedHardware, workload: str) -> bool:
    """Whether frameworks run this workload on the target (no QLoRA on the CPU or Apple Silicon)."""
    allowed = LOCAL_WORKLOADS.get(hw.accelerator.kind)
    return allowed is None or workload in allowed


def bandwidth_efficiency(hw: OwnedHardware | None, acc: Accelerator, default: float) -> float:
    """The decode's share of the bandwidth: 0.8 of the triad on the CPU, else ``default``."""
    return CPU_ETA_MEM if acc.kind == "cpu" else default


def offloaded_decode(decode: DecodeEstimate, req, arch: ModelArch, params: int, context: int, acc: Accelerator,
                     hw: OwnedHardware, devices: int, output_tokens: int | None = None) -> tuple[DecodeEstimate, dict | None]:
    """The decode with ``req.gpu_layers`` layers on the GPU and the rest on the CPU (``local.offload_plan``),
    and what to show of the split; the decode unchanged when every layer is on the GPU."""
    if req.gpu_layers is None or req.gpu_layers >= arch.layers or acc.kind == "cpu":
        return decode, None
    host = hw.host or HostFigures(memory_total_bytes=16 * 2**30, physical_cores=8)
    host_bw, host_origin = host_bandwidth(host)
    sizes = layer_sizes(arch, params, precision=req.precision, quant=req.quant, context=context, batch=req.batch,
                        kv_bytes_per_value=kv_value_bytes(req.kv_cache_bits, req.precision))
    split = offload_plan(sizes, req.gpu_layers, gpu_bandwidth_bps=acc.mem_bandwidth_bps * devices,
                         cpu_bandwidth_bps=host_bw, gpu_capacity_bytes=owned_capacity(hw) * devices,
                         host_capacity_bytes=usable_host_bytes(host), eta_gpu=ETA_MEM_PRIOR)
    step = max(decode.step_s, req.batch / split.tokens_per_s)
    request_s = decode.prefill_s + (output_tokens or req.output_tokens) * step
    out = replace(decode, step_s=step, tokens_per_s=req.batch / step, request_s=request_s,
                  requests_per_s=req.batch / request_s, bound="memory")
    shown = {"gpu_layers": split.gpu_layers, "layers": split.layers, "gpu_bytes": split.gpu_bytes,
             "host_bytes": split.host_bytes, "host_ram_bytes": usable_host_bytes(host),
             "host_fits": split.host_bytes <= usable_host_bytes(host), "tokens_per_s": req.batch / step,
             "host_bandwidth_origin": host_origin}
    return out, shown


def owned_quote(hw: OwnedHardware, devices: int, hours: float, a: CostAssumptions, use: Use = NO_STATED_USE,
                power_limit_w: float | None = None):
    """``cost.ownership.owned_job_cost`` for ``devices`` of it; no TDP (CPU, Apple Silicon): the system power only.
    A power limit lowers each GPU's rated power to the limit: it draws ``home_load_factor`` of it under load, as
    a bought rig's card does (``options.powered``), or its measured draw when that is lower."""
    power = hw.gpu_power_w
    if power is None and not hw.accelerator.tdp_w:
        power = 0.0
    if power_limit_w:
        running = power if power is not None else hw.accelerator.tdp_w * a.home_load_factor
        power = min(running, float(power_limit_w) * a.home_load_factor)
    return owned_job_cost(hw.accelerator, devices, hours, a, machines=hw.machines(devices), gpu_power_w=power,
                          use=use)


def owned_note(hw: OwnedHardware, tp: int) -> str:
    """Why the figures may not hold or what the price leaves out."""
    notes = []
    if hw.per_machine and tp > hw.per_machine:
        notes.append(f"tensor parallelism over {tp} GPUs spans machines of {hw.per_machine}: the time assumes a "
                     "fast link inside one machine")
    if hw.gpu_power_w is None and not hw.accelerator.tdp_w:
        notes.append("no power figure for the device: the energy is the system power alone")
    return "; ".join(notes)


# ------------------------------------------------------------------------------------ builders for callers
def owned_from_profile(profile, host: HostFigures | None = None) -> list[OwnedHardware]:
    """This machine's GPUs (``MachineProfile.gpus``, each with its catalog or derived accelerator), grouped
    by accelerator."""
    counts: dict[str, list] = {}
    for g in profile.gpus:
        acc = getattr(g, "accelerator", None)
        if acc is None or g.info.state == GPU_LOST:  # a GPU asleep (runtime suspend) is still this machine's
            continue
        counts.setdefault(acc.id, [acc, 0, tuple(getattr(g.info, "backend_memory", ()) or ())])[1] += 1
    out = []
    for acc, n, backend_memory in counts.values():
        power = None if acc.tdp_w else _power_limit(profile, acc.id)
        out.append(OwnedHardware(acc, n, per_machine=n, origin="this machine", this_machine=True, host=host,
                                 gpu_power_w=power, backend_memory=backend_memory))
    return out


def _power_limit(profile, acc_id: str) -> float | None:
    """The driver's power limit of a derived GPU (no TDP in the catalog), as its power while running."""
    for g in profile.gpus:
        if getattr(g.accelerator, "id", None) == acc_id and g.info.power_limit_w:
            return float(g.info.power_limit_w)
    return None


def owned_from_fleet(fleet, catalog: Catalog) -> list[OwnedHardware]:
    """A fleet's machines as owned hardware: per accelerator, every GPU the fleet holds, ``per_machine`` the
    most one machine holds (``store.fleet.Fleet``)."""
    per_acc: dict[str, list[int]] = {}
    for m in fleet.machines:
        here: dict[str, int] = {}
        for g in m.gpus:
            if g.catalog_id and g.catalog_id in catalog.accelerators:
                here[g.catalog_id] = here.get(g.catalog_id, 0) + 1
        for acc_id, n in here.items():
            per_acc.setdefault(acc_id, []).append(n)
    return [OwnedHardware(catalog.accelerators[a], sum(ns), per_machine=max(ns),
                          origin=f"fleet: {sum(ns)} GPUs in {len(ns)} machine(s)")
            for a, ns in sorted(per_acc.items())]


def fleet_limits(owned: Sequence[OwnedHardware]) -> dict[str, int]:
    """The most devices of each accelerator a fleet holds (a plan on the fleet ranks nothing above)."""
    return {hw.accelerator.id: hw.count for hw in owned}
