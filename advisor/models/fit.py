"""Does a model fit this machine's GPUs for inference, LoRA and QLoRA? The estimate functions, applied as they are.

Inference: ``estimate.memory.inference_memory`` with the model's stored weight bytes when known (a GGUF file's
tensors, a safetensors index), else bf16 weights; fp16 KV cache for ``context`` tokens, batch 1.
LoRA and QLoRA: ``estimate.memory.training_memory`` (bf16 base, or NF4 base for QLoRA; rank 16 adapters on every
linear layer, AdamW, one sequence of ``seq_len`` tokens) under the default fine-tune framework's behaviours
(``catalog.frameworks``: Hugging Face transformers with PEFT, full activation checkpointing, fp32 logits as its
loss holds them), the planner's default for the same job. The model is split
evenly over every GPU (tensor parallel); a part fits when its bytes per device are within the smallest GPU's memory.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.catalog.frameworks import resolve_framework
from advisor.estimate.memory import inference_memory, training_memory
from advisor.estimate.model import embedding_params
from advisor.models.record import ResolvedModel

CONTEXT = 4096  # tokens of prompt plus output for the inference check
SEQ_LEN = 2048  # tokens per training sequence for the LoRA checks
LORA_RANK = 16
WORKLOADS = ("inference", "lora", "qlora")


@dataclass(frozen=True)
class Fit:
    """One workload's memory per device and whether it fits (None when there is no GPU to fit on)."""

    workload: str
    per_device_bytes: int
    fits: bool | None


@dataclass(frozen=True)
class MachineFit:
    """The fits of one model on a set of GPUs."""

    devices: int
    device_bytes: int  # memory of the smallest GPU, 0 without GPUs
    context: int
    fits: tuple[Fit, ...]

    def get(self, workload: str) -> Fit:
        return next(f for f in self.fits if f.workload == workload)


def fit_model(model: ResolvedModel, gpu_memory_bytes: list[int], *, context: int = CONTEXT,
              seq_len: int = SEQ_LEN) -> MachineFit:
    """Memory per device of each workload for ``model`` split over the given GPUs.

    Args:
        model: the resolved model.
        gpu_memory_bytes: total memory of each GPU (empty: no GPU, every ``fits`` is None).
        context: inference tokens (capped at the model's maximum context).
        seq_len: training sequence length (capped likewise).
    Returns:
        The fits for "inference", "lora" and "qlora".
    """
    arch = model.arch
    cap = arch.max_context or max(context, seq_len)
    ctx, seq = min(context, cap), min(seq_len, cap)
    n = max(1, len(gpu_memory_bytes))
    smallest = min(gpu_memory_bytes) if gpu_memory_bytes else 0
    params = model.params
    infer = inference_memory(arch, params, precision="bf16", devices=n, context=ctx, batch=1,
                             weight_bytes=model.weight_bytes or None)
    emb = embedding_params(arch)
    parts = [("inference", infer.total_bytes)]
    for workload in ("lora", "qlora"):
        behaviours = resolve_framework(None, workload).behaviours_for(workload)
        mem = training_memory(arch, params, workload=workload, precision="bf16", optimizer="adamw", zero=0, devices=n,
                              tp=n, pp=1, seq_len=seq, micro_batch=1, checkpointing=behaviours.checkpointing,
                              lora_rank=LORA_RANK, embedding_params=emb, behaviours=behaviours)
        parts.append((workload, mem.total_bytes))
    fits = tuple(Fit(w, int(b), (b <= smallest) if gpu_memory_bytes else None) for w, b in parts)
    return MachineFit(devices=len(gpu_memory_bytes), device_bytes=smallest, context=ctx, fits=fits)
