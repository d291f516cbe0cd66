"""A ``vllm bench serve --save-result`` file: one JSON object of the run's settings and results.

The keys (vllm-project/vllm, ``vllm/benchmarks/serve.py``, the ``result_json`` it saves, read at commit
def9ce85): ``date`` ("%Y%m%d-%H%M%S"), ``backend``, ``model_id``, ``num_prompts``, ``request_rate``,
``max_concurrency``, then the benchmark's ``duration``, ``completed``, ``total_input_tokens``,
``total_output_tokens``, ``request_throughput``, ``output_throughput`` and per latency metric
``mean_/median_/p99_`` ``ttft_ms``, ``tpot_ms``, ``itl_ms``. The file names no hardware: ``--accelerator``
(default: this machine's first GPU) and ``--devices`` say what served it. The model is the file's ``model_id``
(a preset whose model card is that repository or its base, else the Hugging Face cache; ``--model`` overrides).
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from advisor.estimate.run_record import Measured, RunRecord
from advisor.runs.common import (
    MAX_COUNT,
    MAX_RATE,
    ImportOptions,
    RunImportError,
    content_hash,
    file_time,
    machine_of,
    model_arch,
    validation_reason,
)

UNRESOLVED = "model not resolved (not a preset, not in the Hugging Face cache): --model gives it"
_Ms = Field(default=None, ge=0, le=1e12, allow_inf_nan=False)


class _Result(BaseModel):
    model_config = ConfigDict(extra="ignore")
    date: str | None = Field(default=None, max_length=64)
    backend: str | None = Field(default=None, max_length=100)
    model_id: str | None = Field(default=None, max_length=1000)
    max_concurrency: int | None = Field(default=None, ge=1, le=10**7)
    duration: float = Field(gt=0, le=1e9, allow_inf_nan=False)
    completed: int = Field(ge=1, le=MAX_COUNT)
    total_input_tokens: int = Field(ge=0, le=MAX_COUNT)
    total_output_tokens: int = Field(ge=1, le=MAX_COUNT)
    request_throughput: float | None = Field(default=None, ge=0, le=MAX_RATE, allow_inf_nan=False)
    output_throughput: float = Field(gt=0, le=MAX_RATE, allow_inf_nan=False)
    median_ttft_ms: float | None = _Ms
    p99_ttft_ms: float | None = _Ms
    median_tpot_ms: float | None = _Ms
    p99_tpot_ms: float | None = _Ms


def looks_like(doc) -> bool:
    return isinstance(doc, dict) and "output_throughput" in doc and ("median_ttft_ms" in doc or "mean_ttft_ms" in doc)


def _date(text: str | None, path: Path) -> str:
    for fmt in ("%Y%m%d-%H%M%S", "%Y-%m-%d %H:%M:%S"):
        try:
            return _dt.datetime.strptime(text or "", fmt).replace(tzinfo=_dt.UTC).isoformat(timespec="seconds")
        except ValueError:
            continue
    return file_time(path)


def _s(ms: float | None) -> float | None:
    return None if ms is None else ms / 1000.0


def read_vllm_bench(path: Path, data: bytes, doc, opts: ImportOptions) -> RunRecord:
    """The run record of a vLLM serving benchmark result.

    Raises:
        RunImportError: not a result, or no accelerator known.
    """
    try:
        r = _Result.model_validate(doc)
    except ValidationError as exc:
        raise RunImportError(path, f"not a vLLM benchmark result ({validation_reason(exc)})") from None
    acc = opts.accelerator or (_this_gpu(opts))
    if acc is None:
        raise RunImportError(path, "the file does not say which accelerator served it: give --accelerator ID")
    machine_id, note = machine_of(opts)
    arch = model_arch(opts.model or model_spec_of(r.model_id))
    return RunRecord(
        kind="vllm-bench", source_file=str(path.resolve()), content_sha256=content_hash(data),
        recorded_at=_date(r.date, path), workload="inference",
        measured=Measured(tokens_per_s=r.output_throughput, requests_per_s=r.request_throughput,
                          ttft_p50_s=_s(r.median_ttft_ms), ttft_p99_s=_s(r.p99_ttft_ms),
                          tpot_p50_s=_s(r.median_tpot_ms), tpot_p99_s=_s(r.p99_tpot_ms), duration_s=r.duration),
        model=r.model_id, params=arch.get("params"), layers=arch.get("layers"), hidden=arch.get("hidden"),
        heads=arch.get("heads"), vocab=arch.get("vocab"), software=opts.software or "vllm",
        notes=() if arch else (UNRESOLVED,), accelerator_id=acc, devices=opts.devices or 1,
        machine_id=machine_id, machine_note=note, batch=r.max_concurrency,
        prompt_tokens=max(1, round(r.total_input_tokens / r.completed)) if r.total_input_tokens else None,
        output_tokens=max(1, round(r.total_output_tokens / r.completed)))


# suffixes of a fine-tuned repository whose architecture is its base model's (the presets name the base)
_TUNED = ("-instruct", "-chat", "-it", "-hf")


def model_spec_of(model_id: str | None) -> str | None:
    """The model spec of a Hugging Face repository id as a benchmark names it (``meta-llama/Llama-3.1-8B-Instruct``):
    the preset whose model card is that repository or its base (the name less ``-Instruct``, ``-Chat``, ``-it``,
    ``-hf``), else ``hf:ORG/NAME`` (the local Hugging Face cache); None without an id."""
    if not model_id:
        return None
    from advisor.catalog import load_catalog

    repo = model_id.strip().strip("/").lower()
    names = {repo}
    for suffix in _TUNED:
        if repo.endswith(suffix):
            names.add(repo[: -len(suffix)])
    for pid, arch in load_catalog().models.items():
        card = (arch.source or "").lower()
        if any(f"huggingface.co/{n} " in card or f"huggingface.co/{n}/" in card or card.startswith(
                f"https://huggingface.co/{n} ") for n in names):
            return pid
    return f"hf:{model_id}" if "/" in model_id else model_id


def _this_gpu(opts: ImportOptions) -> str | None:
    if not opts.this_gpus:
        return None
    from advisor.hw.match import match_catalog_id

    return match_catalog_id(opts.this_gpus[0])
