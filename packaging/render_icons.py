"""Render the application icon's PNG sizes from ``resources/icons/advisor.svg``.

Run after changing the SVG::

    QT_QPA_PLATFORM=offscreen .venv/bin/python packaging/render_icons.py

Writes ``advisor-<size>.png`` for every size in ``SIZES`` next to the SVG (or into ``--out DIR``).
Needs only PySide6 (QtSvg), which the app already depends on; no display is needed.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

SIZES = (16, 24, 32, 48, 64, 128, 256, 512)
ICON_DIR = Path(__file__).resolve().parent.parent / "resources" / "icons"
SVG_NAME = "advisor.svg"


def render(svg: Path, out_dir: Path, sizes: tuple[int, ...] = SIZES) -> list[Path]:
    """Render ``svg`` to square PNGs ``advisor-<size>.png`` in ``out_dir``.

    Args:
        svg: the source SVG.
        out_dir: where the PNGs go (created if missing).
        sizes: edge lengths in pixels.

    Returns:
        The written paths, smallest first.

    Raises:
        RuntimeError: the SVG does not parse or a PNG cannot be written.
    """
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QGuiApplication, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    app = QGuiApplication.instance() or QGuiApplication([sys.argv[0]])  # noqa: F841  (QPainter needs one)
    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        raise RuntimeError(f"{svg}: not a valid SVG")
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for size in sorted(sizes):
        image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
        image.fill(Qt.GlobalColor.transparent)
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
        renderer.render(painter)
        painter.end()
        path = out_dir / f"advisor-{size}.png"
        if not image.save(str(path), "PNG"):
            raise RuntimeError(f"could not write {path}")
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--svg", type=Path, default=ICON_DIR / SVG_NAME, help="source SVG (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=ICON_DIR, help="output directory (default: %(default)s)")
    args = parser.parse_args(argv)
    for path in render(args.svg, args.out):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
