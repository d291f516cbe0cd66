"""The Machine page's measured rows: one row per figure (host memory bandwidth once, though two probes measure
it on the CPU), each saying whether it came from a quick or a full run; no utilisation above 100 %."""

from __future__ import annotations

from types import SimpleNamespace

from PySide6.QtWidgets import QLabel

from advisor.gui.pages.machine import MachinePage
from advisor.gui.widgets.cards import CardWidget
from advisor.probes import KernelResult, ProbeResult


def _texts(card) -> list[str]:
    grid = card._grid
    return [grid.itemAt(i).widget().text() for i in range(grid.count()) if isinstance(grid.itemAt(i).widget(), QLabel)]


def test_host_bandwidth_is_listed_once_with_its_run_mode(qtbot):
    host = ProbeResult(probe="host-bandwidth", device="cpu", results={"triad": KernelResult(28.0, 27.0, "GB/s")},
                       params={"quick": False}, started_at="2026-12-01T10:00:00+00:00")
    dev = ProbeResult(probe="device-bandwidth", device="cpu",
                      results={"triad": KernelResult(25.0, 24.0, "GB/s"), "read": KernelResult(30.0, 29.0, "GB/s")},
                      params={"quick": True}, started_at="2026-12-01T11:00:00+00:00")
    step = ProbeResult.from_dict(ProbeResult(
        probe="train-step", device="cpu", params={"quick": True}, started_at="2026-12-01T12:00:00+00:00",
        results={"mfu": KernelResult(4.22, 4.0, "fraction"), "tokens_per_s": KernelResult(900.0, 800.0, "tokens/s")},
    ).to_dict())  # as read back from the history
    page = SimpleNamespace(ctx=SimpleNamespace(probe_results={("device-bandwidth", "cpu"): dev,
                                                              ("host-bandwidth", "cpu"): host,
                                                              ("train-step", "cpu"): step}))
    card = CardWidget("CPU")
    qtbot.addWidget(card)
    MachinePage._add_probe_rows(page, card, "cpu")
    texts = _texts(card)
    assert texts.count("Host memory bandwidth (triad)") == 1
    triad = texts[texts.index("Host memory bandwidth (triad)") + 1]
    assert triad.startswith("28.0 GB/s") and "full run" in triad  # the STREAM probe's figure
    assert "Host memory bandwidth (read)" in texts  # what only the other probe measured stays
    assert any("quick run" in t for t in texts)
    assert not any("%" in t and "model FLOP utilisation" in t for t in texts)
    assert "Training step (model FLOP utilisation)" not in texts
