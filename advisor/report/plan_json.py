"""The ``advisor.plan/1`` JSON text of a plan: one builder for ``advisor plan --json`` and the app's ``plan.json``."""

from __future__ import annotations

import json
import os
from pathlib import Path

from advisor.report.content import ReportError


def _json_default(value):
    if isinstance(value, (set, tuple)):
        return list(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def plan_json_text(doc: dict) -> str:
    """The document as JSON text (no NaN or infinity; tuples as lists), ending in a newline.

    Args:
        doc: an ``advisor.plan/1`` or ``advisor.plan-set/1`` document, or a plan result (its ``to_json()``).
    Raises:
        ReportError: a figure is out of range (not finite): the whole text is refused, never half of it.
    """
    if not isinstance(doc, dict):
        doc = doc.to_json()
    try:
        return json.dumps(doc, indent=1, allow_nan=False, default=_json_default) + "\n"
    except ValueError as exc:
        raise ReportError(f"plan: a figure is out of range ({exc}); give smaller inputs") from None


def write_plan_json(path: str | os.PathLike, doc) -> Path:
    """Write :func:`plan_json_text` to ``path`` atomically. Returns the path.

    Raises:
        ReportError: a figure is out of range (nothing is written).
        OSError: the file cannot be written (an old file is left intact).
    """
    from advisor.store.atomic import write_atomic

    return write_atomic(path, plan_json_text(doc))
