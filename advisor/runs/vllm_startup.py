"""A vLLM start-up log: the engine's own reading of its KV cache, kept as a run of kind ``vllm-startup``.

The lines read (``advisor.models.engines.parse_vllm_startup``, every figure bounded there and again by the record
schema): V1's ``GPU KV cache size: 567,978 tokens`` and ``Available KV cache memory: 5.98 GiB``, V0's ``# GPU
blocks: 1952`` and ``kv_cache_size=3.81GiB``, both engines' ``Maximum concurrency for 20000 tokens per request:
1.56x``, and the settings the log states (``model='ORG/NAME'``, ``tensor_parallel_size``, ``kv_cache_dtype``, the
version). The log names no GPU: ``--accelerator`` (default: this machine's first GPU) says which served it;
``--model`` names the model when the log's is a local path.

What the advisor sets beside it (``engine_reading``): its KV tokens and concurrency for the log's cache memory
and ``max_model_len``, by vLLM's rule (``engines.vllm_kv_figures``), the same figures ``--engine-check`` shows.
"""

from __future__ import annotations

import re
from pathlib import Path

from advisor.estimate.run_record import Measured, RunRecord
from advisor.runs.common import ImportOptions, RunImportError, content_hash, file_time, machine_of, model_arch
from advisor.runs.serving_result import UNRESOLVED, model_spec_of, this_gpu

KIND = "vllm-startup"
_MARKS = re.compile(r"GPU KV cache size: |# GPU blocks: |Maximum concurrency for |Available KV cache memory: "
                    r"|kv_cache_size=")


def looks_like(text: str) -> bool:
    """A log with at least one of vLLM's KV-cache lines."""
    return _MARKS.search(text) is not None


def read_vllm_startup(path: Path, data: bytes, text: str, opts: ImportOptions) -> RunRecord:
    """The engine reading of a vLLM start-up log.

    Raises:
        RunImportError: no KV cache tokens or concurrency in it, or no accelerator known.
    """
    from advisor.models.engines import parse_vllm_startup

    s = parse_vllm_startup(text)
    if not s.kv_tokens and not s.max_concurrency:
        raise RunImportError(path, "a vLLM log without its KV cache size or maximum concurrency (the lines vLLM "
                                   "prints once the cache is allocated)")
    acc = opts.accelerator or this_gpu(opts)
    if acc is None:
        raise RunImportError(path, "a vLLM log does not say which GPU served it: give --accelerator ID")
    local = bool(s.model) and s.model.startswith(("/", "~", "."))  # a folder on the serving machine, not a Hub id
    spec = opts.model or (s.model if local else model_spec_of(s.model))
    arch = model_arch(spec)
    machine_id, note = machine_of(opts)
    return RunRecord(
        kind=KIND, source_file=str(path.resolve()), content_sha256=content_hash(data, KIND),
        recorded_at=file_time(path), workload="inference",
        measured=Measured(kv_cache_tokens=s.kv_tokens, max_concurrency=s.max_concurrency,
                          kv_cache_bytes=s.kv_cache_bytes, kv_value_bytes=s.kv_value_bytes),
        model=spec, params=arch.get("params"), layers=arch.get("layers"), hidden=arch.get("hidden"),
        heads=arch.get("heads"), vocab=arch.get("vocab"), software="vllm", software_version=s.version,
        accelerator_id=acc, devices=opts.devices or s.tensor_parallel or 1, machine_id=machine_id,
        machine_note=note, seq_len=s.max_model_len,
        notes=() if arch else (UNRESOLVED,))


def engine_reading(rec: RunRecord) -> dict | None:
    """The advisor's KV tokens and concurrency beside the log's: ``{"kv_cache_tokens": (vllm, advisor),
    "max_concurrency": (vllm, advisor), "max_model_len": N}``; None when the log gives no cache memory and
    ``max_model_len``, or its model cannot be resolved here."""
    from advisor.catalog import load_catalog
    from advisor.models import ModelSpecError, resolve_model
    from advisor.models.engines import vllm_kv_figures

    m = rec.measured
    if rec.kind != KIND or not m.kv_cache_bytes or not rec.seq_len or not rec.model:
        return None
    try:
        arch = resolve_model(rec.model, load_catalog()).arch
    except (ModelSpecError, ValueError, OSError):
        return None
    # vLLM logs the cache memory of one GPU; tensor parallelism splits each token's cache over the GPUs
    tokens, conc = vllm_kv_figures(arch, m.kv_cache_bytes * rec.devices, rec.seq_len, m.kv_value_bytes or 2.0)
    return {"kv_cache_tokens": (m.kv_cache_tokens, tokens), "max_concurrency": (m.max_concurrency, conc),
            "max_model_len": rec.seq_len}
