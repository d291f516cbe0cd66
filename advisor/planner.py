"""The planning service: a request in, memory, time and cost for every hardware option out.

It joins the pure core (``estimate``, ``cost``) with the catalog and this machine's calibration.
``plan()`` does no I/O beyond the (cached) catalog, so the GUI can re-plan on every keystroke.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from advisor.catalog import PRECISIONS, Accelerator, Catalog, CatalogError, load_catalog
from advisor.cost.assumptions import CostAssumptions
from advisor.cost.breakeven import break_even
from advisor.cost.compare import pareto_front, usd_per_million_requests, usd_per_million_tokens
from advisor.cost.jobs import can_own, cloud_job_cost, home_job_cost, home_rigs, onprem_job_cost
from advisor.estimate import compute, memory
from advisor.estimate.memory import MemoryBreakdown
from advisor.estimate.model import ModelArch, active_param_count, embedding_params, generic_arch, param_count
from advisor.estimate.priors import ETA_COMPUTE_PRIOR, ETA_MEM_PRIOR, mfu_prior

SCHEMA = "advisor.plan/1"
DEVICE_COUNTS = tuple(2**i for i in range(15))  # 1 .. 16384
TP_CHOICES = (1, 2, 4, 8)
DEFAULT_FINETUNE_TOKENS = 1e8
DEFAULT_INFERENCE_TOKENS = 1e8
HOME_KINDS = ("consumer", "workstation")
ONPREM_KINDS = ("datacenter", "workstation")


class PlanInputError(ValueError):
    """Invalid plan input; ``str()`` is one line naming the field and why."""

    def __init__(self, field_name: str, message: str):
        super().__init__(f"{field_name}: {message}")
        self.field = field_name


@dataclass(frozen=True)
class PlanRequest:
    """The inputs of one plan. Field names are the ``advisor plan`` long flags with ``-`` as ``_``.

    ``None`` means "choose for me": the fewest devices that fit, ZeRO-3 when sharding is needed,
    a default budget (Chinchilla's 20 tokens per parameter for pretraining, 1e8 tokens otherwise).
    """

    model: str | None = None
    params: float | None = None
    active_params: float | None = None
    layers: int | None = None
    hidden: int | None = None
    heads: int | None = None
    kv_heads: int | None = None
    ffn: int | None = None
    vocab: int | None = None
    workload: str = "pretrain"
    precision: str = "bf16"
    optimizer: str = "adamw"
    zero: int | None = None
    gpus: int | None = None
    tp: int | None = None
    pp: int = 1
    seq_len: int | None = None
    micro_batch: int = 1
    checkpointing: str = "selective"
    tokens: float | None = None
    epochs: float | None = None
    dataset_tokens: float | None = None
    hours: float | None = None
    context: int | None = None
    batch: int = 1
    output_tokens: int = 256
    accelerator: tuple[str, ...] = ()
    mfu: float | None = None
    lora_rank: int = 16
    quant: str | None = None
    spot_offers: bool = True
    assumptions: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> PlanRequest:
        """Build and validate a request from flag/scenario values (unknown keys are an error).

        Raises:
            PlanInputError: naming the first bad field.
        """
        names = {f.name for f in fields(cls)}
        kwargs = {}
        for key, value in values.items():
            if key not in names:
                raise PlanInputError(key, "unknown plan field")
            if value is None:
                continue
            kwargs[key] = value
        if isinstance(kwargs.get("accelerator"), str):
            kwargs["accelerator"] = (kwargs["accelerator"],)
        if "accelerator" in kwargs:
            kwargs["accelerator"] = tuple(kwargs["accelerator"])
        request = cls(**kwargs)
        request.validate()
        return request

    def validate(self) -> None:
        """Check types and ranges that do not need the catalog. Raises PlanInputError."""
        _positive_number(self, "params", optional=True)
        _positive_number(self, "active_params", optional=True)
        for name in ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "gpus", "seq_len", "context"):
            _positive_int(self, name, optional=True)
        for name in ("micro_batch", "batch", "output_tokens", "pp", "lora_rank"):
            _positive_int(self, name)
        _positive_int(self, "tp", optional=True)
        for name in ("tokens", "epochs", "dataset_tokens", "hours"):
            _positive_number(self, name, optional=True)
        _choice(self, "workload", memory.WORKLOADS)
        _choice(self, "precision", PRECISIONS)
        _choice(self, "optimizer", memory.OPTIMIZERS)
        _choice(self, "checkpointing", memory.CHECKPOINTING)
        if self.quant is not None:
            _choice(self, "quant", tuple(memory.QUANT_BITS))
        if self.zero is not None and (isinstance(self.zero, bool) or self.zero not in (0, 1, 2, 3)):
            raise PlanInputError("zero", f"must be 0, 1, 2 or 3, got {self.zero!r}")
        if self.mfu is not None:
            _positive_number(self, "mfu")
            if self.mfu > 1:
                raise PlanInputError("mfu", f"must be in (0, 1], got {self.mfu!r}")
        if self.model is None and self.params is None:
            raise PlanInputError("model", "give a preset (--model) or a parameter count (--params)")
        if self.active_params and self.params and self.active_params > self.params:
            raise PlanInputError("active_params", "cannot exceed params")
        if (self.epochs is None) != (self.dataset_tokens is None):
            raise PlanInputError("epochs", "--epochs and --dataset-tokens go together")
        budgets = [n for n in ("tokens", "epochs", "hours") if getattr(self, n) is not None]
        if len(budgets) > 1:
            raise PlanInputError(budgets[1], f"give one budget: --tokens, --epochs or --hours (got {', '.join(budgets)})")
        tp = self.tp or 1
        if self.gpus is not None and self.gpus % (tp * self.pp):
            raise PlanInputError("gpus", f"{self.gpus} devices cannot be split into tp={tp} x pp={self.pp}")
        if self.workload != "inference" and self.workload != "qlora" and self.precision in ("int8", "int4"):
            raise PlanInputError("precision", f"{self.precision} is for inference; 4-bit training is --workload qlora")
        if self.workload == "inference" and self.quant is None and self.precision == "tf32":
            raise PlanInputError("precision", "tf32 is a training precision; use fp32, bf16, fp8, int8 or int4")
        if not isinstance(self.assumptions, Mapping):
            raise PlanInputError("assumptions", "must be a table of name = value")


def _positive_number(req, name, optional=False):
    value = getattr(req, name)
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise PlanInputError(name, f"must be a finite number above 0, got {value!r}")


def _positive_int(req, name, optional=False):
    value = getattr(req, name)
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise PlanInputError(name, f"must be a whole number of 1 or more, got {value!r}")


def _choice(req, name, choices):
    value = getattr(req, name)
    if value not in choices:
        raise PlanInputError(name, f"must be one of {', '.join(choices)}, got {value!r}")


@dataclass(frozen=True)
class Parallelism:
    """How a job is laid out over its devices."""

    devices: int
    tp: int
    pp: int
    zero: int

    @property
    def dp(self) -> int:
        return self.devices // (self.tp * self.pp)


@dataclass(frozen=True)
class PlanOption:
    """One way to run the job: an accelerator, how many, where (home, on-prem, a cloud offer) and its cost."""

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
    cost_usd: float
    cost_breakdown_usd: dict
    provider: str = ""
    instance: str = ""
    spot: bool = False
    instances: int = 0
    price_date: str = ""
    break_even: dict | None = None
    usd_per_million_tokens: float | None = None
    usd_per_million_requests: float | None = None
    requests_per_s: float | None = None
    decode_bound: str | None = None
    note: str = ""

    def to_json(self) -> dict:
        doc = {
            "id": self.id, "kind": self.kind, "accelerator": self.accelerator, "name": self.accelerator_name,
            "devices": self.devices, "fits": self.fits, "mfu": self.mfu, "mfu_origin": self.mfu_origin,
            "hours": self.hours, "device_hours": self.device_hours, "energy_kwh": self.energy_kwh,
            "usd_per_device_hour": self.usd_per_device_hour, "cost_usd": self.cost_usd,
            "cost_breakdown_usd": dict(self.cost_breakdown_usd), "tokens_per_s": self.tokens_per_s,
            "tokens": self.tokens, "memory_per_device_bytes": self.memory_per_device_bytes,
            "capacity_bytes": self.capacity_bytes,
            "parallelism": {"tp": self.parallelism.tp, "pp": self.parallelism.pp, "dp": self.parallelism.dp,
                            "zero": self.parallelism.zero},
        }
        if self.kind == "cloud":
            doc.update(provider=self.provider, instance=self.instance, spot=self.spot, instances=self.instances,
                       price_date=self.price_date)
        if self.break_even is not None:
            doc["break_even"] = dict(self.break_even)
        if self.note:
            doc["note"] = self.note
        if self.usd_per_million_tokens is not None:
            doc.update(usd_per_million_tokens=self.usd_per_million_tokens,
                       usd_per_million_requests=self.usd_per_million_requests,
                       requests_per_s=self.requests_per_s, decode_bound=self.decode_bound)
        return doc


@dataclass(frozen=True)
class PlanResult:
    """Everything a plan produces. ``to_json()`` is the ``advisor.plan/1`` document of ``advisor plan --json``."""

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

    def best(self, kind: str | None = None) -> PlanOption | None:
        """The cheapest option that fits (of a kind, when given)."""
        for o in self.options:
            if o.fits and (kind is None or o.kind == kind):
                return o
        return None

    def pareto_ids(self) -> list[str]:
        """Options no other option beats on both time and cost (fitting options only)."""
        return pareto_front((o.hours, o.cost_usd, o.id) for o in self.options if o.fits)

    def to_json(self) -> dict:
        r = self.request
        return {
            "schema": SCHEMA,
            "model": {"name": self.model_name, "params": self.params, "active_params": self.active_params,
                      "layers": self.arch.layers, "hidden": self.arch.hidden, "heads": self.arch.heads,
                      "kv_heads": self.arch.kv_heads, "vocab": self.arch.vocab},
            "workload": r.workload, "precision": r.precision, "optimizer": r.optimizer,
            "flops_total": self.flops_total,
            "flops_per_token": self.flops_per_token,
            "flops_note": "model FLOPs (6*P_act per trained token, 4 for LoRA/QLoRA, 2 per generated token); "
                          "attention FLOPs not included",
            "attention_flops_per_token": self.attention_flops_per_token,
            "tokens": self.tokens, "budget": self.budget_origin,
            "seq_len": self.seq_len, "context": self.context,
            "memory": {
                "devices": self.parallelism.devices,
                "parallelism": {"tp": self.parallelism.tp, "pp": self.parallelism.pp, "dp": self.parallelism.dp,
                                "zero": self.parallelism.zero},
                "per_device_bytes": self.memory.as_dict(),
            },
            "options": [o.to_json() for o in self.options],
            "pareto": self.pareto_ids(),
            "assumptions": self.assumptions.describe(),
            "calibration": self.calibration,
            "catalog": {"date": self.catalog_date, "prices_as_of": self.prices_as_of},
            "warnings": list(self.warnings),
        }


# ---------------------------------------------------------------- building blocks
def resolve_arch(req: PlanRequest, catalog: Catalog) -> tuple[ModelArch, int, int, str | None]:
    """The architecture, total and active parameters, and the preset name of a request."""
    if req.model is not None:
        try:
            arch = catalog.model(req.model)
        except CatalogError:
            raise PlanInputError("model", f"unknown preset {req.model!r}; presets: {', '.join(sorted(catalog.models))}") from None
        name = req.model
    else:
        arch = generic_arch(req.params)
        name = None
    overrides = {k: getattr(req, k) for k in ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab")
                 if getattr(req, k) is not None}
    if overrides:
        if "heads" in overrides and "kv_heads" not in overrides:
            overrides["kv_heads"] = overrides["heads"]
        try:
            arch = replace(arch, **overrides, head_dim=0 if "hidden" in overrides or "heads" in overrides else arch.head_dim)
        except ValueError as exc:
            raise PlanInputError("heads", str(exc)) from None
    if req.params is not None:
        params = int(req.params)
        active = int(req.active_params) if req.active_params else (
            params if not arch.is_moe or req.model is None else int(params * active_param_count(arch) / param_count(arch)))
    else:
        params = param_count(arch)
        active = int(req.active_params) if req.active_params else active_param_count(arch)
    return arch, params, active, name


def _auto_parallelism(req: PlanRequest, devices: int, tp: int) -> Parallelism:
    zero = req.zero if req.zero is not None else (0 if devices // (tp * req.pp) <= 1 else 3)
    return Parallelism(devices, tp, req.pp, zero)


class _MemoryModel:
    """Memory per device for one request at any device count (memoised per layout)."""

    def __init__(self, req: PlanRequest, arch: ModelArch, params: int, seq_len: int, context: int):
        self.req, self.arch, self.params, self.seq_len, self.context = req, arch, params, seq_len, context
        self.embedding = embedding_params(arch) if req.model or req.vocab else 0
        self._cache: dict[Parallelism, MemoryBreakdown] = {}
        self._layouts: dict[int, list[Parallelism]] = {}
        self._fewest: dict[int, tuple[Parallelism, MemoryBreakdown, bool]] = {}

    def at(self, layout: Parallelism) -> MemoryBreakdown:
        hit = self._cache.get(layout)
        if hit is None:
            r = self.req
            if r.workload == "inference":
                hit = memory.inference_memory(self.arch, self.params, precision=r.precision, devices=layout.devices,
                                              context=self.context, batch=r.batch, quant=r.quant)
            else:
                hit = memory.training_memory(
                    self.arch, self.params, workload=r.workload, precision=r.precision, optimizer=r.optimizer,
                    zero=layout.zero, devices=layout.devices, tp=layout.tp, pp=layout.pp, seq_len=self.seq_len,
                    micro_batch=r.micro_batch, checkpointing=r.checkpointing, lora_rank=r.lora_rank,
                    embedding_params=self.embedding)
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
            return [_auto_parallelism(r, devices, r.tp)] if devices % (r.tp * r.pp) == 0 else []
        return [_auto_parallelism(r, devices, tp) for tp in TP_CHOICES if devices % (tp * r.pp) == 0]

    def fewest_devices(self, capacity: int) -> tuple[Parallelism, MemoryBreakdown, bool]:
        """The smallest layout that fits ``capacity`` bytes, or the largest tried when none fits."""
        hit = self._fewest.get(capacity)
        if hit is None:
            hit = self._fewest[capacity] = self._search(capacity)
        return hit

    def _search(self, capacity: int) -> tuple[Parallelism, MemoryBreakdown, bool]:
        counts = (self.req.gpus,) if self.req.gpus else DEVICE_COUNTS
        last = None
        for n in counts:
            for layout in self.layouts(n):
                mem = self.at(layout)
                last = (layout, mem)
                if mem.total_bytes <= capacity:
                    return layout, mem, True
        if last is None:  # e.g. --gpus not divisible by --tp (validated earlier) or inference
            layout = Parallelism(counts[0], 1, 1, 0)
            return layout, self.at(layout), False
        if self.req.gpus:  # a fixed count: report the least-memory layout
            layout = min(self.layouts(self.req.gpus), key=lambda lay: self.at(lay).total_bytes)
            return layout, self.at(layout), False
        return last[0], last[1], False


def _budget(req: PlanRequest, params: int) -> tuple[float | None, str]:
    if req.tokens is not None:
        return req.tokens, "tokens (--tokens)"
    if req.epochs is not None:
        return req.epochs * req.dataset_tokens, "epochs x dataset tokens (--epochs, --dataset-tokens)"
    if req.hours is not None:
        return None, "hours (--hours): tokens follow from each option's speed"
    if req.workload == "pretrain":
        return 20.0 * params, "default: 20 tokens per parameter (Chinchilla compute-optimal, Hoffmann et al. 2022)"
    if req.workload == "inference":
        return DEFAULT_INFERENCE_TOKENS, "default: 1e8 generated tokens"
    return DEFAULT_FINETUNE_TOKENS, "default: 1e8 fine-tuning tokens"


def _compute_precision(req: PlanRequest) -> str:
    if req.workload == "qlora" or (req.workload == "lora" and req.precision in ("int8", "int4")):
        return "bf16"
    return req.precision


# ---------------------------------------------------------------- the plan
def plan(request: PlanRequest, catalog: Catalog | None = None, calibration=None,
         assumptions: CostAssumptions | None = None) -> PlanResult:
    """Plan a job against every accelerator (or the requested ones) and price every option.

    Args:
        request: validated inputs (``PlanRequest.from_mapping``).
        catalog: defaults to the bundled catalog merged with the user's file.
        calibration: an ``advisor.store.calibration.Calibration`` measured on this machine, or None.
            Its MFU replaces the prior for its accelerator; its ``eta_mem`` replaces the decode prior.
        assumptions: cost assumptions; defaults with ``request.assumptions`` applied.
    Returns:
        A PlanResult with options sorted: fitting first, then by total job cost.
    Raises:
        PlanInputError: an unknown preset, accelerator id or assumption.
    """
    request.validate()
    catalog = catalog or load_catalog()
    if assumptions is None:
        try:
            assumptions = CostAssumptions().with_overrides(**dict(request.assumptions))
        except (TypeError, ValueError) as exc:
            raise PlanInputError("assumptions", str(exc)) from None
    arch, params, active, name = resolve_arch(request, catalog)
    max_ctx = arch.max_context or 1 << 30
    seq_len = request.seq_len or min(2048, max_ctx)
    context = request.context or min(2048, max_ctx)
    warnings = list(catalog.warnings)
    if seq_len > max_ctx and request.model:
        warnings.append(f"seq_len {seq_len} exceeds {name}'s context of {max_ctx} tokens")

    for acc_id in request.accelerator:
        if acc_id not in catalog.accelerators:
            raise PlanInputError("accelerator", f"unknown accelerator {acc_id!r}")
    accels = [catalog.accelerators[a] for a in dict.fromkeys(request.accelerator)] or list(catalog.accelerators.values())

    mem_model = _MemoryModel(request, arch, params, seq_len, context)
    devices0 = request.gpus or 1
    layouts0 = mem_model.layouts(devices0) or [Parallelism(devices0, 1, 1, 0)]
    layout0 = layouts0[0]
    mem0 = mem_model.at(layout0)

    tokens, budget_origin = _budget(request, params)
    per_token = compute.flops_per_token(active, request.workload)
    options: list[PlanOption] = []
    offers_by_accel: dict[str, list] = {}
    for offer in catalog.offers:
        offers_by_accel.setdefault(offer.accelerator_id, []).append(offer)
    for acc in accels:
        options.extend(_options_for(request, acc, catalog, offers_by_accel.get(acc.id, []), mem_model, arch, params,
                                    active, tokens, context, assumptions, calibration))
    options.sort(key=lambda o: (not o.fits, o.cost_usd, o.hours, o.id))

    if tokens is not None:
        flops_total = per_token * tokens if request.workload != "inference" else per_token
    else:
        best = next((o for o in options if o.fits), options[0] if options else None)
        flops_total = per_token * (best.tokens if best else 0.0) if request.workload != "inference" else per_token
    return PlanResult(
        request=request, arch=arch, model_name=name, params=params, active_params=active,
        flops_total=flops_total, flops_per_token=per_token,
        attention_flops_per_token=compute.attention_flops_per_token(arch.layers, seq_len, arch.hidden),
        tokens=tokens, budget_origin=budget_origin, seq_len=seq_len, context=context, parallelism=layout0,
        memory=mem0, options=tuple(options), assumptions=assumptions, catalog_date=catalog.date,
        prices_as_of=catalog.prices_as_of,
        calibration=None if calibration is None else {
            "mfu": calibration.mfu, "eta_mem": calibration.eta_mem, "accelerator_id": calibration.accelerator_id,
            "device": calibration.device, "measured_at": calibration.measured_at, "source": calibration.source},
        warnings=tuple(warnings))


def _spread_note(offer, layout: Parallelism) -> str:
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


def _rig_note(kind: str, layout: Parallelism, a: CostAssumptions) -> str:
    """The home-rig counterpart of ``_spread_note``: a tensor-parallel group larger than one rig."""
    if kind != "home" or layout.tp <= a.home_gpus_per_rig:
        return ""
    return (f"tensor parallelism over {layout.tp} GPUs spans {home_rigs(layout.devices, a)} rigs of "
            f"{a.home_gpus_per_rig}: the time assumes a fast link inside one machine")


def trains(acc: Accelerator) -> bool:
    """Whether an accelerator is meant for training (AWS Inferentia serves models only)."""
    return not acc.id.startswith("inferentia")


def _utilisation(req: PlanRequest, acc: Accelerator, arch: ModelArch, calib) -> tuple[float, str]:
    if req.mfu is not None:
        return req.mfu, "set by the user (--mfu)"
    if calib is not None and calib.mfu and calib.accelerator_id == acc.id:
        return calib.mfu, f"measured on this machine ({calib.source}, {calib.measured_at[:10]})"
    prior = mfu_prior(acc.id, acc.kind, _compute_precision(req), moe=arch.is_moe, workload=req.workload)
    return prior.mfu, f"prior: {prior.origin}"


def _options_for(req, acc: Accelerator, catalog, offers, mem_model: _MemoryModel, arch, params, active, tokens,
                 context, a: CostAssumptions, calib) -> list[PlanOption]:
    precision = _compute_precision(req)
    peak = acc.peak_flops(precision)
    if peak is None or (req.workload != "inference" and not trains(acc)):
        return []
    layout, mem, fits = mem_model.fewest_devices(acc.memory_bytes)
    n = layout.devices
    mfu, mfu_origin = _utilisation(req, acc, arch, calib)
    extra: dict[str, Any] = {}
    if req.workload == "inference":
        eta_mem = ETA_MEM_PRIOR
        if calib is not None and calib.eta_mem and calib.accelerator_id == acc.id:
            eta_mem = calib.eta_mem
        bits = memory.weight_bits(req.precision, req.quant)
        fraction_touched = 1.0
        if active < params:  # MoE: the experts a batch touches, 1 - (1 - k/E)^B
            fraction_touched = 1.0 - (1.0 - active / params) ** req.batch
        weight_read = params * fraction_touched * bits / 8
        kv_value_bytes = 1.0 if req.precision == "fp8" else 2.0
        kv_read = memory.kv_cache_bytes(arch, context, req.batch, kv_value_bytes)
        dec = compute.decode_estimate(
            weight_bytes_read=weight_read, kv_bytes_read=kv_read, active_params=active, batch=req.batch, devices=n,
            mem_bandwidth_bps=acc.mem_bandwidth_bps, peak_flops=peak, prompt_tokens=context,
            output_tokens=req.output_tokens, eta_mem=eta_mem, eta_compute=ETA_COMPUTE_PRIOR)
        tps = dec.tokens_per_s
        extra = {"requests_per_s": dec.requests_per_s, "decode_bound": dec.bound}
        mfu, mfu_origin = eta_mem, ("measured bandwidth efficiency" if eta_mem != ETA_MEM_PRIOR
                                    else "prior: decode bandwidth efficiency 0.7 (docs/method.md: 0.55 to 0.8)")
    else:
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
    out: list[PlanOption] = []

    def serving(total_usd_per_h: float) -> dict:
        if req.workload != "inference":
            return {}
        return {"usd_per_million_tokens": usd_per_million_tokens(total_usd_per_h, tps),
                "usd_per_million_requests": usd_per_million_requests(total_usd_per_h, extra["requests_per_s"]),
                **extra}

    if can_own(acc):
        quotes = []
        if acc.kind in HOME_KINDS:
            quotes.append(home_job_cost(acc, n, hours, a))
        if acc.kind in ONPREM_KINDS:
            quotes.append(onprem_job_cost(acc, n, hours, a))
        for q in quotes:
            be = break_even(q, offers, a)
            per_h = q.total_usd / hours if hours > 0 else 0.0
            out.append(PlanOption(id=q.option_id, kind=q.kind, energy_kwh=q.energy_kwh,
                                  usd_per_device_hour=q.usd_per_device_hour, cost_usd=q.total_usd,
                                  cost_breakdown_usd=q.breakdown.as_dict(),
                                  break_even={"vs": be.vs, "device_hours": be.device_hours, "months": be.months},
                                  note=_rig_note(q.kind, layout, a), **serving(per_h), **common))
    for offer in offers:
        for spot in (False, True):
            if (offer.spot_usd_per_h if spot else offer.on_demand_usd_per_h) is None:
                continue
            if spot and not req.spot_offers:
                continue
            q = cloud_job_cost(offer, n, hours, a, spot=spot, accel=acc)
            per_h = q.usd_per_instance_hour * q.instances
            out.append(PlanOption(id=q.option_id, kind="cloud", energy_kwh=q.energy_kwh,
                                  usd_per_device_hour=q.usd_per_device_hour, cost_usd=q.total_usd,
                                  cost_breakdown_usd=q.breakdown.as_dict(), provider=offer.provider,
                                  instance=offer.instance, spot=spot, instances=q.instances,
                                  price_date=offer.price_date, note=_spread_note(offer, layout),
                                  **serving(per_h), **common))
    return out


SENSITIVITY_PARAMETERS = {
    "tokens": "tokens",
    "mfu": "fraction of dense peak",
    "electricity_usd_per_kwh": "USD/kWh",
    "utilisation": "fraction of owned hours used",
}


def sensitivity(request: PlanRequest, parameter: str, values=None, catalog: Catalog | None = None,
                calibration=None, top: int = 10, base: PlanResult | None = None):
    """How the total job costs and the ranking of the best options move with one parameter.

    Args:
        request: the base plan's request.
        parameter: ``tokens`` (the budget), ``mfu`` (utilisation of the devices), or a cost assumption such as
            ``electricity_usd_per_kwh`` or ``utilisation`` (fraction of owned hours in use).
        values: the parameter values; by default a grid around the base value (a quarter to four times).
        top: follow the ``top`` cheapest fitting options of the base plan.
        base: the plan of ``request`` when the caller has it already (saves planning it again).
    Returns:
        A ``cost.compare.SensitivitySeries`` (plain data via ``as_dict()``) for plotting.
    Raises:
        PlanInputError: an unknown parameter or a bad value.
    """
    from advisor.cost.compare import scaled_grid
    from advisor.cost.compare import sensitivity as _series

    catalog = catalog or load_catalog()
    base = base or plan(request, catalog, calibration)
    follow = [o.id for o in base.options if o.fits][:top]
    if parameter == "tokens":
        if base.tokens is None:
            raise PlanInputError("tokens", "a plan with an --hours budget has no token budget to vary")
        grid = values or scaled_grid(base.tokens)
    elif parameter == "mfu":
        best = base.best()
        grid = values or scaled_grid(best.mfu if best else 0.3, (0.5, 0.75, 1.0, 1.25, 1.5))
    elif parameter in base.assumptions.describe():
        current = getattr(base.assumptions, parameter)
        factors = (0.5, 0.75, 1.0, 1.25, 1.5) if parameter != "utilisation" else (0.25, 0.5, 0.75, 1.0)
        grid = values or tuple(min(current * f, 1.0) if parameter == "utilisation" else current * f for f in factors)
        grid = tuple(dict.fromkeys(grid))
    else:
        raise PlanInputError("sensitivity", f"cannot vary {parameter!r}; choose tokens, mfu or a cost assumption")

    def evaluate(value: float):
        if parameter in ("tokens", "mfu"):
            changed = replace(request, **{parameter: value, **({"hours": None, "epochs": None, "dataset_tokens": None}
                                                                 if parameter == "tokens" else {})})
        else:
            changed = replace(request, assumptions={**dict(request.assumptions), parameter: value})
        try:
            result = plan(changed, catalog, calibration)
        except (PlanInputError, ValueError) as exc:
            raise PlanInputError(parameter, str(exc)) from None
        return [(o.hours, o.cost_usd, o.id) for o in result.options if o.id in follow]

    return _series(evaluate, parameter, grid, SENSITIVITY_PARAMETERS.get(parameter, base.assumptions.assumption(parameter).unit
                                                                          if parameter in base.assumptions.describe() else ""))
