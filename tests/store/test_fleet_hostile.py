"""A broken or hostile node costs one line, never the collection (issue 28): replies that are not UTF-8,
nested 10,000 deep, holding 5000-digit numbers, negative memory, 100,000 GPUs, 200 MB, or a catalog id with a
newline; the advisor's own detect documents always import; hosts and fleet files that are FIFOs or /dev/zero
are refused without hanging."""

from __future__ import annotations

import json
import os
import subprocess
import threading

import pytest

from advisor.cli import main
from advisor.store import fleet as fl
from advisor.store import fleet_collect as fc
from tests.store.test_fleet import H100, detect_doc

HOSTILE = {
    "notutf8": json.dumps(detect_doc("notutf8", [H100])).encode().replace(b"EPYC", b"EP\xff\xfeYC"),
    "nested": b'{"schema": "advisor.detect/1", "gpus": ' + b"[" * 10_000 + b"]" * 10_000 + b"}",
    "digits": json.dumps(detect_doc("digits", [H100])).replace('"logical_cores": 128',
                                                               '"logical_cores": ' + "7" * 5000).encode(),
    "negative": json.dumps({**detect_doc("negative", [H100]), "memory": {"total_bytes": -2**40}}).encode(),
    "many": json.dumps({**detect_doc("many", []), "gpus": [{}] * 100_000}).encode(),
    "huge": b" " * (200 * 2**20) + json.dumps(detect_doc("huge", [H100])).encode(),
    "pwned": json.dumps(detect_doc("pwned", [("H100", "x\ntouch pwned #")])).encode(),
    "garbage": b"\x00\x01 not json at all",
}
WHY = {"nested": "nested deeper", "digits": "logical_cores", "negative": "total_bytes", "many": "100000 GPUs",
       "huge": "MiB", "pwned": "catalog_id", "garbage": "not valid JSON"}


def _runner(replies: dict[str, bytes]):
    def run(cmd, **kw):
        assert "text" not in kw  # a reply is read as bytes and decoded with replacement
        host = cmd[cmd.index("--") + 1]
        return subprocess.CompletedProcess(cmd, 0, replies[host], b"")
    return run


def test_each_bad_node_is_one_line_and_the_others_import(capsys):
    """Before: the non-UTF-8, nested and 5000-digit replies ended the collection with an internal error and
    imported nothing; negative memory, 100,000 GPUs, 200 MB and the newline catalog id were imported."""
    good = {f"good{i}": json.dumps(detect_doc(f"good{i}", [H100] * 8)).encode() for i in range(2)}
    good["good1"] = json.dumps(detect_doc("good1", [H100] * 7 + [("Future GPU", "not-in-this-catalog")])).encode()
    replies = {**HOSTILE, **good}
    result = fc.collect_hosts(list(replies), run=_runner(replies))
    names = sorted(m.hostname for m in result.machines)
    assert names == ["good0", "good1", "notutf8"]  # a bad byte is replaced, the document is fine
    assert "EP\ufffd\ufffdYC" in next(m.cpu_model for m in result.machines if m.hostname == "notutf8")
    assert len(result.failures) == len(WHY)
    for host, why in WHY.items():
        line = next(f for f in result.failures if f.startswith(host))
        assert why in line and "\n" not in line and len(line) < 300, line
    fl.import_machines(result.machines)
    # plan --fleet keeps working: the fleet holds only good machines
    assert main(["plan", "--model", "llama-3.1-8b", "--workload", "lora", "--fleet", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["options"] and all(o["accelerator"] == "h100-sxm" for o in doc["options"])


def test_srun_stream_with_a_broken_node_keeps_the_rest(monkeypatch):
    docs = [json.dumps(detect_doc(f"n{i}", [H100] * 8)) for i in range(3)]
    stream = (docs[0] + "\n" + '{"schema": "advisor.detect/1", "gpus": [' + "\n" + docs[1] + "\n"
              + docs[2].replace("h100-sxm", "bad id!") + "\n").encode()

    def run(cmd, **kw):
        return subprocess.CompletedProcess(cmd, 0, stream, b"")

    result, nodes = fc.collect_slurm(nodes=["n0", "n1", "n2"], run=run)
    assert sorted(m.hostname for m in result.machines) == ["n0", "n1"]
    assert any("not valid JSON" in f for f in result.failures) and any("catalog_id" in f for f in result.failures)


@pytest.mark.parametrize("scenario", ["laptop-4060", "2x4090", "no-driver", "gpu-lost", "not-supported"])
def test_the_advisors_own_detect_documents_always_import(tmp_path, scenario, capsys):
    """Before: a laptop GPU asleep (memory not read, null) was refused, and with it every document of the file."""
    assert main(["detect", "--json", "--no-frameworks", "--fake-gpu", scenario]) == 0
    out = capsys.readouterr().out.encode()
    path = tmp_path / f"{scenario}.json"
    path.write_bytes(out + json.dumps(detect_doc("other", [H100])).encode())
    assert main(["fleet", "import", str(path)]) == 0
    assert "warning" not in capsys.readouterr().err
    fleet = fl.load_fleet()
    assert len(fleet.machines) == 2
    if scenario == "laptop-4060":
        gpu = next(m for m in fleet.machines if m.hostname != "other").gpus[0]
        assert gpu.memory_total_bytes is None and gpu.catalog_id == "rtx-4060-laptop"
        assert main(["fleet", "show"]) == 0 and "memory not read" in capsys.readouterr().out


def _ends_within(fn, seconds: float):
    out = {}

    def target():
        try:
            out["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - the test inspects it
            out["error"] = exc

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), "the reader hung"
    return out


def test_fifo_and_dev_zero_hosts_and_fleet_files(tmp_path):
    """Before: read_hosts_file and load_fleet used read_text/read_bytes: a FIFO blocked forever, /dev/zero
    grew until memory ran out."""
    fifo = tmp_path / "hosts.fifo"
    os.mkfifo(fifo)
    out = _ends_within(lambda: fc.read_hosts_file(fifo), 5)
    assert isinstance(out.get("error"), fl.FleetError) and "FIFO" in str(out["error"])
    out = _ends_within(lambda: fc.read_hosts_file("/dev/zero"), 5)
    assert isinstance(out.get("error"), fl.FleetError) and "not a regular file" in str(out["error"])
    out = _ends_within(lambda: fl.load_fleet(fifo), 5)
    assert isinstance(out.get("error"), fl.FleetError) and "FIFO" in str(out["error"])
    out = _ends_within(lambda: fl.import_detect_files([fifo, "/dev/zero"]), 5)
    assert isinstance(out.get("error"), fl.FleetError) and "not a regular file" in str(out["error"])


def test_an_endless_reply_is_cut_at_the_limit_without_filling_memory():
    """The default runner keeps at most the limit of a node's reply and stops the command (before: all of it
    was captured, 200 MB and more, and imported)."""
    import sys
    import time

    endless = [sys.executable, "-c", "import sys\nwhile True: sys.stdout.buffer.write(b'x' * 65536)"]
    start = time.monotonic()
    proc = fc.bounded_run(endless, timeout=30, max_bytes=2**20)
    assert time.monotonic() - start < 10
    assert 2**20 < len(proc.stdout) <= 2**20 + 2**16 and proc.returncode != 0
    with pytest.raises(fl.FleetError, match="over the limit of 4 MiB"):
        fc._machines("x" * (fc.MAX_REPLY_BYTES + 1), "node9", "")
