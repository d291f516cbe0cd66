"""What a resolved model is: the planner's architecture plus where it came from and what its files weigh."""

from __future__ import annotations

from dataclasses import dataclass

from advisor.estimate.model import ModelArch, active_param_count, param_count

SOURCES = ("preset", "hf-config", "hf-dir", "hf-cache", "hf-download", "hf-header", "gguf", "ollama", "lmstudio")


@dataclass(frozen=True)
class ResolvedModel:
    """A model ready for the planner.

    Attributes:
        arch: the architecture (sizes for activations, KV cache and FLOPs).
        name: a display name (preset name, ``ORG/NAME``, the store's name or the file name).
        source: one of ``SOURCES``.
        location: the file, directory or URL it was read from ("" for a preset).
        params_exact: the exact parameter count when the files say it (GGUF tensors, safetensors headers);
            0 when only the architecture gives it.
        weight_bytes: the exact bytes of the weights on disk (GGUF tensors, safetensors index); 0 unknown.
        quant: the stored format ("Q4_K_M", "bf16", "mxfp4", ...), "" when unknown.
        notes: what the count leaves out or assumes (e.g. a vision tower), one line each.
        projector_bytes: a multimodal GGUF's projector (``mmproj-*.gguf``, the vision encoder llama.cpp, LM Studio
            and Ollama load beside the model): the bytes of its tensors or its listed file size; 0 when none.
        projector: where that projector is (a path or ``hf:ORG/REPO/FILE``).
    """

    arch: ModelArch
    name: str
    source: str
    location: str = ""
    params_exact: int = 0
    weight_bytes: int = 0
    quant: str = ""
    notes: tuple[str, ...] = ()
    projector_bytes: int = 0
    projector: str = ""

    @property
    def loaded_bytes(self) -> int:
        """What an engine loads onto the device for this model: the weights and, for a multimodal GGUF, its
        projector (0 when the weight bytes are unknown)."""
        return self.weight_bytes + self.projector_bytes if self.weight_bytes else 0

    @property
    def params(self) -> int:
        """Total parameters: exact from the files when known, else counted from the architecture."""
        return self.params_exact or param_count(self.arch)

    @property
    def active_params(self) -> int:
        """Parameters per token (MoE: the routed share), scaled to ``params`` when the files give an exact total."""
        total, active = param_count(self.arch), active_param_count(self.arch)
        return int(round(self.params * active / total)) if total else self.params

    @property
    def bits_per_weight(self) -> float | None:
        """Average stored bits per parameter (None when the weight bytes are unknown)."""
        return self.weight_bytes * 8 / self.params if self.weight_bytes else None

    def to_json(self) -> dict:
        """The JSON form used by ``advisor models --json``."""
        a = self.arch
        return {"name": self.name, "id": a.id, "source": self.source, "location": self.location,
                "params": self.params, "active_params": self.active_params,
                "params_exact": bool(self.params_exact), "weight_bytes": self.weight_bytes or None,
                "quant": self.quant or None, "bits_per_weight": self.bits_per_weight,
                "projector_bytes": self.projector_bytes or None, "projector": self.projector or None,
                "max_context": a.max_context or None,
                "architecture": {"layers": a.layers, "hidden": a.hidden, "heads": a.heads, "kv_heads": a.kv_heads,
                                 "head_dim": a.d_head, "ffn": a.ffn, "vocab": a.vocab, "tied": a.tied,
                                 "experts": a.experts, "experts_per_token": a.experts_per_token,
                                 "kv_lora_rank": a.kv_lora_rank},
                "notes": list(self.notes)}
