"""The advisor's own recording of one job: ``advisor monitor --pid PID --save FILE`` (schema ``advisor.job/1``).

The monitor's books of the process (``advisor.monitor.accounting``): GPU-hours, energy, cost, peak GPU memory,
mean utilisation, wall time, the GPUs it ran on, this machine's fingerprint id, and the tokens it processed when
the user gave them (``--tokens`` or a ``trainer_state.json``). Without tokens a record still keeps the books,
but teaches the planner nothing about speed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from advisor.catalog.records import check_id
from advisor.estimate.run_record import WORKLOADS, Measured, RunRecord
from advisor.runs.common import (
    MAX_COUNT,
    ImportOptions,
    RunImportError,
    content_hash,
    validation_reason,
)
from advisor.runs.record import MAX_DURATION_S, MIN_DURATION_S, iso_time

SCHEMA = "advisor.job/1"
# an id in a recording (the catalog id of a GPU, the machine's fingerprint) is checked as an id: no newline
# or escape can reach the runs table through it
_Id = Annotated[str, Field(max_length=128), AfterValidator(check_id)]
_When = Annotated[str, Field(max_length=64), AfterValidator(lambda v: iso_time(v, strict=True))]


class _Gpu(BaseModel):
    model_config = ConfigDict(extra="ignore")
    index: int = Field(ge=0, le=4096)
    name: str | None = Field(default=None, max_length=200)
    catalog_id: _Id | None = None


class _Job(BaseModel):
    model_config = ConfigDict(extra="ignore")
    schema_: str = Field(alias="schema")
    pid: int = Field(ge=0, le=2**31)
    name: str | None = Field(default=None, max_length=1000)
    started_at: _When
    duration_s: float = Field(ge=MIN_DURATION_S, le=MAX_DURATION_S, allow_inf_nan=False)
    gpus: list[_Gpu] = Field(default_factory=list, max_length=4096)
    machine_id: _Id | None = None
    simulated: bool = False
    gpu_hours: float = Field(ge=0, le=1e9, allow_inf_nan=False)
    energy_j: float | None = Field(default=None, ge=0, le=1e15, allow_inf_nan=False)
    peak_gpu_mem_bytes: int | None = Field(default=None, ge=0, le=MAX_COUNT)
    tokens: float | None = Field(default=None, gt=0, le=1e18, allow_inf_nan=False)
    workload: str | None = Field(default=None, max_length=20)
    model: str | None = Field(default=None, max_length=1000)
    # from the job's trainer_state.json (advisor monitor --trainer-state), when it was given
    params: int | None = Field(default=None, gt=0, le=MAX_COUNT)
    layers: int | None = Field(default=None, gt=0, le=100_000)
    hidden: int | None = Field(default=None, gt=0, le=10**7)
    heads: int | None = Field(default=None, gt=0, le=10**6)
    vocab: int | None = Field(default=None, gt=0, le=10**8)
    seq_len: int | None = Field(default=None, gt=0, le=10**8)
    batch: int | None = Field(default=None, gt=0, le=10**7)
    precision: Literal["fp32", "tf32", "bf16", "fp16", "fp8"] | None = None
    software: str | None = Field(default=None, max_length=100)
    software_version: str | None = Field(default=None, max_length=100)
    recompute: Literal["none", "full"] = "none"


def looks_like(doc) -> bool:
    return isinstance(doc, dict) and doc.get("schema") == SCHEMA


def read_monitor_job(path: Path, data: bytes, doc, opts: ImportOptions) -> RunRecord:
    """The run record of a monitor recording.

    Raises:
        RunImportError: not an ``advisor.job/1`` document.
    """
    try:
        job = _Job.model_validate(doc)
    except ValidationError as exc:
        raise RunImportError(path, f"not an advisor job recording ({validation_reason(exc)})") from None
    workload = opts.workload or job.workload or "finetune"
    if workload not in WORKLOADS:
        raise RunImportError(path, f"unknown workload {workload!r}")
    first = job.gpus[0] if job.gpus else None
    here = opts.this_machine_id and job.machine_id == opts.this_machine_id and not opts.other_machine
    note = "this machine: recorded by its monitor" if here else "another machine: its monitor's fingerprint differs"
    if job.simulated:
        note += " (simulated GPUs: listed, never learned from)"
    tokens = opts.tokens or job.tokens
    return RunRecord(
        kind="monitor", source_file=str(path.resolve()), content_sha256=content_hash(data),
        recorded_at=job.started_at, workload=workload,
        measured=Measured(tokens_per_s=tokens / job.duration_s if tokens else None, duration_s=job.duration_s,
                          energy_j=job.energy_j, gpu_hours=job.gpu_hours, peak_mem_bytes=job.peak_gpu_mem_bytes),
        model=opts.model or job.model or job.name, accelerator_id=opts.accelerator or (first.catalog_id if first else None),
        accelerator_name=first.name if first else None, devices=opts.devices or max(1, len(job.gpus)),
        machine_id=job.machine_id if here else None, machine_note=note, tokens=tokens,
        params=job.params, layers=job.layers, hidden=job.hidden, heads=job.heads, vocab=job.vocab,
        seq_len=job.seq_len, batch=job.batch, precision=job.precision, software=job.software,
        software_version=job.software_version, recompute=job.recompute, simulated=job.simulated)
