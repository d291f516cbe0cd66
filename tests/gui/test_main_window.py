"""The main window: pages, banner, keyboard navigation, saved state, screenshots, no torch at start."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from PySide6.QtCore import Qt

from advisor.gui.main_window import PAGES


def test_first_start_shows_machine_page_with_gpu_cards(make_window, qtbot):
    w = make_window("2x4090")
    page = w.page("machine")
    assert w.current_page() is page
    assert w.banner.isVisible() and "2x4090" in w.banner.text()
    qtbot.waitUntil(lambda: "RTX 4090" in page.summary.text(), timeout=5000)
    assert "2× GeForce RTX 4090" in page.summary.text()


def test_no_banner_without_fake_gpu(make_window, monkeypatch):
    monkeypatch.setattr("advisor.gui.context.open_hardware", _null_hardware)
    w = make_window(None)
    assert not w.banner.isVisible()
    assert "no GPU found" in w.page("machine").summary.text()


def _null_hardware(fake_gpu, catalog):
    from advisor.hw import detect_machine
    from advisor.hw.fake import FakeHostBackend
    from advisor.hw.null import NullGpuBackend

    gpu, host = NullGpuBackend("NVIDIA driver not found"), FakeHostBackend()
    return gpu, host, detect_machine(gpu, host, frameworks=False, catalog=catalog)


def test_keyboard_navigation_reaches_every_page(make_window, qtbot):
    w = make_window()
    w.activateWindow()
    qtbot.waitUntil(w.isActiveWindow, timeout=3000)
    for i, (pid, *_rest) in enumerate(PAGES[:9]):  # Ctrl+1..9; a tenth page is reached from the sidebar
        qtbot.keyClick(w, Qt.Key(Qt.Key.Key_1 + i), Qt.KeyboardModifier.ControlModifier)
        assert w.current_page() is w.page(pid)
    w.nav.setFocus()
    qtbot.keyClick(w.nav, Qt.Key.Key_Up)
    assert w.current_page() is w.page(PAGES[min(len(PAGES), 9) - 2][0])
    for row in range(9, len(PAGES)):  # pages past the ninth: from the sidebar
        w.nav.setCurrentRow(row)
        assert w.current_page() is w.page(PAGES[row][0])


def test_window_state_and_inputs_restored(make_window, qtbot):
    w = make_window()
    w.show_page("planner")
    planner = w.page("planner")
    box = planner.form.w["model"]
    box.setCurrentIndex(box.findData("mistral-7b"))
    w.page("monitor").window_box.setCurrentIndex(2)
    qtbot.waitUntil(planner.is_ready, timeout=5000)
    w.close()
    w2 = make_window()
    assert w2.current_page() is w2.page("planner")
    assert w2.page("planner").form.values()["model"] == "mistral-7b"
    assert w2.page("monitor").window_box.currentData() == 900


def test_screenshots_render_every_page(make_window, qtbot, tmp_path, monkeypatch):
    monkeypatch.setattr("advisor.gui.pages.probes.ProbesPage.prepare_screenshot", lambda self: None)
    w = make_window()
    files = w.render_screenshots(tmp_path, timeout_s=10)
    assert [f.stem for f in files] == [p[0] for p in PAGES]
    assert all(f.stat().st_size > 8000 for f in files)


def test_start_imports_no_torch():
    code = textwrap.dedent("""
        import os, sys
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
        from advisor.app import get_app, build_window
        from advisor.gui.main_window import PAGES
        app = get_app()
        w = build_window("2x4090")
        w.show()
        for pid, *_ in PAGES:
            w.show_page(pid)
            app.processEvents()
        w.close()
        print("torch" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "False"


def test_screenshots_at_a_size_and_theme(tmp_path, monkeypatch):
    """``advisor gui --screenshot DIR --size 1024x768 --theme dark`` writes every page at that size, dark."""
    from PySide6.QtGui import QImage

    from advisor.cli import main

    monkeypatch.setenv("ADVISOR_HOME", str(tmp_path / "home"))
    assert main(["gui", "--fake-gpu", "2x4090", "--screenshot", str(tmp_path / "shots"), "--size", "1024x768",
                 "--theme", "dark"]) == 0
    # screenshots write no user data: no settings, no probe history (the quick probe runs but is not stored)
    written = sorted(str(p.relative_to(tmp_path / "home")) for p in (tmp_path / "home").rglob("*") if p.is_file())
    assert [w for w in written if not w.startswith("log")] == []
    from advisor.gui import theme

    theme.set_override(None)
    from PySide6.QtWidgets import QApplication

    from advisor.app import apply_theme

    apply_theme(QApplication.instance())
    for pid, *_ in PAGES:
        image = QImage(str(tmp_path / "shots" / f"{pid}.png"))
        assert (image.width(), image.height()) == (1024 * image.devicePixelRatio(), 768 * image.devicePixelRatio())
        assert image.pixelColor(60, 600).lightness() < 80  # the sidebar below its entries: dark
