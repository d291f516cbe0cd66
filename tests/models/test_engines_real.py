"""``--engine-check`` against llama.cpp's own fit printer on a tiny real GGUF (issue 36, item 5, done-when 3).

``test_the_real_fit_printer`` runs where ADVISOR_LLAMA_CPP_BIN names a ``llama-fit-params`` binary (or the folder
holding it) and is skipped elsewhere; its output was recorded once as ``fixtures/engines/
llama-fit-print-tiny-llama-cpu.txt``, which ``test_the_recorded_fit_printer`` replays on every run. The model is
``tiny_gguf.TinyLlama``: its F16 matrices and F32 norms come to 3,388,416 bytes (3.23 MiB), and its cache at 4,096
tokens to 2 layers x 2 (K, V) x 128 (2 KV heads of 64) x 2 bytes x 4,096 = 4 MiB. The printer gives whole MiB
(rounded down), so the engine's weights read 3 MiB.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from advisor.cli import main
from tests.models.tiny_gguf import TinyLlama, write_tiny_llama

MIB = 2**20
RECORDED = Path(__file__).parent / "fixtures" / "engines" / "llama-fit-print-tiny-llama-cpu.txt"
CONTEXT = 4096


def _fit_printer() -> str | None:
    where = os.environ.get("ADVISOR_LLAMA_CPP_BIN", "")
    if not where:
        return None
    path = Path(where)
    path = path / "llama-fit-params" if path.is_dir() else path
    return str(path) if path.is_file() and os.access(path, os.X_OK) else None


def _check(tmp_path, capsys, monkeypatch) -> dict:
    gguf = write_tiny_llama(tmp_path / "tiny-llama.gguf")
    monkeypatch.setenv("OLLAMA_HOST", "127.0.0.1:9")  # the discard port: nothing answers, Ollama is absent
    assert main(["plan", "--model", str(gguf), "--workload", "inference", "--context", str(CONTEXT), "--json",
                 "--engine-check", "--fake-gpu", "2x4090"]) == 0
    return json.loads(capsys.readouterr().out)["engine_check"]


def _assert_tiny_llama(check: dict, gguf: Path) -> dict:
    """What llama.cpp's CPU build prints for the tiny model, beside the plan (module docstring)."""
    llama = check["engines"][0]
    assert llama["state"] == "compared", check["lines"]
    # the plan's file and context, one sequence, every layer on the plan's one device
    assert llama["command"][1:] == ["-m", str(gguf), "-c", str(CONTEXT), "-np", "1", "-ngl", "999", "-ctk", "f16",
                                    "-ctv", "f16", "--fit-print", "on", "-sm", "none"]
    assert [d["device"] for d in llama["devices"]] == ["Host"]  # a CPU build: all of it in host memory
    engine = llama["totals"]["engine"]
    ours = llama["totals"]["advisor"]
    shape = TinyLlama()
    assert ours["weights_bytes"] == shape.tensor_bytes() == 3_388_416  # the plan sizes the file's own tensors
    assert engine["weights_bytes"] == (shape.tensor_bytes() // MIB) * MIB == 3 * MIB  # printed in whole MiB
    assert ours["kv_cache_bytes"] == 2 * 2 * 128 * 2 * CONTEXT == 4 * MIB == engine["kv_cache_bytes"]
    # the advisor's overhead term (CUDA context and allocator, 1 GiB) against llama.cpp's CPU compute buffers
    assert llama["differs_most"]["part"] == "compute" and engine["compute_bytes"] < 64 * MIB
    return llama


def test_the_recorded_fit_printer(tmp_path, capsys, monkeypatch):
    from advisor import subproc
    from advisor.models import engines

    calls = []

    def replay(argv, **kw):
        calls.append(argv)
        from types import SimpleNamespace

        return SimpleNamespace(stdout=RECORDED.read_bytes(), stderr=b"", returncode=0)

    monkeypatch.setattr(engines.shutil, "which", lambda n: "/opt/llama.cpp/llama-fit-params"
                        if n == "llama-fit-params" else None)
    monkeypatch.setattr(subproc, "bounded_run", replay)
    llama = _assert_tiny_llama(_check(tmp_path, capsys, monkeypatch), tmp_path / "tiny-llama.gguf")
    assert len(calls) == 1 and calls[0][0] == "/opt/llama.cpp/llama-fit-params"
    assert llama["devices"][0]["engine"] == {"weights_bytes": 3 * MIB, "kv_cache_bytes": 4 * MIB,
                                             "compute_bytes": llama["totals"]["engine"]["compute_bytes"]}


@pytest.mark.skipif(_fit_printer() is None, reason="ADVISOR_LLAMA_CPP_BIN names no llama-fit-params binary")
def test_the_real_fit_printer(tmp_path, capsys, monkeypatch):
    exe = _fit_printer()
    monkeypatch.setenv("PATH", str(Path(exe).parent) + os.pathsep + os.environ.get("PATH", ""))
    assert shutil.which("llama-fit-params") == exe
    llama = _assert_tiny_llama(_check(tmp_path, capsys, monkeypatch), tmp_path / "tiny-llama.gguf")
    assert llama["command"][0] == exe
    # the engine's own answer is the recording the other test replays
    rows = {(d["device"], d["engine"]["weights_bytes"], d["engine"]["kv_cache_bytes"], d["engine"]["compute_bytes"])
            for d in llama["devices"]}
    from advisor.models.engines import parse_fit_print

    recorded = {(r.device, r.weights, r.kv_cache, r.compute) for r in parse_fit_print(RECORDED.read_text())}
    assert rows == recorded
