"""GGUF files (llama.cpp, Ollama, LM Studio): architecture, context and exact weight bytes from the metadata.

The header is read by ``gguf_header`` (bounded: arrays the advisor does not need are skipped, every size is
checked against the file's); the ``gguf`` package that llama.cpp publishes (``gguf-py``) gives the ggml type
sizes and file type names. The weights themselves are never read. Keys follow the
GGUF specification (ggml-org/ggml, ``docs/gguf.md``, "Standardized key-value pairs"): ``general.architecture``,
``<arch>.block_count``, ``<arch>.embedding_length``, ``<arch>.attention.head_count`` and so on. The parameter
count and the weight bytes are the sums over the tensor table (``n_elements``, ``n_bytes`` per tensor,
which the reader derives from each tensor's ggml type block size), so they are exact for any quantisation.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from pathlib import Path

from advisor.catalog.readfile import UnreadableFile, open_regular
from advisor.estimate.model import ModelArch
from advisor.job.bounds import arch_whole
from advisor.models.errors import ModelSpecError
from advisor.models.gguf_header import GgufError, GgufHeader, read_header_file
from advisor.models.record import ResolvedModel

GGUF_MAGIC = b"GGUF"
# llama.cpp's gguf-split names the parts of one model <name>-00001-of-00003.gguf; the first holds the metadata.
SPLIT_NAME = re.compile(r"^(?P<stem>.+)-(?P<no>\d{5})-of-(?P<count>\d{5})\.gguf$", re.IGNORECASE)


def split_parts(path: Path) -> list[Path]:
    """Every part of a split GGUF model (the file alone when it is not split), first part first.

    Raises:
        ModelSpecError: a part is missing.
    """
    m = SPLIT_NAME.match(path.name)
    if not m:
        return [path]
    count = int(m.group("count"))
    parts = [path.with_name(f"{m.group('stem')}-{i:05d}-of-{count:05d}.gguf") for i in range(1, count + 1)]
    missing = [p.name for p in parts if not p.is_file()]
    if missing:
        raise ModelSpecError(f"{path}: split GGUF model is missing part(s) {', '.join(missing)}")
    return parts


def _reader(path: Path) -> GgufHeader:
    """A GGUF file's header and tensor table, or ModelSpecError with one line (not a regular file, not
    GGUF, truncated, corrupt)."""
    try:
        with open_regular(path) as f:
            return read_header_file(f)
    except FileNotFoundError:
        raise ModelSpecError(f"{path}: no such file") from None
    except UnreadableFile as exc:
        raise ModelSpecError(f"{path}: {exc.strerror}") from None
    except OSError as exc:
        raise ModelSpecError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except GgufError as exc:
        raise ModelSpecError(f"{path}: {exc}") from None


def _value(reader: GgufHeader, key: str):
    return reader.fields.get(key)


# GGUF key (after ``<arch>.``) -> the ModelArch field whose range applies (the job flag's).
_KEY_FIELD = {"block_count": "layers", "embedding_length": "hidden", "attention.head_count": "heads",
              "attention.head_count_kv": "kv_heads", "feed_forward_length": "ffn", "vocab_size": "vocab",
              "attention.key_length": "head_dim", "context_length": "max_context", "expert_count": "experts",
              "expert_used_count": "experts_per_token", "expert_shared_count": "shared_experts",
              "expert_feed_forward_length": "moe_ffn", "leading_dense_block_count": "dense_layers",
              "attention.kv_lora_rank": "kv_lora_rank", "attention.q_lora_rank": "q_lora_rank",
              "rope.dimension_count": "rope_dim", "attention.key_length_mla": "head_dim",
              "attention.value_length_mla": "v_head_dim", "attention.value_length": "v_head_dim",
              "attention.sliding_window": "sliding_window", "ssm.conv_kernel": "linear_conv",
              "ssm.state_size": "linear_k_dim", "ssm.group_count": "linear_k_heads",
              "ssm.time_step_rank": "linear_v_heads", "ssm.inner_size": "hidden", "full_attention_interval": "layers",
              "embedding_length_per_layer_input": "hidden", "altup.num_inputs": "heads"}
# Architectures whose sliding-window layers llama.cpp sets by a fixed pattern (src/llama-model.cpp, load_hparams:
# ``hparams.set_swa_pattern(n)``: of every n layers the first n - 1 are sliding), the GGUF holding only the window.
LLAMA_CPP_SWA_PATTERN = {"gemma2": 2, "gemma3": 6, "gemma3n": 5, "gpt-oss": 2, "cohere2": 4, "llama4": 4}
# Gemma 3n in llama.cpp (src/llama-model.cpp, load_hparams): ``n_layer_kv_from_start = 20`` written into the loader,
# whatever ``gemma3n.attention.shared_kv_layers`` says; the layers after the 20th own no cache (``has_kv``).
LLAMA_CPP_GEMMA3N_KV_LAYERS = 20
# Gated DeltaNet architectures among llama.cpp's recurrent ones (the others' ssm.* keys describe Mamba-2 layers).
GATED_DELTANET_ARCHS = ("qwen3next", "qwen35", "qwen35moe")


def _layer_kinds(reader: GgufHeader, a: str, layers: int, need) -> dict:
    """The layer kinds of a GGUF model (``ModelArch.layer_pattern`` and the fields it needs).

    Sliding layers: ``<arch>.attention.sliding_window_pattern`` (one bool per layer) when the file has it, else
    llama.cpp's fixed pattern for the architecture (``LLAMA_CPP_SWA_PATTERN``); Llama 4's chunks are
    ``attention.chunk_size`` wide. Recurrent layers (``<arch>.ssm.*`` keys, llama.cpp's hparams ``ssm_d_conv``,
    ``ssm_d_inner``, ``ssm_d_state``, ``ssm_n_group``, ``ssm_dt_rank``): the layers whose
    ``attention.head_count_kv`` is 0, or all but every ``full_attention_interval``-th.
    """
    out: dict = {}
    window = need("attention.sliding_window", default=0) or (need("attention.chunk_size", default=0)
                                                               if a == "llama4" else 0)
    flags = reader.fields.get(f"{a}.attention.sliding_window_pattern")
    pattern = ""
    if window and isinstance(flags, list) and len(flags) == layers:
        pattern = "".join("S" if x else "F" for x in flags)
    elif window and a in LLAMA_CPP_SWA_PATTERN:
        pattern = "S" * (LLAMA_CPP_SWA_PATTERN[a] - 1) + "F"
    if pattern:
        out.update(layer_pattern=pattern, sliding_window=window)
    if reader.fields.get(f"{a}.ssm.conv_kernel") is not None:
        heads = need("ssm.time_step_rank")
        inner = need("ssm.inner_size")
        if not heads or inner % heads:
            raise ModelSpecError(f"{a}: GGUF ssm.inner_size {inner} is not a multiple of ssm.time_step_rank {heads}")
        kv = reader.fields.get(f"{a}.attention.head_count_kv")
        every = need("full_attention_interval", default=0)
        if isinstance(kv, list) and len(kv) == layers:
            pattern = "".join("L" if not x else "F" for x in kv)
        elif every:
            pattern = "L" * (every - 1) + "F"
        else:
            pattern = "L"
        out.update(layer_pattern=pattern, linear_conv=need("ssm.conv_kernel"), linear_k_dim=need("ssm.state_size"),
                   linear_k_heads=need("ssm.group_count", default=1), linear_v_heads=heads,
                   linear_v_dim=inner // heads,
                   linear_kind="gated-deltanet" if a in GATED_DELTANET_ARCHS else "mamba2")
    return out


def _gemma3n(tensors: dict, layers: int, need, path) -> dict:
    """Gemma 3n's fields from a GGUF (llama.cpp arch ``gemma3n``): the per-layer embedding width
    (``embedding_length_per_layer_input``) and table rows (``per_layer_token_embd.weight``, ``[layers * p, rows]``),
    AltUp's streams (``altup.num_inputs``), LAuReL's rank (``blk.0.laurel_l.weight``, ``[h, r]``) and the layers
    that own a cache as llama.cpp counts them (``LLAMA_CPP_GEMMA3N_KV_LAYERS``)."""
    width = need("embedding_length_per_layer_input")
    table, laurel = tensors.get("per_layer_token_embd.weight"), tensors.get("blk.0.laurel_l.weight")
    if table is None or len(table.shape) != 2 or int(table.shape[0]) != layers * width:
        raise ModelSpecError(f"{path}: a gemma3n GGUF needs per_layer_token_embd.weight of {layers} x {width} "
                             "values per row")
    return dict(per_layer_input=width, per_layer_vocab=int(table.shape[1]), altup_inputs=need("altup.num_inputs"),
                laurel_rank=int(min(laurel.shape)) if laurel is not None else 0, norms_per_layer=5,
                kv_shared_layers=max(0, layers - LLAMA_CPP_GEMMA3N_KV_LAYERS))


def _need_int(reader: GgufHeader, key: str, path: Path, *, default=None) -> int:
    value = _value(reader, key)
    if isinstance(value, list):  # per-layer arrays (e.g. head_count_kv of mixed layers): the largest bounds memory
        value = max((v for v in value if isinstance(v, (int, float)) and v == v), default=None)
    if value is None:
        if default is not None:
            return default
        raise ModelSpecError(f"{path}: GGUF metadata has no {key!r}")
    field = _KEY_FIELD.get(key.split(".", 1)[-1], "layers")
    try:
        return arch_whole(value, field, zero=True)
    except ValueError as exc:
        raise ModelSpecError(f"{path}: GGUF metadata {key!r} {exc}") from None


def file_type_name(value) -> str:
    """The llama.cpp file type (``general.file_type``) as its usual name, e.g. 15 -> ``Q4_K_M``."""
    from gguf import LlamaFileType

    try:
        name = LlamaFileType(int(value)).name
    except (ValueError, TypeError, OverflowError):
        return ""
    return name.removeprefix("MOSTLY_").removeprefix("ALL_")


def read_gguf(path: Path, *, source: str = "gguf", name: str | None = None, location: str | None = None) -> ResolvedModel:
    """A model from a GGUF file's metadata.

    Args:
        path: the ``.gguf`` file (Ollama's blobs have no suffix; the magic bytes are checked instead); any part of
            a split model (``-00001-of-00003.gguf``) reads every part.
        source, name, location: provenance to record (defaults: "gguf", ``general.name`` or the file name, the path).
    Returns:
        The resolved model with the exact parameter count and weight bytes of its tensors.
    Raises:
        ModelSpecError: not GGUF, truncated, or a key the planner needs is missing (named).
    """
    path = Path(path)
    parts = split_parts(path)
    headers = [_reader(p) for p in parts]
    return model_from_headers(headers, parts[0].stem, str(parts[0]), source=source, name=name,
                              location=location or str(parts[0]))


def model_from_headers(headers: list[GgufHeader], stem: str, where: str, *, source: str = "gguf",
                       name: str | None = None, location: str = "") -> ResolvedModel:
    """A model from the headers of a GGUF file's parts (the first holds the metadata), read from disk or by
    range requests (``advisor.models.remote``); ``stem`` names it when the metadata has no name, ``where`` is
    shown in errors."""
    reader = headers[0]
    tensor_list = [t for h in headers for t in h.tensors]
    path = where
    arch_name = _value(reader, "general.architecture")
    if not isinstance(arch_name, str) or not arch_name:
        raise ModelSpecError(f"{path}: GGUF metadata has no 'general.architecture'")
    a = arch_name
    if a == PROJECTOR_ARCH:
        raise ModelSpecError(f"{path}: a multimodal projector, not a model: name the model's GGUF beside it")
    def need(key, default=None):
        return _need_int(reader, f"{a}.{key}", path, default=default)

    tensors = {t.name: t for t in tensor_list}
    if not tensors:
        raise ModelSpecError(f"{path}: the GGUF file holds no tensors")
    params = sum(t.n_elements for t in tensor_list)
    nbytes = sum(t.n_bytes for t in tensor_list)
    heads = need("attention.head_count")
    hidden = need("embedding_length")
    vocab = reader.array_lengths.get("tokenizer.ggml.tokens") or need("vocab_size", default=0)
    if not vocab and "token_embd.weight" in tensors:
        vocab = int(max(tensors["token_embd.weight"].shape))
    try:
        vocab = arch_whole(vocab, "vocab", zero=True)
    except ValueError as exc:
        raise ModelSpecError(f"{path}: GGUF vocabulary (tokenizer.ggml.tokens) {exc}") from None
    if not vocab:
        raise ModelSpecError(f"{path}: GGUF metadata has no vocabulary (tokenizer.ggml.tokens or {a}.vocab_size)")
    experts = need("expert_count", default=0)
    kv_lora = need("attention.kv_lora_rank", default=0)
    kw: dict = dict(
        id=name or stem, name=name or str(_value(reader, "general.name") or stem),
        layers=need("block_count"), hidden=hidden, heads=heads, kv_heads=need("attention.head_count_kv", default=heads),
        ffn=need("feed_forward_length", default=0 if experts else None), vocab=vocab,
        tied="output.weight" not in tensors, head_dim=need("attention.key_length", default=0),
        max_context=need("context_length", default=0), source=location or where,
    )
    kw.update(_layer_kinds(reader, a, kw["layers"], need))
    if a == "gemma3n":
        kw.update(_gemma3n(tensors, kw["layers"], need, path))
    if experts:
        kw.update(experts=experts, experts_per_token=need("expert_used_count"),
                  shared_experts=need("expert_shared_count", default=0),
                  moe_ffn=need("expert_feed_forward_length", default=0),
                  dense_layers=need("leading_dense_block_count", default=0))
    if kv_lora:
        # llama.cpp's MLA conversion stores the per-head widths as key_length_mla/value_length_mla (key_length is
        # then the latent width); older files have them as key_length/value_length.
        rope = need("rope.dimension_count")
        key_len = need("attention.key_length_mla", default=0) or need("attention.key_length")
        value_len = need("attention.value_length_mla", default=0) or need("attention.value_length")
        kw.update(kv_lora_rank=kv_lora, q_lora_rank=need("attention.q_lora_rank", default=0), rope_dim=rope,
                  nope_dim=max(0, key_len - rope), v_head_dim=value_len, head_dim=0)
    if kw["heads"] % max(1, kw["kv_heads"]):
        raise ModelSpecError(f"{path}: attention.head_count {heads} is not a multiple of head_count_kv {kw['kv_heads']}")
    try:
        arch = ModelArch(**kw)
    except ValueError as exc:
        raise ModelSpecError(f"{path}: {exc}") from None
    ftype = _value(reader, "general.file_type")
    quant = file_type_name(ftype) if ftype is not None else ""
    if not quant:  # no file type: name it after the type holding most of the bytes
        from gguf.constants import GGMLQuantizationType

        by_type: Counter = Counter()
        for t in tensor_list:
            by_type[GGMLQuantizationType(t.ggml_type).name] += t.n_bytes
        quant = by_type.most_common(1)[0][0]
    return ResolvedModel(arch=arch, name=kw["name"], source=source, location=location or where,
                         params_exact=params, weight_bytes=nbytes, quant=quant)


# ---------------------------------------------------------------- multimodal projectors
# llama.cpp's vision encoders ship as a second GGUF beside the model (``mmproj-F16.gguf``, ``mmproj-model-f16.gguf``;
# tools/mtmd), of general.architecture "clip"; LM Studio and llama-server's ``-hf`` pick it up by that prefix.
PROJECTOR_PREFIX = "mmproj"
PROJECTOR_ARCH = "clip"


def is_projector(name: str) -> bool:
    """Whether a file name is a multimodal projector's (``mmproj*.gguf``)."""
    base = name.rsplit("/", 1)[-1].lower()
    return base.startswith(PROJECTOR_PREFIX) and base.endswith(".gguf")


def pick_projector(files: list[tuple[str, int]]) -> tuple[str, int] | None:
    """The projector an engine loads of several beside a model ((name, bytes) each): a 16-bit one (``F16``/``BF16``,
    what llama-server's ``-hf`` and LM Studio download by default), else the smallest; None when there is none."""
    found = sorted((f for f in files if is_projector(f[0])), key=lambda f: (f[1], f[0]))
    sixteen = [f for f in found if re.search(r"(?<![a-z0-9])b?f16(?![0-9])", f[0].rsplit("/", 1)[-1].lower())]
    return (sixteen or found or [None])[0]


def projector_bytes(path: Path) -> int:
    """The bytes of a projector's tensors, from its header.

    Raises:
        ModelSpecError: not a readable GGUF, or not a projector (its ``general.architecture`` is not "clip").
    """
    header = _reader(path)
    arch = _value(header, "general.architecture")
    if arch != PROJECTOR_ARCH:
        raise ModelSpecError(f"{path}: not a multimodal projector (general.architecture {str(arch)[:40]!r}, "
                             f"expected {PROJECTOR_ARCH!r})")
    return sum(t.n_bytes for t in header.tensors)


def with_projector(model: ResolvedModel, weights: Path) -> ResolvedModel:
    """``model`` with the projector that sits beside its GGUF file ``weights`` (``pick_projector``), whose tensor
    bytes then count in its memory; unchanged when there is none.

    Raises:
        ModelSpecError: the projector beside it is unreadable (one line naming the file).
    """
    try:
        near = [(p.name, p.stat().st_size) for p in weights.parent.iterdir() if is_projector(p.name) and p.is_file()]
    except OSError:
        return model
    chosen = pick_projector(near)
    if chosen is None:
        return model
    path = weights.parent / chosen[0]
    size = projector_bytes(path)
    note = f"multimodal projector {chosen[0]} ({size / 2**20:,.0f} MiB of tensors) loads beside the model: counted in its memory"
    return replace(model, projector_bytes=size, projector=str(path), notes=model.notes + (note,))
