"""The engines' own figures beside the advisor's (issue 36, --engine-check), from outputs users pasted."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace

import pytest

from advisor.catalog.load import bundled_catalog
from advisor.estimate import memory
from advisor.estimate.gguf_mix import gguf_weight_bytes
from advisor.estimate.model import ModelArch
from advisor.models.engines import (
    AdvisorMemory,
    DeviceMemory,
    compare_devices,
    compare_llama_cpp,
    compare_ollama,
    compare_vllm,
    engine_check,
    load_devices,
    ollama_url,
    parse_fit_print,
    parse_llama_cpp,
    parse_ollama_ps,
    parse_vllm_startup,
)

MIB, GIB = 2**20, 2**30
FIX = Path(__file__).parent / "fixtures" / "engines"  # README.md there names each recording's source
# github.com/ggml-org/llama.cpp issue 7217 (2024-05-11): Yi-34B merge, i1-IQ4_XS (importance matrix), -ngl 61 -ts 1,1
LLAMA_CPP_YI_34B = """\
llm_load_tensors: offloaded 61/61 layers to GPU
llm_load_tensors:  CUDA_Host buffer size =   232.42 MiB
llm_load_tensors:      CUDA0 buffer size =  8796.98 MiB
llm_load_tensors:      CUDA1 buffer size =  8588.34 MiB
llama_new_context_with_model:  CUDA_Host  output buffer size =     0.49 MiB
"""
# github.com/ggml-org/llama.cpp issue 27680 (2026): the iSWA cache lines of a current build
LLAMA_CPP_ISWA = """\
llama_kv_cache_iswa: creating     SWA KV cache, size = 4352 cells
llama_kv_cache:      CUDA0 KV buffer size =   182.75 MiB
llama_kv_cache: size =  182.75 MiB (  4352 cells,  43 layers,  1/1 seqs), K (bf16):  91.38 MiB, V (bf16):  91.38 MiB
"""
# github.com/vllm-project/vllm issue 10517 (2024-12-02): meta-llama/Llama-3.1-8B-Instruct on an RTX 3090, V0 engine
VLLM_LLAMA31_8B = """\
Loading model weights took 14.9888 GB
Memory profiling results: total_gpu_memory=23.58GiB initial_memory_usage=15.34GiB peak_torch_memory=17.06GiB \
memory_usage_post_profile=15.35GiB non_torch_memory=0.35GiB kv_cache_size=3.81GiB gpu_memory_utilization=0.90
# GPU blocks: 1952, # CPU blocks: 2048
Maximum concurrency for 20000 tokens per request: 1.56x
"""
# github.com/mitchross/talos-argocd-proxmox pull 1995 (2026-08-16): Qwen3.8-27B-FP8, TP 2, fp8 KV cache (V1 lines)
VLLM_HYBRID = """\
GPU KV cache size: 302,921 tokens
Maximum concurrency for 131,072 tokens per request: 2.31x
"""


def test_llama_cpp_buffers_of_a_recorded_load_equal_the_planned_mix():
    """Yi-34B (60 layers, 7,168 wide, 56 heads over 8 KV heads, FFN 20,480, 64,000 tokens) as IQ4_XS with an
    importance matrix: 232.42 + 8,796.98 + 8,588.34 = 17,617.74 MiB on the three buffers; the planned mix
    (estimate.gguf_mix) gives 17,617.74 MiB, split over the two GPUs."""
    load = parse_llama_cpp(LLAMA_CPP_YI_34B)
    assert load.model_bytes == {"CUDA_Host": 232.42 * MIB, "CUDA0": 8796.98 * MIB, "CUDA1": 8588.34 * MIB}
    assert load_devices(load) == (DeviceMemory("CUDA0", 8796.98 * MIB), DeviceMemory("CUDA1", 8588.34 * MIB),
                                  DeviceMemory("Host", 232.42 * MIB))
    yi = ModelArch(id="yi-34b", name="Yi 34B", layers=60, hidden=7168, heads=56, kv_heads=8, ffn=20480, vocab=64000)
    planned = gguf_weight_bytes(yi, "iq4_xs")
    assert planned == pytest.approx(sum(load.model_bytes.values()), rel=1e-4)
    cmp = compare_llama_cpp(load, AdvisorMemory(devices=2, weights=planned / 2, kv_cache=0, overhead=0, context=4096))
    assert cmp["totals"]["engine"]["weights_bytes"] == pytest.approx(planned, rel=1e-4)
    assert cmp["lines"][0] == "llama.cpp CUDA0: weights 8,797 MiB, KV cache 0 MiB, compute 0 MiB; advisor 8,809, 0 MiB, " \
                              "overhead 0 MiB"
    assert cmp["lines"][2].startswith("llama.cpp Host: weights 232 MiB")  # the token embeddings stay in host memory
    assert cmp["differs_most"]["part"] == "weights" and abs(cmp["differs_most"]["difference_bytes"]) < 0.01 * MIB


def test_llama_cpp_kv_lines():
    load = parse_llama_cpp(LLAMA_CPP_ISWA)
    assert load.kv_bytes == {"CUDA0": 182.75 * MIB}
    assert load.kv_caches == ((182.75 * MIB, 4352, 43),)
    cmp = compare_llama_cpp(load, AdvisorMemory(devices=1, weights=0, kv_cache=200 * MIB, overhead=0, context=4352))
    assert cmp["differs_most"]["part"] == "kv_cache" and cmp["differs_most"]["device"] == "CUDA0"
    assert cmp["lines"][-1] == "the part that differs most: KV cache, advisor 200 MiB against llama.cpp 183 MiB in " \
                               "all (+9.4 %), most on CUDA0"


def test_memory_breakdown_of_qwen3_30b_a3b_on_a_4090():
    """llama.cpp tools/fit-params/README.md: Qwen3-30B-A3B F16 at 4,096 tokens on one RTX 4090, 34 layers' experts
    kept in host memory. Its context (KV cache) is 384 MiB: 48 layers x 4 KV heads x 128 x 2 (K and V) x 2 bytes
    x 4,096 tokens = 384 MiB, and the advisor's cache for the preset is the same 384 MiB."""
    rows = parse_fit_print((FIX / "llama-breakdown-rtx4090-qwen3-30b-a3b-f16.txt").read_text())
    assert rows == (DeviceMemory("CUDA0", 17904 * MIB, 384 * MIB, 898 * MIB), DeviceMemory("Host", 58259 * MIB, 0, 12 * MIB))
    arch = bundled_catalog().model("qwen3-30b-a3b")
    assert memory.kv_cache_bytes(arch, 4096, 1, 2.0, "llama.cpp") == 48 * 4 * 128 * 2 * 2 * 4096 == 384 * MIB
    ours = AdvisorMemory(devices=1, weights=17904 * MIB, kv_cache=memory.kv_cache_bytes(arch, 4096, 1, 2.0, "llama.cpp"),
                         overhead=1024 * MIB, context=4096)
    cmp = compare_devices(rows, ours)
    assert cmp["devices"][0]["engine"]["kv_cache_bytes"] == cmp["devices"][0]["advisor"]["kv_cache_bytes"]
    # the host row holds the experts left off the GPU, which the plan on one device does not place: weights differ
    assert cmp["differs_most"] == {"part": "weights", "device": "Host", "engine_bytes": (17904 + 58259) * MIB,
                                   "advisor_bytes": 17904 * MIB, "difference_bytes": -58259 * MIB}


def test_memory_breakdown_of_a_fitted_server_log():
    """ggml-org/llama.cpp PR 25465 (2026-07-13): Qwen3.6-27B UD-Q4_K_XL on an RTX 5090, the breakdown prefixed by
    the log's level letter."""
    rows = parse_fit_print((FIX / "llama-breakdown-rtx5090-qwen36-27b.txt").read_text())
    assert rows == (DeviceMemory("CUDA0", 16386 * MIB, 1024 * MIB, 648 * MIB), DeviceMemory("Host", 682 * MIB, 0, 552 * MIB))
    assert parse_fit_print("llama_params_fit_impl: projected to use 61807 MiB\nno table here") == ()


def test_fit_printer_rows_and_what_is_not_a_row():
    text = "ggml_cuda_init: found 2 CUDA devices:\nCUDA0 4403 512 300 \nCUDA1 4198 512 300 \nHost 281 0 12 \n" \
           "build: 7437 (ec98e2002) with GNU 15.2.1\nCUDA0 1 2 3 4\n"
    rows = parse_fit_print(text)
    assert [r.device for r in rows] == ["CUDA0", "CUDA1", "Host"] and rows[0].kv_cache == 512 * MIB
    two = AdvisorMemory(devices=2, weights=4300 * MIB, kv_cache=512 * MIB, overhead=1024 * MIB, context=8192)
    cmp = compare_devices(rows, two)
    assert [d["device"] for d in cmp["devices"]] == ["CUDA0", "CUDA1", "Host"]
    assert cmp["totals"]["engine"] == {"weights_bytes": 8882 * MIB, "kv_cache_bytes": 1024 * MIB,
                                       "compute_bytes": 612 * MIB}
    # compute 612 MiB against the advisor's 2,048 MiB of overhead is the largest gap
    assert cmp["differs_most"]["part"] == "compute" and "(advisor: its overhead term)" in cmp["lines"][-1]
    one = compare_devices(rows, AdvisorMemory(devices=1, weights=8882 * MIB, kv_cache=1024 * MIB, overhead=612 * MIB,
                                              context=8192))
    assert one["notes"] == ["llama.cpp used 2 device(s), the plan 1"]


def test_vllm_v0_log_of_llama31_8b_within_ten_percent():
    """3.81 GiB of KV cache at 128 KiB a token holds 31,212 tokens (vLLM: 1,952 blocks of 16 = 31,232) and 1.56
    requests of 20,000 (vLLM: 1.56x)."""
    s = parse_vllm_startup(VLLM_LLAMA31_8B)
    assert (s.kv_tokens, s.max_model_len, s.max_concurrency) == (31232, 20000, 1.56)
    assert s.kv_cache_bytes == pytest.approx(3.81 * GIB)
    arch = bundled_catalog().model("llama-3.1-8b")
    assert memory.max_concurrency(arch, s.kv_cache_bytes, s.max_model_len) == pytest.approx(1.56, rel=0.10)
    lines = compare_vllm(s, arch)
    assert lines[0] == "vLLM concurrency at 20,000 tokens: 1.56x; advisor 1.56x (+0.0 %)"
    assert lines[1].startswith("vLLM KV cache: 31,232 tokens; advisor 31,212 (-0.1 %)")


def test_vllm_v1_lines_and_a_log_without_figures():
    s = parse_vllm_startup(VLLM_HYBRID)
    assert (s.kv_tokens, s.max_model_len, s.max_concurrency) == (302921, 131072, 2.31)
    assert compare_vllm(parse_vllm_startup("nothing here"), bundled_catalog().model("llama-3.1-8b")) == [
        "vLLM: the log gives no KV cache memory and max_model_len to compare"]




def test_ollama_ps_recordings():
    """Ollama docs/api.md's example and a reply a user pasted (nirmato/nirmato-ollama issue 13, 2025-08-07)."""
    docs = parse_ollama_ps((FIX / "ollama-ps-docs-mistral.json").read_bytes())
    assert [(m.name, m.size_bytes, m.vram_bytes, m.context) for m in docs] == [
        ("mistral:latest", 5137025024, 5137025024, None)]
    gemma = parse_ollama_ps((FIX / "ollama-ps-gemma3.json").read_bytes())
    assert [(m.name, m.size_bytes, m.vram_bytes) for m in gemma] == [("gemma3:latest", 5964735424, 5964735424)]
    hit = compare_ollama(docs, ("mistral",), 4.9 * GIB)
    assert hit["state"] == "compared" and hit["lines"][0] == (
        "Ollama mistral:latest: 4.78 GiB, 4.78 GiB of it on the GPU; advisor 4.90 GiB (+2.4 %)")
    assert compare_ollama(docs, ("llama3",), 1.0)["lines"] == [
        "Ollama: llama3 is not loaded (ollama ps lists mistral:latest)"]


def test_ollama_ps_at_the_border():
    with pytest.raises(ValueError, match="models"):
        parse_ollama_ps(b'{"nope": 1}')
    with pytest.raises(ValueError, match="Ollama /api/ps"):
        parse_ollama_ps(b'{"models": [')
    bad = [{"name": "x", "size": -1, "size_vram": 0}, 7, {"name": "y", "size": 10, "size_vram": 11},
           {"name": "z", "size": 1e300, "size_vram": 0}, {"name": "t", "size": True, "size_vram": 0}]
    assert parse_ollama_ps(json.dumps({"models": bad})) == []
    # size_vram is left out of the reply when it is 0 (ollama/ollama issue 4840); context_length since 0.9.7
    cpu = parse_ollama_ps(b'{"models": [{"name": "q:1b", "size": 800, "context_length": 4096}]}')
    assert [(m.vram_bytes, m.context) for m in cpu] == [(0, 4096)]


def test_ollama_address_as_its_client_reads_it():
    assert ollama_url({}) == "http://127.0.0.1:11434/api/ps"
    assert ollama_url({"OLLAMA_HOST": "0.0.0.0"}) == "http://127.0.0.1:11434/api/ps"
    assert ollama_url({"OLLAMA_HOST": "127.0.0.1:8080"}) == "http://127.0.0.1:8080/api/ps"
    assert ollama_url({"OLLAMA_HOST": "https://box.lan:443/"}) == "https://box.lan:443/api/ps"
    for bad in ("http://u:p@h:1", "h:notaport", "http://:80", "h:1?x=1"):
        with pytest.raises(ValueError, match="OLLAMA_HOST"):
            ollama_url({"OLLAMA_HOST": bad})


def _refused(url):
    raise ConnectionRefusedError(111, "Connection refused")


def test_absent_engines_are_one_line_each():
    rm = SimpleNamespace(source="preset", location="", name="Llama 3.1 8B")
    ours = AdvisorMemory(devices=1, weights=GIB, kv_cache=GIB, overhead=GIB, context=4096)
    check = engine_check(rm, ours, which=lambda name: None, fetch=_refused)
    assert check.lines == ["llama.cpp: not installed here, nothing to compare",
                           "Ollama: not running at http://127.0.0.1:11434, nothing to compare",
                           "vLLM: not run here; `advisor runs import` reads its start-up log (KV cache tokens and "
                           "maximum concurrency) and sets the plan's beside them"]
    assert [e["state"] for e in check.engines] == ["not-installed", "not-running", "log"]
    # llama.cpp without its fit printer is never started as a server
    older = engine_check(rm, ours, which=lambda n: "/opt/llama-server" if n == "llama-server" else None,
                         fetch=_refused)
    assert older.engines[0]["state"] == "no-fit-printer" and "not llama-fit-params" in older.lines[0]
    # installed, but the plan's model is a preset: no file to run it on
    preset = engine_check(rm, ours, which=lambda n: f"/opt/{n}", fetch=_refused, run=pytest.fail)
    assert preset.engines[0]["state"] == "no-file"
    vllm = engine_check(rm, AdvisorMemory(1, GIB, GIB, GIB, 4096, runtime="vllm"), which=lambda n: f"/opt/{n}",
                        fetch=_refused, run=pytest.fail)
    assert vllm.engines[0]["state"] == "other-runtime"


def test_engine_check_runs_the_fit_printer_with_the_plans_context_and_devices(tmp_path):
    """llama-fit-params on PATH (its recorded answer stands in for it): the command carries the plan's file,
    context, slots and devices, and the rows it prints are compared."""
    calls = []

    def run(argv, **kw):
        calls.append(argv)
        return SimpleNamespace(stdout=b"CUDA0 4403 512 300 \nCUDA1 4198 512 300 \nHost 281 0 12 \n",
                               stderr=b"llama_model_loader: loaded meta data\n", returncode=0)

    gguf = tmp_path / "m.gguf"
    rm = SimpleNamespace(source="gguf", location=str(gguf), name="m")
    ours = AdvisorMemory(devices=2, weights=4300 * MIB, kv_cache=512 * MIB, overhead=1024 * MIB, context=4096,
                         slots=2, option="owned:rtx-4090")
    check = engine_check(rm, ours, which=lambda n: f"/usr/bin/{n}", run=run, fetch=_refused)
    assert calls == [["/usr/bin/llama-fit-params", "-m", str(gguf), "-c", "8192", "-np", "2", "-ngl", "999",
                      "-ctk", "f16", "-ctv", "f16", "--fit-print", "on", "-ts", "1,1"]]
    entry = check.engines[0]
    assert entry["state"] == "compared" and entry["differs_most"]["part"] == "compute"
    assert check.lines[0] == "llama.cpp's fit printer (llama-fit-params, 8,192 tokens (2 slots of 4,096), 2 device(s)):"
    doc = check.to_json()
    assert doc["option"] == "owned:rtx-4090" and doc["engines"][0]["devices"][1]["engine"]["weights_bytes"] == 4198 * MIB
    # a fit printer that prints no rows is one line with the last thing it said
    failed = engine_check(rm, ours, which=lambda n: f"/usr/bin/{n}", fetch=_refused,
                          run=lambda argv, **kw: SimpleNamespace(stdout=b"", stderr=b"error: unknown argument: "
                                                                                     b"--fit-print\n"))
    assert failed.lines[0] == "llama.cpp: llama-fit-params printed no per-device figures (error: unknown argument: " \
                              "--fit-print)"


class _OllamaReply(BaseHTTPRequestHandler):
    body = b""

    def do_GET(self):  # noqa: N802 - the handler's name
        code, body = (200, self.body) if self.path == "/api/ps" else (404, b"{}")
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def ollama_server(monkeypatch):
    """Ollama's /api/ps served on 127.0.0.1 (a free port), OLLAMA_HOST pointing at it; set ``.body`` to answer."""
    handler = type("Reply", (_OllamaReply,), {})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    monkeypatch.setenv("OLLAMA_HOST", f"127.0.0.1:{server.server_address[1]}")
    try:
        yield handler
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_cli_plan_engine_check_with_ollama_serving_the_model(tmp_path, monkeypatch, capsys, ollama_server):
    """An Ollama model planned on this machine's GPUs while Ollama has it loaded: /api/ps (served here) gives its
    size, set beside the plan's total over its devices; llama.cpp is absent."""
    from advisor.cli import main
    from advisor.models import engines
    from tests.models.conftest import write_gguf
    from tests.models.test_gguf_and_stores import _ollama_store

    gguf = tmp_path / "w.gguf"
    write_gguf(gguf)
    root = tmp_path / "ollama"
    _ollama_store(root, "tiny", "q8", gguf.read_bytes())
    monkeypatch.setenv("OLLAMA_MODELS", str(root))
    monkeypatch.setattr(engines.shutil, "which", lambda name: None)
    ollama_server.body = json.dumps({"models": [{"name": "tiny:q8", "model": "tiny:q8", "size": 1_500_000_000,
                                                 "size_vram": 1_400_000_000, "context_length": 4096}]}).encode()
    assert main(["plan", "--model", "ollama:tiny:q8", "--workload", "inference", "--context", "4096", "--json",
                 "--engine-check", "--fake-gpu", "2x4090"]) == 0
    doc = json.loads(capsys.readouterr().out)
    check = doc["engine_check"]
    option = next(o for o in doc["options"] if o["id"] == check["option"])
    parts = option["memory_per_device_parts_bytes"]
    assert check["advisor_per_device"] == {"weights_bytes": parts["weights"], "kv_cache_bytes": parts["kv_cache"],
                                           "overhead_bytes": parts["overhead"]}
    ollama = check["engines"][1]
    assert ollama["state"] == "compared" and ollama["model"] == "tiny:q8" and ollama["context"] == 4096
    assert ollama["advisor_bytes"] == pytest.approx(parts["total"] * option["devices"])
    assert (ollama["size_bytes"], ollama["size_vram_bytes"]) == (1_500_000_000, 1_400_000_000)
    assert check["engines"][0]["state"] == "not-installed"
    # the same check in the text output
    assert main(["plan", "--model", "ollama:tiny:q8", "--workload", "inference", "--engine-check",
                 "--fake-gpu", "2x4090"]) == 0
    out = capsys.readouterr().out
    assert "engine check of tiny:q8 on owned:rtx-4090" in out and "  Ollama tiny:q8 at 4,096 tokens: 1.40 GiB" in out


def test_cli_serve_and_models_engine_check_when_no_engine_runs(monkeypatch, capsys):
    from advisor.cli import main
    from advisor.models import engines

    monkeypatch.setattr(engines.shutil, "which", lambda name: None)
    monkeypatch.setenv("OLLAMA_HOST", f"127.0.0.1:{_closed_port()}")
    assert main(["models", "llama-3.1-8b", "--engine-check", "--json", "--fake-gpu", "2x4090"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [e["state"] for e in doc["engine_check"]["engines"]] == ["not-installed", "not-running", "log"]
    # the models table's inference column is the plan at 4,096 tokens: 8 B at Q4_K_M, 128 KiB of cache a token
    assert doc["engine_check"]["context"] == 4096 and doc["engine_check"]["advisor_per_device"]["kv_cache_bytes"] == \
        4096 * 131072
    assert main(["models", "--engine-check", "--fake-gpu", "2x4090"]) == 2
    assert main(["serve", "--model", "llama-3.1-8b", "--users", "4", "--engine-check", "--json",
                 "--fake-gpu", "2x4090"]) == 0
    check = json.loads(capsys.readouterr().out)["engine_check"]
    # llama.cpp serves 4 users from 4 slots: the cache it reserves is the slots' together
    assert check["runtime"] == "llama.cpp" and check["slots"] == 4
    assert check["advisor_per_device"]["kv_cache_bytes"] == pytest.approx(
        131072 * check["context"] * 4 / check["devices"])
    assert main(["plan", "--model", "llama-3.1-8b", "--workload", "finetune", "--engine-check",
                 "--fake-gpu", "2x4090"]) == 0
    assert "engine check: no inference option in the plan" in capsys.readouterr().out


def test_fit_printer_output_at_the_border():
    """Rows past a petabyte, a thousand devices, escape sequences and a long line: bounded, never an error."""
    rows = parse_fit_print("CUDA0 999999999999 0 0\n" + "".join(f"CUDA{i} 1 1 1\n" for i in range(1, 1000))
                           + "\x1b[2JCUDA9 1 1 1\n" + "Host " + "9" * 5000 + " 0 0\n")
    assert len(rows) == 64 and rows[0].device == "CUDA1" and all(r.weights == MIB for r in rows)
    assert parse_fit_print("") == () and parse_fit_print("\n".join(["x"] * 300_000)) == ()


def test_something_else_on_ollamas_port_is_one_line(monkeypatch):
    """A server that is not Ollama on its address: a reply that is not HTTP, or HTTP that is not /api/ps."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    listener.settimeout(5)

    def answer(payloads):
        for payload in payloads:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.recv(4096)
                conn.sendall(payload)

    t = threading.Thread(target=answer, args=([b"SSH-2.0-OpenSSH_9.6\r\n\r\n",
                                               b"HTTP/1.0 200 OK\r\nContent-Length: 9\r\n\r\nnot json!"],), daemon=True)
    t.start()
    monkeypatch.setenv("OLLAMA_HOST", f"127.0.0.1:{listener.getsockname()[1]}")
    ours = AdvisorMemory(devices=1, weights=GIB, kv_cache=GIB, overhead=GIB, context=4096)
    try:
        first = engine_check(None, ours, which=lambda n: None).engines[1]
        second = engine_check(None, ours, which=lambda n: None).engines[1]
    finally:
        t.join(5)
        listener.close()
    assert first["state"] == "not-running"
    assert second["state"] == "bad-reply" and second["lines"][0].startswith("Ollama /api/ps:")


def test_ollama_names_find_the_plans_preset():
    """Issue 36: a plan of a preset finds the model in Ollama's /api/ps under its Ollama library name (declared once,
    ``ollama`` in resources/models.toml). The recorded replies: gemma3:latest is Gemma 3 4B (ollama.com/library/gemma3,
    "4b" the latest tag; the reply's parameter_size 4.3B with the vision encoder), mistral:latest Mistral 7B."""
    from advisor.catalog.load import bundled_catalog
    from advisor.models import resolve_model
    from advisor.models.engines import ollama_presets, preset_ollama_names

    cat = bundled_catalog()
    names = ollama_presets(cat.models)  # one preset per name, or ValueError
    assert names["llama3.1:8b"] == "llama-3.1-8b" and names["qwen3:30b-a3b"] == "qwen3-30b-a3b"
    assert names["gemma3"] == "gemma-3-4b" and names["gemma3n:e4b"] == "gemma-3n-e4b"
    ours = AdvisorMemory(devices=1, weights=3.2 * GIB, kv_cache=0.5 * GIB, overhead=1.0 * GIB, context=4096)
    for preset, fixture, loaded in (("gemma-3-4b", "ollama-ps-gemma3.json", "gemma3:latest"),
                                    ("mistral-7b", "ollama-ps-docs-mistral.json", "mistral:latest")):
        body = (FIX / fixture).read_bytes()
        check = engine_check(resolve_model(preset, cat), ours, spec=preset, which=lambda n: None,
                             fetch=lambda url, body=body: body)
        ollama = check.engines[1]
        assert (ollama["state"], ollama["model"]) == ("compared", loaded)
        assert ollama["advisor_bytes"] == pytest.approx(4.7 * GIB)
    # a preset without Ollama names, and a model that is not a preset, look for their own names alone
    check = engine_check(resolve_model("gpt2", cat), ours, spec="gpt2", which=lambda n: None,
                         fetch=lambda url: (FIX / "ollama-ps-gemma3.json").read_bytes())
    assert check.engines[1]["state"] == "not-loaded"
    assert preset_ollama_names(types_arch(["gemma3:4b", "../x", "UPPER:1b", 7])) == ("gemma3:4b",)
    with pytest.raises(ValueError, match="listed by presets"):
        ollama_presets({"a": types_arch(["x:1b"]), "b": types_arch(["x:1b"])})


def types_arch(names):
    from types import SimpleNamespace

    return SimpleNamespace(extra={"ollama": names})
