"""Size a serving job on every option: the GPUs the user owns, a home rig, on-prem servers, each cloud offer.

Per option: one replica (``serve_spec.replica_spec``: tensor parallel inside one box, or llama.cpp's layer
split), the highest load it serves within the targets (``estimate.serving_queue.max_load``), the replicas the stated
load needs, what each request sees at that load (TTFT and TPOT at p50 and p95, tokens/s per user), and what a
million requests and a million output tokens cost at that load. A service holds its hardware every hour, so
hardware bought or rented for it is priced for every hour (idle ones too): home and on-prem at 24 hours a day
of use, cloud by the hour; GPUs already owned cost their energy (and wear when a rate is set).

Owned hardware comes first (this machine's GPUs first of all), and its figures are its own: when the job does
not fit it, the option says so and nothing else stands in under its name.
"""

from __future__ import annotations

import math
from dataclasses import MISSING, dataclass, field, fields, replace
from typing import Any

from advisor.catalog import Accelerator, Catalog, load_catalog
from advisor.catalog.runtimes import step_fit
from advisor.catalog.training_runs import bundled_utilisation_model
from advisor.cost.assumptions import CostAssumptions
from advisor.cost.jobs import OwnedQuote
from advisor.cost.options import DeviceJob, quote_job
from advisor.estimate.decode import decode_bound_tokens_per_s
from advisor.estimate.serving import Lengths, ServerSpec, single_request, touched
from advisor.estimate.serving_queue import (
    Z80,
    ServePoint,
    Targets,
    beyond_capacity_chance,
    max_load,
    max_throughput,
    serve_at,
    serve_at_speed,
)
from advisor.job.serve import LOAD_FIELDS, TARGET_FIELDS, ServeJob, load_text, request_lengths, tpot_target_s
from advisor.planner.calibrated import (
    active_fits,
    serve_capacity_spread,
    serve_factors,
    serve_load,
    serve_range_factors,
    serve_shown,
)
from advisor.planner.kept import KeptByJob
from advisor.planner.one_request import all_devices_faster, request_speed
from advisor.planner.one_request import request_lengths as one_request_lengths
from advisor.planner.owned import OwnedHardware, merge_owned, owned_capacity, owned_quote, parse_own, pool_unequal
from advisor.planner.request import (
    PRICE_AND_BUDGET_FIELDS,
    PlanInputError,
    as_run,
    fields_key,
    resolve_job_model,
    runtime_choice,
)
from advisor.planner.serve_spec import ModelServing, fewest_devices, model_serving, replica_spec, request_cache_tokens

# Ranges: the 80 % width of each figure is its calibration group's leave-one-source-out width on the published
# serving runs at the job's kind of load, users or an arrival rate, for the option's runtime, wider where the fit has
# seen no served run of it (``planner.calibrated.serve_range_factors``): throughput (and prices per request) from the
# served loads' group, the first token and the per-token time (and a user's tokens/s) from their own.
RANGE_GROUPS = {"throughput": "serving", "ttft": "ttft", "tpot": "tpot"}
FIXED_PARTS = ("egress",)
HOME_KINDS = ("consumer", "workstation", "apple")
ONPREM_KINDS = ("datacenter", "workstation")
MAX_REPLICA_DEVICES = 8


@dataclass(frozen=True)
class ServeOption:
    """One way to serve the job, sized for the stated load.

    ``point`` is one replica at its share of the load; ``max_load_per_replica`` the most one replica serves
    within the targets (users or requests/s, as the job states its load; 0: not even the least load).
    """

    id: str
    kind: str
    accelerator: str
    accelerator_name: str
    runtime: str
    devices_per_replica: int
    replicas: int
    replicas_available: int | None
    fits: bool
    meets_target: bool
    max_load_per_replica: float
    point: ServePoint | None
    kv_capacity_tokens: int
    usd_per_hour: float | None
    usd_per_million_requests: float | None
    usd_per_million_output_tokens: float | None
    launch: dict
    spec: ServerSpec | None = field(default=None, compare=False, repr=False)
    provider: str | None = None
    instance: str | None = None
    spot: bool = False
    price_date: str | None = None
    origin: str = ""
    this_machine: bool = False
    note: str = ""
    ranges: tuple[tuple[str, float, str], ...] = ()  # (group, x/÷ factor of its 80 % range, origin): range_factors
    # a point of this option as shown (``calibrated.serve_shown``: the serving groups' factors where they help)
    shown: Any = field(default=None, compare=False, repr=False)
    # at an arrival rate: the most one replica serves with every sequence it fits busy (requests/s, as shown), and the
    # sd of its log (the served throughput's held-out error, ``calibrated.serve_capacity_spread``)
    capacity_per_replica: float | None = None
    capacity_spread: float = 0.0
    lengths: Lengths | None = field(default=None, compare=False, repr=False)  # the requests' (capacity_ranges, rate_bound)

    @property
    def chance_beyond_capacity(self) -> float | None:
        """At an arrival rate, the chance that a replica's share is beyond what it serves, given its capacity's
        held-out error (``serving_queue.beyond_capacity_chance``); None at a load of users."""
        p, cap = self.point, self.capacity_per_replica
        if p is None or cap is None or p.requests_per_s_offered is None:
            return None
        if cap <= 0:
            return 1.0
        return beyond_capacity_chance(math.log(p.requests_per_s_offered / cap), self.capacity_spread)

    @property
    def devices(self) -> int:
        return self.devices_per_replica * self.replicas

    @property
    def owned(self) -> bool:
        return self.kind == "owned"


@dataclass(frozen=True)
class ServeResult:
    """Every option of a serving job, owned first, then those meeting the targets by cost per request."""

    request: ServeJob
    model_name: str
    lengths: Lengths
    lengths_origin: str
    targets: Targets
    by: str  # "users" or "requests_per_s"
    load: float
    options: tuple[ServeOption, ...]
    assumptions: CostAssumptions
    warnings: tuple[str, ...] = ()
    model: ModelServing | None = field(default=None, compare=False, repr=False)
    owned_hardware: tuple[OwnedHardware, ...] = field(default=(), compare=False, repr=False)
    catalog_date: str = ""  # the catalog's date: price ages are measured from it
    # the catalog it was sized on (the advice sizes its changes on the same one: ``serve_advice``)
    catalog: Catalog | None = field(default=None, compare=False, repr=False)
    # "Speed on X (runtime): from your run of DATE (FILE) ...": each part and runtime the user's runs set the speed of
    learned: tuple[str, ...] = ()

    @property
    def moe(self) -> bool:
        """Whether the served model is a mixture of experts (its ranges are the MoE runs')."""
        return self.model is not None and self.model.arch.is_moe

    def facts(self) -> list[str]:
        """What the figures rest on, for reports: the cloud prices' dates and the cost assumptions (those changed
        by name, the rest counted), the same words ``advisor plan`` uses (``cost.price_dates``)."""
        from advisor.cost.price_dates import price_ages_of

        out = []
        dated = tuple((o.id, o.price_date) for o in self.options if o.kind == "cloud" and o.price_date)
        if dated and self.catalog_date:
            out.append("Cloud prices: " + price_ages_of(dated, self.catalog_date).summary())
        described = self.assumptions.describe(sources=self.request.sources)
        changed = [f"{k} = {a['value']} {a['unit']}".strip() for k, a in described.items() if "default_value" in a]
        out.append(f"Assumptions: {len(described)}; a service holds its hardware every hour (owned, home and "
                   "on-prem at 24 hours a day of use, cloud by the hour); "
                   + (f"changed: {'; '.join(changed)}" if changed else "all others at their defaults")
                   + f"; electricity {described['electricity_usd_per_kwh']['value']} USD/kWh at home"
                   + (f"; catalog dated {self.catalog_date}" if self.catalog_date else ""))
        return out

    def hardware_of(self, option: ServeOption) -> OwnedHardware | None:
        """The owned hardware an owned option runs on."""
        return next((hw for hw in self.owned_hardware if hw.id == option.id), None)

    @property
    def load_text(self) -> str:
        return load_text(self.request)

    def owned_options(self) -> tuple[ServeOption, ...]:
        return tuple(o for o in self.options if o.owned)

    def cheapest(self, kind: str | None = None) -> ServeOption | None:
        """The cheapest option per request that meets the targets (of one kind when given)."""
        return self.cheapest_of((kind,))[kind]

    def cheapest_of(self, kinds: tuple[str | None, ...]) -> dict[str | None, ServeOption | None]:
        """``cheapest`` of each kind (None: of any), found in one pass over the options (the first of the least
        rank where ranks tie, as ``min`` takes it)."""
        late_spot = not self.assumptions.spot  # on-demand prices rank the options unless told otherwise
        best: dict[str | None, tuple] = {}
        for o in self.options:
            if not o.meets_target or o.usd_per_million_requests is None:
                continue
            rank = None
            for kind in (o.kind, None):
                if kind in kinds:
                    rank = rank or (late_spot and bool(o.spot), o.usd_per_million_requests, o.id)
                    held = best.get(kind)
                    if held is None or rank < held[0]:
                        best[kind] = (rank, o)
        return {kind: best[kind][1] if kind in best else None for kind in kinds}

    def closest(self) -> ServeOption | None:
        """The option nearest the targets when none meets them: the least ratio of p95 over its target."""
        return min((o for o in self.options if o.point is not None and o.point.stable),
                   key=lambda o: (miss_ratio(o.point, self.targets), o.id), default=None)

    def option(self, option_id: str) -> ServeOption | None:
        return next((o for o in self.options if o.id == option_id), None)


def miss_ratio(point: ServePoint, targets: Targets) -> float:
    """How far a point is from the targets: the largest p95 over its target (1 or less meets them)."""
    ratios = [0.0]
    if targets.ttft_p95_s is not None:
        ratios.append(point.ttft_p95_s / targets.ttft_p95_s)
    if targets.tpot_p95_s is not None:
        ratios.append(point.tpot_p95_s / targets.tpot_p95_s)
    return max(ratios)


def _service_assumptions(a: CostAssumptions) -> CostAssumptions:
    """Hardware bought for a service is held every hour: 24 hours a day of use, idle hours included (made again only
    for other assumptions than the last asked: a copy checks every field)."""
    global _SERVICE
    held = _SERVICE
    if held[0] is a or held[0] == a:
        return held[1]
    service = a.with_overrides(hours_per_day=24.0, utilisation=1.0, onprem_hours_per_day=24.0, onprem_utilisation=1.0)
    _SERVICE = (a, service)
    return service


_SERVICE: tuple = (None, None)  # (assumptions, as a service holds its hardware): the last asked


def _per_hour(q) -> float:
    """A one-hour quote's cost without the once-per-job parts (egress)."""
    return q.total_usd - sum(usd for name, usd in q.breakdown.parts if name in FIXED_PARTS)


# The fields of a serving job that no replica reads: its load and targets, besides a plan's budget and prices (the
# users do set llama.cpp's slots: ``_Sizer.spec`` keys a replica by the slots it takes). The rest key what serving
# plans keep of their replicas between calls (``replica_key``, ``_kept_replicas``).
LOAD_AND_TARGET_FIELDS = LOAD_FIELDS | TARGET_FIELDS
_REPLICA_FIELDS = tuple(f for f in ServeJob.model_fields
                        if f not in PRICE_AND_BUDGET_FIELDS and f not in LOAD_AND_TARGET_FIELDS)


def replica_key(job: ServeJob) -> tuple:
    """The serving job's fields a replica can read (all but ``PRICE_AND_BUDGET_FIELDS`` and
    ``LOAD_AND_TARGET_FIELDS``) as a hashable tuple: two jobs with the same key build the same replicas
    (tests/planner/test_serve_memo.py)."""
    return fields_key(job, _REPLICA_FIELDS, "replica_key")


# What one serving job's plans keep between calls (the Serve page sizes the job again on every keystroke, and most
# edits change the load, the targets or the prices, not the replicas): each accelerator's replica at a number of
# devices, its launch values and one request's cache (``_Sizer.spec``), and the fewest devices that hold the job
# (``_fewest``). Kept for the job's ``replica_key``, lengths and model, with the same calibration, fitted factors,
# utilisation model and step costs (``catalog.runtimes.step_fit``: a fit set in force sizes again) (``kept.KeptByJob``).
# The queue on each replica is solved again on every call (``estimate.serving_queue``, its own caches).
KEPT_JOBS = 32  # the serving jobs kept: a session's recent edits and the advice's resized jobs
_KEPT: KeptByJob[dict] = KeptByJob(KEPT_JOBS, dict)  # the app sizes in worker threads


def _kept_replicas(job: ServeJob, lengths: Lengths, model: ModelServing, calibration) -> dict:
    """The replicas kept for this job."""
    return _KEPT.get((replica_key(job), lengths, model), calibration, active_fits(), bundled_utilisation_model(),
                     step_fit())


def forget_replicas() -> None:
    """Forget every serving job's kept replicas (a benchmark or a test sizes a job cold)."""
    _KEPT.clear()


def _fewest(kept: dict, model: ModelServing, acc: Accelerator, choice, lengths: Lengths, most: int,
            capacity: float | None = None) -> int | None:
    """``serve_spec.fewest_devices``, kept with the job's replicas (by the part, its most devices and memory)."""
    key = ("fewest", acc.id, most, capacity)
    held = kept.get(key)
    if held is not None and (held[0] is acc or held[0] == acc):
        return held[1]
    devices = fewest_devices(model, acc, choice, lengths, most, capacity)
    kept[key] = (acc, devices)
    return devices


class _Sizer:
    """Replicas of one accelerator, memoised by devices per replica (offers of one accelerator share them)."""

    def __init__(self, job: ServeJob, model: ModelServing, acc: Accelerator, lengths: Lengths, targets: Targets,
                 by: str, load: float, choice, calib=None, capacity: float | None = None, kept: dict | None = None):
        self.job, self.model, self.acc, self.lengths, self.targets = job, model, acc, lengths, targets
        self.by, self.load, self.choice = by, load, choice
        self.calib, self.capacity = calib, capacity
        self.kept = {} if kept is None else kept  # the job's replicas kept between calls (``_kept_replicas``)
        self._memo: dict[int, tuple] = {}
        self._ranges: dict[str, tuple] = {}
        self._rate_capacity: dict[int, dict] = {}
        self.shown = serve_shown(by, choice, acc, model.arch.is_moe)  # each point as shown: max_load, size, the knee chart

    def ranges(self, point: ServePoint | None) -> tuple[tuple[str, float, str], ...]:
        """The 80 % ranges of this runtime's figures at the point's kind of load (``range_factors``: users, one
        user, or an arrival rate), found once each."""
        load = serve_load(self.by, point.users if point is not None else None)
        hit = self._ranges.get(load)
        if hit is None:
            hit = self._ranges[load] = range_factors(self.by, self.choice, self.acc,
                                                     point.users if point is not None else None,
                                                     self.model.arch.is_moe)
        return hit

    def spec(self, devices: int) -> tuple[ServerSpec, dict, int]:
        """``(replica, launch values, tokens of one request's cache)`` on ``devices``, kept with the job's replicas
        (by the part, the devices, the slots the users set and the memory of a device)."""
        slots = self.choice.runtime.batching == "slots"  # llama.cpp: a slot for each user by default
        max_seqs = self.job.max_seqs or (self.job.users if slots else None)
        key = (self.acc.id, devices, max_seqs, self.capacity)
        held = self.kept.get(key)
        if held is not None and (held[0] is self.acc or held[0] == self.acc):
            return held[1]
        speed = request_speed(self.job, self.acc, devices, self.model, one_request_lengths(self.lengths), self.calib)
        spec, launch = replica_spec(self.model, self.acc, devices, self.choice, max_seqs=max_seqs,
                                    lengths=self.lengths, context=self.job.context, speed=speed,
                                    capacity_bytes=self.capacity)
        hit = (spec, launch, request_cache_tokens(self.model, spec, self.choice))
        self.kept[key] = (self.acc, hit)
        return hit

    def replica(self, devices: int) -> tuple[ServerSpec, dict, float]:
        hit = self._memo.get(devices)
        if hit is None:
            spec, launch, _ = self.spec(devices)
            most, _ = max_load(spec, self.lengths, self.targets, by=self.by, shown=self.shown)
            hit = self._memo[devices] = (spec, launch, most)
        return hit

    def rate_capacity(self, devices: int) -> dict:
        """At an arrival rate, ``capacity_per_replica`` and ``capacity_spread`` of a replica of ``devices`` (the
        fields of ``ServeOption``); none at a load of users. The requests' ``lengths`` either way (``rate_bound``)."""
        if self.by == "users":
            return {"lengths": self.lengths}
        hit = self._rate_capacity.get(devices)
        if hit is not None:
            return hit
        spec, _launch, _ = self.replica(devices)
        moe = self.model.arch.is_moe
        most = max_throughput(spec, self.lengths)[0] * serve_factors("rate", self.choice, self.acc, moe)[0]
        hit = self._rate_capacity[devices] = {"capacity_per_replica": most,
                                               "capacity_spread": serve_capacity_spread(self.choice, self.acc, moe),
                                               "lengths": self.lengths}
        return hit

    def size(self, devices: int, available: int | None) -> tuple[int, ServePoint | None, bool, float]:
        """``(replicas, point per replica, meets, most per replica)`` for the stated load."""
        spec, _launch, most = self.replica(devices)
        need = max(1, math.ceil(self.load / most - 1e-9)) if most > 0 else 1
        replicas = need if available is None else max(1, min(need, available))
        share = self.load / replicas
        if self.by == "users":
            point = self.shown(serve_at(spec, self.lengths, users=max(1, math.ceil(share))))
        else:
            point = self.shown(serve_at(spec, self.lengths, requests_per_s=share))
        meets = most > 0 and replicas >= need and self.targets.met(point)
        return replicas, point, meets, most


CAPACITY_RANGE_FIGURES = ("ttft_p50_s", "ttft_p95_s", "tpot_p50_s", "tpot_p95_s")


def capacity_ranges(option: ServeOption) -> dict[str, tuple[float, float | None]] | None:
    """At an arrival rate, each time's 80 % range over the replica's capacity's held-out error alone
    (``capacity_spread``): the figure on the replica ``e^(Z80 sd)`` times as fast (its capacity's 90th percentile)
    and on one ``e^(-Z80 sd)`` times (its 10th), None for that end where it cannot keep up with the rate ("beyond
    capacity"): asymmetric, and wider the nearer the rate is to capacity, where the wait grows as ``1 / (1 - rho)``
    (``serving_queue.serve_at_speed``, each point as shown). Keys ``CAPACITY_RANGE_FIGURES``; None at a load of users
    or where the point is not steady."""
    p = option.point
    if (option.capacity_per_replica is None or p is None or not p.stable or option.spec is None
            or option.lengths is None or p.requests_per_s_offered is None):
        return None
    sd = option.capacity_spread
    ends = []
    for log_speed in (Z80 * sd, -Z80 * sd):
        q = serve_at_speed(option.spec, option.lengths, p.requests_per_s_offered, log_speed)
        ends.append(None if q is None else (option.shown(q) if option.shown is not None else q))
    fast, slow = ends
    return {name: (getattr(fast, name) if fast is not None else getattr(p, name),
                   getattr(slow, name) if slow is not None else None) for name in CAPACITY_RANGE_FIGURES}


def _costs(usd_per_h: float | None, point: ServePoint | None, replicas: int) -> tuple[float | None, float | None]:
    if usd_per_h is None or point is None or not point.stable or point.requests_per_s <= 0:
        return None, None
    per_h_requests = point.requests_per_s * replicas * 3600.0
    per_h_tokens = point.output_tokens_per_s * replicas * 3600.0
    return usd_per_h / per_h_requests * 1e6, usd_per_h / per_h_tokens * 1e6


def _option(sizer: _Sizer, devices: int, available: int | None, *, id: str, kind: str, usd_per_h_of, **extra
            ) -> ServeOption:
    spec, launch, _ = sizer.replica(devices)
    replicas, point, meets, most = sizer.size(devices, available)
    usd_h = usd_per_h_of(devices * replicas)
    per_req, per_tok = _costs(usd_h, point, replicas)
    return ServeOption(id=id, kind=kind, accelerator=sizer.acc.id, accelerator_name=sizer.acc.name,
                       runtime=launch["runtime"], devices_per_replica=devices, replicas=replicas,
                       replicas_available=available, fits=True, meets_target=meets, max_load_per_replica=most,
                       point=point, kv_capacity_tokens=sizer.spec(devices)[2],
                       usd_per_hour=usd_h,
                       usd_per_million_requests=per_req, usd_per_million_output_tokens=per_tok, launch=launch,
                       spec=spec, ranges=sizer.ranges(point), shown=sizer.shown, **sizer.rate_capacity(devices), **extra)


def _unfit(hw: OwnedHardware, model: ModelServing, choice) -> ServeOption:
    acc = hw.accelerator
    runtime = choice.runtime.id
    need = model.weights_of(choice) / 1e9
    have = acc.usable_memory_bytes * hw.count / 1e9
    return ServeOption(id=hw.id, kind="owned", accelerator=acc.id, accelerator_name=acc.name, runtime=runtime,
                       devices_per_replica=hw.count, replicas=0, replicas_available=0, fits=False,
                       meets_target=False, max_load_per_replica=0.0, point=None, kv_capacity_tokens=0,
                       usd_per_hour=None, usd_per_million_requests=None, usd_per_million_output_tokens=None,
                       launch={}, origin=hw.origin, this_machine=hw.this_machine,
                       note=f"does not fit: {need:.1f} GB of weights, the runtime's overhead and one request's cache "
                            f"need more than the {have:.1f} GB of {hw.count} x {acc.name}")


def serve_plan(job: ServeJob, catalog: Catalog | None = None, assumptions: CostAssumptions | None = None, *,
               owned: tuple[OwnedHardware, ...] = (), only_owned: bool = False, calibration=None) -> ServeResult:
    """Size a serving job on the owned hardware and on every accelerator of the catalog (or those asked for).

    One request on a replica is the plan's (``planner.one_request``): the same runtime, format (the runtime's
    usual file when none is named, ``request.as_run``), calibration (``calibration``: this machine's measured and
    learned figures, as ``advisor plan`` takes them) and memory rule.

    Raises:
        PlanInputError: an unknown model or accelerator, or a request longer than the model's context.
    """
    catalog = catalog or load_catalog()
    if assumptions is None:
        try:
            assumptions = CostAssumptions().with_overrides(**dict(job.assumptions))
        except (TypeError, ValueError) as exc:
            raise PlanInputError("assumptions", str(exc)) from None
    jm = resolve_job_model(job, catalog)
    max_ctx = jm.arch.max_context
    rl = request_lengths(job, max_ctx)
    lengths = Lengths(rl.prompt_mean, rl.output_mean, rl.prompt_cv, rl.output_cv)
    if max_ctx and rl.prompt_mean + rl.output_mean > max_ctx:
        raise PlanInputError("prompt_tokens", f"{rl.prompt_mean:,.0f} prompt + {rl.output_mean:,.0f} output tokens "
                             f"exceed {jm.name}'s context of {max_ctx:,} tokens")
    if job.context is not None and job.context < rl.prompt_mean + rl.output_mean:
        raise PlanInputError("context", f"{job.context:,} tokens cannot hold a mean request of "
                             f"{rl.prompt_mean + rl.output_mean:,.0f} tokens (prompt + output)")
    targets = Targets(job.ttft_p95_s, tpot_target_s(job))
    by = "users" if job.users is not None else "requests_per_s"
    load = float(job.users if job.users is not None else job.requests_per_s)
    model = model_serving(jm.arch, jm.params, jm.active_params, job.precision, job.kv_cache_bits, jm.weight_bytes,
                          jm.projector_bytes)
    for acc_id in job.accelerator:
        if acc_id not in catalog.accelerators:
            raise PlanInputError("accelerator", f"unknown accelerator {acc_id!r} (advisor catalog list)")
    owned_all = merge_owned([owned, parse_own(job.own, catalog)]) if job.owned_options else ()
    pool = pool_unequal(owned_all)
    if pool is not None:  # unequal GPUs of this machine: a model's layers split over all of them (llama.cpp)
        owned_all = (*owned_all, pool)
    options: list[ServeOption] = []
    warnings: list[str] = list(catalog.warnings)
    kept = _kept_replicas(job, lengths, model, calibration)
    for hw in owned_all:
        options.extend(_owned_options(job, model, hw, lengths, targets, by, load, assumptions, calibration, kept))
    if pool is not None:
        options = _one_answer_for_this_machine(options, by, load)
    accels = [] if only_owned else ([catalog.accelerators[a] for a in job.accelerator] or
                                    list(catalog.accelerators.values()))
    offers_by: dict[str, list] = {}
    for offer in catalog.offers if accels else ():
        offers_by.setdefault(offer.accelerator_id, []).append(offer)
    choices: dict[tuple, Any] = {}  # the runtime choice depends on the part's vendor and kind only
    service = _service_assumptions(assumptions) if accels else None  # the catalog's hardware held for the service
    prices = _kept_prices(catalog, service, job.spot_offers) if accels else {}
    for acc in accels:
        options.extend(_catalog_options(job, model, acc, offers_by.get(acc.id, []), lengths, targets, by, load,
                                        service, choices, calibration, kept, prices))
    late_spot = not assumptions.spot  # on-demand prices rank the options unless the assumptions say spot
    options.sort(key=lambda o: (not o.this_machine, not o.owned, not o.meets_target, late_spot and bool(o.spot),
                                o.usd_per_million_requests is None, o.usd_per_million_requests or 0.0, o.id))
    return ServeResult(request=job, model_name=jm.name or "model", lengths=lengths, lengths_origin=rl.origin,
                       targets=targets, by=by, load=load, options=tuple(options), assumptions=assumptions,
                       warnings=tuple(warnings), model=model, owned_hardware=tuple(owned_all),
                       catalog_date=catalog.date, catalog=catalog, learned=_learned_speeds(options, catalog, calibration))


def _learned_speeds(options, catalog: Catalog, calib) -> tuple[str, ...]:
    """A line for each accelerator and runtime of the options that fit whose decode or prefill the user's runs set
    (``timing.learned_speed``, the figures the options were sized with)."""
    from advisor.planner.timing import learned_speed

    if calib is None or not getattr(calib, "runs", ()):
        return ()
    seen, out = set(), []
    for o in options:
        acc = catalog.accelerators.get(o.accelerator)
        if not o.fits or acc is None or (o.accelerator, o.runtime) in seen:
            continue
        seen.add((o.accelerator, o.runtime))
        found = [f for f in (learned_speed(calib, acc, o.runtime), learned_speed(calib, acc, o.runtime, "prefill"))
                 if f is not None and f.source == "learned"]
        if found:
            out.append(f"Speed on {o.accelerator_name} ({o.runtime}): {'; '.join(f.origin for f in found)} "
                       "(advisor runs)")
    return tuple(out)


def _one_answer_for_this_machine(options: list[ServeOption], by: str, load: float) -> list[ServeOption]:
    """One option is this machine's, of its GPUs alone and pooled: at one user the fastest request (as the plan
    chooses), else the one that meets the target with the most load a replica serves."""
    mine = [o for o in options if o.this_machine and o.fits and o.point is not None]
    if len(mine) < 2:
        return options
    if by == "users" and load <= 1:
        chosen = min(mine, key=lambda o: (o.point.ttft_p50_s + o.point.tpot_p50_s * 100, o.devices_per_replica))
    else:
        chosen = max(mine, key=lambda o: (o.meets_target, o.max_load_per_replica, -o.devices_per_replica))
    return [o if not o.this_machine or o is chosen else replace(o, this_machine=False) for o in options]


def _owned_options(job, model, hw: OwnedHardware, lengths, targets, by, load, a, calib=None, kept=None
                   ) -> list[ServeOption]:
    acc = hw.accelerator
    job = as_run(job, acc, bool(model.weight_bytes))
    if acc.peak_flops("bf16") is None and acc.peak_flops("fp16") is None and acc.peak_flops("fp32") is None:
        return []
    choice = runtime_choice(job, acc)
    per_node = hw.per_machine or hw.count
    capacity = owned_capacity(hw)
    kept = {} if kept is None else kept
    devices = job.tp or _fewest(kept, model, acc, choice, lengths, min(per_node, hw.count), capacity)
    if devices is None or devices > hw.count:
        return [_unfit(hw, model, choice)]
    sizer = _Sizer(job, model, acc, lengths, targets, by, load, choice, calib, capacity, kept)
    if not job.tp and by == "users" and load <= 1 and hw.count > devices and per_node >= hw.count \
            and choice.runtime.multi_device == "tensor":
        # one user: the machine's best layout for one request, as the plan takes it (one_request.all_devices_faster)
        def seconds(n: int) -> float:
            one = single_request(sizer.replica(n)[0], lengths.prompt_mean, lengths.output_mean)
            return one.ttft_s + (lengths.output_mean - 1) * one.step_s

        if all_devices_faster(seconds(hw.count), seconds(devices)):
            devices = hw.count
    note = "" if choice.backend_supported else (f"{choice.runtime.name} has no {choice.backend} backend: timed "
                                                f"with its {choice.profile.backend} figures")

    def per_h(n: int) -> float:
        return _per_hour(owned_quote(hw, n, 1.0, a))

    option = _option(sizer, devices, hw.count // devices, id=hw.id, kind="owned", usd_per_h_of=per_h,
                     origin=hw.origin, this_machine=hw.this_machine, note=note)
    if hw.members:  # a pool of unequal GPUs: the launch line splits the layers by memory over all of them
        option = replace(option, launch={**option.launch, "tensor_split": list(hw.tensor_split),
                                         "devices": len(hw.tensor_split)})
    return [option]


def _catalog_options(job, model, acc: Accelerator, offers, lengths, targets, by, load, service: CostAssumptions,
                     choices: dict, calib=None, kept=None, prices=None) -> list[ServeOption]:
    if acc.peak_flops("fp8" if job.precision == "fp8" else "bf16") is None or acc.kind == "cpu":
        return []
    job = as_run(job, acc, bool(model.weight_bytes))
    key = (acc.vendor, acc.kind)
    if key not in choices:
        try:
            choices[key] = runtime_choice(job, acc)
        except PlanInputError:  # the runtime asked for does not load the format here
            choices[key] = None
    choice = choices[key]
    if choice is None:
        return []
    if not choice.backend_supported:  # the runtime does not run on this part (TPU, Trainium, Gaudi)
        return []
    most = max([o.accelerator_count for o in offers if o.accelerator_count] + [MAX_REPLICA_DEVICES])
    kept = {} if kept is None else kept
    prices = {} if prices is None else prices
    devices = job.tp or _fewest(kept, model, acc, choice, lengths, min(most, MAX_REPLICA_DEVICES))
    if devices is None:
        return []
    if not _priced(prices, acc, offers, devices, service, job.spot_offers):
        # a part with no price to own it and no cloud offer gives no option at any number of devices (a quote's
        # kinds and offers do not depend on them): its replica is not sized (17 to 28 parts in bench_serve's scenarios)
        return []
    sizer = _Sizer(job, model, acc, lengths, targets, by, load, choice, calib, kept=kept)
    spec, launch, _ = sizer.replica(devices)
    replicas, point, meets, most_load = sizer.size(devices, None)
    # the fields every option of this replica shares; each quote sets its own into a copy (``_priced``: the same
    # record ``ServeOption(...)`` makes, without its per-field init for each of a catalog's ~200 options)
    common = dict(_OPTION_DEFAULTS, kind="", accelerator=acc.id, accelerator_name=acc.name,
                  runtime=launch["runtime"], devices_per_replica=devices, replicas=replicas, replicas_available=None,
                  fits=True, meets_target=meets, max_load_per_replica=most_load, point=point,
                  kv_capacity_tokens=sizer.spec(devices)[2], launch=launch, spec=spec, ranges=sizer.ranges(point),
                  shown=sizer.shown, **sizer.rate_capacity(devices))
    out = []
    for option_id, kind, usd_h, extra in _priced(prices, acc, offers, devices * replicas, service, job.spot_offers):
        per_req, per_tok = _costs(usd_h, point, replicas)
        option = object.__new__(ServeOption)
        option.__dict__.update(common, id=option_id, kind=kind, usd_per_hour=usd_h, usd_per_million_requests=per_req,
                               usd_per_million_output_tokens=per_tok, **extra)
        out.append(option)
    return out


# ServeOption's fields with a default: a record set without its init starts from them (``_catalog_options``)
_OPTION_DEFAULTS = {f.name: f.default for f in fields(ServeOption) if f.default is not MISSING}


def _priced(prices: dict, acc: Accelerator, offers, total: int, service: CostAssumptions, spot_offers: bool
            ) -> tuple[tuple[str, str, float, dict], ...]:
    """``(option id, kind, USD an hour, the offer's fields)`` of every quote for ``total`` devices of ``acc`` held
    every hour (home and on-prem where it can be owned, each cloud offer), kept in ``prices`` (``_kept_prices``: of
    one catalog, cost assumptions and spot choice) by the part and the devices."""
    key = (acc.id, total)
    held = prices.get(key)
    if held is not None and held[0] is acc:
        return held[1]
    kinds = tuple(k for k, ok in (("home", acc.kind in HOME_KINDS), ("onprem", acc.kind in ONPREM_KINDS)) if ok)
    quotes = quote_job(DeviceJob(acc, total, 1.0, kinds + ("cloud",)), offers, service, spot_offers=spot_offers)
    by_id = {o.id: o for o in offers}
    rows = []
    for q in quotes:
        extra: dict[str, Any] = {}
        if isinstance(q, OwnedQuote):
            kind = q.kind
        else:
            kind, offer = "cloud", by_id.get(q.offer_id)
            if offer is None or getattr(offer, "is_price_index", False):
                continue
            extra = dict(provider=offer.provider, instance=offer.instance, spot=q.spot, price_date=offer.price_date)
        rows.append((q.option_id, kind, _per_hour(q), extra))
    hit = prices[key] = (acc, tuple(rows))
    return hit[1]


_PRICES: KeptByJob[dict] = KeptByJob(1, dict)  # the last asked cost assumptions, spot choice and catalog's quotes


def _kept_prices(catalog: Catalog, service: CostAssumptions, spot_offers: bool) -> dict:
    """The quotes kept for one catalog (held: another object starts anew), cost assumptions and spot choice
    (``_priced``): the Serve page sizes the job again on every edit, most of which change no price."""
    return _PRICES.get((service, spot_offers), catalog)


def forget_prices() -> None:
    """Forget the kept quotes (a benchmark sizes a job cold)."""
    _PRICES.clear()


def range_factors(by: str = "users", choice=None, acc=None, users: float | None = None, moe: bool = False
                  ) -> tuple[tuple[str, float, str], ...]:
    """``(group, x/÷ factor, origin)`` of the 80 % ranges of a serving job's figures at its load (``by``: users or
    requests_per_s; ``users`` on a replica, one of them being the one request's), for a runtime choice on an
    accelerator where given, of a dense model or a mixture of experts (``moe``; ``calibrated.serve_range_factors``)."""
    return tuple((g, f, origin) for g, (f, origin) in
                 serve_range_factors(serve_load(by, users), choice, acc, moe).items())


def rate_bound(option: ServeOption | None) -> float | None:
    """The most tokens/s one sequence may decode on ``option`` at its load: the replica's bandwidth over the bytes a
    step reads with the point's sequences in service (the weights they touch, the request's cache at its mean length
    and each other sequence's at the running one), ``estimate.decode.decode_bound_tokens_per_s``, the bound the
    plan caps its decode range at (``planner.timing.Timing.high_cap``); None without a point."""
    spec, p, lengths = (None, None, None) if option is None else (option.spec, option.point, option.lengths)
    if spec is None or p is None or lengths is None or not math.isfinite(p.in_service):
        return None
    batch = max(1.0, p.in_service)
    cache = lengths.mean_context + (batch - 1.0) * lengths.running_context
    read = spec.read_bytes * touched(spec, batch) + spec.kv_bytes_per_token * cache * spec.kv_replicas
    return decode_bound_tokens_per_s(spec.bandwidth_bps * spec.parallel_devices, read)


def interval(value: float | None, which: str, option: ServeOption | None = None, by: str = "users", *,
             bound: str = "") -> list[float] | None:
    """The 80 % range of a figure: ``[value / f, value x f]`` with ``f`` its group's held-out width (``which``:
    ``throughput``, ``ttft`` or ``tpot``, ``RANGE_GROUPS``): the option's own (its runtime at the job's load), else
    the group's at a load of ``by``. ``bound``: ``rate`` for a sequence's tokens/s, whose top is held at the
    option's bandwidth bound (``rate_bound``), ``time`` for a time per output token, whose bottom is held at one
    over it, as the plan holds its decode range (``planner.timing.Timing.interval``); a figure beyond the bound
    keeps its own value."""
    if value is None or not math.isfinite(value):
        return None
    ranges = option.ranges if option is not None and option.ranges else range_factors(by)
    f = next(f for g, f, _ in ranges if g == RANGE_GROUPS[which])
    low, high = value / f, value * f
    most = rate_bound(option) if bound else None
    if most is not None and bound == "rate":
        high = min(high, max(most, value))
    elif most is not None and bound == "time":
        low = max(low, min(value, 1.0 / most))
    return [low, high]


def range_origin(by: str = "users", option: ServeOption | None = None, moe: bool = False) -> str:
    """Where the ranges come from, in words (reports, the Serve page, ``advisor.serve/1``): at the job's kind of
    load, the option's own where given, else a dense model's or a mixture of experts' (``moe``,
    ``ServeResult.moe``)."""
    ranges = option.ranges if option is not None and option.ranges else range_factors(by, moe=moe)
    facts = {g: (f, origin) for g, f, origin in ranges}
    users = option.point.users if option is not None and option.point is not None else None
    load = {"users": "users", "one": "one user"}.get(serve_load(by, users), "an arrival rate")
    parts = [f"{what} within x/÷{facts[g][0]:.2f} ({facts[g][1]})" for what, g in
             (("throughput", "serving"), ("time to first token", "ttft"), ("time per output token", "tpot"))]
    return f"at a load of {load}: " + "; ".join(parts)


CHART_OPTIONS = 4  # curves on the knee chart: the owned options, then the cheapest meeting the target by kind


def charted(result: ServeResult) -> list[ServeOption]:
    """The options the knee chart draws (the Serve page, reports): the owned ones that fit, then the cheapest
    cloud, home and on-prem options meeting the target (or the closest when none does)."""
    out = [o for o in result.options if o.owned and o.fits and o.spec is not None]
    cheapest = result.cheapest_of(("cloud", "home", "onprem"))
    for kind in ("cloud", "home", "onprem"):
        o = cheapest[kind]
        if o is not None and o.spec is not None and all(o.accelerator != x.accelerator or o.kind != x.kind
                                                        for x in out):
            out.append(o)
    if not any(o.meets_target for o in out):
        close = result.closest()
        if close is not None and close not in out and close.spec is not None:
            out.append(close)
    return out[:CHART_OPTIONS]


def knee_curves(result: ServeResult, options: list[ServeOption] | None = None) -> tuple:
    """``(option, points)`` of the charted options (``options``: ``charted(result)`` where found already), one
    replica each, load rising (``serving_queue.knee_curve``)."""
    from advisor.estimate.serving_queue import knee_curve

    return tuple((o, tuple(knee_curve(o.spec, result.lengths, by=result.by, shown=o.shown)))
                 for o in (charted(result) if options is None else options))
