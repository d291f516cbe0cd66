"""How the terminal shows text from outside (names, command lines, notes, host names): as inert text.

Every command that prints such text goes through one of these (``advisor.untrusted`` says why):
``echo`` for a line, ``lines_text`` for a report of lines, ``cell`` for a fixed-width table cell and
``term_text`` for a cell of a rich table (a ``rich.text.Text``: never parsed as markup, so ``[/data]`` or
``[link=file:///etc/passwd]`` in a command line prints as it is).
"""

from __future__ import annotations

import sys

from advisor.untrusted import NAME_MAX_CHARS, TEXT_MAX_CHARS, plain_text

CELL_MAX_CHARS = 60  # a name in a fixed-width terminal table


def echo(text, *, file=None, flush: bool = False) -> None:
    """Print one line that holds text from outside; control characters are shown as escapes."""
    print(plain_text(text), file=sys.stdout if file is None else file, flush=flush)


def lines_text(lines) -> str:
    """Lines (each may hold text from outside) as one printable block: each made inert, then joined."""
    return "\n".join(plain_text(line) for line in lines)


def cell(value, max_chars: int = CELL_MAX_CHARS) -> str:
    """A name for a fixed-width table cell: inert and cut to ``max_chars`` with an ellipsis."""
    return plain_text(value, max_chars)


def term_text(value, style: str = "", max_chars: int | None = NAME_MAX_CHARS):
    """A name as a ``rich.text.Text`` (taken literally, never as markup) for a rich table or console."""
    from rich.text import Text

    return Text(plain_text(value, TEXT_MAX_CHARS if max_chars is None else max_chars), style=style)
