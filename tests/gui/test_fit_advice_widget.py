"""The fit-advice list fills rows built once (no widgets made or deleted per plan) and shows each row's change.

Its parent is not shown (offscreen windows warn): ``isHidden`` tells the list's own visibility."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from advisor.gui.widgets import fit_advice


def _row(flags: str, fits: bool = True) -> dict:
    return {"flags": flags, "fits": fits, "memory": "20.1 GB", "hours": 2.0, "hours_lost": 0.5, "why": f"why {flags}",
            "change": {"flag": flags}}


@pytest.fixture
def widget(qtbot, monkeypatch):
    rows: list[dict] = []
    monkeypatch.setattr(fit_advice, "fit_advice_rows", lambda _result: list(rows))
    from PySide6.QtWidgets import QWidget

    parent = QWidget()  # never shown: the list's own setVisible(True) would open it as a window
    qtbot.addWidget(parent)
    w = fit_advice.FitAdviceWidget(parent)
    w.rows_source = rows
    w.test_parent = parent  # kept alive with the list
    return w


RESULT = SimpleNamespace(fit_target=lambda: SimpleNamespace(accelerator_name="GeForce RTX 4090",
                                                              capacity_bytes=24_000_000_000))


def test_rows_are_reused_and_follow_the_advice(widget):
    widget.rows_source[:] = [_row("--micro-batch 1"), _row("--grad-checkpointing"), _row("--zero 3", fits=False)]
    widget.show_plan(RESULT)
    assert not widget.isHidden() and len(widget.buttons) == 3
    first = list(widget.buttons)
    assert [b.isEnabled() for b in first] == [True, True, False]
    labels = [text for _b, text in widget._pool]
    assert "--micro-batch 1" in labels[0].text() and "still too big" in labels[2].text()
    assert [not t.isHidden() for t in labels] == [True, True, True, False, False]

    widget.rows_source[:] = [_row("--seq-len 1024")]
    widget.show_plan(RESULT)
    assert widget.buttons == first[:1]  # the same button, not a new one
    assert "--seq-len 1024" in labels[0].text() and labels[0].toolTip() == "why --seq-len 1024"
    assert [not t.isHidden() for t in labels] == [True, False, False, False, False]


def test_no_advice_hides_the_list(widget):
    widget.rows_source[:] = [_row("--micro-batch 1")]
    widget.show_plan(RESULT)
    widget.rows_source[:] = []
    widget.show_plan(RESULT)
    assert widget.isHidden() and widget.buttons == []


def test_apply_carries_the_row_change(widget, qtbot):
    widget.rows_source[:] = [_row("--micro-batch 1"), _row("--zero 3")]
    widget.show_plan(RESULT)
    with qtbot.waitSignal(widget.apply_requested) as got:
        widget.buttons[1].click()
    assert got.args == [{"flag": "--zero 3"}]
