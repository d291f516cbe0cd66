"""Reading a scenario file named on the command line: one line and exit 2 when it cannot be read."""

from __future__ import annotations

from pathlib import Path


def read_scenario(path: str):
    """The scenario file at ``path``.

    A name that is no file and no ``.toml`` is most often a model typed where the command takes scenario files
    (``advisor plan llama-3.1-8b``): the line says how to give it.

    Raises:
        UsageError: one line naming the file and what is wrong with it.
    """
    from advisor.cli import UsageError
    from advisor.store.scenario import ScenarioError, load_scenario

    try:
        return load_scenario(path)
    except ScenarioError as exc:
        hint = ""
        if not path.lower().endswith(".toml") and not Path(path).exists():
            hint = f" (a scenario file is expected here; to name a model, give --model {path})"
        raise UsageError(f"{exc}{hint}") from None
