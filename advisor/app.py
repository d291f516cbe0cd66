"""Build the QApplication, pick the theme and backends, show the main window (or render screenshots).

Importing this module imports Qt; ``advisor.cli`` imports it only inside ``advisor gui``.
torch is never imported here: only a running probe imports it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from PySide6.QtCore import QObject, Qt, Slot
from PySide6.QtGui import QGuiApplication, QIcon
from PySide6.QtWidgets import QApplication

from advisor.gui.compat import speed_up_feature_hook
from advisor.untrusted import plain_text

speed_up_feature_hook()  # before the app's own modules are imported (a twelfth of the start-up)

APP_NAME = "Hardware Advisor"


def app_icon() -> QIcon:
    """The app icon from ``advisor.resources/icons`` (an empty icon when the files are missing)."""
    from importlib import resources

    icon = QIcon()
    try:
        folder = resources.files("advisor.resources").joinpath("icons")
        for size in (16, 24, 32, 48, 64, 128, 256):
            f = folder.joinpath(f"advisor-{size}.png")
            if f.is_file():
                icon.addFile(str(f))
    except (ModuleNotFoundError, FileNotFoundError, NotADirectoryError):
        pass
    return icon


def get_app(argv: list[str] | None = None) -> QApplication:
    """The process's QApplication, created with the app's name, icon and theme when there is none."""
    from advisor.gui.compat import guard_none_refcount

    guard_none_refcount()
    app = QApplication.instance()
    if app is None:
        QGuiApplication.setHighDpiScaleFactorRoundingPolicy(Qt.HighDpiScaleFactorRoundingPolicy.PassThrough)
        app = QApplication(argv or [sys.argv[0]])
    app.setApplicationName(APP_NAME)
    app.setOrganizationName("hardware-advisor")
    app.setDesktopFileName("org.hardwareadvisor.HardwareAdvisor")  # the .desktop entry in packaging/linux
    app.setWindowIcon(app_icon())
    apply_theme(app)
    return app


def apply_theme(app) -> None:
    """Palette and chart colours for the system scheme; followed again whenever the scheme changes.

    The charts' module (and pyqtgraph, a quarter of a second to import) is not imported for this: the Machine
    page shown at start has no chart; the module takes the current theme when a page first imports it.
    """
    from advisor.gui import theme

    t = theme.apply(app)
    plots = sys.modules.get("advisor.gui.widgets.plots")
    if plots is not None:
        plots.configure(t)
    if not hasattr(app, "_advisor_scheme_follower"):
        follower = _SchemeFollower(app)
        QGuiApplication.styleHints().colorSchemeChanged.connect(follower.on_scheme_changed)
        app._advisor_scheme_follower = follower


class _SchemeFollower(QObject):
    """Re-applies the palette when the desktop switches between light and dark."""

    @Slot(Qt.ColorScheme)
    def on_scheme_changed(self, _scheme) -> None:
        apply_theme(QApplication.instance())


def build_window(fake_gpu: str | None = None, catalog=None, scratch: bool = False):
    """A main window with its context, settings and backends (the caller shows it).

    Args:
        fake_gpu: fake scenario name, or None to use ``ADVISOR_FAKE_GPU`` / the real hardware.
        catalog: a catalog to use instead of loading one (tests).
        scratch: write no user data (screenshots): settings read from the user's file, written to a scratch copy.
    """
    from advisor.gui.context import AppContext
    from advisor.gui.main_window import MainWindow
    from advisor.gui.settings import open_settings

    settings = open_settings(scratch=scratch)
    apply_display_settings(settings)
    ctx = AppContext(fake_gpu, settings, catalog=catalog)
    return MainWindow(ctx)


def apply_display_settings(settings) -> None:
    """The display preferences kept in the settings file: ``display/memory_unit`` (``GB``, the default, or
    ``GiB``) and ``display/theme`` (``system``, ``light`` or ``dark``; ``--theme`` overrides it)."""
    from advisor import units
    from advisor.gui import theme

    units.set_memory_binary(str(settings.value("display/memory_unit", "GB")) == "GiB")
    wanted = str(settings.value("display/theme", "system"))
    if theme.get_override() is None and wanted in ("light", "dark"):
        theme.set_override(wanted)
        apply_theme(QApplication.instance())


def run(fake_gpu: str | None = None, screenshot_dir: str | os.PathLike | None = None,
        size: tuple[int, int] | None = None, theme: str | None = None,
        open_path: str | os.PathLike | None = None) -> int:
    """Start the desktop app; with ``screenshot_dir`` render every page to PNG files, write the current plan to
    ``plan.json`` there (``advisor.plan/1``, as ``advisor plan --json`` prints it) and return.

    Args:
        fake_gpu: fake scenario name, or None.
        screenshot_dir: render every page to ``<dir>/<page>.png`` and exit.
        size: the window's (width, height) in pixels (``--size WxH``); screenshots default to 1440x900.
        theme: "light" or "dark" to force a theme (``--theme``); None follows the system.
        open_path: a scenario file to open as the current job.
    Returns:
        The exit status (0 on success; 2 when the scenario cannot be opened or planned, with one line on stderr).
    """
    from advisor.gui import theme as theme_mod

    theme_mod.set_override(theme)
    app = get_app()
    window = build_window(fake_gpu, scratch=screenshot_dir is not None)
    if size is not None:
        window.setMinimumSize(min(size[0], 900), min(size[1], 600))
        window.resize(*size)
    if screenshot_dir is not None:
        errors: list[str] = []
        window.ctx.screenshot_mode = True
        window.scenarios.show_error = lambda _parent, _title, message: errors.append(message)  # no modal box
        if open_path is not None:
            window.ctx.screenshot_keep_inputs = True
            if not window.scenarios.open_path(open_path, confirmed=True):
                window.close()
                print(f"advisor: {plain_text(errors[-1] if errors else open_path)}", file=sys.stderr)  # may quote the file
                return 2
        if size is None:
            window.resize(1440, 900)
        window.show()
        try:
            files = window.render_screenshots(Path(screenshot_dir))
            status = _write_plan_json(window, Path(screenshot_dir) / "plan.json", files)
        finally:
            window.close()
            app.processEvents()
        for f in files:
            print(f)
        return status
    if open_path is not None:
        window.scenarios.open_path(open_path, confirmed=True)
    window.show()
    return int(app.exec())


def _write_plan_json(window, path: Path, files: list) -> int:
    """The app's current plan as ``advisor.plan/1`` (the same builder as ``advisor plan --json``), atomically."""
    import time

    from PySide6.QtCore import QCoreApplication, QEventLoop

    from advisor.report import ReportError
    from advisor.report.plan_json import write_plan_json

    plan = window.ctx.plan
    plan.ensure_plan()
    deadline = time.monotonic() + 25.0
    while not (plan.is_idle() and (plan.bundle is not None or plan.stale)) and time.monotonic() < deadline:
        QCoreApplication.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 50)
        time.sleep(0.01)
    if plan.result is None:
        print(f"advisor: plan: {plain_text(plan.error or 'no plan')}", file=sys.stderr)
        return 2
    try:
        files.append(write_plan_json(path, plan.result))
    except (ReportError, OSError) as exc:
        print(f"advisor: {exc}", file=sys.stderr)
        return 2
    return 0
