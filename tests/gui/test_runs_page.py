"""The Runs page: the table and the predicted-against-measured chart from the run store; a bad file is a message."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QItemSelectionModel

FIX = Path(__file__).parents[1] / "runs" / "fixtures"


def test_runs_page_imports_plots_and_forgets(make_window, qtbot, tmp_path):
    w = make_window()
    w.show_page("runs")
    page = w.page("runs")
    qtbot.waitUntil(page.is_ready, timeout=10000)
    from advisor.runs import READS

    assert page.model.rowCount() == 0 and "No runs imported yet" in page.message.text()
    assert READS in page.message.text()  # the same list of files as the CLI's hint (tests/runs/test_importers.py)

    bad = tmp_path / "bad.json"
    bad.write_text('{"global_step": 3')
    assert not page.import_files([str(bad)])
    assert "Not imported" in page.message.text() and str(bad) in page.message.text()

    states = [str(FIX / "hf-trainer" / n / "trainer_state.json") for n in ("small-4x256", "large-6x512")]
    assert page.import_files(states + [str(FIX / "llama-bench" / "llama-bench-rtx4080.json")])
    qtbot.waitUntil(lambda: page.is_ready() and page.model.rowCount() == 4, timeout=20000)
    here = page._here.getData()[0]
    other = page._other.getData()[0]
    # the two CPU runs made here, the RTX 4080's prompt and generation tests from elsewhere
    assert len(here) == 2 and len(other) == 2
    assert "4 runs" in page.message.text()
    # the CPU runs predict each other within 25 %, and the published llama.cpp model plans the 4080's two tests so
    assert "4 planned within 25 %" in page.message.text()

    # through the selection model: QTableView.selectRow follows the keyboard modifiers Qt believes are held, which
    # an earlier test's key clicks can leave behind (Ctrl toggles the row instead of selecting it)
    flags = QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows
    page.view.selectionModel().select(page.proxy.index(0, 0), flags)
    assert page.forget_button.isEnabled()
    page._on_forget_clicked()
    qtbot.waitUntil(lambda: page.is_ready() and page.model.rowCount() == 3, timeout=20000)


def test_runs_page_and_the_cli_show_the_same_prediction(make_window, qtbot, capsys):
    """One function (``runs.listing.run_entries`` -> ``runs.predict.predict``) for both, on this machine's host
    figures: a CPU Trainer run once read 3,916 tokens/s (error 1.69) on the page, planned before the page knew this
    machine, against 936 (0.40) from ``advisor runs``."""
    import json

    from advisor.cli import main

    assert main(["runs", "import", str(FIX / "hf-trainer" / "small-4x256" / "trainer_state.json")]) == 0
    capsys.readouterr()
    assert main(["runs", "--json", "--fake-gpu", "2x4090"]) == 0
    (cli,) = json.loads(capsys.readouterr().out)["runs"]
    assert cli["accelerator"]["id"] == "cpu" and cli["predicted_now"]["tokens_per_s"] > 0
    w = make_window("2x4090", wait_hardware=False)  # the page opened before the app has read this machine
    w.show_page("runs")
    page = w.page("runs")
    qtbot.waitUntil(lambda: w.ctx.local_known and page.is_ready() and page.model.rowCount() == 1, timeout=20000)
    (row,) = page.rows
    assert row["predicted_now"] == cli["predicted_now"] and row["error_factor"] == cli["error_factor"]


def test_a_serving_run_shows_its_load_as_the_cli_does(make_window, qtbot, capsys):
    """A serving benchmark's run at its load (throughput, TTFT p50, TPOT p50 against the plan, with ranges) under
    the table: the text ``advisor runs`` prints (``runs.listing.load_summary``)."""
    from advisor.cli import main

    run = FIX / "vllm-bench" / "vllm-10-prompts-concurrency1.json"
    assert main(["runs", "import", str(run), "--accelerator", "h100-sxm"]) == 0
    capsys.readouterr()
    assert main(["runs", "--fake-gpu", "2x4090"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if " at its load " in ln)
    w = make_window("2x4090")
    w.show_page("runs")
    page = w.page("runs")
    qtbot.waitUntil(lambda: w.ctx.local_known and page.is_ready() and page.model.rowCount() == 1, timeout=20000)
    assert page.load_detail.isVisibleTo(page)
    assert page.load_detail.text() == "R" + line[1:]
    assert "TTFT p50 20.0 ms measured" in page.load_detail.text()
