"""Communication and pipeline terms of a training step, and the split of step time they give.

Formulas (docs/method.md, "Communication model"):
- Ring all-reduce of ``B`` bytes over ``d`` devices moves ``2(d-1)/d * B`` bytes through each device's link:
  ``t = 2(d-1)/d * B / bw`` (Patarasuk and Yuan 2009; the NCCL "bus bandwidth" convention).
- Data parallelism all-reduces the gradients once per step; sharded data parallelism (ZeRO-3 / FSDP
  FULL_SHARD) moves 1.5 times that volume (all-gather forward, all-gather backward, reduce-scatter:
  Rajbhandari et al. 2020, section 7). A stated fraction of it is hidden behind the backward pass
  (bucketed all-reduce, Li et al. 2020, "PyTorch Distributed", VLDB).
- Tensor parallelism (Megatron, Shoeybi et al. 2019; Narayanan et al. 2021 section 3.2) all-reduces the
  ``b*s*h`` activations twice in the forward and twice in the backward pass of every layer, inside one
  NVLink or PCIe domain, not overlapped.
- Pipeline parallelism with ``m`` micro-batches over ``p`` stages idles for ``(p-1)/m`` of the ideal
  compute time, a share ``(p-1)/(m+p-1)`` of the step (GPipe; Narayanan et al. 2021 eq. 1).
- Mixture-of-experts layers send each token's hidden state to its ``k`` experts and back, forward and
  backward: four all-to-alls of ``tokens*k*h`` values, of which ``(ep-1)/ep`` leave the device
  (Lepikhin et al. 2021, GShard; Fedus et al. 2022).
"""

from __future__ import annotations

from dataclasses import dataclass

DP_OVERLAP = 0.8  # assumption: share of the data-parallel all-reduce hidden behind the backward pass
BACKWARD_SHARE = 2.0 / 3.0  # backward is 4 of the 6 FLOPs per parameter and token


def ring_allreduce_s(message_bytes: float, devices: int, bandwidth_bps: float) -> float:
    """Time of a ring all-reduce: ``2(d-1)/d * bytes / bw`` (0 for one device).

    Args:
        message_bytes: bytes reduced (the full buffer each device holds).
        devices: devices in the ring.
        bandwidth_bps: per-device link bandwidth, bytes/s one way (or a measured bus bandwidth).
    """
    if devices <= 1 or message_bytes <= 0:
        return 0.0
    if bandwidth_bps <= 0:
        raise ValueError("bandwidth must be positive")
    return 2.0 * (devices - 1) / devices * message_bytes / bandwidth_bps


def all_to_all_s(message_bytes: float, devices: int, bandwidth_bps: float) -> float:
    """Time of an all-to-all in which each device holds ``message_bytes``: ``(d-1)/d`` of it leaves the device."""
    if devices <= 1 or message_bytes <= 0:
        return 0.0
    if bandwidth_bps <= 0:
        raise ValueError("bandwidth must be positive")
    return (devices - 1) / devices * message_bytes / bandwidth_bps


def bubble_fraction(stages: int, microbatches: int) -> float:
    """Share of a pipelined step spent idle: ``(p-1)/(m+p-1)``."""
    if stages < 1 or microbatches < 1:
        raise ValueError("stages and micro-batches must be at least 1")
    return (stages - 1) / (microbatches + stages - 1)


@dataclass(frozen=True)
class Links:
    """Bandwidths a layout communicates over, bytes/s one way per device.

    Attributes:
        intra_node_bps: NVLink / XGMI / PCIe inside one instance or rig (catalog ``interconnect_gbs``, or the
            all-reduce probe's measured bus bandwidth).
        inter_node_bps: the fabric between instances per device (InfiniBand, RoCE, EFA, Ethernet), or None
            where the instance states none: then no group may leave the node.
        devices_per_node: accelerators in one instance or rig.
    """

    intra_node_bps: float
    inter_node_bps: float | None
    devices_per_node: int


@dataclass(frozen=True)
class StepSplit:
    """Where one training step's time goes, seconds (per device, all devices in lockstep)."""

    compute_s: float
    tensor_parallel_s: float
    data_parallel_s: float  # exposed part of the data-parallel traffic
    data_parallel_total_s: float  # before overlap
    moe_s: float
    bubble_s: float

    @property
    def communication_s(self) -> float:
        return self.tensor_parallel_s + self.data_parallel_s + self.moe_s

    @property
    def step_s(self) -> float:
        return self.compute_s + self.communication_s + self.bubble_s

    @property
    def shares(self) -> dict[str, float]:
        """Fractions of the step: compute, communication, bubble (they sum to 1)."""
        s = self.step_s
        return {"compute": self.compute_s / s, "communication": self.communication_s / s, "bubble": self.bubble_s / s}

    @property
    def efficiency(self) -> float:
        """Compute time over step time: the factor by which communication and bubble slow the step."""
        return self.compute_s / self.step_s


def _group_bps(links: Links, span: int, what: str) -> float:
    """Bandwidth of a group spanning ``span`` consecutive devices: intra-node if it fits, else the fabric."""
    if span <= links.devices_per_node:
        return links.intra_node_bps
    if links.inter_node_bps is None:
        raise ValueError(f"the {what} group spans {span} devices, more than one node of {links.devices_per_node}, "
                         "and this instance states no inter-node fabric")
    return min(links.intra_node_bps, links.inter_node_bps)


def training_step_split(compute_s: float, *, params: float, layers: int, hidden: int, seq_len: int,
                        micro_batch: int, microbatches: int, links: Links, tp: int = 1, pp: int = 1, dp: int = 1,
                        grad_bytes_per_param: float = 2.0, activation_bytes: float = 2.0, sharded: bool = False,
                        moe_layers: int = 0, top_k: int = 0, ep: int = 1, overlap: float = DP_OVERLAP) -> StepSplit:
    """Split one training step into compute, communication and pipeline bubble.

    Args:
        compute_s: pure compute time of the step on one device (its ``microbatches`` micro-batches), e.g.
            from ``training_seconds`` for the step's tokens.
        params: parameters of the model (each device holds ``params/(tp*pp)``).
        layers, hidden, seq_len: model shape and sequence length.
        micro_batch, microbatches: sequences per micro-batch and micro-batches per step (gradient accumulation).
        links: bandwidths; tensor-parallel groups are innermost, then data-parallel, then pipeline (Megatron order).
        tp, pp, dp: tensor, pipeline and data-parallel degrees.
        grad_bytes_per_param: gradient bytes reduced per parameter (2 for bf16, 4 for fp32 reduction).
        activation_bytes: bytes per activation value (2 for bf16).
        sharded: ZeRO-3 / FSDP full sharding (1.5x the data-parallel volume).
        moe_layers, top_k, ep: mixture-of-experts layers, experts per token and expert-parallel degree.
        overlap: share of the data-parallel traffic hidden behind the backward pass (``DP_OVERLAP``).
    Returns:
        The split; ``step_s`` is compute + exposed communication + bubble.
    Raises:
        ValueError: a tensor-parallel group larger than a node, or a group that leaves the node without a fabric.
    """
    if tp > links.devices_per_node:
        raise ValueError(f"tensor parallelism {tp} does not fit in one node of {links.devices_per_node} devices")
    if not 0.0 <= overlap <= 1.0:
        raise ValueError("overlap must be a fraction")
    layers_per_stage = layers / pp
    act_msg = micro_batch * seq_len * hidden * activation_bytes
    tp_s = 0.0
    if tp > 1:
        tp_s = 4 * layers_per_stage * microbatches * ring_allreduce_s(act_msg, tp, _group_bps(links, tp, "tensor-parallel"))
    dp_total = 0.0
    if dp > 1:
        grad = params / (tp * pp) * grad_bytes_per_param * (1.5 if sharded else 1.0)
        dp_total = ring_allreduce_s(grad, dp, _group_bps(links, tp * dp, "data-parallel"))
    hidden_s = min(overlap * dp_total, BACKWARD_SHARE * compute_s)
    moe_s = 0.0
    if moe_layers and ep > 1:
        per_layer = micro_batch * seq_len * top_k * hidden * activation_bytes
        moe_s = (4 * moe_layers / pp * microbatches
                 * all_to_all_s(per_layer, ep, _group_bps(links, tp * ep, "expert-parallel")))
    bubble_s = compute_s * (pp - 1) / microbatches
    return StepSplit(compute_s=compute_s, tensor_parallel_s=tp_s, data_parallel_s=dp_total - hidden_s,
                     data_parallel_total_s=dp_total, moe_s=moe_s, bubble_s=bubble_s)


# The clusters the utilisation model was fitted on: NVLink inside the node and one 200 Gb/s HDR InfiniBand
# port per GPU between nodes (NVIDIA DGX A100 reference architecture: 8 x HDR for 8 GPUs), 25 GB/s per GPU.
REFERENCE_INTER_NODE_BPS = 25e9


def link_slowdown(compute_s: float, *, links: Links, **layout) -> float:
    """Step time on ``links`` over step time on the fitted clusters' links (see ``link_split``)."""
    return link_split(compute_s, links=links, **layout)[0]


def link_split(compute_s: float, *, links: Links, **layout) -> tuple[float, StepSplit]:
    """Step time on ``links`` over step time on the fitted clusters' links, for the same layout.

    The fitted MFU already carries the communication of the documented runs; this ratio moves an estimate
    only where an option's links differ from theirs (slower PCIe or Ethernet: above 1; faster: below 1).

    Args:
        compute_s: compute time of the step.
        links: the option's links.
        layout: the keyword arguments of ``training_step_split`` other than ``links``.
    Returns:
        ``(slowdown, split)``: the ratio and the option's own step split.
    """
    mine = training_step_split(compute_s, links=links, **layout)
    ref = training_step_split(compute_s, links=reference_links(links), **layout)
    return mine.step_s / ref.step_s, mine


def reference_links(links: Links) -> Links:
    """The fitted clusters' links for a node like ``links``: NVLink-class inside (at least 300 GB/s, at least
    8 devices) and 25 GB/s per device between nodes (``REFERENCE_INTER_NODE_BPS``)."""
    return Links(intra_node_bps=max(links.intra_node_bps, 300e9), inter_node_bps=REFERENCE_INTER_NODE_BPS,
                 devices_per_node=max(links.devices_per_node, 8))
