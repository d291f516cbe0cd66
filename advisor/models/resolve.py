"""One entry point from a ``--model`` value to a :class:`ResolvedModel`.

Spec forms, tried in this order:

- a preset id of the catalog (``llama-3.1-8b``);
- ``hf:ORG/NAME``: the Hugging Face cache (``download=True`` fetches the config over HTTPS when it is missing);
- ``ollama:NAME[:TAG]`` and ``lmstudio:PUBLISHER/MODEL[/FILE.gguf]``: those stores;
- a path: a ``.gguf`` file, a ``config.json`` file, or a model directory (config plus safetensors); a GGUF's
  multimodal projector beside it (``mmproj-*.gguf``) counts in its memory;
- any other name: an Ollama model of that name, then an LM Studio one.
"""

from __future__ import annotations

from pathlib import Path

from advisor.models.errors import ModelSpecError
from advisor.models.record import ResolvedModel


def _is_explicit_path(spec: str) -> bool:
    return spec.startswith(("/", "./", "../", "~")) or "\\" in spec


_READ: dict[str, ResolvedModel] = {}  # models this process read from elsewhere (--fetch-header), by their spec


def remember(spec: str, model: ResolvedModel) -> None:
    """Keep a model read from its file headers on the Hub (``models.remote``) under its spec, so a plan of the same
    spec in this process resolves to it (nothing is written to disk)."""
    _READ[spec.strip()] = model


def resolve_model(spec: str, catalog, *, download: bool = False) -> ResolvedModel:
    """Resolve a model spec to the planner's architecture, with its name and provenance.

    Args:
        spec: a preset id, ``hf:ORG/NAME``, ``ollama:NAME``, ``lmstudio:NAME``, a path, or a store's model name.
        catalog: the :class:`advisor.catalog.Catalog` whose presets come first.
        download: allow fetching a Hugging Face config over HTTPS (the CLI's ``--download``); nothing else
            opens a connection.
    Returns:
        The resolved model (``arch``, exact ``params`` and ``weight_bytes`` where the files give them).
    Raises:
        ModelSpecError: one line naming what is wrong or missing, and how to get a missing model.
    """
    spec = (spec or "").strip()
    if not spec:
        raise ModelSpecError("--model: empty model name")
    if spec in catalog.models:
        arch = catalog.models[spec]
        return ResolvedModel(arch=arch, name=arch.name, source="preset", location=arch.source)
    if spec in _READ:
        return _READ[spec]
    kind, _, rest = spec.partition(":")
    if kind == "hf" and rest:
        from advisor.models.hf import resolve_cached

        return resolve_cached(rest, download=download)
    if kind == "ollama" and rest:
        from advisor.models.stores import resolve_ollama

        return resolve_ollama(rest)
    if kind == "lmstudio" and rest:
        from advisor.models.stores import resolve_lmstudio

        return resolve_lmstudio(rest)
    path = Path(spec).expanduser()
    if path.exists() or _is_explicit_path(spec):
        return _resolve_path(path)
    return _resolve_store_name(spec, catalog)


def _resolve_path(path: Path) -> ResolvedModel:
    from advisor.models.gguf_file import is_projector, read_gguf, with_projector
    from advisor.models.hf import resolve_config_file, resolve_dir

    if not path.exists():
        raise ModelSpecError(f"{path}: no such file or directory")
    if path.is_dir():
        ggufs = sorted(p for p in path.glob("*.gguf") if not is_projector(p.name))
        if not (path / "config.json").is_file() and len(ggufs) == 1:
            return with_projector(read_gguf(ggufs[0]), ggufs[0])
        return resolve_dir(path)
    if path.suffix.lower() == ".gguf":
        if is_projector(path.name):
            raise ModelSpecError(f"{path}: a multimodal projector, not a model: name the model's GGUF beside it "
                                 "(its projector is counted with it)")
        return with_projector(read_gguf(path), path)
    if path.suffix.lower() == ".json":
        return resolve_config_file(path)
    raise ModelSpecError(f"{path}: not a model file (expected a .gguf file, a config.json or a model directory)")


def _resolve_store_name(spec: str, catalog) -> ResolvedModel:
    from advisor.models.stores import lmstudio_models, ollama_models, resolve_lmstudio, resolve_ollama

    key = spec if ":" in spec.rsplit("/", 1)[-1] else f"{spec}:latest"
    if any(name == key for name, _b, _s in ollama_models()):
        return resolve_ollama(spec)
    if any(name == spec or name.rsplit("/", 1)[0] == spec for name, _p, _s in lmstudio_models()):
        return resolve_lmstudio(spec)
    if spec.lower().endswith((".gguf", ".json")):
        raise ModelSpecError(f"{spec}: no such file")
    close = sorted(m for m in catalog.models if spec.lower().replace(" ", "-") in m)[:8]
    hint = f"; presets like it: {', '.join(close)}" if close else f"; presets: {', '.join(sorted(catalog.models))}"
    raise ModelSpecError(f"unknown model {spec!r}: not a preset, a file, hf:ORG/NAME, or a model installed in Ollama "
                         f"or LM Studio{hint}")
