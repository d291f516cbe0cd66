"""Step 1 of a plan: the request (the job schema's :class:`~advisor.job.Job`) resolved against the catalog.

``PlanRequest`` *is* the job schema's model: its fields, ranges and defaults are declared once in
``advisor/job/schema.py``. This module adds what needs the catalog: the architecture of a preset, the
token budget, and the precision the compute runs in.
"""

from __future__ import annotations

from advisor.catalog import Catalog, CatalogError
from advisor.estimate.model import ModelArch, active_param_count, generic_arch, param_count
from advisor.job import Job, JobInputError

PlanRequest = Job
PlanInputError = JobInputError
DEFAULT_FINETUNE_TOKENS = 1e8
DEFAULT_INFERENCE_TOKENS = 1e8
ARCH_FIELDS = ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab")


def resolve_arch(req: PlanRequest, catalog: Catalog) -> tuple[ModelArch, int, int, str | None]:
    """The architecture, total and active parameters, and the preset name of a request.

    Raises:
        PlanInputError: an unknown preset, or architecture overrides that do not make a model.
    """
    if req.model is not None:
        try:
            arch = catalog.model(req.model)
        except CatalogError:
            raise PlanInputError("model", f"unknown preset {req.model!r}; presets: {', '.join(sorted(catalog.models))}") from None
        name = req.model
    else:
        arch = generic_arch(req.params)
        name = None
    overrides = {k: getattr(req, k) for k in ARCH_FIELDS if getattr(req, k) is not None}
    if overrides:
        if "heads" in overrides and "kv_heads" not in overrides:
            overrides["kv_heads"] = overrides["heads"]
        from dataclasses import replace

        try:
            arch = replace(arch, **overrides, head_dim=0 if "hidden" in overrides or "heads" in overrides else arch.head_dim)
        except ValueError as exc:
            raise PlanInputError("heads", " ".join(str(exc).split())) from None
    if req.params is not None:
        params = int(req.params)
        active = int(req.active_params) if req.active_params else (
            params if not arch.is_moe or req.model is None else int(params * active_param_count(arch) / param_count(arch)))
    else:
        params = param_count(arch)
        active = int(req.active_params) if req.active_params else active_param_count(arch)
    return arch, params, active, name


def budget(req: PlanRequest, params: int) -> tuple[float | None, str]:
    """The token budget of a request (None for an ``--hours`` budget) and where it comes from."""
    if req.tokens is not None:
        return req.tokens, "tokens (--tokens)"
    if req.epochs is not None:
        return req.epochs * req.dataset_tokens, "epochs x dataset tokens (--epochs, --dataset-tokens)"
    if req.hours is not None:
        return None, "hours (--hours): tokens follow from each option's speed"
    if req.workload == "pretrain":
        return 20.0 * params, "default: 20 tokens per parameter (Chinchilla compute-optimal, Hoffmann et al. 2022)"
    if req.workload == "inference":
        return DEFAULT_INFERENCE_TOKENS, "default: 1e8 generated tokens"
    return DEFAULT_FINETUNE_TOKENS, "default: 1e8 fine-tuning tokens"


def compute_precision(req: PlanRequest) -> str:
    """The precision the matrix multiplies run in (a 4-bit QLoRA base computes in bf16)."""
    if req.workload == "qlora" or (req.workload == "lora" and req.precision in ("int8", "int4")):
        return "bf16"
    return req.precision
