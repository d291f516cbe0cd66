"""1,000 fuzzed inputs of each kind read at the border (issue 28): config.json files, safetensors headers,
Ollama manifests and node replies. Seeded mutations of real documents (values swapped for NaN, 1e999,
5000-digit numbers, negative or huge counts, strings, deep nesting, bytes that are not UTF-8; keys dropped;
documents cut short). Every one is read without an internal error or a hang: a good result or one line; and
the good entries beside a bad one are still listed or imported."""

from __future__ import annotations

import json
import random
import re
import struct

from advisor.catalog.readfile import BadJson, parse_json
from advisor.models import ModelSpecError
from advisor.models.hf import arch_from_config, resolve_config_file, safetensors_header
from advisor.models.stores import discover_models, ollama_models
from advisor.store import fleet as fl
from tests.models import configs
from tests.store.test_fleet import H100, detect_doc

N = 1000
HOSTILE_TEXT = ["NaN", "-Infinity", "1e999", "-1e999", "9" * 5000, "-" + "9" * 400, "1e308", "-1", "0", "1e18",
                "0.5", "true", "null", '"12"', '"\\u001b]0;x\\u0007"', "[]", "{}", "[" * 60 + "]" * 60,
                '"' + "A" * 100_000 + '"', "18446744073709551617"]

COLON, VALUE_END = re.compile(":"), re.compile("[,}\\]]")


def _mutate(doc_text: str, rng: random.Random) -> bytes:
    """Swap values of ``doc_text`` (a JSON text) for hostile ones, or cut it, or break its encoding."""
    text = doc_text
    for _ in range(rng.randint(1, 4)):
        pick = rng.random()
        if pick < 0.6:  # a number or string value replaced by a hostile token
            spots = [m.end() for m in COLON.finditer(text)]
            if not spots:
                break
            i = rng.choice(spots)
            end = VALUE_END.search(text, i)
            text = text[:i] + " " + rng.choice(HOSTILE_TEXT) + text[end.start() if end else len(text):]
        elif pick < 0.75:  # a key renamed (dropped, for the reader)
            text = text.replace('"', '"x', 1 + rng.randrange(3))
        elif pick < 0.9:  # cut short
            text = text[: rng.randrange(len(text) + 1)]
        else:
            break
    raw = text.encode("utf-8", "replace")
    if rng.random() < 0.1:
        k = rng.randrange(len(raw) + 1)
        raw = raw[:k] + bytes([rng.choice((0xFF, 0xFE, 0xC3, 0x80))]) + raw[k:]
    return raw


def test_fuzzed_configs_are_a_model_or_one_line(tmp_path):
    rng = random.Random(28)
    bases = [json.dumps(c) for c in (configs.LLAMA31_8B, configs.QWEN25_7B, configs.QWEN3_30B_A3B)]
    path = tmp_path / "config.json"
    ok = 0
    for i in range(N):
        raw = _mutate(rng.choice(bases), rng)
        try:
            if i % 10 == 0:  # every tenth through the file reader as well
                path.write_bytes(raw)
                a = resolve_config_file(path).arch
            else:
                try:
                    cfg = parse_json(raw)
                except BadJson:
                    continue
                a = arch_from_config(cfg, "m", "m")
        except ModelSpecError as exc:
            assert "\n" not in str(exc)
            continue
        ok += 1
        assert 1 <= a.layers <= 10_000 and 1 <= a.hidden <= 1_000_000 and 1 <= a.vocab <= 10_000_000
    assert 0 < ok < N  # some mutations leave a readable model, most do not


def test_fuzzed_safetensors_headers_are_counts_or_one_line(tmp_path):
    rng = random.Random(29)
    header = json.dumps({"__metadata__": {"format": "pt"},
                         "w": {"dtype": "F32", "shape": [4, 8], "data_offsets": [0, 128]},
                         "b": {"dtype": "F16", "shape": [8], "data_offsets": [128, 144]}})
    path = tmp_path / "model.safetensors"
    for _ in range(N):
        raw = _mutate(header, rng)
        n = len(raw) if rng.random() < 0.9 else rng.choice((0, 7, 2**63, len(raw) + 5))
        path.write_bytes(struct.pack("<Q", n) + raw + b"\0" * 144)
        try:
            params, nbytes = safetensors_header(path)
        except ModelSpecError as exc:
            assert "\n" not in str(exc)
            continue
        assert 0 <= params <= 1e15 and 0 <= nbytes <= 144


def test_fuzzed_ollama_manifests_leave_the_good_model_listed(tmp_path):
    from tests.models.gguf_bytes import gguf_bytes, llama_kv
    from tests.models.test_gguf_and_stores import _ollama_store

    rng = random.Random(30)
    root = tmp_path / "ollama"
    _ollama_store(root, "good", "latest", gguf_bytes(llama_kv()))
    base = (root / "manifests" / "registry.ollama.ai" / "library" / "good" / "latest").read_text()
    bad = root / "manifests" / "registry.ollama.ai" / "library" / "fuzz"
    bad.mkdir(parents=True)
    for i in range(N):
        (bad / f"t{i % 50}").write_bytes(_mutate(base, rng))
        if i % 100 == 99:  # 50 fuzzed manifests beside the good one: listed, each bad one a row with its reason
            problems: list = []
            names = [n for n, _b, _s in ollama_models(root, problems)]
            assert "good:latest" in names and len(names) + len(problems) == 51
            assert all("\n" not in str(exc) for _n, _m, exc in problems)
    found = discover_models(hf_cache=tmp_path / "hf", ollama_root=root, lmstudio=[])
    good = next(f for f in found if f.name == "good:latest")
    assert good.model is not None and good.model.arch.layers == 2


def test_fuzzed_node_replies_leave_the_good_nodes_imported():
    rng = random.Random(31)
    base = json.dumps(detect_doc("fuzz", [H100] * 2))
    good = json.dumps(detect_doc("good", [H100] * 8))
    refused = 0
    for i in range(N):
        reply = good.encode() + b"\n" + _mutate(base, rng) + b"\n" + good.replace('"good"', '"good2"').replace(
            "m-good", "m-good2").encode()
        try:
            machines, failures = fl.machines_from_text(reply, f"node{i}")
        except fl.FleetError:
            raise AssertionError("a reply with good documents was refused whole") from None
        hosts = [m.hostname for m in machines]
        assert "good" in hosts and "good2" in hosts, (reply[:300], failures)
        assert all("\n" not in f for f in failures)
        refused += bool(failures)
        for m in machines:
            assert 0 < m.memory_total_bytes <= fl.MAX_HOST_MEMORY_BYTES and len(m.gpus) <= 16384
    assert refused > N // 4
