"""'What to change to fit' lists only changes that fit, each with the time and the cost it makes (issue 28).
Before: five of the seven rows for Llama 3.1 8B full fine-tuning on an RTX 4090 were marked NO."""

from __future__ import annotations

import json
import re

from advisor.cli import main

FLAGS = ["plan", "--model", "llama-3.1-8b", "--workload", "finetune", "--fake-gpu", "2x4090"]


def test_only_changes_that_fit_each_with_time_and_cost(capsys):
    assert main(FLAGS) == 0
    out = capsys.readouterr().out
    block = out.split("What to change to fit", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    assert len(block) == 2 and all(" NO " not in line for line in block)
    for line in block:
        assert re.search(r"\d+(\.\d+)? h", line) and re.search(r"\$\d+\.\d\d \([+-]\$\d+\.\d\d\)", line), line
    assert main([*FLAGS, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    fitting = [a for a in doc["fit_advice"] if a["fits"]]
    assert fitting and all(a["cost_usd"] > 0 and a["cost_added_usd"] is not None for a in fitting)
    lora = next(a for a in fitting if a["change"] == {"workload": "lora"})
    # the cost added is the re-planned job's cost minus the job as given on the same GPUs
    mine = next(o for o in doc["options"] if o["id"] == doc["fit_target"])
    assert abs(lora["cost_usd"] - lora["cost_added_usd"] - mine["cost_usd"]) < 0.01


def test_when_nothing_fits_one_line_names_the_closest(capsys):
    assert main(["plan", "--model", "llama-3.1-70b", "--workload", "finetune", "--fake-gpu", "2x4090"]) == 0
    out = capsys.readouterr().out
    assert "What to change to fit" not in out
    line = next(ln for ln in out.splitlines() if ln.startswith("No change the advisor tries makes the job fit"))
    assert "the closest" in line and "per device" in line
