"""Hugging Face models: ``config.json`` mapped onto the planner's architecture, model directories, the local cache.

The keys read are those of the ``transformers`` configuration classes (``LlamaConfig``, ``Qwen2Config``,
``Qwen3MoeConfig``, ``Gemma3TextConfig``, ``MixtralConfig``, ``Phi3Config``, ``DeepseekV3Config``,
``GptOssConfig``, ``Olmo2Config``; huggingface/transformers, ``src/transformers/models/*/configuration_*.py``).
A missing key is an error naming it, except the few defaults the published configs rely on
(``GEMMA3_TEXT_DEFAULTS``). Exact weight bytes come from ``model.safetensors.index.json``
(``metadata.total_size``) or the safetensors headers (8-byte little-endian length, then a JSON table of
tensors with dtype, shape and byte offsets; huggingface/safetensors README, "Format").
"""

from __future__ import annotations

import os
import re
import struct
from pathlib import Path

from advisor.catalog.readfile import BadJson, UnreadableFile, open_regular, parse_json, read_regular_file
from advisor.estimate.model import ModelArch
from advisor.job.bounds import arch_whole, params_maximum, shown, weight_bytes_maximum, whole
from advisor.models.errors import ModelSpecError
from advisor.models.record import ResolvedModel

MAX_JSON_BYTES = 16 * 2**20  # a config or index larger than this is not one
DENSE = ("llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3_text", "phi3", "olmo2")
DENSE += ("nemotron_h", "gemma3n_text")
MOE = ("mixtral", "qwen3_moe", "qwen3_next", "deepseek_v2", "deepseek_v3", "kimi_k2", "glm4_moe", "gpt_oss",
       "llama4_text")
SUPPORTED = DENSE + MOE + ("gemma3", "gemma3n", "llama4", "mistral3")
# config.json ``layer_types`` entries (transformers ``configuration_utils.ALLOWED_LAYER_TYPES``) -> the kinds
# of model.LAYER_KINDS; chunked attention (Llama 4) holds at most one chunk, as a window of that size does.
LAYER_TYPE_KIND = {"full_attention": "F", "sliding_attention": "S", "chunked_attention": "S",
                   "linear_attention": "L", "mamba": "L"}
# Nemotron-H's hybrid_override_pattern (transformers NemotronHConfig): M a Mamba-2 layer, * attention, - an MLP.
NEMOTRON_H_KIND = {"M": "L", "*": "F", "-": "N"}
TIED_BY_DEFAULT = ("gemma", "gemma2", "gemma3_text", "gemma3n_text")  # their config classes default tie_word_embeddings to True
# Gemma3TextConfig's defaults, which google/gemma-3-4b-it's config.json relies on for these keys.
GEMMA3_TEXT_DEFAULTS = {"num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
                        "vocab_size": 262208, "max_position_embeddings": 131072}
REPO_ID = re.compile(r"^(?:[A-Za-z0-9][A-Za-z0-9._-]{0,95}/)?[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
_DTYPE_BYTES = {"F64": 8, "I64": 8, "U64": 8, "F32": 4, "I32": 4, "U32": 4, "F16": 2, "BF16": 2, "I16": 2,
                "U16": 2, "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1, "I8": 1, "U8": 1, "BOOL": 1, "F4": 0.5}


# ---------------------------------------------------------------- config.json -> ModelArch
def _get(cfg: dict, key: str, where: str, model_type: str, default=None, *, required: bool = True):
    value = cfg.get(key)
    if value is None:
        if default is not None or not required:
            return default
        raise ModelSpecError(f"{where}: config.json has no {key!r}, which model_type {model_type!r} needs")
    return value


def _int(cfg: dict, key: str, where: str, model_type: str, default=None, *, positive: bool = True,
         arch: str = "layers") -> int:
    """An integer of the config within the range of the ``ModelArch`` field ``arch`` (the job flag's range)."""
    value = _get(cfg, key, where, model_type, default)
    try:
        return arch_whole(value, arch, zero=not positive)
    except ValueError as exc:
        raise ModelSpecError(f"{where}: config.json key {key!r} {exc}") from None


_WRAPPED = {"gemma3": "gemma3_text", "llama4": "llama4_text", "mistral3": "mistral", "gemma3n": "gemma3n_text"}
# Gemma 3n (google/gemma-3n-E2B-it and -E4B-it config.json text_config; transformers ``Gemma3nTextConfig``): the
# keys beyond Gemma 3's, onto ModelArch's fields (estimate.model's docstring says what each part is).
GEMMA3N_KEYS = {"num_kv_shared_layers": ("kv_shared_layers", "layers"),
                "hidden_size_per_layer_input": ("per_layer_input", "hidden"),
                "vocab_size_per_layer_input": ("per_layer_vocab", "vocab"),
                "laurel_rank": ("laurel_rank", "hidden"), "altup_num_inputs": ("altup_inputs", "heads")}


def text_config(cfg: dict) -> dict:
    """The language-model part of a config: ``text_config`` of a multimodal wrapper (Gemma 3 4B+, Llama 4,
    Mistral Small 3.1/3.2), else itself."""
    mt = cfg.get("model_type")
    if isinstance(mt, str) and mt in _WRAPPED and isinstance(cfg.get("text_config"), dict):
        inner = dict(cfg["text_config"])
        inner.setdefault("model_type", _WRAPPED[cfg["model_type"]])
        return inner
    return cfg


def _cycle(every, layers: int) -> bool:
    """A layer cycle length from a config: a whole number from 1 to the layer count."""
    return isinstance(every, int) and not isinstance(every, bool) and 0 < every <= layers


def layer_pattern(cfg: dict, mt: str, layers: int, where: str) -> tuple[str, int]:
    """The layer kinds (a ``ModelArch.layer_pattern``) and the sliding window a config declares.

    ``layer_types`` when present (transformers 4.53+ writes it for Gemma 2/3, gpt-oss, Qwen3-Next and others);
    else the config class's own rule: Gemma 2 even layers sliding (``Gemma2DecoderLayer``), Gemma 3
    ``sliding_window_pattern`` (default 6: five sliding, one global), Qwen3-Next ``full_attention_interval``
    (default 4), Llama 4 chunked attention except every ``no_rope_layer_interval``-th (4) layer, Mistral a window
    on every layer when ``sliding_window`` is set; Qwen2/3 only with ``use_sliding_window``.
    """
    window = cfg.get("sliding_window")
    types = cfg.get("layer_types")
    if mt == "llama4_text":
        window = cfg.get("attention_chunk_size")
        if not isinstance(types, list):
            nope = cfg.get("no_rope_layers")
            every = cfg.get("no_rope_layer_interval") or 4
            if isinstance(nope, list) and len(nope) == layers:
                types = ["chunked_attention" if x else "full_attention" for x in nope]
            elif _cycle(every, layers):
                types = ["full_attention" if (i + 1) % every == 0 else "chunked_attention" for i in range(layers)]
    if isinstance(types, list):
        if len(types) != layers or any(not isinstance(t, str) or t not in LAYER_TYPE_KIND for t in types):
            raise ModelSpecError(f"{where}: config.json 'layer_types' must list one of "
                                 f"{', '.join(LAYER_TYPE_KIND)} for each of the {layers} layers")
        pattern = "".join(LAYER_TYPE_KIND[t] for t in types)
    elif mt in ("gemma2", "gpt_oss"):
        pattern = "SF"  # Gemma2DecoderLayer: even layers sliding; GptOssConfig's default layer_types alternate
    elif mt in ("gemma3_text", "gemma3n_text"):
        every = cfg.get("sliding_window_pattern") or (6 if mt == "gemma3_text" else 5)
        pattern = "S" * (every - 1) + "F" if _cycle(every, layers) else "F"
    elif mt == "nemotron_h":
        hybrid = cfg.get("hybrid_override_pattern")
        if not isinstance(hybrid, str) or len(hybrid) != layers or set(hybrid) - set(NEMOTRON_H_KIND):
            raise ModelSpecError(f"{where}: config.json 'hybrid_override_pattern' must give one of "
                                 f"{', '.join(NEMOTRON_H_KIND)} for each of the {layers} layers")
        pattern = "".join(NEMOTRON_H_KIND[c] for c in hybrid)
        return pattern, 0
    elif mt == "qwen3_next":
        every = cfg.get("full_attention_interval") or 4
        if not _cycle(every, layers):
            raise ModelSpecError(f"{where}: config.json 'full_attention_interval' must be a whole number from 1 to "
                                 f"the {layers} layers")
        pattern = "L" * (every - 1) + "F"
    elif mt == "mistral" and window:
        pattern = "S"
    elif mt in ("qwen2", "qwen3", "qwen3_moe") and cfg.get("use_sliding_window") and window:
        pattern = "S"  # max_window_layers aside: the released configs set use_sliding_window false
    else:
        pattern = "F"
    if "S" not in pattern:
        return pattern if pattern.strip("F") else "", 0
    try:
        return pattern, arch_whole(window, "sliding_window")
    except ValueError as exc:
        raise ModelSpecError(f"{where}: config.json 'sliding_window' {exc}") from None


def arch_from_config(cfg: dict, model_id: str, name: str, where: str = "config.json", source: str = "") -> ModelArch:
    """Map a Hugging Face ``config.json`` onto :class:`ModelArch`.

    Args:
        cfg: the parsed config.
        model_id, name: the id and display name to give the architecture.
        where: where the config came from, for error messages.
        source: provenance recorded in ``ModelArch.source``.
    Returns:
        The architecture (dense, GQA, MLA and MoE fields as the config says).
    Raises:
        ModelSpecError: not a JSON object, an unsupported ``model_type`` or a missing or bad key (named).
    """
    if not isinstance(cfg, dict):
        raise ModelSpecError(f"{where}: expected a JSON object")
    cfg = text_config(cfg)
    mt = cfg.get("model_type")
    if not isinstance(mt, str) or not mt:
        raise ModelSpecError(f"{where}: config.json has no 'model_type'; supported: {', '.join(SUPPORTED)}")
    if mt not in DENSE + MOE:
        raise ModelSpecError(f"{where}: model_type {mt!r} is not supported (supported: {', '.join(SUPPORTED)}); "
                             "give a preset, or --params with the architecture flags")
    if mt == "gemma3_text":
        cfg = {**GEMMA3_TEXT_DEFAULTS, **{k: v for k, v in cfg.items() if v is not None}}
    if mt == "kimi_k2":
        mt = "deepseek_v3"  # Kimi K2 ships DeepseekV3ForCausalLM with its own model_type

    def i(key, arch, default=None, positive=True):
        return _int(cfg, key, where, mt, default, positive=positive, arch=arch)

    heads = i("num_attention_heads", "heads")
    hidden = i("hidden_size", "hidden")
    kw: dict = dict(
        id=model_id, name=name, layers=i("num_hidden_layers", "layers"), hidden=hidden, heads=heads,
        kv_heads=i("num_key_value_heads", "kv_heads", heads), vocab=i("vocab_size", "vocab"),
        tied=bool(_get(cfg, "tie_word_embeddings", where, mt, mt in TIED_BY_DEFAULT)),
        head_dim=i("head_dim", "head_dim", hidden // heads),
        max_context=i("max_position_embeddings", "max_context", 0, positive=False),
        source=source or where,
    )
    kw["layer_pattern"], kw["sliding_window"] = layer_pattern(cfg, mt, kw["layers"], where)
    if mt == "gemma3n_text":
        kw.update({field: i(key, rng, 0, positive=False) for key, (field, rng) in GEMMA3N_KEYS.items()})
        kw["norms_per_layer"] = 5  # Gemma 3's four and the norm after the per-layer input
        width = cfg.get("intermediate_size")
        if isinstance(width, list):  # one width per layer in the released configs, all the same
            if not width or any(w != width[0] for w in width):
                raise ModelSpecError(f"{where}: config.json 'intermediate_size' differs between layers, which "
                                     "the advisor does not model")
            cfg = {**cfg, "intermediate_size": width[0]}
    if mt in ("gemma2", "gemma3_text"):
        kw["norms_per_layer"] = 4  # pre- and post-norm around attention and around the MLP
    if mt == "olmo2":
        kw["norms_per_layer"] = 4  # post-attention and post-MLP norms plus q and k norms over the full width
    if mt == "qwen2" or (mt in ("llama", "glm4_moe") and cfg.get("attention_bias") is True):
        kw["bias"] = "qkv"
    if mt == "gpt_oss":
        kw["bias"] = "all"  # q, k, v, o, router and expert biases
    if mt == "mixtral":
        kw.update(ffn=i("intermediate_size", "ffn"), experts=i("num_local_experts", "experts"),
                  experts_per_token=i("num_experts_per_tok", "experts_per_token"))
    elif mt == "gpt_oss":
        kw.update(ffn=i("intermediate_size", "ffn"), experts=i("num_local_experts", "experts"),
                  experts_per_token=i("num_experts_per_tok", "experts_per_token", cfg.get("experts_per_token")))
    elif mt == "qwen3_moe":
        mlp_only = _get(cfg, "mlp_only_layers", where, mt, [])
        step = i("decoder_sparse_step", "layers", 1)
        if mlp_only or step != 1:
            raise ModelSpecError(f"{where}: qwen3_moe with dense layers (mlp_only_layers, decoder_sparse_step) "
                                 "is not supported")
        kw.update(ffn=i("intermediate_size", "ffn"), experts=i("num_experts", "experts"),
                  experts_per_token=i("num_experts_per_tok", "experts_per_token"),
                  moe_ffn=i("moe_intermediate_size", "moe_ffn"))
    elif mt == "qwen3_next":
        kw.update(ffn=i("intermediate_size", "ffn"), experts=i("num_experts", "experts"),
                  experts_per_token=i("num_experts_per_tok", "experts_per_token"),
                  moe_ffn=i("moe_intermediate_size", "moe_ffn"), attn_gate=True, linear_kind="gated-deltanet",
                  linear_k_heads=i("linear_num_key_heads", "linear_k_heads"),
                  linear_v_heads=i("linear_num_value_heads", "linear_v_heads"),
                  linear_k_dim=i("linear_key_head_dim", "linear_k_dim"),
                  linear_v_dim=i("linear_value_head_dim", "linear_v_dim"),
                  linear_conv=i("linear_conv_kernel_dim", "linear_conv"))
        shared = i("shared_expert_intermediate_size", "moe_ffn", 0, positive=False)
        if shared not in (0, kw["moe_ffn"]):
            raise ModelSpecError(f"{where}: a shared expert wider than the routed ones is not supported")
        kw["shared_experts"] = 1 if shared else 0
        kw["shared_gate"] = bool(shared)  # Qwen3-Next's shared expert is gated (shared_expert_gate)
    elif mt == "nemotron_h":
        kw.update(ffn=i("intermediate_size", "ffn"), ffn_kind="mlp", norms_per_layer=1, mixer_or_ffn=True,
                  linear_kind="mamba2", linear_k_heads=i("n_groups", "linear_k_heads"),
                  linear_k_dim=i("ssm_state_size", "linear_k_dim"), linear_v_heads=i("mamba_num_heads", "linear_v_heads"),
                  linear_v_dim=i("mamba_head_dim", "linear_v_dim"), linear_conv=i("conv_kernel", "linear_conv"))
    elif mt == "llama4_text":
        kw.update(ffn=i("intermediate_size_mlp", "ffn"), moe_ffn=i("intermediate_size", "moe_ffn"),
                  experts=i("num_local_experts", "experts"),
                  experts_per_token=i("num_experts_per_tok", "experts_per_token"), shared_experts=1,
                  moe_step=i("interleave_moe_layer_step", "moe_step", 1))
    elif mt == "glm4_moe":
        kw.update(ffn=i("intermediate_size", "ffn"), experts=i("n_routed_experts", "experts"),
                  experts_per_token=i("num_experts_per_tok", "experts_per_token"),
                  shared_experts=i("n_shared_experts", "shared_experts", 0, positive=False),
                  moe_ffn=i("moe_intermediate_size", "moe_ffn"),
                  dense_layers=i("first_k_dense_replace", "dense_layers", 0, positive=False))
    elif mt in ("deepseek_v2", "deepseek_v3"):
        kw.update(ffn=i("intermediate_size", "ffn"), experts=i("n_routed_experts", "experts"),
                  experts_per_token=i("num_experts_per_tok", "experts_per_token"),
                  shared_experts=i("n_shared_experts", "shared_experts", 0, positive=False),
                  moe_ffn=i("moe_intermediate_size", "moe_ffn"),
                  dense_layers=i("first_k_dense_replace", "dense_layers", 0, positive=False),
                  q_lora_rank=i("q_lora_rank", "q_lora_rank", 0, positive=False),
                  kv_lora_rank=i("kv_lora_rank", "kv_lora_rank"), rope_dim=i("qk_rope_head_dim", "rope_dim"),
                  nope_dim=i("qk_nope_head_dim", "nope_dim"), v_head_dim=i("v_head_dim", "v_head_dim"), head_dim=0)
    else:
        kw["ffn"] = i("intermediate_size", "ffn")
    try:
        return ModelArch(**kw)
    except ValueError as exc:
        raise ModelSpecError(f"{where}: {exc}") from None


def config_quant(cfg: dict) -> str:
    """The stored format a config declares: ``quantization_config.quant_method`` or the torch dtype."""
    q = cfg.get("quantization_config")
    if isinstance(q, dict) and isinstance(q.get("quant_method"), str):
        return q["quant_method"][:40]
    dtype = cfg.get("torch_dtype") or cfg.get("dtype") or text_config(cfg).get("torch_dtype")
    if not isinstance(dtype, str):
        return ""
    return dtype.replace("bfloat16", "bf16").replace("float16", "fp16").replace("float32", "fp32")[:40]


def config_notes(cfg: dict) -> tuple[str, ...]:
    """What the architecture leaves out (a vision tower, a multi-token-prediction module)."""
    notes = []
    if isinstance(cfg, dict) and cfg.get("vision_config") is not None:
        notes.append("the vision encoder is not counted (language model only)")
    if isinstance(cfg, dict) and cfg.get("num_nextn_predict_layers"):
        notes.append("the multi-token-prediction module is not counted")
    return tuple(notes)


# ---------------------------------------------------------------- files
def read_json(path: Path, what: str = "JSON file") -> dict:
    """A JSON object from a file, or ModelSpecError with one line (missing, not a regular file, too large,
    too deeply nested, bad JSON). Bad UTF-8 is read with replacement characters (``readfile.parse_json``)."""
    try:
        doc = parse_json(read_regular_file(path, MAX_JSON_BYTES))
    except UnreadableFile as exc:
        raise ModelSpecError(f"{path}: cannot read the {what}: {exc.strerror}") from None
    except FileNotFoundError:
        raise ModelSpecError(f"{path}: no such file") from None
    except OSError as exc:
        raise ModelSpecError(f"{path}: cannot read the {what}: {exc.strerror or exc}") from None
    except BadJson as exc:
        raise ModelSpecError(f"{path}: {exc}") from None
    if not isinstance(doc, dict):
        raise ModelSpecError(f"{path}: expected a JSON object in the {what}")
    return doc


def index_weight_bytes(folder: Path) -> int:
    """``metadata.total_size`` of ``model.safetensors.index.json`` in a folder (0 when absent)."""
    path = folder / "model.safetensors.index.json"
    if not path.is_file():
        return 0
    doc = read_json(path, "safetensors index")
    total = (doc.get("metadata") or {}).get("total_size") if isinstance(doc.get("metadata"), dict) else None
    try:
        return whole(total, 1, weight_bytes_maximum())
    except ValueError as exc:
        raise ModelSpecError(f"{path}: metadata.total_size (bytes) {exc}") from None


def safetensors_header(path: Path) -> tuple[int, int]:
    """Parameters and tensor bytes of one ``.safetensors`` file, from its header only (weights are not read).

    Every tensor's shape and byte offsets are checked: whole numbers, offsets inside the file, at most the
    ``--params`` maximum of parameters in all.
    Raises:
        ModelSpecError: not a regular file, a truncated or malformed header (naming the tensor and field).
    """
    try:
        with open_regular(path) as f:
            size = os.fstat(f.fileno()).st_size
            head = f.read(8)
            if len(head) < 8:
                raise ModelSpecError(f"{path}: truncated safetensors file")
            (n,) = struct.unpack("<Q", head)
            if n > MAX_JSON_BYTES or n > size - 8:
                raise ModelSpecError(f"{path}: safetensors header of {n} bytes is not plausible "
                                     f"(the file has {size} bytes)")
            raw = f.read(n)
        table = parse_json(raw)
    except UnreadableFile as exc:
        raise ModelSpecError(f"{path}: cannot read: {exc.strerror}") from None
    except OSError as exc:
        raise ModelSpecError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except BadJson as exc:
        raise ModelSpecError(f"{path}: the safetensors header is {exc} (truncated file?)") from None
    if not isinstance(table, dict):
        raise ModelSpecError(f"{path}: the safetensors header is not a JSON object")
    data_bytes, most = size - 8 - n, params_maximum()
    params = nbytes = 0
    for key, t in table.items():
        if key == "__metadata__":
            continue
        at = f"{path}: tensor {shown(key)}"
        if not isinstance(t, dict) or not isinstance(t.get("shape"), list) or not isinstance(t.get("data_offsets"), list) \
                or len(t["data_offsets"]) != 2 or len(t["shape"]) > 8:
            raise ModelSpecError(f"{at} has no valid shape and data_offsets")
        try:
            count = 1
            for d in t["shape"]:
                count *= whole(d, 0, most)
                if count > most:
                    raise ValueError(f"must hold at most {most:.0e} values, got more")
            start, end = (whole(x, 0, data_bytes) for x in t["data_offsets"])
        except ValueError as exc:
            raise ModelSpecError(f"{at}: shape or data_offsets {exc}") from None
        if end < start:
            raise ModelSpecError(f"{at}: data_offsets end before they start")
        params += count
        nbytes += end - start
        if params > most:
            raise ModelSpecError(f"{path}: more than {most:.0e} parameters, not a model the advisor plans")
    return params, nbytes


def _plain_name(name: str) -> bool:
    """A file name inside the folder (an index naming ``../x`` or ``/dev/zero`` is not followed)."""
    return 0 < len(name) <= 255 and "/" not in name and "\\" not in name and name not in (".", "..")


def folder_weights(folder: Path) -> tuple[int, int]:
    """Exact (parameters, weight bytes) of a model folder: headers of every safetensors file when all are
    present, else (0, the index's total size)."""
    index_bytes = index_weight_bytes(folder)
    shards = sorted(folder.glob("*.safetensors"))
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        weight_map = read_json(index, "safetensors index").get("weight_map")
        wanted = {s for s in weight_map.values() if isinstance(s, str) and _plain_name(s)} \
            if isinstance(weight_map, dict) else set()
        if not wanted or any(not (folder / s).is_file() for s in wanted):
            return 0, index_bytes
        shards = [folder / s for s in sorted(wanted)]
    if not shards:
        return 0, index_bytes
    params = nbytes = 0
    for s in shards:
        p, b = safetensors_header(s)
        params, nbytes = params + p, nbytes + b
    return params, index_bytes or nbytes


def resolve_config_file(path: Path, source: str = "hf-config", name: str | None = None,
                        location: str | None = None) -> ResolvedModel:
    """A model from a ``config.json`` (weights measured from safetensors beside it when present).

    Raises:
        ModelSpecError: unreadable file, bad JSON, unsupported or incomplete config.
    """
    cfg = read_json(path, "config.json")
    folder = path.parent
    name = name or folder_name(folder) or path.stem
    arch = arch_from_config(cfg, name, name, where=str(path), source=location or str(path))
    params, nbytes = folder_weights(folder)
    return ResolvedModel(arch=arch, name=name, source=source, location=location or str(path), params_exact=params,
                         weight_bytes=nbytes, quant=config_quant(cfg), notes=config_notes(cfg))


def resolve_dir(folder: Path) -> ResolvedModel:
    """A model directory holding ``config.json`` (and usually safetensors files with their index)."""
    cfg = folder / "config.json"
    if not cfg.is_file():
        raise ModelSpecError(f"{folder}: no config.json in this directory (a Hugging Face model folder has one)")
    return resolve_config_file(cfg, source="hf-dir", name=folder_name(folder), location=str(folder))


def folder_name(folder: Path) -> str:
    """A model folder's name: ``ORG/NAME`` for a Hugging Face cache snapshot, else the folder's own name.

    The hub cache keeps ``models--ORG--NAME/snapshots/<commit>/``; the commit hash says nothing to a reader.
    """
    folder = folder.resolve()
    repo = folder.parent.parent.name
    if folder.parent.name == "snapshots" and repo.startswith("models--") and "--" in repo[8:]:
        return repo[8:].replace("--", "/", 1)
    return folder.name


# ---------------------------------------------------------------- the cache
def hub_cache_dir() -> Path:
    """The Hugging Face hub cache, from the environment at call time (``HF_HUB_CACHE``, ``HF_HOME``,
    ``XDG_CACHE_HOME``; huggingface_hub's ``constants.py`` reads the same variables at import)."""
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(var):
            return Path(os.environ[var]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg).expanduser() / "huggingface" / "hub"


def check_repo_id(repo_id: str) -> str:
    """A Hugging Face model id (``ORG/NAME`` or ``NAME``), or ModelSpecError."""
    if not REPO_ID.match(repo_id) or ".." in repo_id:
        raise ModelSpecError(f"hf:{repo_id}: not a Hugging Face model id (expected hf:ORG/NAME)")
    return repo_id


def resolve_cached(repo_id: str, *, download: bool = False, cache_dir: Path | None = None) -> ResolvedModel:
    """``hf:ORG/NAME`` from the local cache; with ``download`` its config (and index) fetched over HTTPS first.

    Offline (the default) only the cache is read: ``huggingface_hub.try_to_load_from_cache`` opens no connection.
    Raises:
        ModelSpecError: the model is not cached (the message says how to get it) or its config is bad.
    """
    check_repo_id(repo_id)
    cache = Path(cache_dir) if cache_dir else hub_cache_dir()
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(repo_id, "config.json", cache_dir=str(cache))
    source = "hf-cache"
    if not isinstance(found, str):
        if not download:
            raise ModelSpecError(f"hf:{repo_id} is not in the Hugging Face cache ({cache}); add --download to fetch "
                                 f"its config.json over HTTPS, or run: hf download {repo_id} config.json")
        found = _download(repo_id, cache)
        source = "hf-download"
    path = Path(found)
    return resolve_config_file(path, source=source, name=repo_id, location=f"hf:{repo_id} ({path.parent})")


def _download(repo_id: str, cache: Path) -> str:
    """Fetch ``config.json`` (and ``model.safetensors.index.json`` when the repository has one) into the cache."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError, HfHubHTTPError, LocalEntryNotFoundError, OfflineModeIsEnabled

    try:
        path = hf_hub_download(repo_id, "config.json", cache_dir=str(cache))
    except OfflineModeIsEnabled:
        raise ModelSpecError(f"hf:{repo_id}: HF_HUB_OFFLINE is set, so --download cannot fetch it") from None
    except (HfHubHTTPError, LocalEntryNotFoundError, OSError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelSpecError(f"hf:{repo_id}: download failed: {first} (gated models need `hf auth login`)") from None
    try:
        hf_hub_download(repo_id, "model.safetensors.index.json", cache_dir=str(cache))
    except (EntryNotFoundError, HfHubHTTPError, LocalEntryNotFoundError, OSError, ValueError):
        pass  # single-file models have no index; the weight bytes stay unknown
    return path


def cached_repos(cache_dir: Path | None = None) -> list[tuple[str, Path]]:
    """Model repositories in the cache that hold a ``config.json``: (repo id, its snapshot folder), newest revision."""
    cache = Path(cache_dir) if cache_dir else hub_cache_dir()
    if not cache.is_dir():
        return []
    from huggingface_hub import scan_cache_dir
    from huggingface_hub.errors import CacheNotFound, CorruptedCacheException

    try:
        info = scan_cache_dir(cache)
    except (CacheNotFound, CorruptedCacheException, OSError):
        return []
    out = []
    for repo in sorted(info.repos, key=lambda r: r.repo_id.lower()):
        if repo.repo_type != "model":
            continue
        revs = sorted(repo.revisions, key=lambda r: r.last_modified, reverse=True)
        for rev in revs:
            if (Path(rev.snapshot_path) / "config.json").is_file():
                out.append((repo.repo_id, Path(rev.snapshot_path)))
                break
    return out
