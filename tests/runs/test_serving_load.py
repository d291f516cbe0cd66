"""A serving benchmark's run compared at its own load: throughput, first token (p50) and time per output token
(p50) planned as bench_truth plans a published served row of the same shape (``runs.load``,
``planner.measured.shown_figures``), with each figure's 80 % range and whether it held.

Each importer's fixture (tests/runs/fixtures/README.md) is set against the same run written as a row of the
calibration set (``estimate.calibration.parse_measurements``, the CSV bench_truth reads): the figures must be the
row's, the one computation. Worked by hand besides: at one user a finite run's first token is one prompt's prefill
(no request waits for another), the plan's single-request first token; a run at a rate the server keeps up with
generates the rate times the output length (GuideLLM at 1.5 requests/s of 256 tokens: 384 tokens/s).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.catalog import load_catalog
from advisor.cli import main
from advisor.estimate.calibration import COLUMNS, parse_measurements
from advisor.planner.measured import shown_prediction
from advisor.runs import ImportOptions, RunImportError, import_file
from advisor.runs.predict import predict
from advisor.runs.record import checked_record

CATALOG = load_catalog()
FIX = Path(__file__).parent / "fixtures"
VLLM = FIX / "vllm-bench" / "vllm-10-prompts-concurrency1.json"
SGLANG = FIX / "sglang-bench" / "sglang-random-1024-512.jsonl"
GUIDELLM = FIX / "guidellm" / "constant-rate.json"
SAME = 1e-9  # one computation: the same function on the same inputs gives the same float
GROUP_OF = {"tokens_per_s": ("serving", "tokens/s"), "ttft_p50_s": ("ttft", "s"), "tpot_p50_s": ("tpot", "s")}


def _opts(**kw) -> ImportOptions:
    return ImportOptions(accelerator="h100-sxm", this_machine_id="this-machine", **kw)


def _row(group: str, *, batch: int, prompt: int, output: int, settings: str, software: str = "vllm",
         model: str = "llama-3.1-8b", precision: str = "bf16", quant: str = "", acc: str = "h100-sxm") -> object:
    """The run as a published row of ``group`` in the calibration set's CSV (bench_truth's reader), its figure
    at p50, in the weight format the run's own plan assumed (the runtime's usual one: bf16 for vLLM and SGLang);
    the value is a placeholder (the prediction does not read it)."""
    unit = "tokens/s" if group == "serving" else "s"
    values = {c: "" for c in COLUMNS}
    values.update(row_id="r", source_id="s", source_title="t", source_url="https://example.org", source_date="2026-12-06",
                  model=model, accelerator_id=acc, devices="1", software=software, workload="inference",
                  precision=precision, quant=quant,
                  batch=str(batch), prompt_tokens=str(prompt), output_tokens=str(output), value="1", unit=unit,
                  settings=settings, statistic="p50", arrivals="steady")
    header = ",".join(values)
    (m,) = parse_measurements(header + "\n" + ",".join(values.values()) + "\n", group)
    return m


def _load(rec) -> dict:
    p = predict(rec, catalog=CATALOG, calibration=None)
    assert p is not None and p.load is not None, rec
    return p.load


def _same_as_rows(load: dict, **row) -> None:
    for field, (group, _) in GROUP_OF.items():
        value, (low, high) = shown_prediction(_row(group, **row), CATALOG)
        f = load["figures"][field]
        assert f["predicted"] == pytest.approx(value, rel=SAME), field
        assert (f["low"], f["high"]) == pytest.approx((low, high), rel=SAME), field


def test_vllm_bench_serve_of_ten_prompts_by_one_user_is_bench_truths_row():
    (rec,) = import_file(VLLM, _opts())
    assert (rec.batch, rec.prompts, rec.request_rate, rec.prompt_tokens, rec.output_tokens) == (1, 10, None, 512, 128)
    load = _load(rec)
    assert load["shape"] == {"users": 1, "prompts": 10, "requests_per_s": None, "prompt_tokens": 512,
                             "output_tokens": 128, "weight_format": "bf16"}
    # the file's figures: median TTFT 20.0 ms, median TPOT 6.5 ms, 1,280 output tokens in 8.455 s (151.39 tokens/s)
    assert load["figures"]["ttft_p50_s"]["measured"] == pytest.approx(0.020)
    assert load["figures"]["tpot_p50_s"]["measured"] == pytest.approx(0.0065)
    assert load["figures"]["tokens_per_s"]["measured"] == pytest.approx(151.39)
    _same_as_rows(load, batch=1, prompt=512, output=128, settings="prompts=10")
    # by hand: one user waits for no one, so every first token is one 512-token prompt's prefill, the plan's
    # single-request first token for the same job
    from advisor.planner import PlanRequest, plan

    res = plan(PlanRequest.from_mapping({"model": "llama-3.1-8b", "workload": "inference", "accelerator": ["h100-sxm"],
                                         "gpus": 1, "own": ["1xh100-sxm"], "owned_options": True, "batch": 1,
                                         "prompt_tokens": 512, "output_tokens": 128, "runtime": "vllm"}),
               CATALOG, None, advise=False)
    (o,) = [o for o in res.options if o.accelerator == "h100-sxm" and o.devices == 1 and o.kind == "owned"]
    assert load["figures"]["ttft_p50_s"]["predicted"] == pytest.approx(o.serving.ttft_s, rel=1e-6)


def test_sglang_bench_serving_lines_at_their_users_and_prompts():
    one, sixteen = import_file(SGLANG, _opts(model="llama-3.1-8b"))
    # the lines state no --num-prompts: the run's requests are those completed (40 and 160)
    assert (one.batch, one.prompts, sixteen.batch, sixteen.prompts) == (1, 40, 16, 160)
    _same_as_rows(_load(one), batch=1, prompt=1024, output=512, settings="prompts=40", software="sglang")
    _same_as_rows(_load(sixteen), batch=16, prompt=1024, output=512, settings="prompts=160", software="sglang")


def test_guidellm_constant_rate_is_a_row_at_that_rate():
    (rec,) = import_file(GUIDELLM, _opts())
    assert (rec.request_rate, rec.prompts) == (1.5, 135)
    load = _load(rec)
    assert load["shape"]["users"] is None and load["shape"]["requests_per_s"] == 1.5
    _same_as_rows(load, batch=rec.batch, prompt=512, output=256, settings="requests_per_s=1.5")
    # by hand: a rate the server keeps up with generates what arrives, 1.5 requests/s x 256 tokens
    assert load["figures"]["tokens_per_s"]["predicted"] == pytest.approx(1.5 * 256, rel=1e-6)
    assert load["figures"]["tokens_per_s"]["measured"] == pytest.approx(135 * 256 / 90)


def test_a_run_is_planned_at_its_load_in_the_format_of_its_own_plan():
    """A file that names no weight format: the run's load is planned in the format its rule-1 figure was planned
    in (llama.cpp's usual Q4_K_M), one job, not the serving job's 16-bit default."""
    (rec,) = import_file(VLLM, ImportOptions(accelerator="rtx-4090", software="llama.cpp",
                                             this_machine_id="this-machine"))
    p = predict(rec, catalog=CATALOG, calibration=None)
    assert p.load["shape"]["weight_format"] == "q4_k_m"
    _same_as_rows(p.load, batch=1, prompt=512, output=128, settings="prompts=10", software="llama.cpp",
                  precision="", quant="q4_k_m", acc="rtx-4090")


def test_runs_lists_each_figure_at_the_load_with_its_range(capsys):
    assert main(["runs", "import", str(VLLM), "--accelerator", "h100-sxm"]) == 0
    capsys.readouterr()
    assert main(["runs", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["runs"]
    load = row["load"]
    assert load["shape"]["users"] == 1 and load["shape"]["prompts"] == 10
    for field, (_, unit) in GROUP_OF.items():
        f = load["figures"][field]
        assert f["unit"] == unit and f["low"] < f["predicted"] < f["high"]
        assert f["error_factor"] == pytest.approx(f["predicted"] / f["measured"])
        assert f["range_held"] == (f["low"] <= f["measured"] <= f["high"])
    # the fields the contract already had are still there
    assert row["compared"]["figure"] == "tokens_per_s" and row["predicted_now"]["tokens_per_s"] > 0
    assert main(["runs"]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith(f"run {row['id']} at its load"))
    assert "1 user(s), 10 prompts, 512 in / 128 out, bf16" in line
    assert "TTFT p50 20.0 ms measured" in line and "TPOT p50 6.5 ms measured" in line


def test_a_record_keeps_its_shape_through_the_store_schema():
    (rec,) = import_file(GUIDELLM, _opts())
    again = checked_record(rec.to_dict())
    assert (again.prompts, again.request_rate) == (135, 1.5)
    for bad in ({"request_rate": "fast"}, {"request_rate": 0}, {"request_rate": float("inf")}, {"prompts": 0},
                {"prompts": 2.5}):
        with pytest.raises(ValueError):
            checked_record({**rec.to_dict(), **bad})


def _vllm_doc(**changed) -> str:
    doc = json.loads(VLLM.read_text())
    doc.update(changed)
    return json.dumps(doc)


@pytest.mark.parametrize(("text", "reason"), [
    (_vllm_doc(num_prompts=0), "num_prompts"),
    (_vllm_doc(num_prompts="ten"), "num_prompts"),
    (_vllm_doc(request_rate="fast"), "request_rate"),
    (_vllm_doc(request_rate=-2), "request_rate"),
    (_vllm_doc(request_rate=1e12), "request_rate"),
    (_vllm_doc(completed=11), "completed 11 is more than num_prompts 10"),
    (_vllm_doc(max_concurrency=0), "max_concurrency"),
])
def test_a_bad_shape_is_one_line_and_exit_2(tmp_path, capsys, text, reason):
    f = tmp_path / "bad.json"
    f.write_text(text)
    assert main(["runs", "import", str(f), "--accelerator", "h100-sxm"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and reason in err, err
    assert main(["runs", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["runs"] == []  # nothing stored


def test_a_bad_guidellm_rate_is_refused(tmp_path):
    doc = json.loads(GUIDELLM.read_text())
    doc["benchmarks"][0]["args"]["strategy"]["rate"] = -1.5
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(doc))
    with pytest.raises(RunImportError, match="rate"):
        import_file(f, _opts())


def test_a_rate_beyond_what_the_plan_carries_is_listed_with_the_reason(tmp_path, capsys):
    """200 requests of 2,048 + 2,048 tokens offered at 20 requests/s to one H100 (8B): 40,960 output tokens/s
    arrive, some 9 times the most the plan gives it (about 4,600 tokens/s with 200 users at once), so there is
    no steady state to compare with; the run is listed with that reason, not a figure."""
    doc = json.loads(VLLM.read_text())
    doc.update(num_prompts=200, completed=200, request_rate=20.0, max_concurrency=None, total_input_tokens=200 * 2048,
               total_output_tokens=200 * 2048, duration=200.0, output_throughput=2048.0)
    f = tmp_path / "rate.json"
    f.write_text(json.dumps(doc))
    (rec,) = import_file(f, _opts())
    assert (rec.request_rate, rec.prompts) == (20.0, 200)
    assert predict(rec, catalog=CATALOG, calibration=None).load is None
    assert main(["runs", "import", str(f), "--accelerator", "h100-sxm"]) == 0
    capsys.readouterr()
    assert main(["runs", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["runs"]
    assert row["load"]["figures"] is None and "no steady state" in row["load"]["not_planned"]
    assert row["load"]["shape"]["requests_per_s"] == 20.0 and row["load"]["shape"]["users"] is None


def test_a_run_of_users_is_compared_on_its_load_and_gives_it_back_once_learned():
    """One computation: the figure ``advisor runs`` compares a run of users at once on is its load's plan (the
    listing's column and the load line agree), and learning inverts that plan: the run imported and its load
    planned again gives its measured output tokens/s within 2 % (rule 1). The fixture's 16 users measured
    160 x 512 tokens / 61.7 s = 1,327.7 tokens/s; its 11.6 ms a token moves the planned time per token towards it."""
    from advisor.store.calibration import with_runs

    one, sixteen = import_file(SGLANG, ImportOptions(accelerator="h100-sxm", model="llama-3.1-8b",
                                                    this_machine_id="here"))
    for rec in (one, sixteen):
        unseen = predict(rec, catalog=CATALOG, calibration=None)
        shown = unseen.load["figures"]["tokens_per_s"]
        assert (unseen.tokens_per_s, unseen.low, unseen.high) == (shown["predicted"], shown["low"], shown["high"])
        after = predict(rec, catalog=CATALOG, calibration=with_runs(None, [rec], "here"), leave_out=False)
        got = after.load["figures"]
        assert after.tokens_per_s == got["tokens_per_s"]["predicted"]
        assert got["tokens_per_s"]["predicted"] == pytest.approx(rec.measured.tokens_per_s, rel=0.02)
        assert got["tokens_per_s"]["low"] <= rec.measured.tokens_per_s <= got["tokens_per_s"]["high"]
        before_gap = abs(unseen.load["figures"]["tpot_p50_s"]["predicted"] - rec.measured.tpot_p50_s)
        assert abs(got["tpot_p50_s"]["predicted"] - rec.measured.tpot_p50_s) < before_gap
    assert sixteen.measured.tokens_per_s == pytest.approx(160 * 512 / 61.7, rel=1e-5)  # the file writes 1,327.71
    # the first token is learned too where a prefill factor gives it: 16 users' 88 ms back (the plan unseen: 34 ms);
    # one user's 21.3 ms for 1,024 tokens of an 8B model is faster than the plan allows at any efficiency (22.8 ms
    # with every prefill efficiency at 1: the products alone take 2 x 8.0e9 x 1,024 / 989e12 = 16.6 ms at the H100's
    # whole bf16 peak, the attention and the first decode step come on top), so it teaches the decode only
    from advisor.runs.load import learned_pair

    acc = CATALOG.accelerators["h100-sxm"]
    assert learned_pair(one, acc, CATALOG)[1] is None and learned_pair(sixteen, acc, CATALOG)[1] is not None
    learned = predict(sixteen, catalog=CATALOG, calibration=with_runs(None, [sixteen], "here"), leave_out=False)
    assert learned.load["figures"]["ttft_p50_s"]["predicted"] == pytest.approx(0.088, rel=0.02)
    assert unseen.load["figures"]["ttft_p50_s"]["predicted"] < 0.05


def test_the_listing_shows_one_planned_figure_for_a_run_of_users(capsys):
    assert main(["runs", "import", str(SGLANG), "--accelerator", "h100-sxm", "--model", "llama-3.1-8b"]) == 0
    capsys.readouterr()
    assert main(["runs", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["runs"]
    assert len(rows) == 2
    for row in rows:  # the column the table shows is the load line's planned throughput
        assert row["predicted_now"]["tokens_per_s"] == row["load"]["figures"]["tokens_per_s"]["predicted"]
        assert row["compared"]["label"] == f"served at {row['load']['shape']['users']}"


def test_a_run_at_a_rate_is_compared_on_its_load_and_teaches_through_its_times(capsys):
    """GuideLLM at 1.5 requests/s of 256 tokens: the load's plan carries it, 384 tokens/s, which the table's column
    shows too. The rate set that figure, so the run teaches its decode from its time per output token (8.5 ms p50,
    planned 6.7 ms unseen) and its prefill from its first token (30 ms p50, planned 20.1 ms): once learned its load
    planned again gives both back within 2 %, at the same 384 tokens/s."""
    from advisor.runs.predict import teaches
    from advisor.store.calibration import with_runs

    (rec,) = import_file(GUIDELLM, _opts())
    p = predict(rec, catalog=CATALOG, calibration=None)
    assert p.tokens_per_s == pytest.approx(384.0) == p.load["figures"]["tokens_per_s"]["predicted"]
    assert p.load["figures"]["tpot_p50_s"]["predicted"] < 0.0075 and p.load["figures"]["ttft_p50_s"]["predicted"] < 0.025
    assert teaches(rec, CATALOG) is True
    after = predict(rec, catalog=CATALOG, calibration=with_runs(None, [rec], "this-machine"), leave_out=False)
    got = after.load["figures"]
    assert got["tpot_p50_s"]["predicted"] == pytest.approx(0.0085, rel=0.02)
    assert got["ttft_p50_s"]["predicted"] == pytest.approx(0.030, rel=0.02)
    assert after.tokens_per_s == pytest.approx(384.0)
    assert main(["runs", "import", str(GUIDELLM), "--accelerator", "h100-sxm"]) == 0
    capsys.readouterr()
    assert main(["runs"]) == 0
    out = capsys.readouterr().out
    assert "served at 1.5/s" in out and "teaches nothing" not in out


def test_serve_says_which_speeds_the_users_runs_set_on_every_surface(capsys):
    """After an SGLang run on an H100 is imported, ``advisor serve`` on that part and runtime is sized with what it
    teaches and says so: the same line in the text answer (which the Serve page and the reports take) and the JSON."""
    from advisor.report.serve_text import answer_lines

    assert main(["runs", "import", str(SGLANG), "--accelerator", "h100-sxm", "--model", "llama-3.1-8b"]) == 0
    capsys.readouterr()
    args = ["serve", "--model", "llama-3.1-8b", "--accelerator", "h100-sxm", "--runtime", "sglang", "--users", "16",
            "--prompt-tokens", "1024", "--output-tokens", "512", "--precision", "bf16", "--no-own"]
    assert main([*args, "--json"]) == 0
    (line,) = json.loads(capsys.readouterr().out)["learned"]
    assert line.startswith("Speed on H100 SXM5 80GB (sglang): from your run of ") and "sglang-random-1024-512" in line
    assert main(args) == 0
    assert line in capsys.readouterr().out.splitlines()
    from advisor.job.serve import ServeJob
    from advisor.planner.serve import serve_plan
    from advisor.store.calibration import load_planner_calibration

    job = ServeJob.from_mapping({"model": "llama-3.1-8b", "accelerator": ["h100-sxm"], "runtime": "sglang",
                                 "users": 16, "prompt_tokens": 1024, "output_tokens": 512, "precision": "bf16"})
    assert line in answer_lines(serve_plan(job, CATALOG, calibration=load_planner_calibration()))
    assert serve_plan(job, CATALOG).learned == ()  # nothing learned without the runs
