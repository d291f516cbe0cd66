"""The Buy page: the same ranking as ``advisor buy`` on this machine's GPUs, its inputs, and the Planner's job."""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import Qt

from advisor.cli import main


def _cli(capsys, *args):
    assert main(["buy", *args, "--json"]) == 0
    return json.loads(capsys.readouterr()[0])


def test_page_ranks_like_the_cli_with_the_owned_gpus_first(make_window, qtbot, capsys):
    w = make_window("2x4090")
    w.show_page("buy")
    page = w.page("buy")
    qtbot.waitUntil(page.is_ready, timeout=10000)
    rows = page.table_model.rows()
    doc = _cli(capsys, "--budget", "2500", "--jobs-per-month", "4", "--fake-gpu", "2x4090")
    assert [o.purchase.id for o in rows] == [o["id"] for o in doc["options"]]
    assert [o.usd_per_job for o in rows] == pytest.approx([o["usd_per_job"] for o in doc["options"]])
    assert rows[0].purchase.kind == "owned" and any(o.purchase.kind == "upgrade" for o in rows)
    assert "Use what you own" in page.headline.text()
    assert "cloud:" in page.rent.text()
    # the columns: the verdict before the times, one time per job
    model = page.table_model
    titles = [model.headerData(i, Qt.Orientation.Horizontal) for i in range(model.columnCount())]
    assert titles == ["what", "hardware", "price", "upfront", "monthly", "per job", "use", "verdict", "break-even",
                      "pays back from", "qlora llama-3.1-8b", "inference llama-3.1-8b"]
    assert "hobbyist" in page.rent.text() and "in one machine" in page.rent.text()


def test_budget_owned_switch_and_the_planners_job(make_window, qtbot):
    w = make_window("2x4090")
    w.show_page("buy")
    page = w.page("buy")
    qtbot.waitUntil(page.is_ready, timeout=10000)
    page.budget.setValue(0)
    assert [o.purchase.kind for o in page.table_model.rows()] == ["owned"]  # nothing to buy for $0
    page.own.setChecked(False)
    assert page.table_model.rows() == [] and "keep renting" in page.headline.text()
    page.own.setChecked(True)
    page.budget.setValue(2500)
    w.show_page("planner")
    qtbot.waitUntil(lambda: w.ctx.last_request is not None, timeout=10000)
    w.show_page("buy")
    page.add_plan_button.click()
    assert len(page.jobs) == 3 and page.job_list.count() == 3
    assert page.result is not None and len(page.result.jobs) == 3
    page.job_list.setCurrentRow(2)
    page.remove_button.click()
    assert [j.name for j in page.result.jobs] == ["qlora llama-3.1-8b", "inference llama-3.1-8b"]


@pytest.mark.parametrize("scenario, budget, args", [
    ("8xh100-sxm", 2500, []), ("laptop-4060", 1500, []), ("2x4090", 300000, []),
])
def test_page_matches_the_cli_on_every_machine(make_window, qtbot, capsys, scenario, budget, args):
    # The page once dropped 8 owned H100s and a laptop's GPU silently; now its rows are the CLI's, and a team's
    # budget brings the team's default jobs and the servers on both.
    w = make_window(scenario)
    w.show_page("buy")
    page = w.page("buy")
    qtbot.waitUntil(page.is_ready, timeout=10000)
    page.budget.setValue(budget)
    rows = page.table_model.rows()
    doc = _cli(capsys, "--budget", str(budget), "--fake-gpu", scenario, *args)
    assert [o.purchase.id for o in rows] == [o["id"] for o in doc["options"]]
    assert [o.usd_per_job for o in rows] == pytest.approx([o["usd_per_job"] for o in doc["options"]])
    assert [j.name for j in page.result.jobs] == [j["name"] for j in doc["jobs"]]
    if scenario != "2x4090":
        assert rows[0].purchase.kind == "owned"
    else:
        assert any(o.purchase.kind == "server" for o in rows)


def test_the_base_system_inputs_give_the_clis_answer(make_window, qtbot, capsys):
    # "Cards go into my desktop" with a 550 W supply and one free slot, as `--base desktop --psu-w 550
    # --free-slots 1`: the same rows (a used RTX 3090 added at 650 + a 100 USD supply) and the same headline.
    from advisor.planner.buy import summary_parts

    w = make_window("no-driver")
    w.show_page("buy")
    page = w.page("buy")
    qtbot.waitUntil(page.is_ready, timeout=10000)
    page.base.setCurrentIndex(page.base.findData("desktop"))
    page.psu.setValue(550)
    page.slots.setValue(1)
    rows = page.table_model.rows()
    doc = _cli(capsys, "--budget", "2500", "--fake-gpu", "no-driver", "--base", "desktop", "--psu-w", "550",
               "--free-slots", "1")
    assert [o.purchase.id for o in rows] == [o["id"] for o in doc["options"]]
    add = next(o for o in rows if o.purchase.id == "add-used:1xrtx-3090")
    assert add.purchase.upfront_usd == 750 and "your 550 W one is short" in add.purchase.note
    head, _detail = summary_parts(page.result)
    assert doc["headline"].startswith(head) and head in page.headline.text()
    model = page.table_model
    col = [model.headerData(i, Qt.Orientation.Horizontal) for i in range(model.columnCount())].index("break-even")
    texts = {model.index(r, col).data() for r in range(model.rowCount())}
    assert "never within its 3-year life" in texts and not any("> life" in str(t) for t in texts)
    page.base.setCurrentIndex(page.base.findData("laptop"))  # a supply given for a laptop: one line, no rows
    assert page.result is None and "desktop" in page.headline.text()
