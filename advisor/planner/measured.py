"""Plan a published measurement with the project's own estimate, to compare the two (the calibration set,
``advisor.estimate.calibration``; docs/method.md, "Calibration on published measurements").

Each measurement becomes a plan request of its setup (model, accelerator, device count, software, format,
precision, batch, prompt and output lengths, sequence length, checkpointing). The figure is read from the
option of that accelerator and count: training tokens/s per device, fine-tune peak memory per device,
decode tokens/s, prompt tokens/s, served output tokens/s. The raw prediction is taken with the calibration
off (``planner.calibrated.raw_estimates``), so the fit never sees its own output.

The time to first token under load is the serving model's (``estimate.serving_queue``): one replica of the
measured devices at the stated concurrency (several replicas where the run's layout had its ranks run their own
batches, ``row_replicas``), its mean first token at a scale of the runtime's compute
efficiencies (``serve_predictor``); the raw prediction is at scale 1 and the row's implied scale is where the
model meets it (``estimate.calibration``, step 5).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from advisor.estimate.calibration import (
    REACH_GROUPS,
    SCALED,
    SERVE_GROUPS,
    TRAINING_WORKLOADS,
    Measurement,
    Observation,
    efficiency_class,
    format_bits,
    implied_log_scale,
    position_of,
)
from advisor.estimate.model import kv_values_per_token
from advisor.estimate.serving_queue import ServePoint
from advisor.job import JOB_FIELDS, JobInputError
from advisor.planner.calibrated import raw_estimates, serve_load, serving_class, training_class
from advisor.planner.request import PlanRequest

# The software named in a measurement -> the runtime or framework flag the planner knows (where it has one).
RUNTIME_OF = {"llama.cpp": "llama.cpp", "exllama": "exllamav2", "mlc": "mlc", "vllm": "vllm", "nim": "tensorrt-llm",
              "sglang": "sglang", "lmdeploy": "lmdeploy", "tensorrt-llm": "tensorrt-llm", "mlx": "mlx", "transformers": "transformers"}
# NeMo AutoModel is PyTorch FSDP2 with Transformer Engine kernels: torchtitan's profile is the nearest.
FRAMEWORK_OF = {"torchtitan": "torchtitan", "megatron-lm": "megatron", "nemo-automodel": "torchtitan",
                "transformers": "transformers"}
# A published format name the runtime profiles spell differently.
QUANT_OF = {"exl2-4.0": "exl2"}


# Fields a build may refuse for a setup it cannot express: the prediction would be of another setup.
ESSENTIAL = ("model", "accelerator", "workload", "quant", "gpus", "own", "precision")


@dataclass(frozen=True)
class Prediction:
    """The raw prediction of a measurement and its efficiency class, or why there is none."""

    row_id: str
    predicted: float | None
    reason: str = ""
    klass: str = ""
    implied: float | None = None  # SCALED groups: the log scale of the compute efficiencies that meets the figure
    at: Callable[[float], float | None] | None = field(default=None, compare=False, repr=False)  # figure at a scale


def _first_word(software: str) -> str:
    return software.split(" ")[0].lower() if software else ""


def job_precision(m: Measurement) -> str:
    """The inference job's precision of a measured row: its own where the job has it (bf16, fp16, fp8); ``fp4``
    (products in FP4: NVFP4 weights and activations) as fp8, the job's narrowest, whose cache is 8-bit at most (the
    products' fp4 comes from the weight format, ``serve_spec.fp4_products``, not from the job's precision); else
    fp16."""
    if m.precision == "fp4":
        return "fp8"
    return m.precision if m.precision in ("bf16", "fp16", "fp8") else "fp16"


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
    v["precision"] = job_precision(m)
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
        if name in (RUN_SETTING, CACHED_SETTING, ADMISSION_SETTING, LIMITS_SETTING):  # the run's own (run_prompts,
            # run_cached, row_admission, harness_limits): no job input
            continue
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
    s = option.serving
    if s is None:
        return None
    return s.prefill_tokens_per_s if m.group == "prefill" else s.ttft_s


def klass_of(m: Measurement, req: PlanRequest, option, acc, moe: bool = False) -> str:
    """The efficiency class of a measurement as the planner looks it up (``planner.calibrated``): the framework
    a training request plans with; the runtime, backend and weight bits of the planned serving option."""
    if m.group in ("pretraining", "finetune_rate", "finetune_memory"):
        return training_class(m.group, req, moe)
    choice = option.serving.software if option.serving is not None else None
    if choice is None:
        return efficiency_class(m.group, "unknown", m.backend, format_bits(m.weight_format))
    return serving_class(m.group, choice, acc, moe=moe)


def predict(m: Measurement, catalog, *, plan_fn=None) -> Prediction:
    """The project's raw estimate of a measurement (calibration off), or the reason there is none."""
    from advisor.planner.service import plan as default_plan

    plan_fn = plan_fn or default_plan
    if m.excluded:
        return Prediction(m.row_id, None, f"excluded: {m.excluded}")
    acc = catalog.accelerators.get(m.accelerator_id)
    if acc is None:
        return Prediction(m.row_id, None, f"accelerator {m.accelerator_id!r} is not in the catalog")
    if m.group in SERVE_GROUPS:
        return _scaled_prediction(m, catalog, acc)
    req, values, dropped = _valid(request_values(m))
    if req is None:
        return Prediction(m.row_id, None, "; ".join(dropped) or "not plannable")
    try:
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


# Job inputs a serving row may state (its ``settings``) that the serving job reads.
SERVE_SETTINGS = ("requests_per_s", "prompt_spread", "output_spread", "lengths", "max_seqs", "kv_cache_bits")


def serve_job_values(m: Measurement) -> dict:
    """The serving job (``advisor.job.serve.ServeJob``) of a published load: the model, format, runtime and lengths,
    and the load as stated: ``requests_per_s`` among the settings (Poisson arrivals, MLPerf's server scenario), else
    ``batch`` users in a closed loop (each sends the next request when the last ends: AIPerf's and ``vllm bench
    serve``'s concurrency, LMDeploy's request threads, a static batch, or every request queued at once)."""
    values: dict = {"model": m.model, "precision": job_precision(m),
                    "prompt_tokens": max(1, m.prompt_tokens), "output_tokens": max(1, m.output_tokens)}
    if m.quant and m.quant != "fp8":
        values["quant"] = QUANT_OF.get(m.quant, m.quant)
    rt = RUNTIME_OF.get(_first_word(m.software))
    if rt:
        values["runtime"] = rt
    for name, text in m.settings:
        if name in SERVE_SETTINGS:
            values[name] = text if name == "lengths" else float(text) if "." in text else int(text)
    if "requests_per_s" not in values:
        values["users"] = max(1, m.batch)
    return values


# Layouts whose ranks each run batches of their own (``row_replicas``): attention data parallel (TensorRT-LLM's
# ``DEP<n>``, ``enable_attention_dp``: every rank's attention runs its own requests, the experts split over the ranks)
# and pipeline stages (``PP<n>``: each stage runs another micro-batch while the others run theirs).
OWN_BATCH_LAYOUTS = ("DEP", "PP")


def row_layout(m: Measurement) -> dict[str, int]:
    """The degrees the row's ``parallelism`` names (``"DEP2,PP2"`` -> ``{"DEP": 2, "PP": 2}``; ``"none"`` -> {})."""
    out: dict[str, int] = {}
    for part in re.split(r"[,;\s]+", m.parallelism or ""):
        found = re.fullmatch(r"([A-Za-z]+)(\d+)", part)
        if found:
            out[found.group(1).upper()] = int(found.group(2))
    return out


def row_replicas(m: Measurement, model, choice, lengths, acc) -> int:
    """The replicas a served row's devices are planned as: one, the row's devices in tensor parallel (as ``advisor
    serve`` runs a replica), unless the run's layout had its ranks run batches of their own (``OWN_BATCH_LAYOUTS``
    above 1): then ``D / k`` replicas of ``k`` devices, ``k`` the fewest devices that hold the weights and one
    request's cache (``serve_spec.fewest_devices``, as ``advisor serve`` sizes a replica) or the row's own tensor
    group (``TP<n>``) where larger; one where ``k`` does not divide ``D``. In throughput such a layout is what
    ``advisor serve`` would answer for the devices: each rank's requests are its own, and what the ranks exchange
    (the experts' tokens, a stage's activations) is a fraction of what a tensor-parallel step's all-reduces send
    (docs/method.md, "Serving under load", the layouts of measured rows)."""
    from advisor.planner.serve_spec import fewest_devices

    layout = row_layout(m)
    if m.devices <= 1 or not any(layout.get(name, 1) > 1 for name in OWN_BATCH_LAYOUTS):
        return 1
    fit = fewest_devices(model, acc, choice, lengths, m.devices)
    if fit is None:
        return 1
    k = max(fit, layout.get("TP", 1))
    return m.devices // k if m.devices % k == 0 else 1


def of_replicas(point: ServePoint, replicas: int) -> ServePoint:
    """The point of ``replicas`` equal replicas each at ``point``: the load and the throughputs summed, the times
    each request sees unchanged."""
    if replicas == 1:
        return point
    return replace(point, users=None if point.users is None else point.users * replicas,
                   requests_per_s_offered=None if point.requests_per_s_offered is None
                   else point.requests_per_s_offered * replicas,
                   in_service=point.in_service * replicas, waiting=point.waiting * replicas,
                   requests_per_s=point.requests_per_s * replicas,
                   output_tokens_per_s=point.output_tokens_per_s * replicas)


def row_setup(m: Measurement, catalog, acc, calib=None, decode_scale: float | None = None,
              prefill_scale: float | None = None) -> tuple:
    """``(job, model, lengths, choice, speed, replicas)`` of a published served row as ``serve_point_predictor`` plans
    it: its serving job (``serve_job_values``; one replica's share of the load where the row is planned as several,
    ``row_replicas``), the model's serving figures, the requests' lengths, the runtime choice on ``acc``, one
    request's calibrated speed on the replica, as ``advisor serve`` builds it (``one_request``; None where the request
    cannot be timed), and the replicas. ``calib``, ``decode_scale``, ``prefill_scale``: as ``serve_point_predictor``'s."""
    from advisor.estimate.serving import Lengths
    from advisor.job.serve import ServeJob, request_lengths
    from advisor.planner.one_request import request_lengths as one_request_lengths
    from advisor.planner.one_request import request_speed
    from advisor.planner.request import resolve_job_model, runtime_choice
    from advisor.planner.serve_spec import model_serving

    values = serve_job_values(m)
    job = ServeJob.from_mapping(values)
    jm = resolve_job_model(job, catalog)
    model = model_serving(jm.arch, jm.params, jm.active_params, values["precision"], job.kv_cache_bits)
    rl = request_lengths(job)
    lengths = Lengths(rl.prompt_mean, rl.output_mean, rl.prompt_cv, rl.output_cv)
    choice = runtime_choice(job, acc)
    replicas = row_replicas(m, model, choice, lengths, acc)
    if replicas > 1:  # one replica's share of the load
        if "users" in values:
            values["users"] = max(1, math.ceil(values["users"] / replicas))
        else:
            values["requests_per_s"] = float(values["requests_per_s"]) / replicas
        job = ServeJob.from_mapping(values)
    try:
        speed = request_speed(job, acc, m.devices // replicas, model, one_request_lengths(lengths), calib,
                              decode_scale, prefill_scale)
    except ValueError:
        speed = None
    return job, model, lengths, choice, speed, replicas


def row_spec(m: Measurement, setup: tuple, acc, compute_scale: float = 1.0):
    """The replica (``estimate.serving.ServerSpec``) a published served row is planned on, from its ``row_setup``:
    one replica of the row's devices, or of its replicas' share of them (``row_replicas``;
    ``planner.serve_spec.replica_spec``, its step costs' ``compute_scale``); with
    users, at least as many sequences as users (the run's own batch limit where it is above the server's default)
    unless the row states ``max_seqs``; the admission its harness ran where the row states one (``row_admission``),
    else the runtime's."""
    import dataclasses

    from advisor.planner.serve_spec import replica_spec

    job, model, lengths, choice, speed, replicas = setup
    devices = m.devices // replicas
    spec, _ = replica_spec(model, acc, devices, choice, max_seqs=job.max_seqs, lengths=lengths,
                           compute_scale=compute_scale, speed=speed)
    limits = harness_limits(m, model, choice, acc, lengths)
    if limits is not None:  # the harness's own batch limit and token budget
        spec = dataclasses.replace(spec, max_seqs=limits[0], chunk_tokens=limits[1])
    elif job.users is not None and job.max_seqs is None and spec.max_seqs < job.users:
        spec, _ = replica_spec(model, acc, devices, choice, max_seqs=job.users, lengths=lengths,
                               compute_scale=compute_scale, speed=speed)
    whole = row_admission(m)
    if whole is not None and spec.batching == "continuous":
        spec = dataclasses.replace(spec, reserve_whole=whole)
    ep = dispatch_s(m, model.arch, acc) if replicas > 1 else 0.0
    if ep > 0:  # each token's experts sit on the other ranks: its dispatch and combine cross the link
        spec = dataclasses.replace(spec, per_seq_s=spec.per_seq_s + ep, per_token_s=spec.per_token_s + ep)
    if spec.host_overlap_s > 0 and not pytorch_executor(m):
        spec = dataclasses.replace(spec, host_overlap_s=0.0)  # a compiled engine's C++ executor: not measured
    return spec


def pytorch_executor(m: Measurement) -> bool:
    """Whether TensorRT-LLM's PyTorch executor ran a row: the executor the runtime's host time a request was
    measured on (``serve_spec.RuntimeServing.host_overlap_per_seq_s``). The row's software names the PyTorch
    backend or a release of 1.0 or later (its default backend since 1.0); earlier releases, and runs that name none
    (MLPerf's 2024 rounds, NIM's TensorRT-LLM profiles), ran compiled engines on the C++ executor."""
    software = m.software.lower()
    release = re.search(r"\b(\d+)\.\d", software)
    return "pytorch" in software or (release is not None and int(release.group(1)) >= 1)


def dispatch_s(m: Measurement, arch, acc) -> float:
    """The link time of one token's expert dispatch and combine in a row run with attention data parallel
    (``DEP<n>``): ``serve_spec.expert_dispatch_s`` over the ``n`` ranks at the devices' link
    (``placement.intra_node_bps``); 0 for a dense model or another layout. Pipeline stages split the layers and
    double the tokens a device carries, so a token's traffic is the same with them."""
    from advisor.planner.placement import intra_node_bps
    from advisor.planner.serve_spec import expert_dispatch_s

    return expert_dispatch_s(arch, row_layout(m).get("DEP", 1), intra_node_bps(acc))


def serve_point_predictor(m: Measurement, catalog, acc, calib=None, decode_scale: float | None = None,
                          prefill_scale: float | None = None) -> tuple[Callable[[float], ServePoint | None], str]:
    """``(at, class)``: ``at(t)`` is the serving model's steady state (``estimate.serving_queue.serve_at``) of the
    measured setup with the runtime's compute efficiencies scaled by ``e^t`` (``planner.serve_spec.replica_spec``),
    None where it is not stable; the class is the runtime and backend (``planner.calibrated.serving_class``).

    The setup: one replica of the measured devices, the weight format and runtime named, at the stated load
    (``serve_job_values``), or where the run's layout had its ranks run their own batches, ``D / k`` replicas of
    ``k`` devices each at its share of the load, their throughputs summed (``row_replicas``, ``of_replicas``); with
    users, at least as many sequences as users (the run's own batch limit where it is above the server's default),
    unless the row states ``max_seqs``. Users whose equal requests started together
    (the row's ``arrivals``) are planned in step (``serving_queue.serve_together``; sent by the users' clients one
    at a time where the row states its run's request count, ``run_prompts``, else queued at once as a static batch),
    others as users who have drifted apart (``serve_at``); a row that states its run's request count (``run_prompts``) as a finite run
    whose users start together (``serving_queue.serve_finite``), the prompts an earlier run on the same server left
    in its prefix cache as the row states them (``run_cached``). ``calib``: the planner's calibration with the
    user's runs, which one request's speed takes as ``advisor serve`` takes it (None: the published fit alone);
    ``decode_scale`` (with ``prefill_scale``): one request's decode (and prefill) at that factor on the runtime's
    published speed instead, nothing learned (``one_request.request_speed``: the forward model a serving run at its
    load teaches through).

    Raises:
        JobInputError: a setup the serving job refuses (an unknown runtime, format or model).
    """
    from advisor.estimate.serving_queue import (
        serve_at,
        serve_at_bounds,
        serve_finite,
        serve_kept_up,
        serve_together,
        with_scheduler_steps,
    )
    from advisor.planner.calibrated import serve_capacity_spread, serving_class

    job, model, lengths, choice, speed, replicas = row_setup(m, catalog, acc, calib, decode_scale, prefill_scale)
    users = job.users
    spread = serve_capacity_spread(choice, acc, model.arch.is_moe) if users is None else 0.0
    bounds = rate_bounds(m)
    batching = harness_batching(m)
    steps = scheduler_steps(m)
    row_admission(m)  # refused here, with its reason, before any point is planned (row_spec reads it)
    row_limits(m)
    prompts = run_prompts(m)
    cached = run_cached(m, prompts)
    if replicas > 1 and prompts is not None:  # each replica's share of a finite run
        prompts, cached = max(1, math.ceil(prompts / replicas)), math.ceil(cached / replicas)

    def at(t: float) -> ServePoint | None:
        point = replica_at(t)
        return None if point is None else of_replicas(point, replicas)

    def replica_at(t: float) -> ServePoint | None:
        spec = row_spec(m, (job, model, lengths, choice, speed, replicas), acc, math.exp(t))
        if users is not None and m.arrivals == "together":
            # equal requests started together stay in step; a run of stated requests is sent by the users' clients
            point = serve_together(spec, lengths, users, clients=prompts is not None)
        elif users is not None and prompts is not None:  # a finite run: its first wave, then the steady state
            point = serve_finite(spec, lengths, users, prompts, cached)
        elif users is not None:
            point = serve_at(spec, lengths, users=users)
        elif bounds is not None:  # the most the server carried within the benchmark's p99 bounds (its score)
            point = serve_at_bounds(spec, lengths, float(job.requests_per_s), *bounds, batching=batching,
                                    scheduler_steps=steps)
            if point is None:
                return None
        else:  # a published run at a rate kept up with it: planned over the capacity's uncertainty given that
            point = serve_kept_up(spec, lengths, float(job.requests_per_s), spread)
            if point is None:
                return None
            point = with_scheduler_steps(point, steps)
        return point if point.stable and math.isfinite(point.ttft_mean_s) else None

    return at, serving_class(m.group, choice, acc, serve_load("users" if users is not None else "requests_per_s",
                                                               users), moe=model.arch.is_moe)


# The setting of a row whose benchmark states how many requests its run sent (``--num-prompts``).
RUN_SETTING = "prompts"


def run_prompts(m: Measurement) -> int | None:
    """The requests of the row's finite run (its ``prompts`` setting), or None where the row states none.

    Raises:
        ValueError: a count that is not a whole number of at least 1.
    """
    return _whole_setting(m, RUN_SETTING, least=1)


def _whole_setting(m: Measurement, name: str, least: int) -> int | None:
    """A row's whole-number setting ``name`` (None where the row states none).

    Raises:
        ValueError: a value that is not a whole number of at least ``least``.
    """
    text = m.setting(name)
    if text is None:
        return None
    try:
        n = int(text)
    except ValueError:
        raise ValueError(f"{m.row_id}: {name} must be a whole number, not {text!r}") from None
    if n < least:
        raise ValueError(f"{m.row_id}: {name} must be at least {least}")
    return n


# The setting of a finite run whose first prompts an earlier run on the same server sent (``run_cached``).
CACHED_SETTING = "cached"


def run_cached(m: Measurement, prompts: int | None) -> int:
    """The requests of the row's finite run whose prompts the server's prefix cache held when it started (its
    ``cached`` setting; 0 where it states none): the first ``cached`` of its ``prompts``, sent before by an earlier run
    on the same server. A client that draws its prompts from a fixed seed draws the same first prompts whatever the
    run's length (SGLang's ``bench_serving``: ``random.seed`` and ``np.random.seed`` of ``--seed``, lengths by
    ``np.random.randint`` one after another, ShareGPT conversations in one shuffled order), so a run after a smaller
    one of the same lengths starts with that run's prompts; its warm-up request is the first of them, and the cache
    is flushed only on ``--flush-cache``.

    Raises:
        ValueError: a count that is not a whole number of at least 0, or one stated without ``prompts``.
    """
    n = _whole_setting(m, CACHED_SETTING, least=0)
    if n is None:
        return 0
    if prompts is None:
        raise ValueError(f"{m.row_id}: {CACHED_SETTING} is a finite run's: state {RUN_SETTING} with it")
    return n


# Settings of a row published at the most its server carried within p99 latency bounds (MLPerf's server scenario).
# A row's admission as its harness ran it, where that is not the runtime's default (``row_admission``): "whole"
# admits a request only with cache for its whole prompt and output (TensorRT-LLM's GUARANTEED_NO_EVICT), "current"
# on the blocks its context needs now, pausing the newest when the cache runs short (TensorRT-LLM's MAX_UTILIZATION,
# vLLM's and SGLang's way).
ADMISSION_SETTING = "admission"
ADMISSIONS = {"whole": True, "current": False}


def row_admission(m: Measurement) -> bool | None:
    """Whether the row's server reserved each request's whole prompt and output at admission
    (``ServerSpec.reserve_whole``) as the row states it (``ADMISSION_SETTING``), or None where it states none (the
    runtime's rule, ``planner.serve_spec.RUNTIME_SERVING``).

    Raises:
        ValueError: a value other than ``whole`` or ``current``.
    """
    text = m.setting(ADMISSION_SETTING)
    if text is None:
        return None
    if text not in ADMISSIONS:
        raise ValueError(f"{m.row_id}: {ADMISSION_SETTING} must be one of {', '.join(ADMISSIONS)}, got {text!r}")
    return ADMISSIONS[text]


# A row whose harness chose its batch limit and token budget itself (``harness_limits``): ``trtllm-bench``, whose
# ``throughput`` run given neither takes them from its tuning heuristic (``trtllm_bench_limits``).
LIMITS_SETTING = "limits"
LIMITS = ("trtllm-bench",)


def row_limits(m: Measurement) -> str | None:
    """The harness that set the row's batch limit and token budget (``LIMITS_SETTING``), or None where it states none.

    Raises:
        ValueError: a harness other than those named in ``LIMITS``, or with ``max_seqs`` stated as well.
    """
    text = m.setting(LIMITS_SETTING)
    if text is None:
        return None
    if text not in LIMITS:
        raise ValueError(f"{m.row_id}: {LIMITS_SETTING} must be one of {', '.join(LIMITS)}, got {text!r}")
    if m.setting("max_seqs") is not None:
        raise ValueError(f"{m.row_id}: {LIMITS_SETTING}={text} sets the batch limit; max_seqs goes without it")
    return text


def harness_limits(m: Measurement, model, choice, acc, lengths) -> tuple[int, int] | None:
    """``(max_batch_size, max_num_tokens)`` of a row whose harness set them (``LIMITS_SETTING``), each replica's
    (``row_replicas``), or None where the row states no harness.

    Raises:
        ValueError: a harness other than those named in ``LIMITS``, or with ``max_seqs`` stated as well.
    """
    if row_limits(m) is None:
        return None
    layout = row_layout(m)
    pp = layout.get("PP", 1)
    tp = layout.get("TP", layout.get("DEP", max(1, m.devices // pp)))
    values = kv_values_per_token(model.arch)
    kv_value_bytes = model.kv_bytes_per_token() / values if values else 2.0
    return trtllm_bench_limits(model.arch, model.params, choice.weight_format.family, kv_value_bytes, tp, pp,
                               acc.memory_bytes, lengths.prompt_mean, lengths.output_mean)


# trtllm-bench's tuning heuristic (tensorrt_llm/bench/build/tuning.py: calc_engine_setting, finetune_setting; the
# PyTorch flow's get_settings in tensorrt_llm/bench/benchmark/utils/general.py calls it when a run gives neither
# --max_batch_size nor --max_num_tokens): bytes a weight by the checkpoint's quantisation, 2 for any other; the
# batch capped at 4,096 requests (its decoder buffers) and the tokens at 32,768 (its activations).
TRTLLM_BENCH_WEIGHT_BYTES = {"fp8": 1.0, "nvfp4": 0.5}
TRTLLM_BENCH_MAX_BATCH = 4096
TRTLLM_BENCH_MAX_TOKENS = 32768
TRTLLM_BENCH_KV_FRACTION = 0.90  # trtllm-bench throughput's --kv_cache_free_gpu_mem_fraction default


def trtllm_bench_limits(arch, params: float, weight_family: str, kv_value_bytes: float, tp: int, pp: int,
                        device_bytes: float, prompt: float, output: float,
                        fraction: float = TRTLLM_BENCH_KV_FRACTION) -> tuple[int, int]:
    """``(max_batch_size, max_num_tokens)`` trtllm-bench sets a run of mean ``prompt`` and ``output`` lengths.

    The requests that fit: ``fraction`` of the devices' memory less the checkpoint (``params`` at its format's
    bytes), over one request's cache of ``prompt + output`` tokens at ``kv_value_bytes`` a value, each of ``tp``
    devices holding at least one KV head (``2 L max(tp, n_kv) d_h`` values a token). The batch: those requests, at
    most 4,096, over the ``pp`` stages, rounded up (to 32 below 256, at least 64; to 128 below 1,024; else to 256);
    the tokens: the batch times ``1 + prompt / output``, at most 32,768, rounded up (to 256 below 4,096, at least
    2,048; to 512 below 8,192; else to 1,024). Chunked prefill is off in trtllm-bench unless asked for, so the
    token budget is raised to hold the longest prompt beside the batch (``prompt + batch``).
    """
    weight_bytes = TRTLLM_BENCH_WEIGHT_BYTES.get(weight_family, 2.0)
    gpus = tp * pp
    heads = max(tp, arch.kv_heads)
    token_bytes = kv_values_per_token(arch) * heads / arch.kv_heads * kv_value_bytes
    cache = (device_bytes * gpus - params * weight_bytes) * fraction
    requests = cache / (token_bytes * (prompt + output)) if token_bytes > 0 else float(TRTLLM_BENCH_MAX_BATCH)
    if requests < 1:
        raise ValueError("trtllm-bench refuses a run whose cache holds not one request")
    raw_batch = min(requests, TRTLLM_BENCH_MAX_BATCH) / pp
    raw_tokens = min(raw_batch * (1.0 + prompt / output), TRTLLM_BENCH_MAX_TOKENS)
    batch = max(64, _rounded_up(raw_batch, ((256, 32), (1024, 128), (math.inf, 256))))
    tokens = max(2048, _rounded_up(raw_tokens, ((4096, 256), (8192, 512), (math.inf, 1024))))
    return batch, max(tokens, math.ceil(prompt) + batch)


def _rounded_up(x: float, tiers: tuple[tuple[float, int], ...]) -> int:
    """``x`` rounded up to the step of the first tier ``(below, step)`` whose bound it is below."""
    step = next(step for below, step in tiers if x < below)
    return step * math.ceil(x / step)


BOUND_SETTINGS = ("ttft_p99_bound_s", "tpot_p99_bound_s")


def rate_bounds(m: Measurement) -> tuple[float, float] | None:
    """``(first token, time per output token)`` p99 bounds in seconds of a row whose rate is the most its server
    carried within them (``serving_queue.serve_at_bounds``), or None where the row states none.

    Raises:
        ValueError: one bound stated without the other, or one that is not a positive number.
    """
    given = [m.setting(name) for name in BOUND_SETTINGS]
    if given == [None, None]:
        return None
    if None in given:
        raise ValueError(f"{m.row_id}: {' and '.join(BOUND_SETTINGS)} go together")
    values = tuple(float(v) for v in given)
    if not all(math.isfinite(v) and v > 0 for v in values):
        raise ValueError(f"{m.row_id}: latency bounds must be positive numbers")
    return values[0], values[1]


# The setting of a row whose engine scheduled once every so many decode steps (vLLM's ``num_scheduler_steps``).
SCHEDULER_STEPS_SETTING = "scheduler_steps"


def scheduler_steps(m: Measurement) -> int:
    """The decode steps the row's engine ran for each call of its scheduler (its ``scheduler_steps`` setting; 1, every
    step, where it states none): vLLM's multi-step scheduling (``serving_queue.with_scheduler_steps``). A setting of
    a run at a rate: its requests arrive at any moment of the run of steps.

    Raises:
        ValueError: a count that is not a whole number of at least 1, or one stated for users in a closed loop.
    """
    n = _whole_setting(m, SCHEDULER_STEPS_SETTING, least=1)
    if n is None:
        return 1
    if m.setting("requests_per_s") is None:
        raise ValueError(f"{m.row_id}: {SCHEDULER_STEPS_SETTING} is planned for a run at a rate: state "
                         "requests_per_s with it")
    return n


# Settings of a row whose harness held the arrivals and sent them to the replicas in batches, one replica a batch in
# turn (``serving_queue.HarnessBatching``): the window (s), the most requests a batch holds, the replicas dealt to.
BATCHING_SETTINGS = ("batch_window_s", "batch_most", "batch_replicas")


def harness_batching(m: Measurement):
    """The harness's batching of a row (``serving_queue.HarnessBatching``, ``BATCHING_SETTINGS``), or None where the
    row states none.

    Raises:
        ValueError: some of the settings without the others, or one out of range (a window that is not a positive
            number of seconds, counts that are not whole numbers of at least 1).
    """
    from advisor.estimate.serving_queue import HarnessBatching

    given = [m.setting(name) for name in BATCHING_SETTINGS]
    if given == [None] * len(given):
        return None
    if None in given:
        raise ValueError(f"{m.row_id}: {', '.join(BATCHING_SETTINGS)} go together")
    try:
        window, most, replicas = float(given[0]), int(given[1]), int(given[2])
    except ValueError:
        raise ValueError(f"{m.row_id}: {', '.join(BATCHING_SETTINGS)} must be a number of seconds and two whole "
                         "numbers") from None
    try:
        return HarnessBatching(window, most, replicas)
    except ValueError as e:
        raise ValueError(f"{m.row_id}: {e}") from None


def serve_figure(m: Measurement, p: ServePoint) -> float:
    """The figure of a served load a row of a serving group publishes: output tokens/s, or its time (first token,
    per output token) as the statistic the row names."""
    if m.group == "serving":
        return p.output_tokens_per_s
    if m.group == "tpot":
        return {"p95": p.tpot_p95_s, "itl_p50": p.itl_s}.get(m.statistic, p.tpot_p50_s)
    return {"p50": p.ttft_p50_s, "p95": p.ttft_p95_s}.get(m.statistic, p.ttft_mean_s)


def serve_predictor(m: Measurement, catalog, acc) -> tuple[Callable[[float], float | None], str]:
    """``(at, class)`` as ``serve_point_predictor``, ``at(t)`` the row's figure (``serve_figure``)."""
    at_point, klass = serve_point_predictor(m, catalog, acc)

    def at(t: float) -> float | None:
        p = at_point(t)
        return None if p is None else serve_figure(m, p)

    return at, klass


def shown_prediction(m: Measurement, catalog) -> tuple[float, tuple[float, float]] | None:
    """``(figure, 80 % range)`` of a served row as the planner shows it with the stored fit in force: the serving
    model at the row's load (``serve_point_predictor``) through ``calibrated.serve_shown`` (the serving groups'
    factors where they help, ``advisor serve``'s rule) and the range of its group at that load and runtime
    (``calibrated.serve_range_factors``). bench_truth scores the same figure with the factor fitted without the
    row's source (``calibration.shown``). None where the setup is not planned."""
    figures = shown_figures(m, catalog, (m.group,))
    return None if figures is None else figures[m.group]


def shown_figures(m: Measurement, catalog, groups: tuple[str, ...] = SERVE_GROUPS, calib=None,
                  decode_scale: float | None = None, prefill_scale: float | None = None
                  ) -> dict[str, tuple[float, tuple[float, float]]] | None:
    """``{group: (figure, 80 % range)}`` of a served row's load as the planner shows it (``shown_prediction``), for
    each serving group in ``groups`` (``serving``: output tokens/s; ``ttft``, ``tpot``: the time as ``m.statistic``
    names it), from one served point: the figures a row of each group of the same setup and load would be given.
    ``calib``: the planner's calibration with the user's runs (``serve_point_predictor``); an imported benchmark
    run is planned so (``runs.load``), and at a ``decode_scale`` and ``prefill_scale`` (``serve_point_predictor``)
    when the learner inverts it. None where the setup is not planned."""
    from advisor.planner.calibrated import serve_range_factors, serve_shown
    from advisor.planner.request import resolve_job_model, runtime_choice

    if m.group not in SERVE_GROUPS or m.accelerator_id not in catalog.accelerators:
        return None
    from advisor.job.serve import ServeJob

    acc = catalog.accelerators[m.accelerator_id]
    try:
        at_point, _ = serve_point_predictor(m, catalog, acc, calib, decode_scale, prefill_scale)
        job = ServeJob.from_mapping(serve_job_values(m))
        choice = runtime_choice(job, acc)
        moe = resolve_job_model(job, catalog).arch.is_moe
    except (JobInputError, ValueError):
        return None
    point = at_point(0.0)
    if point is None:
        return None
    by = "users" if job.users is not None else "requests_per_s"
    shown = serve_shown(by, choice, acc, moe)(point)
    ranges = serve_range_factors(serve_load(by, point.users), choice, acc, moe)
    out = {}
    for group in groups:
        value = serve_figure(replace(m, group=group), shown)
        f, _ = ranges[group]
        out[group] = (value, (value / f, value * f))
    return out


def step_constant(m: Measurement, catalog) -> str | None:
    """The step cost (``estimate.step_cost``) a published per-token time or first token implies, or None: a ``tpot``
    row of users on several tensor-parallel devices; at one user the per-layer time of a dense model's step
    (``tp_layer``) or a mixture of experts' further time an expert a token runs in each expert layer
    (``moe_expert``), at more the time per running sequence
    (``seq_layer``), by the replica's step family, backend, link and model kind; a ``ttft`` row of one user on
    several tensor-parallel devices of a server that launches a prefill pass's kernels from Python
    (``serve_spec.RuntimeServing.eager_prefill``), the pass's host time per kernel launched (``prefill_kernel``,
    dense and MoE models alike). An arrival rate's
    per-token time or first token is checked with the fit, not fitted (its batch is the queue's, near saturation
    where its rows lie)."""
    from advisor.estimate.step_cost import step_name
    from advisor.job.serve import ServeJob
    from advisor.planner.request import resolve_job_model, runtime_choice
    from advisor.planner.serve_spec import link_class, serving_profile, step_family

    acc = catalog.accelerators.get(m.accelerator_id)
    if m.group not in ("tpot", "ttft") or m.devices <= 1 or m.excluded or acc is None:
        return None
    try:
        job = ServeJob.from_mapping(serve_job_values(m))
        choice = runtime_choice(job, acc)
        moe = resolve_job_model(job, catalog).arch.is_moe
    except (JobInputError, ValueError):
        return None
    if choice.runtime.multi_device != "tensor" or job.users is None:
        return None
    link, family = link_class(acc), step_family(choice.runtime.id)
    if m.group == "ttft":  # one user's first token: its prompt's prefill pass alone
        if job.users != 1 or not serving_profile(choice.runtime.id).eager_prefill:
            return None
        return step_name("prefill_kernel", family, choice.backend, link)
    if job.users == 1:
        return step_name("moe_expert" if moe else "tp_layer", family, choice.backend, link)
    return step_name("seq_layer", family, choice.backend, link, "moe" if moe else "dense")


def batch_mm_constant(m: Measurement, catalog) -> str | None:
    """The share of the profile's matrix-multiply efficiency (``estimate.step_cost``, ``batch_mm``) a published
    throughput implies, or None: a ``serving`` row (output tokens/s) of more than one user whose equal requests
    started together (a max-throughput table with every request queued at once, a static batch: rounds of the
    batch's prompts and steps, ``serving_queue.serve_together``, whose figure is the products' and not a queue's),
    on any number of devices, by the replica's runtime, backend and kernel type (``serve_spec.batch_mm_name``); a
    mixture of experts' implies the share of that share its grouped expert products reach
    (``serve_spec.moe_mm_name``)."""
    from advisor.job.serve import ServeJob
    from advisor.planner.request import resolve_job_model, runtime_choice
    from advisor.planner.serve_spec import batch_mm_name, moe_mm_name, prefill_kernel

    acc = catalog.accelerators.get(m.accelerator_id)
    if m.group != "serving" or m.excluded or acc is None:
        return None
    try:
        job = ServeJob.from_mapping(serve_job_values(m))
        choice = runtime_choice(job, acc)
        moe = resolve_job_model(job, catalog).arch.is_moe
    except (JobInputError, ValueError):
        return None
    if job.users is None or job.users <= 1 or m.arrivals != "together":
        return None
    kernel = prefill_kernel(choice, "fp8" if job.precision == "fp8" else "bf16", acc)
    return moe_mm_name(choice) if moe else batch_mm_name(choice, kernel)


def figure_at_steps(m: Measurement, catalog, fit) -> float | None:
    """A served row's figure (``serve_predictor`` at scale 1) planned with the step costs ``fit`` in force."""
    from advisor.catalog.runtimes import step_fit_in_force

    acc = catalog.accelerators.get(m.accelerator_id)
    if acc is None or m.group not in SERVE_GROUPS:
        return None
    with step_fit_in_force(fit):
        try:
            at, _ = serve_predictor(m, catalog, acc)
            return at(0.0)
        except (JobInputError, ValueError):
            return None


def step_row(m: Measurement, catalog):
    """The ``estimate.step_cost.StepRow`` of a row that implies a step cost (``step_constant``) or a matrix-multiply
    share (``batch_mm_constant``), or None: its constant's value at which the serving model meets the measured
    figure, the other constants as fitted."""
    from advisor.estimate.step_cost import StepRow, bounds_of, implied_value

    name = step_constant(m, catalog)
    if name is None:
        name = batch_mm_constant(m, catalog)
        if name is None:
            return None
        bounds = bounds_of(name)

        def share(fit) -> float | None:
            """The share at which the row's throughput (rising with it) is met; None where it lies beyond the
            bounds (the products do not bind the row: a batch that reads memory)."""
            x = implied_value(lambda v: figure_at_steps(m, catalog, fit.with_values({name: v})), m.value, bounds)
            return None if x is None or not bounds[0] < x < bounds[1] else x

        return StepRow(m.row_id, m.source_id, name, share)
    return StepRow(m.row_id, m.source_id, name, lambda fit: implied_value(
        lambda x: figure_at_steps(m, catalog, fit.with_values({name: x})), m.value))


def _scaled_prediction(m: Measurement, catalog, acc) -> Prediction:
    try:
        at, klass = serve_predictor(m, catalog, acc)
    except (JobInputError, ValueError) as exc:
        return Prediction(m.row_id, None, str(exc))
    raw = at(0.0)
    if raw is None or raw <= 0:
        return Prediction(m.row_id, None, "the serving model has no steady state for this setup")
    if m.group not in SCALED:
        return Prediction(m.row_id, raw, "", klass)
    implied = implied_log_scale(lambda t: at(t) or math.inf, m.value)
    return Prediction(m.row_id, raw, "", klass, implied, at)


def observation(m: Measurement, p: Prediction) -> Observation:
    """The fitting record of a measurement and its raw prediction (``p.predicted`` must be set)."""
    return Observation(m.row_id, m.group, m.source_id, p.klass, m.value, float(p.predicted),
                       f"{m.accelerator_id}/{m.model}", implied=p.implied,
                       position=position_of(m, p.klass) if m.group in REACH_GROUPS else None)
