"""Models installed on this machine: the Hugging Face cache, Ollama's store and LM Studio's models folder.

Ollama keeps image manifests under ``<models>/manifests/<registry>/<namespace>/<model>/<tag>`` (JSON with a
``layers`` list; the layer of media type ``application/vnd.ollama.image.model`` is the GGUF weights) and the
files under ``<models>/blobs/sha256-<hex>``; ``<models>`` is ``$OLLAMA_MODELS``, else ``~/.ollama/models``
(the Linux service's is ``/usr/share/ollama/.ollama/models``) (ollama/ollama ``docs/faq.md``, "Where are
models stored?"). LM Studio keeps GGUF files as ``<models>/<publisher>/<model>/<file>.gguf`` under
``~/.lmstudio/models`` (``~/.cache/lm-studio/models`` before 0.3); ``ADVISOR_LMSTUDIO_MODELS`` (ours)
points elsewhere, for a folder moved in LM Studio's settings.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from pathlib import Path

from advisor.catalog.readfile import BadJson, UnreadableFile, parse_json, read_regular_file
from advisor.job.bounds import weight_bytes_maximum, whole
from advisor.models.errors import ModelSpecError
from advisor.models.record import ResolvedModel

OLLAMA_MODEL_MEDIA = "application/vnd.ollama.image.model"
OLLAMA_PROJECTOR_MEDIA = "application/vnd.ollama.image.projector"  # a vision model's projector (llava, ...)
OLLAMA_REGISTRY = "registry.ollama.ai"
MAX_MANIFEST_BYTES = 2**20
MAX_LAYERS = 1024  # an Ollama manifest holds a handful of layers (weights, template, params, licence)
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


@dataclass(frozen=True)
class FoundModel:
    """One model found on this machine.

    Attributes:
        name: its name in the store (``ORG/NAME``, ``llama3.1:8b``, ``publisher/model/file.gguf``).
        store: "hf-cache", "ollama" or "lmstudio".
        spec: what to pass to ``--model`` (``resolve_model``) for this model.
        location: its folder or file.
        disk_bytes: bytes its files take on disk.
        model: the resolved model, or None when it could not be read.
        error: why it could not be read (one line), "" otherwise.
    """

    name: str
    store: str
    spec: str
    location: str
    disk_bytes: int
    model: ResolvedModel | None = None
    error: str = ""


# ---------------------------------------------------------------- where the stores are
def ollama_dir() -> Path | None:
    """Ollama's models folder: ``$OLLAMA_MODELS``, else the first of the default folders that exists."""
    if os.environ.get("OLLAMA_MODELS"):
        return Path(os.environ["OLLAMA_MODELS"]).expanduser()
    for p in (Path.home() / ".ollama" / "models", Path("/usr/share/ollama/.ollama/models")):
        if p.is_dir():
            return p
    return None


def lmstudio_dirs() -> list[Path]:
    """LM Studio's models folders that exist (``ADVISOR_LMSTUDIO_MODELS`` alone when set)."""
    if os.environ.get("ADVISOR_LMSTUDIO_MODELS"):
        return [Path(os.environ["ADVISOR_LMSTUDIO_MODELS"]).expanduser()]
    return [p for p in (Path.home() / ".lmstudio" / "models", Path.home() / ".cache" / "lm-studio" / "models")
            if p.is_dir()]


# ---------------------------------------------------------------- Ollama
def _ollama_name(rel: Path) -> str:
    """``registry.ollama.ai/library/llama3.1/8b`` -> ``llama3.1:8b``; other namespaces keep their prefix."""
    parts = rel.parts
    host, path, tag = parts[0], parts[1:-1], parts[-1]
    if host == OLLAMA_REGISTRY and len(path) == 2 and path[0] == "library":
        return f"{path[1]}:{tag}"
    base = "/".join(path) if host == OLLAMA_REGISTRY else "/".join((host, *path))
    return f"{base}:{tag}"


def ollama_models(root: Path | None = None, problems: list | None = None) -> list[tuple[str, Path, int]]:
    """Ollama models: (name, GGUF blob, bytes of all its layers), sorted by name.

    Args:
        root: the models folder (default ``ollama_dir()``).
        problems: when given, each manifest that cannot be used adds (its name, its path, the ModelSpecError
            naming the file and field); it is skipped either way, and the other models are still listed.
    """
    root = root or ollama_dir()
    if root is None or not (root / "manifests").is_dir():
        return []
    return sorted((name, blob, total) for name, _m, blob, total in _ollama_entries(root, problems))


def _ollama_entries(root: Path, problems: list | None = None) -> list[tuple[str, Path, Path, int]]:
    """(name, manifest, GGUF blob, bytes of all its layers) of every usable manifest under ``root``."""
    out = []
    for manifest in sorted((root / "manifests").rglob("*")):
        if manifest.is_dir():
            continue
        rel = manifest.relative_to(root / "manifests")
        if len(rel.parts) < 4:
            continue
        try:
            blob, total = _ollama_blob(root, manifest)
        except ModelSpecError as exc:
            if problems is not None:
                problems.append((_ollama_name(rel), manifest, exc))
            continue
        out.append((_ollama_name(rel), manifest, blob, total))
    return out


def _ollama_blob(root: Path, manifest: Path) -> tuple[Path, int]:
    """The GGUF blob a manifest names and the bytes of all its layers. Raises ModelSpecError (file and field)."""
    blob, total, _projector = _ollama_layers(root, manifest)
    return blob, total


def _ollama_layers(root: Path, manifest: Path) -> tuple[Path, int, Path | None]:
    """The GGUF blob a manifest names, the bytes of all its layers and its projector's blob (a vision model's,
    None without). Raises ModelSpecError (file and field)."""
    try:
        doc = parse_json(read_regular_file(manifest, MAX_MANIFEST_BYTES))
    except UnreadableFile as exc:
        raise ModelSpecError(f"{manifest}: cannot read the manifest: {exc.strerror}") from None
    except OSError as exc:
        raise ModelSpecError(f"{manifest}: cannot read the manifest: {exc.strerror or exc}") from None
    except BadJson as exc:
        raise ModelSpecError(f"{manifest}: {exc}") from None
    layers = doc.get("layers") if isinstance(doc, dict) else None
    if not isinstance(layers, list) or not 0 < len(layers) <= MAX_LAYERS:
        raise ModelSpecError(f"{manifest}: field 'layers' must be a list of up to {MAX_LAYERS} layers")
    total, digest, projector = 0, None, None
    for i, layer in enumerate(layers):
        if not isinstance(layer, dict):
            raise ModelSpecError(f"{manifest}: field 'layers[{i}]' is not a JSON object")
        try:
            total += whole(layer.get("size", 0), 0, weight_bytes_maximum())
        except ValueError as exc:
            raise ModelSpecError(f"{manifest}: field 'layers[{i}].size' (bytes) {exc}") from None
        media = layer.get("mediaType")
        if (media == OLLAMA_MODEL_MEDIA and digest is None) or (media == OLLAMA_PROJECTOR_MEDIA and projector is None):
            d = layer.get("digest")
            if not isinstance(d, str) or not DIGEST.fullmatch(d):
                raise ModelSpecError(f"{manifest}: field 'layers[{i}].digest' is not sha256: and 64 hex digits")
            if media == OLLAMA_MODEL_MEDIA:
                digest = d
            else:
                projector = root / "blobs" / d.replace(":", "-")
    if digest is None:
        raise ModelSpecError(f"{manifest}: no layer of mediaType {OLLAMA_MODEL_MEDIA} (the weights)")
    return root / "blobs" / digest.replace(":", "-"), total, projector


def _ollama_key(name: str) -> str:
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


def resolve_ollama(name: str, root: Path | None = None) -> ResolvedModel:
    """An Ollama model by its name (``llama3.1:8b``; no tag means ``latest``).

    Raises:
        ModelSpecError: not installed (the message says how to get it) or its GGUF blob is bad.
    """
    from advisor.models.gguf_file import projector_bytes, read_gguf

    key = _ollama_key(name)
    store = root or ollama_dir()
    problems: list = []
    entries = _ollama_entries(store, problems) if store is not None and (store / "manifests").is_dir() else []
    for found, _manifest, exc in problems:
        if found == key:
            raise exc  # installed, but its manifest is unusable: say why, not "not installed"
    for found, manifest, blob, _size in entries:
        if found == key:
            model = read_gguf(blob, source="ollama", name=key, location=str(blob))
            projector = _ollama_layers(store, manifest)[2]
            if projector is None:
                return model
            size = projector_bytes(projector)
            return replace(model, projector_bytes=size, projector=str(projector), notes=model.notes + (
                f"vision projector layer ({size / 2**20:,.0f} MiB of tensors) loads with the model: counted in its "
                "memory",))
    where = root or ollama_dir() or Path.home() / ".ollama" / "models"
    raise ModelSpecError(f"ollama:{name} is not installed in Ollama ({where}); run: ollama pull {name}")


# ---------------------------------------------------------------- LM Studio
def _is_weights(p: Path) -> bool:
    from advisor.models.gguf_file import is_projector

    return p.suffix.lower() == ".gguf" and not is_projector(p.name)


def lmstudio_models(dirs: list[Path] | None = None) -> list[tuple[str, Path, int]]:
    """LM Studio GGUF files: (``publisher/model/file.gguf``, path, bytes), sorted by name (vision projectors skipped)."""
    from advisor.models.gguf_file import SPLIT_NAME

    out = []
    for root in (lmstudio_dirs() if dirs is None else dirs):
        for f in sorted(root.rglob("*.gguf")):
            split = SPLIT_NAME.match(f.name)
            if not f.is_file() or not _is_weights(f) or (split and int(split.group("no")) != 1):
                continue  # a split model is listed once, by its first part
            try:
                size = f.stat().st_size
                if split:
                    count = int(split.group("count"))
                    size = sum(p.stat().st_size for p in (
                        f.with_name(f"{split.group('stem')}-{i:05d}-of-{count:05d}.gguf") for i in range(1, count + 1))
                        if p.is_file())
                out.append(("/".join(f.relative_to(root).parts), f, size))
            except OSError:
                continue
    return sorted(out)


def resolve_lmstudio(name: str, dirs: list[Path] | None = None) -> ResolvedModel:
    """An LM Studio model by ``publisher/model/file.gguf``, or by ``publisher/model`` when it holds one GGUF file.

    Raises:
        ModelSpecError: not found, or ambiguous (the message lists the files to choose from).
    """
    from advisor.models.gguf_file import read_gguf, with_projector

    models = lmstudio_models(dirs)
    exact = [m for m in models if m[0] == name]
    matches = exact or [m for m in models if m[0].rsplit("/", 1)[0] == name.rstrip("/")]
    if len(matches) == 1:
        path = matches[0][1]
        return with_projector(read_gguf(path, source="lmstudio", name=matches[0][0], location=str(path)), path)
    if matches:
        raise ModelSpecError(f"lmstudio:{name} holds {len(matches)} GGUF files; name one: "
                             + ", ".join(f"lmstudio:{m[0]}" for m in matches))
    roots = ", ".join(str(d) for d in (lmstudio_dirs() if dirs is None else dirs)) or str(Path.home() / ".lmstudio" / "models")
    raise ModelSpecError(f"lmstudio:{name} is not in LM Studio's models folder ({roots}); download it in LM Studio "
                         "or run: lms get " + name)


# ---------------------------------------------------------------- everything on this machine
def _disk_bytes(folder: Path) -> int:
    total = 0
    for f in folder.rglob("*"):
        try:
            if f.is_file():
                total += f.stat().st_size  # follows the cache's symlinks to the blobs
        except OSError:
            continue
    return total


def _short(error: ModelSpecError, path: Path) -> str:
    """The reason without the file name in front (the row already says where the model is)."""
    text = str(error)
    for prefix in (f"{path / 'config.json'}: ", f"{path}: "):
        if text.startswith(prefix):
            return text[len(prefix):]
    return text


def discover_models(*, hf_cache: Path | None = None, ollama_root: Path | None = None,
                    lmstudio: list[Path] | None = None) -> list[FoundModel]:
    """Every model in the Hugging Face cache, Ollama and LM Studio, each read from its metadata (no network).

    Args:
        hf_cache, ollama_root, lmstudio: folders to look in instead of the defaults (tests).
    Returns:
        The models, store by store; one that cannot be read carries ``error`` instead of ``model``.
    """
    from advisor.models.gguf_file import read_gguf
    from advisor.models.hf import cached_repos, resolve_config_file

    found: list[FoundModel] = []
    for repo_id, snapshot in cached_repos(hf_cache):
        spec = f"hf:{repo_id}"
        try:
            rm = resolve_config_file(snapshot / "config.json", source="hf-cache", name=repo_id,
                                     location=f"{spec} ({snapshot})")
            found.append(FoundModel(repo_id, "hf-cache", spec, str(snapshot), _disk_bytes(snapshot), rm))
        except ModelSpecError as exc:
            found.append(FoundModel(repo_id, "hf-cache", spec, str(snapshot), _disk_bytes(snapshot),
                                    error=_short(exc, snapshot)))
    problems: list = []
    ollama = ollama_models(ollama_root, problems)
    for name, manifest, exc in problems:  # a bad manifest is one row with its reason; the others are still listed
        found.append(FoundModel(name, "ollama", f"ollama:{name}", str(manifest), 0, error=_short(exc, manifest)))
    gguf_stores = [("ollama", m) for m in ollama] + [("lmstudio", m) for m in lmstudio_models(lmstudio)]
    for source, (name, path, size) in gguf_stores:
        try:
            found.append(FoundModel(name, source, f"{source}:{name}", str(path), size,
                                    read_gguf(path, source=source, name=name, location=str(path))))
        except ModelSpecError as exc:
            found.append(FoundModel(name, source, f"{source}:{name}", str(path), size, error=_short(exc, path)))
    return found
