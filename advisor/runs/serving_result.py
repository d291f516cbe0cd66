"""What every serving benchmark's result becomes: one ``RunRecord`` of generated tokens/s at a load.

``vllm bench serve``, SGLang's ``bench_serving`` and GuideLLM each report a run at a concurrency (or a request
rate) with its token totals, throughput and latency percentiles; ``serving_record`` builds the record all three
share, the model named by the file's Hugging Face id (``model_spec_of``), the accelerator by ``--accelerator``
(else this machine's first GPU): none of these files names the hardware.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from advisor.estimate.run_record import Measured, RunRecord
from advisor.runs.common import ImportOptions, RunImportError, content_hash, machine_of, model_arch

UNRESOLVED = "model not resolved (not a preset, not in the Hugging Face cache): --model gives it"
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
        if any(f"huggingface.co/{n} " in card or f"huggingface.co/{n}/" in card for n in names):
            return pid
    return f"hf:{model_id}" if "/" in model_id else model_id


@dataclass(frozen=True)
class ServingResult:
    """One benchmark run at one load, as the tools report it (seconds, tokens, tokens/s)."""

    kind: str
    software: str
    recorded_at: str
    model_id: str | None
    concurrency: int | None
    duration_s: float
    completed: int
    input_tokens: float
    output_tokens: float
    output_tokens_per_s: float
    requests_per_s: float | None = None
    ttft_p50_s: float | None = None
    ttft_p99_s: float | None = None
    tpot_p50_s: float | None = None
    tpot_p99_s: float | None = None
    prompts: int | None = None  # the requests the run sent (its --num-prompts, else those completed)
    request_rate: float | None = None  # the arrival rate it offered, requests/s; None: unbounded


def serving_record(path: Path, data: bytes, r: ServingResult, opts: ImportOptions, *parts: str) -> RunRecord:
    """The record of one serving run (``parts`` tell runs of one file apart).

    Raises:
        RunImportError: no accelerator known.
    """
    acc = opts.accelerator or this_gpu(opts)
    if acc is None:
        raise RunImportError(path, "the file does not say which accelerator served it: give --accelerator ID")
    machine_id, note = machine_of(opts)
    arch = model_arch(opts.model or model_spec_of(r.model_id))
    return RunRecord(
        kind=r.kind, source_file=str(path.resolve()), content_sha256=content_hash(data, *parts),
        recorded_at=r.recorded_at, workload="inference",
        measured=Measured(tokens_per_s=r.output_tokens_per_s, requests_per_s=r.requests_per_s,
                          ttft_p50_s=r.ttft_p50_s, ttft_p99_s=r.ttft_p99_s, tpot_p50_s=r.tpot_p50_s,
                          tpot_p99_s=r.tpot_p99_s, duration_s=r.duration_s),
        model=r.model_id or opts.model, params=arch.get("params"), layers=arch.get("layers"),
        hidden=arch.get("hidden"), heads=arch.get("heads"), vocab=arch.get("vocab"),
        software=opts.software or r.software, notes=() if arch else (UNRESOLVED,), accelerator_id=acc,
        devices=opts.devices or 1, machine_id=machine_id, machine_note=note, batch=r.concurrency,
        prompt_tokens=max(1, round(r.input_tokens / r.completed)) if r.input_tokens else None,
        output_tokens=max(1, round(r.output_tokens / r.completed)), prompts=r.prompts or r.completed,
        request_rate=r.request_rate)


def this_gpu(opts: ImportOptions) -> str | None:
    """This machine's first GPU as a catalog id (a serving run assumed made here), or None."""
    if not opts.this_gpus:
        return None
    from advisor.hw.match import match_catalog_id

    return match_catalog_id(opts.this_gpus[0])
