"""``llama-bench`` output: ``-o json`` (an array of tests), ``-o jsonl`` (one test a line) or ``-o csv``.

Each test is one row with the build, the hardware (``cpu_info``, ``gpu_info``, ``backends``), the model
(``model_type`` such as "qwen2 7B Q4_K - Medium", ``model_size`` bytes, ``model_n_params``) and the result:
``n_prompt`` > 0 is prompt processing (pp), ``n_gen`` > 0 is generation (tg), ``avg_ts`` their tokens/s
(ggml-org/llama.cpp, ``tools/llama-bench/README.md``, "Output formats", and ``llama-bench.cpp``). The tests of
one model on one piece of hardware become a record per kind of test, each the job it measured: a prompt
record (the largest pp test: its prompt, prefill tokens/s) and a generation record (the largest tg test: its
generated tokens from an empty cache, decode tokens/s). The planner learns the prefill from the first and the
decode from the second (``estimate.learned``).
"""

from __future__ import annotations

import csv
import io
import re
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
    parse_json,
    validation_reason,
)
from advisor.runs.record import iso_time

REQUIRED = ("model_type", "model_size", "model_n_params", "n_prompt", "n_gen", "avg_ts")
MAX_ROWS = 100_000
# llama.cpp's ftype names (llama_model_ftype_name) -> the advisor's weight formats
_QUANTS = (("q4_k - medium", "q4_k_m"), ("q4_k_m", "q4_k_m"), ("q6_k", "q6_k"), ("q8_0", "q8_0"), ("q4_0", "q4_0"),
           ("bf16", "f16"), ("f16", "f16"))


class _Test(BaseModel):
    model_config = ConfigDict(extra="ignore")
    build_commit: str | None = Field(default=None, max_length=100)
    build_number: int | None = Field(default=None, ge=0, le=10**9)
    cpu_info: str | None = Field(default=None, max_length=500)
    gpu_info: str | None = Field(default=None, max_length=2000)
    backends: str | None = Field(default=None, max_length=200)
    model_filename: str | None = Field(default=None, max_length=4096)
    model_type: str = Field(max_length=500)
    model_size: int = Field(gt=0, le=MAX_COUNT)
    model_n_params: int = Field(gt=0, le=MAX_COUNT)
    n_gpu_layers: int | None = Field(default=None, ge=0, le=100_000)
    n_prompt: int = Field(ge=0, le=10**9)
    n_gen: int = Field(ge=0, le=10**9)
    n_depth: int = Field(default=0, ge=0, le=10**9)
    test_time: str | None = Field(default=None, max_length=64)
    avg_ts: float = Field(gt=0, le=MAX_RATE, allow_inf_nan=False)


def looks_like(doc) -> bool:
    rows = doc if isinstance(doc, list) else [doc]
    return bool(rows) and all(isinstance(r, dict) for r in rows) and all(k in rows[0] for k in ("avg_ts", "n_gen"))


def rows_of(path: Path, text: str) -> list[dict] | None:
    """The tests of a JSONL or CSV file (None when it is neither); JSON arrays are parsed by the caller."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if lines and lines[0].lstrip().startswith("{"):
        out = []
        for n, ln in enumerate(lines, 1):
            try:
                row = parse_json(path, ln.encode("utf-8", "surrogatepass"), infinity=True)  # SGLang's rate
            except RunImportError as exc:
                raise RunImportError(path, f"line {n}: {exc.reason}") from None
            if not isinstance(row, dict):
                raise RunImportError(path, f"line {n}: not a JSON object")
            out.append(row)
        return out
    if lines and "avg_ts" in lines[0] and "," in lines[0]:
        try:
            reader = csv.DictReader(io.StringIO(text))
            rows = [dict(r) for _, r in zip(range(MAX_ROWS + 1), reader)]
        except csv.Error as exc:
            raise RunImportError(path, f"not valid CSV ({exc})") from None
        if any(None in r or None in r.values() for r in rows):
            raise RunImportError(path, "a CSV row has more or fewer fields than the header (truncated?)")
        return rows
    return None


def _quant(model_type: str) -> str | None:
    t = model_type.lower()
    for key, fmt in _QUANTS:
        if key in t:
            return fmt
    return None


def _accelerator(test: _Test, opts: ImportOptions) -> tuple[str | None, str | None, int]:
    """``(catalog id, name, devices)`` of the hardware that ran the tests."""
    if opts.accelerator:
        return opts.accelerator, None, opts.devices or 1
    gpus = [g.strip() for g in re.split(r",\s*", test.gpu_info or "") if g.strip()]
    on_cpu = test.n_gpu_layers == 0 or not gpus or (test.backends or "").strip().upper() in ("CPU", "BLAS")
    if on_cpu:
        return "cpu", test.cpu_info, 1
    from advisor.hw.match import match_catalog_id

    return match_catalog_id(gpus[0]), gpus[0], opts.devices or len(gpus)


def read_llama_bench(path: Path, data: bytes, rows: list, opts: ImportOptions) -> list[RunRecord]:
    """A prompt record and a generation record per model and hardware in a llama-bench output.

    Raises:
        RunImportError: a row that is not a llama-bench test, or no test at all.
    """
    if not rows:
        raise RunImportError(path, "no llama-bench test in the file")
    if len(rows) > MAX_ROWS:
        raise RunImportError(path, f"more than {MAX_ROWS} tests")
    tests = []
    for n, row in enumerate(rows, 1):
        missing = [k for k in REQUIRED if k not in row]
        if missing:
            raise RunImportError(path, f"test {n} is not a llama-bench result (missing {', '.join(missing)})")
        try:
            tests.append(_Test.model_validate(row))
        except ValidationError as exc:
            raise RunImportError(path, f"test {n}: {validation_reason(exc)}") from None
    groups: dict[tuple, list[_Test]] = {}
    for t in tests:
        groups.setdefault((t.model_filename or t.model_type, t.gpu_info, t.cpu_info, t.n_gpu_layers), []).append(t)
    records = []
    for key, group in groups.items():
        first = group[0]
        pp = [t for t in group if t.n_prompt > 0 and t.n_gen == 0 and t.n_depth == 0]
        tg = [t for t in group if t.n_gen > 0 and t.n_prompt == 0 and t.n_depth == 0]
        if not pp and not tg:
            continue
        acc_id, acc_name, devices = _accelerator(first, opts)
        gpus = tuple(g.strip() for g in re.split(r",\s*", first.gpu_info or "") if g.strip())
        machine_id, note = machine_of(opts, cpu=first.cpu_info, gpus=gpus if acc_id != "cpu" else ())
        version = (f"b{first.build_number}" if first.build_number is not None else "") + (
            f" ({first.build_commit})" if first.build_commit else "")
        common = dict(kind="llama-bench", source_file=str(path.resolve()), workload="inference",
                      model=first.model_type, params=first.model_n_params, weight_bytes=first.model_size,
                      quant=_quant(first.model_type), precision="fp16", software=opts.software or "llama.cpp",
                      software_version=version.strip() or None, accelerator_id=acc_id, accelerator_name=acc_name,
                      devices=devices, machine_id=machine_id, machine_note=note, batch=1)
        if pp:
            best = max(pp, key=lambda t: t.n_prompt)
            records.append(RunRecord(
                content_sha256=content_hash(data, repr(key), "pp"), recorded_at=iso_time(best.test_time) or file_time(path),
                measured=Measured(prefill_tokens_per_s=best.avg_ts), prompt_tokens=best.n_prompt, **common))
        if tg:
            best = max(tg, key=lambda t: t.n_gen)
            records.append(RunRecord(
                content_sha256=content_hash(data, repr(key), "tg"), recorded_at=iso_time(best.test_time) or file_time(path),
                measured=Measured(tokens_per_s=best.avg_ts, decode_tokens_per_s=best.avg_ts),
                output_tokens=best.n_gen, **common))
    if not records:
        raise RunImportError(path, "no prompt (pp) or generation (tg) test without a prefilled context")
    return records
