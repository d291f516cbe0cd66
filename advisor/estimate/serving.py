"""One LLM server in plain numbers: KV-cache capacity, batched decode steps and prefill (pure).

One replica of a server is a :class:`ServerSpec` of plain numbers (bandwidth and its efficiency, prefill FLOP/s,
KV bytes per token, how the runtime batches and reserves memory); requests have prompt and output lengths
(:class:`Lengths`). The load on it, its queues and the latency percentiles are ``estimate.serving_queue``'s.

The method (docs/method.md, "Serving under load"):

* **Capacity.** vLLM and SGLang take ``gpu_memory_utilization`` (0.9 by default) of each device for weights,
  activations and the KV cache; the cache gets what is left (vLLM ``docs/configuration/optimization.md``;
  ``vllm/engine/arg_utils.py``). llama.cpp allocates ``-c`` tokens of cache at start, shared by ``-np`` slots
  of ``c / np`` tokens each (llama.cpp ``tools/server/README.md``), so a slot must hold a whole request.
* **A decode step** at batch B runs its matrix products (reading the weights once) and then its attention over B
  caches at their mean length, kernels in series, each at the slower of its reading and its arithmetic:
  ``t = max(W / (BW * eta), 2 * P_act * B / F) + B * max(kv * ctx / (BW * eta_kv), a * ctx / F) + t_step
  + (B - 1) * t_seq`` where
  ``t_step`` is the step's fixed cost (launches, tensor-parallel all-reduce latency, two per layer) and ``t_seq``
  what each further running sequence adds beyond the GPU's arithmetic and bandwidth: the server's host time per
  sequence (scheduling, sampling, detokenising), its activations through the tensor-parallel all-reduces and its
  tokens' dispatch to experts on other devices. The first sequence's share is in the single-request step, which is
  calibrated on its own (``estimate.decode``), so one user is planned as before.
* **Prefill** is compute-bound: ``(2 * P_act * s + a * s^2 / 2) / F_prefill`` with ``a`` the attention FLOPs per
  (query, key) pair over all layers (``4 * L * n_heads * d_head``), in series with one read of the weights
  (``compute.prompt_pass_s``), plus a prefill pass's fixed time (``prefill_pass_overhead_s``: the step's and what a
  pass launched from the host adds to it, ``ServerSpec.prefill_overhead_s``).
  Runtimes that chunk it (vLLM's chunked prefill, ``max_num_batched_tokens`` per step; llama.cpp's ``-b``)
  mix the chunks into decode steps, so the prompt takes ``ceil(s / chunk)`` mixed steps.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from advisor.estimate import compute

BATCHING = ("continuous", "slots")
Z95 = 1.6449  # standard normal quantile at 0.95
_Z = {0.5: 0.0, 0.95: Z95, 0.99: 2.3263}  # standard normal quantiles tabulated (``lognormal_quantile``)


@dataclass(frozen=True)
class Lengths:
    """Prompt and output lengths of the requests: means and coefficients of variation (sd / mean).

    Quantiles assume a log-normal shape, the usual fit of chat request lengths.
    """

    prompt_mean: float
    output_mean: float
    prompt_cv: float = 0.0
    output_cv: float = 0.0

    def __post_init__(self) -> None:
        if not (self.prompt_mean >= 1 and self.output_mean >= 1):
            raise ValueError("prompt and output lengths must be at least 1 token")
        if not (0 <= self.prompt_cv <= 10 and 0 <= self.output_cv <= 10):
            raise ValueError("length spreads (coefficients of variation) must be between 0 and 10")

    def prompt_q(self, q: float) -> float:
        """The prompt length at quantile ``q``."""
        return lognormal_quantile(self.prompt_mean, self.prompt_cv, q)

    def output_q(self, q: float) -> float:
        """The output length at quantile ``q``."""
        return lognormal_quantile(self.output_mean, self.output_cv, q)

    @property
    def mean_context(self) -> float:
        """The mean tokens a request's cache holds over its decode: each step reads ``prompt + i`` tokens,
        ``i = 0 .. output - 1``."""
        return self.prompt_mean + (self.output_mean - 1.0) / 2.0

    @property
    def running_context(self) -> float:
        """The mean cache of a sequence found running at a random moment: a request runs for as many steps as it
        has output tokens, so the running sequences are its requests weighted by their output (length-biased
        sampling, the inspection paradox): ``E[O (P + (O - 1) / 2)] / E[O] = P + (E[O^2] / E[O] - 1) / 2`` with
        ``E[O^2] / E[O] = O (1 + cv_O^2)`` (prompt and output lengths independent). A batch's other sequences read
        this much cache each step, and hold it in the pool; equal lengths give ``mean_context``."""
        return self.prompt_mean + (self.output_mean * (1.0 + self.output_cv * self.output_cv) - 1.0) / 2.0


def lognormal_quantile(mean: float, cv: float, q: float) -> float:
    """Quantile ``q`` of a log-normal with this mean and coefficient of variation (``mean`` when cv is 0).

    ``sigma^2 = ln(1 + cv^2)``, ``mu = ln(mean) - sigma^2 / 2``.
    """
    if cv <= 0:
        return float(mean)
    s2 = math.log1p(cv * cv)
    z = _Z.get(q)
    if z is None:
        raise ValueError(f"quantile {q} not tabulated (0.5, 0.95, 0.99)")
    return mean * math.exp(z * math.sqrt(s2) - s2 / 2.0)


@dataclass(frozen=True)
class ServerSpec:
    """One replica of a server, in plain numbers.

    Attributes:
        weight_bytes: weights of the whole model (split over ``devices``).
        devices: devices of the replica.
        parallel_devices: devices whose bandwidth and compute add up in one step: the tensor-parallel degree;
            1 for llama.cpp's layer split (the layers run one device after the other).
        capacity_bytes: memory of one device.
        bandwidth_bps: peak memory bandwidth of one device.
        eta_mem: share of the peak bandwidth a decode step reaches.
        decode_flops: effective FLOP/s of one device in a decode step (peak x efficiency).
        prefill_flops: effective FLOP/s of one device in the prompt's matrix multiplies (the runtime's kernel
            peak x its efficiency).
        attention_flops: effective FLOP/s of one device in the prompt's attention (0: ``prefill_flops``).
        eta_kv: share of the peak bandwidth reading the KV cache reaches (0: ``eta_mem``).
        kv_free_fraction: the share of what is left after weights and overhead the cache takes (TensorRT-LLM's
            ``free_gpu_memory_fraction`` 0.9; 1 for the others).
        pipeline_devices: devices a prompt flows through in chunks when whole layers sit on each (llama.cpp's
            pipeline parallelism): ``n`` chunks of ``pipeline_chunk`` tokens take ``(n + D - 1) / D`` chunk-times
            of the whole model (``estimate.decode.ServingSpeed.prefill_s``); 1 otherwise.
        expert_fraction: for a mixture of experts, the share of the weights one token reads (active over total
            parameters; 1: dense, every weight every step); a step at batch B reads more of them (``touched``).
        routed_share: the share of the weights in the routed experts (0: not known, ``touched`` takes every weight
            as routed).
        routed_pick: the share of a layer's routed experts one token goes to (``k / E``).
        active_params: parameters each token passes through.
        prompt_params: of them, those a prompt token is multiplied by (``estimate.model.prompt_param_count``: not
            the embedding, nor the head, which makes only a prompt's last logits); 0: ``active_params``.
        attn_flops_per_pair: attention FLOPs per (query, key) pair over all layers (``4 * L * n_heads * d_head``).
        kv_bytes_per_token: KV-cache bytes of one token over all layers (all devices together).
        batching: ``continuous`` (vLLM, SGLang, TensorRT-LLM: a paged pool shared by every sequence) or ``slots``
            (llama.cpp: ``slots`` fixed slots of ``slot_tokens`` each, reserved at start).
        memory_fraction: the share of each device the runtime may use (vLLM ``gpu_memory_utilization``); 1 for
            runtimes that take what they need.
        overhead_bytes: per device: context, activation workspace, graphs (not weights, not cache).
        max_seqs: most sequences in one batch (vLLM ``max_num_seqs``; llama.cpp: the slots).
        chunk_tokens: the prefill budget: prompt tokens a step takes at most; 0 when a runtime takes one prompt a
            pass, on its own, before decoding resumes.
        mixed_prefill: whether the budget's chunks ride on the running sequences' decode steps (vLLM V1), else a
            prefill pass runs on its own while the running batch waits (SGLang's default: ``mixes_chunks``).
        step_overhead_s: fixed cost of a step (all-reduce latency of tensor parallelism, launches).
        prefill_overhead_s: what a prefill pass (a step carrying prompt tokens) pays beyond a decode step's fixed
            cost: its kernels launched from the host, where the runtime captures CUDA graphs for decode batches only
            (``planner.serve_spec.prefill_overhead_s``); ``prefill_pass_overhead_s`` is the whole of it.
        slot_tokens: context of one slot (``slots`` batching; llama.cpp ``-c / -np``); 0 for continuous.
        per_seq_s: what each running sequence beyond the first adds to a step (``decode_step_s``): host time,
            tensor-parallel all-reduce traffic and expert dispatch of its token (``planner.serve_spec``).
        per_token_s: the link time of each token a step carries (its part of ``per_seq_s``): tensor-parallel
            all-reduces and expert dispatch, which a prompt's tokens at load pay as a decode token does.
        reserve_whole: continuous batching that admits a request only when the pool holds its whole prompt and
            output (TensorRT-LLM's default ``GUARANTEED_NO_EVICT`` capacity scheduler); False: the cache grows block
            by block and a request holds its mean context (vLLM, SGLang: ``held_tokens``).
        decode_first: a prompt's pass leaves its last token to the decode step of the whole batch after it, whose
            output is the first token (TurboMind: ``LlamaBatch::ContextDecode`` prefills all but the last token of
            each prompt an iteration admits, then ``Generate`` decodes the batch); False: the pass that finishes the
            prompt gives it (vLLM, SGLang, TensorRT-LLM).
        kv_shards: into how many parts the devices split each token's cache (``estimate.memory.kv_shards``: at
            most the KV heads under tensor parallelism, 1 for MLA's latent, which every GPU keeps whole); 0: one
            part a device.
        host_overlap_s: the host's time a step for each running sequence where the host prepares the next step
            while the devices run this one (TensorRT-LLM's overlap scheduler): a decode step takes at least
            ``host_overlap_s x batch`` (``planner.serve_spec.RuntimeServing.host_overlap_per_seq_s``); 0: none.
    """

    weight_bytes: float
    devices: int
    parallel_devices: int
    capacity_bytes: float
    bandwidth_bps: float
    eta_mem: float
    decode_flops: float
    prefill_flops: float
    active_params: float
    attn_flops_per_pair: float
    kv_bytes_per_token: float
    batching: str = "continuous"
    memory_fraction: float = 0.9
    overhead_bytes: float = 0.0
    max_seqs: int = 256
    chunk_tokens: int = 0
    mixed_prefill: bool = True
    step_overhead_s: float = 0.0
    prefill_overhead_s: float = 0.0
    slot_tokens: int = 0
    attention_flops: float = 0.0
    eta_kv: float = 0.0
    kv_free_fraction: float = 1.0
    expert_fraction: float = 1.0
    pipeline_devices: int = 1
    pipeline_chunk: int = 512
    per_seq_s: float = 0.0
    per_token_s: float = 0.0
    reserve_whole: bool = False
    routed_share: float = 0.0
    routed_pick: float = 0.0
    kv_shards: int = 0
    unread_bytes: float = 0.0
    prompt_params: float = 0.0
    decode_first: bool = False
    host_overlap_s: float = 0.0

    def prompt_matmul_s(self, tokens: float) -> float:
        """One device's seconds for the matrix multiplies of ``tokens`` prompt tokens at the prefill rate:
        ``2 x prompt_params`` FLOPs each (``prompt_params`` 0: the active parameters)."""
        return 2.0 * (self.prompt_params or self.active_params) * tokens / self.prefill_flops

    @property
    def kv_replicas(self) -> float:
        """How many copies of each token's cache the tensor-parallel devices read: their number over the parts the
        cache is split in (``kv_shards``: a KV head is not split, MLA's latent is one), 1 when each holds its own."""
        return max(1.0, self.parallel_devices / self.kv_shards) if self.kv_shards else 1.0

    @property
    def read_bytes(self) -> float:
        """The weight bytes a step reads: all but ``unread_bytes`` (a multimodal projector, run once per image;
        per-layer embeddings, a row per token: ``estimate.memory.unread_weight_bytes``), as the plan's request reads
        them (``estimate.decode.ServingSpeed.weights_read``)."""
        return self.weight_bytes - self.unread_bytes

    def __post_init__(self) -> None:
        if self.batching not in BATCHING:
            raise ValueError(f"batching must be one of {', '.join(BATCHING)}, got {self.batching!r}")
        if not 1 <= self.parallel_devices <= self.devices:
            raise ValueError("parallel_devices must be between 1 and devices")
        if not 0 <= self.kv_shards <= self.devices:
            raise ValueError("kv_shards must be between 0 (one part a device) and devices")
        if not 0 < self.eta_mem <= 1 or not 0 < self.memory_fraction <= 1 or not 0 < self.kv_free_fraction <= 1:
            raise ValueError("eta_mem, memory_fraction and kv_free_fraction must be in (0, 1]")
        if not 0 <= self.eta_kv <= 1 or self.attention_flops < 0 or not 0 < self.expert_fraction <= 1:
            raise ValueError("eta_kv must be in [0, 1] and attention_flops not negative")
        if not (0 <= self.routed_share <= 1 and 0 <= self.routed_pick <= 1
                and self.routed_share * self.routed_pick <= self.expert_fraction + 1e-9):
            raise ValueError("the routed experts' share and pick must be in [0, 1], their product at most what a "
                             "token reads")
        for name in ("weight_bytes", "capacity_bytes", "bandwidth_bps", "decode_flops", "prefill_flops",
                     "active_params", "kv_bytes_per_token"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive")
        if not 0 <= self.prompt_params <= self.active_params:
            raise ValueError("prompt_params must be between 0 (the active parameters) and active_params")
        if not 0 <= self.unread_bytes < self.weight_bytes:
            raise ValueError("unread_bytes must be zero or more and less than the weights")
        if self.max_seqs < 1 or self.chunk_tokens < 0 or self.step_overhead_s < 0 or self.slot_tokens < 0 \
                or not self.prefill_overhead_s >= 0 \
                or not self.per_seq_s >= 0 or not 0 <= self.per_token_s <= self.per_seq_s \
                or not self.host_overlap_s >= 0:
            raise ValueError("max_seqs must be at least 1; chunk, step overhead, per-sequence and host time and slot "
                             "size not negative; the per-token link time at most the per-sequence time")


# ---------------------------------------------------------------------------------------------- capacity
def kv_pool_bytes(spec: ServerSpec) -> float:
    """Bytes of distinct KV cache the replica holds: ``shards x (capacity x fraction - weights/devices -
    overhead) x free fraction`` (vLLM's ``gpu_memory_utilization`` rule; TensorRT-LLM's share of the free
    memory; llama.cpp with both 1), where each device keeps ``1 / shards`` of every token's cache
    (``ServerSpec.kv_shards``: with fewer KV heads than GPUs, or MLA's latent, the GPUs hold copies, so the pool
    is not the devices' sum). Negative: the weights do not fit."""
    per_device = spec.capacity_bytes * spec.memory_fraction - spec.weight_bytes / spec.devices - spec.overhead_bytes
    return per_device * (spec.kv_shards or spec.devices) * (spec.kv_free_fraction if per_device > 0 else 1.0)


def kv_capacity_tokens(spec: ServerSpec) -> int:
    """Tokens of KV cache the replica holds (0 when the weights leave no room)."""
    pool = kv_pool_bytes(spec)
    return max(0, int(pool // spec.kv_bytes_per_token))


def held_tokens(spec: ServerSpec, lengths: Lengths) -> float:
    """Cache tokens one request in service takes from a continuous-batching pool: its mean context (prompt + half
    its output) where the cache grows block by block as it decodes (vLLM, SGLang); its whole prompt and output where
    the scheduler reserves them at admission so that no request is ever paused (TensorRT-LLM's default capacity
    scheduler policy ``GUARANTEED_NO_EVICT``, "Useful Runtime Options" of its performance tuning guide). Either is
    the mean over the requests in service at a moment, which long outputs stay in longer (``Lengths.
    running_context``: weighted by the output, ``E[O^2] / E[O]`` in place of ``O``)."""
    biased = lengths.output_mean * (1.0 + lengths.output_cv * lengths.output_cv)  # E[O^2] / E[O]
    held = lengths.prompt_mean + biased if spec.reserve_whole else lengths.running_context
    return held if held > 1.0 else 1.0


def concurrency_limit(spec: ServerSpec, lengths: Lengths) -> tuple[int, str]:
    """The most requests in service at once and what limits it (``"kv"``, ``"seqs"``, ``"slots"``).

    Continuous batching: the pool over the tokens a request holds (``held_tokens``), at most ``max_seqs``. Slots:
    ``max_seqs`` slots of ``slot_tokens`` (a slot holds a whole request, so their sum must fit the pool).
    """
    tokens = kv_capacity_tokens(spec)
    if spec.batching == "slots":
        slot = spec.slot_tokens or math.ceil(lengths.prompt_q(0.95) + lengths.output_q(0.95))
        fit = tokens // slot if slot > 0 else 0
        return (spec.max_seqs, "slots") if spec.max_seqs <= fit else (int(fit), "kv")
    fit = int(tokens // held_tokens(spec, lengths))
    return (spec.max_seqs, "seqs") if spec.max_seqs <= fit else (fit, "kv")


# --------------------------------------------------------------------------------------------- step times
def decode_step_s(spec: ServerSpec, batch: float, mean_context: float, extra_tokens: float = 0.0,
                  extra_flops: float = 0.0) -> float:
    """One step for ``batch`` decoding sequences at ``mean_context`` cached tokens, plus ``extra_tokens``
    prefill tokens (and their attention ``extra_flops``) mixed into the step.

    ``max(W / (BW * eta * n), 2 * P_act * B / (F_dec * n) + 2 * P_act * extra / (F_mm * n) + extra_flops /
    (F_att * n)) + max(B * ctx * kv / (BW * eta_kv * n), B * ctx * a / (F_dec * n)) + t_step + (B - 1) * t_seq
    + extra * t_tok``
    with ``n`` the devices working in parallel: the matrix products and the attention over the caches run as
    kernels one after the other, so their times add; within each the reading and the arithmetic overlap; the prompt
    tokens' link time ``t_tok`` (tensor-parallel all-reduces, expert dispatch) adds to the step as a decode token's
    does (docs/method.md, "Serving under load"). The whole is at least ``h * B`` where the host prepares the next
    step while the devices run this one (``host_overlap_s``: TensorRT-LLM's overlap scheduler). At one sequence it
    is the single-request step (reading weights and cache) it was before.
    """
    return step_function(spec)(batch, mean_context, _mixed_prompt_s(spec, extra_tokens, extra_flops),
                               extra_tokens * spec.per_token_s)


def step_function(spec: ServerSpec) -> Callable[[float, float, float, float], float]:
    """``decode_step_s`` of one spec as a function of ``(batch, mean_context, prompt_s, link_s)``, the spec's rates
    worked out once (a queue evaluates the step many times a solve): ``prompt_s`` the mixed prompt tokens' compute
    (``_mixed_prompt_s``), ``link_s`` their link time."""
    n = spec.parallel_devices
    read = spec.read_bytes
    mem_rate = spec.bandwidth_bps * spec.eta_mem * n
    kv_bytes, kv_replicas = spec.kv_bytes_per_token, spec.kv_replicas
    kv_rate = spec.bandwidth_bps * (spec.eta_kv or spec.eta_mem) * n
    pair = spec.attn_flops_per_pair
    flops = spec.decode_flops * n
    two_p = 2.0 * spec.active_params
    s0, hs, host = spec.step_overhead_s, spec.per_seq_s, spec.host_overlap_s
    dense = spec.expert_fraction >= 1.0

    def step(batch: float, mean_context: float, prompt_s: float, link_s: float) -> float:
        t_weights = read * (1.0 if dense else touched(spec, batch)) / mem_rate
        t_kv = batch * mean_context * kv_bytes * kv_replicas / kv_rate
        t_att = batch * mean_context * pair / flops
        t = (products_s(t_weights, two_p * batch / flops, prompt_s) + (t_att if t_att > t_kv else t_kv) + s0
             + (batch - 1.0 if batch > 1.0 else 0.0) * hs + link_s)
        return t if t > host * batch else host * batch  # the host's next step overlaps this one (host_overlap_s)
    return step


def products_s(weights_s: float, decode_s: float, prompt_s: float) -> float:
    """A step's matrix products: the decoding sequences' arithmetic (``decode_s``) overlapping one read of the weights
    (``weights_s``), the larger of the two (the decode's rule, calibrated on per-token times), and the arithmetic of
    the prompt tokens the step carries (``prompt_s``) in series with that (``compute.prompt_pass_s``): with nothing
    decoding, a prompt's pass alone (``prefill_s``); a chunk riding on a decode step adds all its arithmetic to it."""
    return compute.prompt_pass_s(prompt_s, decode_s if decode_s > weights_s else weights_s)


def _mixed_prompt_s(spec: ServerSpec, tokens: float, attention_flops: float) -> float:
    """The compute of ``tokens`` prompt tokens (and their attention's FLOPs) mixed into a decode step."""
    return (spec.prompt_matmul_s(tokens)
            + attention_flops / (spec.attention_flops or spec.prefill_flops)) / spec.parallel_devices \
        * pipelined(spec, tokens)


def pipelined(spec: ServerSpec, prompt_tokens: float) -> float:
    """The share of a prompt's one-device compute time it takes flowing through a layer split in chunks
    (``compute.pipeline_share``)."""
    return compute.pipeline_share(prompt_tokens, spec.pipeline_devices, spec.pipeline_chunk)


def touched(spec: ServerSpec, batch: float) -> float:
    """The share of the weights a step at ``batch`` reads: all for a dense model. For a mixture of experts the
    weights outside the routed experts every step (attention, shared experts, embeddings: ``f - r k / E``), and of
    the routed ones (share ``r``) those some sequence of the batch routes to: each token picks ``k`` of a layer's
    ``E``, so ``E (1 - (1 - k / E)^B)`` experts are read, in expectation, where the picks are independent. One token
    reads ``f`` (active over total) either way. Without the experts' share known, every weight is taken as routed
    with ``k / E = f``: ``1 - (1 - f)^B``."""
    f = spec.expert_fraction
    if f >= 1.0:
        return 1.0
    b = batch if batch > 1.0 else 1.0
    r, p = spec.routed_share, spec.routed_pick
    if r <= 0.0 or p <= 0.0:
        return 1.0 - (1.0 - f) ** b
    share = f - r * p + r * (1.0 - (1.0 - p) ** b)
    return share if share < 1.0 else 1.0


def prefill_pass_overhead_s(spec: ServerSpec) -> float:
    """The fixed time of one prefill pass: the step's fixed cost and what a prefill adds to it
    (``ServerSpec.prefill_overhead_s``); the plan's request pays the same (``estimate.decode.ServingSpeed.prefill_s``)."""
    return spec.step_overhead_s + spec.prefill_overhead_s


def prefill_s(spec: ServerSpec, prompt_tokens: float) -> float:
    """Time of one prompt's prefill alone (``compute.prompt_seconds``, the plan's formula): its matrix multiplies
    at the kernel's rate and its attention at the attention rate, in series with one read of the weights, plus a
    prefill pass's fixed time (``prefill_pass_overhead_s``)."""
    n = spec.parallel_devices
    return compute.prompt_seconds(
        matmul_flops=2.0 * (spec.prompt_params or spec.active_params) * prompt_tokens,
        attention_flops=spec.attn_flops_per_pair * prompt_tokens * (prompt_tokens + 1) / 2.0,
        matmul_rate=spec.prefill_flops * n, attention_rate=(spec.attention_flops or spec.prefill_flops) * n,
        weight_read_s=spec.read_bytes * touched(spec, prompt_tokens) / (spec.bandwidth_bps * spec.eta_mem * n),
        share=pipelined(spec, prompt_tokens), overhead_s=prefill_pass_overhead_s(spec))


def prefill_spread_share(spec: ServerSpec, prompt_tokens: float) -> float:
    """The share of a prompt's prefill that grows with its tokens, by which a spread of prompt lengths spreads the
    prefill times a queue sees: where prompts run on their own (``prefill_s``), all but the pass's one read of the
    weights and its fixed time (``compute.prompt_pass_s``: they do not grow with the prompt); where chunks ride on
    decode steps, all of what a chunk adds to a step (the step's own read is the decode's)."""
    if mixes_chunks(spec):
        return 1.0
    t = prefill_s(spec, prompt_tokens)
    fixed = (spec.read_bytes * touched(spec, prompt_tokens) / (spec.bandwidth_bps * spec.eta_mem * spec.parallel_devices)
             + prefill_pass_overhead_s(spec))
    return (t - fixed) / t if t > fixed else 0.0


@dataclass(frozen=True)
class SingleRequest:
    """One request alone on a replica: the figures ``advisor plan``, ``advisor serve`` at one user, the app and the
    reports show for it (one computation, ``single_request``).

    Attributes:
        ttft_s: time to first token: the prompt's prefill (its last logits give the first token).
        step_s: one decode step at the request's mean cache length.
        tokens_per_s: decode tokens/s (``1 / step_s``).
        kv_capacity_tokens: tokens of KV cache the replica holds: the longest context one request can have.
    """

    ttft_s: float
    step_s: float
    tokens_per_s: float
    kv_capacity_tokens: int


def single_request(spec: ServerSpec, prompt_tokens: float, output_tokens: float) -> SingleRequest:
    """The figures of one request alone (no other sequence in service)."""
    step = decode_step_s(spec, 1.0, prompt_tokens + (output_tokens - 1.0) / 2.0)
    return SingleRequest(prefill_s(spec, prompt_tokens), step, 1.0 / step, kv_capacity_tokens(spec))


def batch_prefill_s(spec: ServerSpec, prompts: int, prompt_tokens: float) -> tuple[int, float]:
    """``(steps, seconds)`` to prefill ``prompts`` prompts of ``prompt_tokens`` each with nothing decoding: steps of
    the prefill budget (``chunk_tokens``; a runtime without chunks takes one prompt a step), each one read of the
    weights in series with its arithmetic (``compute.prompt_pass_s``, as one prompt's), the prompts' matrix
    multiplies and their own causal attention spread over the steps, and the link time of the tokens beyond the
    first prompt's (``per_token_s``; one prompt alone is the plan's, as ``decode_step_s`` counts ``per_seq_s``
    beyond the first sequence); each step a prefill pass's fixed time
    (``prefill_pass_overhead_s``)."""
    n = spec.parallel_devices
    per_step = spec.chunk_tokens if spec.chunk_tokens > 0 else prompt_tokens
    steps = max(1, math.ceil(prompts * prompt_tokens / max(1.0, per_step) - 1e-9))
    t_weights = spec.read_bytes / (spec.bandwidth_bps * spec.eta_mem * n)
    work = prompts * (spec.prompt_matmul_s(prompt_tokens)
                      + spec.attn_flops_per_pair * prompt_tokens * (prompt_tokens + 1.0) / 2.0
                      / (spec.attention_flops or spec.prefill_flops)) / n * pipelined(spec, prompt_tokens)
    work += (prompts - 1) * prompt_tokens * spec.per_token_s
    return steps, steps * (compute.prompt_pass_s(work / steps, t_weights) + prefill_pass_overhead_s(spec))


def mixes_chunks(spec: ServerSpec) -> bool:
    """Whether a prompt's chunks ride on the running sequences' decode steps (a prefill budget and
    ``mixed_prefill``); else a prompt's prefill is a pass of its own (``prefill_s``) the running batch waits for."""
    return spec.chunk_tokens > 0 and spec.mixed_prefill


def shared_pass_throughput(decoding: float, decode_s: float, fixed_others_s: float, fixed_s: float) -> float:
    """The throughput ``x`` (requests/s) at which Little's law closes for ``decoding`` sequences where prefill runs in
    passes of their own, each taking every prompt waiting: the prompts sent during a pass, ``x F`` of them, share
    the next pass's fixed time ``F`` (``fixed_s``), so each holds the decoding up by its own arithmetic and
    ``F / (1 + x F)``. With ``decode_s`` = ``A``, the decoding's own time a request (its steps and the prompts'
    arithmetic) and ``fixed_others_s`` = ``B``, the fixed time ``decoding`` prompts pay alone:
    ``x = decoding / (A + B / (1 + x F))``, the positive root of ``A F x^2 + (A + B - decoding F) x - decoding = 0``
    (0 where ``A`` is not positive). SGLang's scheduler takes every request waiting into a new prefill batch, up
    to its token budget, before it decodes again (``managers/scheduler.py``, ``get_new_batch_prefill``)."""
    a, b, f, d = decode_s, fixed_others_s, fixed_s, decoding
    if not a > 0.0 or not d > 0.0:
        return 0.0
    if not f > 0.0:
        return d / (a + b)
    lin = a + b - d * f
    return 2.0 * d / (lin + math.sqrt(lin * lin + 4.0 * a * f * d))


def prefill_in_service(spec: ServerSpec, prompt_tokens: float,
                       step: Callable[[float, float, float, float], float] | None = None
                       ) -> Callable[[float, float], float]:
    """A prompt's prefill while ``decoding`` sequences decode at ``mean_context``, as a function of the two: chunked
    into mixed steps (``decode_step_s``), or on its own (``prefill_s``) where the runtime does not chunk or nothing
    decodes. Each mixed step pays what a prefill pass adds to a decode step (``ServerSpec.prefill_overhead_s``), in
    series with it. What does not depend on them is worked out once; ``step``: the spec's ``step_function`` if at
    hand."""
    alone = prefill_s(spec, prompt_tokens)
    if not mixes_chunks(spec):
        return lambda decoding, mean_context: alone
    chunks = math.ceil(prompt_tokens / spec.chunk_tokens)
    chunk = prompt_tokens / chunks
    # Attention of a chunk over the prompt before it and itself, causal: on average half the prompt, the chunks
    # together the prompt's own s (s + 1) / 2 pairs (compute.prefill_flops, as the prompt alone)
    attn = spec.attn_flops_per_pair * chunk * (prompt_tokens + 1.0) / 2.0
    prompt = _mixed_prompt_s(spec, chunk, attn)
    link = chunk * spec.per_token_s + spec.prefill_overhead_s
    step = step or step_function(spec)

    def in_service(decoding: float, mean_context: float) -> float:
        if decoding < 0.5:
            return alone
        return chunks * step(decoding, mean_context, prompt, link)
    return in_service
