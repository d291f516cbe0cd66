"""One replica of a server as the serving model sees it: a model, a weight format and a runtime on an accelerator
(``estimate.serving.ServerSpec``), with the launch values that make the runtime behave so.

What each runtime does with memory and batches (``RuntimeServing``) is taken from its own documentation and
source; the decode's bandwidth efficiency by weight format and runtime is ``estimate.decode``'s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from advisor.catalog import Accelerator
from advisor.estimate import decode, memory
from advisor.estimate.model import ModelArch, kv_values_per_token
from advisor.estimate.serving import Lengths, ServerSpec
from advisor.planner.placement import intra_node_bps

GIB = 2**30
PREFILL_ETA_PRIOR = 0.50  # assumption: prefill reaches half the tensor peak (GEMMs at a few thousand tokens)
DECODE_COMPUTE_ETA_PRIOR = 0.50  # assumption: batched decode GEMMs (small M) reach half the tensor peak
# All-reduce latency per call for small messages (two per layer in tensor-parallel decode): an assumption of
# about 10 us over NVLink/XGMI and 30 us over PCIe (NCCL's small-message latency is of this order).
ALLREDUCE_LATENCY_S = {"fabric": 10e-6, "pcie": 30e-6}
FABRIC_BPS = 64e9  # links faster than PCIe 5.0 x16 (one direction) are a GPU fabric


@dataclass(frozen=True)
class RuntimeServing:
    """How a runtime serves: batching, memory rule, prefill chunks, defaults of its server.

    Attributes:
        batching: ``continuous`` (a paged pool shared by all sequences) or ``slots`` (fixed slots).
        memory_fraction: the share of each device it takes (vLLM ``--gpu-memory-utilization`` 0.9; SGLang
            ``--mem-fraction-static`` about 0.88; 1.0 for runtimes that allocate what they need).
        overhead_bytes: per device beyond weights and cache: CUDA context, activation workspace, graphs.
        chunk_tokens: prefill tokens per step mixed with decode (0: prefill runs on its own).
        tensor_parallel: whether several devices work on one step together (False: llama.cpp's layer split,
            the layers run one device after the other).
        source: where these behaviours are documented.
    """

    batching: str
    memory_fraction: float
    overhead_bytes: float
    chunk_tokens: int
    tensor_parallel: bool
    source: str


RUNTIME_SERVING = {
    "vllm": RuntimeServing("continuous", 0.90, 1.5 * GIB, 2048, True,
                           "vLLM engine arguments: --gpu-memory-utilization 0.9, chunked prefill on by default "
                           "(V1), max_num_batched_tokens 2048 / max_num_seqs 256, or 8192 / 1024 on devices of "
                           "70 GiB or more other than A100 (vllm/engine/arg_utils.py, get_batch_defaults)"),
    "sglang": RuntimeServing("continuous", 0.88, 1.5 * GIB, 8192, True,
                             "SGLang server arguments: --mem-fraction-static (about 0.88 on large GPUs), "
                             "--chunked-prefill-size 8192 (sglang/srt/server_args.py)"),
    "tensorrt-llm": RuntimeServing("continuous", 0.90, 1.5 * GIB, 8192, True,
                                   "TensorRT-LLM: in-flight batching, paged KV cache with "
                                   "free_gpu_memory_fraction 0.9, chunked context (docs: KV cache management)"),
    "llama.cpp": RuntimeServing("slots", 1.0, 1.0 * GIB, 2048, False,
                                "llama.cpp server: -c tokens of cache shared by -np slots, continuous batching of "
                                "the slots on by default, prompt batches of -b 2048, layers split over GPUs "
                                "(tools/server/README.md)"),
    "exllama": RuntimeServing("continuous", 1.0, 1.0 * GIB, 2048, False,
                              "ExLlamaV2 dynamic generator: paged cache of a fixed size, prompts in chunks "
                              "(exllamav2 README)"),
    "mlc": RuntimeServing("continuous", 0.90, 1.0 * GIB, 2048, True,
                          "MLC LLM serve: paged KV cache sized by gpu_memory_utilization 0.85-0.9, prefill chunk "
                          "2048 (mlc-llm docs, serve configuration)"),
}
ALIASES = {"ollama": "llama.cpp", "lm-studio": "llama.cpp", "lmstudio": "llama.cpp", "trt-llm": "tensorrt-llm",
           "exllamav2": "exllama"}


def serving_profile(runtime: str) -> RuntimeServing:
    """The serving behaviour of a runtime (an alias resolves to its engine; unknown: vLLM's, which every
    continuous-batching server resembles)."""
    name = ALIASES.get(runtime, runtime)
    return RUNTIME_SERVING.get(name, RUNTIME_SERVING["vllm"])


def default_runtime(acc: Accelerator) -> str:
    """The runtime a serving job assumes when none is given: llama.cpp on consumer, workstation and Apple
    parts, vLLM on datacenter parts (what each group mostly runs)."""
    return "llama.cpp" if acc.kind in ("consumer", "workstation", "apple") else "vllm"


def vllm_batch_defaults(acc: Accelerator) -> tuple[int, int]:
    """``(max_num_batched_tokens, max_num_seqs)`` vLLM's API server picks: 8192 and 1024 on devices of 70 GiB
    or more other than A100, else 2048 and 256 (vllm/engine/arg_utils.py, ``get_batch_defaults``)."""
    if acc.memory_bytes >= 70 * GIB and not acc.id.startswith("a100"):
        return 8192, 1024
    return 2048, 256


@dataclass(frozen=True)
class ModelServing:
    """What a model brings to a server, whatever the hardware."""

    arch: ModelArch
    params: float
    active_params: float
    weight_bytes: float
    weight_format: str
    kv_bits: int
    kv_cache_dtype: str  # the runtime's name for the cache format: auto, fp8, q8_0, q4_0

    @property
    def kv_bytes_per_token(self) -> float:
        return kv_values_per_token(self.arch) * self.kv_bits / 8.0

    @property
    def attn_flops_per_pair(self) -> float:
        """``4 * L * n_heads * d_head``: scores and values, two FLOPs per multiply-add."""
        return 4.0 * self.arch.layers * self.arch.heads * self.arch.d_head


def model_serving(arch: ModelArch, params: float, active: float, precision: str, quant: str | None,
                  kv_cache_bits: int, weight_bytes: float | None = None) -> ModelServing:
    """The model's weights in its format and its cache in the asked format (fp8 weights keep an fp8 cache
    at most 8 bits, as ``memory.inference_memory`` does)."""
    fmt = decode.format_key(precision, quant)
    wb = weight_bytes or params * memory.weight_bits(precision, quant) / 8.0
    bits = min(kv_cache_bits, 8 if precision == "fp8" else 16)
    dtype = {16: "auto", 8: "fp8", 4: "q4_0"}[bits]
    return ModelServing(arch, float(params), float(active), float(wb), fmt, bits, dtype)


def replica_spec(model: ModelServing, acc: Accelerator, devices: int, runtime: str, *, precision: str,
                 max_seqs: int | None, lengths: Lengths, context: int | None = None,
                 eta_mem: float | None = None) -> tuple[ServerSpec, dict]:
    """One replica of ``devices`` accelerators running ``runtime``, and its launch values.

    Args:
        max_seqs: the job's ``--max-seqs`` (slots for llama.cpp), or None for the runtime's default (llama.cpp:
            as many slots of the request's length as the cache holds, at most 64).
        context: the job's ``--context``: the longest request the server takes (vLLM ``--max-model-len``;
            llama.cpp's context of one slot). Default: the p99 prompt + p99 output, rounded up to 256.
        eta_mem: a bandwidth efficiency measured on this machine, instead of the runtime's.
    Returns:
        ``(spec, launch)``: launch holds ``runtime``, ``tp``, ``max_num_seqs``, ``max_model_len``,
        ``gpu_memory_utilization``, ``kv_cache_dtype``, ``chunk_tokens``, ``slots``, ``ctx_size`` (llama.cpp
        ``-c``) and ``origin`` (where the efficiencies come from).
    """
    prof = serving_profile(runtime)
    name = ALIASES.get(runtime, runtime)
    eff = decode.decode_efficiency(model.weight_format, name if name in decode.RUNTIMES else None)
    eta = eta_mem if eta_mem is not None else eff.eta_mem
    compute_precision = "fp8" if precision == "fp8" else "bf16"
    peak = acc.peak_flops(compute_precision) or acc.peak_flops("fp16") or acc.peak_flops("fp32") or 0.0
    # The longest request: p99 of prompt and output; a paged cache spends nothing on the headroom of twice the
    # mean, fixed slots reserve it (so they keep p99).
    tail = lengths.prompt_q(0.99) + lengths.output_q(0.99)
    if prof.batching != "slots":
        tail = max(tail, 2.0 * (lengths.prompt_mean + lengths.output_mean))
    longest = context or int(math.ceil(tail / 256.0) * 256)
    if model.arch.max_context:
        longest = min(longest, model.arch.max_context) if context is None else longest
    chunk, seqs = prof.chunk_tokens, 256
    if name == "vllm":
        chunk, seqs = vllm_batch_defaults(acc)
    parallel = devices if prof.tensor_parallel else 1
    overhead = prof.overhead_bytes
    link = "fabric" if intra_node_bps(acc) > FABRIC_BPS else "pcie"
    step_overhead = 2 * model.arch.layers * ALLREDUCE_LATENCY_S[link] if parallel > 1 else 0.0
    capacity = float(acc.usable_memory_bytes)
    slot_tokens = 0
    if prof.batching == "slots":
        slot_tokens = longest
        free = capacity * prof.memory_fraction - model.weight_bytes / devices - overhead
        fit = int(max(0.0, free * devices) // (model.kv_bytes_per_token * slot_tokens))
        seqs = max_seqs or max(1, min(fit, 64))
    elif max_seqs:
        seqs = max_seqs
    spec = ServerSpec(
        weight_bytes=model.weight_bytes, devices=devices, parallel_devices=parallel, capacity_bytes=capacity,
        bandwidth_bps=acc.mem_bandwidth_bps, eta_mem=min(1.0, eta), decode_flops=peak * DECODE_COMPUTE_ETA_PRIOR,
        prefill_flops=peak * PREFILL_ETA_PRIOR, active_params=model.active_params,
        attn_flops_per_pair=model.attn_flops_per_pair, kv_bytes_per_token=model.kv_bytes_per_token,
        batching=prof.batching, memory_fraction=prof.memory_fraction, overhead_bytes=overhead, max_seqs=seqs,
        chunk_tokens=chunk, step_overhead_s=step_overhead, slot_tokens=slot_tokens)
    launch = {"runtime": name, "tp": devices, "max_num_seqs": seqs, "max_model_len": longest,
              "gpu_memory_utilization": prof.memory_fraction, "kv_cache_dtype": model.kv_cache_dtype,
              "chunk_tokens": chunk, "slots": seqs if prof.batching == "slots" else None,
              "ctx_size": seqs * slot_tokens if prof.batching == "slots" else None,
              "batching": prof.batching, "tensor_parallel": prof.tensor_parallel,
              "origin": (f"bandwidth efficiency {eta:.2f} ({'measured on this machine' if eta_mem else eff.origin});"
                         f" prefill at {PREFILL_ETA_PRIOR:g} and batched decode at {DECODE_COMPUTE_ETA_PRIOR:g} "
                         f"of the {compute_precision} peak (assumptions); {prof.source}")}
    return spec, launch


def fewest_devices(model: ModelServing, acc: Accelerator, runtime: str, lengths: Lengths, most: int) -> int | None:
    """The fewest devices (1, 2, 4, 8 ... up to ``most``) whose memory holds the weights, the runtime's overhead
    and the cache of one request of the mean length; None when none do."""
    prof = serving_profile(runtime)
    one = model.kv_bytes_per_token * (lengths.prompt_mean + lengths.output_mean)
    n = 1
    while n <= most:
        free = acc.usable_memory_bytes * prof.memory_fraction - model.weight_bytes / n - prof.overhead_bytes
        if free * n >= one:
            return n
        n = n * 2 if n * 2 <= most or n == most else most
    return None
