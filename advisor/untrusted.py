"""Text the advisor does not control, shown as inert text: one function per medium.

Names come from outside everywhere: GPU and driver names (the driver), other users' process command lines
(NVML lists every process on the GPU), model names (GGUF metadata, ``config.json``, Ollama manifests, LM Studio
folder names), price-list fields (providers, regions, notes), fleet host names and node replies. Any of them
may hold terminal escapes (``ESC]0;title BEL`` sets a window title, ``ESC[2J`` clears the screen), rich markup
(``[link=file:///etc/passwd]``), HTML (``<img src="/dev/zero">`` makes a Qt label read a file as an image),
bidirectional overrides (U+202E reverses what follows), invalid UTF-8 or 100 kB of text.

Each medium has one function, and every place that shows such a name goes through it:

- plain text (the terminal, a Qt label or cell in plain-text format): ``plain_text``. Control characters
  (C0, DEL, C1; ECMA-48 sections 5 and 8.3) and the bidirectional formatting characters (Unicode Standard
  Annex #9, section 2, "Explicit Directional Formatting Characters") are shown as ``\\x1b``/``\\u202e``
  escapes, lone surrogates (undecodable bytes of a command line) as U+FFFD, and the text is cut to a length
  with an ellipsis. The terminal's rich tables take it as ``rich.text.Text`` (never as markup):
  ``advisor.commands._terminal.term_text``.
- HTML (reports, the PDF, Qt rich text and tooltips): ``html_text``, the plain text with ``& < > " '``
  as entities (``html.escape``), line breaks as spaces.
- Markdown (reports): ``markdown_text``, the HTML text with the characters that start code, emphasis,
  links or images, or end a table cell, backslash-escaped (CommonMark 0.31, section 2.4 "Backslash escapes").
- CSV: ``advisor.units.csv_safe`` (a leading ``'`` before a formula character, OWASP "CSV Injection").

Pure: no Qt, no rich; nothing here reads or writes a file.
"""

from __future__ import annotations

import html
import re

ELLIPSIS = "…"
TEXT_MAX_CHARS = 4096  # longer than any real name or command line shown; 100 kB of text is cut here
NAME_MAX_CHARS = 200  # a name in a table cell, a label or a combo box

# Unicode bidirectional formatting characters (UAX #9, 2.1-2.7) and the line/paragraph separators, which
# act as line breaks: shown as escapes, so a name cannot reverse or break the text after it.
_FORMAT_CHARS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u2028\u2029")
_MD_SPECIAL = "\\`*[]|"  # what can start code, emphasis, a link or an image, or end a table cell


def _char(c: str) -> str:
    o = ord(c)
    if o < 0x20 or 0x7F <= o <= 0x9F:
        return f"\\x{o:02x}"
    if c in _FORMAT_CHARS:
        return f"\\u{o:04x}"
    if 0xD800 <= o <= 0xDFFF:  # a lone surrogate: an undecodable byte (surrogateescape) that cannot be printed
        return "\ufffd"
    return c


# Any character _char changes (one regular-expression search: the common clean name costs microseconds).
_NEEDS_CARE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff" + "".join(sorted(_FORMAT_CHARS)) + "]")


def plain_text(value, max_chars: int | None = TEXT_MAX_CHARS) -> str:
    """``value`` as one line of inert text for a terminal or a plain-text widget.

    Args:
        value: any object; ``bytes`` are decoded as UTF-8 with U+FFFD for invalid sequences, None is "".
        max_chars: the longest result (an ellipsis ends a cut text); None keeps it whole.

    Returns:
        The text with control and bidirectional formatting characters written as ``\\xNN``/``\\uNNNN``.
    """
    if value is None:
        return ""
    if isinstance(value, bytes | bytearray):
        text = bytes(value).decode("utf-8", "replace")
    else:
        text = value if isinstance(value, str) else str(value)
    if max_chars is not None and len(text) > max_chars:
        text = text[:max_chars]
        cut = True
    else:
        cut = False
    if _NEEDS_CARE.search(text):
        text = "".join(_char(c) for c in text)
        if max_chars is not None and len(text) > max_chars:
            text, cut = text[:max_chars], True
    return text[:max(0, len(text) - 1)] + ELLIPSIS if cut and max_chars else text


def name_text(value) -> str:
    """A name for a table cell, a label or a combo box: ``plain_text`` cut at ``NAME_MAX_CHARS``."""
    return plain_text(value, NAME_MAX_CHARS)


def html_text(value, max_chars: int | None = TEXT_MAX_CHARS, *, quote: bool = True) -> str:
    """``value`` as HTML text: line breaks and tabs as spaces, other control characters as escapes, and
    ``& < > " '`` as entities, so it is shown as text in a report, a Qt label or a tooltip (never a tag)."""
    if value is None:
        return ""
    text = value.decode("utf-8", "replace") if isinstance(value, bytes | bytearray) else str(value)
    text = text.replace("\r\n", " ").translate({0x0A: " ", 0x0D: " ", 0x09: " "})
    return html.escape(plain_text(text, max_chars), quote=quote)


def markdown_text(value, max_chars: int | None = TEXT_MAX_CHARS) -> str:
    """``value`` as literal Markdown: ``html_text``, then the Markdown punctuation backslash-escaped, so
    ``<script>`` or ``[x](javascript:...)`` stays text and a ``|`` cannot end a table cell."""
    out = html_text(value, max_chars, quote=False)
    return "".join("\\" + c if c in _MD_SPECIAL else c for c in out)
