"""advisor.untrusted: text from outside made inert, one function per medium (values worked out by hand)."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from advisor.untrusted import ELLIPSIS, NAME_MAX_CHARS, html_text, markdown_text, name_text, plain_text


@pytest.mark.parametrize(("value", "shown"), [
    ("NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 4090"),  # a clean name is unchanged
    ("\x1b]0;pwned\x07", "\\x1b]0;pwned\\x07"),  # OSC window title: ESC and BEL visible
    ("\x1b[2J", "\\x1b[2J"),  # CSI clear screen
    ("nul\x00byte", "nul\\x00byte"),
    ("a\tb\nc\rd\x7f", "a\\x09b\\x0ac\\x0dd\\x7f"),  # C0 and DEL: a name is one line
    ("\x9b2J", "\\x9b2J"),  # C1 CSI (U+009B): a one-character escape on some terminals
    ("\u202eevil", "\\u202eevil"),  # right-to-left override (UAX #9)
    ("a\u2066b\u2069c\u200fd", "a\\u2066b\\u2069c\\u200fd"),  # isolates and a mark
    ("line\u2028sep", "line\\u2028sep"),  # Unicode line separator
    ("bad\udcff\udcfeutf8", "bad\ufffd\ufffdutf8"),  # undecodable bytes kept by surrogateescape
    (b"caf\xc3\xa9 \xff", "café \ufffd"),  # bytes: UTF-8 with replacement
    ("[link=file:///etc/passwd]x[/link]", "[link=file:///etc/passwd]x[/link]"),  # markup is a terminal's business
    ("<img src=\"/dev/zero\">", "<img src=\"/dev/zero\">"),  # and HTML the HTML medium's
    (None, ""),
    (42, "42"),
    ("café ✓ 日本", "café ✓ 日本"),  # letters and symbols of every script stay
])
def test_plain_text_shows_controls_as_escapes(value, shown):
    assert plain_text(value) == shown


def test_long_text_is_cut_with_an_ellipsis():
    assert plain_text("x" * 100_000, 10) == "x" * 9 + ELLIPSIS
    assert plain_text("x" * 10, 10) == "x" * 10
    assert plain_text("\x1b" * 10, 10) == "\\x1b\\x1b" + "\\" + ELLIPSIS  # escapes count in the length
    assert len(name_text("L" * 100_000)) == NAME_MAX_CHARS
    assert plain_text("x" * 5000, None) == "x" * 5000


def test_html_and_markdown_escape_tags_and_markup():
    assert html_text('<img src="/dev/zero">') == "&lt;img src=&quot;/dev/zero&quot;&gt;"
    assert html_text("a\nb\tc\x1b[2J&") == "a b c\\x1b[2J&amp;"  # line breaks are spaces in HTML
    assert markdown_text("[x](javascript:y) `z` *w* | <b>") == "\\[x\\](javascript:y) \\`z\\` \\*w\\* \\| &lt;b&gt;"


BIDI = set("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _inert(text: str) -> bool:
    """No control character (Cc), no surrogate (Cs), no line separator (Zl, Zp), no bidi formatting."""
    return all(unicodedata.category(c) not in ("Cc", "Cs", "Zl", "Zp") and c not in BIDI for c in text)


@given(st.text(max_size=300), st.integers(min_value=1, max_value=120))
def test_plain_text_is_always_inert_and_bounded(text, limit):
    out = plain_text(text, limit)
    assert len(out) <= limit
    assert _inert(out)
    out.encode("utf-8")  # never a lone surrogate: it can always be written out (raises if not)


@given(st.text(max_size=200))
def test_html_text_holds_no_tag_or_raw_control(text):
    out = html_text(text)
    assert "<" not in out and ">" not in out and '"' not in out
    assert _inert(out)
