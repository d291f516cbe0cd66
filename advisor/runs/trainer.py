"""A Hugging Face Trainer run: ``trainer_state.json`` (TRL, axolotl and LLaMA-Factory write the same file).

What the files hold (transformers ``trainer_callback.TrainerState.save_to_json`` and ``Trainer._inner_training_loop``,
https://github.com/huggingface/transformers, ``src/transformers/trainer.py``): ``global_step``,
``train_batch_size`` (per device), ``num_input_tokens_seen`` (when ``include_num_input_tokens_seen`` was on),
``total_flos`` and a ``log_history`` whose last entry carries ``train_runtime``. Beside it, when present:
``config.json`` (the architecture: read by ``advisor.models``), ``adapter_config.json`` (a PEFT adapter: LoRA,
QLoRA when the config names 4-bit loading) and the training arguments as JSON (``training_args.json``, what
``TrainingArguments.to_json_string`` writes). ``training_args.bin`` is a pickle: never loaded (unpickling runs
code), the flags say what it would have.

Tokens: ``num_input_tokens_seen``, else ``global_step * batch * accumulation * devices * --seq-len``. The
sequence length, when not given, is the tokens seen per sequence.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from advisor.estimate.run_record import Measured, RunRecord
from advisor.runs.common import (
    MAX_COUNT,
    ImportOptions,
    RunImportError,
    content_hash,
    file_time,
    machine_of,
    model_arch,
    parse_json,
    read_bytes,
    validation_reason,
)

_Count = Field(default=None, ge=0, le=MAX_COUNT)


class _Log(BaseModel):
    model_config = ConfigDict(extra="ignore")
    train_runtime: float | None = Field(default=None, gt=0, le=1e9, allow_inf_nan=False)
    total_flos: float | None = Field(default=None, ge=0, le=1e30, allow_inf_nan=False)
    num_input_tokens_seen: int | None = _Count


class _State(BaseModel):
    model_config = ConfigDict(extra="ignore")
    global_step: int = Field(ge=1, le=10**9)
    train_batch_size: int | None = Field(default=None, ge=1, le=10**7)
    num_input_tokens_seen: int | None = _Count
    total_flos: float | None = Field(default=None, ge=0, le=1e30, allow_inf_nan=False)
    log_history: list[dict] = Field(max_length=10**6)


class _Args(BaseModel):
    model_config = ConfigDict(extra="ignore")
    per_device_train_batch_size: int | None = Field(default=None, ge=1, le=10**7)
    gradient_accumulation_steps: int = Field(default=1, ge=1, le=10**7)
    bf16: bool = False
    fp16: bool = False
    gradient_checkpointing: bool = False
    use_cpu: bool = False
    no_cuda: bool = False


class _Adapter(BaseModel):
    model_config = ConfigDict(extra="ignore")
    peft_type: str | None = None
    base_model_name_or_path: str | None = None


def looks_like(doc) -> bool:
    """Whether a JSON document is a Trainer state."""
    return isinstance(doc, dict) and "log_history" in doc and "global_step" in doc


def _side(path: Path, name: str):
    """A JSON file beside the state (None when absent); a broken one is an error naming it."""
    side = path.parent / name
    if not side.exists():
        return None
    doc = parse_json(side, read_bytes(side))
    if not isinstance(doc, dict):
        raise RunImportError(side, "not a JSON object")
    return doc


def read_trainer_state(path: Path, data: bytes, doc, opts: ImportOptions) -> RunRecord:
    """The run record of a ``trainer_state.json`` (and the files beside it).

    Raises:
        RunImportError: the state or a file beside it is not what the Trainer writes, or a figure the record
            needs is missing and no flag gives it.
    """
    try:
        state = _State.model_validate(doc)
    except ValidationError as exc:
        raise RunImportError(path, f"not a Trainer state ({validation_reason(exc)})") from None
    logs = []
    for entry in state.log_history:
        try:
            logs.append(_Log.model_validate(entry))
        except ValidationError as exc:
            raise RunImportError(path, f"log_history: {validation_reason(exc)}") from None
    final = next((e for e in reversed(logs) if e.train_runtime is not None), None)
    if final is None:
        raise RunImportError(path, "no train_runtime in log_history: the run did not finish (or was cut short)")
    try:
        args = _Args.model_validate(_side(path, "training_args.json") or {})
        adapter = _side(path, "adapter_config.json")
        adapter = _Adapter.model_validate(adapter) if adapter is not None else None
    except ValidationError as exc:
        raise RunImportError(path, f"training arguments: {validation_reason(exc)}") from None
    notes = []
    if (path.parent / "training_args.bin").exists() and not (path.parent / "training_args.json").exists():
        notes.append("training_args.bin is a pickle and is not read; flags give what it holds")

    arch = _arch(path, opts)
    devices = opts.devices or 1
    batch = args.per_device_train_batch_size or state.train_batch_size
    seen = state.num_input_tokens_seen or final.num_input_tokens_seen
    sequences = state.global_step * (batch or 0) * args.gradient_accumulation_steps * devices
    seq_len = opts.seq_len
    if seen:
        tokens = float(seen)
        if seq_len is None and sequences:
            seq_len = max(1, round(seen / sequences))
    elif opts.tokens:
        tokens = float(opts.tokens)
    elif seq_len and sequences:
        tokens = float(sequences * seq_len)
    else:
        raise RunImportError(path, "no num_input_tokens_seen: give --seq-len (or --tokens) to count the tokens")
    runtime = final.train_runtime
    flos = final.total_flos or state.total_flos
    workload = opts.workload or _workload(adapter, arch)
    precision = opts.precision or ("bf16" if args.bf16 else "fp16" if args.fp16 else "fp32" if (
        path.parent / "training_args.json").exists() else None)
    if precision is None:
        notes.append("precision not in the files: bf16 assumed (--precision)")
    accelerator = opts.accelerator or ("cpu" if args.use_cpu or args.no_cuda else None)
    if accelerator is None and opts.this_gpus:
        from advisor.hw.match import match_catalog_id

        accelerator = match_catalog_id(opts.this_gpus[0])
        if accelerator:
            notes.append(f"accelerator assumed: this machine's {opts.this_gpus[0]} (--accelerator, --devices say "
                         "otherwise)")
    if accelerator is None:
        raise RunImportError(path, "the files do not say which accelerator ran the job: give --accelerator ID")
    machine_id, machine_note = machine_of(opts)
    return RunRecord(
        kind="hf-trainer", source_file=str(path.resolve()), content_sha256=content_hash(data),
        recorded_at=file_time(path), workload=workload,
        measured=Measured(tokens_per_s=tokens / runtime, flops_per_s=flos / runtime if flos else None,
                          duration_s=runtime),
        model=arch.get("name"), params=arch.get("params"), layers=arch.get("layers"), hidden=arch.get("hidden"),
        heads=arch.get("heads"), vocab=arch.get("vocab"), precision=precision,
        software=opts.software or "transformers", software_version=arch.get("version"),
        accelerator_id=accelerator, devices=devices, machine_id=machine_id, machine_note=machine_note,
        seq_len=seq_len, batch=batch, tokens=tokens, recompute="full" if args.gradient_checkpointing else "none",
        notes=tuple(notes))


def _workload(adapter: _Adapter | None, arch: dict) -> str:
    if adapter is None:
        return "finetune"
    return "qlora" if arch.get("four_bit") else "lora"


def _arch(path: Path, opts: ImportOptions) -> dict:
    """The model's architecture: ``--model`` if given, else ``config.json`` beside the state (read by
    ``advisor.models``, which validates it), with the transformers version and 4-bit loading of that file."""
    cfg = path.parent / "config.json"
    spec = opts.model or (str(cfg) if cfg.exists() else None)
    out = model_arch(spec)
    if spec and not out:
        raise RunImportError(path, f"the model ({spec}) cannot be read: give --model")
    if cfg.exists():
        doc = parse_json(cfg, read_bytes(cfg))
        if isinstance(doc, dict):
            version = doc.get("transformers_version")
            out["version"] = version if isinstance(version, str) and len(version) < 40 else None
            q = doc.get("quantization_config")
            out["four_bit"] = isinstance(q, dict) and bool(q.get("load_in_4bit"))
    return out
