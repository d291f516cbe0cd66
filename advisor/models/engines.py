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
- Ollama: ``GET /api/ps`` -> ``{"models": [{"name", "size", "size_vram", ...}]}`` (docs/api.md).
Every figure is checked (finite, not negative, within the bounds of a model); a line that does not parse is skipped.
"""

from __future__ import annotations

import math
import re
import shutil
from dataclasses import dataclass, field

from advisor.catalog.readfile import BadJson, parse_json

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


def parse_vllm_startup(text: str) -> VllmStartup:
    """The KV-cache figures of a vLLM start-up log (module docstring; the last value of each wins)."""
    kv_bytes = tokens = max_len = conc = block = None
    blocks = None
    for line in text.splitlines()[-200_000:]:
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
    return VllmStartup(kv_bytes or None, tokens or None, max_len or None, conc, block or None)


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
    name: str
    size_bytes: int
    vram_bytes: int


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
    out = []
    for m in doc["models"][:1000]:
        if not isinstance(m, dict):
            continue
        name, size, vram = m.get("name"), m.get("size"), m.get("size_vram")
        if isinstance(name, str) and all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x < MAX_BYTES
                                         for x in (size, vram)):
            out.append(OllamaLoaded(name[:200], size, vram))
    return out


def _pct(ours: float, theirs: float) -> str:
    return f"{(ours / theirs - 1) * 100:+.1f} %" if theirs else "n/a"


def compare_vllm(startup: VllmStartup, arch, bytes_per_value: float = 2.0, tp: int = 1) -> list[str]:
    """The advisor's tokens and concurrency for the log's KV memory and ``max_model_len`` beside vLLM's."""
    from advisor.estimate import memory

    if not startup.kv_cache_bytes or not startup.max_model_len:
        return ["vLLM: the log gives no KV cache memory and max_model_len to compare"]
    lines = []
    ours = memory.max_concurrency(arch, startup.kv_cache_bytes, startup.max_model_len, bytes_per_value)
    if startup.max_concurrency:
        lines.append(f"vLLM concurrency at {startup.max_model_len:,} tokens: {startup.max_concurrency:.2f}x; advisor "
                     f"{ours:.2f}x ({_pct(ours, startup.max_concurrency)})")
    per_token = memory.kv_cache_bytes(arch, startup.max_model_len, 1, bytes_per_value, "vllm") / startup.max_model_len
    if startup.kv_tokens:
        tokens = startup.kv_cache_bytes / per_token
        lines.append(f"vLLM KV cache: {startup.kv_tokens:,} tokens; advisor {tokens:,.0f} ({_pct(tokens, startup.kv_tokens)})")
    if startup.block_tokens and arch.count_of("linear"):
        ours_block = memory.vllm_hybrid_block_tokens(arch, bytes_per_value, tp)
        lines.append(f"vLLM attention block: {startup.block_tokens} tokens; advisor {ours_block}")
    return lines


def compare_llama_cpp(load: LlamaCppLoad, weights_bytes: float, kv_bytes: float) -> list[str]:
    """llama.cpp's buffers summed over devices beside the advisor's weights and KV cache, naming the part that
    differs most (the compute buffers are the engine's alone: the advisor counts them in its overhead)."""
    theirs = {"weights": sum(load.model_bytes.values()), "KV cache": sum(load.kv_bytes.values())}
    ours = {"weights": weights_bytes, "KV cache": kv_bytes}
    lines = [f"llama.cpp {part}: {theirs[part] / GIB:.2f} GiB; advisor {ours[part] / GIB:.2f} GiB "
             f"({_pct(ours[part], theirs[part])})" for part in theirs if theirs[part]]
    if load.compute_bytes:
        lines.append(f"llama.cpp compute buffers: {sum(load.compute_bytes.values()) / GIB:.2f} GiB")
    gaps = {p: abs(ours[p] - theirs[p]) for p in theirs if theirs[p]}
    if gaps:
        worst = max(gaps, key=gaps.get)
        lines.append(f"the part that differs most: {worst} ({gaps[worst] / GIB:.2f} GiB)")
    return lines or ["llama.cpp: the log gives no buffer sizes"]


def compare_ollama(loaded: list[OllamaLoaded], name: str, planned_bytes: float) -> list[str]:
    """Ollama's size of the loaded model ``name`` beside the plan's total."""
    hit = next((m for m in loaded if m.name == name or m.name.split(":")[0] == name), None)
    if hit is None:
        return [f"Ollama: {name} is not loaded (ollama ps lists {', '.join(m.name for m in loaded) or 'nothing'})"]
    return [f"Ollama {hit.name}: {hit.size_bytes / GIB:.2f} GiB, {hit.vram_bytes / GIB:.2f} GiB of it on the GPU; "
            f"advisor {planned_bytes / GIB:.2f} GiB ({_pct(planned_bytes, hit.size_bytes)})"]


def installed_engines(which=shutil.which) -> dict[str, str | None]:
    """Which engines' tools are on PATH (``llama-fit-params`` or ``llama-server``, ``ollama``, ``vllm``)."""
    return {"llama.cpp": which("llama-fit-params") or which("llama-server"), "ollama": which("ollama"),
            "vllm": which("vllm")}


def absent_lines(found: dict[str, str | None]) -> list[str]:
    """One line per engine that is not installed (not an error)."""
    return [f"{name}: not installed here, nothing to compare" for name, path in found.items() if not path]


FIT_TIMEOUT_S = 180.0
OLLAMA_TIMEOUT_S = 2.0


def _ollama_url() -> str:
    import os

    host = (os.environ.get("OLLAMA_HOST") or "127.0.0.1:11434").strip()
    if not host.startswith(("http://", "https://")):
        host = "http://" + host
    return host.rstrip("/") + "/api/ps"


def run_llama_fit(exe: str, gguf: str, context: int, run=None) -> str:
    """What ``llama-fit-params -m FILE -c CONTEXT`` prints (stdout and stderr), or "" when it cannot run."""
    import subprocess

    argv = [exe, "-m", gguf, "-c", str(int(context))]
    try:
        done = (run or subprocess.run)(argv, capture_output=True, text=True, timeout=FIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return (done.stdout or "") + (done.stderr or "")


def engine_check(rm, context: int, weights_bytes: float, kv_bytes: float, total_bytes: float, *,
                 which=shutil.which, run=None, fetch=None) -> list[str]:
    """The installed engines' figures for the model ``rm`` (a ``ResolvedModel``) at ``context`` tokens beside the
    plan's ``weights_bytes``, ``kv_bytes`` and ``total_bytes``: llama.cpp's fit printer for a GGUF file, Ollama's
    ``/api/ps`` for a model it has loaded; an engine that is not installed is one line."""
    found = installed_engines(which)
    lines = []
    exe = found.get("llama.cpp")
    if exe and rm.source in ("gguf", "ollama", "lmstudio") and rm.location:
        text = run_llama_fit(exe, rm.location.split(" (")[0], context, run)
        load = parse_llama_cpp(text)
        lines += compare_llama_cpp(load, weights_bytes, kv_bytes) if load.model_bytes else [
            f"llama.cpp: {exe} printed no buffer sizes for {rm.name}"]
    elif exe:
        lines.append(f"llama.cpp: installed ({exe}); the model is not a GGUF file, nothing to compare")
    if found.get("ollama"):
        try:
            raw = (fetch or _fetch)(_ollama_url())
            lines += compare_ollama(parse_ollama_ps(raw), rm.name, total_bytes)
        except (OSError, ValueError) as exc:
            lines.append(f"Ollama: no answer from {_ollama_url()} ({str(exc)[:120]})")
    lines += absent_lines({k: v for k, v in found.items() if k != "vllm"})
    lines.append("vLLM: its start-up log is read by `advisor runs import FILE` (KV tokens and concurrency)")
    return lines


def _fetch(url: str) -> bytes:
    from urllib.request import urlopen

    with urlopen(url, timeout=OLLAMA_TIMEOUT_S) as r:  # a local server named by OLLAMA_HOST
        return r.read(1 << 20)
