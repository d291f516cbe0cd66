"""``advisor models hf:ORG/REPO[:QUANT] --fetch-header``: a model sized from its file headers by HTTP range
requests, against a local server that answers as the Hub does (the tree API, ``resolve`` with ranges).

The GGUF headers served are built byte by byte (tests/models/gguf_bytes.py) with a 151,936-token vocabulary,
as Qwen2.5's files carry, so the header is larger than the first range and the reader has to ask again; the
weights behind them are never served (the listing gives the files' full sizes, as the Hub does).
"""

from __future__ import annotations

import json
import socket
import struct
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from advisor.models import ModelSpecError
from advisor.models.remote import FIRST_BYTES, fetch_header_model, quant_of
from tests.models import configs
from tests.models.gguf_bytes import ARRAY, STRING, U32, gguf_bytes


@pytest.fixture(autouse=True)
def _online(monkeypatch):
    """huggingface_hub reads HF_HUB_OFFLINE once, when first imported: a test before these (one that sets it to
    make a connection attempt fail) must not leave this process offline; the server here is local."""
    import huggingface_hub.constants

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)

VOCAB = 151_936


def _qwen_gguf(ftype: int, parts: int = 1, part: int = 1) -> bytes:
    kv = [("general.architecture", STRING, "qwen2"), ("general.name", STRING, "Qwen2.5 0.5B"),
          ("general.file_type", U32, ftype), ("qwen2.block_count", U32, 24), ("qwen2.embedding_length", U32, 896),
          ("qwen2.attention.head_count", U32, 14), ("qwen2.attention.head_count_kv", U32, 2),
          ("qwen2.feed_forward_length", U32, 4864), ("qwen2.context_length", U32, 32768),
          ("tokenizer.ggml.tokens", ARRAY, (STRING, [f"token{i}" for i in range(VOCAB)]))]
    tensors = [(f"blk.{part}.attn_norm.weight", (896,)), (f"blk.{part}.ffn_norm.weight", (896,))]
    return gguf_bytes(kv, tensors)


class Hub:
    """Files of repositories served under /api/models/ORG/NAME/tree/main and /ORG/NAME/resolve/main/FILE; a
    file may be listed with a larger size than the bytes served (only its header exists here)."""

    def __init__(self):
        self.files: dict[str, dict[str, tuple[bytes, int]]] = {}
        self.ranges: list[tuple[str, str]] = []
        self.served = 0

    def add(self, repo, name, data, size=None):
        self.files.setdefault(repo, {})[name] = (data, size or len(data))


@pytest.fixture
def hub():
    state = Hub()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_GET(self):
            path = self.path.split("?", 1)[0]
            if path.startswith("/api/models/") and "/tree/" in path:
                repo = path[len("/api/models/"):].split("/tree/", 1)[0]
                if repo not in state.files:
                    return self._send(404, b'{"error": "Repository not found"}')
                listing = [{"type": "file", "path": n, "size": size, "oid": "0" * 40}
                           for n, (_d, size) in state.files[repo].items()]
                return self._send(200, json.dumps(listing).encode(), "application/json")
            if "/resolve/" in path:
                repo, rest = path.lstrip("/").split("/resolve/", 1)
                name = rest.split("/", 1)[1]
                data, size = state.files.get(repo, {}).get(name, (None, 0))
                if data is None:
                    return self._send(404, b"not found")
                rng = self.headers.get("Range") or self.headers.get("range")
                if not rng:
                    return self._send(200, data)
                state.ranges.append((name, rng))
                start, end = (int(x) for x in rng.split("=", 1)[1].split("-"))
                body = data[start:end + 1]
                state.served += len(body)
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{start + len(body) - 1}/{size}")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return None
            return self._send(404, b"no route")

        def _send(self, code, body, ctype="application/octet-stream"):
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    yield state
    server.shutdown()
    server.server_close()


def test_quant_names_from_file_names():
    assert quant_of("Qwen2.5-7B-Instruct-Q4_K_M.gguf") == "Q4_K_M"
    assert quant_of("q4_k_m/Qwen2.5-72B-Instruct-Q4_K_M-00001-of-00002.gguf") == "Q4_K_M"
    assert quant_of("gpt-oss-20b-mxfp4.gguf") == "MXFP4"
    assert quant_of("model-IQ4_XS.gguf") == "IQ4_XS"
    assert quant_of("notes.gguf") == ""


def test_gguf_header_by_growing_range_requests(hub):
    data = _qwen_gguf(15)
    full = len(data) + 400_000_000  # the weights a real Q4_K_M file carries after its header
    hub.add("Qwen/Qwen2.5-0.5B-Instruct-GGUF", "qwen2.5-0.5b-instruct-q4_k_m.gguf", data, full)
    hub.add("Qwen/Qwen2.5-0.5B-Instruct-GGUF", "qwen2.5-0.5b-instruct-q8_0.gguf", _qwen_gguf(7), full)
    hub.add("Qwen/Qwen2.5-0.5B-Instruct-GGUF", "mmproj-F16.gguf", b"GGUF", 600_000_000)
    rm = fetch_header_model("Qwen/Qwen2.5-0.5B-Instruct-GGUF:Q4_K_M", endpoint=hub.endpoint)
    assert rm.source == "hf-header" and rm.quant == "Q4_K_M"
    assert (rm.arch.layers, rm.arch.hidden, rm.arch.vocab, rm.arch.kv_heads) == (24, 896, VOCAB, 2)
    assert rm.weight_bytes == 2 * 896 * 4  # the tensors this header lists (two F32 norms)
    assert len(data) > FIRST_BYTES  # the vocabulary pushes the table past the first range
    assert [r for _n, r in hub.ranges] == [f"bytes=0-{FIRST_BYTES - 1}", f"bytes={FIRST_BYTES}-{4 * FIRST_BYTES - 1}"]
    assert hub.served < 4 * FIRST_BYTES  # a few MiB, not the file
    assert any("mmproj-F16.gguf" in n for n in rm.notes)


def test_split_gguf_reads_every_part(hub):
    repo = "org/Big-GGUF"
    for i in (1, 2):
        hub.add(repo, f"Q4_K_M/Big-Q4_K_M-0000{i}-of-00002.gguf", _qwen_gguf(15, 2, i), 10**9)
    rm = fetch_header_model(f"{repo}:q4_k_m", endpoint=hub.endpoint)
    assert rm.weight_bytes == 2 * 2 * 896 * 4
    assert {n for n, _r in hub.ranges} == {f"Q4_K_M/Big-Q4_K_M-0000{i}-of-00002.gguf" for i in (1, 2)}


def test_choosing_a_quant_and_bad_answers_are_one_line(hub):
    repo = "org/Two-GGUF"
    hub.add(repo, "m-Q4_K_M.gguf", _qwen_gguf(15), 10**9)
    hub.add(repo, "m-Q8_0.gguf", _qwen_gguf(7), 10**9)
    with pytest.raises(ModelSpecError, match=r"several GGUF files; name one as hf:org/Two-GGUF:QUANT, one of Q4_K_M, Q8_0"):
        fetch_header_model(repo, endpoint=hub.endpoint)
    with pytest.raises(ModelSpecError, match="no GGUF file of Q2_K"):
        fetch_header_model(f"{repo}:Q2_K", endpoint=hub.endpoint)
    with pytest.raises(ModelSpecError, match="reading the file headers failed"):
        fetch_header_model("org/missing", endpoint=hub.endpoint)
    hub.add("org/junk", "x-Q4_K_M.gguf", b"not gguf at all" * 10, 10**6)
    with pytest.raises(ModelSpecError, match="not a GGUF file"):
        fetch_header_model("org/junk", endpoint=hub.endpoint)


def _safetensors(tensors: dict[str, tuple[str, list[int]]]) -> bytes:
    width = {"BF16": 2, "F32": 4, "I32": 4}
    table, offset = {}, 0
    for name, (dtype, shape) in tensors.items():
        n = width[dtype]
        for d in shape:
            n *= d
        table[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    head = json.dumps(table).encode()
    return struct.pack("<Q", len(head)) + head + b"\0" * offset


def test_safetensors_headers_through_huggingface_hub(hub):
    repo = "Qwen/Qwen2.5-7B"
    hub.add(repo, "config.json", json.dumps(configs.QWEN25_7B).encode())
    shards = {"model-00001-of-00002.safetensors": {"a": ("BF16", [3584, 1000])},
              "model-00002-of-00002.safetensors": {"b": ("BF16", [1000]), "c": ("F32", [10, 10])}}
    for name, t in shards.items():
        hub.add(repo, name, _safetensors(t))
    index = {"metadata": {"total_size": 1}, "weight_map": {"a": "model-00001-of-00002.safetensors",
                                                          "b": "model-00002-of-00002.safetensors",
                                                          "c": "model-00002-of-00002.safetensors"}}
    hub.add(repo, "model.safetensors.index.json", json.dumps(index).encode())
    rm = fetch_header_model(repo, endpoint=hub.endpoint)
    assert rm.params_exact == 3584 * 1000 + 1000 + 100
    assert rm.weight_bytes == 2 * 3584 * 1000 + 2 * 1000 + 400
    assert rm.arch.layers == 28 and rm.quant == "bf16"


def test_nothing_on_the_network_without_the_flag(monkeypatch, capsys, hf_cache):
    """`advisor models hf:ORG/REPO` (no flag) reads the cache only; the flag without hf: is a usage error."""
    from advisor.cli import main

    def refuse(*a, **k):
        raise AssertionError("a connection was opened")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    assert main(["models", "hf:Qwen/Qwen2.5-7B", "--fake-gpu", "2x4090"]) == 2
    assert "not in the Hugging Face cache" in capsys.readouterr().err
    assert main(["models", "llama-3-8b", "--fetch-header", "--fake-gpu", "2x4090"]) == 2
    assert "hf:ORG/REPO" in capsys.readouterr().err


def test_cli_fetch_header_json(hub, monkeypatch, capsys):
    from advisor.cli import main

    monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
    hub.add("Qwen/Qwen2.5-0.5B-Instruct-GGUF", "qwen2.5-0.5b-instruct-q4_k_m.gguf", _qwen_gguf(15), 10**9)
    code = main(["models", "hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF", "--fetch-header", "--json", "--fake-gpu", "2x4090"])
    out = capsys.readouterr()
    assert code == 0, out.err
    doc = json.loads(out.out)
    assert doc["models"][0]["model"]["source"] == "hf-header"
    assert doc["models"][0]["model"]["quant"] == "Q4_K_M"


def test_hub_listing_gives_the_projector_size(hub):
    """unsloth/gemma-3-27b-it-GGUF lists mmproj-BF16.gguf, mmproj-F16.gguf and mmproj-F32.gguf beside the weights;
    the 16-bit one is counted by its listed size (a recorded header serves the model)."""
    repo = "org/Vision-GGUF"
    hub.add(repo, "vision-Q4_K_M.gguf", _qwen_gguf(15), 400_000_000)
    hub.add(repo, "mmproj-F32.gguf", b"GGUF", 1_700_000_000)
    hub.add(repo, "mmproj-F16.gguf", b"GGUF", 850_000_000)
    rm = fetch_header_model(f"{repo}:Q4_K_M", endpoint=hub.endpoint)
    assert rm.projector_bytes == 850_000_000 and rm.projector == f"hf:{repo}/mmproj-F16.gguf"
    assert rm.loaded_bytes == rm.weight_bytes + 850_000_000
