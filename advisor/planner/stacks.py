"""Which options run the user's software stack: each option marked against the job's ``stack`` input.

The stacks of an accelerator come from its vendor and kind (``advisor/catalog/stacks.py``). An option
whose accelerator runs none of the job's stacks keeps its price but gets ``stack_ok`` false and a reason
(``needs JAX/XLA``); :func:`advisor.planner.service.plan` ranks it after the fitting options that run the
user's stack, and ``PlanResult.best()`` never picks it while one of those fits (docs/method.md,
"Software stacks").
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from types import MappingProxyType

from advisor.catalog.runtimes import runtime_data
from advisor.catalog.stacks import PYTORCH_DEFAULT, STACKS, needs_text
from advisor.planner.request import PlanRequest


def wanted_stacks(request: PlanRequest) -> tuple[str, ...]:
    """The stacks the job's code runs on: the ``stack`` input, else the default for its workload.

    Training is PyTorch (CUDA or ROCm) unless told; inference takes its ``--runtime``'s stacks, and with
    no runtime named any stack that serves a model on a PyTorch or llama.cpp runtime (the default runtime
    is llama.cpp on consumer cards, vLLM on datacenter parts). The CPU's PyTorch build is added to a
    default: this machine's CPU runs the same code, slowly.

    Args:
        request: the validated job.
    Returns:
        Stack ids (``catalog.stacks.STACKS``).
    """
    if request.stack:
        return tuple(request.stack)
    base = default_stacks(request)
    if any(s.startswith("pytorch-") for s in base):  # the CPU runs a PyTorch job's code unchanged
        base += ("pytorch-cpu",)
    return base


def default_stacks(request: PlanRequest) -> tuple[str, ...]:
    """The stacks of a job that names none: training is PyTorch on CUDA or ROCm; serving its runtime's."""
    if request.workload == "inference":
        if request.runtime is not None:
            return runtime_data().runtimes[request.runtime].stacks
        return tuple(s for s in STACKS if s in {*PYTORCH_DEFAULT, "llama.cpp"})
    return PYTORCH_DEFAULT


@functools.lru_cache(maxsize=1024)
def stack_fields(runs: tuple[str, ...], wanted: tuple[str, ...]) -> Mapping[str, object]:
    """``stacks``, ``stack_ok`` and, when false, ``stack_reason`` of the options of one accelerator.

    Args:
        runs: the stacks that run on the accelerator (``Accelerator.stacks``).
        wanted: the job's stacks (:func:`wanted_stacks`).
    Returns:
        The three :class:`~advisor.planner.result.PlanOption` fields, computed once per accelerator.
    """
    ok = any(s in wanted for s in runs)
    # read-only: one mapping serves every plan asking for the same stacks
    return MappingProxyType({"stacks": tuple(runs), "stack_ok": ok, "stack_reason": "" if ok else needs_text(runs)})
