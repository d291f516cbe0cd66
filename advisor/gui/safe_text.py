"""How the app shows text from outside (GPU, driver and model names, command lines, price-list fields, host
names): as inert text, never as Qt rich text.

Qt renders a label's or a tooltip's text as HTML when it merely looks like HTML (``Qt::mightBeRichText``),
so ``<img src="/dev/zero">`` in a model name would make the label read /dev/zero as an image (until memory
runs out), and ``<font size=7>`` or ``<a href>`` would restyle the page. Every widget that shows such a name
goes through one of these (``advisor.untrusted`` is the text layer):

- ``set_plain(label, text)``: a label in plain-text format, the text inert (control characters as escapes)
  and cut with an ellipsis;
- ``rich(text)``: a name inside rich text the app writes itself (``<b>...</b>``), HTML-escaped;
- ``tip(text)``: a tooltip (Qt reads tooltips as rich text too): inert plain text when nothing in it could
  be read as a tag or an entity, else every line HTML-escaped in a paragraph, rich text whose only markup is
  the app's;
- ``plain(text)``: a table cell, a combo-box item, a status-bar message or a window title (shown as plain
  text by Qt), inert and cut;
- ``ask``/``tell``: a confirmation or a message box in plain-text format (``QMessageBox.question`` and its
  siblings guess the format like a label does).
"""

from __future__ import annotations

import re

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QMessageBox

from advisor.untrusted import NAME_MAX_CHARS, TEXT_MAX_CHARS, html_text, plain_text

TIP_MAX_CHARS = 1000  # a tooltip line: a long command line is shown wrapped, up to this
PLAIN_TIP_CHARS = 300  # a longer line goes in a paragraph of rich text, which Qt wraps (plain text it does not)
# A word-wrapped label breaks only between words: one 200-character "word" would make the page that wide.
# A zero-width space (a break opportunity, Unicode Standard Annex #14 class ZW) goes after every run this long.
_LONG_RUN = re.compile(r"(\S{40})(?=\S)")


def _breakable(text: str) -> str:
    return _LONG_RUN.sub("\\1\u200b", text)


def plain(value, max_chars: int | None = NAME_MAX_CHARS) -> str:
    """Text for a plain-text place (a cell, an item, a status bar, a title): inert, cut at ``max_chars``."""
    return plain_text(value, max_chars)


def rich(value, max_chars: int | None = NAME_MAX_CHARS) -> str:
    """A name to put inside rich text: inert and HTML-escaped (``&lt;img`` is shown, never loaded)."""
    return html_text(_breakable(plain_text(value, max_chars)), None, quote=False)  # element text: <>& suffice


def tip(text, max_chars: int = TIP_MAX_CHARS) -> str:
    """A tooltip from plain text (lines kept): each line escaped, the whole a paragraph of rich text."""
    if text is None or text == "":
        return ""
    lines = [plain_text(line, max_chars) for line in str(text).split("\n")[:40]]
    if not any("<" in line or "&" in line or len(line) > PLAIN_TIP_CHARS for line in lines):
        return "\n".join(lines)  # nothing Qt could read as a tag or an entity: plain text, as written
    return "<p>" + "<br>".join(html_text(_breakable(line), None, quote=False) for line in lines) + "</p>"


def set_plain(label: QLabel, value, max_chars: int | None = TEXT_MAX_CHARS) -> None:
    """Show ``value`` in ``label`` as plain text (never parsed as HTML), inert and cut at ``max_chars``."""
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setText(_breakable(plain_text(value, max_chars)))


def plain_label(value, max_chars: int | None = TEXT_MAX_CHARS) -> QLabel:
    """A new label showing ``value`` as plain text (``set_plain``)."""
    label = QLabel()
    set_plain(label, value, max_chars)
    return label


def _box(parent, icon, title: str, text: str, buttons, default) -> QMessageBox:
    lines = "\n".join(plain_text(line, TIP_MAX_CHARS) for line in str(text).split("\n")[:40])  # breaks kept
    box = QMessageBox(icon, plain(title), lines, buttons, parent)
    box.setTextFormat(Qt.TextFormat.PlainText)
    box.setDefaultButton(default)
    return box


def ask(parent, title: str, text: str) -> bool:
    """A Yes/Cancel question in plain text (Cancel by default); True for Yes. Line breaks are kept."""
    buttons = QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel
    box = _box(parent, QMessageBox.Icon.Question, title, text, buttons, QMessageBox.StandardButton.Cancel)
    return box.exec() == QMessageBox.StandardButton.Yes


def tell(parent, title: str, text: str, icon=QMessageBox.Icon.Warning) -> None:
    """A message box in plain text (line breaks kept) with an OK button."""
    _box(parent, icon, title, text, QMessageBox.StandardButton.Ok, QMessageBox.StandardButton.Ok).exec()
