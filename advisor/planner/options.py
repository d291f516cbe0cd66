"""Step 3 of a plan: the options of one accelerator, timed and priced (the one pricing path).

Speed comes from ``estimate.compute`` (training tokens/s at a utilisation, or the decode roofline); money
from ``cost.options.quote_job``, the one function that prices a device-job on every kind of option
(home rig, on-prem, each cloud offer on-demand and spot). Sensitivity plans again through here, and the
app's charts read the resulting :class:`~advisor.planner.result.PlanOption` objects.
"""

from __future__ import annotations

from advisor.catalog import Accelerator
from advisor.cost.assumptions import CostAssumptions
from advisor.cost.breakeven import break_even
from advisor.cost.compare import usd_per_million_requests, usd_per_million_tokens
from advisor.cost.jobs import OwnedQuote, home_rigs
from advisor.cost.options import DeviceJob, quote_job
from advisor.estimate import compute, memory
from advisor.estimate.model import ModelArch
from advisor.estimate.priors import ETA_COMPUTE_PRIOR, ETA_MEM_PRIOR, mfu_prior
from advisor.planner.layouts import MemoryModel, Parallelism
from advisor.planner.request import PlanRequest, compute_precision
from advisor.planner.result import OwningCost, PlanOption, Serving

HOME_KINDS = ("consumer", "workstation", "apple")  # an Apple machine is owned like a home rig (when priced)
ONPREM_KINDS = ("datacenter", "workstation")


def spread_note(offer, layout: Parallelism) -> str:
    """A warning when a job's tensor-parallel group spans separate instances of an offer.

    Tensor parallelism exchanges activations every layer and needs NVLink-class links inside one machine;
    across instances it crawls, so the estimate's time does not hold. Data and pipeline parallelism
    across instances are the usual multi-node layout and get no note. Per-GPU rates ("per GPU" rows)
    are sold in multi-GPU machines and are not flagged.
    """
    per_gpu_rate = "per gpu" in offer.instance.lower() or "per chip" in offer.instance.lower()
    if per_gpu_rate or layout.tp <= offer.accelerator_count:
        return ""
    return (f"tensor parallelism over {layout.tp} devices spans separate {offer.accelerator_count}-device "
            f"instances: the time assumes a fast link inside one machine; pick a larger instance")


def rig_note(kind: str, layout: Parallelism, a: CostAssumptions) -> str:
    """The home-rig counterpart of ``spread_note``: a tensor-parallel group larger than one rig."""
    if kind != "home" or layout.tp <= a.home_gpus_per_rig:
        return ""
    return (f"tensor parallelism over {layout.tp} GPUs spans {home_rigs(layout.devices, a)} rigs of "
            f"{a.home_gpus_per_rig}: the time assumes a fast link inside one machine")


def trains(acc: Accelerator) -> bool:
    """Whether an accelerator is meant for training (AWS Inferentia serves models only)."""
    return not acc.id.startswith("inferentia")


def utilisation(req: PlanRequest, acc: Accelerator, arch: ModelArch, calib) -> tuple[float, str]:
    """The training MFU of an accelerator: the user's, this machine's measurement, or the prior."""
    if req.mfu is not None:
        return req.mfu, "set by the user (--mfu)"
    if calib is not None and calib.mfu and calib.accelerator_id == acc.id:
        return calib.mfu, f"measured on this machine ({calib.source}, {calib.measured_at[:10]})"
    prior = mfu_prior(acc.id, acc.kind, compute_precision(req), moe=arch.is_moe, workload=req.workload)
    return prior.mfu, f"prior: {prior.origin}"


def _kinds(acc: Accelerator) -> tuple[str, ...]:
    return tuple(k for k, ok in (("home", acc.kind in HOME_KINDS), ("onprem", acc.kind in ONPREM_KINDS),
                                 ("cloud", True)) if ok)


def options_for(req: PlanRequest, acc: Accelerator, offers, mem_model: MemoryModel, arch: ModelArch, params: int,
                active: int, tokens: float | None, context: int, a: CostAssumptions, calib) -> list[PlanOption]:
    """Every priced option of one accelerator (none when it cannot run the job's precision or workload).

    Args:
        offers: the catalog's cloud offers of this accelerator.
        tokens: the token budget, or None for an hours budget (``req.hours``).
    Raises:
        ValueError: a figure out of range (an overflow), from the cost model.
    """
    precision = compute_precision(req)
    peak = acc.peak_flops(precision)
    if peak is None or (req.workload != "inference" and not trains(acc)):
        return []
    layout, mem, fits = mem_model.fewest_devices(acc.memory_bytes)
    n = layout.devices
    decode = None
    if req.workload == "inference":
        eta_mem = ETA_MEM_PRIOR
        if calib is not None and calib.eta_mem and calib.accelerator_id == acc.id:
            eta_mem = calib.eta_mem
        bits = memory.weight_bits(req.precision, req.quant)
        fraction_touched = 1.0
        if active < params:  # MoE: the experts a batch touches, 1 - (1 - k/E)^B
            fraction_touched = 1.0 - (1.0 - active / params) ** req.batch
        weight_read = (mem_model.weight_bytes or params * bits / 8) * fraction_touched
        kv_value_bytes = 1.0 if req.precision == "fp8" else 2.0
        kv_read = memory.kv_cache_bytes(arch, context, req.batch, kv_value_bytes)
        decode = compute.decode_estimate(
            weight_bytes_read=weight_read, kv_bytes_read=kv_read, active_params=active, batch=req.batch, devices=n,
            mem_bandwidth_bps=acc.mem_bandwidth_bps, peak_flops=peak, prompt_tokens=context,
            output_tokens=req.output_tokens, eta_mem=eta_mem,
            eta_compute=req.mfu if req.mfu is not None else ETA_COMPUTE_PRIOR)
        tps = decode.tokens_per_s
        # The compute utilisation the decode achieves: 2 * P_act FLOPs per token over the devices' peak.
        mfu = 2.0 * active * tps / (peak * n)
        mfu_origin = ("achieved by the decode: 2 x active params x tokens/s over the peak; bandwidth efficiency "
                      + (f"{eta_mem:.2f} measured" if eta_mem != ETA_MEM_PRIOR else
                         "0.7 prior (docs/method.md: 0.55 to 0.8)"))
    else:
        mfu, mfu_origin = utilisation(req, acc, arch, calib)
        tps = compute.training_tokens_per_s(active, n, peak, mfu, req.workload, req.checkpointing)
    if tokens is not None:
        hours = tokens / tps / 3600.0
        job_tokens = tokens
    else:
        hours = req.hours
        job_tokens = tps * hours * 3600.0
    common = dict(accelerator=acc.id, accelerator_name=acc.name, devices=n, fits=fits, parallelism=layout,
                  memory_per_device_bytes=mem.total_bytes, capacity_bytes=acc.memory_bytes, mfu=mfu,
                  mfu_origin=mfu_origin, hours=hours, device_hours=hours * n, tokens=job_tokens, tokens_per_s=tps)

    def serving(total_usd_per_h: float) -> Serving | None:
        if decode is None:
            return None
        return Serving(ttft_s=decode.prefill_s + decode.step_s, bandwidth_efficiency=eta_mem,
                       requests_per_s=decode.requests_per_s, decode_bound=decode.bound,
                       usd_per_million_tokens=usd_per_million_tokens(total_usd_per_h, tps),
                       usd_per_million_requests=usd_per_million_requests(total_usd_per_h, decode.requests_per_s))

    by_id = {o.id: o for o in offers}
    out: list[PlanOption] = []
    for q in quote_job(DeviceJob(acc, n, hours, _kinds(acc)), offers, a, spot_offers=req.spot_offers):
        if isinstance(q, OwnedQuote):
            be = break_even(q, offers, a)
            per_h = q.total_usd / hours if hours > 0 else 0.0
            out.append(PlanOption(id=q.option_id, kind=q.kind, energy_kwh=q.energy_kwh,
                                  usd_per_device_hour=q.usd_per_device_hour, breakdown=q.breakdown, break_even=be,
                                  owning=OwningCost(q.fixed_usd_per_device, q.variable_usd_per_device_hour),
                                  note=rig_note(q.kind, layout, a), serving=serving(per_h), **common))
        else:
            offer = by_id[q.offer_id]
            out.append(PlanOption(id=q.option_id, kind="cloud", energy_kwh=q.energy_kwh,
                                  usd_per_device_hour=q.usd_per_device_hour, breakdown=q.breakdown,
                                  provider=offer.provider, instance=offer.instance, spot=q.spot, instances=q.instances,
                                  price_date=offer.price_date, note=spread_note(offer, layout),
                                  serving=serving(q.usd_per_instance_hour * q.instances), **common))
    return out
