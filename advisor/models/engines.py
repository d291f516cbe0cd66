"""The engines' own memory figures beside the advisor's (``--engine-check``): what vLLM logs at start-up, what
llama.cpp prints when it loads a model (or ``llama-fit-params`` prints without loading it), what Ollama reports
of a loaded model (``/api/ps``), each read from its text and compared with the plan, naming the part that differs.

Formats read (as the engines print them, 2025-2026):
- vLLM: ``Available KV cache memory: 5.98 GiB``, ``GPU KV cache size: 567,978 tokens``, ``Maximum concurrency for
  131,072 tokens per request: 4.33x`` (V1, vllm/v1/core/kv_cache_utils.py and gpu_worker.py); the V0 lines
  ``kv_cache_size=3.81GiB`` and ``# GPU blocks: 1952``; ``Setting attention block size to N tokens`` (hybrid
  models).
- llama.cpp: ``load_tensors: CUDA0 model buffer size = 4403.49 MiB`` (before 2025 ``llm_load_tensors: CUDA0 buffer
  size = ...``), ``llama_kv_cache: CUDA0 KV buffer size =
  1024.00 MiB``, ``llama_context: CUDA0 compute buffer size = 560.00 MiB`` (the device name first, the size in
  MiB), and ``llama_kv_cache: size = 3072.00 MiB (131072 cells, 12 layers, 1/1 seqs)``.
- llama.cpp's fit printer, ``llama-fit-params -m FILE -c N --fit-print on`` (tools/fit-params, common/fit.cpp
  ``common_fit_print``; builds since December 2025): one line per device on stdout, ``CUDA0 4403 512 300``, its
  model, context (KV cache and state) and compute buffers in whole MiB, then ``Host ...``; the same three figures
  in the memory breakdown a llama.cpp log prints (``| memory breakdown [MiB] | total free self model context
  compute unaccounted |``).
- Ollama: ``GET /api/ps`` -> ``{"models": [{"name", "size", "size_vram", ...}]}`` (docs/api.md), asked where
  Ollama's client asks (``OLLAMA_HOST``, else 127.0.0.1:11434); no answer means it is not running.
Every figure is checked (finite, not negative, within the bounds of a model); a line that does not parse is skipped.
"""

from __future__ import annotations

import math
import re
import shutil
from dataclasses import dataclass, field

from advisor.catalog.readfile import BadJson, parse_json
from advisor.untrusted import plain_text

MIB = 2**20
GIB = 2**30
MAX_BYTES = 2**50  # a petabyte: no device holds more
_NUM = r"([0-9][0-9,]*(?:\.[0-9]+)?)"


def _num(text: str) -> float | None:
    try:
        value = float(text.replace(",", ""))
    except ValueError:
        return None
    return value if math.isfinite(value) and 0 <= value < MAX_BYTES else None


@dataclass(frozen=True)
class VllmStartup:
    """What a vLLM start-up log says of its KV cache (None where the log does not say)."""

    kv_cache_bytes: float | None = None
    kv_tokens: int | None = None
    max_model_len: int | None = None
    max_concurrency: float | None = None
    block_tokens: int | None = None
    model: str | None = None
    tensor_parallel: int | None = None
    kv_cache_dtype: str | None = None
    version: str | None = None

    @property
    def kv_value_bytes(self) -> float:
        """Bytes of one cached value: 1 for an fp8 cache (``kv_cache_dtype=fp8*``), else 2 (``auto``: the model's
        16-bit dtype)."""
        return 1.0 if (self.kv_cache_dtype or "").startswith("fp8") else 2.0


_TEXT_ID = r"([A-Za-z0-9_.:/~+@-]{1,200})"


def _vllm_settings(line: str) -> dict:
    """The model, tensor parallelism, KV dtype and version a start-up line states: the engine's config line
    (``model='ORG/NAME', ... tensor_parallel_size=2, ... kv_cache_dtype=fp8``), the ``non-default args: {...}``
    line (``'model': '...'``) and ``vLLM API server version X`` / ``LLM engine (vX)``."""
    out = {}
    if m := re.search(r"(?:\bmodel=|'model': )'" + _TEXT_ID + "'", line):
        out["model"] = m.group(1)
    if m := re.search(r"(?:tensor_parallel_size=|'tensor_parallel_size': )([0-9]{1,6})\b", line):
        out["tensor_parallel"] = int(m.group(1))
    if m := re.search(r"(?:kv_cache_dtype=|'kv_cache_dtype': ')([a-z0-9_]{1,20})", line):
        out["kv_cache_dtype"] = m.group(1)
    if m := re.search(r"(?:vLLM API server version |LLM engine \(v)([0-9][A-Za-z0-9.+_-]{0,60})", line):
        out["version"] = m.group(1).rstrip(")")
    return out


def parse_vllm_startup(text: str) -> VllmStartup:
    """The KV-cache figures of a vLLM start-up log (module docstring; the last value of each wins) and the
    settings it states (``_vllm_settings``)."""
    kv_bytes = tokens = max_len = conc = block = None
    blocks = None
    settings: dict = {}
    for line in text.splitlines()[-200_000:]:
        line = line[:20_000]
        if "model" in line or "version" in line or "kv_cache_dtype" in line:
            settings.update(_vllm_settings(line))
        if m := re.search(r"Available KV cache memory: " + _NUM + r" ?GiB", line):
            kv_bytes = (_num(m.group(1)) or 0) * GIB
        elif m := re.search(r"kv_cache_size=" + _NUM + r" ?GiB", line):
            kv_bytes = (_num(m.group(1)) or 0) * GIB
        if m := re.search(r"GPU KV cache size: " + _NUM + " tokens", line):
            tokens = int(_num(m.group(1)) or 0)
        if m := re.search(r"# GPU blocks: " + _NUM, line):
            blocks = int(_num(m.group(1)) or 0)
        if m := re.search(r"Maximum concurrency for " + _NUM + r" tokens per request: " + _NUM + "x", line):
            max_len, conc = int(_num(m.group(1)) or 0), _num(m.group(2))
        if m := re.search(r"Setting attention block size to " + _NUM + " tokens", line):
            block = int(_num(m.group(1)) or 0)
    if tokens is None and blocks is not None:  # V0: blocks of 16 tokens unless the log set another size
        tokens = blocks * (block or 16)
    tp = settings.get("tensor_parallel")
    return VllmStartup(kv_bytes or None, tokens or None, max_len or None, conc, block or None, settings.get("model"),
                       tp if tp and tp <= 100_000 else None, settings.get("kv_cache_dtype"), settings.get("version"))


@dataclass(frozen=True)
class LlamaCppLoad:
    """Per-device buffers (MiB as printed, kept in bytes) and the KV cache line of a llama.cpp load."""

    model_bytes: dict[str, float] = field(default_factory=dict)
    kv_bytes: dict[str, float] = field(default_factory=dict)
    compute_bytes: dict[str, float] = field(default_factory=dict)
    kv_caches: tuple[tuple[float, int, int], ...] = ()  # (bytes, cells, layers) per cache (iSWA: two)


def parse_llama_cpp(text: str) -> LlamaCppLoad:
    """Per-device model, KV and compute buffers of a llama.cpp log (module docstring); buffers of one kind on one
    device are summed (a split model, the SWA and the base caches)."""
    out = LlamaCppLoad()
    caches = []
    for line in text.splitlines()[-200_000:]:
        m = re.search(r"\b([A-Za-z_][A-Za-z0-9_]*?)(?:_Mapped)? +(model |KV |compute )?buffer size = *" + _NUM + " MiB",
                      line)
        if m and (m.group(2) or "load_tensors" in line):  # older builds: "llm_load_tensors: CUDA0 buffer size"
            value = _num(m.group(3))
            if value is not None:
                kind = (m.group(2) or "model ").strip()
                table = {"model": out.model_bytes, "KV": out.kv_bytes, "compute": out.compute_bytes}[kind]
                table[m.group(1)] = table.get(m.group(1), 0.0) + value * MIB
            continue
        m = re.search(r"size = *" + _NUM + r" MiB \( *([0-9]+) cells, *([0-9]+) layers", line)
        if m and (v := _num(m.group(1))) is not None:
            caches.append((v * MIB, int(m.group(2)), int(m.group(3))))
    return LlamaCppLoad(out.model_bytes, out.kv_bytes, out.compute_bytes, tuple(caches))


@dataclass(frozen=True)
class OllamaLoaded:
    """A model Ollama has loaded: its bytes in all, those on the GPUs, and its context where the reply says it
    (``context_length``, Ollama 0.9.7 and later)."""

    name: str
    size_bytes: int
    vram_bytes: int
    context: int | None = None


def parse_ollama_ps(raw: bytes | str) -> list[OllamaLoaded]:
    """The loaded models of an Ollama ``/api/ps`` reply; entries without whole, plausible sizes are skipped.

    Raises:
        ValueError: not a JSON object with a ``models`` list.
    """
    try:
        doc = parse_json(raw)
    except BadJson as exc:
        raise ValueError(f"Ollama /api/ps: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("models"), list):
        raise ValueError("Ollama /api/ps: no 'models' list")
    def whole(x) -> bool:
        return isinstance(x, int) and not isinstance(x, bool) and 0 <= x < MAX_BYTES

    out = []
    for m in doc["models"][:1000]:
        if not isinstance(m, dict):
            continue
        # size_vram is left out when it is 0, the model all in host memory (ollama/ollama issue 4840)
        name, size, vram, ctx = m.get("name"), m.get("size"), m.get("size_vram", 0), m.get("context_length")
        if isinstance(name, str) and whole(size) and whole(vram) and vram <= size:
            out.append(OllamaLoaded(name[:200], size, vram, ctx if whole(ctx) and 0 < ctx <= 1 << 30 else None))
    return out


def _pct(ours: float, theirs: float) -> str:
    return f"{(ours / theirs - 1) * 100:+.1f} %" if theirs else "n/a"


def vllm_kv_figures(arch, kv_cache_bytes: float, max_model_len: int,
                    bytes_per_value: float = 2.0) -> tuple[float, float]:
    """``(tokens, concurrency)``: the advisor's KV-cache tokens in vLLM's cache memory ``kv_cache_bytes`` and the
    requests of ``max_model_len`` tokens it holds at once (vLLM's rule, ``estimate.memory.max_concurrency``): what
    ``--engine-check`` and ``advisor runs`` set beside a start-up log's "GPU KV cache size" and "Maximum
    concurrency"."""
    from advisor.estimate import memory

    one = memory.kv_cache_bytes(arch, max_model_len, 1, bytes_per_value, "vllm")
    tokens = kv_cache_bytes / (one / max_model_len) if one > 0 else float("inf")
    return tokens, memory.max_concurrency(arch, kv_cache_bytes, max_model_len, bytes_per_value)


def compare_vllm(startup: VllmStartup, arch, bytes_per_value: float = 2.0, tp: int = 1) -> list[str]:
    """The advisor's tokens and concurrency for the log's KV memory and ``max_model_len`` beside vLLM's."""
    from advisor.estimate import memory

    if not startup.kv_cache_bytes or not startup.max_model_len:
        return ["vLLM: the log gives no KV cache memory and max_model_len to compare"]
    lines = []  # the cache memory logged is one GPU's; each token's cache is split over the tp GPUs
    tokens, ours = vllm_kv_figures(arch, startup.kv_cache_bytes * tp, startup.max_model_len, bytes_per_value)
    if startup.max_concurrency:
        lines.append(f"vLLM concurrency at {startup.max_model_len:,} tokens: {startup.max_concurrency:.2f}x; advisor "
                     f"{ours:.2f}x ({_pct(ours, startup.max_concurrency)})")
    if startup.kv_tokens:
        lines.append(f"vLLM KV cache: {startup.kv_tokens:,} tokens; advisor {tokens:,.0f} ({_pct(tokens, startup.kv_tokens)})")
    if startup.block_tokens and arch.count_of("linear"):
        ours_block = memory.vllm_hybrid_block_tokens(arch, bytes_per_value, tp)
        lines.append(f"vLLM attention block: {startup.block_tokens} tokens; advisor {ours_block}")
    return lines


# -- llama.cpp: what its fit printer and its load print per device ---------------------------------------------

PARTS = ("weights", "kv_cache", "compute")
PART_WORDS = {"weights": "weights", "kv_cache": "KV cache", "compute": "compute buffers"}
HOST = "Host"  # llama.cpp's name for host memory in its fit printer and memory breakdown
MAX_DEVICES = 64  # rows kept of one table (llama.cpp's GGML_CUDA_MAX_DEVICES is 16)


@dataclass(frozen=True)
class DeviceMemory:
    """One device's bytes as llama.cpp counts them: the weights (its "model"), the KV cache and recurrent state
    (its "context") and the compute buffers; ``device`` is the backend's name (``CUDA0``, ``ROCm1``, ``Vulkan0``,
    ``Metal``) or ``Host``."""

    device: str
    weights: float = 0.0
    kv_cache: float = 0.0
    compute: float = 0.0

    def get(self, part: str) -> float:
        return float(getattr(self, part))


_DEVICE = r"([A-Za-z][A-Za-z0-9_.:-]{0,63})"
_MIB_INT = r"([0-9]{1,12})"
# llama-fit-params --fit-print on (common/fit.cpp, common_fit_print): "<device> <model> <context> <compute>" in
# whole MiB on stdout, one line per device, then "Host ..."
_FIT_ROW = re.compile(r"^\s*" + _DEVICE + r" " + _MIB_INT + r" " + _MIB_INT + r" " + _MIB_INT + r"\s*$")
# the memory breakdown llama.cpp prints at exit and while fitting ("| memory breakdown [MiB] | total free self model
# context compute unaccounted |"): "|   - CUDA0 (RTX 4090)   | 24077 =  945 + (19187 = 17904 + 384 + 898) + 3945 |"
# and "|   - Host   |   58271 = 58259 + 0 + 12   |": self = model + context + compute
_BREAKDOWN_ROW = re.compile(r"\|\s*-\s*" + _DEVICE + r"[^|]{0,200}\|[^|]{0,200}?" + _MIB_INT + r" *= *" + _MIB_INT
                            + r" *\+ *" + _MIB_INT + r" *\+ *" + _MIB_INT)


def parse_fit_print(text: str) -> tuple[DeviceMemory, ...]:
    """Per-device weights, KV cache and compute buffers of llama.cpp's fit printer (``llama-fit-params
    --fit-print on``), else of the last memory breakdown in a llama.cpp log; () when the text has neither. A
    device printed twice keeps its last row; a line that does not parse is skipped."""
    fit: dict[str, DeviceMemory] = {}
    breakdown: dict[str, DeviceMemory] = {}
    for line in text.splitlines()[-200_000:]:
        line = line[:1000]
        if m := _FIT_ROW.match(line):
            table, name, figures = fit, m.group(1), m.groups()[1:]
        elif "breakdown [MiB]" not in line and (m := _BREAKDOWN_ROW.search(line)):
            table, name, figures = breakdown, m.group(1), m.groups()[2:]
        else:
            continue
        values = [int(g) * MIB for g in figures]
        if max(values) < MAX_BYTES and (name in table or len(table) < MAX_DEVICES):
            table[name] = DeviceMemory(name, *values)
    return tuple((fit or breakdown).values())


def _is_host(buffer: str) -> bool:
    return buffer == "CPU" or buffer.startswith("CPU") or buffer.endswith("_Host")


def load_devices(load: LlamaCppLoad) -> tuple[DeviceMemory, ...]:
    """The buffers of a llama.cpp load log (``parse_llama_cpp``) per device, host buffers (``CPU``,
    ``CUDA_Host``) together as ``Host``: the rows the fit printer gives, for ``compare_devices``."""
    rows: dict[str, dict[str, float]] = {}
    for part, table in (("weights", load.model_bytes), ("kv_cache", load.kv_bytes), ("compute", load.compute_bytes)):
        for buffer, value in table.items():
            name = HOST if _is_host(buffer) else buffer
            rows.setdefault(name, {}).setdefault(part, 0.0)
            rows[name][part] += value
    ordered = sorted(rows, key=lambda n: (n == HOST, n))
    return tuple(DeviceMemory(n, **rows[n]) for n in ordered)


@dataclass(frozen=True)
class AdvisorMemory:
    """The plan's memory per device of the option compared (``devices`` equal devices): weights, KV cache and
    state, and the overhead term (CUDA context, allocator, the runtime's buffers); ``context`` tokens per sequence
    for ``slots`` sequences (llama.cpp ``-c`` is their product, ``-np`` the slots)."""

    devices: int
    weights: float
    kv_cache: float
    overhead: float
    context: int
    slots: int = 1
    option: str = ""
    runtime: str = "llama.cpp"
    kv_type: str = "f16"  # the cache's element type as llama.cpp names it (-ctk / -ctv: f16, q8_0, q4_0)

    def part(self, name: str) -> float:
        """Per device, by the engine's part names (the engine's compute buffers sit in the advisor's overhead)."""
        return {"weights": self.weights, "kv_cache": self.kv_cache, "compute": self.overhead}[name]

    @property
    def total(self) -> float:
        """All devices together."""
        return (self.weights + self.kv_cache + self.overhead) * self.devices


def mib_text(b: float) -> str:
    """MiB as llama.cpp prints them: whole, with a tenth below 100 (a small model's buffers)."""
    return f"{b / MIB:,.1f}" if 0 < b < 100 * MIB else f"{b / MIB:,.0f}"


def compare_devices(rows: tuple[DeviceMemory, ...], ours: AdvisorMemory) -> dict:
    """llama.cpp's per-device figures beside the plan's, and the part that differs most: the one computation
    behind ``--engine-check`` (plan, serve and models), for the fit printer's rows and a load log's alike.

    The GPUs llama.cpp uses are set beside the plan's devices one by one; its host row (token embeddings and
    whatever it keeps off the GPUs) beside nothing, since the plan keeps all on the devices. A CPU build, or a
    run with nothing offloaded, has only the host row: it stands for the plan's devices together. Sums over
    devices decide the part that differs most; the engine's compute buffers are set beside the advisor's
    overhead term, which holds them with the CUDA context and the allocator's slack.

    Returns:
        ``{"devices": [...], "totals": {...}, "differs_most": {...}, "lines": [...]}`` (bytes).
    """
    zero = {p: 0.0 for p in PARTS}
    per_device = {p: ours.part(p) for p in PARTS}
    gpus = [r for r in rows if r.device != HOST and any(r.get(p) for p in PARTS)]
    host = next((r for r in rows if r.device == HOST), DeviceMemory(HOST))
    notes = []
    if gpus:
        pairs = [(r, per_device) for r in gpus]
        if any(host.get(p) for p in PARTS):
            pairs.append((host, zero))
        if host.weights > 0.05 * sum(r.weights for r in gpus):
            notes.append("llama.cpp's host weights are the span of the file it maps for what stays off the GPUs "
                         "(token embeddings, layers or experts kept in host memory)")
        if len(gpus) != ours.devices:
            notes.append(f"llama.cpp used {len(gpus)} device(s), the plan {ours.devices}")
    else:
        pairs = [(host, {p: v * ours.devices for p, v in per_device.items()})]
        notes.append("llama.cpp placed everything in host memory (a CPU build, or no layer offloaded): its host "
                     "figures stand beside the plan's devices together")
    theirs_total = {p: sum(r.get(p) for r, _ in pairs) for p in PARTS}
    ours_total = {p: per_device[p] * ours.devices for p in PARTS}
    worst = max(PARTS, key=lambda p: (abs(ours_total[p] - theirs_total[p]), p == "weights"))
    where = max(pairs, key=lambda rp: abs(rp[1][worst] - rp[0].get(worst)))[0].device
    devices = [{"device": r.device,
                "engine": {f"{p}_bytes": r.get(p) for p in PARTS},
                "advisor": {"weights_bytes": o["weights"], "kv_cache_bytes": o["kv_cache"],
                            "overhead_bytes": o["compute"]}} for r, o in pairs]
    lines = [f"llama.cpp {r.device}: weights {mib_text(r.weights)} MiB, KV cache {mib_text(r.kv_cache)} MiB, compute "
             f"{mib_text(r.compute)} MiB; advisor {mib_text(o['weights'])}, {mib_text(o['kv_cache'])} MiB, overhead "
             f"{mib_text(o['compute'])} MiB" for r, o in pairs]
    word = PART_WORDS[worst] + (" (advisor: its overhead term)" if worst == "compute" else "")
    lines.append(f"the part that differs most: {word}, advisor {mib_text(ours_total[worst])} MiB against llama.cpp "
                 f"{mib_text(theirs_total[worst])} MiB in all ({_pct(ours_total[worst], theirs_total[worst])}), "
                 f"most on {where}")
    lines += notes
    return {"devices": devices,
            "totals": {"engine": {f"{p}_bytes": theirs_total[p] for p in PARTS},
                       "advisor": {"weights_bytes": ours_total["weights"], "kv_cache_bytes": ours_total["kv_cache"],
                                   "overhead_bytes": ours_total["compute"]}},
            "differs_most": {"part": worst, "device": where, "engine_bytes": theirs_total[worst],
                             "advisor_bytes": ours_total[worst],
                             "difference_bytes": ours_total[worst] - theirs_total[worst]},
            "notes": notes, "lines": lines}


def compare_llama_cpp(load: LlamaCppLoad, ours: AdvisorMemory) -> dict:
    """A llama.cpp load log (``parse_llama_cpp``) beside the plan (``compare_devices``)."""
    return compare_devices(load_devices(load), ours)


# -- Ollama -----------------------------------------------------------------------------------------------------

def compare_ollama(loaded: list[OllamaLoaded], names: tuple[str, ...], planned_bytes: float) -> dict:
    """Ollama's size of the loaded model named by one of ``names`` (``qwen2.5:7b``; ``qwen2.5`` is its
    ``:latest``) beside the plan's total over its devices."""
    want = {n for n in names if n} | {f"{n}:latest" for n in names if n and ":" not in n}
    hit = next((m for m in loaded if m.name in want), None)
    if hit is None:
        listed = ", ".join(plain_text(m.name, 80) for m in loaded[:10]) or "nothing"
        return {"state": "not-loaded", "loaded": [m.name for m in loaded],
                "lines": [f"Ollama: {plain_text(names[0] if names else '', 80)} is not loaded (ollama ps lists "
                          f"{listed})"]}
    at = f" at {hit.context:,} tokens" if hit.context else ""
    return {"state": "compared", "model": hit.name, "size_bytes": hit.size_bytes, "size_vram_bytes": hit.vram_bytes,
            "context": hit.context, "advisor_bytes": planned_bytes,
            "lines": [f"Ollama {plain_text(hit.name, 80)}{at}: {hit.size_bytes / GIB:.2f} GiB, "
                      f"{hit.vram_bytes / GIB:.2f} GiB of it on the GPU; advisor {planned_bytes / GIB:.2f} GiB "
                      f"({_pct(planned_bytes, hit.size_bytes)})"]}


# An Ollama library name: NAME or NAME:TAG (ollama.com/library; lower case, digits, '.', '-', '_').
OLLAMA_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,79}(?::[a-z0-9][a-z0-9._-]{0,79})?$")


def preset_ollama_names(arch) -> tuple[str, ...]:
    """The Ollama library names of a preset (``ollama`` in resources/models.toml, the one place they are declared):
    the well-formed ones, in order; none for a model that is not a preset or lists none."""
    names = (getattr(arch, "extra", None) or {}).get("ollama")
    if not isinstance(names, list):
        return ()
    return tuple(n for n in names if isinstance(n, str) and OLLAMA_NAME.match(n))


def ollama_presets(models) -> dict[str, str]:
    """Ollama library name -> preset id over a catalog's ``models``; a name listed by two presets is an error
    (ValueError naming both), since /api/ps would match either."""
    out: dict[str, str] = {}
    for preset, arch in models.items():
        for name in preset_ollama_names(arch):
            if out.setdefault(name, preset) != preset:
                raise ValueError(f"Ollama name {name!r} is listed by presets {out[name]!r} and {preset!r}")
    return out


OLLAMA_TIMEOUT_S = 2.0
OLLAMA_PORT = 11434


def ollama_url(environ=None) -> str:
    """Ollama's ``/api/ps`` where its own client looks: ``OLLAMA_HOST`` (``host[:port]`` or a URL; ``0.0.0.0``, a
    server's listen-all address, is this machine), else ``127.0.0.1:11434``.

    Raises:
        ValueError: an ``OLLAMA_HOST`` that is not a host and port.
    """
    import os
    from urllib.parse import urlsplit

    raw = ((os.environ if environ is None else environ).get("OLLAMA_HOST") or "").strip()
    text = raw if raw.startswith(("http://", "https://")) else "http://" + (raw or f"127.0.0.1:{OLLAMA_PORT}")
    try:
        parts = urlsplit(text)
        port = parts.port or OLLAMA_PORT
    except ValueError:
        parts, port = None, 0
    if parts is None or not parts.hostname or parts.username or parts.query:
        raise ValueError(f"OLLAMA_HOST {plain_text(raw, 80)!r} is not host[:port]")
    host = "127.0.0.1" if parts.hostname in ("0.0.0.0", "::", "") else parts.hostname
    host = f"[{host}]" if ":" in host else host
    return f"{parts.scheme}://{host}:{port}/api/ps"


def _fetch(url: str) -> bytes:
    from urllib.request import urlopen

    with urlopen(url, timeout=OLLAMA_TIMEOUT_S) as r:  # noqa: S310 - Ollama's own address (ollama_url)
        return r.read(1 << 20)


# -- the check -------------------------------------------------------------------------------------------------

FIT_TOOL = "llama-fit-params"
FIT_TIMEOUT_S = 180.0
GGUF_SOURCES = ("gguf", "ollama", "lmstudio")


def fit_argv(exe: str, gguf: str, ours: AdvisorMemory) -> list[str]:
    """The fit printer's command for the plan: its model file, context (``-c`` tokens over ``-np`` slots), every
    layer on the GPUs (``-ngl 999``), and the plan's devices (one: ``-sm none``, the main GPU; several: an even
    ``-ts`` over the first of them)."""
    argv = [exe, "-m", gguf, "-c", str(int(ours.context) * int(ours.slots)), "-np", str(int(ours.slots)),
            "-ngl", "999", "-ctk", ours.kv_type, "-ctv", ours.kv_type, "--fit-print", "on"]
    return argv + (["-ts", ",".join(["1"] * ours.devices)] if ours.devices > 1 else ["-sm", "none"])


def run_fit_printer(argv: list[str], run=None) -> tuple[str, str]:
    """``(stdout, stderr)`` of the fit printer, ``("", reason)`` when it cannot run or runs past its deadline."""
    import subprocess

    from advisor.subproc import bounded_run

    try:
        done = (run or bounded_run)(argv, timeout=FIT_TIMEOUT_S, max_bytes=1 << 20)
    except subprocess.TimeoutExpired:
        return "", f"no answer within {FIT_TIMEOUT_S:.0f} s"
    except OSError as exc:
        return "", str(exc)
    out, err = done.stdout or "", done.stderr or ""
    out = out.decode("utf-8", "replace") if isinstance(out, bytes) else out
    err = err.decode("utf-8", "replace") if isinstance(err, bytes) else err
    return out, err


@dataclass(frozen=True)
class EngineCheck:
    """The engines' figures beside the plan's: one entry per engine (``engine``, ``state`` and its figures) and the
    lines that say it."""

    model: str
    memory: AdvisorMemory
    engines: tuple[dict, ...]

    @property
    def lines(self) -> list[str]:
        return [x for e in self.engines for x in e["lines"]]

    def to_json(self) -> dict:
        m = self.memory
        return {"model": self.model, "option": m.option or None, "runtime": m.runtime, "devices": m.devices,
                "context": m.context, "slots": m.slots,
                "advisor_per_device": {"weights_bytes": m.weights, "kv_cache_bytes": m.kv_cache,
                                       "overhead_bytes": m.overhead}, "engines": [dict(e) for e in self.engines], "lines": self.lines}


def _gguf_of(rm) -> str | None:
    if rm is None or rm.source not in GGUF_SOURCES or not rm.location:
        return None
    path = rm.location.split(" (")[0]
    return path if path.lower().endswith(".gguf") or rm.source == "ollama" else None


def _llama_cpp(rm, ours: AdvisorMemory, which, run) -> dict:
    exe = which(FIT_TOOL)
    if not exe:
        other = which("llama-server") or which("llama-cli")
        if other:
            return {"engine": "llama.cpp", "state": "no-fit-printer", "lines": [
                f"llama.cpp: {plain_text(other, 200)} is installed but not {FIT_TOOL} (builds since December 2025 "
                "print their fit), nothing run"]}
        return {"engine": "llama.cpp", "state": "not-installed",
                "lines": ["llama.cpp: not installed here, nothing to compare"]}
    if ours.runtime != "llama.cpp":
        return {"engine": "llama.cpp", "state": "other-runtime", "lines": [
            f"llama.cpp: {FIT_TOOL} is installed, but the plan runs {plain_text(ours.runtime, 40)}, whose memory is "
            "not llama.cpp's (plan with --runtime llama.cpp to compare)"]}
    gguf = _gguf_of(rm)
    if gguf is None:
        name = plain_text(rm.name if rm is not None else "the model", 80)
        return {"engine": "llama.cpp", "state": "no-file", "lines": [
            f"llama.cpp: {FIT_TOOL} is installed, but {name} is not a GGUF file here (give --model FILE.gguf or "
            "ollama:NAME to have llama.cpp size it)"]}
    argv = fit_argv(exe, gguf, ours)
    out, err = run_fit_printer(argv, run)
    rows = parse_fit_print(out)
    if not rows:
        last = next((ln for ln in reversed(err.splitlines()) if ln.strip()), "no output")
        return {"engine": "llama.cpp", "state": "failed", "command": argv, "lines": [
            f"llama.cpp: {FIT_TOOL} printed no per-device figures ({plain_text(last, 160)})"]}
    cmp = compare_devices(rows, ours)
    slots = f" ({ours.slots} slots of {ours.context:,})" if ours.slots > 1 else ""
    head = f"llama.cpp's fit printer ({FIT_TOOL}, {ours.context * ours.slots:,} tokens{slots}, {ours.devices} device(s)):"
    return {"engine": "llama.cpp", "state": "compared", "command": argv, **{k: v for k, v in cmp.items()
                                                                            if k != "lines"},
            "lines": [head] + ["  " + x for x in cmp["lines"]]}


def _ollama(names: tuple[str, ...], ours: AdvisorMemory, fetch) -> dict:
    try:
        url = ollama_url()
    except ValueError as exc:
        return {"engine": "ollama", "state": "bad-address", "lines": [f"Ollama: {exc}"]}
    from http.client import HTTPException

    try:
        raw = (fetch or _fetch)(url)
    except (OSError, HTTPException):  # refused, unreachable, timed out, not HTTP: no Ollama there
        return {"engine": "ollama", "state": "not-running", "url": url,
                "lines": [f"Ollama: not running at {url.removesuffix('/api/ps')}, nothing to compare"]}
    try:
        loaded = parse_ollama_ps(raw)
    except ValueError as exc:
        return {"engine": "ollama", "state": "bad-reply", "url": url, "lines": [plain_text(str(exc), 200)]}
    return {"engine": "ollama", "url": url, **compare_ollama(loaded, names, ours.total)}


def engine_check(rm, ours: AdvisorMemory, *, spec: str = "", which=None, run=None, fetch=None) -> EngineCheck:
    """The installed engines' figures for the model ``rm`` (a ``ResolvedModel``, None when the plan has none)
    beside the plan's memory ``ours``: llama.cpp's fit printer on the model's GGUF file for the plan's context
    and devices, Ollama's ``/api/ps`` for the model if Ollama has it loaded (a preset under any of its Ollama names,
    ``preset_ollama_names``), and where vLLM's figures come from.
    An engine that is absent is one line, never an error."""
    spec = (spec or "").strip()
    which = which or shutil.which  # looked up now: PATH as it is at the check
    preset = preset_ollama_names(getattr(rm, "arch", None)) if getattr(rm, "source", "") == "preset" else ()
    names = tuple(dict.fromkeys(n for n in (spec.removeprefix("ollama:"), rm.name if rm is not None else "", *preset)
                                if n))
    engines = (_llama_cpp(rm, ours, which, run), _ollama(names, ours, fetch),
               {"engine": "vllm", "state": "log", "lines": [
                   "vLLM: not run here; `advisor runs import` reads its start-up log (KV cache tokens and maximum "
                   "concurrency) and sets the plan's beside them"]})
    return EngineCheck(rm.name if rm is not None else spec, ours, engines)
