"""Models from where they are: Hugging Face configs and cache, GGUF files, Ollama and LM Studio stores.

A service (it reads files; the pure core does not). Public API:

    from advisor.models import resolve_model, ResolvedModel, ModelSpecError, discover_models
    rm = resolve_model("hf:Qwen/Qwen2.5-7B", catalog)   # or a preset id, a path, ollama:NAME, lmstudio:NAME
    rm.arch, rm.params, rm.active_params, rm.weight_bytes, rm.quant, rm.source, rm.location
    found = discover_models()                         # every model in the HF cache, Ollama and LM Studio

Nothing here opens a network connection unless ``download=True`` is passed (the CLI's ``--download``).
``huggingface_hub`` and ``gguf`` (which imports numpy) are imported only inside the functions that need them.
"""

from advisor.models.errors import ModelSpecError
from advisor.models.record import ResolvedModel
from advisor.models.resolve import resolve_model
from advisor.models.stores import FoundModel, discover_models

__all__ = ["FoundModel", "ModelSpecError", "ResolvedModel", "discover_models", "resolve_model"]
