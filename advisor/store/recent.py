"""The list of scenario files opened or saved lately (``recent_scenarios.json`` in the config directory).

Kept apart from ``advisor.store.scenario`` so that the app's File menu reads it at start-up without importing the
job schema (pydantic), which is loaded only when a scenario is opened or a plan is made.
"""

from __future__ import annotations

import os
from pathlib import Path

from advisor.store.atomic import write_atomic

RECENT_FILE = "recent_scenarios.json"
RECENT_MAX = 10


def _recent_path() -> Path:
    from advisor import paths

    return paths.config_dir() / RECENT_FILE


def recent_scenarios() -> list[Path]:
    """Scenario files opened or saved lately, newest first (files that no longer exist are left out).

    A broken list is kept aside and treated as empty.
    """
    import json

    from advisor.store.atomic import keep_aside

    path = _recent_path()
    if not path.exists():
        return []
    try:
        doc = json.loads(path.read_bytes().decode("utf-8"))
        if not isinstance(doc, dict) or doc.get("schema") != "advisor.recent-scenarios/1":
            raise ValueError("schema")
        items = [Path(p) for p in doc.get("files", []) if isinstance(p, str)]
    except (UnicodeDecodeError, ValueError):
        keep_aside(path)
        return []
    return [p for p in items if p.exists()]


def add_recent_scenario(path: str | os.PathLike) -> list[Path]:
    """Put ``path`` first in the recent list (at most ``RECENT_MAX``); returns the new list."""
    import json

    path = Path(path).resolve()
    items = [path] + [p for p in recent_scenarios() if p != path]
    items = items[:RECENT_MAX]
    write_atomic(_recent_path(), json.dumps({"schema": "advisor.recent-scenarios/1",
                                             "files": [str(p) for p in items]}, indent=1) + "\n")
    return items
