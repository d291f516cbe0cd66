"""A GuideLLM report: ``guidellm benchmark ... --output-path benchmarks.json`` (a ``GenerativeBenchmarksReport``).

``{"benchmarks": [...]}``, one generative benchmark per rate of the run (vllm-project/guidellm,
``src/guidellm/benchmark/benchmark.py`` of v0.3, and the later ``schemas``): the strategy, ``args.strategy``
(later ``scheduler.strategy``; ``type_`` ``synchronous``, ``concurrent`` with ``streams``, ``throughput``,
``constant``/``poisson`` with ``rate``), ``start_time``/``end_time`` as Unix seconds (v0.3 also in
``run_stats``), the model (``worker.backend_model``, later ``benchmarker.backend.model``), and ``metrics``: per figure a status
distribution whose ``successful`` summary holds ``mean``, ``median``, ``count``, ``total_sum`` and
``percentiles`` (``p50`` ... ``p99``): ``prompt_token_count``, ``output_token_count``, ``requests_per_second``,
``request_concurrency``, ``output_tokens_per_second``, ``time_to_first_token_ms``, ``inter_token_latency_ms``.
The concurrency is the strategy's streams (one for synchronous), else the mean measured; the served rate is the
output tokens over the benchmark's span. The run's shape: its successful requests, and the rate a ``constant`` or
``poisson`` strategy offered (``rate``, requests/s). ``--accelerator`` says the hardware.
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from advisor.estimate.run_record import RunRecord
from advisor.runs.common import MAX_COUNT, MAX_RATE, ImportOptions, RunImportError, validation_reason
from advisor.runs.serving_result import ServingResult, serving_record
from advisor.runs.vllm_bench import s_of

MAX_BENCHMARKS = 10_000
_Num = Field(default=None, ge=0, le=MAX_RATE, allow_inf_nan=False)


class _Summary(BaseModel):
    model_config = ConfigDict(extra="ignore")
    mean: float | None = _Num
    median: float | None = _Num
    count: float | None = _Num
    total_sum: float | None = _Num
    percentiles: dict[str, float] = Field(default_factory=dict, max_length=64)


class _Status(BaseModel):
    model_config = ConfigDict(extra="ignore")
    successful: _Summary


class _Metrics(BaseModel):
    model_config = ConfigDict(extra="ignore")
    prompt_token_count: _Status
    output_token_count: _Status
    output_tokens_per_second: _Status | None = None
    requests_per_second: _Status | None = None
    request_concurrency: _Status | None = None
    time_to_first_token_ms: _Status | None = None
    inter_token_latency_ms: _Status | None = None


class _Strategy(BaseModel):
    model_config = ConfigDict(extra="ignore")
    type_: str = Field(max_length=50)
    streams: int | None = Field(default=None, ge=1, le=10**7)
    rate: float | None = Field(default=None, gt=0, le=1e9, allow_inf_nan=False)  # constant, poisson: requests/s


class _Args(BaseModel):  # v0.3: ``args.strategy``; later: ``scheduler.strategy``
    model_config = ConfigDict(extra="ignore")
    strategy: _Strategy


_Time = Field(default=None, ge=0, le=1e11, allow_inf_nan=False)


class _Times(BaseModel):
    model_config = ConfigDict(extra="ignore")
    start_time: float | None = _Time
    end_time: float | None = _Time


class _Worker(BaseModel):  # v0.3: ``worker.backend_model``
    model_config = ConfigDict(extra="ignore")
    backend_model: str | None = Field(default=None, max_length=1000)


class _Backend(BaseModel):  # later: ``benchmarker.backend.model``
    model_config = ConfigDict(extra="ignore")
    model: str | None = Field(default=None, max_length=1000)


class _Benchmarker(BaseModel):
    model_config = ConfigDict(extra="ignore")
    backend: _Backend = Field(default_factory=_Backend)


class _Benchmark(BaseModel):
    model_config = ConfigDict(extra="ignore")
    args: _Args | None = None
    scheduler: _Args | None = None
    start_time: float | None = _Time
    end_time: float | None = _Time
    run_stats: _Times = Field(default_factory=_Times)
    worker: _Worker = Field(default_factory=_Worker)
    benchmarker: _Benchmarker = Field(default_factory=_Benchmarker)
    metrics: _Metrics


def looks_like(doc) -> bool:
    return (isinstance(doc, dict) and isinstance(doc.get("benchmarks"), list) and bool(doc["benchmarks"])
            and all(isinstance(b, dict) and "metrics" in b and ("args" in b or "scheduler" in b)
                    for b in doc["benchmarks"]))


def _p(s: _Status | None, name: str) -> float | None:
    if s is None:
        return None
    return s.successful.median if name == "p50" and s.successful.median is not None else s.successful.percentiles.get(
        name)


def read_guidellm(path: Path, data: bytes, doc, opts: ImportOptions) -> list[RunRecord]:
    """A record per benchmark (rate) of a GuideLLM report.

    Raises:
        RunImportError: not a report, a benchmark without what a record needs, or no accelerator known.
    """
    benches = doc["benchmarks"]
    if len(benches) > MAX_BENCHMARKS:
        raise RunImportError(path, f"more than {MAX_BENCHMARKS} benchmarks")
    out = []
    for n, raw in enumerate(benches, 1):
        try:
            b = _Benchmark.model_validate(raw)
        except ValidationError as exc:
            raise RunImportError(path, f"benchmark {n}: not a GuideLLM benchmark ({validation_reason(exc)})") \
                from None
        m = b.metrics
        start, end = ((b.start_time, b.end_time) if b.start_time and b.end_time else
                      (b.run_stats.start_time or 0.0, b.run_stats.end_time or 0.0))
        span = end - start
        strategy = (b.args or b.scheduler).strategy if (b.args or b.scheduler) else None
        done = m.output_token_count.successful.count
        out_sum, in_sum = m.output_token_count.successful.total_sum, m.prompt_token_count.successful.total_sum
        if not span > 0 or not done or not out_sum:
            raise RunImportError(path, f"benchmark {n}: no successful request over a positive time")
        if strategy is not None and strategy.type_ == "synchronous":
            concurrency = 1
        elif strategy is not None and strategy.streams:
            concurrency = strategy.streams
        else:
            mean = m.request_concurrency.successful.mean if m.request_concurrency else None
            concurrency = max(1, round(mean)) if mean else None
        rps = m.requests_per_second.successful.mean if m.requests_per_second else None
        rate = strategy.rate if strategy is not None and strategy.type_ in ("constant", "poisson") else None
        when = _dt.datetime.fromtimestamp(start, _dt.UTC).isoformat(timespec="seconds")
        out.append(serving_record(path, data, ServingResult(
            kind="guidellm", software="vllm", recorded_at=when,
            model_id=b.worker.backend_model or b.benchmarker.backend.model,
            concurrency=concurrency, duration_s=span, completed=int(min(done, MAX_COUNT)),
            input_tokens=in_sum or 0.0, output_tokens=out_sum, output_tokens_per_s=out_sum / span,
            requests_per_s=rps, ttft_p50_s=s_of(_p(m.time_to_first_token_ms, "p50")),
            ttft_p99_s=s_of(_p(m.time_to_first_token_ms, "p99")),
            tpot_p50_s=s_of(_p(m.inter_token_latency_ms, "p50")),
            tpot_p99_s=s_of(_p(m.inter_token_latency_ms, "p99")), prompts=int(min(done, 10**9)),
            request_rate=rate), opts, f"benchmark {n}"))
    return out
