"""A run record: what one of the user's own jobs measured, as one typed, frozen value (pure, no I/O).

Importers at the border (``advisor.runs``) build these from a Hugging Face Trainer ``trainer_state.json``,
``llama-bench`` output, a ``vllm bench serve`` result or the advisor's own monitor recording; the store
(``advisor.store.runs``) keeps them; ``advisor.estimate.learned`` turns them into the efficiencies the planner
uses. ``to_dict``/``from_dict`` are the stored form (``from_dict`` re-validates, so a damaged row is refused).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields

KINDS = ("hf-trainer", "llama-bench", "vllm-bench", "monitor", "sglang-bench", "guidellm", "vllm-startup")
TRAINING_WORKLOADS = ("pretrain", "finetune", "lora", "qlora")
WORKLOADS = (*TRAINING_WORKLOADS, "inference")


@dataclass(frozen=True)
class Measured:
    """What the run measured; None where the file does not say.

    Attributes:
        tokens_per_s: training tokens/s (all devices), or generated tokens/s of a serving benchmark.
        flops_per_s: achieved FLOP/s the tool itself reported (Trainer ``total_flos / train_runtime``).
        peak_mem_bytes: peak accelerator memory of the job (monitor recordings).
        prefill_tokens_per_s, decode_tokens_per_s: prompt processing and generation speed (llama-bench pp/tg).
        ttft_p50_s, ttft_p99_s, tpot_p50_s, tpot_p99_s: time to first token and per output token (vLLM bench).
        requests_per_s: completed requests per second (vLLM bench).
        duration_s: wall time of the run (or the benchmark).
        energy_j, gpu_hours: the monitor's books of the job.
        kv_cache_tokens, max_concurrency, kv_cache_bytes, kv_value_bytes: what an engine reports of its KV cache
            at start-up (a vLLM log: "GPU KV cache size", "Maximum concurrency for N tokens per request", the
            cache memory of one GPU, 1 or 2 bytes a cached value): a reading of the engine, not a speed.
    """

    tokens_per_s: float | None = None
    flops_per_s: float | None = None
    peak_mem_bytes: int | None = None
    prefill_tokens_per_s: float | None = None
    decode_tokens_per_s: float | None = None
    ttft_p50_s: float | None = None
    ttft_p99_s: float | None = None
    tpot_p50_s: float | None = None
    tpot_p99_s: float | None = None
    requests_per_s: float | None = None
    duration_s: float | None = None
    energy_j: float | None = None
    gpu_hours: float | None = None
    kv_cache_tokens: int | None = None
    max_concurrency: float | None = None
    kv_cache_bytes: float | None = None
    kv_value_bytes: float | None = None

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)
                                  or v < 0 or v > 1e22):
                raise ValueError(f"measured {f.name}: not a finite non-negative number ({v!r})")

    def present(self) -> dict[str, float]:
        """The figures measured (None left out)."""
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass(frozen=True)
class RunRecord:
    """One run of the user's, imported from the file a tool wrote.

    Attributes:
        kind: which tool wrote the file (``KINDS``).
        source_file: the file imported (absolute path as given); content_sha256: its hash (one record per content).
        recorded_at: ISO 8601 time of the run (the file's own date, else its modification time).
        model: the model's name; params, layers, hidden, heads, vocab: its architecture where known.
        weight_bytes: bytes of stored weights (a GGUF file's size), for the bandwidth efficiency of a decode.
        workload: ``pretrain``, ``finetune``, ``lora``, ``qlora`` or ``inference``.
        precision, quant: the compute precision and the weight format.
        software, software_version: the framework (training) or runtime (serving), e.g. ``transformers``,
            ``llama.cpp``, ``vllm``.
        accelerator_id: catalog id (``cpu`` for the host CPU), None when unknown; accelerator_name as the file
            names it; devices: how many were used.
        machine_id: fingerprint id of the machine the run was made on (None: unknown); machine_note: how that
            is known (the file names its hardware, the user said, or assumed to be the importing machine).
        seq_len, batch, prompt_tokens, output_tokens, tokens: the job's lengths, batch and tokens processed
            (a serving benchmark: ``batch`` its users at once, its concurrency; the lengths its means).
        prompts, request_rate: a serving benchmark's shape beside its users: the requests its run sent
            (``--num-prompts``, else those completed) and the arrival rate it offered, requests/s (None: every
            request sent as soon as a user is free, an unbounded rate).
        recompute: ``full`` when activations were recomputed (gradient checkpointing), else ``none``.
        simulated: the job ran on simulated GPUs (``--fake-gpu``): shown, never learned from.
        measured: what was measured.
    """

    kind: str
    source_file: str
    content_sha256: str
    recorded_at: str
    workload: str
    measured: Measured
    model: str | None = None
    params: int | None = None
    layers: int | None = None
    hidden: int | None = None
    heads: int | None = None
    vocab: int | None = None
    weight_bytes: int | None = None
    precision: str | None = None
    quant: str | None = None
    software: str | None = None
    software_version: str | None = None
    accelerator_id: str | None = None
    accelerator_name: str | None = None
    devices: int = 1
    machine_id: str | None = None
    machine_note: str = ""
    seq_len: int | None = None
    batch: int | None = None
    prompt_tokens: int | None = None
    output_tokens: int | None = None
    tokens: float | None = None
    prompts: int | None = None
    request_rate: float | None = None
    recompute: str = "none"
    simulated: bool = False  # made on simulated GPUs (--fake-gpu): listed, never learned from
    notes: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown run kind {self.kind!r}")
        if self.workload not in WORKLOADS:
            raise ValueError(f"unknown workload {self.workload!r}")
        if not isinstance(self.devices, int) or not 1 <= self.devices <= 100_000:
            raise ValueError(f"devices out of range: {self.devices!r}")
        for name in ("params", "layers", "hidden", "heads", "vocab", "weight_bytes", "seq_len", "batch",
                     "prompt_tokens", "output_tokens", "prompts"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or not 0 < v <= 10**16):
                raise ValueError(f"{name} out of range: {v!r}")
        if self.tokens is not None and not (math.isfinite(self.tokens) and 0 < self.tokens <= 1e18):
            raise ValueError(f"tokens out of range: {self.tokens!r}")
        if self.request_rate is not None and (isinstance(self.request_rate, bool)
                                              or not isinstance(self.request_rate, (int, float))
                                              or not (math.isfinite(self.request_rate) and 0 < self.request_rate <= 1e9)):
            raise ValueError(f"request_rate out of range: {self.request_rate!r}")

    @property
    def training(self) -> bool:
        return self.workload in TRAINING_WORKLOADS

    @property
    def date(self) -> str:
        """The run's date, ``YYYY-MM-DD``."""
        return self.recorded_at[:10]

    @property
    def file_name(self) -> str:
        """The imported file's name (the last path component), for the plan's "from your run of" line."""
        return self.source_file.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1] or self.source_file

    def to_dict(self) -> dict:
        d = asdict(self)
        d["notes"] = list(self.notes)
        return d

    @classmethod
    def from_dict(cls, doc: dict) -> RunRecord:
        """The record of a stored dict (validated again; unknown keys ignored, so newer stores still read).

        Raises:
            ValueError: a missing or invalid field.
        """
        if not isinstance(doc, dict) or not isinstance(doc.get("measured"), dict):
            raise ValueError("not a run record")
        known = {f.name for f in fields(cls)}
        m_known = {f.name for f in fields(Measured)}
        kw = {k: v for k, v in doc.items() if k in known}
        kw["measured"] = Measured(**{k: v for k, v in doc["measured"].items() if k in m_known})
        kw["notes"] = tuple(str(n) for n in doc.get("notes") or ())
        try:
            return cls(**kw)
        except TypeError as exc:
            raise ValueError(f"not a run record: {exc}") from None
