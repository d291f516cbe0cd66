"""Monitor fills from the fake backend and survives a lost GPU; probes run and cancel; catalog searches."""

from __future__ import annotations

import csv

import numpy as np


def _points(page, metric):
    for m, _scale, item in page._curves:
        if m == metric:
            x, _y = item.getData()
            return 0 if x is None else len(x)
    raise KeyError(metric)


def test_monitor_plots_fill_and_export(make_window, qtbot, tmp_path):
    w = make_window("2x4090", interval_s=0.1)
    w.show_page("monitor")
    page = w.page("monitor")
    qtbot.waitUntil(lambda: _points(page, "gpu1_power_w") >= 5, timeout=10000)
    x, y = next(item for m, _s, item in page._curves if m == "gpu0_util_pct").getData()
    assert x[-1] == 0 and np.all(x <= 0) and np.nanmax(y) <= 100
    assert page.process_model.rowCount() >= 2
    page.pause_button.setChecked(True)
    qtbot.wait(150)
    n = len(w.ctx.sampler.history)
    qtbot.wait(400)
    assert len(w.ctx.sampler.history) == n
    page.pause_button.setChecked(False)
    out = tmp_path / "mon.csv"
    worker = page.export(str(out))
    qtbot.waitUntil(lambda: page._export_worker is None, timeout=5000)
    assert worker is not None
    rows = list(csv.reader(out.open()))
    assert rows[0][:5] == ["time_s", "wall_time_utc", "simulated", "cpu_util_pct", "cpu_freq_mhz"]
    assert "gpu1_temp_c" in rows[0] and len(rows) > 5
    # the simulated GPUs are said so on every row, and each row carries its UTC wall-clock time
    assert {r[2] for r in rows[1:]} == {"1"} and all(r[1].endswith("Z") and r[1][4] == "-" for r in rows[1:])


def test_gpu_lost_while_running_keeps_the_app_running(make_window, qtbot):
    w = make_window("gpu-lost", interval_s=0.2)
    w.show_page("monitor")
    page = w.page("monitor")
    qtbot.waitUntil(lambda: any("GPU lost" in e.text for e in page._event_rows), timeout=10000)
    qtbot.wait(300)
    assert _points(page, "gpu0_util_pct") > _points(page, "gpu1_util_pct") - 1
    w.show_page("machine")
    machine = w.page("machine")
    qtbot.waitUntil(lambda: "lost" in machine._live[1]["util"].text(), timeout=5000)
    assert machine._live[0]["util"].text().endswith("%")


def test_probe_runs_and_shows_results(make_window, qtbot):
    w = make_window()
    w.show_page("probes")
    page = w.page("probes")
    page.quick.setChecked(False)  # quick mode times the triad alone; the full run shows all four kernels
    worker = page.start(["host-bandwidth"], {"host-bandwidth": {"elements": 300_000, "reps": 2, "trials": 1,
                                                                "warmup_s": 0.0}})
    assert worker is not None
    qtbot.waitUntil(lambda: page._worker is None, timeout=30000)
    assert page.runs and page.runs[0].result.results["triad"].best > 0
    assert page.result_model.rowCount() == 4
    assert page.history_model.rowCount() == 1
    assert ("host-bandwidth", "cpu") in w.ctx.probe_results
    page.start(["host-bandwidth"], {"host-bandwidth": {"elements": 300_000, "reps": 2, "trials": 1, "warmup_s": 0.0}})
    qtbot.waitUntil(lambda: page._worker is None, timeout=30000)
    assert page.history_model.rowCount() == 2
    page.history_view.selectAll()
    assert "later run against earlier run" in page.message.text() and "×" in page.message.text()


def test_probe_cancels_within_a_second(make_window, qtbot):
    import time

    w = make_window()
    w.show_page("probes")
    page = w.page("probes")
    page.start(["host-bandwidth"], {"host-bandwidth": {"elements": 2_000_000, "reps": 100000, "trials": 50}})
    qtbot.waitUntil(lambda: "trial" in page.message.text() or "allocating" in page.message.text(), timeout=30000)
    t0 = time.monotonic()
    page.cancel()
    qtbot.waitUntil(lambda: page._worker is None, timeout=5000)
    assert time.monotonic() - t0 < 2.0
    assert "cancelled" in page.message.text()
    assert page.history_model.rowCount() == 0


def test_catalog_search_and_numeric_sort(make_window, qtbot):
    from PySide6.QtCore import Qt

    w = make_window()
    w.show_page("catalog")
    page = w.page("catalog")
    proxy = page.proxies["accelerators"]
    total = proxy.rowCount()
    page.search.setText("h100")
    assert 0 < proxy.rowCount() < total
    page.search.setText("")
    page.views["accelerators"].sortByColumn(2, Qt.SortOrder.DescendingOrder)  # memory (GiB)
    first = proxy.index(0, 2).data(Qt.ItemDataRole.DisplayRole)
    assert float(first.replace(",", "")) >= 180
    # how old the prices are, from the rows' own dates: the newest, the oldest bound, the ones a year old
    assert "prices from 2025-06-05 or earlier to 2026-03-15" in page.as_of.text()
    assert "older than a year" in page.as_of.text() and "undated" in page.as_of.text()
