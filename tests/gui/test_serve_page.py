"""The Serve page: the same sizing as ``advisor serve`` on this machine's GPUs, the answer first, the knee chart."""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import Qt

from advisor.cli import main


def test_page_sizes_like_the_cli_with_this_machine_first(make_window, qtbot, capsys):
    w = make_window("2x4090")
    w.show_page("serve")
    page = w.page("serve")
    qtbot.waitUntil(page.is_ready, timeout=15000)
    rows = page.table_model.rows()
    assert rows[0].id == "owned:rtx-4090" and rows[0].this_machine
    assert "Your GPUs: GeForce RTX 4090" in page.answer.text() and "Each user sees" in page.answer.text()
    # the page's lengths are the CLI's defaults (the plan's request: 1,792 prompt and 256 output tokens)
    assert page.values()["prompt_tokens"] == 1792 and page.values()["output_tokens"] == 256
    assert main(["serve", "--model", "llama-3.1-8b", "--users", "8", "--ttft-p95", "2", "--fake-gpu", "2x4090",
                 "--json"]) == 0
    doc = json.loads(capsys.readouterr()[0])
    cli = {o["id"]: o for o in doc["options"]}
    for o in rows[:5]:
        assert o.usd_per_million_requests == pytest.approx(cli[o.id]["usd_per_million_requests"])
        assert o.point.ttft_p95_s == pytest.approx(cli[o.id]["ttft_s"]["p95"])
    # one curve per charted option, this machine's first; throughput rises along each
    curves = page.bundle.curves
    assert curves[0][0].id == "owned:rtx-4090" and len(page._lines) == len(curves) >= 2
    xs, _ys = page._lines[0].getData()
    assert list(xs) == sorted(xs)


def test_bad_input_is_a_message_not_a_traceback(make_window, qtbot):
    w = make_window("laptop-4060")
    w.show_page("serve")
    page = w.page("serve")
    qtbot.waitUntil(page.is_ready, timeout=15000)
    # the default model in llama.cpp's usual Q4_K_M file runs on the laptop's 8 GB
    text = page.answer.text()
    assert "Your GPUs" in text and "RTX 4060 Laptop GPU" in text and "llama.cpp" in text
    assert page.bundle.result.options[0].launch["weight_format"] == "q4_k_m"
    page._widgets["model"].setText("llama-3-8b")
    page._widgets["prompt_tokens"].setValue(9000)  # 9,000 + 300 tokens: longer than Llama 3 8B's 8,192
    qtbot.waitUntil(lambda: "context" in page.answer.text(), timeout=15000)
    assert "exceed" in page.answer.text()


def test_a_rate_replaces_the_users(make_window, qtbot):
    w = make_window("2x4090")
    w.show_page("serve")
    page = w.page("serve")
    qtbot.waitUntil(page.is_ready, timeout=15000)
    page._widgets["requests_per_s"].setValue(2.0)
    qtbot.waitUntil(lambda: page.bundle is not None and page.bundle.result.by == "requests_per_s", timeout=15000)
    assert "2 requests/s" in page.answer.text()
    assert page.table_model.headerData(4, Qt.Orientation.Horizontal) == "most (req/s)"


def test_cells_carry_their_ranges():
    from advisor.gui.pages.serve import serve_columns
    from advisor.job.serve import ServeJob
    from advisor.planner.serve import serve_plan

    result = serve_plan(ServeJob.from_mapping({"model": "llama-3-8b", "users": 4, "accelerator": ["l4"]}))
    o = next(x for x in result.options if x.fits)
    cols = {c.title: c for c in serve_columns("users")}
    assert cols["TTFT p95"].cell_tip(o).startswith("80 % range ")
    import math

    from advisor.planner.calibrated import active_fits

    # the first token's held-out width on the published runs of dense models at a load of users (vLLM on CUDA)
    f = math.exp(active_fits()["ttft"].width("users/vllm/cuda/dense"))
    assert f"x/÷{f:.2f} (leaving one source out" in cols["TTFT p95"].cell_tip(o)
    assert cols["$/M requests"].cell_tip(o).startswith("80 % range $")


def test_the_page_exports_the_report_the_cli_writes(make_window, qtbot, tmp_path):
    """Export report… writes the sized job (the answer, the knee chart, the options) in a worker: the same
    Markdown as ``advisor serve --report`` for the same job."""
    w = make_window("2x4090")
    w.show_page("serve")
    page = w.page("serve")
    qtbot.waitUntil(page.is_ready, timeout=15000)
    assert page.export_button.isEnabled()
    path = tmp_path / "serving.md"
    with qtbot.waitSignal(page.reports.written, timeout=30000):
        assert page.export_report(path)
    text = path.read_text()
    assert "Your GPUs: GeForce RTX 4090" in text and "Each user sees" in text
    assert text.count("](data:image/svg+xml;base64,") == 1  # the knee chart
    assert "Report written to" in page.footer.text()


def test_an_imported_run_of_the_job_is_drawn_against_the_plan(make_window, qtbot, capsys):
    """A serving run of the sized job (model, accelerator, devices, runtime: vllm bench serve against llama.cpp on
    this machine's RTX 4090) is drawn on the chart, measured (a star) and planned at its own load (with its 80 %
    ranges), and its ``advisor runs`` line is under the chart; a run of another accelerator is not."""
    import math
    from pathlib import Path

    fix = Path(__file__).parents[1] / "runs" / "fixtures" / "vllm-bench" / "vllm-10-prompts-concurrency1.json"
    assert main(["runs", "import", str(fix), "--accelerator", "rtx-4090", "--software", "llama.cpp"]) == 0
    assert main(["runs", "--fake-gpu", "2x4090"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if " at its load " in ln)
    w = make_window("2x4090")
    w.show_page("serve")
    page = w.page("serve")
    qtbot.waitUntil(page.is_ready, timeout=15000)
    ((option, row),) = page.bundle.runs
    assert option.id == "owned:rtx-4090" and row["id"] == 1
    f = row["load"]["figures"]
    names = {item.name(): item for item in page._lines if hasattr(item, "name") and item.name()}
    xs, ys = names["run 1: measured (TTFT p50)"].getData()  # the log axes' coordinates
    assert list(xs) == pytest.approx([math.log10(151.39)]) and list(ys) == pytest.approx([math.log10(0.020)])
    xs, ys = names["run 1: planned at its load (TTFT p50, 80 % ranges)"].getData()
    assert list(xs) == pytest.approx([math.log10(f["tokens_per_s"]["predicted"])])
    assert list(ys) == pytest.approx([math.log10(f["ttft_p50_s"]["predicted"])])
    assert page.runs_line.isVisibleTo(page)
    assert page.runs_line.text() == "Your run 1 on GeForce RTX 4090 (llama.cpp) " + line.split(" ", 2)[2]
    # the same file as a run of an H100 is not this job
    assert main(["runs", "--reset"]) == 0
    assert main(["runs", "import", str(fix), "--accelerator", "h100-sxm", "--software", "llama.cpp"]) == 0
    page.refresh()
    qtbot.waitUntil(lambda: page.is_ready() and not page.bundle.runs, timeout=15000)
    assert not page.runs_line.isVisibleTo(page)


def test_the_per_user_rate_tip_stops_at_the_bandwidth_bound():
    """The tokens/s cell's range is advisor serve's (planner.serve.interval with the bound): at one user on two
    owned 3090s with a 70B Q4_K_M, 17.1 tokens/s whose group width alone would reach 22.6, held at 21.8."""
    from advisor.catalog import load_catalog
    from advisor.gui.pages.serve import serve_columns
    from advisor.job.serve import ServeJob
    from advisor.planner.owned import parse_own
    from advisor.planner.serve import interval, rate_bound, serve_plan

    job = ServeJob.from_mapping({"model": "llama-3.3-70b", "quant": "q4_k_m", "runtime": "llama.cpp", "users": 1,
                                 "prompt_tokens": 1000, "output_tokens": 300})
    catalog = load_catalog()
    result = serve_plan(job, catalog, owned=tuple(parse_own(["2xrtx-3090"], catalog)), only_owned=True)
    o = next(x for x in result.options if x.fits)
    rate = 1 / o.point.tpot_p50_s
    most = rate_bound(o)
    assert rate < most < rate * 1.32
    low, high = interval(rate, "tpot", o, "users", bound="rate")
    assert high == pytest.approx(most) and low < rate
    tip = {c.title: c for c in serve_columns("users")}["tokens/s per user"].cell_tip(o)
    assert tip.startswith(f"80 % range {low:.3g} to {most:.3g} ")
