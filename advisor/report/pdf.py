"""PDF report through Qt's printing support: the HTML report laid out by ``QTextDocument`` on a
``QPdfWriter``, charts rendered from the same SVG with QtSvg. Runs offscreen (no display needed)."""

from __future__ import annotations

import os
import sys

from advisor.report.content import PlanSection
from advisor.report.html import render_html

_app = None  # the QApplication this module had to create, kept alive for the process


def _ensure_app():
    global _app
    if not (sys.platform.startswith("linux") and (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # a server without a display can still print
    from PySide6.QtGui import QGuiApplication

    app = QGuiApplication.instance()
    if app is None:
        from PySide6.QtWidgets import QApplication  # a QApplication, so the GUI can share it later

        app = _app = QApplication(["advisor-report"])
    return app


def _svg_image(svg: str, scale: float = 2.0):
    from PySide6.QtCore import QByteArray, QSize
    from PySide6.QtGui import QColor, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    renderer = QSvgRenderer(QByteArray(svg.encode("utf-8")))
    size = renderer.defaultSize()
    image = QImage(QSize(int(size.width() * scale), int(size.height() * scale)), QImage.Format_ARGB32)
    image.fill(QColor("white"))
    painter = QPainter(image)
    renderer.render(painter)
    painter.end()
    return image, size


def render_pdf(secs: list[PlanSection], *, title: str = "Hardware Advisor: plan comparison") -> bytes:
    """The plan report as PDF bytes (``html_pdf`` of the HTML report, its appendix per accelerator)."""
    return html_pdf(lambda chart: render_html(secs, chart=chart, title=title, appendix="per_accelerator"), title)


def html_pdf(build_html, title: str) -> bytes:
    """An HTML report as PDF bytes, laid out in memory (the caller writes them atomically and checks the write;
    Qt's own file writer drops write errors, so a full disk would leave a cut-short file that looks written).

    Args:
        build_html: ``build_html(chart) -> str``, where ``chart(i, svg)`` or ``chart(svg)`` returns the HTML of
            a chart rendered as an image resource (QTextDocument draws no inline SVG).
    Raises:
        RuntimeError: when Qt produced no complete PDF.
    """
    _ensure_app()
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QMarginsF, QSizeF, QUrl
    from PySide6.QtGui import QPageLayout, QPageSize, QPdfWriter, QTextDocument

    doc = QTextDocument()
    images = {}

    def chart(*args) -> str:
        svg = args[-1]
        name = f"chart-{len(images)}.png"
        images[name] = _svg_image(svg)
        width = images[name][1].width()
        return f'<p><img src="{name}" width="{width}"></p>'

    html = build_html(chart)
    for name, (image, _size) in images.items():
        doc.addResource(QTextDocument.ImageResource, QUrl(name), image)
    doc.setHtml(html)
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.WriteOnly)
    writer = QPdfWriter(buffer)
    writer.setTitle(title)
    writer.setCreator("Hardware Advisor")
    writer.setPageLayout(QPageLayout(QPageSize(QPageSize.A4), QPageLayout.Landscape, QMarginsF(12, 12, 12, 12),
                                     QPageLayout.Millimeter))
    writer.setResolution(96)
    rect = writer.pageLayout().paintRectPixels(writer.resolution())
    doc.setPageSize(QSizeF(rect.width(), rect.height()))
    doc.print_(writer)
    del writer  # finishes the document
    buffer.close()
    raw = bytes(data.data())
    if not raw.startswith(b"%PDF-") or b"%%EOF" not in raw[-64:]:
        raise RuntimeError("Qt produced no complete PDF document")
    return raw
