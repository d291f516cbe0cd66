"""The application icon: an SVG source and PNG renderings of every size, kept in step with the SVG."""

from __future__ import annotations

import importlib.util
import struct
import xml.etree.ElementTree as ET

import pytest

from tests.packaging.support import ICON_DIR, ICON_SIZES, REPO

SVG = ICON_DIR / "advisor.svg"


def _png_size(path) -> tuple[int, int]:
    data = path.read_bytes()[:24]
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", f"{path.name} is not a PNG"
    return struct.unpack(">II", data[16:24])


def _render_module():
    spec = importlib.util.spec_from_file_location("render_icons", REPO / "packaging" / "render_icons.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_svg_is_square_and_parses():
    root = ET.parse(SVG).getroot()
    x, y, w, h = (float(v) for v in root.get("viewBox").split())
    assert w == h > 0


@pytest.mark.parametrize("size", ICON_SIZES)
def test_png_has_its_size(size):
    assert _png_size(ICON_DIR / f"advisor-{size}.png") == (size, size)


def test_render_script_covers_every_size():
    assert tuple(_render_module().SIZES) == ICON_SIZES


def test_pngs_match_the_svg(qapp, tmp_path):
    """Re-rendering the SVG gives (nearly) the committed PNGs: run packaging/render_icons.py after editing it."""
    from PySide6.QtGui import QImage

    _render_module().render(SVG, tmp_path, sizes=(32, 128))
    for size in (32, 128):
        fresh = QImage(str(tmp_path / f"advisor-{size}.png")).convertToFormat(QImage.Format.Format_RGBA8888)
        kept = QImage(str(ICON_DIR / f"advisor-{size}.png")).convertToFormat(QImage.Format.Format_RGBA8888)
        assert fresh.size() == kept.size()
        a, b = bytes(fresh.constBits()), bytes(kept.constBits())
        mean_diff = sum(abs(p - q) for p, q in zip(a, b)) / len(a)
        assert mean_diff < 2.0, f"advisor-{size}.png differs from the SVG (mean channel difference {mean_diff:.1f})"
