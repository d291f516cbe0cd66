"""One replica of a server as the serving model sees it: a model, a weight format and a runtime on an accelerator
(``estimate.serving.ServerSpec``), with the launch values that make the runtime behave so.

The runtime's profile (``resources/runtimes.toml`` through ``planner.request.runtime_choice``) gives the weight
format's bits, the decode's bandwidth efficiency by format class on the accelerator's backend, the per-layer
overhead of a step, the prefill kernels and their efficiencies, the KV-cache formats, how it batches and its
memory rule and how it spreads a model over devices. What only a server needs beyond that (the prefill chunk, the
default batch limit, the memory kept for activations) is ``RuntimeServing``, from each server's own
documentation and source.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from advisor.catalog import Accelerator
from advisor.catalog.runtimes import RuntimeChoice, step_fit
from advisor.estimate import comms, compute, decode, memory
from advisor.estimate.model import (
    ModelArch,
    attention_layers,
    attention_width,
    expert_layers,
    param_count,
    prefill_kernel_count,
    prompt_share,
    routed_expert_active_params,
)
from advisor.estimate.serving import Lengths, ServerSpec, kv_pool_bytes
from advisor.estimate.step_cost import step_name
from advisor.planner.placement import intra_node_bps

GIB = 2**30
FABRIC_BPS = 64e9  # links faster than PCIe 5.0 x16 (one direction) are a GPU fabric


@dataclass(frozen=True)
class RuntimeServing:
    """What a server does beyond its runtime profile.

    Attributes:
        memory_fraction: the share of each device it takes when the profile names none (SGLang's
            ``--mem-fraction-static``); the profile's ``gpu_memory_utilization`` wins.
        overhead_bytes: per device beyond weights and cache: CUDA context, activation workspace, graphs.
        chunk_tokens: prefill tokens per step mixed with decode (0: prefill runs on its own).
        max_seqs: the default batch limit (vLLM's depends on the device: ``vllm_batch_defaults``).
        source: where these behaviours are documented.
        host_per_seq_s: host time each running sequence adds to a step (scheduling, sampling, detokenising), where
            a published run measured it; 0 where none did (then not modelled).
        expert_parallel: whether a mixture of experts on several devices runs its experts expert-parallel (each
            token dispatched to the devices holding its experts and combined back) rather than tensor-parallel.
        reserve_whole: whether a request is admitted only with cache for its whole prompt and output
            (``estimate.serving.held_tokens``).
        step_family: the runtime whose tensor-parallel step code it runs, whose fitted step costs it takes
            (``estimate.step_cost``); its own id when empty.
        mixed_prefill: whether prompt chunks ride on the decode steps of the sequences running (vLLM V1's chunked
            prefill) or a prefill runs as a pass of its own, the running batch waiting for it (SGLang unless
            ``--enable-mixed-chunk``); the prefill budget ``chunk_tokens`` bounds a pass's tokens either way.
        decode_first: whether a prompt's first token comes from the decode step after its pass
            (``estimate.serving.ServerSpec.decode_first``).
        eager_prefill: whether a prefill pass launches its kernels one by one from Python (vLLM and SGLang capture
            CUDA graphs for decode batches only), paying the host time per kernel the step fit holds
            (``prefill_overhead_s``); a C++ engine's launches (TurboMind, TensorRT-LLM) are within its step.
        host_overlap_per_seq_s: host time a step for each request a rank runs, where the host prepares the next
            step while the devices run this one, so a step takes the larger of the two
            (``estimate.serving.ServerSpec.host_overlap_s``), where a published figure gives it; 0: not modelled.
    """

    memory_fraction: float
    overhead_bytes: float
    chunk_tokens: int
    max_seqs: int
    source: str
    host_per_seq_s: float = 0.0
    expert_parallel: bool = False
    reserve_whole: bool = False
    step_family: str = ""
    mixed_prefill: bool = True
    decode_first: bool = False
    eager_prefill: bool = False
    host_overlap_per_seq_s: float = 0.0


# TensorRT-LLM's PyTorch executor: 45.11 ms of host work an iteration at 1,536 requests a rank (PR #10273, GB200 with
# gpt-oss-120b, attention data parallel over 2 ranks, max_batch_size 1536, 3,072 concurrent 1k/1k requests)
TRTLLM_HOST_STEP_S, TRTLLM_HOST_REQUESTS = 45.11e-3, 1536

RUNTIME_SERVING = {
    "vllm": RuntimeServing(1.0, 1.5 * GIB, 2048, 256,
                           "vLLM engine arguments: chunked prefill on by default (V1), max_num_batched_tokens 2048 "
                           "and max_num_seqs 256, or 8192 and 1024 on devices of 70 GiB or more other than A100 "
                           "(vllm/engine/arg_utils.py, get_batch_defaults); activations and CUDA graphs: about "
                           "1.5 GiB (assumption)", eager_prefill=True),
    "sglang": RuntimeServing(0.88, 1.5 * GIB, 8192, 1024,
                             "SGLang server arguments: --mem-fraction-static about 0.88 on large GPUs, "
                             "--chunked-prefill-size 8192 (sglang/srt/server_args.py); its tensor-parallel layer is "
                             "vLLM's (sglang/srt/distributed: parallel_state and the custom all-reduce adapted from "
                             "vLLM's), so it takes vLLM's fitted step costs; a prefill batch runs as a forward pass "
                             "of its own before the running decode batch's next step, the prompts waiting taken "
                             "together up to the budget (--enable-mixed-chunk off by default: server_args.py; "
                             "managers/scheduler.py, get_next_batch_to_run)", step_family="vllm",
                             mixed_prefill=False, eager_prefill=True),
    "lmdeploy": RuntimeServing(1.0, 1.5 * GIB, 8192, 128,
                               "LMDeploy's TurboMind engine (InternLM/lmdeploy v0.1.0a1, src/turbomind/models/llama/"
                               "LlamaBatch.cc): each iteration takes every queued request up to max_batch_size, "
                               "prefills all but the last token of their prompts (ContextDecode, in passes of "
                               "max_context_token_num tokens) and decodes the whole batch once (Generate, "
                               "step_length 1), whose output is all of their first tokens; its cache as large as "
                               "the device leaves (cache_max_entry_count a block count: its A100 benchmark scripts "
                               "set 1,000 and 500 blocks of 128 tokens for Llama 2 7B and 13B, 76.6-78.4 of 80 GB "
                               "in use in their table); passes of 8,192 prompt tokens (max_prefill_token_num's "
                               "default, lmdeploy/messages.py TurbomindEngineConfig; the A100 scripts' "
                               "max_context_token_num 4 x session_len = 16,384 plans the same); 128 sequences "
                               "(those scripts' max_batch_size) is an assumption; its tensor-parallel layer fitted "
                               "with vLLM's (step costs of the same rows)",
                               step_family="vllm", decode_first=True),
    "tensorrt-llm": RuntimeServing(1.0, 1.5 * GIB, 8192, 256,
                                   "TensorRT-LLM: in-flight batching, chunked context, max_batch_size 256 by "
                                   "default (trtllm-serve); mixtures of experts expert-parallel with attention data "
                                   "parallelism, as its documented MoE runs (docs/source/performance/"
                                   "perf-overview.md: --ep, enable_attention_dp); a request admitted only with cache "
                                   "for its whole prompt and output (capacity scheduler policy GUARANTEED_NO_EVICT, "
                                   "the default: docs/source/performance/performance-tuning-guide/"
                                   "useful-runtime-flags.md); the host's work for the next step runs while the "
                                   "devices run this one (overlap scheduler, on by default: docs/source/features/"
                                   f"overlap-scheduler.md), {TRTLLM_HOST_STEP_S * 1e3:.2f} ms an iteration at "
                                   f"{TRTLLM_HOST_REQUESTS:,} requests a rank (PR #10273, GB200), so a step takes at "
                                   f"least {TRTLLM_HOST_STEP_S / TRTLLM_HOST_REQUESTS * 1e6:.1f} us a running request",
                                   expert_parallel=True, reserve_whole=True,
                                   host_overlap_per_seq_s=TRTLLM_HOST_STEP_S / TRTLLM_HOST_REQUESTS),
    "llama.cpp": RuntimeServing(1.0, 1.0 * GIB, 2048, 64,
                                "llama.cpp server: continuous batching of the slots on by default, prompt batches "
                                "of -b 2048, layers split over GPUs (-sm layer) (tools/server/README.md); compute "
                                "buffers and context about 1 GiB (assumption); 0.105 ms of host time a step per "
                                "further running slot (llama.cpp PR #24843, RTX 5090 with gpt-oss-20b: "
                                "t_post_decode 0.105 ms at one request, 0.211 ms at two)",
                                host_per_seq_s=0.105e-3),
    "exllamav2": RuntimeServing(1.0, 1.0 * GIB, 2048, 64,
                                "ExLlamaV2 dynamic generator: paged cache of a fixed size, prompts in chunks, "
                                "layers split over GPUs (exllamav2 README)"),
    "mlc": RuntimeServing(0.90, 1.0 * GIB, 2048, 128,
                          "MLC LLM serve: paged KV cache sized by gpu_memory_utilization, prefill chunk 2048 "
                          "(mlc-llm docs, serve configuration)"),
    "mlx": RuntimeServing(1.0, 1.0 * GIB, 0, 1,
                          "mlx-lm server: one request at a time (static batching in the runtime profile)"),
    "transformers": RuntimeServing(1.0, 1.0 * GIB, 0, 1,
                                   "transformers generate behind a plain server: one request at a time"),
}


def step_family(runtime: str) -> str:
    """The runtime whose tensor-parallel step a runtime runs (``RuntimeServing.step_family``)."""
    return serving_profile(runtime).step_family or (runtime if runtime in RUNTIME_SERVING else "vllm")


def serving_profile(runtime: str) -> RuntimeServing:
    """What a runtime's server does beyond its profile (an unknown id: vLLM's, which every
    continuous-batching server resembles)."""
    return RUNTIME_SERVING.get(runtime, RUNTIME_SERVING["vllm"])


def vllm_batch_defaults(acc: Accelerator) -> tuple[int, int]:
    """``(max_num_batched_tokens, max_num_seqs)`` vLLM's API server picks: 8192 and 1024 on devices of 70 GiB
    or more other than A100, else 2048 and 256 (vllm/engine/arg_utils.py, ``get_batch_defaults``)."""
    if acc.memory_bytes >= 70 * GIB and not acc.id.startswith("a100"):
        return 8192, 1024
    return 2048, 256


@dataclass(frozen=True)
class ModelServing:
    """What a model brings to a server, whatever the hardware: its architecture and parameters (the weight
    format, and so the bytes, come with each option's runtime choice)."""

    arch: ModelArch
    params: float
    active_params: float
    weight_bytes: float | None  # the exact bytes of a model file, when the request reads them
    precision: str
    kv_bits: int
    projector_bytes: float = 0.0  # of weight_bytes, a multimodal projector's (loaded, not read per token)

    @property
    def attn_flops_per_pair(self) -> float:
        """``4 * L_attn * attention_width``: scores and values, two FLOPs per multiply-add, in the layers that attend
        (``estimate.model.attention_layers``; ``attention_width``: ``n_heads * d_head``, multi-head latent
        attention's expanded heads at prefill)."""
        return 4.0 * attention_layers(self.arch) * attention_width(self.arch)

    def kv_bytes_per_token(self) -> float:
        """KV bytes of one token, all layers (fp8 weights keep an 8-bit cache at most)."""
        return memory.kv_token_bytes(self.arch, memory.kv_value_bytes(self.kv_bits, self.precision))

    def weights_of(self, choice: RuntimeChoice) -> float:
        """The weights' bytes in the runtime's format (a file's own bytes when the request reads them)."""
        return float(self.weight_bytes or memory.format_weight_bytes(self.arch, self.params, choice.weight_format.id))

    def cache_tokens(self, pool_bytes: float) -> int:
        """Tokens of context one request's cache may hold in ``pool_bytes`` (``estimate.memory.largest_context``:
        sliding-window layers hold at most their window, linear layers a fixed state), up to the model's maximum
        context when it has one larger than any pool: the plan's largest context and serve's cache alike."""
        if pool_bytes <= 0:
            return 0
        return memory.largest_context(self.arch, pool_bytes, 1, memory.kv_value_bytes(self.kv_bits, self.precision))


# Runtimes that multiply an NVFP4 checkpoint's linear layers on FP4 tensor cores: each layer's input is quantised to
# NVFP4 (FP4 values, an FP8 scale per 16) and the product runs FP4 by FP4 (W4A4) at twice the FP8 rate, on parts
# with FP4 units (NVIDIA Blackwell): TensorRT-LLM's NVFP4 mode, vLLM's and SGLang's ModelOpt FP4 linear methods.
# Elsewhere (Hopper, Ada) vLLM runs such weights through a weight-only kernel, dequantised to 16 bits.
FP4_RUNTIMES = ("tensorrt-llm", "vllm", "sglang")


def fp4_products(choice: RuntimeChoice, acc: Accelerator) -> bool:
    """Whether ``choice`` runs its products in fp4 on ``acc``: a format whose own type is fp4 (NVFP4), under a
    runtime of ``FP4_RUNTIMES`` on CUDA, on a part with FP4 tensor units (``Accelerator.supports("fp4")``). The one
    rule of the planner's fp4 arithmetic (docs/method.md, "FP4 products"); MXFP4 (gpt-oss) is dequantised as before."""
    return (choice.weight_format.native == "fp4" and choice.runtime.id in FP4_RUNTIMES and choice.backend == "cuda"
            and acc.supports("fp4"))


def prefill_kernel(choice: RuntimeChoice, sixteen_bit: str, acc: Accelerator) -> str:
    """The peak type a prompt's matrix multiplies (and a batch's) run at: the quantised kernel's (llama.cpp's int8
    MMQ on NVIDIA; fp8 and W8A8 at their own type; NVFP4 in fp4 where ``fp4_products`` holds, else dequantised)
    for quantised weights, unless they are dequantised first (``RuntimeChoice.dequantised_prefill``); else the
    profile's 16-bit kernel, or ``sixteen_bit`` (the request's)."""
    fmt, prof = choice.weight_format, choice.profile
    if fmt.quantised and not choice.dequantised_prefill:
        if fmt.native == "fp4":
            return "fp4" if fp4_products(choice, acc) else prof.prefill_peak_quantized
        return fmt.native or prof.prefill_peak_quantized
    return prof.prefill_peak or sixteen_bit


def prefill_matmul_eta(choice: RuntimeChoice, kernel: str, kernel_peak_flops: float, acc: Accelerator,
                       chunk_tokens: float = decode.PIPELINE_CHUNK, moe: bool = False) -> float:
    """The share of ``kernel_peak_flops`` a prompt's matrix multiplies reach on ``acc``: the runtime's share of
    the kernel's sustained peak (``compute.power_capped_flops``), less the vector-unit work it does in series
    (``BackendProfile.prefill_matmul_flops``; docs/method.md, "Inference speed").

    Quantised weights dequantised first (``RuntimeChoice.dequantised_prefill``) are read and written as 16-bit
    copies once per micro-batch of ``chunk_tokens`` tokens (llama.cpp's ``-ub``, 512), in series with the multiply:
    ``(bits / 8 + 2)`` bytes per weight at the backend's 16-bit read efficiency, against ``2 * chunk`` FLOPs.

    The profile's share is scaled by what the runtime's kernels of that type reach on published throughputs at a
    load of users (the step fit's ``batch_mm``, ``batch_mm_name``; 1 where no two sources check it), held at most
    the sustained peak: a prompt's products and a batch's alike, in the plan and the server. A mixture of experts
    (``moe``) reaches that share times the share its grouped expert products reach of the dense ones'
    (``moe_mm_name``; 1 where no two sources check it)."""
    sustained = compute.power_capped_flops(kernel_peak_flops, acc.tdp_w, kernel)
    quantised_kernel = choice.weight_format.quantised and not choice.dequantised_prefill
    rate = choice.profile.prefill_matmul_flops(quantised_kernel, sustained, acc.peak_flops("fp32"))
    share = step_fit().value(batch_mm_name(choice, kernel))
    if moe:  # a mixture of experts' grouped expert products reach their own share of the dense ones'
        share *= step_fit().value(moe_mm_name(choice))
    rate = min(sustained, rate * share)
    if choice.dequantised_prefill and acc.mem_bandwidth_bps:
        per_weight = choice.weight_format.bits_per_weight / 8.0 + 2.0
        bandwidth = acc.mem_bandwidth_bps * choice.profile.eta_for("f16")
        rate = 1.0 / (1.0 / rate + per_weight / (2.0 * max(1.0, chunk_tokens) * bandwidth))
    return rate / kernel_peak_flops


def batch_mm_name(choice: RuntimeChoice, kernel: str) -> str:
    """The step fit's name (``estimate.step_cost``) of the share of the profile's matrix-multiply efficiency that
    ``choice``'s runtime reaches with ``kernel`` (fp16 and bf16 share one: the same peak and kernels)."""
    return step_name("batch_mm", choice.runtime.id, choice.backend, kind="16bit" if kernel in ("fp16", "bf16")
                     else kernel)


def moe_mm_name(choice: RuntimeChoice) -> str:
    """The step fit's name of the share of the dense products' share (``batch_mm_name``) that ``choice``'s runtime
    reaches on a mixture of experts: its experts' products run as grouped kernels over the tokens routed to each,
    not as one product over the batch, whatever the kernel type."""
    return step_name("moe_mm", choice.runtime.id, choice.backend)


def link_class(acc: Accelerator) -> str:
    """``fabric`` where the devices' link is faster than PCIe 5.0 x16 (NVLink, XGMI), else ``pcie``."""
    return "fabric" if intra_node_bps(acc) > FABRIC_BPS else "pcie"


def step_overhead_s(arch: ModelArch, choice: RuntimeChoice, acc: Accelerator, devices: int) -> float:
    """The fixed cost of one step, for the plan and the serving model alike: the runtime's launch overhead per
    layer and, over several tensor-parallel devices, a time per layer (its two all-reduces and what runs around
    them) and for a mixture of experts a further time in each expert layer for each expert a token runs (routing,
    dispatch, the fused expert kernel's blocks), by step family, backend and link, fitted on published serving
    runs where two sources or more check it, else assumed (``estimate.step_cost``; the fit in force:
    ``catalog.runtimes.step_fit``)."""
    t = arch.layers * choice.profile.overhead_per_layer_s
    if devices > 1 and choice.runtime.multi_device == "tensor":
        fit, link = step_fit(), link_class(acc)
        family = step_family(choice.runtime.id)
        t += arch.layers * fit.value(step_name("tp_layer", family, choice.backend, link))
        if arch.is_moe:
            experts = arch.experts_per_token + arch.shared_experts
            t += expert_layers(arch) * experts * fit.value(step_name("moe_expert", family, choice.backend, link))
    return t


def prefill_overhead_s(arch: ModelArch, choice: RuntimeChoice, acc: Accelerator, devices: int) -> float:
    """What a prefill pass pays beyond a step's fixed cost (``step_overhead_s``), for the plan's prefill and the
    serving model's alike: over several tensor-parallel devices, where the server launches a pass's kernels from
    Python (``RuntimeServing.eager_prefill``: vLLM and SGLang capture CUDA graphs for decode batches only), the
    kernels one device launches in the pass (``estimate.model.prefill_kernel_count``, one more a linear layer where
    its products run on 8-bit inputs, quantised first) times a host time per kernel by step family, backend and
    link, fitted on the published first tokens of one user where two sources or more check it, else none
    (``estimate.step_cost``). DeepSeek-V3 in fp8 launches 2,044 kernels a pass, Qwen3-235B-A22B in bf16 1,504."""
    if devices <= 1 or choice.runtime.multi_device != "tensor" or not serving_profile(choice.runtime.id).eager_prefill:
        return 0.0
    fit, link = step_fit(), link_class(acc)
    family = step_family(choice.runtime.id)
    kernels = prefill_kernel_count(arch, prefill_kernel(choice, "bf16", acc) in QUANTISED_INPUT_KERNELS)
    return kernels * fit.value(step_name("prefill_kernel", family, choice.backend, link))


# Kernel types whose products take quantised inputs, quantised by a kernel of their own before each linear layer (fp8
# W8A8 and DeepSeek's block fp8: SGLang's per-token-group quantisation; int8 W8A8; NVFP4's fp4 inputs).
QUANTISED_INPUT_KERNELS = ("fp8", "int8", "fp4")


# vLLM's memory outside PyTorch's allocator (CUDA context, NCCL, cuBLAS workspaces) in its startup profile: 0.35 GiB
# (Llama-3.1-8B on an RTX 3090, vLLM issue 10517's log: non_torch_memory=0.35GiB).
VLLM_NON_TORCH_BYTES = 0.35 * GIB


def vllm_activation_peak_bytes(arch: ModelArch, tokens: int, seqs: int, tp: int) -> float:
    """The peak activation of vLLM's profiling forward pass of ``tokens`` tokens (``max_num_batched_tokens``) in
    ``seqs`` sequences (``max_num_seqs``) on one of ``tp`` tensor-parallel devices, which it keeps from the cache
    (vllm ``determine_available_memory``: the budget ``gpu_memory_utilization x total`` less the weights, the peak
    of that pass and the memory outside PyTorch): the feed-forward block at its widest holds, for every token, its
    input and normalised input (``2 h``) and the gated projection and its product (``3 f / tp``), in 16 bits; the
    sampler holds every sequence's logits in fp32 (``4 V``). A mixture of experts' ``f`` is its routed and shared
    experts' width. Llama-3.1-8B at 20,000 tokens and 256 sequences: 2.03 GiB, where vLLM measured
    17.06 - 14.99 = 2.07 GiB (issue 10517)."""
    f = arch.ffn
    if arch.experts > 0 and arch.experts_per_token > 0:
        f = (arch.experts_per_token + arch.shared_experts) * (arch.moe_ffn or arch.ffn)
    return tokens * (2.0 * arch.hidden + 3.0 * f / max(1, tp)) * 2.0 + seqs * arch.vocab * 4.0


def attention_data_parallel(model: ModelServing, choice: RuntimeChoice) -> bool:
    """Whether a runtime runs a mixture of experts' attention data-parallel over its devices (each device serves
    its own requests, with their caches whole): TensorRT-LLM's documented MoE runs (``enable_attention_dp`` with
    expert parallelism, ``RuntimeServing.expert_parallel``)."""
    return (serving_profile(choice.runtime.id).expert_parallel and model.arch.experts > 0
            and choice.runtime.multi_device == "tensor")


def kv_parts(model: ModelServing, devices: int, choice: RuntimeChoice, *, one_request: bool = False) -> int:
    """Into how many parts a runtime's devices split the KV cache, as the plan's memory splits it
    (``estimate.memory.kv_shards``): a layer split's devices each hold their layers' cache; tensor parallelism at
    most as many parts as KV heads, MLA's latent whole on every GPU. Attention run data-parallel
    (``attention_data_parallel``) spreads the requests, not the heads: the pool is every device's, and one request's
    cache (``one_request``) is whole on one device."""
    if attention_data_parallel(model, choice):
        return 1 if one_request else devices
    engine = "llama.cpp" if choice.runtime.multi_device == "layer" else "exact"
    return memory.kv_shards(model.arch, devices, engine)


def request_cache_tokens(model: ModelServing, spec: ServerSpec, choice: RuntimeChoice) -> int:
    """Tokens of cache one request may hold on a replica (the longest context it takes): the pool
    (``estimate.serving.kv_pool_bytes``) in the parts one request's cache is split into (``kv_parts``)."""
    parts = spec.kv_shards or spec.devices
    return model.cache_tokens(kv_pool_bytes(spec) * kv_parts(model, spec.devices, choice, one_request=True) / parts)


def runtime_overhead_bytes(choice: RuntimeChoice, arch: ModelArch | None = None, acc: Accelerator | None = None,
                           devices: int = 1, weight_bytes: float = 0.0) -> float:
    """Bytes per device a runtime takes beyond a ``1/d`` share of the weights and the cache: vLLM's startup profile
    where the model and accelerator are known (``VLLM_NON_TORCH_BYTES`` and ``vllm_activation_peak_bytes`` at its
    batch defaults, ``vllm_batch_defaults``; the CUDA graphs it captures afterwards come out of the ``1 -
    gpu_memory_utilization`` it leaves); else the runtime's assumed figure (``RuntimeServing.overhead_bytes``); and,
    given the model's ``weight_bytes``, the weights each device keeps whole beyond its share (``replicated_bytes``)."""
    kept = replicated_bytes(choice, arch, weight_bytes, devices) if weight_bytes > 0 else 0.0
    if choice.runtime.id == "vllm" and arch is not None and acc is not None:
        tokens, seqs = vllm_batch_defaults(acc)
        tp = devices if choice.runtime.multi_device == "tensor" else 1
        return VLLM_NON_TORCH_BYTES + vllm_activation_peak_bytes(arch, tokens, seqs, tp) + kept
    return serving_profile(choice.runtime.id).overhead_bytes + kept


def replicated_bytes(choice: RuntimeChoice, arch: ModelArch | None, weight_bytes: float, devices: int) -> float:
    """Bytes per device beyond a ``1/d`` share of the weights that a mixture of experts run expert-parallel with
    attention data parallelism keeps (``RuntimeServing.expert_parallel``: TensorRT-LLM's ``enable_attention_dp``):
    each of the ``d`` devices holds the weights outside the routed experts whole (attention, dense layers, shared
    experts, embeddings), the routed experts split between them; 0 for a dense model, one device or another
    runtime."""
    if (arch is None or devices <= 1 or not arch.is_moe or choice.runtime.multi_device != "tensor"
            or not serving_profile(choice.runtime.id).expert_parallel):
        return 0.0
    total = param_count(arch)
    share, _ = routed_experts(arch, total, total)
    return (1.0 - share) * weight_bytes * (1.0 - 1.0 / devices) if share > 0 else 0.0


def reserve_bytes(choice: RuntimeChoice, capacity_bytes: float, weight_bytes: float, devices: int,
                  arch: ModelArch | None = None, acc: Accelerator | None = None) -> float:
    """Bytes per device a runtime keeps from the KV cache beyond the weights: its overhead (context, activations,
    graphs: ``runtime_overhead_bytes``, of the model on the accelerator where given) and what its memory rule leaves
    unused (vLLM's ``1 - gpu_memory_utilization``; TensorRT-LLM's share of the free memory). ``weights + cache +
    reserve <= capacity`` is the one rule of what fits; the cache it leaves is ``estimate.serving.kv_pool_bytes``."""
    free = free_bytes(choice, capacity_bytes, weight_bytes, devices, arch, acc)
    kv_share = choice.runtime.kv_free_memory_fraction or 1.0
    return capacity_bytes - weight_bytes / devices - (free * kv_share if free > 0 else free)


def free_bytes(choice: RuntimeChoice, capacity_bytes: float, weight_bytes: float, devices: int,
               arch: ModelArch | None = None, acc: Accelerator | None = None) -> float:
    """Bytes of one device's memory rule (the profile's ``gpu_memory_utilization`` or the server's
    ``memory_fraction`` of ``capacity_bytes``) left after a ``1/d`` share of the weights and the runtime's overhead
    (``runtime_overhead_bytes``): what the cache may take before the runtime's own share of it."""
    return (capacity_bytes * memory_fraction(choice) - weight_bytes / devices
            - runtime_overhead_bytes(choice, arch, acc, devices, weight_bytes))


def memory_fraction(choice: RuntimeChoice) -> float:
    """The share of a device's memory the runtime's memory rule takes: the profile's ``gpu_memory_utilization``, else
    the server's ``memory_fraction``."""
    return choice.runtime.gpu_memory_utilization or serving_profile(choice.runtime.id).memory_fraction


def model_serving(arch: ModelArch, params: float, active: float, precision: str, kv_cache_bits: int,
                  weight_bytes: float | None = None, projector_bytes: float = 0.0) -> ModelServing:
    """The model as every replica sees it (``projector_bytes``: a multimodal GGUF's projector, part of
    ``weight_bytes``)."""
    return ModelServing(arch, float(params), float(active), weight_bytes, precision, kv_cache_bits,
                        float(projector_bytes))


def replica_spec(model: ModelServing, acc: Accelerator, devices: int, choice: RuntimeChoice, *,
                 max_seqs: int | None, lengths: Lengths, context: int | None = None,
                 eta_mem: float | None = None, compute_scale: float = 1.0, speed=None,
                 capacity_bytes: float | None = None) -> tuple[ServerSpec, dict]:
    """One replica of ``devices`` accelerators running the runtime ``choice``, and its launch values.

    Args:
        max_seqs: the job's ``--max-seqs`` (slots for llama.cpp), or None for the runtime's default (llama.cpp:
            as many slots of the request's length as the cache holds, at most 64).
        context: the job's ``--context``: the longest request the server takes (vLLM ``--max-model-len``;
            llama.cpp's context of one slot). Default: the p99 prompt + p99 output (a paged cache: at least
            twice the mean request, the headroom costs it nothing), rounded up to 256.
        eta_mem: a bandwidth efficiency measured on this machine, instead of the profile's 16-bit figure (the
            format keeps its ratio to it).
        compute_scale: the fitted share of the profile's compute efficiencies a served step reaches (the ``ttft``
            group of the calibration set, ``planner.calibrated.serve_compute_scale``): it multiplies the
            prompt's matrix-multiply and attention efficiencies and the decode's, each kept at most 1.
        speed: the calibrated ``estimate.decode.ServingSpeed`` of one request on these devices (the plan's,
            ``planner.one_request.request_speed``): its efficiencies, rates and step overhead replace the
            profile's, so one request alone is the plan's request (``estimate.serving.single_request``).
        capacity_bytes: memory of one device the server may use (owned hardware: what the plan uses), default
            the part's usable memory.
    Returns:
        ``(spec, launch)``: launch holds ``runtime``, ``tp``, ``max_num_seqs``, ``max_model_len``,
        ``gpu_memory_utilization``, ``kv_cache_dtype``, ``chunk_tokens``, ``slots``, ``ctx_size`` (llama.cpp
        ``-c``), ``batching`` and ``origin`` (where the efficiencies come from).
    """
    rt, prof, fmt = choice.runtime, choice.profile, choice.weight_format
    srv = serving_profile(rt.id)
    eta = prof.eta_for(fmt.cls)
    eta_kv = prof.eta_for("f16")
    if eta_mem is not None:  # the machine's measured figure replaces the 16-bit one; formats keep their ratio
        eta, eta_kv = min(1.0, eta_mem * eta / eta_kv), min(1.0, eta_mem)
    weights = model.weights_of(choice)
    # Prompt matrix multiplies at the quantised kernel's peak (llama.cpp's int8 MMQ on NVIDIA; fp8 and W8A8 at
    # their own type, NVFP4 at fp4 on FP4 units) or the 16-bit one; attention at the fp16 peak (catalog.runtimes.BackendProfile).
    kernel = prefill_kernel(choice, "fp8" if model.precision == "fp8" else "bf16", acc)
    mm_peak = acc.peak_flops(kernel) or acc.peak_flops("bf16") or acc.peak_flops("fp16") or acc.peak_flops("fp32")
    att_peak = acc.peak_flops("fp16") or mm_peak
    if not mm_peak:
        raise ValueError(f"{acc.id}: no peak FLOP/s for {kernel}")
    mm_eta = prefill_matmul_eta(choice, kernel, mm_peak, acc, min(decode.PIPELINE_CHUNK, lengths.prompt_mean),
                                model.arch.is_moe)
    mm_eta = min(1.0, mm_eta * compute_scale)
    att_eta = min(1.0, prof.attention_eta * compute_scale)
    tail = lengths.prompt_q(0.99) + lengths.output_q(0.99)
    if rt.batching != "slots":
        tail = max(tail, 2.0 * (lengths.prompt_mean + lengths.output_mean))
    longest = context or int(math.ceil(tail / 256.0) * 256)
    if model.arch.max_context and context is None:
        longest = min(longest, model.arch.max_context)
    chunk, seqs = srv.chunk_tokens, srv.max_seqs
    if rt.id == "vllm":
        chunk, seqs = vllm_batch_defaults(acc)
    fraction = memory_fraction(choice)
    tensor = rt.multi_device == "tensor"  # else whole layers per device, run one after the other
    parallel = devices if tensor else 1
    step_overhead = step_overhead_s(model.arch, choice, acc, devices)
    prefill_overhead = prefill_overhead_s(model.arch, choice, acc, devices)
    decode_flops = prefill_flops = mm_peak * mm_eta
    attention_flops = att_peak * att_eta
    if speed is not None:  # the plan's calibrated request: its reading efficiencies, step overhead and prompt rates
        # (a decode step's arithmetic binds only at batch, where the serving groups' own fit is in force: the
        # profile's rate stays; one request alone reads memory, so it is the plan's request either way)
        eta, eta_kv, step_overhead, weights = speed.eta_mem, speed.eta_kv, speed.overhead_s, speed.weight_bytes
        prefill_overhead = speed.prefill_overhead_s
        prefill_flops = speed.matmul_peak_flops * speed.matmul_eta
        attention_flops = speed.attention_peak_flops * speed.attention_eta
    routed_share, routed_pick = routed_experts(model.arch, model.params, model.active_params)
    per_seq = per_sequence_s(model.arch, parallel, intra_node_bps(acc), srv, choice.backend, step_family(rt.id))
    per_token = per_token_traffic_s(model.arch, parallel, intra_node_bps(acc), srv)
    capacity = float(capacity_bytes or acc.usable_memory_bytes)
    kv_token = model.kv_bytes_per_token()
    slot_tokens = 0
    batching = "slots" if rt.batching == "slots" else "continuous"
    overhead = runtime_overhead_bytes(choice, model.arch, acc, devices, weights)
    if batching == "slots":
        slot_tokens = longest
        free = free_bytes(choice, capacity, weights, devices, model.arch, acc)
        fit = int(max(0.0, free * kv_parts(model, devices, choice)) // (kv_token * slot_tokens))
        seqs = max_seqs or max(1, min(fit, srv.max_seqs))
    elif max_seqs and rt.batching != "static":
        seqs = max_seqs
    spec = ServerSpec(
        weight_bytes=weights, devices=devices, parallel_devices=parallel, capacity_bytes=capacity,
        bandwidth_bps=acc.mem_bandwidth_bps, eta_mem=eta, eta_kv=eta_kv, decode_flops=decode_flops,
        prefill_flops=prefill_flops, attention_flops=attention_flops,
        active_params=model.active_params, prompt_params=model.active_params * prompt_share(model.arch),
        attn_flops_per_pair=model.attn_flops_per_pair, kv_bytes_per_token=kv_token, batching=batching,
        memory_fraction=fraction, kv_free_fraction=rt.kv_free_memory_fraction or 1.0,
        overhead_bytes=overhead, max_seqs=seqs, chunk_tokens=chunk, mixed_prefill=srv.mixed_prefill,
        step_overhead_s=step_overhead,
        prefill_overhead_s=prefill_overhead,
        slot_tokens=slot_tokens, expert_fraction=min(1.0, model.active_params / model.params), per_seq_s=per_seq,
        per_token_s=per_token,
        pipeline_devices=1 if tensor else devices, pipeline_chunk=decode.PIPELINE_CHUNK,
        reserve_whole=srv.reserve_whole and batching == "continuous", routed_share=routed_share,
        decode_first=srv.decode_first,
        routed_pick=routed_pick, kv_shards=kv_parts(model, devices, choice),
        # each rank's host runs its own requests where the attention runs data-parallel, else every request
        host_overlap_s=srv.host_overlap_per_seq_s / (devices if attention_data_parallel(model, choice) else 1),
        # what a step does not read: the plan's request's own figure, else the same rule (estimate.memory)
        unread_bytes=speed.unread_bytes if speed is not None else memory.unread_weight_bytes(
            model.arch, weights, model.projector_bytes if model.weight_bytes else 0.0))
    launch = {"runtime": rt.id, "tp": devices, "max_num_seqs": seqs, "max_model_len": longest,
              "gpu_memory_utilization": fraction, "kv_cache_dtype": choice.kv_format, "kv_cache_bits": model.kv_bits,
              "weight_format": fmt.id, "chunk_tokens": chunk, "slots": seqs if batching == "slots" else None,
              "ctx_size": seqs * slot_tokens if batching == "slots" else None, "batching": rt.batching,
              "tensor_parallel": tensor, "backend": choice.backend,
              "backend_supported": choice.backend_supported,
              "origin": (f"{rt.name} on {choice.backend}: {fmt.id} weights read at {eta:.2f} of the bandwidth"
                         f"{' (measured on this machine)' if eta_mem else ''}, {step_overhead * 1e3:.2f} ms a step "
                         f"of overhead{f' and {prefill_overhead * 1e3:.1f} ms more a prefill pass' if prefill_overhead else ''}"
                         f", prompt multiplies at {mm_eta:.2f} of the {kernel} peak"
                         f"{f' (x{compute_scale:.2f} fitted on published serving runs)' if compute_scale != 1.0 else ''}"
                         f" ({prof.source}); "
                         f"{srv.source}")}
    if batching == "slots":  # llama-server's -c: the whole cache that fits, shared by the -np slots
        per_slot = max(slot_tokens, model.cache_tokens(kv_pool_bytes(spec)) // seqs // 256 * 256)
        if model.arch.max_context:
            per_slot = max(slot_tokens, min(per_slot, model.arch.max_context))
        launch["ctx_size"] = per_slot * seqs
    return spec, launch


def routed_experts(arch: ModelArch, params: float, active: float) -> tuple[float, float]:
    """``(share of the weights in the routed experts, k / E)`` of a mixture of experts (``ServerSpec.routed_share``,
    ``routed_pick``), from its architecture; ``(0, 0)`` for a dense model or where the architecture's experts do
    not fit the stated parameters (the batch's reading then falls back to ``1 - (1 - f)^B``)."""
    if not arch.is_moe or params <= 0:
        return 0.0, 0.0
    pick = arch.experts_per_token / arch.experts
    total = param_count(arch)
    routed = routed_expert_active_params(arch) / pick
    share = routed / total if total > 0 else 0.0
    if not 0.0 < share < 1.0 or share * pick > active / params:
        return 0.0, 0.0
    return share, pick


# Bytes of one token's activations an all-reduce carries (bf16) and an expert dispatch sends and combines back.
ACTIVATION_BYTES = 2.0


def per_sequence_s(arch: ModelArch, parallel: int, link_bps: float, srv: RuntimeServing, backend: str = "",
                   family: str = "vllm") -> float:
    """What each running sequence beyond the first adds to a decode step (``ServerSpec.per_seq_s``): the server's
    host time per sequence (``RuntimeServing.host_per_seq_s``), its token's traffic (``per_token_traffic_s``) and,
    over several tensor-parallel devices, a time per layer by step family, backend, link and model kind, fitted on published
    serving runs at load where two sources or more check it, else none (``estimate.step_cost``)."""
    t = srv.host_per_seq_s + per_token_traffic_s(arch, parallel, link_bps, srv)
    if parallel > 1 and backend:
        link = "fabric" if link_bps > FABRIC_BPS else "pcie"
        kind = "moe" if arch.is_moe else "dense"
        t += arch.layers * step_fit().value(step_name("seq_layer", family, backend, link, kind))
    return t


def per_token_traffic_s(arch: ModelArch, parallel: int, link_bps: float, srv: RuntimeServing) -> float:
    """The link time of one token in a step (``ServerSpec.per_token_s``, a decode token's or a prompt token's alike):
    over ``parallel`` tensor-parallel devices, its activations through two ring all-reduces a layer
    (``comms.ring_allreduce_s`` of ``2 L h`` activations); for a mixture of experts run expert-parallel, the token sent
    to the devices of its ``k`` experts and combined back in every expert layer (``expert_dispatch_s``), a ``1/d``
    share of it: the step's tokens are spread over the ``d`` devices (attention data parallel, or each device
    dispatching its share of the replicated tokens), each sending its own over its own link at once, so the
    all-to-all of ``B`` tokens takes what ``B / d`` tokens' take on one link (charged whole, it planned TensorRT-LLM's
    Qwen3-235B-A22B on eight H200s 1.4-2.6 times as slow as its performance overview). Traffic runs at the device
    link's rate (``placement.intra_node_bps``); 0 on one device."""
    if parallel <= 1 or link_bps <= 0:
        return 0.0
    t = comms.ring_allreduce_s(2.0 * arch.layers * arch.hidden * ACTIVATION_BYTES, parallel, link_bps)
    if srv.expert_parallel:
        t += expert_dispatch_s(arch, parallel, link_bps) / parallel
    return t


def expert_dispatch_s(arch: ModelArch, ranks: int, link_bps: float) -> float:
    """The link time of one token's expert dispatch and combine over ``ranks`` expert-parallel devices: its ``k``
    experts' activations sent to the ranks that hold them and back in every expert layer, an all-to-all of
    ``2 k h`` activations a layer (``comms.all_to_all_s``); 0 for a dense model or one rank."""
    if ranks <= 1 or link_bps <= 0 or arch.experts <= 0 or arch.experts_per_token <= 0:
        return 0.0
    moe_layers = arch.layers - arch.dense_layers
    return comms.all_to_all_s(2.0 * moe_layers * arch.experts_per_token * arch.hidden * ACTIVATION_BYTES, ranks,
                              link_bps)


def fewest_devices(model: ModelServing, acc: Accelerator, choice: RuntimeChoice, lengths: Lengths, most: int,
                   capacity_bytes: float | None = None) -> int | None:
    """The fewest devices (1, 2, 4, 8 ... up to ``most``) whose memory (``capacity_bytes`` each, default the part's
    usable memory) holds the weights, the runtime's overhead and the cache of one request of the mean length;
    None when none do."""
    weights = model.weights_of(choice)
    one = model.kv_bytes_per_token() * (lengths.prompt_mean + lengths.output_mean)
    n = 1
    while n <= most:
        free = free_bytes(choice, capacity_bytes or acc.usable_memory_bytes, weights, n, model.arch, acc)
        if free * kv_parts(model, n, choice, one_request=True) * (choice.runtime.kv_free_memory_fraction or 1.0) >= one:
            return n
        n = n * 2 if n * 2 <= most or n == most else most
    return None
