"""Scenario files: a plan's inputs saved as TOML so a team can share and reopen them.

A scenario file carries ``schema = "advisor.scenario/1"`` and a ``[plan]`` table whose keys are the long
flag names of ``advisor plan`` with ``-`` written as ``_`` (the CLI contract (README, command line)). ``[assumptions]``
(cost assumptions) and ``[notes]`` may follow; a ``[serve]`` table (a serving job) holds serving inputs only
(its keys are checked; ``assumptions`` inside it is refused: it is the file's table); any other top-level table
is kept as is and written back.

This module checks structure and types only; value ranges and preset names are the planner's job.
Older schema versions are migrated on load (see ``MIGRATIONS``); files are written atomically.
"""

from __future__ import annotations

import math
import os
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from advisor.catalog.records import check_id
from advisor.job import JOB_FIELDS
from advisor.store.atomic import write_atomic

SCHEMA = "advisor.scenario/1"
SCHEMA_PREFIX = "advisor.scenario/"

# Kind of each [plan] key, from the job schema (advisor/job/schema.py): "int", "number", "text", "choice",
# "bool" or "ids" (a list of ids). Tables of the job (assumptions, notes) are tables of the file.
PLAN_KEYS: dict[str, str] = {name: m.kind for name, m in JOB_FIELDS.items() if m.scenario and m.kind != "table"}
TABLE_KEYS = tuple(name for name, m in JOB_FIELDS.items() if m.scenario and m.kind == "table")

_KNOWN_TABLES = ("plan", "assumptions", "notes")


class ScenarioError(ValueError):
    """A scenario file that cannot be used; the message is one line naming the file and the field."""


@dataclass(frozen=True)
class Scenario:
    """The inputs of one plan.

    Attributes:
        plan: ``advisor plan`` flag values by key (``"gpus": 8``, ``"accelerator": ["h100-sxm"]``).
        assumptions: cost assumptions by name: a number/string/bool, or a table with ``value`` (and
            optionally ``unit``, ``origin``).
        notes: free-form notes (strings, or any TOML value).
        schema: the schema version; always the current one after loading.
        extra: other top-level tables of the file, kept so that saving does not drop them.
    """

    plan: dict
    assumptions: dict = field(default_factory=dict)
    notes: dict = field(default_factory=dict)
    schema: str = SCHEMA
    extra: dict = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------- migration
def _migrate_0_to_1(doc: dict) -> dict:
    """Version 0 kept the inputs in ``[job]``, named ``gpus`` ``n_gpus`` and ``seq_len``
    ``sequence_length``, and allowed one accelerator as a string."""
    doc = dict(doc)
    job = doc.pop("job", {})
    if not isinstance(job, dict):
        return doc  # left for the [plan] checks to report
    plan = dict(job)
    if isinstance(doc.get("plan"), dict):
        plan.update(doc["plan"])
    renames = {"n_gpus": "gpus", "sequence_length": "seq_len"}
    for old, new in renames.items():
        if old in plan:
            plan.setdefault(new, plan.pop(old))
    if isinstance(plan.get("accelerator"), str):
        plan["accelerator"] = [plan["accelerator"]]
    doc["plan"] = plan
    doc["schema"] = "advisor.scenario/1"
    return doc


# version -> function taking a document of that version to the next one.
MIGRATIONS: dict[int, Callable[[dict], dict]] = {0: _migrate_0_to_1}
CURRENT_VERSION = 1


def migrate(doc: dict, where: str = "<scenario>") -> dict:
    """Bring a parsed scenario document to the current schema.

    Raises:
        ScenarioError: when the schema is missing, unknown, or newer than this advisor understands.
    """
    schema = doc.get("schema")
    if schema is None:
        raise ScenarioError(f"{where}: schema: missing (expected schema = \"{SCHEMA}\")")
    if not isinstance(schema, str) or not schema.startswith(SCHEMA_PREFIX):
        raise ScenarioError(f"{where}: schema: not a scenario file ({schema!r}, expected \"{SCHEMA}\")")
    try:
        version = int(schema[len(SCHEMA_PREFIX):])
    except ValueError:
        raise ScenarioError(f"{where}: schema: unknown version {schema!r} (expected \"{SCHEMA}\")") from None
    if version > CURRENT_VERSION:
        raise ScenarioError(f"{where}: schema: written by a newer advisor (schema {version}); upgrade to open it "
                            f"(this one reads schema {CURRENT_VERSION})")
    while version < CURRENT_VERSION:
        step = MIGRATIONS.get(version)
        if step is None:
            raise ScenarioError(f"{where}: schema: no migration from {schema!r}")
        doc = step(doc)
        version += 1
    return doc


# --------------------------------------------------------------------------------------------- validation
def _check_plan_value(key: str, value: Any, where: str) -> Any:
    """The type of one [plan] value (its range is the schema's, checked when the plan is made)."""
    kind = PLAN_KEYS[key]
    label = f"{where}: plan.{key}"
    if kind == "choice":
        kind = "int" if isinstance(JOB_FIELDS[key].choices[0], int) else "text"
    if kind == "text":
        if not isinstance(value, str):
            raise ScenarioError(f"{label}: must be a string, got {_short(value)}")
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise ScenarioError(f"{label}: must be true or false, got {_short(value)}")
        return value
    if kind == "ids":
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ScenarioError(f"{label}: must be a list of ids, got {_short(value)}")
        _check_ids(value, label)
        return list(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ScenarioError(f"{label}: must be a number, got {_short(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ScenarioError(f"{label}: must be a finite number, got {value!r}")
    if kind == "int":
        if isinstance(value, float):
            if not value.is_integer():
                raise ScenarioError(f"{label}: must be a whole number, got {value!r}")
            value = int(value)
    return value


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _check_ids(values: list, label: str) -> None:
    """Accelerator ids enter here from a file: refuse any outside the catalog's character set (one line).
    (``model`` is not an id only: a preset id, a path or ``hf:ORG/NAME``; the job schema keeps it to one
    line of printable text.)"""
    for v in values:
        try:
            check_id(v, label)
        except ValueError as exc:
            raise ScenarioError(str(exc)) from None


def _check_assumptions(table: Any, where: str) -> dict:
    if not isinstance(table, dict):
        raise ScenarioError(f"{where}: assumptions: must be a table")
    out = {}
    for name, value in table.items():
        label = f"{where}: assumptions.{name}"
        if isinstance(value, dict):
            if "value" not in value:
                raise ScenarioError(f"{label}: a table needs a 'value'")
            unknown = sorted(set(value) - {"value", "unit", "origin"})
            if unknown:
                raise ScenarioError(f"{label}: unknown key {unknown[0]!r} (use value, unit, origin)")
            inner = value["value"]
            for k in ("unit", "origin"):
                if k in value and not isinstance(value[k], str):
                    raise ScenarioError(f"{label}.{k}: must be a string")
        else:
            inner = value
        if isinstance(inner, float) and not math.isfinite(inner):
            raise ScenarioError(f"{label}: must be a finite number, got {inner!r}")
        if not isinstance(inner, (int, float, str, bool)):
            raise ScenarioError(f"{label}: must be a number, string or true/false, got {inner!r}")
        out[name] = dict(value) if isinstance(value, dict) else value
    return out


def _check_serve_keys(table: Any, where: str) -> None:
    """A ``[serve]`` table holds the inputs of a serving job only (``job.serve.SERVE_FIELDS``); the cost
    assumptions and notes are tables of the file (``[assumptions]``, ``[notes]``), never silently ignored."""
    from advisor.job.serve import SERVE_FIELDS

    if not isinstance(table, dict):
        raise ScenarioError(f"{where}: serve: must be a table, got {type(table).__name__}")
    for key in table:
        if key in (*TABLE_KEYS, "sources"):
            raise ScenarioError(f"{where}: serve.{key}: a table of the file, not of [serve]: write it as [{key}]")
        if key not in SERVE_FIELDS:
            hint = " (use '_' for '-')" if str(key).replace("-", "_") in SERVE_FIELDS else ""
            raise ScenarioError(f"{where}: serve.{key}: unknown key{hint}")


def scenario_from_dict(doc: Any, where: str = "<scenario>") -> Scenario:
    """Validate a parsed TOML document (any schema version) and return the current ``Scenario``.

    Raises:
        ScenarioError: naming ``where`` and the bad field.
    """
    if not isinstance(doc, dict):
        raise ScenarioError(f"{where}: not a TOML table")
    doc = migrate(doc, where)
    if "plan" not in doc and not isinstance(doc.get("serve"), dict):  # a serving job alone needs no [plan]
        raise ScenarioError(f"{where}: plan: missing [plan] table")
    plan_in = doc.get("plan", {})
    if not isinstance(plan_in, dict):
        raise ScenarioError(f"{where}: plan: must be a table, got {type(plan_in).__name__}")
    plan = {}
    for key, value in plan_in.items():
        if key not in PLAN_KEYS:
            hint = " (use '_' for '-')" if key.replace("-", "_") in PLAN_KEYS else ""
            raise ScenarioError(f"{where}: plan.{key}: unknown key{hint}")
        plan[key] = _check_plan_value(key, value, where)
    if "serve" in doc:
        _check_serve_keys(doc["serve"], where)
    assumptions = _check_assumptions(doc.get("assumptions", {}), where)
    notes = doc.get("notes", {})
    if not isinstance(notes, dict):
        raise ScenarioError(f"{where}: notes: must be a table")
    extra = {k: v for k, v in doc.items() if k not in _KNOWN_TABLES and k != "schema"}
    return Scenario(plan=plan, assumptions=assumptions, notes=dict(notes), schema=SCHEMA, extra=extra)


def loads_scenario(text: str, where: str = "<scenario>") -> Scenario:
    """Parse scenario TOML text. Raises ``ScenarioError`` naming ``where``."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{where}: not valid TOML: {_one_line(exc)}") from None
    except RecursionError:  # arrays nested thousands deep
        raise ScenarioError(f"{where}: not a scenario file (values nested too deeply)") from None
    return scenario_from_dict(doc, where)


def load_scenario(path: str | os.PathLike) -> Scenario:
    """Read a scenario file.

    Returns:
        The scenario, migrated to the current schema.
    Raises:
        ScenarioError: one line naming the file and the field or reason (unreadable, not UTF-8,
            bad TOML, missing or unknown schema, bad ``[plan]`` key or type).
    """
    from advisor.catalog.readfile import read_regular_file

    path = Path(path)
    where = str(path)
    try:
        raw = read_regular_file(path)  # a regular file of bounded size: a FIFO or /dev/zero is refused
    except OSError as exc:
        raise ScenarioError(f"{where}: cannot read: {exc.strerror or exc}") from None
    if b"\x00" in raw:
        raise ScenarioError(f"{where}: not a text file (binary data)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScenarioError(f"{where}: not UTF-8 text (byte {exc.start})") from None
    return loads_scenario(text, where)


# ------------------------------------------------------------------------------------------------ saving
def scenario_to_dict(scenario: Scenario) -> dict:
    """The TOML document of a scenario (current schema; ``None`` plan values are left out).

    Raises:
        ScenarioError: when the scenario would not load back (unknown key, wrong type).
    """
    plan = {k: v for k, v in scenario.plan.items() if v is not None}
    doc: dict = {"schema": SCHEMA, "plan": plan}
    if scenario.assumptions:
        doc["assumptions"] = dict(scenario.assumptions)
    if scenario.notes:
        doc["notes"] = dict(scenario.notes)
    for key, value in scenario.extra.items():
        if key not in doc:
            doc[key] = value
    scenario_from_dict(doc, "<scenario to save>")  # refuse to write what could not be read back
    return doc


def dumps_scenario(scenario: Scenario) -> str:
    """Scenario as TOML text."""
    import tomli_w

    return tomli_w.dumps(scenario_to_dict(scenario))


def save_scenario(path: str | os.PathLike, scenario: Scenario) -> Path:
    """Write a scenario file atomically (a crash midway leaves any old file intact).

    Returns:
        The path written.
    Raises:
        ScenarioError: when the scenario is invalid (nothing is written).
        OSError: when the file cannot be written (the old file is untouched).
    """
    return write_atomic(path, dumps_scenario(scenario))


def scenario_from_job(job: Any, notes: dict | None = None, extra: dict | None = None,
                      assumption_tables: dict | None = None) -> Scenario:
    """The scenario of a job (``advisor.job.Job``): every input that differs from the schema's default.

    Args:
        notes: the ``[notes]`` table (default: the job's notes).
        extra: other top-level tables to keep.
        assumption_tables: ``{name: {value, unit, origin}}`` tables of the file opened, kept for the
            assumptions whose value did not change.
    """
    plan = {k: v for k, v in job.changed().items() if k in PLAN_KEYS}
    assumptions: dict = {}
    for name, value in job.assumptions.items():
        kept = (assumption_tables or {}).get(name)
        same = isinstance(kept, dict) and kept.get("value") == value
        assumptions[name] = dict(kept) if same else value
    return Scenario(plan=plan, assumptions=assumptions, notes=dict(job.notes if notes is None else notes),
                    extra=dict(extra or {}))


def job_values(scenario: Scenario, name: str = "") -> dict:
    """The ``Job.from_mapping`` values of a scenario: its plan, plain assumptions and notes, and ``sources``
    naming the file for each value (``name``: the file's name as people know it)."""
    where = f"scenario file {name}" if name else "scenario file"
    assumptions, sources = {}, dict.fromkeys(scenario.plan, where)
    for key, raw in scenario.assumptions.items():
        assumptions[key] = raw.get("value") if isinstance(raw, dict) else raw
        origin = raw.get("origin") if isinstance(raw, dict) else None
        sources[key] = f"{where}: {origin}" if origin else where
    return {**scenario.plan, "assumptions": assumptions, "notes": dict(scenario.notes), "sources": sources}


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


# recent files live in advisor/store/recent.py (the app reads them at start without the job schema)
from advisor.store.recent import RECENT_FILE, RECENT_MAX, add_recent_scenario, recent_scenarios  # noqa: E402,F401
