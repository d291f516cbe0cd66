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

from advisor.estimate.run_record import RunRecord
from advisor.runs.common import MAX_COUNT, MAX_RATE, ImportOptions, RunImportError, file_time, validation_reason
from advisor.runs.serving_result import ServingResult, serving_record

_Ms = Field(default=None, ge=0, le=1e12, allow_inf_nan=False)


class BenchServingFields(BaseModel):
    """The figures vLLM's ``vllm bench serve`` and SGLang's ``bench_serving`` both save (SGLang's is a fork of
    vLLM's benchmark script): declared once, bounded at the border."""

    model_config = ConfigDict(extra="ignore")
    backend: str | None = Field(default=None, max_length=100)
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


class _Result(BenchServingFields):
    """vLLM's result: the shared figures, its date and the model it served."""

    date: str | None = Field(default=None, max_length=64)
    model_id: str | None = Field(default=None, max_length=1000)


def looks_like(doc) -> bool:
    return isinstance(doc, dict) and "output_throughput" in doc and ("median_ttft_ms" in doc or "mean_ttft_ms" in doc)


def s_of(ms: float | None) -> float | None:
    """Milliseconds as seconds (None stays None)."""
    return None if ms is None else ms / 1000.0


def _date(text: str | None, path: Path) -> str:
    for fmt in ("%Y%m%d-%H%M%S", "%Y-%m-%d %H:%M:%S"):
        try:
            return _dt.datetime.strptime(text or "", fmt).replace(tzinfo=_dt.UTC).isoformat(timespec="seconds")
        except ValueError:
            continue
    return file_time(path)


def read_vllm_bench(path: Path, data: bytes, doc, opts: ImportOptions) -> RunRecord:
    """The run record of a vLLM serving benchmark result.

    Raises:
        RunImportError: not a result, or no accelerator known.
    """
    try:
        r = _Result.model_validate(doc)
    except ValidationError as exc:
        raise RunImportError(path, f"not a vLLM benchmark result ({validation_reason(exc)})") from None
    return serving_record(path, data, ServingResult(
        kind="vllm-bench", software="vllm", recorded_at=_date(r.date, path), model_id=r.model_id,
        concurrency=r.max_concurrency, duration_s=r.duration, completed=r.completed,
        input_tokens=r.total_input_tokens, output_tokens=r.total_output_tokens,
        output_tokens_per_s=r.output_throughput, requests_per_s=r.request_throughput,
        ttft_p50_s=s_of(r.median_ttft_ms), ttft_p99_s=s_of(r.p99_ttft_ms), tpot_p50_s=s_of(r.median_tpot_ms),
        tpot_p99_s=s_of(r.p99_tpot_ms)), opts)
