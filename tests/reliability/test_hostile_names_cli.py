"""Every command that prints a name from outside prints it as inert text (issue: hostile names).

The names (``tests.hostile``) reach the commands through their real sources: the fake GPU scenario
``hostile-names`` (GPU names, driver version, other users' command lines), model stores and a GGUF file, the
user catalog and a fleet file. Each command must exit 0, print no raw ESC, BEL, NUL or bidi override, and show
rich markup literally.
"""

from __future__ import annotations

import csv
import json
import os
import pty
import select
import subprocess
import sys
import time

import pytest

from advisor.cli import main
from tests.hostile import MARKUP, SHORT, inert, plant_everywhere
from tests.reliability.conftest import ROOT


@pytest.fixture
def hostile(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")  # rich fits tables to this: the command column is shown whole
    return plant_everywhere(tmp_path)


def _run(capsys, *argv) -> str:
    code = main([*argv])
    out, err = capsys.readouterr()
    assert code == 0, (argv, err[-2000:])
    assert inert(out) and inert(err), (argv, [c for c in out + err if c in "\x1b\x07\x00\u202e"][:5])
    return out


def test_monitor_once_piped_shows_markup_and_escapes_as_text(capsys, hostile):
    out = _run(capsys, "monitor", "--once", "--fake-gpu", "hostile-names")
    for text in MARKUP:  # was: "internal error: MarkupError", and a clickable link
        assert text in out
    assert "\\x1b]0;pwned\\x07" in out and "\\x1b[2J" in out and "\\u202eevil" in out and "nul\\x00byte" in out
    assert '<img src="/dev/zero">' in out and "bad\ufffd\ufffdutf8" in out
    assert max(len(line) for line in out.splitlines()) < 10_000  # the 100 kB name is cut


def test_detect_models_plan_and_buy_print_names_inert(capsys, hostile):
    out = _run(capsys, "detect", "--no-frameworks", "--fake-gpu", "hostile-names")
    assert "[/data/shards] [link=file:///etc/passwd]x[/link] \\x1b]0;pwned\\x07" in out and "…" in out
    out = _run(capsys, "models", "--fake-gpu", "hostile-names")
    assert "[link=file:" in out and "\\x1b[2J" in out and "pub4/<img src=\"/dev/zero\">/model.gguf" in out
    assert "<font size=7>big \\x1b]0;pwned\\x07" in out and "<img src=x>\\x1b[2J:latest" in out
    out = _run(capsys, "models", str(hostile["gguf"]))
    out = _run(capsys, "plan", "--model", str(hostile["gguf"]), "--fake-gpu", "hostile-names", "--workload",
               "inference", "--all")
    assert "Plan: [/data/shards] [link=file:///etc/passwd]x[/link] \\x1b]0;pwned" in out
    # the hostile accelerator's vendor names no known software stack, so its rows rank after every row that runs
    # the jobs' stack: --top wide enough to show them
    out = _run(capsys, "buy", "--budget", "5000", "--fake-gpu", "hostile-names", "--top", "1000")
    assert "[link=file:///etc/passwd]x[/link] \\x1b]0" in out  # the user catalog's hostile accelerator, cut


def test_catalog_commands_print_price_list_fields_inert(capsys, hostile, tmp_path):
    out = _run(capsys, "catalog", "list", "offers")
    assert "[/data/shards] [link=file:///etc/passwd]x[/link]" in out
    out = _run(capsys, "catalog", "show", "hostile-gpu")
    assert "\\x1b[2J" in out and "\\u202eevil" in out
    notes = " ".join(SHORT[:7])  # what a downloaded price list (check-updates) or an imported one can say
    prices = tmp_path / "prices.csv"
    with prices.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["id", "provider", "instance", "accelerator_id", "accelerator_count", "on_demand_usd_per_hour",
                    "region", "notes"])
        w.writerow(["acme:g1", "Acme", "g1", "h100-sxm", 1, 2.5, SHORT[2] + SHORT[3], notes])
    out = _run(capsys, "catalog", "import", str(prices), "--apply")
    assert "acme:g1" in out
    out = _run(capsys, "catalog", "show", "acme:g1")
    assert "\\x1b]0;pwned\\x07\\x1b[2J" in out and "[link=file:///etc/passwd]x[/link]" in out
    prices.write_text(prices.read_text(encoding="utf-8").replace("2.5", "2.75"), encoding="utf-8")
    out = _run(capsys, "catalog", "import", str(prices), "--replace")
    assert "acme:g1" in out


def test_fleet_host_names_print_inert(capsys, hostile, tmp_path):
    assert main(["detect", "--json", "--no-frameworks", "--fake-gpu", "hostile-names"]) == 0
    doc = json.loads(capsys.readouterr().out)
    doc["host"]["hostname"] = " ".join(SHORT)
    doc["machine_id"] = "hostile-node"
    path = tmp_path / "node.json"
    path.write_text(json.dumps(doc))
    _run(capsys, "fleet", "import", str(path))
    out = _run(capsys, "fleet", "show")
    assert "[/data/shards] [link=file:///etc/passwd]x[/link] \\x1b]0;pwned\\x07" in out


def test_probe_result_lines_print_inert(capsys):
    from types import SimpleNamespace

    from advisor.commands.probe import _print_result

    r = SimpleNamespace(skipped=None, probe="matmul", device=SHORT[2], duration_s=1.0, results={}, peak=None, params={},
                        details={"unsupported": {"fp8": SHORT[3]}}, notes=list(SHORT))
    _print_result(r)
    out = capsys.readouterr().out
    assert inert(out) and "[link=file:///etc/passwd]x[/link]" in out and "\\x1b]0;pwned\\x07" in out


def _on_a_terminal(home, *args) -> str:
    """The output of ``advisor ARGS`` run on a pseudo-terminal (rich draws its terminal views there)."""
    master, slave = pty.openpty()
    env = {**os.environ, "ADVISOR_HOME": str(home), "PYTHONPATH": str(ROOT), "COLUMNS": "400", "LINES": "60",
           "TERM": "xterm-256color"}
    proc = subprocess.Popen([sys.executable, "-m", "advisor", *args], stdout=slave, stderr=slave,
                            stdin=subprocess.DEVNULL, env=env, cwd=ROOT)
    os.close(slave)
    chunks, deadline = [], time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    os.close(master)
    assert proc.wait(timeout=30) == 0, b"".join(chunks)[-2000:]
    return b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.parametrize("args", [("--once",), ("--duration", "1.5")], ids=["once", "live"])
def test_monitor_on_a_terminal_shows_names_inert(advisor_home, args):
    """The rich views (``--once`` and the refreshing one): they ended in MarkupError on '[/data/shards]'."""
    out = _on_a_terminal(advisor_home, "monitor", "--fake-gpu", "hostile-names", *args)
    assert "internal error" not in out and "[/data/shards]" in out
    # rich's own colour and cursor codes are CSI sequences; no window title (OSC), bell, NUL or clear screen
    assert "\x1b]" not in out and "\x07" not in out and "\x00" not in out and "\x1b[2J" not in out
    assert "\\x1b]0;pwned\\x07" in out
