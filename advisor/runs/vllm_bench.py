"""A ``vllm bench serve --save-result`` file: one JSON object of the run's settings and results.

The keys (vllm-project/vllm, ``vllm/benchmarks/serve.py``, the ``result_json`` it saves, read at commit
def9ce85): ``date`` ("%Y%m%d-%H%M%S"), ``backend``, ``model_id``, ``num_prompts``, ``request_rate``,
``max_concurrency`` (``request_rate`` a number or ``"inf"``), then the benchmark's ``duration``, ``completed``, ``total_input_tokens``,
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
# How far two figures of one run computed from each other may part (rounding in the file, a client's own clock).
CONSISTENT = 0.05


class BenchServingFields(BaseModel):
    """The figures vLLM's ``vllm bench serve`` and SGLang's ``bench_serving`` both save (SGLang's is a fork of
    vLLM's benchmark script): declared once, bounded at the border."""

    model_config = ConfigDict(extra="ignore")
    backend: str | None = Field(default=None, max_length=100)
    num_prompts: int | None = Field(default=None, ge=1, le=MAX_COUNT)
    request_rate: float | None = Field(default=None, gt=0)  # requests/s; "inf" (vLLM), Infinity (SGLang): unbounded
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
    mean_e2e_latency_ms: float | None = _Ms
    concurrency: float | None = Field(default=None, ge=0, le=1e7, allow_inf_nan=False)  # SGLang's: sum(e2e) / duration

    def check_consistent(self) -> None:
        """The figures of one run agree with each other, as the scripts compute them: the output throughput is the
        output tokens over the duration; the requests' latencies add up to no more than ``--max-concurrency``
        requests at a time could spend in the run; SGLang's ``concurrency`` is their sum over the duration.

        Raises:
            ValueError: naming the figures that disagree.
        """
        rate = self.total_output_tokens / self.duration
        if abs(self.output_throughput - rate) > CONSISTENT * rate:
            raise ValueError(f"output_throughput {self.output_throughput:g} is not total_output_tokens over duration "
                             f"({rate:g} tokens/s)")
        if self.mean_e2e_latency_ms is None:
            return
        busy = self.completed * self.mean_e2e_latency_ms / 1000.0  # request-seconds in flight
        if self.max_concurrency is not None and busy > (1.0 + CONSISTENT) * self.max_concurrency * self.duration:
            raise ValueError(f"{self.completed} requests of {self.mean_e2e_latency_ms:g} ms each need more than "
                             f"{self.max_concurrency} at a time in {self.duration:g} s")
        if self.concurrency is not None and abs(self.concurrency - busy / self.duration) > CONSISTENT * max(
                self.concurrency, busy / self.duration):
            raise ValueError(f"concurrency {self.concurrency:g} is not the requests' latencies over the duration "
                             f"({busy / self.duration:.3g})")

    def shape(self) -> dict:
        """The run's load as ``ServingResult`` fields: its users (``--max-concurrency``; with no limit and an
        unbounded rate every prompt is sent at once, so the prompts), the requests it sent and the rate it offered
        (None: unbounded).

        Raises:
            ValueError: a finite rate above ``MAX_RATE``, more completed requests than it sent, or figures that
                disagree (``check_consistent``).
        """
        self.check_consistent()
        rate = None if self.request_rate is None or self.request_rate == float("inf") else self.request_rate
        if rate is not None and rate > 1e9:
            raise ValueError(f"request_rate {rate:g} is above 1e9 requests/s")
        if self.num_prompts is not None and self.completed > self.num_prompts:
            raise ValueError(f"completed {self.completed} is more than num_prompts {self.num_prompts}")
        users = self.max_concurrency
        if users is None and rate is None and self.num_prompts is not None:
            users = min(self.num_prompts, 10**7)
        return {"concurrency": users, "prompts": self.num_prompts, "request_rate": rate}

    def result(self, kind: str, software: str, recorded_at: str, model_id: str | None) -> ServingResult:
        """The run as every serving benchmark's result (``serving_result``)."""
        return ServingResult(
            kind=kind, software=software, recorded_at=recorded_at, model_id=model_id, duration_s=self.duration,
            completed=self.completed, input_tokens=self.total_input_tokens, output_tokens=self.total_output_tokens,
            output_tokens_per_s=self.output_throughput, requests_per_s=self.request_throughput,
            ttft_p50_s=s_of(self.median_ttft_ms), ttft_p99_s=s_of(self.p99_ttft_ms),
            tpot_p50_s=s_of(self.median_tpot_ms), tpot_p99_s=s_of(self.p99_tpot_ms), **self.shape())


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
        result = r.result("vllm-bench", "vllm", _date(r.date, path), r.model_id)
    except ValidationError as exc:
        raise RunImportError(path, f"not a vLLM benchmark result ({validation_reason(exc)})") from None
    except ValueError as exc:
        raise RunImportError(path, f"not a vLLM benchmark result ({exc})") from None
    return serving_record(path, data, result, opts)
