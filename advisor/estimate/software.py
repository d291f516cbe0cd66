"""What a training framework does with memory and speed, as behaviours the estimates read (never names).

A framework profile (``resources/frameworks.toml``, loaded by ``advisor.catalog.frameworks``) resolves to one
:class:`TrainingBehaviours`; each behaviour can also be set on its own as a job input. The formulas here give
the bytes those behaviours decide (docs/method.md, "The training framework"):

* master weights: mixed precision keeps an fp32 copy of the weights in the optimizer (ZeRO paper, section 3:
  4 bytes per parameter) unless the framework trains pure bf16 (torchtune's ``dtype: bf16``: no copy).
* optimizer state: bytes per moment value: fp32 4, bf16 2, 8-bit 1 (bitsandbytes 8-bit optimizers, Dettmers et
  al. 2022, "8-bit Optimizers via Block-wise Quantization": 1 byte plus block statistics), and paged 8-bit
  (bitsandbytes paged optimizers: CUDA unified memory that the driver evicts to host RAM under pressure, so
  the state is counted in host RAM, not on the device).
* optimizer step in the backward (torchtune ``optimizer_in_bwd``): each parameter is stepped as soon as its
  gradient is ready and the gradient freed, so no full gradient buffer is kept: only the largest tensor's.
* logits and loss: the output layer's logits ``s*b*V`` values; "full" holds ``copies`` fp32 copies of them
  (Korthikanti et al. 2022 count one: ``4*s*b*V``); "chunked" (torchtune ``CEWithChunkedOutputLoss``) keeps the
  bf16 logits and one fp32 log-softmax, upcasting a chunk at a time; "fused" (a fused linear cross-entropy:
  Liger-Kernel, torchtune ``LinearCrossEntropyLoss``, Unsloth) never holds the whole logits, only one chunk's
  bf16 and fp32 values.
* selective checkpointing: what a layer keeps. ``activations`` is Korthikanti et al.'s selective recomputation
  (every activation but the attention core, which FlashAttention/SDPA never stores); ``matmuls`` is torchtitan's
  per-op policy (``parallelize_llama.py``: the outputs of every other matrix multiply and of the attention are
  saved, everything else recomputed in the backward).
* host time per layer: eager PyTorch issues a decoder layer's kernels one by one from Python; at a few hundred
  tokens a step the GPU waits on it. ``host_us_per_layer`` is that host time for one layer's forward; the
  backward issues about as many kernels again and full recomputation a forward more (``host_passes``).
* the optimizer step: a memory-bound pass over the trained parameters' weights, gradients and moments
  (``optimizer_step_bytes``), negligible at thousands of tokens a step but not at a few hundred.
"""

from __future__ import annotations

from dataclasses import dataclass

MASTER_WEIGHTS = ("fp32", "bf16")
OPTIMIZER_STATES = ("fp32", "bf16", "8bit", "paged-8bit")
LOSSES = ("full", "chunked", "fused")
CHECKPOINTING = ("none", "selective", "full")
SELECTIVE_SAVES = ("activations", "matmuls")
SWITCH = ("on", "off")  # a behaviour switch given as a job input (None: from the framework)
# Bytes per optimizer moment value by state format (see the module docstring).
STATE_BYTES = {"fp32": 4.0, "bf16": 2.0, "8bit": 1.0, "paged-8bit": 1.0}
# The fastest a training step may run, as a fraction of the dense peak, whatever the kernels: the large dense
# matrix products of a step reach about 0.75 to 0.8 of peak in bf16 (an assumption, docs/method.md).
MFU_CEILING = 0.75


@dataclass(frozen=True)
class TrainingBehaviours:
    """The behaviours of a training framework that decide memory and speed.

    The defaults are the plain formulas of the ZeRO paper and Korthikanti et al. (Megatron-LM): fp32 master
    copy, fp32 Adam moments, a full gradient buffer, one fp32 copy of the logits, selective recomputation.

    Attributes:
        master_weights: ``fp32`` (a master copy in the optimizer) or ``bf16`` (pure bf16, no copy).
        optimizer_state: ``fp32``, ``bf16``, ``8bit`` or ``paged-8bit`` (the moments' format).
        optimizer_in_backward: the step is fused into the backward (no full gradient buffer kept).
        loss: ``full``, ``chunked`` or ``fused`` (see the module docstring).
        logits_fp32_copies: fp32 copies of the logits a ``full`` loss holds at its peak.
        loss_chunks: the chunks a ``chunked`` or ``fused`` loss splits the logits into.
        checkpointing: the activation checkpointing the framework uses by default.
        activation_offload: the checkpointed activations live in host RAM (streamed back for the backward).
        kernel_efficiency: the framework's speed against plain PyTorch kernels (1.0), a factor on the utilisation.
        selective_saves: what selective checkpointing keeps per layer: ``activations`` (Korthikanti) or
            ``matmuls`` (torchtitan's per-op policy); see the module docstring.
        host_us_per_layer: host (Python and launch) time of one decoder layer's forward kernels, microseconds.
        tp_saves_gathered: under tensor and sequence parallelism the matrix multiplies save their all-gathered
            (full-sequence) inputs for the backward (PyTorch's DTensor ``SequenceParallel``/``ColwiseParallel``);
            Megatron-LM keeps only its shard and gathers it again in the backward (Korthikanti et al., 4.2.2).
        layer_split: one process can split a model's layers over a machine's unequal GPUs and train it so, the
            GPUs running in turn (transformers' ``device_map="auto"`` under the Trainer), so such GPUs plan as one
            pool (``planner.owned.pool_unequal``); False where the framework's ranks must be equal devices.
    """

    master_weights: str = "fp32"
    optimizer_state: str = "fp32"
    optimizer_in_backward: bool = False
    loss: str = "full"
    logits_fp32_copies: float = 1.0
    loss_chunks: int = 8
    checkpointing: str = "selective"
    activation_offload: bool = False
    kernel_efficiency: float = 1.0
    selective_saves: str = "activations"
    host_us_per_layer: float = 0.0
    tp_saves_gathered: bool = False
    layer_split: bool = False

    def __post_init__(self) -> None:
        if self.master_weights not in MASTER_WEIGHTS:
            raise ValueError(f"master_weights must be one of {', '.join(MASTER_WEIGHTS)}")
        if self.optimizer_state not in OPTIMIZER_STATES:
            raise ValueError(f"optimizer_state must be one of {', '.join(OPTIMIZER_STATES)}")
        if self.loss not in LOSSES:
            raise ValueError(f"loss must be one of {', '.join(LOSSES)}")
        if self.checkpointing not in CHECKPOINTING:
            raise ValueError(f"checkpointing must be one of {', '.join(CHECKPOINTING)}")
        if not 0.5 <= self.logits_fp32_copies <= 8:
            raise ValueError("logits_fp32_copies must be between 0.5 and 8")
        if not 1 <= self.loss_chunks <= 4096:
            raise ValueError("loss_chunks must be between 1 and 4096")
        if not 0.1 <= self.kernel_efficiency <= 5:
            raise ValueError("kernel_efficiency must be between 0.1 and 5")
        if self.selective_saves not in SELECTIVE_SAVES:
            raise ValueError(f"selective_saves must be one of {', '.join(SELECTIVE_SAVES)}")
        if not 0.0 <= self.host_us_per_layer <= 100_000:
            raise ValueError("host_us_per_layer must be between 0 and 100000")

    def as_dict(self) -> dict:
        """The behaviours by name (the plan document's ``software.behaviours``)."""
        return {"master_weights": self.master_weights, "optimizer_state": self.optimizer_state,
                "optimizer_in_backward": self.optimizer_in_backward, "loss": self.loss,
                "logits_fp32_copies": self.logits_fp32_copies, "loss_chunks": self.loss_chunks,
                "checkpointing": self.checkpointing, "activation_offload": self.activation_offload,
                "kernel_efficiency": self.kernel_efficiency, "selective_saves": self.selective_saves,
                "host_us_per_layer": self.host_us_per_layer, "tp_saves_gathered": self.tp_saves_gathered,
                "layer_split": self.layer_split}

    def summary(self) -> str:
        """One line for people: ``fp32 logits x2.5, checkpointing full, fp32 master copy, fp32 AdamW states``."""
        if self.loss == "full":
            loss = f"fp32 logits x{self.logits_fp32_copies:g}"
        else:
            loss = f"{self.loss} cross-entropy ({self.loss_chunks} chunks)"
        parts = [loss, f"checkpointing {self.checkpointing}" + (" offloaded to host" if self.activation_offload else ""),
                 "fp32 master copy" if self.master_weights == "fp32" else "pure bf16 weights",
                 _STATE_WORDS[self.optimizer_state]]
        if self.optimizer_in_backward:
            parts.append("optimizer step in the backward")
        if self.kernel_efficiency != 1.0:
            parts.append(f"kernels x{self.kernel_efficiency:g}")
        return ", ".join(parts)


PLAIN = TrainingBehaviours()
_STATE_WORDS = {"fp32": "fp32 optimizer states", "bf16": "bf16 optimizer states", "8bit": "8-bit optimizer states",
                "paged-8bit": "paged 8-bit optimizer states (host RAM)"}


def moment_state(optimizer: str, behaviours: TrainingBehaviours) -> str:
    """The format the optimizer's moments are kept in: the framework's, but 8-bit for ``adamw-8bit`` (bitsandbytes)
    whatever the framework's 16- or 32-bit default."""
    state = behaviours.optimizer_state
    return "8bit" if optimizer == "adamw-8bit" and state in ("fp32", "bf16") else state


def optimizer_moment_bytes(optimizer: str, state: str, hidden: int) -> float:
    """Bytes per parameter of the optimizer's moments: AdamW two moments, SGD with momentum one, Adafactor
    factored row/column statistics (about ``2/hidden`` values per parameter, Shazeer and Stern 2018), each value
    ``STATE_BYTES[state]`` bytes. ``adamw-8bit`` is AdamW whose state defaults to 8-bit (bitsandbytes)."""
    per_value = STATE_BYTES[state]
    values = {"adamw": 2.0, "adamw-8bit": 2.0, "sgd": 1.0, "adafactor": 2.0 / hidden}[optimizer]
    return values * per_value


def logits_bytes(tokens: float, vocab: int, behaviours: TrainingBehaviours) -> float:
    """Bytes of the logits and loss at their peak for ``tokens`` tokens (sequence x micro-batch) on one device.

    full: ``4 * copies * tokens * V``; chunked: ``tokens * V * (2 + 4 + 4/chunks)`` (bf16 logits, the fp32
    log-softmax saved for the backward, one chunk's fp32 upcast); fused: ``6 * tokens * V / chunks`` (one chunk's
    bf16 logits and fp32 values; the gradient is formed in the forward).
    """
    n = tokens * vocab
    if behaviours.loss == "full":
        return 4.0 * behaviours.logits_fp32_copies * n
    if behaviours.loss == "chunked":
        return n * (2.0 + 4.0 + 4.0 / behaviours.loss_chunks)
    return 6.0 * n / behaviours.loss_chunks


def host_passes(checkpointing: str) -> int:
    """Kernel-issuing passes over each layer in a training micro-batch: forward and backward, and the forward
    again under full recomputation."""
    return 3 if checkpointing == "full" else 2


def optimizer_step_bytes(optimizer: str, precision: str, hidden: int, behaviours: TrainingBehaviours) -> float:
    """Device-memory bytes one optimizer step moves per trained parameter (a memory-bound pass).

    ``w`` is the updated weight (the fp32 master copy, or the weights themselves in pure 16-bit training), ``g``
    its gradient (the same width), ``M`` both moments (``optimizer_moment_bytes``). PyTorch's AdamW runs as
    ``foreach`` kernels by default on CUDA (torch.optim docs: foreach is the default over the for-loop, fused is
    not); one step (``_multi_tensor_adamw``) is weight decay (read and write ``w``), ``lerp`` of the first moment
    (read ``m`` and ``g``, write ``m``), ``mul`` and ``addcmul`` of the second (twice its read and write, ``g``
    once), ``sqrt``, ``div`` and ``add`` of a denominator the size of a moment, then ``addcdiv`` into the weights:
    ``4w + 7M + 2g``. A bitsandbytes 8-bit step is one fused kernel: ``2w + 2M + g``. Gradient clipping (on by
    default in the Hugging Face Trainer and torchtitan, ``max_norm = 1``) reads the gradients for their norm and
    scales them: ``3g`` more.
    """
    w = 4.0 if precision in ("fp32", "tf32") or behaviours.master_weights == "fp32" else 2.0
    g = w
    state = moment_state(optimizer, behaviours)
    moments = optimizer_moment_bytes(optimizer, state, hidden)
    step = 2 * w + 2 * moments + g if state in ("8bit", "paged-8bit") else 4 * w + 7 * moments + 2 * g
    return step + 3 * g
