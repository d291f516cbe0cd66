"""Does a model run on this machine's GPUs, and how: ``advisor models`` and the app's Models page ask the plan.

Each workload (inference, LoRA, QLoRA) is planned on this machine's GPUs alone (``service.plan``, only the owned
hardware), with the plan's own defaults: inference in the runtime's usual file (Q4_K_M under llama.cpp unless the
model is a file of its own format), a context of ``CONTEXT`` tokens; LoRA and QLoRA at rank ``LORA_RANK`` on
sequences of ``SEQ_LEN`` tokens. The memory per GPU, whether it fits, the devices, the weight format and the speed
shown are the plan's figures for this machine's option: the same answer ``advisor plan`` gives.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from advisor.planner.request import PlanInputError, PlanRequest
from advisor.planner.service import plan

CONTEXT = 4096  # tokens of prompt plus output for the inference check
SEQ_LEN = 2048  # tokens per training sequence for the LoRA checks
LORA_RANK = 16
WORKLOADS = ("inference", "lora", "qlora")


@dataclass(frozen=True)
class Fit:
    """One workload on this machine: memory per device, whether it fits (None: no GPU to fit on), the devices it
    runs on, the weight format (inference) and the speed (tokens/s; None when it does not fit)."""

    workload: str
    per_device_bytes: int
    fits: bool | None
    devices: int = 1
    weight_format: str = ""
    tokens_per_s: float | None = None


@dataclass(frozen=True)
class MachineFit:
    """The fits of one model on this machine's GPUs."""

    devices: int
    device_bytes: int  # memory of the smallest GPU, 0 without GPUs
    context: int
    fits: tuple[Fit, ...]

    def get(self, workload: str) -> Fit:
        return next(f for f in self.fits if f.workload == workload)


def fit_model(spec: str, owned: Sequence, catalog, *, context: int = CONTEXT, seq_len: int = SEQ_LEN,
              max_context: int | None = None, calibration=None, host=None) -> MachineFit:
    """Plan ``spec`` (a preset id, a model file or folder, an Ollama or LM Studio name) for each workload on the
    ``owned`` hardware (``planner.owned.OwnedHardware``: this machine's GPUs).

    Raises:
        PlanInputError: a model the plan cannot read.
    """
    ctx = min(context, max_context) if max_context else context
    seq = min(seq_len, max_context) if max_context else seq_len
    fits = []
    for workload in WORKLOADS:
        values = {"model": spec, "workload": workload}
        values.update({"context": ctx} if workload == "inference" else {"seq_len": seq, "lora_rank": LORA_RANK})
        result = plan(PlanRequest.from_mapping(values), catalog, calibration, owned=list(owned), host=host,
                      only_owned=True, advise=False)
        option = result.this_machine() or next((o for o in result.options if o.kind == "owned"), None)
        if option is None:  # no GPU here: the memory of one device, not judged
            fits.append(Fit(workload, int(result.memory.total_bytes), None))
            continue
        fmt = ""
        if option.serving is not None and option.serving.software is not None:
            fmt = option.serving.software.weight_format.id
        ok = option.fits and option.feasible
        fits.append(Fit(workload, int(option.memory_per_device_bytes), ok, option.devices, fmt,
                        option.tokens_per_s if ok else None))
    sizes = [hw.accelerator.usable_memory_bytes for hw in owned]
    return MachineFit(devices=sum(hw.count for hw in owned), device_bytes=min(sizes) if sizes else 0, context=ctx,
                      fits=tuple(fits))


__all__ = ["CONTEXT", "LORA_RANK", "SEQ_LEN", "WORKLOADS", "Fit", "MachineFit", "PlanInputError", "fit_model"]
