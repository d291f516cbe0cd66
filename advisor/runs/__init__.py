"""Importers of the user's own runs: each file becomes typed ``RunRecord`` values (``advisor.estimate.run_record``).

    from advisor.runs import ImportOptions, RunImportError, import_file
    records = import_file(Path("out/trainer_state.json"), ImportOptions(accelerator="rtx-4090"))

Read (the file is recognised by its content, not its name): a Hugging Face Trainer ``trainer_state.json``
(``trainer``), ``llama-bench`` JSON, JSONL or CSV (``llama_bench``), a ``vllm bench serve --save-result`` JSON
(``vllm_bench``), SGLang's ``bench_serving`` JSON lines (``sglang_bench``), a GuideLLM report (``guidellm``), a
vLLM start-up log, the engine's reading of its KV cache (``vllm_startup``), and the advisor's own job recording
(``monitor_job``). Every file is read bounded and validated at this border; a bad
one raises ``RunImportError`` (one line: the file and the reason). Each record is then validated whole with the
schema the run store reads rows with (``runs.record``) and its figures against what its hardware allows
(``runs.plausible``): a figure that overflows, or that no hardware of its kind can reach, is refused the same way,
so no imported record can make a later plan fail.
"""

from __future__ import annotations

from pathlib import Path

from advisor.estimate.run_record import RunRecord
from advisor.runs import guidellm, llama_bench, monitor_job, sglang_bench, trainer, vllm_bench, vllm_startup
from advisor.runs.common import ImportOptions, RunImportError, parse_json, read_bytes
from advisor.runs.plausible import check_plausible
from advisor.runs.record import checked_record

__all__ = ["READS", "ImportOptions", "RunImportError", "checked", "import_file"]

# What ``import_file`` reads, in the words every surface that asks for a file uses (the CLI's hint, the Runs page).
READS = ("a trainer_state.json, llama-bench output, a vLLM (vllm bench serve) or SGLang (bench_serving) benchmark "
         "result, a GuideLLM report, a vLLM start-up log or an advisor monitor job")


def import_file(path: str | Path, opts: ImportOptions | None = None, catalog=None) -> list[RunRecord]:
    """The run records of one file (a llama-bench file may hold several models); a Trainer's output folder
    stands for its ``trainer_state.json``.

    Args:
        catalog: the catalog the figures are checked against (default: ``load_catalog()``).
    Raises:
        RunImportError: unreadable, truncated, hostile or unrelated content, or a figure out of range.
    """
    path = Path(path)
    opts = opts or ImportOptions()
    try:
        records = _read(path, opts)
    except RunImportError:
        raise
    except (ValueError, OverflowError, ZeroDivisionError) as exc:  # a figure the record refuses (it overflowed)
        raise RunImportError(path, f"a figure out of range ({exc})") from None
    except RecursionError:
        raise RunImportError(path, "JSON nested too deeply") from None
    return checked(path, records, catalog)


def checked(path: str | Path, records: list[RunRecord], catalog=None) -> list[RunRecord]:
    """``records`` validated whole (``runs.record``) and against their hardware (``runs.plausible``): what
    every record goes through before it is stored.

    Raises:
        RunImportError: naming the file and the first bad figure.
    """
    if catalog is None:
        from advisor.catalog import load_catalog

        catalog = load_catalog()
    out = []
    for rec in records:
        try:
            out.append(check_plausible(checked_record(rec), catalog))
        except ValueError as exc:  # ImplausibleRun too
            name = f" ({rec.model})" if len(records) > 1 and rec.model else ""
            raise RunImportError(path, f"record{name}: {exc}") from None
    return out


def _read(path: Path, opts: ImportOptions) -> list[RunRecord]:
    if path.is_dir() and (path / "trainer_state.json").is_file():  # a Trainer's output folder
        path = path / "trainer_state.json"
    data = read_bytes(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise RunImportError(path, "not UTF-8 text (not a run file the advisor reads)") from None
    head = text.lstrip()[:1]
    if head not in ("{", "[") and vllm_startup.looks_like(text):  # a vLLM start-up log: the engine's reading
        return [vllm_startup.read_vllm_startup(path, data, text, opts)]
    if head not in ("{", "["):
        rows = llama_bench.rows_of(path, text)
        if rows is None:
            raise RunImportError(path, "not a run file the advisor reads (a Trainer state, llama-bench JSON/JSONL/"
                                       "CSV, a vLLM, SGLang or GuideLLM benchmark result, a vLLM start-up log or "
                                       "an advisor job recording)")
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
