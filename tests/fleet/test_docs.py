"""The Grafana dashboard and the README's fleet section name only series the exporter serves."""

from __future__ import annotations

import json
import re
from pathlib import Path

from advisor.monitor.exporter import PROCESS_METRICS, metric_names

ROOT = Path(__file__).parents[2]
SERVED = {m.name for m in metric_names()} | {p.name for p in PROCESS_METRICS} | {"up"}


def _names(text: str) -> set[str]:
    return set(re.findall(r"\b(?:DCGM_FI_[A-Z_]+|advisor_process_[a-z_]+)\b", text))


def test_dashboard_queries_only_served_series():
    dash = json.loads((ROOT / "docs" / "grafana-fleet.json").read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    assert exprs and dash["uid"] == "advisor-fleet"
    used = set().union(*(_names(e) for e in exprs))
    assert used and used <= SERVED, used - SERVED
    assert {"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_POWER_USAGE",
            "advisor_process_gpu_seconds_total"} <= used


def test_readme_names_every_served_series():
    text = (ROOT / "README.md").read_text()
    assert SERVED - {"up"} <= _names(text)
