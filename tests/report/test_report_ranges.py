"""Reports carry the 80 % ranges of a plan's figures: a training job's memory (the memory chart's note, the
Markdown facts, a CSV 'range' record) and a serving job's first token, prefill and decode (the summary row)."""

from __future__ import annotations

import csv
import io

from advisor.catalog import load_catalog
from advisor.planner import PlanRequest, plan
from advisor.report import render_report

CAT = load_catalog(use_user_file=False)


def _doc(**kw) -> dict:
    return plan(PlanRequest.from_mapping({"owned_options": False, **kw}), CAT).to_json()


def test_training_memory_range_in_every_format():
    doc = _doc(model="llama-3-8b", workload="lora", accelerator=["h100-sxm"], tokens=1e8)
    lo, hi = doc["memory"]["per_device_bytes_interval"]
    assert lo < doc["memory"]["per_device_bytes"]["total"] < hi
    md = render_report([doc], "md")
    assert "memory, 80 % range" in md and "80 % range of the total" in render_report([doc], "html")
    rows = [r for r in csv.DictReader(io.StringIO(render_report([doc], "csv"))) if r["record"] == "range"]
    assert [r["id"] for r in rows] == ["memory_per_device_bytes"] and rows[0]["value"] == f"{lo!r};{hi!r}"


def test_serving_ranges_in_the_summary_and_csv():
    doc = _doc(model="llama-3-8b", workload="inference", prompt_tokens=2048, output_tokens=256,
               accelerator=["rtx-4090"])
    inf = doc["inference"]
    assert inf["ttft_s_interval"][0] < inf["ttft_s"] < inf["ttft_s_interval"][1]
    md = render_report([doc], "md")
    line = next(x for x in md.splitlines() if "serving on" in x)
    assert line.count("(80 %:") == 3  # first token, prefill, decode
    ids = [r["id"] for r in csv.DictReader(io.StringIO(render_report([doc], "csv"))) if r["record"] == "range"]
    assert ids == ["ttft_s", "prefill_tokens_per_s", "decode_tokens_per_s"]
