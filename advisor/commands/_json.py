"""One way every command prints its JSON document: strict JSON (no NaN or infinity), one document on stdout."""

from __future__ import annotations

import json
import sys
from typing import Any


def print_json(doc: Any, indent: int | None = None, default=None) -> None:
    """Print ``doc`` as one strict JSON document (``allow_nan=False``).

    Raises:
        UsageError: a figure in the document is not a finite number (the input drove a result out of range);
            nothing is printed.
    """
    try:
        text = json.dumps(doc, indent=indent, allow_nan=False, default=default)
    except ValueError:
        from advisor.cli import UsageError

        raise UsageError("a result is not a finite number (an input is out of range); nothing was printed") from None
    print(text, file=sys.stdout)
