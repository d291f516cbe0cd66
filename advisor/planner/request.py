"""Step 1 of a plan: the request (the job schema's :class:`~advisor.job.Job`) resolved against the catalog.

``PlanRequest`` *is* the job schema's model: its fields, ranges and defaults are declared once in
``advisor/job/schema.py``. This module adds what needs the catalog: the architecture of the model (a preset,
or any model ``advisor.models`` reads: ``hf:ORG/NAME``, a ``config.json`` or model folder, a ``.gguf`` file,
an Ollama or LM Studio name), the token budget, and the precision the compute runs in.
"""

from __future__ import annotations

import functools
import weakref
from dataclasses import dataclass, replace

from advisor.catalog import Accelerator, Catalog
from advisor.catalog.defaults import default_job
from advisor.catalog.frameworks import FrameworkProfile, resolve_framework
from advisor.catalog.runtimes import RuntimeChoice, choose, runtime_data
from advisor.estimate.model import ModelArch, active_param_count, generic_arch, param_count
from advisor.estimate.software import TrainingBehaviours
from advisor.job import Job, JobInputError
from advisor.job.schema import JOB_FIELDS, request_window
from advisor.models import ModelSpecError, resolve_model

PlanRequest = Job
PlanInputError = JobInputError
DEFAULT_FINETUNE_TOKENS = default_job("finetune").tokens
DEFAULT_INFERENCE_TOKENS = default_job("inference").tokens
ARCH_FIELDS = ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab")


@dataclass(frozen=True)
class JobModel:
    """The model of a request as the planner uses it.

    Attributes:
        arch: the architecture (sizes for activations, KV cache and FLOPs).
        params / active_params: total parameters and parameters per token (MoE: the routed share).
        name: the preset id or the resolved model's name (None for a parameter count alone).
        weight_bytes: the exact bytes of the stored weights when inference memory should use them (a GGUF
            file's tensors, a safetensors index), None when ``params x bits`` applies (no files, or a
            ``--quant``/``--precision`` that asks for another format).
        quant: the stored format the files give ("Q4_K_M", "bf16", ...), "" when unknown.
        projector_bytes: of ``weight_bytes``, a multimodal GGUF's projector (``mmproj-*.gguf``): in memory, not in
            a decode step's read.
    """

    arch: ModelArch
    params: int
    active_params: int
    name: str | None
    weight_bytes: int | None = None
    quant: str = ""
    projector_bytes: int = 0


def resolve_job_model(req: PlanRequest, catalog: Catalog) -> JobModel:
    """The model of a request: a preset or any model spec, then the architecture overrides of the request.

    A ``model`` that is not a preset goes through :func:`advisor.models.resolve_model` (offline unless
    ``req.download``). Its exact weight bytes size the inference weights unless the request sets ``quant`` or
    chooses a precision (given on the command line, in a scenario or in the app).

    Raises:
        PlanInputError: an unknown or unreadable model (one line from ``advisor.models``), or architecture
            overrides that do not make a model.
    """
    resolved = None
    if req.model is not None:
        try:
            resolved = resolve_model(req.model, catalog, download=req.download)
        except ModelSpecError as exc:
            raise PlanInputError("model", str(exc)) from None
        arch = resolved.arch
        name = req.model if resolved.source == "preset" else resolved.name
    else:
        arch = generic_arch(req.params)
        name = None
    overrides = {k: getattr(req, k) for k in ARCH_FIELDS if getattr(req, k) is not None}
    if overrides:
        if "heads" in overrides and "kv_heads" not in overrides:
            overrides["kv_heads"] = overrides["heads"]
        try:
            arch = replace(arch, **overrides, head_dim=0 if "hidden" in overrides or "heads" in overrides else arch.head_dim)
        except ValueError as exc:
            raise PlanInputError("heads", " ".join(str(exc).split())) from None
    if req.params is not None:
        params = int(req.params)
        active = int(req.active_params) if req.active_params else (
            params if not arch.is_moe or req.model is None else int(params * active_param_count(arch) / param_count(arch)))
    elif resolved is not None and not overrides:
        params = resolved.params  # exact from the files where they say it
        active = int(req.active_params) if req.active_params else resolved.active_params
    else:
        params = param_count(arch)
        active = int(req.active_params) if req.active_params else active_param_count(arch)
    weight_bytes, projector = None, 0
    if resolved is not None and resolved.weight_bytes and req.params is None and not overrides \
            and req.quant is None and "precision" not in req.sources and "precision" not in req.changed():
        weight_bytes = int(resolved.loaded_bytes)  # a multimodal GGUF's projector loads with it
        projector = int(resolved.projector_bytes)
    return JobModel(arch, params, active, name, weight_bytes, resolved.quant if resolved is not None else "", projector)


def resolve_arch(req: PlanRequest, catalog: Catalog) -> tuple[ModelArch, int, int, str | None]:
    """The architecture, total and active parameters, and the model's name of a request
    (:func:`resolve_job_model` without the weight bytes).

    Raises:
        PlanInputError: an unknown or unreadable model, or architecture overrides that do not make a model.
    """
    m = resolve_job_model(req, catalog)
    return m.arch, m.params, m.active_params, m.name


def budget(req: PlanRequest, params: int) -> tuple[float | None, str]:
    """The token budget of a request (None for an ``--hours`` budget) and where it comes from: what was given,
    else the workload's default job (``resources/defaults.toml``, the same for the CLI, the app, buy and
    scenario files)."""
    if req.tokens is not None:
        return req.tokens, "tokens (--tokens)"
    if req.epochs is not None:
        return req.epochs * req.dataset_tokens, "epochs x dataset tokens (--epochs, --dataset-tokens)"
    if req.hours is not None:
        return None, "hours (--hours): tokens follow from each option's speed"
    job = default_job(req.workload)
    return job.budget(params), f"default: {job.source}"


def compute_precision(req: PlanRequest) -> str:
    """The precision the matrix multiplies run in (a 4-bit QLoRA base computes in bf16)."""
    if req.workload == "qlora" or (req.workload == "lora" and req.precision in ("int8", "int4")):
        return "bf16"
    return req.precision


# ------------------------------------------------------------------------------------------ the software
# The behaviours a job input may set on its own, with how the job's value becomes the behaviour's.
_BEHAVIOUR_INPUTS = {
    "master_weights": str, "optimizer_state": str, "optimizer_in_backward": lambda v: v == "on", "loss": str,
    "logits_fp32_copies": float, "loss_chunks": int, "checkpointing": str,
    "activation_offload": lambda v: v == "on", "kernel_efficiency": float,
}


@dataclass(frozen=True)
class TrainingSoftware:
    """The framework a training plan assumes and the behaviours it plans with.

    Attributes:
        profile: the framework's profile (``resources/frameworks.toml``).
        behaviours: the profile's behaviours for the workload with the job's own settings applied.
        given: the behaviours the job set itself (the rest come from the profile).
        workload: the workload the behaviours are for.
    """

    profile: FrameworkProfile
    behaviours: TrainingBehaviours
    given: tuple[str, ...]
    workload: str

    def sources(self) -> dict[str, str]:
        """Behaviour name -> where it comes from: the framework's documentation, or the job's input."""
        out = self.profile.sources_for(self.workload)
        for name in self.given:
            out[name] = f"set for this job (--{name.replace('_', '-')})"
        if self.profile.kernel_efficiency_origin == "prior" and "kernel_efficiency" not in self.given:
            out["kernel_efficiency"] = "prior, to be fitted: " + out["kernel_efficiency"]
        return out

    def summary(self) -> str:
        """One line: ``assumes Hugging Face transformers: fp32 logits x2.5, checkpointing full, ...``."""
        return f"assumes {self.profile.name}: {self.behaviours.summary()}"

    def to_json(self) -> dict:
        return {"kind": "framework", "id": self.profile.id, "name": self.profile.name,
                "behaviours": self.behaviours.as_dict(), "given": list(self.given), "sources": self.sources(),
                "kernel_efficiency_origin": ("given" if "kernel_efficiency" in self.given
                                             else self.profile.kernel_efficiency_origin),
                "summary": self.summary()}


def request_memo(req: PlanRequest) -> dict:
    """A dict kept on this (frozen) request object for figures derived from it alone. ``model_copy`` copies an
    object's ``__dict__``, so a memo kept there plainly would follow a copy whose fields were changed: this one
    belongs to the object that made it (a weak reference to it), and a copy starts a memo of its own."""
    held = req.__dict__.get("_memo")
    if held is None or held[0]() is not req:
        held = req.__dict__["_memo"] = (weakref.ref(req), {})
    return held[1]


# The fields no layout, memory or timing reads: the budget, which hardware and offers are listed, their prices and
# use, and the notes. The rest key what a plan keeps of its timings between calls (``timing_key``).
PRICE_AND_BUDGET_FIELDS = frozenset({
    "tokens", "epochs", "dataset_tokens", "hours", "accelerator", "own", "owned_options", "jobs_per_month",
    "other_use_hours_per_month", "spot_offers", "assumptions", "notes"})


_TIMING_FIELDS = tuple(f for f in Job.model_fields if f not in PRICE_AND_BUDGET_FIELDS)


_PLAIN = frozenset({str, int, float, bool, type(None)})  # values a key holds as they are


def _frozen(value):
    if value.__class__ in _PLAIN:  # most fields: at once
        return value
    if isinstance(value, dict):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple, set, frozenset)):
        return tuple(_frozen(v) for v in value)
    return value


def timing_key(req: PlanRequest) -> tuple:
    """The request's fields that a layout, its memory or its timing can read (all but
    ``PRICE_AND_BUDGET_FIELDS``), as a hashable tuple: two requests with the same key are timed alike
    (``planner.options``, tests/planner/test_plan_memo.py)."""
    return fields_key(req, _TIMING_FIELDS, "timing_key")


def fields_key(req: PlanRequest, fields: tuple[str, ...], name: str) -> tuple:
    """The values of ``fields`` of a request as a hashable tuple, kept on the request as ``name``
    (``request_memo``): what a kept figure is keyed by (``timing_key``; ``planner.serve.replica_key``)."""
    memo = request_memo(req)
    hit = memo.get(name)
    if hit is None:
        hit = memo[name] = tuple([_frozen(getattr(req, f)) for f in fields])
    return hit


def training_software(req: PlanRequest) -> TrainingSoftware | None:
    """The framework and behaviours of a training request (None for inference): the named or default profile
    (``catalog.frameworks.resolve_framework``), then each behaviour the request sets on its own."""
    if req.workload == "inference":
        return None
    # a plan asks for it once per option: kept on the (frozen) request after the first time
    memo = request_memo(req)
    cached = memo.get("training_software")
    if cached is None:
        given = tuple(n for n in _BEHAVIOUR_INPUTS if getattr(req, n) is not None)
        cached = memo["training_software"] = _software(req.framework, req.workload,
                                                                tuple((n, getattr(req, n)) for n in given))
    return cached


@functools.lru_cache(maxsize=256)
def _software(framework: str | None, workload: str, given: tuple[tuple[str, object], ...]) -> TrainingSoftware:
    profile = resolve_framework(framework, workload)
    values = {n: _BEHAVIOUR_INPUTS[n](v) for n, v in given}
    try:
        behaviours = replace(profile.behaviours_for(workload), **values)
    except ValueError as exc:
        raise PlanInputError(given[0][0] if given else "framework", str(exc)) from None
    return TrainingSoftware(profile, behaviours, tuple(n for n, _ in given), workload)


# ---------------------------------------------------------------------------------------------- serving


@dataclass(frozen=True)
class Lengths:
    """Tokens of one request: the prompt, the output, and the window the KV cache holds (``prompt + output``
    at least)."""

    prompt: int
    output: int
    window: int

    @property
    def mean_cache(self) -> float:
        """The cache's mean length over the output: each step reads ``prompt + i`` tokens, ``i = 0..output-1``."""
        return self.prompt + (self.output - 1) / 2.0


def lengths(req: PlanRequest, max_context: int) -> Lengths:
    """Prompt, output and window of an inference request (``job.schema.request_window``, the rule a serving job
    takes too)."""
    return Lengths(*request_window(req.prompt_tokens, req.output_tokens, req.context, max_context))


def default_runtime(acc: Accelerator, quant: str | None = None, kv_bits: int = 16) -> str:
    """The runtime a serving plan assumes when none is given: llama.cpp on consumer, workstation and Apple parts
    and the CPU (what Ollama and LM Studio run), vLLM on datacenter parts; a ``--quant`` or KV cache that runtime
    does not have picks the first runtime (file order) that has both (``awq`` -> vLLM, ``exl2`` -> ExLlamaV2,
    a 4-bit KV cache on a datacenter part -> llama.cpp)."""
    return _default_runtime(acc.kind, quant, kv_bits)


@functools.lru_cache(maxsize=256)
def _default_runtime(kind: str, quant: str | None, kv_bits: int) -> str:
    rid = "llama.cpp" if kind in ("consumer", "workstation", "apple", "cpu") else "vllm"
    data = runtime_data()

    def has(r) -> bool:
        return (quant is None or quant in r.weight_formats) and r.kv_format(kv_bits) is not None

    if not has(data.runtimes[rid]):
        rid = next((i for i, r in data.runtimes.items() if has(r)), rid)
    return rid


_PRECISION_DEFAULT = JOB_FIELDS["precision"].default


def names_format(req: PlanRequest) -> bool:
    """Whether the request says which weights to run: a ``--quant``, or a ``--precision`` given (a flag, a scenario
    file, the app's form) rather than left at its default."""
    return (req.quant is not None or "precision" in req.model_fields_set or "precision" in req.sources
            or req.precision != _PRECISION_DEFAULT)  # what ``Job.changed`` reads, without the other fields


def as_run(req: PlanRequest, acc: Accelerator, file_weights: bool = False) -> PlanRequest:
    """The request as it runs on ``acc``: an inference job that names no format and no model file takes the file
    its runtime's users download by default (``usual_format`` in ``resources/runtimes.toml``: Q4_K_M under
    llama.cpp, Ollama and LM Studio, 4-bit under MLX); vLLM, SGLang, TensorRT-LLM and transformers keep the
    checkpoint's dtype. The runtime is the request's, else the one ``default_runtime`` picks for the part.
    Every surface (plan, serve, models, the app) asks this one function."""
    if req.workload != "inference" or file_weights or names_format(req):
        return req
    rid = req.runtime or _default_runtime(acc.kind, None, req.kv_cache_bits)
    usual = runtime_data().runtimes[rid].usual_format
    if usual is None:
        return req
    held = request_memo(req).setdefault("as_run", {})  # one copy per format, kept on the (frozen) request
    hit = held.get(usual)
    if hit is None:
        hit = held[usual] = req.model_copy(update={"quant": usual})
    return hit


def runtime_choice(req: PlanRequest, acc: Accelerator) -> RuntimeChoice:
    """The runtime, weight format, KV format and backend a serving option assumes (``catalog.runtimes.choose``).

    Raises:
        PlanInputError: a format or KV cache the runtime does not load (checked at the request for a named runtime).
    """
    return _runtime_choice(req.runtime, req.precision, req.quant, req.kv_cache_bits, req.prefill_kernel,
                           acc.vendor, acc.kind)


@functools.lru_cache(maxsize=1024)
def _runtime_choice(runtime: str | None, precision: str, quant: str | None, kv_bits: int,
                    prefill_kernel: str | None, vendor: str, kind: str) -> RuntimeChoice:
    """:func:`runtime_choice` of the fields it reads (the bundled runtimes are read once and a choice is frozen,
    so one object serves every option asking again: a serving plan asks a few times per accelerator)."""
    rid = runtime or _default_runtime(kind, quant, kv_bits)
    try:
        choice = choose(rid, precision, quant, kv_bits, vendor, kind)
    except KeyError as exc:
        raise PlanInputError("quant" if "load" in exc.args[0] else "kv_cache_bits", exc.args[0]) from None
    return replace(choice, prefill_kernel=prefill_kernel) if prefill_kernel else choice
