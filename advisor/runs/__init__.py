"""Importers of the user's own runs: each file becomes typed ``RunRecord`` values (``advisor.estimate.run_record``).

    from advisor.runs import ImportOptions, RunImportError, import_file
    records = import_file(Path("out/trainer_state.json"), ImportOptions(accelerator="rtx-4090"))

Read (the file is recognised by its content, not its name): a Hugging Face Trainer ``trainer_state.json``
(``trainer``), ``llama-bench`` JSON, JSONL or CSV (``llama_bench``), a ``vllm bench serve --save-result`` JSON
(``vllm_bench``), SGLang's ``bench_serving`` JSON lines (``sglang_bench``), a GuideLLM report (``guidellm``) and
the advisor's own job recording (``monitor_job``). Every file is read bounded and
validated at this border; a bad one raises ``RunImportError`` (one line: the file and the reason).
"""

from __future__ import annotations

from pathlib import Path

from advisor.estimate.run_record import RunRecord
from advisor.runs import guidellm, llama_bench, monitor_job, sglang_bench, trainer, vllm_bench
from advisor.runs.common import ImportOptions, RunImportError, parse_json, read_bytes

__all__ = ["ImportOptions", "RunImportError", "import_file"]


def import_file(path: str | Path, opts: ImportOptions | None = None) -> list[RunRecord]:
    """The run records of one file (a llama-bench file may hold several models); a Trainer's output folder
    stands for its ``trainer_state.json``.

    Raises:
        RunImportError: unreadable, truncated, hostile or unrelated content.
    """
    path = Path(path)
    opts = opts or ImportOptions()
    if path.is_dir() and (path / "trainer_state.json").is_file():  # a Trainer's output folder
        path = path / "trainer_state.json"
    data = read_bytes(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise RunImportError(path, "not UTF-8 text (not a run file the advisor reads)") from None
    head = text.lstrip()[:1]
    if head not in ("{", "["):
        rows = llama_bench.rows_of(path, text)
        if rows is None:
            raise RunImportError(path, "not a run file the advisor reads (a Trainer state, llama-bench JSON/JSONL/"
                                       "CSV, a vLLM, SGLang or GuideLLM benchmark result or an advisor job recording)")
        return llama_bench.read_llama_bench(path, data, rows, opts)
    if head == "{" and _is_jsonl(text, 1):
        # JSON lines: SGLang's bench_serving (one run a line, its rate `Infinity` as Python writes it) or
        # llama-bench -o jsonl; a single line of anything else is read as the JSON document it is
        rows = llama_bench.rows_of(path, text) or []
        if rows and sglang_bench.looks_like(rows[0]):
            return sglang_bench.read_sglang_bench(path, data, rows, opts)
        if len(rows) > 1:
            return llama_bench.read_llama_bench(path, data, rows, opts)
    doc = parse_json(path, data)
    if trainer.looks_like(doc):
        return [trainer.read_trainer_state(path, data, doc, opts)]
    if monitor_job.looks_like(doc):
        return [monitor_job.read_monitor_job(path, data, doc, opts)]
    if sglang_bench.looks_like(doc):
        return sglang_bench.read_sglang_bench(path, data, [doc], opts)
    if guidellm.looks_like(doc):
        return guidellm.read_guidellm(path, data, doc, opts)
    if vllm_bench.looks_like(doc):
        return [vllm_bench.read_vllm_bench(path, data, doc, opts)]
    if llama_bench.looks_like(doc):
        return llama_bench.read_llama_bench(path, data, doc if isinstance(doc, list) else [doc], opts)
    raise RunImportError(path, "JSON, but not a run the advisor reads (a Trainer state, llama-bench output, a vLLM, "
                               "SGLang or GuideLLM benchmark result or an advisor job recording)")


def _is_jsonl(text: str, least: int = 2) -> bool:
    """JSON objects one per line (llama-bench ``-o jsonl``, SGLang's bench_serving), at least ``least`` of them,
    rather than one pretty-printed object."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return len(lines) >= least and all(ln.lstrip().startswith("{") and ln.rstrip().endswith("}") for ln in lines)
