"""The one job schema: every input of a plan declared once, with its type, unit, default, range and help.

The ``advisor plan`` flags, the scenario file's ``[plan]`` keys, the JSON echo of a plan's inputs
(``"inputs"`` of ``advisor.plan/1``), the reports' inputs table and the app's Planner form
(``advisor/gui/widgets/plan_form.py``: a widget per field by kind, grouped, shown for its workloads) are built
from :class:`Job`. pydantic v2 does the validation (one pass in pydantic-core per
request, never per option); the cross-field rules are :func:`_check_rules`.

How to add an input (one place):
    1. Add a field to :class:`Job` with ``_field(default, unit=..., help=..., workloads=..., ge/gt/le=...)``
       (``flag=None`` for a value that is not a command-line flag; ``group`` orders ``--help``).
    2. Read it in the planner as ``request.<name>`` (``PlanRequest`` is :class:`Job`).
    That is all: the CLI flag ``--<name-with-dashes>``, the scenario key ``<name>``, the JSON echo
    (``"inputs"``) and the report row follow; ``tests/job/test_generated.py`` checks each of them against
    ``JOB_FIELDS``, and ``tests/gui/test_plan_form_keys.py`` the app's form (a field the form should not
    show goes in its ``NOT_IN_FORM`` with the reason; a friendlier row label in its ``LABELS``). A new cost assumption is a field of
    ``CostAssumptions`` (``advisor/cost/assumptions.py``): it is then a ``--set`` name, a key of a scenario's
    ``[assumptions]`` and a row of every assumptions table; list it in ``ASSUMPTION_FLAGS`` for a flag of its own.

The API others use:
    ``Job.from_mapping(values)`` validates (raises :class:`JobInputError` naming the field);
    ``JOB_FIELDS`` (name -> :class:`FieldMeta`, declaration order), ``field_meta(name)``,
    ``job.changed()`` (the fields that differ from their default), ``ASSUMPTION_FLAGS`` (the cost
    assumptions of ``advisor/cost/assumptions.py`` that get a flag of their own; the rest go through
    ``--set NAME=VALUE``), ``assumption_meta(name)``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from advisor.catalog.frameworks import bundled_frameworks, canonical_framework
from advisor.catalog.runtimes import runtime_data
from advisor.catalog.stacks import STACKS
from advisor.cost.assumptions import Assumption, CostAssumptions

WORKLOADS = ("pretrain", "finetune", "lora", "qlora", "inference")
TRAINING = ("pretrain", "finetune", "lora", "qlora")
ALL = WORKLOADS
PRECISIONS = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8", "int4")
OPTIMIZERS = ("adamw", "adamw-8bit", "sgd", "adafactor")
CHECKPOINTING = ("none", "selective", "full")
# Weight formats and inference runtimes are data (resources/runtimes.toml, advisor.catalog.runtimes).
QUANTS: tuple[str, ...] = tuple(runtime_data().formats)
RUNTIMES: tuple[str, ...] = tuple(runtime_data().runtimes)
MAX_DEVICES = 16384
# The window of an inference request with neither --prompt-tokens nor --context: 2048 tokens (capped at the
# model's), the prompt being what the output leaves of it (request_window).
DEFAULT_CONTEXT = 2048
# Training frameworks (resources/frameworks.toml): the ids a plan names, and the aliases that resolve to them.
FRAMEWORKS = tuple(bundled_frameworks())
FRAMEWORK_ALIASES = tuple(a for p in bundled_frameworks().values() for a in p.aliases)
_FROM_FRAMEWORK = "default: from the framework"
# Cost assumptions with a flag of their own (help, unit and range come from CostAssumptions).
ASSUMPTION_FLAGS = ("electricity_usd_per_kwh", "utilisation", "hours_per_day", "lifetime_years", "spot")
_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._+\-]{0,127}$"
_OWN_PATTERN = r"^([1-9][0-9]{0,4}x)?[A-Za-z0-9][A-Za-z0-9._+\-]{0,127}$"  # 2xrtx-3090 or rtx-3090
_TEXT_PATTERN = r"^[^\x00-\x1f\x7f]{1,4096}$"  # one line of printable text (a preset id, a path, hf:ORG/NAME)


class JobInputError(ValueError):
    """Invalid job input; ``str()`` is one line naming the field and why; ``field`` is the name."""

    def __init__(self, field_name: str, message: str):
        super().__init__(f"{field_name}: {message}")
        self.field = field_name


@dataclass(frozen=True)
class FieldMeta:
    """What the schema says about one input.

    Attributes:
        name: the field name (scenario key; the flag with ``_`` for ``-``).
        kind: ``int``, ``number``, ``text``, ``choice``, ``bool``, ``ids`` (list of ids) or ``table``.
        default: the default (None: chosen by the planner, see ``help``).
        unit: the unit of the value ("" for none).
        help: one line for people (``--help``, tooltips, reports).
        workloads: the workloads the input applies to.
        flag: the long command-line flag (``--seq-len``), or None when it has none.
        scenario: whether a scenario file stores it (``[plan]`` key, or the ``assumptions``/``notes`` table).
        group: the ``--help`` group.
        choices: the allowed values of a ``choice``.
        minimum / maximum: the allowed range (inclusive unless ``exclusive_minimum``).
    """

    name: str
    kind: str
    default: Any
    unit: str
    help: str
    workloads: tuple[str, ...]
    flag: str | None
    group: str
    scenario: bool = True
    choices: tuple = ()
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False

    def range_text(self) -> str:
        """``between 1 and 16384``, ``above 0 and at most 1``, ``one of a, b`` (for messages and help)."""
        if self.choices:
            return "one of " + ", ".join(str(c) for c in self.choices)
        if self.minimum is None and self.maximum is None:
            return ""
        lo, hi = _num(self.minimum), _num(self.maximum)
        low = f"above {lo}" if self.exclusive_minimum else f"at least {lo}"
        if self.maximum is None:
            return low
        if self.exclusive_minimum:
            return f"{low} and at most {hi}"
        return f"between {lo} and {hi}"


def _num(x: float | None) -> str:
    """A bound as people read it: ``16384``, ``0.5``, ``1e+15``."""
    if x is None:
        return ""
    if float(x).is_integer() and abs(x) < 1e9:
        return str(int(x))
    return f"{x:g}"


def _field(default: Any, *, unit: str = "", help: str, workloads: tuple[str, ...] = ALL, group: str = "job",
           flag: str | None = "", scenario: bool = True, ge: float | None = None, gt: float | None = None, le: float | None = None,
           choices: tuple[str, ...] = (), **kw: Any) -> Any:
    """A pydantic field carrying the schema's metadata (``flag=""``: ``--<name>``; None: no flag; ``choices``:
    the values an ``ids`` list may hold)."""
    extra = {"unit": unit, "workloads": list(workloads), "group": group, "flag": flag, "scenario": scenario}
    if choices:
        extra["choices"] = list(choices)
    return Field(default, description=help, ge=ge, gt=gt, le=le, json_schema_extra=extra, **kw)




def _checked_tuple(value: Any, ok: Callable[[Any], bool], why: Callable[[Any], str]) -> Any:
    """A string or list of strings as a tuple, each passing ``ok`` (else ValueError with ``why(item)``)."""
    if isinstance(value, str):
        value = (value,)
    if isinstance(value, list):
        value = tuple(value)
    if isinstance(value, tuple):
        for v in value:
            if not ok(v):
                raise ValueError(why(v))
    return value

class Job(BaseModel):
    """The inputs of one plan. Field names are the ``advisor plan`` long flags with ``-`` as ``_``.

    ``None`` means "choose for me": the fewest devices that fit, ZeRO-3 when sharding is needed, a default
    budget (20 tokens per parameter for pretraining (Hoffmann et al. 2022), 1e8 tokens otherwise).
    Build with :meth:`from_mapping` (it also checks the rules between fields); instances are frozen.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, allow_inf_nan=False,
                              validate_default=False, arbitrary_types_allowed=False)

    # ---- model
    model: str | None = _field(None, help="a preset id (advisor catalog list models), hf:ORG/NAME (the local Hugging "
                               "Face cache), a config.json or model folder, a .gguf file, or an Ollama or LM Studio "
                               "model name", group="model", pattern=_TEXT_PATTERN)
    params: float | None = _field(None, unit="parameters", help="parameter count, e.g. 7e9 or 7B", group="model",
                                  ge=1e6, le=1e15)
    active_params: float | None = _field(None, unit="parameters", help="parameters active per token (MoE)",
                                         group="model", ge=1e6, le=1e15)
    layers: int | None = _field(None, help="transformer layers (architecture, for activations and KV cache)",
                                group="model", ge=1, le=10_000)
    hidden: int | None = _field(None, help="hidden size (architecture)", group="model", ge=1, le=1_000_000)
    heads: int | None = _field(None, help="attention heads (architecture)", group="model", ge=1, le=100_000)
    kv_heads: int | None = _field(None, help="key/value heads, fewer than heads for GQA (architecture)",
                                  group="model", ge=1, le=100_000)
    ffn: int | None = _field(None, help="feed-forward size (architecture)", group="model", ge=1, le=10_000_000)
    vocab: int | None = _field(None, unit="tokens", help="vocabulary size (architecture)", group="model", ge=1,
                               le=10_000_000)
    download: bool = _field(False, help="allow fetching a Hugging Face config.json over HTTPS when hf:ORG/NAME is not "
                            "cached (nothing else opens a connection)", group="model")
    # ---- job
    workload: Literal["pretrain", "finetune", "lora", "qlora", "inference"] = _field(
        "pretrain", help="what the job does")
    precision: Literal["fp32", "tf32", "bf16", "fp16", "fp8", "int8", "int4"] = _field(
        "bf16", help="numeric format of the compute (training in bf16/fp16/fp8 means mixed precision)")
    quant: Literal[QUANTS] | None = _field(
        None, help="inference weight format (q4_k_m, awq, gptq, exl2, fp8, mxfp4, nvfp4, q4f16_1, mlx-4bit, ...; "
        "bits per weight in resources/runtimes.toml); must be one the --runtime loads", workloads=("inference",))
    optimizer: Literal["adamw", "adamw-8bit", "sgd", "adafactor"] = _field(
        "adamw", help="optimizer (its state is part of the memory)", workloads=TRAINING)
    lora_rank: int = _field(16, help="LoRA/QLoRA adapter rank", workloads=("lora", "qlora"), ge=1, le=65_536)
    lora_dropout: float = _field(0.0, help="LoRA dropout probability; above 0 each adapted matrix keeps a dropped-out "
                                 "copy of its input (PEFT's default 0)", workloads=("lora", "qlora"), ge=0, le=0.99)
    lora_targets: Literal["all-linear", "attention"] = _field(
        "all-linear", help="matrices LoRA adapts: every linear layer (attention, feed-forward, each expert) or the "
        "attention only", workloads=("lora", "qlora"))
    zero: Literal[0, 1, 2, 3] | None = _field(
        None, help="ZeRO stage (3 = FSDP full shard); default: 0 on one device, 3 when sharding over several",
        workloads=TRAINING)
    gpus: int | None = _field(None, unit="devices", help="total devices; default: the fewest that fit, per accelerator",
                              ge=1, le=MAX_DEVICES)
    tp: int | None = _field(None, unit="devices", help="tensor-parallel degree (default: the least that fits)",
                            ge=1, le=1024)
    pp: int = _field(1, unit="stages", help="pipeline-parallel degree", ge=1, le=1024)
    seq_len: int | None = _field(None, unit="tokens", help="training sequence length (default 2048, capped at the "
                                 "model's)", workloads=TRAINING, ge=1, le=16_777_216)
    micro_batch: int = _field(1, unit="sequences", help="micro-batch per device", workloads=TRAINING, ge=1, le=65_536)
    checkpointing: Literal["none", "selective", "full"] | None = _field(
        None, help=f"activation checkpointing ({_FROM_FRAMEWORK})", workloads=TRAINING)
    grad_accum: int = _field(1, unit="micro-batches", help="gradient accumulation steps per optimizer step (same "
                             "memory as one micro-batch)", workloads=TRAINING, ge=1, le=65_536)
    optimizer_offload: bool = _field(False, help="keep the optimizer states in host RAM (ZeRO-Offload): less GPU "
                                     "memory, about 30 % slower", workloads=TRAINING)
    # ---- training software (docs/method.md, "The training framework"): a profile, each behaviour settable
    framework: Literal[FRAMEWORKS] | None = _field(
        None, help="training framework, whose behaviours decide memory and speed (default: transformers for "
        "fine-tunes, megatron for pretraining; aliases: " + ", ".join(FRAMEWORK_ALIASES) + ")", group="software",
        workloads=TRAINING)
    master_weights: Literal["fp32", "bf16"] | None = _field(
        None, help=f"an fp32 master copy of the weights, or pure bf16 ({_FROM_FRAMEWORK})", group="software",
        workloads=("pretrain", "finetune"))
    optimizer_state: Literal["fp32", "bf16", "8bit", "paged-8bit"] | None = _field(
        None, help="format of the optimizer's moments; paged-8bit pages them to host RAM (bitsandbytes paged "
        f"optimizers) ({_FROM_FRAMEWORK})", group="software", workloads=TRAINING)
    optimizer_in_backward: Literal["on", "off"] | None = _field(
        None, help=f"step each parameter inside the backward: no full gradient buffer ({_FROM_FRAMEWORK})",
        group="software", workloads=("pretrain", "finetune"))
    loss: Literal["full", "chunked", "fused"] | None = _field(
        None, help="how the loss holds the logits: full fp32 copies, chunked cross-entropy, or a fused linear "
        f"cross-entropy that never holds them all ({_FROM_FRAMEWORK})", group="software", workloads=TRAINING)
    logits_fp32_copies: float | None = _field(
        None, unit="copies", help=f"fp32 copies of the logits a full loss holds ({_FROM_FRAMEWORK})",
        group="software", workloads=TRAINING, ge=0.5, le=8)
    loss_chunks: int | None = _field(None, unit="chunks", help=f"chunks of a chunked or fused loss ({_FROM_FRAMEWORK})",
                                     group="software", workloads=TRAINING, ge=1, le=4096)
    activation_offload: Literal["on", "off"] | None = _field(
        None, help=f"keep the checkpointed activations in host RAM ({_FROM_FRAMEWORK})", group="software",
        workloads=TRAINING)
    kernel_efficiency: float | None = _field(
        None, unit="x plain PyTorch", help="speed of the framework's kernels against plain PyTorch, a factor on the "
        f"utilisation ({_FROM_FRAMEWORK})", group="software", workloads=TRAINING, ge=0.1, le=5)
    # ---- budget
    tokens: float | None = _field(None, unit="tokens", help="training tokens (inference: generated tokens)",
                                  group="budget", ge=1, le=1e16)
    epochs: float | None = _field(None, unit="epochs", help="epochs over --dataset-tokens", group="budget",
                                  workloads=TRAINING, gt=0, le=1e4)
    dataset_tokens: float | None = _field(None, unit="tokens", help="tokens in the dataset", group="budget",
                                          workloads=TRAINING, ge=1, le=1e16)
    hours: float | None = _field(None, unit="hours", help="wall-clock hours instead of a token budget",
                                 group="budget", gt=0, le=1e6)
    # ---- inference
    context: int | None = _field(None, unit="tokens", help="context window per request: the prompt and output tokens "
                                 "the KV cache holds (default: --prompt-tokens + --output-tokens, else 2048 capped "
                                 "at the model's, the prompt being what the output leaves)", group="inference",
                                 workloads=("inference",), ge=1, le=16_777_216)
    prompt_tokens: int | None = _field(None, unit="tokens", help="prompt tokens per request (prefill, time to first "
                                       "token; the KV cache then grows over the output); default: --context less "
                                       "--output-tokens", group="inference", workloads=("inference",), ge=1,
                                       le=16_777_216)
    batch: int = _field(1, unit="requests", help="concurrent requests", group="inference", workloads=("inference",),
                        ge=1, le=1_000_000)
    output_tokens: int = _field(256, unit="tokens", help="generated tokens per request", group="inference",
                                workloads=("inference",), ge=1, le=16_777_216)
    runtime: Literal[RUNTIMES] | None = _field(
        None, help="inference runtime: its weight formats, --precision int4 meaning, kernels and efficiencies "
        "(ollama and lm-studio run llama.cpp; default: llama.cpp on consumer, workstation and Apple parts, vllm on "
        "datacenter parts, or the first that loads --quant)", group="inference", workloads=("inference",))
    kv_cache_bits: Literal[16, 8, 4] = _field(16, unit="bits", help="bits per KV-cache value (8: llama.cpp "
                                              "-ctk q8_0 -ctv q8_0)", group="inference", workloads=("inference",))
    gpu_layers: int | None = _field(None, unit="layers", help="layers on the GPU, the rest on the CPU (llama.cpp "
                                    "-ngl N); default: all", group="inference", workloads=("inference",), ge=0,
                                    le=10_000)
    prefill_kernel: Literal["mmq", "cublas"] | None = _field(
        None, help="how llama.cpp multiplies a quantised prompt on NVIDIA: mmq (its int8 kernels, the default since "
        "June 2024) or cublas (dequantised to fp16 for cuBLAS: a build with GGML_CUDA_FORCE_CUBLAS, or older)",
        group="inference", workloads=("inference",))
    # ---- hardware and cost
    accelerator: tuple[str, ...] = _field((), help="restrict the options to these accelerator ids (repeatable)",
                                          group="hardware", max_length=256)
    stack: tuple[str, ...] = _field((), help="software stacks your code runs on (repeatable: " + ", ".join(STACKS)
                                    + "); default: PyTorch CUDA and ROCm, or the --runtime's stacks for "
                                    "inference; options on other stacks are marked and ranked after",
                                    group="hardware", max_length=len(STACKS), choices=STACKS)
    own: tuple[str, ...] = _field((), help="GPUs you own, priced at what running the job costs you: "
                                  "COUNTxACCELERATOR, e.g. 2xrtx-3090 (repeatable)", group="hardware",
                                  max_length=64)
    owned_options: bool = _field(True, help="list this machine's GPUs and those you own (--no-own leaves them out)",
                                 group="hardware", flag="--no-own")
    jobs_per_month: float | None = _field(None, unit="jobs a month", help="how often the job runs: owned, home "
                                          "and on-prem hardware carries its monthly costs over this use, and a "
                                          "reserved cloud term is spread over it (default: not stated, the "
                                          "assumptions' hours per day and utilisation)", group="hardware", gt=0,
                                          le=100_000)
    other_use_hours_per_month: float = _field(0.0, unit="hours a month", help="other work on the same hardware a "
                                              "month, sharing its monthly costs (with --jobs-per-month)",
                                              group="hardware", ge=0, le=744)
    # at least 10 W: the smallest board power in the catalog is the T4's 70 W, and no board takes a limit near
    # zero (a limit of 1e-300 W gave a 183-digit number of years); the flag, --set, a scenario and --json read it here
    power_limit_w: float | None = _field(None, unit="W", help="power limit your GPUs, a rig or a server run at "
                                         "(nvidia-smi -pl), below their board power: the tensor units clock down and "
                                         "draw less (docs/method.md, 'Power limit'); cloud instances keep theirs; "
                                         "default: the board power", group="hardware", ge=10, le=5000)
    mfu: float | None = _field(None, unit="fraction of dense peak", help="override the utilisation prior",
                               group="hardware", gt=0, le=1)
    spot_offers: bool = _field(True, help="list cloud spot offers (--no-spot leaves them out)", group="hardware",
                               flag="--no-spot")
    assumptions: dict[str, Any] = _field({}, help="cost assumptions by name (advisor/cost/assumptions.py)",
                                         group="hardware", flag=None)
    notes: dict[str, Any] = _field({}, help="free-form notes kept with a scenario", group="notes", flag=None)
    sources: dict[str, str] = _field({}, help="where each value given came from: a flag, --set, a scenario file, "
                                     "an app setting (by field or assumption name)", group="notes", flag=None,
                                     scenario=False)

    # ------------------------------------------------------------------ lax where files and flags need it
    @field_validator("layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "lora_rank", "gpus", "tp", "pp",
                     "seq_len", "micro_batch", "context", "prompt_tokens", "batch", "output_tokens", "zero",
                     "grad_accum", "kv_cache_bits", "gpu_layers", "loss_chunks", mode="before")
    @classmethod
    def _whole_float(cls, value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError("must be a whole number, not true/false")
        if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
            return int(value)
        return value

    @field_validator("framework", mode="before")
    @classmethod
    def _framework_alias(cls, value: Any) -> Any:
        if isinstance(value, str):
            try:
                return canonical_framework(value.strip().lower())
            except KeyError:
                return value
        return value

    @field_validator("runtime", mode="before")
    @classmethod
    def _runtime_alias(cls, value: Any) -> Any:
        """ollama, lm-studio and the other aliases name the runtime they run (case-insensitive); an unknown name
        is refused with every known one."""
        if isinstance(value, str):
            data = runtime_data()
            rid = data.aliases.get(value.strip().lower())
            if rid is None:
                known = [rid + (f" (also {', '.join(rt.aliases)})" if rt.aliases else "")
                         for rid, rt in data.runtimes.items()]
                raise ValueError(f"unknown runtime {value!r}; known: {'; '.join(known)}")
            return rid
        return value

    @field_validator("quant", mode="before")
    @classmethod
    def _quant_case(cls, value: Any) -> Any:
        """GGUF types are written upper case too (Q4_K_M)."""
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("own", mode="before")
    @classmethod
    def _owned(cls, value: Any) -> Any:
        return _checked_tuple(value, lambda v: isinstance(v, str) and re.match(_OWN_PATTERN, v),
                              lambda v: f"not COUNTxACCELERATOR (like 2xrtx-3090): {v!r}")

    @field_validator("accelerator", mode="before")
    @classmethod
    def _ids(cls, value: Any) -> Any:
        value = _checked_tuple(value, lambda v: isinstance(v, str) and re.match(_ID_PATTERN, v),
                               lambda v: f"not an accelerator id: {v!r}")
        return tuple(dict.fromkeys(value)) if isinstance(value, tuple) else value

    @field_validator("stack", mode="before")
    @classmethod
    def _stacks(cls, value: Any) -> Any:
        value = _checked_tuple(value, lambda v: v in STACKS,
                               lambda v: f"unknown software stack {v!r}: one of {', '.join(STACKS)}")
        return tuple(dict.fromkeys(value)) if isinstance(value, tuple) else value

    # ------------------------------------------------------------------ building
    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> Job:
        """Build and validate a job from flag/scenario values (``None`` values are left at their default).

        Raises:
            JobInputError: naming the first bad field and why (unknown keys included).
        """
        if not isinstance(values, Mapping):
            raise JobInputError("plan", "must be a table of name = value")
        kwargs = {k: v for k, v in values.items() if v is not None}
        try:
            job = cls.model_validate(kwargs)
        except ValidationError as exc:
            raise _input_error(exc) from None
        _check_rules(job)
        return job

    def changed(self) -> dict[str, Any]:
        """The fields that differ from their default, in declaration order (what a scenario file saves;
        ``sources`` is left out)."""
        out = {}
        for name, meta in JOB_FIELDS.items():
            value = getattr(self, name)
            if value != meta.default and meta.scenario:
                out[name] = list(value) if isinstance(value, tuple) else value
        return out

    def check_rules(self) -> None:
        """Check the rules between fields again (a request changed with ``model_copy``). Raises JobInputError."""
        _check_rules(self)


def _check_rules(job: Job) -> None:
    """The rules between fields that a per-field range cannot say. Raises JobInputError naming the field."""
    if job.model is None and job.params is None:
        raise JobInputError("model", "give a preset (--model) or a parameter count (--params)")
    if job.active_params and job.params and job.active_params > job.params:
        raise JobInputError("active_params", "cannot exceed params")
    if (job.epochs is None) != (job.dataset_tokens is None):
        raise JobInputError("epochs", "--epochs and --dataset-tokens go together")
    budgets = [n for n in ("tokens", "epochs", "hours") if getattr(job, n) is not None]
    if len(budgets) > 1:
        raise JobInputError(budgets[1], f"give one budget: --tokens, --epochs or --hours (got {', '.join(budgets)})")
    if job.epochs is not None and job.epochs * job.dataset_tokens > 1e16:
        raise JobInputError("epochs", "epochs x dataset tokens must be at most 1e16 tokens")
    tp = job.tp or 1
    if tp * job.pp > MAX_DEVICES:
        raise JobInputError("tp", f"tp x pp must be at most {MAX_DEVICES} devices")
    if job.gpus is not None and job.gpus % (tp * job.pp):
        raise JobInputError("gpus", f"{job.gpus} devices cannot be split into tp={tp} x pp={job.pp}")
    if job.workload not in ("inference", "qlora") and job.precision in ("int8", "int4"):
        raise JobInputError("precision", f"{job.precision} is for inference; 4-bit training is --workload qlora")
    if job.workload == "inference" and job.quant is None and job.precision == "tf32":
        raise JobInputError("precision", "tf32 is a training precision; use fp32, bf16, fp8, int8 or int4")
    if job.optimizer == "adamw-8bit" and job.optimizer_state in ("fp32", "bf16"):
        raise JobInputError("optimizer_state", f"adamw-8bit keeps 8-bit states, not {job.optimizer_state}; "
                            "use --optimizer adamw with it")
    if job.workload == "inference":
        _check_inference(job)
    if job.assumptions:  # none given: the defaults, valid by construction
        try:
            CostAssumptions().with_overrides(**job.assumptions)
        except (TypeError, ValueError) as exc:
            raise JobInputError("assumptions", " ".join(str(exc).split())) from None


def _check_inference(job: Job) -> None:
    """Prompt, output and window agree; the runtime loads the format and the KV cache asked for."""
    if job.context is not None and job.prompt_tokens is not None \
            and job.prompt_tokens + job.output_tokens > job.context:
        raise JobInputError("context", f"{job.context} tokens cannot hold --prompt-tokens {job.prompt_tokens} and "
                                       f"--output-tokens {job.output_tokens}; give at least "
                                       f"{job.prompt_tokens + job.output_tokens} or leave --context out")
    if job.runtime is None:
        return
    rt = runtime_data().runtimes[job.runtime]
    if job.quant is not None and job.quant not in rt.weight_formats:
        raise JobInputError("quant", f"{rt.id} does not load {job.quant}; it loads {', '.join(rt.weight_formats)}")
    if job.gpu_layers is not None and not rt.offloads_layers:
        raise JobInputError("gpu_layers", f"{rt.id} keeps every layer on the GPU; layers on the CPU are llama.cpp's "
                                          "-ngl (--runtime llama.cpp)")
    if job.prefill_kernel is not None and not any(b.prefill_peak_quantized == "int8" for b in rt.backends):
        raise JobInputError("prefill_kernel", f"{rt.id} has one prompt kernel per backend; --prefill-kernel is "
                                              "llama.cpp's on NVIDIA (--runtime llama.cpp)")
    if rt.kv_format(job.kv_cache_bits) is None:
        raise JobInputError("kv_cache_bits", f"{rt.id} has no {job.kv_cache_bits}-bit KV cache; its KV caches: "
                            + ", ".join(f"{name} ({bits} bits)" for bits, name in rt.kv_formats))


def _input_error(exc: ValidationError) -> JobInputError:
    """The first pydantic error as one line naming the field, with the range the schema allows."""
    err = exc.errors(include_url=False)[0]
    loc = [str(p) for p in err.get("loc", ())]
    name = loc[0] if loc else "plan"
    got = err.get("input")
    kind = err.get("type", "")
    if kind == "extra_forbidden":
        return JobInputError(name, "unknown plan field")
    meta = JOB_FIELDS.get(name)
    if meta is None:
        return JobInputError(name, err.get("msg", "invalid"))
    if isinstance(got, int) and not isinstance(got, bool) and abs(got) >= 10**15:
        shown = f"{float(got):g}"
    else:
        shown = repr(got) if len(repr(got)) <= 60 else repr(got)[:57] + "..."
    if meta.kind in ("int", "number"):
        what = "a whole number" if meta.kind == "int" else "a finite number"
        return JobInputError(name, f"must be {what} {meta.range_text()}, got {shown}")
    if meta.kind == "choice":
        if kind == "value_error":  # a validator's own message (an unknown runtime lists the aliases too)
            return JobInputError(name, err.get("msg", "invalid").removeprefix("Value error, "))
        aliases = f" (or {', '.join(FRAMEWORK_ALIASES)})" if name == "framework" else ""
        return JobInputError(name, f"must be {meta.range_text()}{aliases}, got {shown}")
    if meta.kind == "bool":
        return JobInputError(name, f"must be true or false, got {shown}")
    msg = err.get("msg", "invalid")
    msg = msg.removeprefix("Value error, ")
    if meta.kind == "ids":
        return JobInputError(name, msg)
    return JobInputError(".".join(loc), f"{msg[:1].lower()}{msg[1:]}, got {shown}")


# ---------------------------------------------------------------------- metadata for the rest of the house
def _kind(annotation: Any) -> tuple[str, tuple]:
    inner = annotation
    if get_origin(annotation) not in (Literal, tuple, dict):  # X | None
        inner = next((a for a in get_args(annotation) if a is not type(None)), annotation)
    if get_origin(inner) is Literal:
        return "choice", get_args(inner)
    if inner is bool:
        return "bool", ()
    if inner is int:
        return "int", ()
    if inner is float:
        return "number", ()
    if inner is str:
        return "text", ()
    if get_origin(inner) is tuple:
        return "ids", ()
    if get_origin(inner) is dict:
        return "table", ()
    raise TypeError(f"job schema: no kind for {annotation!r}")


def _build_fields(model: type[BaseModel] | None = None) -> dict[str, FieldMeta]:
    """The schema's records of a job model's fields (:class:`Job` by default; ``advisor.job.serve`` builds its
    own from the same declarations)."""
    out = {}
    for name, info in (model or Job).model_fields.items():
        extra = info.json_schema_extra or {}
        kind, choices = _kind(info.annotation)
        choices = choices or tuple(extra.get("choices", ()))
        lo = hi = None
        exclusive = False
        for m in info.metadata:
            if getattr(m, "ge", None) is not None:
                lo = m.ge
            if getattr(m, "gt", None) is not None:
                lo, exclusive = m.gt, True
            if getattr(m, "le", None) is not None:
                hi = m.le
        flag = extra.get("flag")
        if flag == "":
            flag = "--" + name.replace("_", "-")
        default = info.get_default(call_default_factory=True)
        out[name] = FieldMeta(name=name, kind=kind, default=default, unit=extra.get("unit", ""),
                              help=info.description or "", workloads=tuple(extra.get("workloads", ALL)),
                              flag=flag, group=extra.get("group", "job"), scenario=extra.get("scenario", True),
                              choices=choices, minimum=lo, maximum=hi,
                              exclusive_minimum=exclusive)
    return out


JOB_FIELDS: dict[str, FieldMeta] = _build_fields()


def field_meta(name: str) -> FieldMeta:
    """The schema's record of one input. Raises KeyError for an unknown name."""
    return JOB_FIELDS[name]


@cache
def assumption_meta(name: str) -> Assumption:
    """Default value, unit, origin and help of one cost assumption (``advisor/cost/assumptions.py``)."""
    return CostAssumptions().assumption(name)


def json_schema() -> dict:
    """The JSON schema of a job (pydantic's), for tools and forms."""
    return Job.model_json_schema()


def request_window(prompt_tokens: int | None, output_tokens: int, context: int | None,
                   max_context: int | None = None) -> tuple[int, int, int]:
    """Prompt, output and window (the tokens the KV cache holds) of one inference request, the one rule the plan
    and a serving job take (docs/method.md, "Inference speed").

    ``--prompt-tokens`` with ``--output-tokens`` give the window (unless ``--context`` is larger); ``--context``
    alone is the window and the prompt what the output leaves of it (``DEFAULT_CONTEXT`` without one, capped at the
    model's ``max_context``). A window no longer than the output is read as the prompt.
    """
    out = output_tokens
    if prompt_tokens is not None:
        return prompt_tokens, out, max(context or 0, prompt_tokens + out)
    window = context or (min(DEFAULT_CONTEXT, max_context) if max_context else DEFAULT_CONTEXT)
    if window > out:
        return window - out, out, window
    return window, out, window + out
