"""The software-stack filter in the app: off-stack parts marked and listed after, the form's picker re-plans,
and serving plans show $ per million tokens and requests in the table."""

from __future__ import annotations

from PySide6.QtCore import Qt


def _ready(page):
    return page.is_ready() and page.bundle is not None


def _texts(page, column: str) -> list[str]:
    model = page.model
    col = next(c for c in range(model.columnCount()) if model.headerData(c, Qt.Orientation.Horizontal) == column)
    return [model.data(model.index(r, col)) for r in range(model.rowCount())]


def test_tpu_and_trainium_are_marked_and_after_the_pytorch_parts(make_window, qtbot):
    w = make_window()
    w.show_page("planner")
    page = w.page("planner")
    qtbot.waitUntil(lambda: _ready(page), timeout=10000)
    rows = page.model.rows()
    assert page.bundle.result.request.workload == "lora"
    marks = [r["stack_ok"] for r in rows if r["fits"]]
    first_off = marks.index(False)
    assert all(marks[:first_off]) and not any(marks[first_off:])  # every off-stack part after the others
    names = _texts(page, "accelerator")
    tpu = next(i for i, r in enumerate(rows) if r["accelerator"] == "tpu-v6e")
    trn = next(i for i, r in enumerate(rows) if r["accelerator"] == "trainium2")
    assert names[tpu].endswith("[needs JAX/XLA]") and names[trn].endswith("[needs AWS Neuron]")
    assert not rows[0]["accelerator"].startswith(("tpu", "trainium", "inferentia"))
    # choose JAX/XLA in the form: the TPU is on the job's stack now, the NVIDIA parts too, AMD's not
    picker = page.form.w["stack"]
    done = page.plans_done
    picker.actions_["jax-xla"].setChecked(True)
    qtbot.waitUntil(lambda: _ready(page) and page.plans_done > done, timeout=10000)
    assert page.bundle.result.request.stack == ("jax-xla",)
    rows = page.model.rows()
    assert next(r for r in rows if r["accelerator"] == "tpu-v6e")["stack_ok"]
    assert not next(r for r in rows if r["accelerator"] == "mi300x")["stack_ok"]


def test_serving_table_has_costs_per_million(make_window, qtbot):
    w = make_window()
    w.show_page("planner")
    page = w.page("planner")
    qtbot.waitUntil(lambda: _ready(page), timeout=10000)
    assert "$/M tokens" not in [page.model.headerData(c, Qt.Orientation.Horizontal)
                                for c in range(page.model.columnCount())]
    done = page.plans_done
    page.form.set_values({"workload": "inference"})
    qtbot.waitUntil(lambda: _ready(page) and page.plans_done > done
                    and page.bundle.result.request.workload == "inference", timeout=10000)
    rows = page.model.rows()
    per_m = _texts(page, "$/M tokens")
    first = next(i for i, r in enumerate(rows) if r["usd_per_million_tokens"] is not None)
    from advisor.units import fmt_usd

    assert per_m[first] == fmt_usd(rows[first]["usd_per_million_tokens"])
    assert _texts(page, "$/M requests")[first] == fmt_usd(rows[first]["usd_per_million_requests"])
