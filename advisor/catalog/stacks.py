"""Software stacks: what runs a job's code on each accelerator, derived once from its vendor and kind.

A plan's ``stack`` input (``advisor/job/schema.py``) names the stacks the user's code runs on; an option
on an accelerator none of whose stacks is among them is marked (``stack_ok`` false, with the reason) and
ranked after the options that run the user's stack (``advisor/planner/stacks.py``; docs/method.md,
"Software stacks").

The mapping (vendors' support pages as of 2026):
    NVIDIA (every kind): PyTorch with CUDA; JAX/XLA (jax[cuda]); llama.cpp (CUDA backend).
    AMD: PyTorch with ROCm; llama.cpp (HIP backend).
    Google TPU: JAX/XLA (PyTorch runs only through PyTorch/XLA, a port, not "PyTorch CUDA").
    AWS Trainium and Inferentia (kind ``aws-custom``): the Neuron SDK (torch-neuronx, a port).
    Intel Gaudi (Intel datacenter parts): the Gaudi software suite (a PyTorch bridge, habana_frameworks).
    Intel Arc (Intel consumer): PyTorch XPU; llama.cpp (SYCL/Vulkan backends).
    Apple Silicon (kind ``apple``): PyTorch MPS; llama.cpp (Metal backend).
    This machine's CPU (kind ``cpu``): PyTorch's CPU build; llama.cpp.
"""

from __future__ import annotations

# Every stack a job may name, with the words people read (the reason of a mark: "needs JAX/XLA").
STACK_LABELS: dict[str, str] = {
    "pytorch-cuda": "PyTorch CUDA",
    "pytorch-rocm": "PyTorch ROCm",
    "jax-xla": "JAX/XLA",
    "neuron": "AWS Neuron",
    "gaudi": "Intel Gaudi",
    "pytorch-xpu": "PyTorch XPU",
    "pytorch-mps": "PyTorch MPS",
    "pytorch-cpu": "PyTorch CPU",
    "llama.cpp": "llama.cpp",
}
STACKS: tuple[str, ...] = tuple(STACK_LABELS)
# What a PyTorch job runs on when the user names no stack (training, and inference on PyTorch runtimes).
PYTORCH_DEFAULT: tuple[str, ...] = ("pytorch-cuda", "pytorch-rocm")
# This machine's CPU runs the same PyTorch code (the CPU build) and llama.cpp: a default job never marks it.
CPU_STACKS: tuple[str, ...] = ("pytorch-cpu", "llama.cpp")
# The stacks of each inference runtime (``--runtime``) are part of its profile: resources/runtimes.toml.


def stacks_for(vendor: str, kind: str) -> tuple[str, ...]:
    """The software stacks that run on an accelerator of this vendor and kind (the table above).

    Args:
        vendor: the catalog's vendor (``NVIDIA``, ``AMD``, ``Google``, ``AWS``, ``Intel``, ``Apple``).
        kind: the catalog's kind (``consumer``, ``workstation``, ``datacenter``, ``tpu``, ``aws-custom``, ``apple``).
    Returns:
        The stack ids, most used first; empty for a vendor the table does not know (a user catalog's part).
    """
    v, k = vendor.strip().lower(), kind.strip().lower()
    if k == "cpu":
        return CPU_STACKS
    if k == "tpu" or v == "google":
        return ("jax-xla",)
    if k == "aws-custom" or v == "aws":
        return ("neuron",)
    if k == "apple" or v == "apple":
        return ("pytorch-mps", "llama.cpp")
    if v == "nvidia":
        return ("pytorch-cuda", "jax-xla", "llama.cpp")
    if v == "amd":
        return ("pytorch-rocm", "llama.cpp")
    if v == "intel":
        return ("gaudi",) if k == "datacenter" else ("pytorch-xpu", "llama.cpp")
    return ()


def needs_text(stacks: tuple[str, ...]) -> str:
    """The reason of a mark: ``needs JAX/XLA``, ``needs AWS Neuron``, ``needs PyTorch MPS or llama.cpp``."""
    if not stacks:
        return "no known software stack"
    return "needs " + " or ".join(STACK_LABELS.get(s, s) for s in stacks)
