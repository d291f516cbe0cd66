"""Utilisation priors per accelerator class, and the calibration a measured training step provides.

Priors come from docs/method.md ("Utilisation priors"); each carries its origin so the UI can say where a
figure comes from. A calibration measured on this machine replaces the prior for its accelerator.
"""

from __future__ import annotations

from dataclasses import dataclass

# Bandwidth and compute efficiency for decoding (docs/method.md, "Inference speed").
ETA_MEM_PRIOR = 0.70  # llama.cpp F16 on M2 Ultra reaches about 70 percent; range 0.55 to 0.8
ETA_COMPUTE_PRIOR = 0.60  # range 0.5 to 0.7


@dataclass(frozen=True)
class Utilisation:
    """A model-FLOPs utilisation with where it comes from."""

    mfu: float
    origin: str


_HOPPER_PLUS = ("h100", "h200", "gh200", "b200")
_AMPERE_DC = ("a100", "a10", "a30", "a40")
_OLD = ("v100", "t4", "p100")


def mfu_prior(accel_id: str, kind: str, precision: str, *, moe: bool = False, workload: str = "pretrain",
              ) -> Utilisation:
    """The default MFU for an accelerator class, precision and workload (docs/method.md table)."""
    if kind in ("consumer", "workstation"):
        u = Utilisation(0.30, "single consumer GPU fine-tuning, HF Trainer: 0.25 to 0.40 (docs/method.md)")
    elif any(accel_id.startswith(p) for p in _HOPPER_PLUS):
        if precision == "fp8":
            u = Utilisation(0.25, "fp8 training on H100, fraction of the fp8 peak: 0.2 to 0.3 (docs/method.md)")
        else:
            u = Utilisation(0.40, "large dense pretraining, H100 bf16: 0.38 to 0.46; Llama 3.1 405B 0.38 to 0.43")
    elif any(accel_id.startswith(p) for p in _AMPERE_DC):
        u = Utilisation(0.45, "large dense pretraining, A100: 0.40 to 0.55 (OPT-175B 0.47, LLaMA-65B about 0.47)")
    elif any(accel_id.startswith(p) for p in _OLD):
        u = Utilisation(0.20, "V100-era training: about 0.2 (GPT-3)")
    elif kind == "tpu":
        u = Utilisation(0.45, "TPU v4 dense pretraining: PaLM 540B reached 0.46 (Chowdhery et al. 2022)")
    else:
        u = Utilisation(0.30, "assumption for this class (no published prior): 0.30")
    if moe:
        u = Utilisation(round(u.mfu * 0.5, 4), f"{u.origin}; halved for MoE (DeepSeek-V3 about 0.2 of fp8 peak)")
    if workload == "qlora":
        u = Utilisation(round(u.mfu * 0.7, 4), f"{u.origin}; x0.7 for 4-bit dequantisation in QLoRA")
    return u
