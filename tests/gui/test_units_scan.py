"""One units policy on every page: the rendered text never mixes GB with GiB/MiB, and probe figures are named.

The scan reads what a person reads: every QLabel, every table header and cell, every card row, after each
page has drawn its populated state on the 2x4090 fake scenario.
"""

from __future__ import annotations

import re

import pytest
from PySide6.QtCore import QModelIndex, Qt
from PySide6.QtWidgets import QAbstractItemView, QLabel

from advisor.gui.main_window import PAGES
from advisor.probes import KernelResult, ProbeResult

BINARY_MEMORY = re.compile(r"\b(KiB|MiB|GiB|TiB)\b")
CITATION = re.compile(r"https?://|\b[\w-]+\.(com|org|io|net|ai|dev)\b/")
DECIMAL_MEMORY = re.compile(r"\d\s?(GB|MB|TB)\b(?!/s)")


def page_texts(page) -> list[str]:
    """Every text a person can read on a page: labels, headers and cells of its tables."""
    texts = [label.text() for label in page.findChildren(QLabel)]
    for view in page.findChildren(QAbstractItemView):
        model = view.model()
        if model is None:
            continue
        try:
            cols = model.columnCount(QModelIndex())
        except TypeError:  # a list widget's internal model: one column
            cols = 1
        for c in range(cols):
            texts.append(str(model.headerData(c, Qt.Orientation.Horizontal) or ""))
        for r in range(min(model.rowCount(QModelIndex()), 300)):
            for c in range(cols):
                texts.append(str(model.index(r, c).data() or ""))
    return texts


def mixed_units(texts: list[str]) -> list[str]:
    """The texts that show memory in binary units (GiB, MiB, ...), which the policy allows only by setting.

    A source citation quotes its source's own words ("docs.cloud.google.com/... 32 GiB"): not a figure of ours.
    """
    return [t for t in texts if BINARY_MEMORY.search(re.sub(r"<[^>]+>", "", t)) and not CITATION.search(t)]


def test_the_scan_finds_a_mix():
    assert mixed_units(["23.5 GB total", "620 MiB used"]) == ["620 MiB used"]
    assert mixed_units(["<b>24.0</b> GiB"]) == ["<b>24.0</b> GiB"]
    assert not mixed_units(["25.8 GB", "1,010 GB/s", "disk 84.1 GB free"])
    assert not mixed_units(["docs.cloud.google.com/tpu/docs/v4 (275 TFLOPS bf16, 32 GiB)"])


@pytest.mark.parametrize("pid", [p[0] for p in PAGES])
def test_every_page_shows_memory_in_gb_only(make_window, qtbot, pid, request):
    w = make_window()
    w.show_page("planner")
    qtbot.waitUntil(w.page("planner").is_ready, timeout=15000)
    w.show_page(pid)
    page = w.page(pid)
    qtbot.waitUntil(page.is_ready, timeout=15000)
    qtbot.wait(50)
    texts = page_texts(page)
    assert mixed_units(texts) == []
    if pid in ("machine", "planner", "catalog"):
        assert any(DECIMAL_MEMORY.search(t) for t in texts)  # the scan did read their memory figures


def test_machine_page_names_measured_figures_per_device(make_window, qtbot):
    w = make_window()
    page = w.page("machine")
    qtbot.waitUntil(page.is_ready, timeout=10000)
    w.ctx.add_probe_result(ProbeResult(
        probe="host-bandwidth", device="cpu", started_at="2026-11-30T10:00:00+00:00",
        results={"triad": KernelResult(12.34, 11.9, "GB/s", repetitions=5)}))
    w.ctx.add_probe_result(ProbeResult(
        probe="matmul", device="cuda:0", started_at="2026-11-30T10:05:00+00:00",
        results={"bf16": KernelResult(151.0, 149.0, "TFLOP/s", repetitions=3), "fp16": KernelResult(0.0, 0.0, "TFLOP/s")}))
    w.ctx.add_probe_result(ProbeResult(
        probe="train-step", device="cuda:1", results={"mfu": KernelResult(0.612, 0.6, "fraction")}))
    qtbot.wait(50)
    texts = " | ".join(page_texts(page))
    assert "Host memory bandwidth (triad)" in texts and "12.3 GB/s · 2026-11-30" in texts
    assert "Matmul throughput (bf16)" in texts and "151 TFLOP/s" in texts
    assert "0.0 TFLOP/s" not in texts and "Matmul throughput (fp16)" in texts and "not measured" in texts
    assert "Training step (model FLOP utilisation)" in texts and "61.2 %" in texts
    assert "measured device-bandwidth" not in texts and "fraction" not in texts


def test_gib_only_when_the_setting_asks(make_window, qtbot):
    from advisor import units
    from advisor.gui.settings import open_settings

    s = open_settings()
    s.setValue("display/memory_unit", "GiB")
    s.sync()
    try:
        w = make_window()
        w.show_page("catalog")
        header = w.page("catalog").views["accelerators"].model().headerData(2, Qt.Orientation.Horizontal)
        assert header == "memory\n(GiB)"
        assert units.fmt_mem(24 * 2**30) == "24.0 GiB"
    finally:
        s.setValue("display/memory_unit", "GB")
        s.sync()
        units.set_memory_binary(False)
