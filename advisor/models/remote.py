"""A Hugging Face model sized from its files' headers before any download (``advisor models hf:ORG/REPO[:QUANT]
--fetch-header``).

What is read, and nothing more: the repository's file list (the Hub API's tree), ``config.json`` and the
safetensors index when the weights are safetensors, and the first bytes of each weight file: a GGUF file's header
and tensor table (every part of a split model; ggml-org/ggml ``docs/gguf.md``), or a safetensors file's 8-byte
length and JSON header (huggingface_hub ``HfApi.parse_safetensors_file_metadata``, two range requests). GGUF headers
are read by HTTP range requests growing from ``FIRST_BYTES`` to at most ``MAX_HEADER_BYTES`` per file (a vocabulary
and its merges make most headers 2 to 10 MB); the requests go through ``huggingface_hub``'s session, so the token,
``HF_ENDPOINT`` and proxies are those of the ``hf`` tool. Nothing here runs unless the flag asks for it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace

from advisor.catalog.readfile import BadJson, parse_json
from advisor.job.bounds import params_maximum, weight_bytes_maximum, whole
from advisor.models.errors import ModelSpecError
from advisor.models.gguf_file import SPLIT_NAME, is_projector, model_from_headers, pick_projector
from advisor.models.gguf_header import GgufError, read_header
from advisor.models.hf import MAX_JSON_BYTES, arch_from_config, check_repo_id, config_notes, config_quant
from advisor.models.record import ResolvedModel

FIRST_BYTES = 2 * 2**20
MAX_HEADER_BYTES = 32 * 2**20  # DeepSeek-V3-class GGUF parts: about 1,100 tensors and a 129k vocabulary
MAX_FILES = 10_000
TIMEOUT_S = 30.0
_QUANT = re.compile(r"(?:^|[-_.])((?:IQ|Q|TQ)\d+_[A-Z0-9_]+|MXFP4(?:_MOE)?|BF16|F16|F32|Q8_0)(?=[-_.]|$)", re.IGNORECASE)


@dataclass(frozen=True)
class RemoteFile:
    path: str
    size: int


def parse_spec(rest: str) -> tuple[str, str]:
    """``ORG/REPO[:QUANT]`` -> (repo id, quant or "")."""
    repo, _, quant = rest.partition(":")
    check_repo_id(repo)
    if quant and not re.fullmatch(r"[A-Za-z0-9_.-]{1,40}", quant):
        raise ModelSpecError(f"hf:{rest}: the quantisation after ':' must be a name like Q4_K_M")
    return repo, quant


def quant_of(filename: str) -> str:
    """The quantisation a GGUF file's name gives (``Qwen2.5-7B-Instruct-Q4_K_M.gguf`` -> ``Q4_K_M``), or ""."""
    stem = filename.rsplit("/", 1)[-1]
    m = SPLIT_NAME.match(stem)
    stem = m.group("stem") if m else stem.removesuffix(".gguf")
    found = _QUANT.findall(stem)
    return found[-1].upper() if found else ""


def _session():
    from huggingface_hub.utils import build_hf_headers, get_session

    return get_session(), build_hf_headers()


def _url(repo: str, filename: str, endpoint: str | None) -> str:
    from huggingface_hub import hf_hub_url

    return hf_hub_url(repo, filename, endpoint=endpoint)


def _fail(repo: str, exc: Exception) -> ModelSpecError:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return ModelSpecError(f"hf:{repo}: reading the file headers failed: {first[:300]} (gated models need "
                          "`hf auth login`)")


def list_files(repo: str, endpoint: str | None = None) -> list[RemoteFile]:
    """The repository's files with their sizes (the Hub API's tree, recursive)."""
    from huggingface_hub import HfApi

    out = []
    try:
        for item in HfApi(endpoint=endpoint).list_repo_tree(repo, recursive=True):
            size = getattr(item, "size", None)
            if size is None:
                continue  # a folder
            out.append(RemoteFile(str(item.path)[:1000], whole(size, 0, weight_bytes_maximum())))
            if len(out) > MAX_FILES:
                raise ModelSpecError(f"hf:{repo}: more than {MAX_FILES} files; name the file's quantisation")
    except ModelSpecError:
        raise
    except ValueError as exc:
        raise ModelSpecError(f"hf:{repo}: the Hub listed a file size that is not a size ({exc})") from None
    except Exception as exc:  # huggingface_hub raises its HTTP, offline and repository errors here
        raise _fail(repo, exc) from None
    return out


def _get(repo: str, filename: str, endpoint: str | None, start: int, stop: int) -> bytes:
    """Bytes ``[start, stop)`` of a file by one range request (a server that ignores the range is read only as far
    as ``stop``)."""
    session, headers = _session()
    want = stop - start
    try:
        with session.stream("GET", _url(repo, filename, endpoint), headers={**headers, "Range": f"bytes={start}-{stop - 1}"},
                            timeout=TIMEOUT_S, follow_redirects=True) as r:
            if r.status_code not in (200, 206):
                raise ModelSpecError(f"hf:{repo}: {filename}: HTTP {r.status_code}")
            skip = start if r.status_code == 200 else 0  # the whole file came: drop what is not wanted
            chunks, got = [], 0
            for chunk in r.iter_bytes():
                if skip:
                    cut = min(skip, len(chunk))
                    chunk, skip = chunk[cut:], skip - cut
                chunks.append(chunk)
                got += len(chunk)
                if got >= want:
                    break
    except ModelSpecError:
        raise
    except Exception as exc:
        raise _fail(repo, exc) from None
    return b"".join(chunks)[:want]


def gguf_header(repo: str, f: RemoteFile, endpoint: str | None = None):
    """The header of a GGUF file on the Hub, read by range requests of growing size (at most ``MAX_HEADER_BYTES``).

    Returns:
        (the header, bytes read).
    Raises:
        ModelSpecError: not GGUF, corrupt, or a header larger than ``MAX_HEADER_BYTES``.
    """
    buf = b""
    want = min(FIRST_BYTES, f.size)
    while True:
        buf += _get(repo, f.path, endpoint, len(buf), want)
        try:
            return read_header(buf, file_size=f.size), len(buf)
        except GgufError as exc:
            if not exc.truncated or len(buf) >= f.size:
                raise ModelSpecError(f"hf:{repo}: {f.path}: {exc}") from None
            if len(buf) >= MAX_HEADER_BYTES:
                raise ModelSpecError(f"hf:{repo}: {f.path}: the GGUF header is larger than "
                                     f"{MAX_HEADER_BYTES // 2**20} MiB; download the file instead") from None
            if len(buf) < want:
                raise ModelSpecError(f"hf:{repo}: {f.path}: the server sent {len(buf)} of {want} bytes") from None
            want = min(want * 4, MAX_HEADER_BYTES, f.size)


def _json_file(repo: str, f: RemoteFile, endpoint: str | None) -> dict:
    if f.size > MAX_JSON_BYTES:
        raise ModelSpecError(f"hf:{repo}: {f.path} of {f.size} bytes is not a config")
    try:
        doc = parse_json(_get(repo, f.path, endpoint, 0, max(1, f.size)))
    except BadJson as exc:
        raise ModelSpecError(f"hf:{repo}: {f.path}: {exc}") from None
    if not isinstance(doc, dict):
        raise ModelSpecError(f"hf:{repo}: {f.path} is not a JSON object")
    return doc


def _pick_gguf(repo: str, ggufs: list[RemoteFile], quant: str) -> list[RemoteFile]:
    by_quant: dict[str, list[RemoteFile]] = {}
    for f in ggufs:
        by_quant.setdefault(quant_of(f.path), []).append(f)
    if quant:
        chosen = by_quant.get(quant.upper())
        if not chosen:
            raise ModelSpecError(f"hf:{repo}: no GGUF file of {quant}; the repository has "
                                 f"{', '.join(sorted(q for q in by_quant if q)) or 'none with a quantisation name'}")
    elif len(by_quant) == 1:
        chosen = next(iter(by_quant.values()))
    else:
        raise ModelSpecError(f"hf:{repo}: several GGUF files; name one as hf:{repo}:QUANT, one of "
                             f"{', '.join(sorted(q for q in by_quant if q))}")
    chosen = sorted(chosen, key=lambda f: f.path)
    first = chosen[0]
    m = SPLIT_NAME.match(first.path.rsplit("/", 1)[-1])
    if m and int(m.group("count")) != len(chosen):
        raise ModelSpecError(f"hf:{repo}: {first.path} is one of {int(m.group('count'))} parts; "
                             f"the repository lists {len(chosen)}")
    return chosen


def fetch_header_model(rest: str, endpoint: str | None = None) -> ResolvedModel:
    """``hf:ORG/REPO[:QUANT]`` sized from its file headers (module docstring).

    Raises:
        ModelSpecError: one line (no such repository or quantisation, unreadable headers, no weights).
    """
    repo, quant = parse_spec(rest)
    endpoint = endpoint or os.environ.get("HF_ENDPOINT") or None  # read at call time, as huggingface_hub at import
    files = list_files(repo, endpoint)
    ggufs = [f for f in files if f.path.lower().endswith(".gguf") and not is_projector(f.path)]
    if ggufs:
        chosen = _pick_gguf(repo, ggufs, quant)
        headers, read = [], 0
        for f in chosen:
            header, n = gguf_header(repo, f, endpoint)
            headers.append(header)
            read += n
        stem = chosen[0].path.rsplit("/", 1)[-1].removesuffix(".gguf")
        rm = model_from_headers(headers, stem, f"hf:{repo}/{chosen[0].path}", source="hf-header",
                                name=repo, location=f"hf:{repo}/{chosen[0].path}")
        notes = [f"sized from {len(chosen)} GGUF header(s) on the Hub ({read} bytes read by range requests)"]
        projector = pick_projector([(f.path, f.size) for f in files])
        if projector is None:
            return replace(rm, notes=rm.notes + tuple(notes))
        notes.append(f"multimodal projector {projector[0]} ({projector[1]} bytes listed) loads beside the model: "
                     "counted in its memory")
        return replace(rm, notes=rm.notes + tuple(notes), projector_bytes=projector[1],
                       projector=f"hf:{repo}/{projector[0]}")
    return _safetensors_model(repo, files, endpoint)


def _safetensors_model(repo: str, files: list[RemoteFile], endpoint: str | None) -> ResolvedModel:
    from huggingface_hub import HfApi

    by_path = {f.path: f for f in files}
    if "config.json" not in by_path:
        raise ModelSpecError(f"hf:{repo}: no GGUF file and no config.json: not a model the advisor reads")
    cfg = _json_file(repo, by_path["config.json"], endpoint)
    arch = arch_from_config(cfg, repo, repo, where=f"hf:{repo}/config.json", source=f"hf:{repo}")
    shards = sorted(p for p in by_path if p.endswith(".safetensors") and "/" not in p)
    if "model.safetensors.index.json" in by_path:
        index = _json_file(repo, by_path["model.safetensors.index.json"], endpoint)
        wmap = index.get("weight_map")
        wanted = {s for s in wmap.values() if isinstance(s, str)} if isinstance(wmap, dict) else set()
        shards = sorted(s for s in wanted if s in by_path)
        if wanted - set(shards):
            raise ModelSpecError(f"hf:{repo}: the safetensors index names files the repository lacks")
    if not shards:
        raise ModelSpecError(f"hf:{repo}: no safetensors or GGUF weights in the repository")
    api = HfApi(endpoint=endpoint)
    params = nbytes = 0
    floats = True
    for s in shards:
        try:
            meta = api.parse_safetensors_file_metadata(repo, s, timeout=TIMEOUT_S)
        except Exception as exc:
            raise _fail(repo, exc) from None
        for name, t in meta.tensors.items():
            try:
                start, end = (whole(x, 0, by_path[s].size) for x in t.data_offsets)
                count = whole(t.parameter_count, 0, params_maximum())
            except (ValueError, TypeError):
                raise ModelSpecError(f"hf:{repo}: {s}: tensor {name[:80]!r} has impossible offsets or shape") from None
            if end < start:
                raise ModelSpecError(f"hf:{repo}: {s}: tensor {name[:80]!r} ends before it starts")
            params += count
            nbytes += end - start
            floats &= t.dtype in ("F32", "F16", "BF16", "F8_E4M3", "F8_E5M2")
    if params > params_maximum():
        raise ModelSpecError(f"hf:{repo}: more than {params_maximum():.0e} parameters")
    notes = config_notes(cfg) + (f"sized from {len(shards)} safetensors header(s) on the Hub by range requests",)
    return ResolvedModel(arch=arch, name=repo, source="hf-header", location=f"hf:{repo}",
                         params_exact=params if floats else 0, weight_bytes=nbytes, quant=config_quant(cfg),
                         notes=notes)
