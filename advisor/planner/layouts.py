"""Step 2 of a plan: how the job is laid out over devices, and the memory per device of each layout."""

from __future__ import annotations

from dataclasses import dataclass, replace

from advisor.estimate import memory
from advisor.estimate.local import layer_sizes, offload_plan
from advisor.estimate.memory import MemoryBreakdown
from advisor.estimate.model import ModelArch, embedding_params
from advisor.planner.request import PlanRequest, training_software

DEVICE_COUNTS = tuple(2**i for i in range(15))  # 1 .. 16384
TP_CHOICES = (1, 2, 4, 8)


@dataclass(frozen=True)
class Parallelism:
    """How a job is laid out over its devices: ``devices = tp * pp * dp``, with a ZeRO stage."""

    devices: int
    tp: int
    pp: int
    zero: int

    def __post_init__(self) -> None:
        # A layout keys the planner's memo tables (memory, timings, option groups), a thousand lookups a plan:
        # its hash is computed once (the same value the dataclass would compute on every lookup).
        object.__setattr__(self, "_hash", hash((self.devices, self.tp, self.pp, self.zero)))

    def __hash__(self) -> int:
        return self._hash

    @property
    def dp(self) -> int:
        """The data-parallel degree."""
        return self.devices // (self.tp * self.pp)

    def as_dict(self) -> dict[str, int]:
        return {"tp": self.tp, "pp": self.pp, "dp": self.dp, "zero": self.zero}


def auto_parallelism(req: PlanRequest, devices: int, tp: int) -> Parallelism:
    """The layout at ``tp``: the requested ZeRO stage, else 0 without data parallelism and 3 with it."""
    zero = req.zero if req.zero is not None else (0 if devices // (tp * req.pp) <= 1 else 3)
    return Parallelism(devices, tp, req.pp, zero)


class MemoryModel:
    """Memory per device for one request at any device count (memoised per layout)."""

    def __init__(self, req: PlanRequest, arch: ModelArch, params: int, seq_len: int, context: int,
                 weight_bytes: int | None = None, reserve=None, projector_bytes: int = 0):
        """``weight_bytes``: the exact bytes of the stored weights for inference (``JobModel.weight_bytes``), of
        which ``projector_bytes`` a multimodal projector's (``JobModel.projector_bytes``).
        ``reserve``: for inference, ``(total weight bytes, devices) -> bytes per device`` the runtime keeps from its
        cache (``serve_spec.reserve_bytes``): the overhead, so that what fits is what ``advisor serve`` fits."""
        self.req, self.arch, self.params, self.seq_len, self.context = req, arch, params, seq_len, context
        self.weight_bytes = weight_bytes
        self.projector_bytes = projector_bytes if weight_bytes else 0
        self.reserve = reserve
        self.embedding = embedding_params(arch) if req.model or req.vocab else 0
        self._cache: dict[Parallelism, MemoryBreakdown] = {}
        self._layouts: dict[int, list[Parallelism]] = {}
        self._fewest: dict[tuple[int, int | None], tuple[Parallelism, MemoryBreakdown, bool]] = {}

    def at(self, layout: Parallelism) -> MemoryBreakdown:
        """The memory per device of one layout (``estimate.memory``)."""
        hit = self._cache.get(layout)
        if hit is None:
            r = self.req
            if r.workload == "inference":
                if r.gpu_layers is not None and r.gpu_layers < self.arch.layers:
                    hit = offloaded_memory(r, self.arch, self.params, self.context, layout.devices)
                else:
                    hit = memory.inference_memory(self.arch, self.params, precision=r.precision,
                                                  devices=layout.devices, context=self.context, batch=r.batch,
                                                  quant=r.quant, weight_bytes=self.weight_bytes,
                                                  kv_cache_bits=r.kv_cache_bits,
                                                  projector_bytes=self.projector_bytes)
                    if self.reserve is not None:
                        hit = replace(hit, overhead_bytes=int(self.reserve(hit.weights_bytes * layout.devices,
                                                                           layout.devices)))
            else:
                software = training_software(r)
                hit = memory.training_memory(
                    self.arch, self.params, workload=r.workload, precision=r.precision, optimizer=r.optimizer,
                    zero=layout.zero, devices=layout.devices, tp=layout.tp, pp=layout.pp, seq_len=self.seq_len,
                    micro_batch=r.micro_batch, checkpointing=software.behaviours.checkpointing,
                    lora_rank=r.lora_rank, embedding_params=self.embedding, behaviours=software.behaviours,
                    lora_dropout=r.lora_dropout, lora_targets=r.lora_targets)
                if r.optimizer_offload:  # ZeRO-Offload: the optimizer states live in host RAM
                    hit = replace(hit, optimizer_bytes=0,
                                  host_offload_bytes=hit.host_offload_bytes + hit.optimizer_bytes * layout.devices)
            self._cache[layout] = hit
        return hit

    def layouts(self, devices: int) -> list[Parallelism]:
        """Candidate layouts for a device count, preferred first (least tensor parallelism)."""
        hit = self._layouts.get(devices)
        if hit is None:
            hit = self._layouts[devices] = self._make_layouts(devices)
        return hit

    def _make_layouts(self, devices: int) -> list[Parallelism]:
        r = self.req
        if r.workload == "inference":
            return [Parallelism(devices, devices, 1, 0)]
        if r.tp is not None:
            return [auto_parallelism(r, devices, r.tp)] if devices % (r.tp * r.pp) == 0 else []
        return [auto_parallelism(r, devices, tp) for tp in TP_CHOICES if devices % (tp * r.pp) == 0]

    def fewest_devices(self, capacity: int, max_tp: int | None = None,
                       most: int | None = None) -> tuple[Parallelism, MemoryBreakdown, bool]:
        """The smallest layout that fits ``capacity`` bytes, or the largest tried when none fits.

        Args:
            max_tp: the most devices a tensor-parallel group may span (one node); layouts with more are
                skipped, unless no layout is left (a requested ``--tp`` larger than the node).
            most: the most devices there are (owned hardware): counts above it are not tried, and ``most``
                itself is (three owned GPUs are tried as three).
        """
        if max_tp is not None and (max_tp >= max(TP_CHOICES) or self.req.workload == "inference"):
            max_tp = None  # every tensor-parallel degree tried fits in such a node; serving splits over all
        key = (capacity, max_tp, most)
        hit = self._fewest.get(key)
        if hit is None:
            hit = self._fewest[key] = self._search(capacity, max_tp, most)
        return hit

    def _search(self, capacity: int, max_tp: int | None,
                most: int | None = None) -> tuple[Parallelism, MemoryBreakdown, bool]:
        if self.req.workload == "inference" or (self.req.tp and max_tp is not None and self.req.tp > max_tp):
            max_tp = None  # serving splits over every device; a requested --tp stays as asked (and is refused)

        def allowed(layout: Parallelism) -> bool:
            return max_tp is None or layout.tp <= max_tp

        counts = (self.req.gpus,) if self.req.gpus else DEVICE_COUNTS
        if most is not None:
            bounded = tuple(n for n in counts if n <= most)
            counts = bounded if self.req.gpus else tuple(dict.fromkeys((*bounded, most)))
            if not counts:  # --gpus above what is owned: plan on all of it
                counts = (most,)
        last = None
        for n in counts:
            for layout in self.layouts(n):
                if not allowed(layout):
                    continue
                mem = self.at(layout)
                last = (layout, mem)
                if mem.total_bytes <= capacity:
                    return layout, mem, True
        if last is None:  # e.g. --gpus not divisible by --tp (validated earlier) or inference
            layout = Parallelism(counts[0], 1, 1, 0)
            return layout, self.at(layout), False
        if len(counts) == 1 and any(allowed(lay) for lay in self.layouts(counts[0])):  # a fixed count
            layout = min(filter(allowed, self.layouts(counts[0])), key=lambda lay: self.at(lay).total_bytes)
            return layout, self.at(layout), False
        return last[0], last[1], False


def offloaded_memory(req: PlanRequest, arch: ModelArch, params: int, context: int, devices: int) -> MemoryBreakdown:
    """Inference memory with ``req.gpu_layers`` layers on the GPU(s) and the rest in host RAM (llama.cpp
    ``-ngl N``, ``estimate.local.offload_plan``): the GPU side split over ``devices``, the host side in
    ``host_offload_bytes``."""
    sizes = layer_sizes(arch, params, precision=req.precision, quant=req.quant, context=context, batch=req.batch,
                        kv_bytes_per_value=memory.kv_value_bytes(req.kv_cache_bits, req.precision))
    split = offload_plan(sizes, req.gpu_layers, gpu_bandwidth_bps=1.0, cpu_bandwidth_bps=1.0,
                         gpu_capacity_bytes=0, host_capacity_bytes=0, gpu_overhead_bytes=0)
    n = req.gpu_layers
    kv = n * sizes.kv_bytes_per_layer / devices
    weights = (split.gpu_bytes - n * sizes.kv_bytes_per_layer) / devices
    other = weights + kv
    return memory.MemoryBreakdown(int(weights), 0, 0, 0, int(kv), memory.overhead_bytes(other) if n else 0,
                                  host_offload_bytes=split.host_bytes)
