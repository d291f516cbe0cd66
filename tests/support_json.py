"""Helpers for comparing plan documents."""

from __future__ import annotations


def without_sources(doc):
    """A plan document without the keys that say where a value came from (``origin``, ``source``).

    Two plans of the same job given in different places (a scenario file, flags, the app) have the same
    figures and differ only there.
    """
    if isinstance(doc, dict):
        return {k: without_sources(v) for k, v in doc.items() if k not in ("origin", "source")}
    if isinstance(doc, list):
        return [without_sources(v) for v in doc]
    return doc
