"""Empty pages say what to do first: the Probes chart before any run, a Catalog search that matches nothing."""

from __future__ import annotations

from PySide6.QtCore import Qt

from advisor.gui.widgets import plots
from advisor.probes import KernelResult, ProbeResult


def test_probes_chart_says_how_to_start_until_a_result_is_drawn(make_window, qtbot):
    w = make_window()
    w.show_page("probes")
    page = w.page("probes")
    assert "Run" in (plots.empty_text(page.chart) or "")
    result = ProbeResult(probe="host-bandwidth", device="cpu",
                         results={"triad": KernelResult(12.0, 11.0, "GB/s", repetitions=3)})
    page._draw_bars(result)
    assert plots.empty_text(page.chart) is None


def test_catalog_search_without_match_says_what_to_do(make_window, qtbot):
    w = make_window()
    w.show_page("catalog")
    page = w.page("catalog")
    before = page.note.text()
    page.search.setText("no-such-accelerator-xyz")
    assert "Nothing matches" in page.note.text() and "Esc" in page.note.text()
    w.activateWindow()
    qtbot.waitUntil(w.isActiveWindow, timeout=3000)
    page.search.setFocus()
    qtbot.keyClick(page.search, Qt.Key.Key_Escape)
    assert page.search.text() == ""
    assert page.note.text() == before
