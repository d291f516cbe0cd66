"""SGLang's ``python -m sglang.bench_serving --output-file FILE``: JSON lines, one per run, appended.

Each line (sgl-project/sglang, ``python/sglang/bench_serving.py``, the ``result`` dict its ``benchmark``
writes): ``backend``, ``dataset_name``, ``request_rate``, ``max_concurrency``, the ``random_*`` lengths, then
``duration``, ``completed``, ``total_input_tokens``, ``total_output_tokens``,
``total_output_tokens_retokenized``, ``request_throughput``, ``input_throughput``, ``output_throughput`` and per
latency ``mean_/median_/std_/p99_`` ``ttft_ms``, ``tpot_ms``, ``itl_ms``, ``e2e_latency_ms``, and
``concurrency`` (the mean measured). The lines name neither the model nor the hardware nor a date:
``--model`` (required) and ``--accelerator`` say them; the date is the file's.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, ValidationError

from advisor.estimate.run_record import RunRecord
from advisor.runs.common import ImportOptions, RunImportError, file_time, validation_reason
from advisor.runs.serving_result import serving_record
from advisor.runs.vllm_bench import BenchServingFields

MAX_LINES = 10_000
_Ms = Field(default=None, ge=0, le=1e12, allow_inf_nan=False)


class _Line(BenchServingFields):
    """One bench_serving line: the figures vLLM's benchmark saves (SGLang's script is a fork of it)."""


def looks_like(row) -> bool:
    """A bench_serving line: vLLM's result keys without vLLM's own (``model_id``, ``date``), with SGLang's."""
    return (isinstance(row, dict) and "output_throughput" in row and "model_id" not in row
            and ("total_output_tokens_retokenized" in row or "accept_length" in row))


def read_sglang_bench(path: Path, data: bytes, rows: list, opts: ImportOptions) -> list[RunRecord]:
    """A record per run (line) of a bench_serving output.

    Raises:
        RunImportError: a line that is not a run, no ``--model``, or no accelerator known.
    """
    if not rows or len(rows) > MAX_LINES:
        raise RunImportError(path, f"expected 1 to {MAX_LINES} bench_serving runs, found {len(rows)}")
    if not opts.model:
        raise RunImportError(path, "SGLang's bench_serving output does not name its model: give --model")
    when = file_time(path)
    out = []
    for n, row in enumerate(rows, 1):
        try:
            r = _Line.model_validate(row)
            result = r.result("sglang-bench", "sglang", when, None)
        except ValidationError as exc:
            raise RunImportError(path, f"run {n}: not an SGLang bench_serving result ({validation_reason(exc)})") \
                from None
        except ValueError as exc:
            raise RunImportError(path, f"run {n}: not an SGLang bench_serving result ({exc})") from None
        out.append(serving_record(path, data, result, opts, f"line {n}"))
    return out
