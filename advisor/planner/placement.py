"""Where an option's devices sit, and whether the job can run there as laid out (docs/method.md, "Options that can run").

A tensor-parallel group exchanges activations every layer and stays inside one node: one cloud instance
(its NVLink or PCIe domain), one home rig, one on-prem server. A job on more devices than one node holds
needs a fabric between nodes: a cloud instance that states one (``inter_node_gbps``), or the on-prem
assumption below; home rigs and rows that state none run on one node only. A price-index row is a
reference price, not an instance anyone can launch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from advisor.catalog import Accelerator
from advisor.catalog.per_gpu import per_gpu_machine, per_unit
from advisor.cost.assumptions import CostAssumptions
from advisor.planner.layouts import Parallelism

# On-prem: 8-GPU servers (HGX/DGX-class boards) joined by one 400 Gb/s InfiniBand NDR port per GPU, 50 GB/s
# (NVIDIA DGX H100 user guide: eight single-port ConnectX-7 400 Gb/s adapters for the compute fabric). The
# network is in the on-prem capex (``onprem_interconnect_share``).
ONPREM_GPUS_PER_NODE = 8
ONPREM_INTER_NODE_BPS = 400e9 / 8
ONPREM_FABRIC = "on-prem assumption: 8-GPU servers, one 400 Gb/s InfiniBand NDR port per GPU"
# Rates sold per GPU (RunPod, CoreWeave, Azure "per GPU" rows): one machine of the provider's largest instance,
# or an 8-GPU HGX board (advisor/catalog/per_gpu.py says which and why).
# A TPU slice is one ICI domain: chips of one slice talk over ICI, not over a data-centre network.
TPU_SLICE_CHIPS = 4096  # TPU v4 pod (Jouppi et al. 2023); larger slices are not offered per chip
PCIE_BPS = {3: 15.8e9, 4: 31.5e9, 5: 63e9}  # x16, per direction (PCI-SIG)


@dataclass(frozen=True)
class Placement:
    """The node an option's devices sit in.

    Attributes:
        devices_per_node: accelerators one node (instance, rig, server, TPU slice) holds.
        intra_node_bps: link between devices of a node, bytes/s per direction (catalog interconnect).
        inter_node_bps: fabric between nodes per device, bytes/s, or None where none is stated.
        fabric: where the inter-node figure comes from, in words.
        reference: a price-index row (a reference price, never a launch target).
        node_source: where ``devices_per_node`` comes from when it is not the row's own count (per-GPU rates).
    """

    devices_per_node: int
    intra_node_bps: float
    inter_node_bps: float | None
    fabric: str = ""
    reference: bool = False
    node_source: str = ""

    def nodes(self, devices: int) -> int:
        """Nodes a job of ``devices`` takes."""
        return max(1, math.ceil(devices / self.devices_per_node))


def intra_node_bps(acc: Accelerator) -> float:
    """The device-to-device link of an accelerator: its NVLink/XGMI/ICI figure, else PCIe x16 of its generation."""
    if acc.interconnect_bps:
        return acc.interconnect_bps
    return PCIE_BPS.get(acc.pcie_gen or 4, PCIE_BPS[4])


def cloud_placement(offer, acc: Accelerator) -> Placement:
    """The node of a cloud offer: the instance, one machine of the provider for per-GPU rates
    (``catalog.per_gpu``), the slice for TPU chips."""
    intra = intra_node_bps(acc)
    per_node, source = offer.accelerator_count, ""
    if per_unit(offer.instance):
        per_node, source = (TPU_SLICE_CHIPS, "") if acc.kind == "tpu" else per_gpu_machine(offer.provider)
    inter = offer.inter_node_bps_per_device
    fabric = f"{offer.inter_node_gbps:g} Gb/s per instance ({offer.inter_node_source})" if inter else ""
    return Placement(per_node, intra, inter, fabric, reference=offer.is_price_index, node_source=source)


def owned_placement(kind: str, acc: Accelerator, a: CostAssumptions, measured_bps: float | None = None) -> Placement:
    """The node of a home rig (``home_gpus_per_rig``, no fabric between rigs) or an on-prem server.

    Args:
        measured_bps: the all-reduce probe's bus bandwidth between this machine's GPUs; it replaces the
            catalog link of a home rig of this accelerator (this machine is one).
    """
    intra = measured_bps if kind == "home" and measured_bps else intra_node_bps(acc)
    if kind == "home":
        return Placement(a.home_gpus_per_rig, intra, None)
    return Placement(ONPREM_GPUS_PER_NODE, intra, ONPREM_INTER_NODE_BPS, ONPREM_FABRIC)


def inference_layout(layout: Parallelism, place: Placement) -> Parallelism:
    """A serving layout for a node: tensor parallelism inside each node, pipeline stages across nodes.

    Decoding reads each stage's weights in turn, so the time per token is that of the weights spread over
    all devices either way; only where the group leaves the node does the layout change.
    """
    n, per = layout.devices, place.devices_per_node
    if n <= per or n % per or place.inter_node_bps is None:
        return layout
    return Parallelism(n, per, n // per, 0)


def infeasible_reason(layout: Parallelism, place: Placement, where: str) -> str:
    """Why the job cannot run as laid out on this placement ("" when it can).

    Args:
        layout: the option's parallelism.
        place: the option's node.
        where: the node in words (``"instance"``, ``"home rig"``).
    """
    if place.reference:
        return "price index row: a reference price to compare with, not an instance to launch"
    if layout.tp > place.devices_per_node:
        return (f"tensor parallelism over {layout.tp} devices needs one NVLink or PCIe domain, more than one "
                f"{where} of {_devices(place.devices_per_node)}{_source(place)}")
    if layout.devices > place.devices_per_node and place.inter_node_bps is None:
        return (f"{layout.devices} devices need {place.nodes(layout.devices)} {where}s of "
                f"{_devices(place.devices_per_node)}, and no fabric between them is stated{_source(place)}")
    return ""


def _source(place: Placement) -> str:
    return f" ({place.node_source})" if place.node_source else ""


def _devices(n: int) -> str:
    return f"{n} device" + ("" if n == 1 else "s")
