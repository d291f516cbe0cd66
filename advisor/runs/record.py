"""The one schema of a run record, at import and when a stored row is read back (every field's type and range).

An importer builds a ``RunRecord`` from a file; ``checked_record`` then validates the record whole, and the
run store validates each row it reads with the same function, so a row whose ``recorded_at`` is a number,
whose ``software`` is a list or whose accelerator id holds a newline is refused at the door and skipped on
the way out (one warning), never handed to a plan.

Bounds on what was measured are physical floors and ceilings that hold whatever the hardware (the
hardware's own limits are ``advisor.runs.plausible``): no tool reports a rate under ``MIN_TOKENS_PER_S``
(one token in about 17 minutes) or a run shorter than ``MIN_DURATION_S``.
"""

from __future__ import annotations

import datetime as _dt
import math
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, ValidationError

from advisor.catalog.records import check_id
from advisor.estimate.run_record import KINDS, WORKLOADS, Measured, RunRecord

MIN_TOKENS_PER_S = 1e-3
MAX_TOKENS_PER_S = 1e12  # 100,000 accelerators at 10 million tokens/s each
MIN_DURATION_S = 1e-3  # the monitor's shortest recording (one sample interval is longer)
MAX_DURATION_S = 1e9  # 31 years
MAX_COUNT = 10**16

_Num = StrictInt | StrictFloat


def _finite(v: float) -> float:
    if not math.isfinite(v):
        raise ValueError("not a finite number")
    return float(v)


def _Rate(low: float, high: float):  # noqa: N802 - a type
    return Annotated[_Num, Field(ge=low, le=high), AfterValidator(_finite)] | None


def _iso(v: str) -> str:
    iso_time(v, strict=True)
    return v


def _id(v: str) -> str:
    return check_id(v, "id")


def iso_time(text: object, *, strict: bool = False) -> str | None:
    """``text`` when it is an ISO 8601 date or time (``2026-12-02``, ``2026-12-02T10:00:00Z``), else None
    (``strict``: ValueError)."""
    ok = isinstance(text, str) and 10 <= len(text) <= 40
    if ok:
        try:
            _dt.datetime.fromisoformat(text)
        except ValueError:
            ok = False
    if not ok and strict:
        raise ValueError("not an ISO 8601 date")
    return text if ok else None


_Id = Annotated[str, Field(max_length=128), AfterValidator(_id)]
_Count = Annotated[StrictInt, Field(gt=0, le=MAX_COUNT)] | None


class _Measured(BaseModel):
    model_config = ConfigDict(extra="ignore")
    tokens_per_s: _Rate(MIN_TOKENS_PER_S, MAX_TOKENS_PER_S) = None
    flops_per_s: _Rate(1.0, 1e22) = None
    peak_mem_bytes: Annotated[StrictInt, Field(ge=0, le=MAX_COUNT)] | None = None
    prefill_tokens_per_s: _Rate(MIN_TOKENS_PER_S, MAX_TOKENS_PER_S) = None
    decode_tokens_per_s: _Rate(MIN_TOKENS_PER_S, MAX_TOKENS_PER_S) = None
    ttft_p50_s: _Rate(0.0, 1e6) = None
    ttft_p99_s: _Rate(0.0, 1e6) = None
    tpot_p50_s: _Rate(0.0, 1e6) = None
    tpot_p99_s: _Rate(0.0, 1e6) = None
    requests_per_s: _Rate(0.0, 1e9) = None
    duration_s: _Rate(MIN_DURATION_S, MAX_DURATION_S) = None
    energy_j: _Rate(0.0, 1e15) = None
    gpu_hours: _Rate(0.0, 1e9) = None
    kv_cache_tokens: Annotated[StrictInt, Field(gt=0, le=10**13)] | None = None
    max_concurrency: _Rate(0.0, 1e9) = None
    kv_cache_bytes: _Rate(1.0, 2.0**50) = None
    kv_value_bytes: _Rate(0.25, 8.0) = None


class _Record(BaseModel):
    model_config = ConfigDict(extra="ignore")
    kind: Literal[KINDS]
    source_file: str = Field(max_length=4096)
    content_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    recorded_at: Annotated[str, AfterValidator(_iso)]
    workload: Literal[WORKLOADS]
    measured: _Measured
    model: str | None = Field(default=None, max_length=1000)
    params: _Count = None
    layers: Annotated[StrictInt, Field(gt=0, le=100_000)] | None = None
    hidden: Annotated[StrictInt, Field(gt=0, le=10**7)] | None = None
    heads: Annotated[StrictInt, Field(gt=0, le=10**6)] | None = None
    vocab: Annotated[StrictInt, Field(gt=0, le=10**8)] | None = None
    weight_bytes: _Count = None
    precision: Literal["fp32", "tf32", "bf16", "fp16", "fp8"] | None = None
    quant: _Id | None = None
    software: str | None = Field(default=None, max_length=100)
    software_version: str | None = Field(default=None, max_length=200)  # llama-bench: b<number> (<commit>)
    accelerator_id: _Id | None = None
    accelerator_name: str | None = Field(default=None, max_length=2000)
    devices: Annotated[StrictInt, Field(ge=1, le=100_000)] = 1
    machine_id: _Id | None = None
    machine_note: str = Field(default="", max_length=4096)  # names the file's GPUs (gpu_info: 2,000)
    seq_len: Annotated[StrictInt, Field(gt=0, le=10**8)] | None = None
    batch: Annotated[StrictInt, Field(gt=0, le=10**7)] | None = None
    prompt_tokens: Annotated[StrictInt, Field(gt=0, le=10**9)] | None = None
    output_tokens: Annotated[StrictInt, Field(gt=0, le=10**9)] | None = None
    tokens: _Rate(1.0, 1e18) = None
    prompts: Annotated[StrictInt, Field(gt=0, le=10**9)] | None = None
    request_rate: Annotated[_Num, Field(gt=0, le=1e9), AfterValidator(_finite)] | None = None
    recompute: Literal["none", "full"] = "none"
    simulated: StrictBool = False
    notes: list[Annotated[str, Field(max_length=2000)]] = Field(default_factory=list, max_length=50)


def record_problem(exc: ValidationError) -> str:
    """The first error of a record's validation as ``field: message``."""
    err = exc.errors(include_url=False)[0]
    where = ".".join(str(p) for p in err.get("loc", ())) or "record"
    return f"{where}: {err.get('msg', 'invalid')}"


def checked_record(doc: object) -> RunRecord:
    """The run record of ``doc`` (a ``RunRecord.to_dict()``, from an importer or a stored row), validated whole.

    Raises:
        ValueError: one line naming the first bad field.
    """
    if isinstance(doc, RunRecord):
        doc = doc.to_dict()
    try:
        r = _Record.model_validate(doc)
    except ValidationError as exc:
        raise ValueError(record_problem(exc)) from None
    values = r.model_dump()
    values["measured"] = Measured(**{k: v for k, v in values["measured"].items()})
    values["notes"] = tuple(values["notes"])
    return RunRecord(**values)
