"""The planning service: a request in, memory, time and cost for every hardware option out.

It joins the pure core (``estimate``, ``cost``) with the catalog and this machine's calibration, in the
steps of this package: the request (``request``), layouts and memory (``layouts``), options and their
prices (``options``), the result (``result``). ``plan()`` does no I/O beyond the (cached) catalog, so the
app can re-plan on every keystroke.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from advisor.catalog import Catalog, load_catalog
from advisor.catalog.runtimes import step_fit
from advisor.catalog.training_runs import bundled_utilisation_model
from advisor.cost.assumptions import CostAssumptions
from advisor.cost.price_dates import price_ages
from advisor.estimate import compute, memory
from advisor.estimate.local import HostFigures
from advisor.estimate.model import attention_layers
from advisor.planner.calibrated import active_fits, memory_interval
from advisor.planner.fit import advise_fit
from advisor.planner.kept import KeptByJob
from advisor.planner.layouts import MemoryModel, Parallelism
from advisor.planner.options import options_for, owned_options_for, plan_use, with_break_even
from advisor.planner.owned import OwnedHardware, local_target, merge_owned, parse_own, pool_unequal
from advisor.planner.request import (
    PlanInputError,
    PlanRequest,
    as_run,
    budget,
    lengths,
    request_memo,
    resolve_job_model,
    runtime_choice,
    timing_key,
    training_software,
)
from advisor.planner.result import PlanOption, PlanResult, cheapest, check_finite
from advisor.planner.serve_spec import reserve_bytes
from advisor.planner.stacks import wanted_stacks


def plan(request: PlanRequest, catalog: Catalog | None = None, calibration=None,
         assumptions: CostAssumptions | None = None, *, owned: Sequence[OwnedHardware] = (),
         host: HostFigures | None = None, limits: Mapping[str, int] | None = None,
         only_owned: bool = False, advise: bool = True) -> PlanResult:
    """Plan a job against every accelerator (or the requested ones) and price every option.

    Owned hardware is injected, never detected here: ``owned`` (this machine's GPUs, a fleet; built by
    ``planner.owned``) and ``request.own`` (``--own 2xrtx-3090``) become options of kind ``owned``, this
    machine's listed first whatever its rank; ``request.owned_options`` False leaves them out.
    ``--accelerator cpu`` plans on ``host`` (this machine's CPU), an Apple Silicon id on its unified memory.

    Args:
        request: validated inputs (``PlanRequest.from_mapping``: validated once there, not here nor per option).
        catalog: defaults to the bundled catalog merged with the user's file.
        calibration: an ``advisor.store.calibration.Calibration`` measured on this machine, or None.
            Its MFU replaces the prior for its accelerator; its ``eta_mem`` replaces the decode prior.
        assumptions: cost assumptions; defaults with ``request.assumptions`` applied.
        owned: hardware the user owns (``planner.owned.OwnedHardware``).
        host: this machine's host figures (the CPU target, partial offload, host RAM for fit advice).
        limits: accelerator id -> the most devices there are (``--fleet``): no option needs more.
        only_owned: plan the owned hardware alone (fit advice re-plans this way).
        advise: add fit advice when the job does not fit the hardware asked for or owned.
    Returns:
        A PlanResult with options sorted: this machine first, then fitting first, then by total job cost;
        every figure finite.
    Raises:
        PlanInputError: an unknown preset, accelerator id or assumption, or figures that overflow.
    """
    catalog = catalog or load_catalog()
    if assumptions is None:
        try:
            assumptions = _default_assumptions()
            if request.assumptions:
                assumptions = assumptions.with_overrides(**dict(request.assumptions))
        except (TypeError, ValueError) as exc:
            raise PlanInputError("assumptions", str(exc)) from None
    job_model = resolve_job_model(request, catalog)
    arch, params, active, name = job_model.arch, job_model.params, job_model.active_params, job_model.name
    max_ctx = arch.max_context or 1 << 30
    seq_len = request.seq_len or min(2048, max_ctx)
    lens = lengths(request, max_ctx) if request.workload == "inference" else None
    context = lens.window if lens is not None else (request.context or min(2048, max_ctx))
    warnings = list(catalog.warnings)
    if request.model and arch.max_context:
        if request.workload != "inference" and seq_len > max_ctx:
            warnings.append(f"seq_len {seq_len} exceeds {name}'s context of {max_ctx:,} tokens; the model "
                            f"supports at most {max_ctx:,}")
        if request.workload == "inference" and context > max_ctx:
            warnings.append(f"context {context:,} is longer than {name} supports: its maximum is {max_ctx:,} tokens "
                            "(the window holds prompt and output)")

    local = []
    for acc_id in request.accelerator:
        target = local_target(acc_id, catalog, host)
        if target is not None:
            local.append(target)
        elif acc_id not in catalog.accelerators:
            raise PlanInputError("accelerator", f"unknown accelerator {acc_id!r}")
    owned_all = merge_owned([owned, parse_own(request.own, catalog)] if request.owned_options else [])
    owned_all = merge_owned([owned_all, local])
    software = training_software(request)
    pool = pool_unequal(owned_all) if software is None or software.behaviours.layer_split else None
    if pool is not None:  # unequal GPUs of this machine: their layers split over all of them, as llama.cpp does
        # (and transformers' device_map="auto" for a training framework that trains a model so placed)
        owned_all = (*owned_all, pool)
    accels = [catalog.accelerators[a] for a in request.accelerator if a in catalog.accelerators] or (
        [] if local else list(catalog.accelerators.values()))
    if only_owned:
        accels = []

    fits_now = active_fits()
    utilisation_now = bundled_utilisation_model()
    steps_now = step_fit()  # the served step costs in force (a fit set in force plans again)
    job = (arch, params, active, seq_len, context, lens, job_model.weight_bytes, job_model.projector_bytes)

    def kept(req: PlanRequest) -> _Kept:
        """What plans of this job keep between calls: its layouts, memory and timings (``_Kept``)."""
        memo = request_memo(req)
        held = memo.get("kept")
        rests_on = (calibration, fits_now, utilisation_now, steps_now)
        if held is not None and held[0] == job and all(a is b for a, b in zip(held[1], rests_on)):
            return held[2]
        hit = _KEPT.get((timing_key(req), *job), *rests_on)
        memo["kept"] = (job, rests_on, hit)
        return hit

    job_kept = kept(request)
    mem_model = job_kept.memory.get(None)
    if mem_model is None or mem_model.arch is not arch:
        mem_model = job_kept.memory[None] = MemoryModel(request, arch, params, seq_len, context,
                                                        job_model.weight_bytes,
                                                        projector_bytes=job_model.projector_bytes)

    file_weights = bool(job_model.weight_bytes)

    as_run_by_kind: dict[str, tuple[PlanRequest, _Kept]] = {}
    weights_by_format: dict[str, int] = {}  # the model's bytes in each format asked for (once a plan, not per part)

    def run_kept(acc) -> tuple[PlanRequest, _Kept]:
        """The request as it runs on ``acc`` (``request.as_run``: no format named -> the runtime's usual file,
        which depends on the kind of part alone) and what its plans keep (``kept``), once a plan by the kind."""
        hit = as_run_by_kind.get(acc.kind)
        if hit is None:
            req = as_run(request, acc, file_weights)
            hit = as_run_by_kind[acc.kind] = (req, kept(req))
        return hit

    def run_req(acc) -> PlanRequest:
        """The request as it runs on ``acc`` (``run_kept``)."""
        return run_kept(acc)[0]

    def mem_for(acc) -> MemoryModel:
        """Inference weights at the bits of the format the option's runtime loads (``request.runtime_choice``),
        unless a model file gives them exactly, with what the runtime keeps from its cache as the overhead
        (``serve_spec.reserve_bytes``, of the model on that accelerator: what fits is what ``advisor serve``
        fits); one memory model per accelerator, kept with the job (its format follows from the job and the part)."""
        if request.workload != "inference":
            return mem_model
        req, held = run_kept(acc)
        held = held.memory
        mine = held.get(acc.id)  # the job (kept by its timing key) on this part: one memory model
        if mine is not None and mine[0] is acc:
            return mine[1]
        choice = runtime_choice(req, acc)
        wb = job_model.weight_bytes or weights_by_format.get(choice.weight_format.id)
        if wb is None:
            wb = weights_by_format[choice.weight_format.id] = int(
                memory.format_weight_bytes(arch, params, choice.weight_format.id))
        hit = MemoryModel(req, arch, params, seq_len, context, wb,
                          reserve=functools.partial(reserve_bytes, choice, acc.usable_memory_bytes, arch=arch, acc=acc),
                          projector_bytes=job_model.projector_bytes)
        held[acc.id] = (acc, hit)
        return hit
    devices0 = request.gpus or 1
    layouts0 = mem_model.layouts(devices0) or [Parallelism(devices0, 1, 1, 0)]
    layout0 = layouts0[0]
    mem0 = mem_model.at(layout0)

    tokens, budget_origin = budget(request, params)
    per_token = compute.flops_per_token(active, request.workload)
    options: list[PlanOption] = []
    offers_by_accel, stale, prices_as_of = _catalog_index(catalog)
    wanted = wanted_stacks(request)
    try:
        use = plan_use(request)  # the jobs a month and other use: the same for the request as it runs on every part
        for hw in owned_all:
            options.extend(owned_options_for(run_req(hw.accelerator), hw, mem_for(hw.accelerator), arch, params, active, tokens, lens,
                                             assumptions, calibration, wanted))
        for acc in accels:
            req, job_kept_here = run_kept(acc)
            found = options_for(req, acc, offers_by_accel.get(acc.id, NO_OFFERS), mem_for(acc), arch, params,
                                active, tokens, lens, assumptions, calibration, stale, wanted, job_kept_here.timers,
                                use)
            if limits is not None:
                found = [o for o in found if o.devices <= limits.get(acc.id, 0)]
            options.extend(found)
        options = with_break_even(options, catalog.accelerators, assumptions, use)
    except (ValueError, OverflowError, ZeroDivisionError) as exc:  # a figure out of range in the cost model
        field = "hours" if request.hours is not None else ("tokens" if request.tokens is not None else "assumptions")
        raise PlanInputError(field, f"out of range: {' '.join(str(exc).split())}") from None
    if pool is not None:  # this machine's answer: the fastest of its GPUs alone or pooled that runs the job
        options = _one_answer_for_this_machine(options)
    # on-demand prices rank the options unless the assumptions rank by spot: spot offers are listed after them
    late_spot = not assumptions.spot
    options.sort(key=lambda o: (not o.this_machine, not o.feasible, not o.fits, not o.stack_ok, late_spot and o.spot,
                                o.cost_usd, o.hours, o.id))
    best = cheapest(options, spot=assumptions.spot)
    if best is not None and request.workload == "inference":  # the headline weights in the chosen option's format
        acc_by_id = {**catalog.accelerators, **{hw.accelerator.id: hw.accelerator for hw in owned_all}}
        if best.accelerator in acc_by_id:
            mem_model = mem_for(acc_by_id[best.accelerator])
            mem0 = mem_model.at(layout0)
    mine = next((o for o in options if o.this_machine and o.fits and o.feasible), None)
    if mine is not None and request.gpus is None and mine.devices != devices0:
        # this machine's GPUs on their best layout (several GPUs planned on all of them): the headline shows it
        layout0 = mine.parallelism
        mem0 = mem_model.at(layout0)
    elif best is not None and best.devices == devices0 and (request.accelerator or best.kind == "owned"):
        # hardware the user named or owns: the headline shows how it runs the job. Over the whole catalog it keeps
        # the requested layout (--tp, --pp; data parallel over the rest), not whichever offer is cheapest today
        layout0 = best.parallelism
        mem0 = mem_model.at(layout0)

    if tokens is None:
        best = best or next((o for o in options if o.fits), options[0] if options else None)
        flops_total = per_token * (best.tokens if best else 0.0)
    else:
        flops_total = per_token * tokens
    result = PlanResult(
        request=request, arch=arch, model_name=name, params=params, active_params=active,
        flops_total=flops_total, flops_per_token=per_token,
        attention_flops_per_token=compute.attention_flops_per_token(attention_layers(arch), seq_len, arch.hidden),
        tokens=tokens, budget_origin=budget_origin, seq_len=seq_len, context=context, parallelism=layout0,
        memory=mem0, options=tuple(options), assumptions=assumptions, catalog_date=catalog.date,
        prices_as_of=prices_as_of,
        calibration=None if calibration is None or calibration.source == "runs" else {
            "mfu": calibration.mfu, "eta_mem": calibration.eta_mem, "accelerator_id": calibration.accelerator_id,
            "device": calibration.device, "measured_at": calibration.measured_at, "source": calibration.source},
        warnings=tuple(warnings), stacks=wanted, memory_model=mem_model, lengths=lens,
        memory_interval=memory_interval(mem0.total_bytes, request.workload))
    check_finite(result)
    if advise:
        def replan(changed: PlanRequest, target_ids: Sequence[str]) -> PlanResult:
            keep = [hw for hw in owned_all if hw.id in target_ids]
            changed = changed.model_copy(update={"accelerator": tuple(
                a for a in target_ids if not a.startswith("owned:")), "own": ()})
            return plan(changed, catalog, calibration, assumptions, owned=keep, host=host, limits=limits,
                        only_owned=not changed.accelerator, advise=False)

        result = replace(result, fit_advice=advise_fit(result, replan, host), replanner=replan)
    return result


@dataclass
class _Kept:
    """What one job's plans keep between calls (the app plans again on every keystroke, and most edits change the
    budget, the prices or the hardware listed, not the job): its memory models (by weight bytes, format, runtime and
    device memory) and each accelerator's timer (``options._Timer``: layouts and timings, the groups of options on the
    catalog's nodes with their figures whatever the budget, each group's last budget, quotes and the options built
    of them), so an edit of a price, the use or the budget re-prices and re-ranks what is kept. Kept for the job's
    ``timing_key`` with the same model, calibration, fitted factors and utilisation model (``kept.KeptByJob``)."""

    memory: dict = field(default_factory=dict)
    timers: dict = field(default_factory=dict)


KEPT_JOBS = 32  # the jobs kept: a session's recent edits and the fit advice's replans
_KEPT: KeptByJob[_Kept] = KeptByJob(KEPT_JOBS, _Kept)  # the app plans in worker threads (Planner, Machine, Buy)


def forget_kept() -> None:
    """Forget every job's kept layouts and timings (a benchmark measures a plan cold)."""
    _KEPT.clear()


def _one_answer_for_this_machine(options: list[PlanOption]) -> list[PlanOption]:
    """One option is this machine's: of its GPUs alone and pooled, the fastest that fits and runs (fewer devices
    on a tie), else the first; the others stay as options of their own."""
    mine = [o for o in options if o.this_machine]
    if len(mine) < 2:
        return options
    runs = [o for o in mine if o.fits and o.feasible]
    chosen = min(runs, key=lambda o: (o.hours, o.devices, o.id)) if runs else mine[0]
    return [o if not o.this_machine or o is chosen else replace(o, this_machine=False) for o in options]


@functools.cache
def _default_assumptions() -> CostAssumptions:
    """The default cost assumptions (frozen: one object serves every plan that changes none)."""
    return CostAssumptions()


_INDEX: tuple = (None, None)  # (catalog, its offers by accelerator and stale ids): the last catalog planned


NO_OFFERS: tuple = ()  # one object for every accelerator without cloud offers (its nodes are kept by identity)


def _catalog_index(catalog: Catalog) -> tuple[dict[str, list], frozenset[str], str]:
    """The catalog's offers by accelerator id, the ids of the stale ones and its newest price's date
    (``Catalog.prices_as_of``), for the last catalog planned (a frozen record: the app plans against one catalog
    edit after edit)."""
    global _INDEX
    held, index = _INDEX
    if held is not catalog:
        by_accel: dict[str, list] = {}
        for offer in catalog.offers:
            by_accel.setdefault(offer.accelerator_id, []).append(offer)
        index = (by_accel, frozenset(_stale_ids(catalog)), catalog.prices_as_of)
        _INDEX = (catalog, index)
    return index


def _stale_ids(catalog: Catalog) -> tuple[str, ...]:
    """Offers priced more than a year before the catalog's date (``cost.price_dates``)."""
    try:
        return price_ages(catalog.offers, catalog.date).stale_ids
    except ValueError:  # a user catalog without an ISO date: nothing is called stale
        return ()

