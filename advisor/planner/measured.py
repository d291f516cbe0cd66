"""Plan a published measurement with the project's own estimate, to compare the two (the calibration set,
``advisor.estimate.calibration``; docs/method.md, "Calibration on published measurements").

Each measurement becomes a plan request of its setup (model, accelerator, device count, software, format,
precision, batch, prompt and output lengths, sequence length, checkpointing). The figure is read from the
option of that accelerator and count: training tokens/s per device, fine-tune peak memory per device,
decode tokens/s, prompt tokens/s, served output tokens/s, time to first token. The raw prediction is
taken with the calibration off (``planner.calibrated.raw_estimates``), so the fit never sees its own output.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.estimate.calibration import DERIVED, Measurement, Observation, efficiency_class, format_bits
from advisor.job import JOB_FIELDS, JobInputError
from advisor.planner.calibrated import raw_estimates, serving_class, training_class
from advisor.planner.request import PlanRequest

# The software named in a measurement -> the runtime or framework flag the planner knows (where it has one).
RUNTIME_OF = {"llama.cpp": "llama.cpp", "exllama": "exllamav2", "mlc": "mlc", "vllm": "vllm", "nim": "tensorrt-llm",
              "sglang": "sglang", "tensorrt-llm": "tensorrt-llm", "mlx": "mlx", "transformers": "transformers"}
# NeMo AutoModel is PyTorch FSDP2 with Transformer Engine kernels: torchtitan's profile is the nearest.
FRAMEWORK_OF = {"torchtitan": "torchtitan", "megatron-lm": "megatron", "nemo-automodel": "torchtitan",
                "transformers": "transformers"}
# A published format name the runtime profiles spell differently.
QUANT_OF = {"exl2-4.0": "exl2"}
TRAINING_WORKLOADS = {"pretrain": "pretrain", "full": "finetune", "lora": "lora", "qlora": "qlora"}


# Fields a build may refuse for a setup it cannot express: the prediction would be of another setup.
ESSENTIAL = ("model", "accelerator", "workload", "quant", "gpus", "own", "precision")


@dataclass(frozen=True)
class Prediction:
    """The raw prediction of a measurement and its efficiency class, or why there is none."""

    row_id: str
    predicted: float | None
    reason: str = ""
    klass: str = ""


def _first_word(software: str) -> str:
    return software.split(" ")[0].lower() if software else ""


def request_values(m: Measurement) -> dict:
    """The job mapping (``PlanRequest.from_mapping``) of a measurement's setup.

    Fields the job schema of this build does not have (a runtime, framework or format it does not know)
    are left out and the planner's default stands in; ``predict`` reports the request it could make.
    """
    # Owned hardware of the measured count: an option exists whatever the part's prices and offers.
    v: dict = {"model": m.model, "accelerator": (m.accelerator_id,), "gpus": m.devices,
               "own": (f"{m.devices}x{m.accelerator_id}",), "spot_offers": False}
    if m.group in ("pretraining", "finetune_rate", "finetune_memory"):
        v["workload"] = TRAINING_WORKLOADS.get(m.workload, "pretrain")
        v["precision"] = m.precision or "bf16"  # one the job refuses (an 8-bit LoRA base) is not planned
        if m.seq_len:
            v["seq_len"] = m.seq_len
        v["micro_batch"] = max(1, m.batch)
        if m.checkpointing in ("none", "selective", "full"):
            v["checkpointing"] = m.checkpointing
        v["tokens"] = 1e9
        fw = FRAMEWORK_OF.get(_first_word(m.software))
        if fw and "framework" in JOB_FIELDS:
            v["framework"] = fw
        return _with_settings(v, m)
    v["workload"] = "inference"
    v["precision"] = m.precision if m.precision in ("bf16", "fp16", "fp8") else "fp16"
    if m.quant and m.quant != "fp8":
        v["quant"] = QUANT_OF.get(m.quant, m.quant)
    v["batch"] = max(1, m.batch)
    rt = RUNTIME_OF.get(_first_word(m.software))
    if rt:
        v["runtime"] = rt
    if "prompt_tokens" in JOB_FIELDS:
        v["prompt_tokens"] = max(1, m.prompt_tokens)
        v["output_tokens"] = max(1, m.output_tokens)
    else:  # this build reads the KV cache at the context for every token: the mean length stands in
        v["context"] = max(1, m.prompt_tokens + m.output_tokens // 2)
        v["output_tokens"] = max(1, m.output_tokens)
    v["tokens"] = 1e8
    return _with_settings(v, m)


def _with_settings(values: dict, m: Measurement) -> dict:
    """The measurement's stated job inputs on top (numbers read as numbers)."""
    for name, text in m.settings:
        try:
            values[name] = int(text)
        except ValueError:
            try:
                values[name] = float(text)
            except ValueError:
                values[name] = text
    return values


def _valid(values: dict) -> tuple[PlanRequest | None, dict, list[str]]:
    """Build the request, dropping fields this build refuses (a runtime or format it does not know)."""
    dropped: list[str] = []
    for _ in range(4):
        try:
            return PlanRequest.from_mapping(values), values, dropped
        except JobInputError as exc:
            bad = getattr(exc, "field", None) or ""
            if bad not in values or bad in ESSENTIAL:
                return None, values, [str(exc)]
            dropped.append(f"{bad}={values[bad]!r}")
            values = {k: x for k, x in values.items() if k != bad}
    return None, values, dropped


def figure_of(m: Measurement, option) -> float | None:
    """The figure of a plan option that a measurement of group ``m.group`` is compared with."""
    if m.group in ("pretraining", "finetune_rate"):
        return option.tokens_per_s / max(1, option.devices)
    if m.group == "finetune_memory":
        return float(option.memory_per_device_bytes)
    if m.group == "decode":
        return option.tokens_per_s
    if m.group == "serving":  # output tokens over the whole of each request, its prefill included (a server's rate)
        s = option.serving
        return s.requests_per_s * m.output_tokens if s is not None and m.output_tokens else option.tokens_per_s
    s = option.serving
    if s is None:
        return None
    if m.group == "prefill":
        return s.prefill_tokens_per_s
    # A server under load admits each request's prefill as it arrives (continuous batching): the first token of
    # one request, not of a batch arriving at once, is what its users measure.
    if m.batch > 1 and s.ttft_single_request_s is not None:
        return s.ttft_single_request_s
    return s.ttft_s


def klass_of(m: Measurement, req: PlanRequest, option, acc, moe: bool = False) -> str:
    """The efficiency class of a measurement as the planner looks it up (``planner.calibrated``): the framework
    a training request plans with; the runtime, backend and weight bits of the planned serving option."""
    if m.group in ("pretraining", "finetune_rate", "finetune_memory"):
        return training_class(m.group, req, moe)
    choice = option.serving.software if option.serving is not None else None
    if choice is None:
        return efficiency_class(m.group, "unknown", m.backend, format_bits(m.weight_format))
    return serving_class(m.group, choice, acc)


def predict(m: Measurement, catalog, *, plan_fn=None) -> Prediction:
    """The project's raw estimate of a measurement (calibration off), or the reason there is none."""
    from advisor.planner.service import plan as default_plan

    plan_fn = plan_fn or default_plan
    if m.excluded:
        return Prediction(m.row_id, None, f"excluded: {m.excluded}")
    acc = catalog.accelerators.get(m.accelerator_id)
    if acc is None:
        return Prediction(m.row_id, None, f"accelerator {m.accelerator_id!r} is not in the catalog")
    req, values, dropped = _valid(request_values(m))
    if req is None:
        return Prediction(m.row_id, None, "; ".join(dropped) or "not plannable")
    try:
        if m.group in DERIVED:  # compared with the calibrated plan (estimate.calibration.DERIVED)
            result = plan_fn(req, catalog, advise=False)
        else:
            with raw_estimates():
                result = plan_fn(req, catalog, advise=False)
    except JobInputError as exc:
        return Prediction(m.row_id, None, str(exc))
    options = [o for o in result.options if o.accelerator == m.accelerator_id and o.devices == m.devices]
    options.sort(key=lambda o: {"owned": 0, "onprem": 1, "home": 2, "cloud": 3}.get(o.kind, 4))
    if not options:
        return Prediction(m.row_id, None, f"no option with {m.devices} x {m.accelerator_id}")
    value = figure_of(m, options[0])
    if value is None or value <= 0:
        return Prediction(m.row_id, None, "the plan has no such figure")
    return Prediction(m.row_id, value, ("not in this build: " + ", ".join(dropped)) if dropped else "",
                      klass_of(m, req, options[0], acc, result.active_params < result.params))


def observation(m: Measurement, p: Prediction) -> Observation:
    """The fitting record of a measurement and its raw prediction (``p.predicted`` must be set)."""
    return Observation(m.row_id, m.group, m.source_id, p.klass, m.value, float(p.predicted),
                       f"{m.accelerator_id}/{m.model}")
