"""Step 4 of a plan: the typed result, and its ``advisor.plan/1`` JSON document.

Everything the CLI, the app and the reports show of a plan is read from a :class:`PlanResult`: the options
with their cost parts and break-even, the Pareto front, the inputs and where each came from. Nothing
downstream prices an option again.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import MISSING, dataclass, field, fields
from functools import cached_property

from advisor.catalog.runtimes import RuntimeChoice
from advisor.catalog.training_runs import bundled_utilisation_model
from advisor.cost.assumptions import CostAssumptions
from advisor.cost.breakdown import CostBreakdown
from advisor.cost.breakeven import BreakEven
from advisor.cost.compare import pareto_front
from advisor.cost.ownership import Holding, Utilisation
from advisor.cost.price_dates import PriceAges, price_ages_of
from advisor.estimate.memory import MemoryBreakdown
from advisor.estimate.model import ModelArch
from advisor.estimate.reach import Reach
from advisor.job import JOB_FIELDS
from advisor.planner.layouts import MemoryModel, Parallelism
from advisor.planner.request import Lengths, PlanInputError, PlanRequest, TrainingSoftware, training_software

SCHEMA = "advisor.plan/1"


@dataclass(frozen=True)
class Serving:
    """The serving figures of an inference option (docs/method.md, "Inference speed").

    Attributes:
        ttft_s: time to the first token when the batch's requests arrive together (their prompts' prefill, whose
            last logits give the first token); ``ttft_single_request_s`` that of one request alone
            (``estimate.serving.single_request``, what ``advisor serve`` shows at one user).
        bandwidth_efficiency: fraction of the memory bandwidth the decode reaches (prior or measured).
        requests_per_s: finished requests per second at the batch.
        decode_bound: ``memory`` or ``compute``, whichever limits a decode step.
        usd_per_million_tokens / usd_per_million_requests: the option's hourly price over its rate.
    """

    ttft_s: float
    bandwidth_efficiency: float
    requests_per_s: float
    decode_bound: str
    usd_per_million_tokens: float | None
    usd_per_million_requests: float | None
    prefill_tokens_per_s: float | None = None  # prompt tokens per second (the batch's prompts together)
    ttft_single_request_s: float | None = None
    software: RuntimeChoice | None = None  # the runtime profile assumed
    overhead_s: float = 0.0  # launch overhead inside each decode step
    ttft_s_interval: tuple[float, float] | None = None  # 80 % intervals (docs/method.md, "Honest ranges")
    prefill_tokens_per_s_interval: tuple[float, float] | None = None
    kv_capacity_tokens: int | None = None  # tokens of cache the devices hold (one request's longest context)


def cheapest(options, *, spot: bool, kind: str | None = None):
    """The cheapest option that fits and can run as laid out (of ``kind`` when given): on the job's stack first,
    on-demand before spot unless ``spot`` (the assumptions rank by spot prices), hardware the user owns winning
    a tie (nothing they lack is named above an owned option as cheap); None when none fits."""
    fitting = [o for o in options if o.fits and o.feasible and (kind is None or o.kind == kind)]
    return min(fitting, key=lambda o: (not o.stack_ok, not spot and o.spot, o.cost_usd, o.kind != "owned", o.hours,
                                       o.id)) if fitting else None


@dataclass(frozen=True)
class OwningCost:
    """What owning costs per device, for break-even charts: sunk money and money per hour of use (USD)."""

    fixed_usd_per_device: float
    variable_usd_per_device_hour: float
    holding: Holding | None = field(default=None, compare=False)  # by month and by hour (``cost.ownership``)

    @classmethod
    def of(cls, fixed_usd_per_device: float, variable_usd_per_device_hour: float,
           holding: Holding | None = None) -> OwningCost:
        """``OwningCost(...)`` without the frozen dataclass's per-field init (a plan makes one per rig and server
        per keystroke); equal to it, field for field (tests/planner/test_option_build.py)."""
        out = object.__new__(cls)
        out.__dict__.update(fixed_usd_per_device=fixed_usd_per_device,
                            variable_usd_per_device_hour=variable_usd_per_device_hour, holding=holding)
        return out


@dataclass(frozen=True)
class PlanOption:
    """One way to run the job: an accelerator, how many, where (home, on-prem, a cloud offer) and its cost.

    ``mfu`` is the compute utilisation: assumed for training, achieved (FLOPs done over the peak) for inference.
    """

    id: str
    kind: str  # home | onprem | cloud
    accelerator: str
    accelerator_name: str
    devices: int
    fits: bool
    parallelism: Parallelism
    memory_per_device_bytes: int
    capacity_bytes: int
    mfu: float
    mfu_origin: str
    hours: float
    device_hours: float
    tokens: float
    tokens_per_s: float
    energy_kwh: float
    usd_per_device_hour: float | None
    breakdown: CostBreakdown
    provider: str = ""
    instance: str = ""
    spot: bool = False
    instances: int = 0
    price_date: str = ""
    break_even: BreakEven | None = None
    owning: OwningCost | None = None
    utilisation: Utilisation | None = None  # owned, home, on-prem: the busy hours behind the figure
    serving: Serving | None = None
    note: str = ""
    hours_interval: tuple[float, float] | None = None  # 80 % intervals (docs/method.md, "Honest ranges")
    tokens_per_s_interval: tuple[float, float] | None = None
    cost_usd_interval: tuple[float, float] | None = None
    mfu_source: str = ""  # fitted | prior | calibrated | user | decode
    time_split_s: dict[str, float] | None = None  # compute, communication, bubble over the whole job
    feasible: bool = True
    infeasible_reason: str = ""
    reference: bool = False  # a price-index row: a reference price, never a launch target
    nodes: int = 1
    gpus_per_node: int = 0  # accelerators per node asked for (a cloud instance's real count)
    price_stale: bool = False  # priced more than a year before the catalog's date
    stacks: tuple[str, ...] = ()  # the software stacks that run on the accelerator (catalog.stacks)
    stack_ok: bool = True  # False: none of them is among the job's stacks (planner.stacks); ranked after
    stack_reason: str = ""  # why not, e.g. "needs JAX/XLA"
    origin: str = ""  # owned hardware: where it comes from ("this machine", "--own 2xrtx-3090", a fleet)
    this_machine: bool = False  # the GPUs (or CPU) of the machine the advisor runs on: shown first
    derived: bool = False  # the accelerator was derived from driver figures, not a catalog row
    host_bytes: int = 0  # host RAM the job needs besides the device memory (offload)
    memory: MemoryBreakdown | None = None  # per device, on this option's layout (the parts of memory_per_device_bytes)
    offload: dict | None = None  # partial offload (gpu_layers): memory on each side and tokens/s
    reach: Reach | None = None  # training: where it lies against the calibrated runs (planner.calibrated)
    cost_usd: float = field(init=False)  # total job cost: the sum of the breakdown

    def __post_init__(self) -> None:
        object.__setattr__(self, "cost_usd", self.breakdown.total_usd)

    @classmethod
    def build(cls, common: dict, **values) -> PlanOption:
        """``PlanOption(**common, **values)`` without the per-field ``object.__setattr__`` of a frozen dataclass's
        ``__init__``: a plan builds a few hundred options per keystroke, and this is a fifth of its time.

        The same fields are required and allowed as by ``__init__`` (a TypeError names the wrong ones), the
        defaults are the declared ones and ``cost_usd`` is the breakdown's total, so the two are equal
        (tests/planner/test_option_build.py).
        """
        if common.__class__ is _Prepared and values.keys() <= _OPTION_INIT:
            # every field is in ``common`` (defaults merged and names checked once for a group of options)
            option = object.__new__(cls)
            held = option.__dict__
            held.update(common)
            held.update(values)
            held["cost_usd"] = held["breakdown"].total_usd
            return option
        merged = {**_OPTION_DEFAULTS, **common, **values}
        if merged.keys() != _OPTION_INIT:
            unknown, missing = merged.keys() - _OPTION_INIT, _OPTION_INIT - merged.keys()
            raise TypeError(f"PlanOption.build: unknown fields {sorted(unknown)}, missing {sorted(missing)}")
        option = object.__new__(cls)
        option.__dict__.update(merged)
        option.__dict__["cost_usd"] = merged["breakdown"].total_usd
        return option

    @classmethod
    def prepare(cls, common: dict) -> dict:
        """``common`` over the declared defaults, its names checked: :meth:`build` takes it for every option of
        a group sharing those figures and only adds each option's own.

        Raises:
            TypeError: a name that is no field.
        """
        unknown = common.keys() - _OPTION_INIT
        if unknown:
            raise TypeError(f"PlanOption.prepare: unknown fields {sorted(unknown)}")
        return _Prepared({**_OPTION_DEFAULTS, **common})

    def with_(self, **changes) -> PlanOption:
        """A copy with ``changes`` (fields other than ``breakdown``, whose total ``cost_usd`` follows):
        ``dataclasses.replace`` without the per-field init of a frozen dataclass (a plan copies hundreds)."""
        if not changes.keys() <= _OPTION_CHANGES:
            unknown = changes.keys() - _OPTION_INIT
            raise TypeError(f"PlanOption.with_: not for {sorted(unknown | (changes.keys() & {'breakdown', 'cost_usd'}))}")
        out = object.__new__(PlanOption)
        held = out.__dict__
        held.update(self.__dict__)
        held.update(changes)
        return out

    @property
    def cost_breakdown_usd(self) -> dict[str, float]:
        return self.breakdown.as_dict()

    @property
    def usd_per_million_tokens(self) -> float | None:
        return None if self.serving is None else self.serving.usd_per_million_tokens

    @property
    def usd_per_million_requests(self) -> float | None:
        return None if self.serving is None else self.serving.usd_per_million_requests

    def to_json(self) -> dict:
        doc = {
            "id": self.id, "kind": self.kind, "accelerator": self.accelerator, "name": self.accelerator_name,
            "devices": self.devices, "fits": self.fits, "mfu": self.mfu, "mfu_origin": self.mfu_origin,
            "hours": self.hours, "device_hours": self.device_hours, "energy_kwh": self.energy_kwh,
            "usd_per_device_hour": self.usd_per_device_hour, "cost_usd": self.cost_usd,
            "cost_breakdown_usd": self.breakdown.as_dict(), "tokens_per_s": self.tokens_per_s,
            "tokens": self.tokens, "memory_per_device_bytes": self.memory_per_device_bytes,
            "capacity_bytes": self.capacity_bytes, "parallelism": self.parallelism.as_dict(),
            "mfu_source": self.mfu_source, "hours_interval": _pair(self.hours_interval),
            "tokens_per_s_interval": _pair(self.tokens_per_s_interval),
            "cost_usd_interval": _pair(self.cost_usd_interval), "time_split_s": self.time_split_s,
            "feasible": self.feasible, "nodes": self.nodes, "gpus_per_node": self.gpus_per_node,
            "stacks": list(self.stacks), "stack_ok": self.stack_ok,
        }
        if not self.stack_ok:
            doc["stack_reason"] = self.stack_reason
        if not self.feasible:
            doc["infeasible_reason"] = self.infeasible_reason
        if self.kind == "cloud":
            doc.update(provider=self.provider, instance=self.instance, spot=self.spot, instances=self.instances,
                       price_date=self.price_date, price_stale=self.price_stale, reference=self.reference)
        if self.memory is not None:
            doc["memory_per_device_parts_bytes"] = self.memory.as_dict()
        if self.break_even is not None:
            doc["break_even"] = self.break_even.as_dict()
        if self.utilisation is not None:
            doc["utilisation"] = self.utilisation.as_dict()
        if self.owning is not None:
            doc["owning"] = {"fixed_usd_per_device": self.owning.fixed_usd_per_device,
                             "variable_usd_per_device_hour": self.owning.variable_usd_per_device_hour}
        if self.note:
            doc["note"] = self.note
        if self.kind == "owned":
            doc.update(origin=self.origin, this_machine=self.this_machine)
        if self.derived:
            doc["derived"] = True
        if self.host_bytes:
            doc["host_bytes"] = self.host_bytes
        if self.offload is not None:
            doc["offload"] = dict(self.offload)
        if self.reach is not None:
            doc["calibration_reach"] = self.reach.to_json()
        if self.serving is not None:
            s = self.serving
            doc.update(ttft_s=s.ttft_s, bandwidth_efficiency=s.bandwidth_efficiency,
                       usd_per_million_tokens=s.usd_per_million_tokens,
                       usd_per_million_requests=s.usd_per_million_requests, requests_per_s=s.requests_per_s,
                       decode_bound=s.decode_bound, prefill_tokens_per_s=s.prefill_tokens_per_s,
                       decode_tokens_per_s=self.tokens_per_s, ttft_s_interval=_pair(s.ttft_s_interval),
                       prefill_tokens_per_s_interval=_pair(s.prefill_tokens_per_s_interval),
                       ttft_single_request_s=s.ttft_single_request_s, decode_overhead_s=s.overhead_s)
            if s.software is not None:
                doc["software"] = s.software.to_json()
        return doc


class _Prepared(dict):
    """Option figures over the defaults, names checked (:meth:`PlanOption.prepare`)."""


_OPTION_INIT = frozenset(f.name for f in fields(PlanOption) if f.init)
_OPTION_CHANGES = _OPTION_INIT - {"breakdown"}  # what ``PlanOption.with_`` may change (``cost_usd`` follows)
_OPTION_DEFAULTS = {f.name: f.default for f in fields(PlanOption) if f.init and f.default is not MISSING}


def _pair(pair: tuple[float, float] | None) -> list[float] | None:
    return None if pair is None else [pair[0], pair[1]]


@dataclass(frozen=True)
class PlanResult:
    """Everything a plan produces. ``to_json()`` is the ``advisor.plan/1`` document of ``advisor plan --json``.

    ``flops_total`` is the model FLOPs of the whole budget (training tokens, or generated tokens for
    inference); ``flops_per_token`` the FLOPs per trained or generated token.
    """

    request: PlanRequest
    arch: ModelArch
    model_name: str | None
    params: int
    active_params: int
    flops_total: float
    flops_per_token: float
    attention_flops_per_token: float
    tokens: float | None
    budget_origin: str
    seq_len: int
    context: int
    parallelism: Parallelism
    memory: MemoryBreakdown
    options: tuple[PlanOption, ...]
    assumptions: CostAssumptions
    catalog_date: str
    prices_as_of: str
    calibration: dict | None
    warnings: tuple[str, ...] = ()
    stacks: tuple[str, ...] = ()  # the job's software stacks (the ``stack`` input or its default)
    memory_model: MemoryModel | None = field(default=None, compare=False, repr=False)
    fit_advice: tuple = ()  # ``estimate.fit.FitAdvice`` for the hardware asked for or owned, when it does not fit
    replanner: Callable | None = field(default=None, compare=False, repr=False)  # re-plan on one target
    # 80 % interval of the training peak memory per device (the calibration set's finetune_memory group)
    memory_interval: tuple[float, float] | None = None
    lengths: Lengths | None = None  # inference: prompt, output and window tokens per request

    @cached_property
    def inference(self) -> dict | None:
        """Inference the way people ask it (``planner.fit.inference_summary``): time to first token, prefill
        and decode tokens/s, the largest context that fits and a context sweep, on this machine's option
        (else the cheapest that fits). Computed on first use: the sweep re-plans."""
        from advisor.planner.fit import inference_summary

        return inference_summary(self, self.replanner)

    def _serving_json(self) -> dict:
        """Inference: prompt and output tokens per request, and the runtime profile of the option the inference
        summary describes (each option carries its own ``"software"``)."""
        if self.lengths is None:
            return {}
        from advisor.planner.fit import inference_target
        from advisor.planner.request import names_format

        target = inference_target(self)
        s = target.serving if target is not None else None
        software = s.software.to_json() if s is not None and s.software is not None else None
        if software is not None and not names_format(self.request):
            software["assumed"] = (f"no --quant or --precision given: {software['weight_format']}, the file "
                                   f"{software.get('name') or software.get('id')} users download by default")
        return {"prompt_tokens": self.lengths.prompt, "output_tokens": self.lengths.output, "software": software}

    def fit_target(self):
        """The option the fit advice is for (``planner.fit.fit_target``), or None."""
        from advisor.planner.fit import fit_target

        return fit_target(self)

    def memory_at(self, devices: int) -> MemoryBreakdown | None:
        """Memory per device of this job at another device count (the preferred layout; None when the
        count cannot be split into the requested tp x pp). For the app's memory chart: no re-planning."""
        if self.memory_model is None or not 1 <= devices <= 16384:
            return None
        layouts = self.memory_model.layouts(devices)
        return self.memory_model.at(layouts[0]) if layouts else None

    def best(self, kind: str | None = None) -> PlanOption | None:
        """The cheapest option that fits and can run as laid out (of a kind, when given), on the job's software
        stack when one such fits (else the cheapest on another stack, marked ``stack_ok`` false); this machine's
        row, listed first, only when it is the cheapest."""
        return cheapest(self.options, spot=self.assumptions.spot, kind=kind)

    def fastest(self) -> PlanOption | None:
        """The fastest option that fits and can run as laid out, on the job's stack when one such fits; an owned
        option as fast (within the 3 figures the hours are shown at) is named before hardware the user lacks."""
        fitting = [o for o in self.options if o.fits and o.feasible]
        if not fitting:
            return None
        top = min(fitting, key=lambda o: (not o.stack_ok, o.hours, o.id))
        owned = [o for o in fitting if o.kind == "owned" and o.stack_ok >= top.stack_ok
                 and o.hours <= top.hours * 1.0005]
        return min(owned, key=lambda o: (o.hours, o.id)) if owned else top

    def this_machine(self) -> PlanOption | None:
        """This machine's option (its GPUs, or the CPU asked for), or None."""
        return next((o for o in self.options if o.this_machine), None)

    @property
    def ranked(self) -> tuple[PlanOption, ...]:
        """The options that can run as laid out, cheapest first (fitting ones before the rest)."""
        return tuple(o for o in self.options if o.feasible)

    @property
    def infeasible(self) -> tuple[PlanOption, ...]:
        """The options that cannot run as laid out, each with ``infeasible_reason``: listed apart, never ranked."""
        return tuple(o for o in self.options if not o.feasible)

    def price_ages(self, options=None) -> PriceAges | None:
        """Oldest and newest price date of the cloud options shown (all by default), and the ones older than
        a year as of the catalog's date; None when the catalog has no ISO date (``cost.price_dates``)."""
        rows = {}
        for o in self.options if options is None else options:
            if o.kind == "cloud":
                rows[o.id.removeprefix("cloud:").removesuffix(":spot").split(":reserved-")[0]] = o.price_date
        try:
            return price_ages_of(tuple(rows.items()), self.catalog_date)
        except ValueError:
            return None

    def prices_text(self, options=None) -> str:
        """:meth:`price_ages` of ``options`` (all by default) as one line that says what it counts ("this plan's
        242 cloud offers: ..."), or ``prices as of`` the catalog's price date when the catalog has no ISO date
        (the CLI table, the Planner and Compare pages and the reports: one count for one plan)."""
        ages = self.price_ages(options)
        return ages.summary("this plan's") if ages is not None else f"cloud prices as of {self.prices_as_of}"

    def cost_over_time(self):
        """Money spent against months on the user's own GPUs, the home rig and on-prem servers to buy and the
        cheapest rent, at the stated cadence (``planner.summary.cost_over_time``; the Compare page's chart and
        the reports read it)."""
        from advisor.planner.summary import cost_over_time

        return cost_over_time(self)

    def option(self, option_id: str) -> PlanOption | None:
        """The option with this id, or None."""
        return next((o for o in self.options if o.id == option_id), None)

    def pareto_ids(self) -> list[str]:
        """Options no other option beats on both time and cost (fitting options only)."""
        return pareto_front((o.hours, o.cost_usd, o.id) for o in self.options if o.fits and o.feasible)

    def describe_assumptions(self) -> dict[str, dict]:
        """Every cost assumption with its value, unit and origin: the default's source for a default value,
        where the value came from (``--set``, a scenario file, an app setting) for a changed one."""
        return self.assumptions.describe(sources=self.request.sources)

    @property
    def software(self) -> TrainingSoftware | None:
        """The training framework and behaviours the plan assumed (None for inference)."""
        return training_software(self.request)

    def software_json(self) -> dict | None:
        """The ``software`` block of the plan document: the profile assumed, its behaviours and their sources."""
        sw = self.software
        return sw.to_json() if sw is not None else None

    def inputs(self) -> dict[str, dict]:
        """The inputs that differ from the schema's defaults, each ``{"value", "unit", "source"}``."""
        sources = self.request.sources
        out = {}
        for name, value in self.request.changed().items():
            meta = JOB_FIELDS[name]
            if meta.kind == "table":
                continue
            out[name] = {"value": value, "unit": meta.unit, "source": sources.get(name, "given")}
        return out

    def to_json(self) -> dict:
        r = self.request
        mine = {o.accelerator for o in self.options if o.kind == "owned"}
        return {
            "schema": SCHEMA,
            "model": {"name": self.model_name, "params": self.params, "active_params": self.active_params,
                      "layers": self.arch.layers, "hidden": self.arch.hidden, "heads": self.arch.heads,
                      "kv_heads": self.arch.kv_heads, "vocab": self.arch.vocab,
                      "max_context": self.arch.max_context or None},
            "workload": r.workload, "precision": r.precision, "optimizer": r.optimizer,
            "inputs": self.inputs(),
            "software": self.software_json(),
            "flops_total": self.flops_total,
            "flops_per_token": self.flops_per_token,
            "flops_note": "model FLOPs (6*P_act per trained token, 4 for LoRA/QLoRA, 2 per generated token) over "
                          "the whole token budget; attention FLOPs not included",
            "attention_flops_per_token": self.attention_flops_per_token,
            "tokens": self.tokens, "budget": self.budget_origin,
            "seq_len": self.seq_len, "context": self.context,
            **self._serving_json(),
            "memory": {
                "devices": self.parallelism.devices,
                "parallelism": self.parallelism.as_dict(),
                "per_device_bytes": self.memory.as_dict(),
                "per_device_bytes_interval": _pair(self.memory_interval),
            },
            "options": [_marked(o, mine) for o in self.options],
            "infeasible": [{"id": o.id, "reason": o.infeasible_reason} for o in self.infeasible],
            "goodput": {"factor": bundled_utilisation_model().goodput,
                        "wall_time_low": bundled_utilisation_model().wall_time_low,
                        "note": "hours are clean training time; published GPU-hour totals include restarts, failures "
                                "and evaluation: divide by the factor to compare with one (docs/method.md); the "
                                "upper side of hours_interval reaches hours / wall_time_low, the lowest share of "
                                "the wall time that trained in the documented runs' published totals"},
            "calibration_reach": self.reach_json(),
            "pareto": self.pareto_ids(),
            "stack": list(self.stacks),
            "assumptions": self.describe_assumptions(),
            "calibration": self.calibration,
            "catalog": {"date": self.catalog_date, "prices_as_of": self.prices_as_of,
                        "price_dates": _ages_json(self.price_ages())},
            "warnings": list(self.warnings),
            "this_machine": getattr(self.this_machine(), "id", None),
            "fit_target": getattr(self.fit_target(), "id", None),
            "fit_advice": [a.to_json() for a in self.fit_advice],
            "inference": self.inference,
            "cost_over_time": self.cost_over_time().as_dict(),
            "headline": self.headline(),
        }

    def reach_json(self) -> dict | None:
        """The plan's statement of where the job lies against the calibrated runs (``planner.summary.reach``):
        the option it is about and its ``Reach``; None for inference or without a calibration."""
        from advisor.planner.summary import reach, reach_sentence

        found = reach(self)
        return None if found is None else {"option": found[0].id, **found[1].to_json(),
                                           "sentence": reach_sentence(self)}

    def headline(self) -> list[str]:
        """The answer's sentences as the screen shows them: the user's GPUs, the cheapest rent, what to buy
        (``planner.summary.headline_parts``); reports print them as they are."""
        from advisor.planner.summary import headline_parts

        return headline_parts(self)


def _marked(o: PlanOption, owned_ids: set[str]) -> dict:
    """An option's JSON; a home or on-prem purchase of cards the user owns says so (``"buys_owned_cards"``)."""
    doc = o.to_json()
    if o.kind in ("home", "onprem") and o.accelerator in owned_ids:
        doc["buys_owned_cards"] = True
    return doc


def _ages_json(ages: PriceAges | None) -> dict | None:
    if ages is None:
        return None
    return {"oldest": ages.oldest, "newest": ages.newest, "older_than_a_year": list(ages.stale_ids),
            "undated": len(ages.undated_ids), "oldest_bounded": ages.oldest_bounded,
            "bounded": len(ages.bounded_ids), "offers": ages.count, "summary": ages.summary("this plan's")}


def check_finite(result: PlanResult) -> None:
    """Refuse a result with a figure out of range (an overflow from huge inputs), before anything is shown.

    Raises:
        PlanInputError: one line naming the input that most likely caused it.
    """
    def bad(x) -> bool:
        return x is not None and not math.isfinite(x)

    if bad(result.flops_total) or bad(result.tokens):
        raise PlanInputError("tokens", "the budget is too large: FLOPs overflow")
    isfinite = math.isfinite
    for o in result.options:
        total = o.hours + o.device_hours + o.tokens + o.tokens_per_s + o.energy_kwh + o.cost_usd
        rate = o.usd_per_device_hour
        if isfinite(total) and (rate is None or isfinite(rate)):  # one sum: a NaN or inf shows in it
            continue
        figures = (o.hours, o.device_hours, o.tokens, o.tokens_per_s, o.energy_kwh, o.cost_usd, o.usd_per_device_hour)
        if any(bad(x) for x in figures):
            name = "hours" if result.request.hours is not None else "tokens"
            if not any(bad(x) for x in (o.hours, o.tokens)):
                name = "assumptions"
            raise PlanInputError(name, f"the plan's figures overflow on {o.id} (time, cost or energy is not finite); "
                                       "give a smaller value")
