"""The Probes page's disk folder reaches the disk probe."""

from __future__ import annotations

import advisor.probes.disk as disk


def test_probes_page_passes_the_disk_folder(make_window, qtbot, tmp_path, monkeypatch):
    monkeypatch.setattr(disk, "QUICK_FILE_MIB", 2)
    w = make_window()
    w.show_page("probes")
    page = w.page("probes")
    page.disk_path.setText(str(tmp_path / "missing"))
    assert page.start(["disk"]) is None and "is not a folder" in page.message.text()
    page.disk_path.setText(str(tmp_path))
    assert page.start(["disk"]) is not None
    qtbot.waitUntil(lambda: page._worker is None, timeout=30000)
    assert page.runs and page.runs[0].result.params["directory"] == str(tmp_path)
