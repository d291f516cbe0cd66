"""Step 3 of a plan: the options of one accelerator, placed, timed and priced (the one pricing path).

Each option is placed on its node (``placement``: instance, rig, server, TPU slice, and the fabric between
them), laid out so that a tensor-parallel group stays inside one node, timed (``timing``: the fitted or prior
utilisation with the communication model, or the decode roofline), checked (an option that cannot run as
laid out is kept with its reason and never ranked), and priced by ``cost.options.quote_job``, the one
function that prices a device-job on every kind of option. Sensitivity plans again through here, and the
app's charts read the resulting :class:`~advisor.planner.result.PlanOption` objects.
"""

from __future__ import annotations

import functools
import math
from dataclasses import replace

from advisor.catalog import Accelerator
from advisor.cost.assumptions import CostAssumptions
from advisor.cost.compare import usd_per_million, usd_per_million_requests, usd_per_million_tokens
from advisor.cost.jobs import OwnedQuote, can_own
from advisor.cost.options import DeviceJob, quote_job
from advisor.cost.ownership import Use, home_holding, onprem_holding, payback
from advisor.estimate.fit import OFFLOAD_TIME_FACTOR
from advisor.estimate.local import CPU_ETA_MEM
from advisor.estimate.model import ModelArch
from advisor.job import JobInputError
from advisor.planner.calibrated import calibrate_serving, calibrate_training, training_position
from advisor.planner.layouts import MemoryModel, Parallelism
from advisor.planner.one_request import all_devices_faster, request_capacity
from advisor.planner.owned import (
    OwnedHardware,
    offloaded_decode,
    owned_capacity,
    owned_note,
    owned_quote,
    trains_on,
)
from advisor.planner.placement import (
    Placement,
    cloud_placement,
    infeasible_reason,
    inference_layout,
    intra_node_bps,
    owned_placement,
)
from advisor.planner.request import Lengths, PlanRequest, compute_precision, runtime_choice
from advisor.planner.result import OwningCost, PlanOption, Serving
from advisor.planner.serve_spec import model_serving
from advisor.planner.stacks import stack_fields
from advisor.planner.timing import Timing, serving_timing, training_step, training_timing

HOME_KINDS = ("consumer", "workstation", "apple")  # an Apple machine is owned like a home rig (when priced)
ONPREM_KINDS = ("datacenter", "workstation")
FIXED_PARTS = ("egress",)  # cost parts that do not grow with the hours (the rest scale with the time)


def plan_use(req: PlanRequest) -> Use:
    """The use the request states (``jobs_per_month``, ``other_use_hours_per_month``) for owned hardware and
    reserved terms (``advisor.cost.ownership``)."""
    return _use(req.jobs_per_month, req.other_use_hours_per_month if req.jobs_per_month is not None else 0.0)


@functools.lru_cache(maxsize=64)
def _use(jobs_per_month: float | None, other_hours: float) -> Use:
    return Use(jobs_per_month, other_hours)  # frozen: one object per stated use


def reserved_note(q, req: PlanRequest) -> str:
    """What a reserved option's price is: the term's rate at full use, spread over the stated (or this job's)
    hours a month, and the hourly equivalent (``cost.jobs.cloud_job_cost``)."""
    used = q.term_use_hours_per_month
    how = "the stated use" if req.jobs_per_month is not None else "this job once a month (--jobs-per-month)"
    return (f"reserved {q.reserved_years}-year term: {q.term_usd_per_instance_hour:.2f} USD/h per instance at full "
            f"use, paid every hour; spread over {used:,.1f} h a month ({how}): {q.usd_per_instance_hour:,.2f} USD/h "
            f"equivalent")


def powered(acc: Accelerator, req: PlanRequest) -> Accelerator:
    """The accelerator as the job's power limit (``power_limit_w``) leaves it for pricing: a board held below its
    rated power draws at most the limit, so its energy (and a server's power and colocation) is priced at
    ``min(TDP, limit)``; its speed is lowered in ``timing`` (``compute.power_limited_fraction``)."""
    limit = getattr(req, "power_limit_w", None)
    if not limit or not acc.tdp_w or limit >= acc.tdp_w:
        return acc
    return replace(acc, tdp_w=float(limit))


def runs(req: PlanRequest, acc: Accelerator) -> bool:
    """Whether an accelerator can run the job: its precision, and training on a part meant for it (``trains``)."""
    return acc.peak_flops(compute_precision(req)) is not None and (req.workload == "inference" or trains(acc))


def trains(acc: Accelerator) -> bool:
    """Whether an accelerator is meant for training (AWS Inferentia serves models only)."""
    return not acc.id.startswith("inferentia")


def measured_link_bps(acc: Accelerator, calib) -> float | None:
    """This machine's all-reduce bus bandwidth when the probe measured GPUs of this accelerator."""
    bus = getattr(calib, "allreduce_bus_bps", None) if calib is not None else None
    return bus if bus and calib.applies_to(acc.id) else None


def _places(acc: Accelerator, offers, a: CostAssumptions, calib=None) -> list[tuple[str, object, Placement, str]]:
    """``(kind, offer or None, placement, node in words)`` for every option of an accelerator."""
    out = []
    if can_own(acc):
        if acc.kind in HOME_KINDS:
            out.append(("home", None, owned_placement("home", acc, a, measured_link_bps(acc, calib)), "home rig"))
        if acc.kind in ONPREM_KINDS:
            out.append(("onprem", None, owned_placement("onprem", acc, a), "on-prem server"))
    for offer in offers:
        place = cloud_placement(offer, acc)
        out.append(("cloud", offer, place, "instance" if place.devices_per_node == offer.accelerator_count else
                    "TPU slice" if acc.kind == "tpu" else "machine"))
    return out


_NODES: dict[tuple[int, int], tuple] = {}  # (id(acc), id(offers)) -> (acc, offers, rig size, link, nodes)


def _nodes(acc: Accelerator, offers, a: CostAssumptions, calib=None) -> list[tuple[str, Placement, str, list]]:
    """:func:`_places` with the offers on one node together: ``(kind, placement, node in words, offers)`` in the
    order each node first comes (options on one node are laid out and timed alike). Kept for the same
    accelerator and offer list (the catalog's, plan after plan) while the rig size and measured link hold."""
    measured = measured_link_bps(acc, calib)
    hit = _NODES.get((id(acc), id(offers)))
    if hit is not None and hit[0] is acc and hit[1] is offers and hit[2] == a.home_gpus_per_rig \
            and hit[3] == measured:
        return hit[4]
    nodes: dict[tuple, list] = {}
    for kind, offer, place, where in _places(acc, offers, a, calib):
        group = nodes.setdefault((kind, place, where), [])
        if offer is not None:
            group.append(offer)
    out = [(kind, place, where, group) for (kind, place, where), group in nodes.items()]
    if len(_NODES) > 1024:  # catalogs built again and again (tests, imports): start over
        _NODES.clear()
    _NODES[(id(acc), id(offers))] = (acc, offers, a.home_gpus_per_rig, measured, out)
    return out


_BY_ID: dict[int, tuple] = {}  # id(offers) -> (offers, {offer id: offer}): the catalog's lists, plan after plan


def _offers_by_id(offers) -> dict:
    """``{offer id: offer}`` of an accelerator's offers, kept for the same (catalog's) list object."""
    hit = _BY_ID.get(id(offers))
    if hit is not None and hit[0] is offers:
        return hit[1]
    by_id = {o.id: o for o in offers}
    if len(_BY_ID) > 1024:  # catalogs built again and again (tests, imports): start over
        _BY_ID.clear()
    _BY_ID[id(offers)] = (offers, by_id)
    return by_id


class _Idle:
    """What a job keeps of a part that cannot run it (``runs``), in place of its timer: nothing but the part."""

    def __init__(self, acc: Accelerator, mem_model: MemoryModel):
        self.acc, self.mem_model = acc, mem_model


class _Timer:
    """Layouts and timings of one accelerator, memoised by node (options of one node size share them)."""

    def __init__(self, req, acc, arch, params, active, lens: Lengths | None, mem_model: MemoryModel, calib):
        self.req, self.acc, self.arch, self.params, self.active = req, acc, arch, params, active
        self.lens, self.mem_model, self.calib = lens, mem_model, calib
        self._timings: dict[tuple, Timing] = {}
        self._steps: dict[tuple, object] = {}
        self._nodes: dict[tuple, tuple] = {}
        self._prices: tuple = (None, None)  # (assumptions, spot offers) of the groups' quotes: ``quotes``
        self._skeletons: dict[tuple, tuple] = {}  # the groups of the options on the catalog's nodes: ``groups``
        self._offloaded: dict[int, tuple] = {}  # --gpu-layers: a timing with layers on the CPU: ``offloaded``
        # A power limit is set on hardware one runs (owned, a rig, a server), not on a rented instance
        self._unlimited = req.model_copy(update={"power_limit_w": None}) if req.power_limit_w else req
        self.billed = powered(acc, req)  # the part priced as a rig or server at the job's power limit (``powered``)
        self.nodes_of: tuple | None = None  # the nodes and groups ``options_for`` last walked, with what they rest on

    def groups(self, nodes: list, wanted: tuple[str, ...], measured: float | None) -> tuple[tuple, dict]:
        """``(groups, node_of)`` of the job on ``nodes`` (``_nodes``: the catalog's, kept plan after plan):
        options on one layout, timing and verdict share their figures, each group a list ``[kind, base, offers,
        priced, cloud fields]`` (``base``: :meth:`_base`; ``priced``: :meth:`quotes`' last; ``cloud fields``:
        :func:`_cloud_fields`' last), in the order each first comes;
        ``node_of``: a cloud offer's own node (a group may hold offers of several node sizes). Kept on the timer
        for those very nodes, the job's stacks and a link measured on this machine, so an edit of the budget or
        a price walks the groups without placing, timing or grouping again."""
        key = (id(nodes), wanted, measured)
        hit = self._skeletons.get(key)
        if hit is not None and hit[0] is nodes:  # held, so its id stays its own
            return hit[1]
        found: dict[tuple, list] = {}
        node_of: dict[str, Placement] = {}
        for kind, place, where, node_offers in nodes:
            layout, mem, fits, t, reason, n_nodes = self.on_node(kind, place, where)
            if self.req.workload == "inference" and self.req.gpu_layers is not None and t.decode is not None:
                t = self.offloaded(t, layout)
            group_key = (kind, id(t), layout, fits, reason, n_nodes)
            group = found.get(group_key)
            if group is None:
                group = found[group_key] = [kind, self._base(kind, t, layout, mem, fits, reason, n_nodes, wanted,
                                                             measured), [], None, None]
            group[2].extend(node_offers)
            for o in node_offers:
                node_of[o.id] = place
        for group in found.values():
            group[2] = tuple(group[2])
        skeleton = (tuple(found.values()), node_of)
        if len(self._skeletons) > 64:  # catalogs or stacks changed again and again: start over
            self._skeletons.clear()
        self._skeletons[key] = (nodes, skeleton)
        return skeleton

    def offloaded(self, t: Timing, layout: Parallelism) -> Timing:
        """--gpu-layers: ``t`` with the layers left on the CPU read at a host's bandwidth (timed as an owned GPU's
        would be, on a host of the prior's figures), kept per timing."""
        hit = self._offloaded.get(id(t))
        if hit is not None and hit[0] is t:
            return hit[1]
        req, lens = self.req, self.lens
        decode, shown = offloaded_decode(t.decode, req, self.arch, self.params, lens.window, self.acc,
                                         OwnedHardware(self.acc, layout.devices), layout.devices, lens.output)
        out = t if shown is None else replace(t, decode=decode, tokens_per_s=decode.tokens_per_s, high_cap=None)
        self._offloaded[id(t)] = (t, out)
        return out

    def _base(self, kind: str, t: Timing, layout: Parallelism, mem, fits: bool, reason: str, nodes: int,
              wanted: tuple[str, ...], measured: float | None) -> tuple:
        """``(timing, common, prepared figures, serving figures, [last budget])`` of a group whatever its budget
        (``_fixed_figures``, ``PlanOption.prepare``, ``_serving_figures``), with what is set into it: the job's
        stacks, a link measured on this machine; :func:`_budgeted` sets a budget's figures over them."""
        common = _fixed_figures(self.acc, layout, mem, fits, t, reason, nodes)
        common["figures"].update(stack_fields(self.acc.stacks, wanted))
        if measured and kind == "home" and layout.devices > 1 and t.shares is not None:
            common["figures"]["note"] = "; ".join(filter(None, [common["note"], (
                f"links: {measured / 1e9:.1f} GB/s all-reduce bus bandwidth measured on this machine")]))
        return t, common, PlanOption.prepare(common["figures"]), _serving_figures(t), [None]

    def quotes(self, group: list, billed: Accelerator, hours: float, a: CostAssumptions, use,
               spot_offers: bool) -> list:
        """``[quotes, built, prices]`` of a group of :meth:`groups`: ``quotes`` its ``cost.options.quote_job`` for ``hours``
        on a node of its kind (its cloud offers; ``billed``: the part as the job's power limit leaves it,
        ``powered``), ``built`` None or what :func:`options_for` built of them, ``prices`` the
        assumptions and spot choice they were made with (one tuple while those hold: ``_cloud_fields``).

        The last quotes of each group are kept on it for the same cost assumptions and spot choice (an edit of a
        price starts anew; the timer itself is kept for the job's timing key and the part), hours and the use that
        reaches the price: a home rig's or a server's holding is spread over the stated use, a cloud price follows
        it only through a reserved term's hours a month (``DeviceJob.use_hours_per_month``), so an edit of the jobs
        a month prices the rigs and servers again and keeps the cloud quotes without a term."""
        prices = self._prices
        if not (prices[0] is a or prices[0] == a) or prices[1] != spot_offers:
            prices = self._prices = (a, spot_offers)  # a new tuple: the groups' quotes of the old ones are left
        kind, devices, offers = group[0], group[1][1]["devices"], group[2]
        job = None
        if kind != "cloud":
            use_key = use
        elif a.reserved_years:
            job = DeviceJob.at(self.acc, devices, hours, (kind,), use)
            use_key = job.use_hours_per_month
        else:
            use_key = None
        held = group[3]  # (prices, hours, use, [quotes, built]): one read, whatever another thread sets
        if held is not None and held[0] is prices and held[1] == hours and held[2] == use_key:
            return held[3]
        job = job or DeviceJob.at(self.acc if kind == "cloud" else billed, devices, hours, (kind,), use)
        priced = [quote_job(job, offers, a, spot_offers=spot_offers), None, prices]
        group[3] = (prices, hours, use_key, priced)
        return priced

    def on_node(self, kind: str, place: Placement, where: str) -> tuple:
        """``(layout, memory, fits, timing, why it cannot run or "", nodes)`` of the job on one node of ``kind``:
        :meth:`layout`, :meth:`time` and ``placement.infeasible_reason``, kept per node (a node's placement is the
        catalog's, kept by ``_nodes`` plan after plan)."""
        key = (kind, id(place), where)
        hit = self._nodes.get(key)
        if hit is not None and hit[0] is place:
            return hit[1]
        layout, mem, fits = self.layout(place)
        t = self.time(layout, place, rented=kind == "cloud")
        figures = (layout, mem, fits, t, infeasible_reason(layout, place, where), place.nodes(layout.devices))
        self._nodes[key] = (place, figures)
        return figures

    def layout(self, place: Placement):
        """The fewest devices that fit with tensor parallelism inside one node: ``(layout, memory, fits)``."""
        layout, mem, fits = self.mem_model.fewest_devices(self.acc.memory_bytes)
        # A narrower search only where it can help: the group leaves the node and nodes can be joined (without
        # a fabric the job needs more devices than one node holds at any tensor-parallel degree).
        if fits and layout.tp > place.devices_per_node and place.inter_node_bps is not None:
            layout, mem, fits = self.mem_model.fewest_devices(self.acc.memory_bytes, place.devices_per_node)
        if self.req.workload == "inference":
            layout = inference_layout(layout, place)
        return layout, mem, fits

    def time(self, layout: Parallelism, place: Placement, rented: bool = False) -> Timing:
        """The speed of one layout on one node (see ``timing``); ``rented``: a cloud instance, which runs at its
        rated power whatever the job's power limit."""
        # Only the links a layout uses tell timings apart: none on one device, no fabric inside one node;
        # a decode's time does not depend on them.
        req = self._unlimited if rented else self.req
        if req.workload == "inference":
            key = (layout.devices, req is self.req)
        else:
            leaves = layout.devices > place.devices_per_node
            key = (layout, layout.devices > 1 and place.intra_node_bps, leaves and place.devices_per_node,
                   leaves and place.inter_node_bps, req is self.req)
        hit = self._timings.get(key)
        if hit is None:
            if req.workload == "inference":
                hit = serving_timing(req, self.acc, self.arch, self.params, self.active, self.lens,
                                     layout.devices, self.calib, self.mem_model.weight_bytes,
                                     projector_bytes=self.mem_model.projector_bytes)
                hit = calibrate_serving(hit, req, self.acc, self.arch.is_moe)
                if hit.speed is not None and hit.software is not None:  # the cache one request has: serve's rule
                    model = model_serving(self.arch, self.params, self.active, req.precision, req.kv_cache_bits,
                                          self.mem_model.weight_bytes)
                    hit = hit.with_(kv_capacity_tokens=request_capacity(self.acc, layout.devices, hit.speed,
                                                                        hit.software, model))
            else:
                step = self._steps.get((layout, req is self.req))
                if step is None:
                    step = self._steps[(layout, req is self.req)] = training_step(
                        req, self.acc, self.arch, self.params, self.active, self.mem_model.seq_len, layout, self.calib)
                hit = calibrate_training(training_timing(step, place), req, self.arch.is_moe, training_position(
                    req, self.acc, layout.devices, layout.tp, layout.pp, self.params, self.arch.is_moe,
                    self.mem_model.seq_len, req.model))
            self._timings[key] = hit
        return hit


def _budgeted(base: tuple, tokens: float | None, budget_hours: float | None) -> tuple[float, tuple, dict]:
    """``(hours, hours interval, budget figures)`` of a group (``_Timer._base``) for a budget of ``tokens`` (or
    ``budget_hours`` when None): :func:`_budget_figures`, set over the group's prepared figures as each option is
    built, the last budget asked kept on it (an edit of a price or the use keeps it)."""
    budget = (tokens, budget_hours)
    last = base[4][0]  # (budget, figures): one read, so a plan in another thread cannot mix two budgets
    if last is not None and last[0] == budget:
        return last[1]
    figures = _budget_figures(base[0], base[1]["devices"], tokens, budget_hours)
    base[4][0] = (budget, figures)
    return figures


def _cost_interval(cost: float, breakdown, hours: float, hours_interval) -> tuple[float, float]:
    """The cost at the ends of the hours' interval: the parts that scale with time scale, egress stays."""
    if hours <= 0:
        return cost, cost
    fixed = 0  # sum() of the fixed parts, in order, without a list per option
    for name, usd in breakdown.parts:
        if name in FIXED_PARTS:
            fixed += usd
    lo, hi = hours_interval
    return fixed + (cost - fixed) * lo / hours, fixed + (cost - fixed) * hi / hours


def options_for(req: PlanRequest, acc: Accelerator, offers, mem_model: MemoryModel, arch: ModelArch, params: int,
                active: int, tokens: float | None, lens: Lengths | None, a: CostAssumptions, calib,
                stale_ids: frozenset[str] = frozenset(), wanted: tuple[str, ...] = (),
                timers: dict | None = None, use: Use | None = None) -> list[PlanOption]:
    """Every priced option of one accelerator (none when it cannot run the job's precision or workload).

    Args:
        offers: the catalog's cloud offers of this accelerator.
        tokens: the token budget, or None for an hours budget (``req.hours``).
        stale_ids: offer ids priced more than a year before the catalog's date.
        wanted: the job's software stacks (``planner.stacks.wanted_stacks``), to mark each option against.
        timers: accelerator id -> its timer kept from earlier plans of the same job (``service._Kept``); the
            timer made here is added to it.
        use: the use the request states (``plan_use``), when the caller has it.
    Raises:
        ValueError: a figure out of range (an overflow), from the cost model.
    """
    timer = None if timers is None else timers.get(acc.id)
    if timer is None or timer.acc is not acc or timer.mem_model is not mem_model:
        timer = _Timer(req, acc, arch, params, active, lens, mem_model, calib) if runs(req, acc) else \
            _Idle(acc, mem_model)
        if timers is not None:
            timers[acc.id] = timer
    if timer.__class__ is _Idle:
        return []
    # the accelerator's nodes and groups, kept on its timer while the offers, the rig size, the calibration and the
    # job's stacks are those they were made of (the timer is the job's on this part, kept for its timing key, so
    # whether the part runs the job and its power as the job's limit leaves it are the timer's own)
    held = timer.nodes_of
    if held is not None and held[0] is offers and held[1] == a.home_gpus_per_rig and held[2] is calib \
            and held[3] == wanted:
        nodes_list, skeleton, node_of = held[4]
    else:
        nodes_list = _nodes(acc, offers, a, calib)
        skeleton, node_of = timer.groups(nodes_list, wanted, measured_link_bps(acc, calib))
        timer.nodes_of = (offers, a.home_gpus_per_rig, calib, wanted, (nodes_list, skeleton, node_of))
    out: list[PlanOption] = []
    use = plan_use(req) if use is None else use
    billed = timer.billed  # a rig or server priced at the power the job's limit leaves it (not a rental)
    budget_hours, spot_offers, quotes_of = req.hours, req.spot_offers, timer.quotes
    for group in skeleton:
        base = group[1]  # the group's figures whatever the budget (``_Timer._base``)
        hours, hours_iv, figures = _budgeted(base, tokens, budget_hours)
        priced = quotes_of(group, billed, hours, a, use, spot_offers)
        # The options built of a group's figures and quotes (kept on ``priced``) while those very figures, the stale
        # offers and the nodes (each offer's own node) are the same: an edit that leaves the group's budget and its
        # prices (a cloud option's, when the jobs a month change) gives the same options. (The request reaches an
        # option beyond its figures and quotes only in a reserved term's note, whether a use is stated, and such
        # quotes are kept by the stated use's hours, None when none is.)
        kept = priced[1]
        if kept is not None and kept[0] is figures and kept[1] is stale_ids and kept[2] is nodes_list:
            out.extend(kept[3])
            continue
        t, common, prepared, serving, quotes = base[0], base[1], base[2], base[3], priced[0]
        start = len(out)
        fields = group[4]  # (prices, stale offers, each quote's own fields): one read
        if fields is None or fields[0] is not priced[2] or fields[1] is not stale_ids:
            fields = group[4] = (priced[2], stale_ids, _cloud_fields(quotes, _offers_by_id(offers), node_of,
                                                                     stale_ids, common, prepared, figures))
        for q, own in zip(quotes, fields[2]):
            breakdown = q.breakdown
            total = breakdown.total_usd  # the quote's total (``total_usd``), read once without the property
            per_h = total / hours if hours > 0 else 0.0  # every part, spot rework included
            cost_iv = _cost_interval(total, breakdown, hours, hours_iv)
            # PlanOption.build's fields: the group's prepared figures with a cloud offer's own (``_cloud_fields``) at
            # once, the budget's at once, the price's one by one (a plan builds a few hundred options per keystroke;
            # tests/planner/test_option_build.py checks every option has exactly the fields)
            option = object.__new__(PlanOption)
            held = option.__dict__
            held.update(own)
            held.update(figures)
            if q.__class__ is OwnedQuote:  # a rig, a server: the fields PlanOption.build would set, in its order
                held["id"] = q.option_id
                held["kind"] = q.kind
                held["energy_kwh"] = q.energy_kwh
                held["usd_per_device_hour"] = q.usd_per_device_hour
                held["breakdown"] = breakdown
                held["utilisation"] = q.utilisation
                held["cost_usd_interval"] = cost_iv
                held["owning"] = OwningCost.of(q.fixed_usd_per_device, q.variable_usd_per_device_hour, q.holding)
                held["serving"] = _priced_serving(serving, t, per_h)
                held["nodes"] = common["nodes"]
                held["gpus_per_node"] = common["gpus_per_node"]
                held["cost_usd"] = total
                out.append(option)
                continue
            held["energy_kwh"] = q.energy_kwh
            held["usd_per_device_hour"] = q.usd_per_device_hour
            held["breakdown"] = breakdown
            held["cost_usd_interval"] = cost_iv
            held["serving"] = None if serving is None else _priced_serving(serving, t, per_h)  # None: training
            if q.term_usd_per_instance_hour is not None:  # a commitment: say what the hourly figure stands for
                held["note"] = "; ".join(filter(None, [prepared["note"], reserved_note(q, req)]))
            held["cost_usd"] = total
            out.append(option)
        priced[1] = (figures, stale_ids, nodes_list, tuple(out[start:]))
    return out


def _cloud_fields(quotes: list, by_id: dict, node_of: dict, stale_ids: frozenset, common: dict, prepared: dict,
                  budget: dict) -> tuple:
    """Each option of a group's quotes as far as its price and budget leave it: the group's prepared figures
    (``PlanOption.prepare``), the fields of a group's ``budget`` (:func:`_budget_figures`) in the order
    :meth:`PlanOption.build` sets them (each budget's set over them as the option is built) and a cloud option's id,
    offer, spot, instances, stale price and its own node's count and reference (a group may hold offers of several
    node sizes). A group's quotes come in one order for the same offers, devices, assumptions and
    spot choice (``cost.jobs.offer_quotes``: each offer on-demand where priced, then at its spot price), so these
    are kept on the group for those (``options_for``) and copied into each option at once."""
    out = []
    for q in quotes:
        if q.__class__ is OwnedQuote:  # a rig's or a server's: its fields are set as it is built
            out.append({**prepared, **budget})
            continue
        offer = by_id[q.offer_id]
        own = node_of[q.offer_id]
        instance_row = own.devices_per_node == offer.accelerator_count
        out.append({**prepared, **budget, "id": q.option_id, "kind": "cloud", "provider": offer.provider,
                    "instance": offer.instance, "spot": q.spot, "instances": q.instances,
                    "price_date": offer.price_date, "price_stale": offer.id in stale_ids, "reference": own.reference,
                    "nodes": q.instances if instance_row else common["nodes"],
                    "gpus_per_node": offer.accelerator_count if instance_row else common["gpus_per_node"]})
    return tuple(out)


def rent_options(options, a: CostAssumptions) -> list[PlanOption]:
    """The cloud options owning is measured against: those that fit and run as laid out, at on-demand prices
    unless the assumptions rank by spot (a steady cadence cannot count on spot capacity); spot where there is
    no on-demand offer. ``with_break_even`` and the buy advisor's rent (``planner.buy.cheapest_rent``)."""
    runs = [o for o in options if o.kind == "cloud" and o.fits and o.feasible]
    return [o for o in runs if a.spot or not o.spot] or runs


def with_break_even(options: list[PlanOption], accelerators, a: CostAssumptions, use: Use) -> list[PlanOption]:
    """Home and on-prem options with their break-even against renting the same job (``cost.ownership.payback``).

    The rent compared with is the cheapest cloud option that can run the job (fits, and runs as laid out) on
    the same accelerator, else on any accelerator of the plan; never one listed as infeasible. On-demand prices
    unless the assumptions rank by spot (a steady cadence cannot count on spot capacity); spot where there is
    no on-demand offer.
    """
    cheapest_any = None
    by_acc: dict[str, PlanOption] = {}  # the cheapest of each accelerator, by (cost, id): one pass, no sort
    for o in rent_options(options, a):
        held = by_acc.get(o.accelerator)
        if held is None or o.cost_usd < held.cost_usd or (o.cost_usd == held.cost_usd and o.id < held.id):
            by_acc[o.accelerator] = o
    for o in by_acc.values():
        if cheapest_any is None or o.cost_usd < cheapest_any.cost_usd or (
                o.cost_usd == cheapest_any.cost_usd and o.id < cheapest_any.id):
            cheapest_any = o
    out = []
    for o in options:
        if o.kind not in ("home", "onprem") or o.accelerator not in accelerators:
            out.append(o)
            continue
        holding = o.owning.holding if o.owning is not None else None  # what its quote was priced on
        if holding is None or holding.kind != o.kind or holding.devices != o.devices:
            holding = (home_holding if o.kind == "home" else onprem_holding)(accelerators[o.accelerator], o.devices,
                                                                             a)
        rent = by_acc.get(o.accelerator, cheapest_any)
        be = payback(holding, o.hours, use, None if rent is None else rent.id,
                     None if rent is None else rent.cost_usd, None if rent is None else rent.hours,
                     "" if rent is None else rent.provider,
                     None if rent is None or not rent.device_hours else rent.cost_usd / rent.device_hours)
        out.append(o.with_(break_even=be))
    return out


def _figures(req: PlanRequest, acc: Accelerator, layout: Parallelism, mem, fits: bool, t: Timing,
             tokens: float | None, reason: str, nodes: int) -> dict:
    """The figures an option has whatever its price: devices, memory, speed, hours with their intervals
    (``_fixed_figures`` with ``_budget_figures`` of the budget, ``tokens`` or ``req.hours``)."""
    common = _fixed_figures(acc, layout, mem, fits, t, reason, nodes)
    hours, hours_iv, values = _budget_figures(t, layout.devices, tokens, req.hours)
    common["figures"].update(values)
    common["hours"], common["hours_interval"] = hours, hours_iv
    return common


def _fixed_figures(acc: Accelerator, layout: Parallelism, mem, fits: bool, t: Timing, reason: str,
                   nodes: int) -> dict:
    """The figures of :func:`_figures` that do not depend on the budget: devices, memory, speed."""
    n = layout.devices
    figures = dict(accelerator=acc.id, accelerator_name=acc.name, devices=n, fits=fits, parallelism=layout,
                   memory_per_device_bytes=mem.total_bytes, memory=mem, capacity_bytes=acc.memory_bytes, mfu=t.mfu,
                   mfu_origin=t.mfu_origin, mfu_source=t.source, tokens_per_s=t.tokens_per_s,
                   tokens_per_s_interval=t.interval(t.tokens_per_s), feasible=not reason, infeasible_reason=reason,
                   note=t.note, reach=t.reach)
    return {"figures": figures, "devices": n, "nodes": nodes, "gpus_per_node": math.ceil(n / nodes), "note": t.note}


def _budget_figures(t: Timing, n: int, tokens: float | None, budget_hours: float | None) -> tuple[float, tuple, dict]:
    """``(hours, hours interval, figures)`` of a job of ``tokens`` (or ``budget_hours`` when None) on ``n`` devices
    at the speed ``t``: the hours with their interval, the device-hours, the tokens and the time split."""
    if tokens is not None:
        hours, job_tokens = tokens / t.tokens_per_s / 3600.0, tokens
        hours_iv = t.interval(hours, inverse=True)
    else:
        hours, job_tokens = budget_hours, t.tokens_per_s * budget_hours * 3600.0
        hours_iv = (hours, hours)
    split = None
    if t.shares is not None:  # a loop, not a comprehension: no function made and called per group and budget
        split = {}
        for k, v in t.shares.items():
            split[k] = v * hours * 3600.0
    return hours, hours_iv, {"hours": hours, "device_hours": hours * n, "tokens": job_tokens,
                             "hours_interval": hours_iv, "time_split_s": split}


def _serving(t: Timing, total_usd_per_h: float) -> Serving | None:
    """The serving figures of an option at its whole hourly cost (rent, spot rework, storage, egress)."""
    return _priced_serving(_serving_figures(t), t, total_usd_per_h)


def _serving_figures(t: Timing) -> dict | None:
    """The serving figures of a timing but for those of its price (options on one timing share them)."""
    d = t.decode
    if d is None:
        return None
    prefill = t.prompt_tokens * t.batch / d.prefill_s if t.prompt_tokens and d.prefill_s > 0 else None
    ttft = d.prefill_s  # the prompts' prefill gives the first token (estimate.serving.single_request)
    rates_ok = all(r.__class__ is float and 0.0 <= r < math.inf for r in (t.tokens_per_s, d.requests_per_s))
    return (_CheckedServing if rates_ok else dict)(ttft_s=ttft, bandwidth_efficiency=t.eta_mem, requests_per_s=d.requests_per_s,
                prefill_tokens_per_s=prefill,
                ttft_s_interval=_log_interval(ttft, t.ttft_width_log if t.ttft_width_log is not None
                                              else t.width_log),
                prefill_tokens_per_s_interval=None if prefill is None else _log_interval(
                    prefill, t.prefill_width_log if t.prefill_width_log is not None else t.width_log),
                decode_bound=d.bound, ttft_single_request_s=t.ttft_one_s, software=t.software,
                overhead_s=d.overhead_s, kv_capacity_tokens=t.kv_capacity_tokens)


def _priced_serving(figures: dict | None, t: Timing, total_usd_per_h: float) -> Serving | None:
    """``Serving(**figures, usd_per_million_...)`` at the hourly cost: every field given, without the frozen
    dataclass's per-field init (a serving plan makes one per option)."""
    if figures is None:
        return None
    serving = object.__new__(Serving)
    held = serving.__dict__
    held.update(figures)
    if figures.__class__ is _CheckedServing and total_usd_per_h < math.inf:  # rates checked in ``_serving_figures``
        held["usd_per_million_tokens"] = usd_per_million(total_usd_per_h, t.tokens_per_s)
        held["usd_per_million_requests"] = usd_per_million(total_usd_per_h, t.decode.requests_per_s)
    else:
        held.update(usd_per_million_tokens=usd_per_million_tokens(total_usd_per_h, t.tokens_per_s),
                    usd_per_million_requests=usd_per_million_requests(total_usd_per_h, t.decode.requests_per_s))
    return serving


class _CheckedServing(dict):
    """Serving figures of a timing whose rates are finite and zero or more (checked once in ``_serving_figures``),
    so every option of it is priced without checking them again; its hourly cost is a sum of checked parts."""


def _log_interval(value: float, width_log: float) -> tuple[float, float]:
    """``[value / e^w, value * e^w]``: an 80 % interval of half-width ``w`` in log space."""
    f = math.exp(width_log)
    return value / f, value * f


def owned_options_for(req: PlanRequest, hw: OwnedHardware, mem_model: MemoryModel, arch: ModelArch, params: int,
                      active: int, tokens: float | None, lens: Lengths | None, a: CostAssumptions, calib,
                      wanted: tuple[str, ...] = ()) -> list[PlanOption]:
    """The options of hardware the user owns (``planner.owned``): kind ``owned``, at most the devices it holds,
    placed on its machines (``per_machine`` devices each, no fabric between them unless measured), timed like
    every other option and priced at its energy (and wear when a rate is set), never a purchase.

    Several GPUs are planned on their best layout: every device the hardware holds (data parallel for training,
    tensor parallel for a runtime that splits tensors) when that is faster than the fewest devices that fit;
    the fewest devices are then a second option (id ``<id>@<n>``) when they cost less per job.

    Returns:
        One or two options, or none when the hardware cannot run the job's precision or workload.
    """
    acc = hw.accelerator
    if not runs(req, acc) or not trains_on(hw, req.workload):
        return []
    capacity = owned_capacity(hw, _backend_of(req, acc))
    per_node = hw.per_machine or hw.count
    place = Placement(per_node, intra_node_bps(acc), None)
    fewest = mem_model.fewest_devices(capacity, per_node, hw.count)
    timer = _Timer(req, acc, arch, params, active, lens, mem_model, calib)
    first = _owned_option(req, hw, fewest, place, timer, arch, lens, tokens, a, wanted)
    if req.gpus or fewest[0].devices >= hw.count or not fewest[2]:
        return [first]
    every = next(((lay, m, True) for lay in mem_model.layouts(hw.count)
                  if lay.tp <= per_node and (m := mem_model.at(lay)).total_bytes <= capacity), None)
    if every is None:
        return [first]
    whole = _owned_option(req, hw, every, place, timer, arch, lens, tokens, a, wanted)
    if not (whole.feasible and all_devices_faster(whole.hours, first.hours)):
        return [first]
    out = [whole]
    if first.cost_usd < whole.cost_usd:
        out.append(replace(first, id=f"{hw.id}@{first.devices}", this_machine=False))
    return out


def _owned_option(req: PlanRequest, hw: OwnedHardware, found: tuple, place: Placement, timer: _Timer,
                  arch: ModelArch, lens: Lengths | None, tokens: float | None, a: CostAssumptions,
                  wanted: tuple[str, ...]) -> PlanOption:
    """One owned option on a layout ``found = (layout, memory, fits)``."""
    acc = hw.accelerator
    layout, mem, fits = found
    if req.workload == "inference":
        layout = inference_layout(layout, place)
    t = timer.time(layout, place)
    offload = None
    if req.workload == "inference" and t.decode is not None:
        t = local_decode(t, acc)
        decode, offload = offloaded_decode(t.decode, req, arch, timer.params, lens.window, acc, hw, layout.devices,
                                           lens.output)
        if offload is not None:
            t = replace(t, decode=decode, tokens_per_s=decode.tokens_per_s, high_cap=None)
            fits = fits and offload["host_fits"]
    elif req.optimizer_offload:  # the optimizer step on the CPU and its PCIe copies (estimate.fit)
        t = replace(t, tokens_per_s=t.tokens_per_s / OFFLOAD_TIME_FACTOR,
                    note="; ".join(filter(None, [t.note, f"optimizer offload: {OFFLOAD_TIME_FACTOR:g}x the time "
                                                          "(assumption)"])))
    reason = infeasible_reason(layout, place, "machine")
    common = _figures(req, acc, layout, mem, fits, t, tokens, reason, place.nodes(layout.devices))
    figures = common["figures"]
    figures["capacity_bytes"] = owned_capacity(hw, _backend_of(req, acc))
    figures.update(stack_fields(acc.stacks, wanted))
    figures["note"] = "; ".join(filter(None, [figures["note"], owned_note(hw, layout.tp)]))
    hours = common["hours"]
    q = owned_quote(hw, layout.devices, hours, a, plan_use(req), power_limit_w=getattr(req, "power_limit_w", None))
    per_h = q.total_usd / hours if hours > 0 else 0.0
    return PlanOption(id=hw.id, kind=q.kind, energy_kwh=q.energy_kwh, usd_per_device_hour=q.usd_per_device_hour,
                      utilisation=q.utilisation,
                      breakdown=q.breakdown,
                      owning=OwningCost(0.0, q.variable_usd_per_device_hour, q.holding),
                      cost_usd_interval=_cost_interval(q.total_usd, q.breakdown, hours, common["hours_interval"]),
                      serving=_serving(t, per_h), nodes=common["nodes"],
                      gpus_per_node=common["gpus_per_node"], origin=hw.origin, this_machine=hw.this_machine,
                      derived=acc.derived, host_bytes=mem.host_offload_bytes, offload=offload, **figures)


def local_decode(t: Timing, acc: Accelerator) -> Timing:
    """The CPU's decode at 0.8 of the measured triad: a memory-bound step scaled from the runtime's efficiency
    to the CPU's; other devices as timed (docs/method.md, "This machine: CPU, Apple Silicon, offload")."""
    d = t.decode
    if acc.kind != "cpu" or d is None or d.bound != "memory" or not t.eta_mem:
        return t
    scale = t.eta_mem / CPU_ETA_MEM
    step = d.step_s * scale
    request_s = d.prefill_s + (d.request_s - d.prefill_s) * scale
    batch = d.tokens_per_s * d.step_s
    decode = replace(d, step_s=step, tokens_per_s=batch / step, request_s=request_s, requests_per_s=batch / request_s)
    return replace(t, decode=decode, tokens_per_s=decode.tokens_per_s, eta_mem=CPU_ETA_MEM, high_cap=None,
                   mfu_origin=t.mfu_origin + f"; the CPU reads {CPU_ETA_MEM:g} of the host bandwidth (triad)")


def _backend_of(req: PlanRequest, acc) -> str | None:
    """The backend an inference job's runtime runs on for ``acc`` (``request.runtime_choice``), whose allocatable
    memory an owned unified-memory GPU fits it in; None for training (the framework's compute backend)."""
    if req.workload != "inference":
        return None
    try:
        return runtime_choice(req, acc).backend
    except JobInputError:  # a runtime that does not load the format: the option reports it elsewhere
        return None
