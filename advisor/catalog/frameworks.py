"""Training framework profiles: ``resources/frameworks.toml`` checked once into frozen records.

A profile names a framework (``--framework``), its aliases (``trl`` runs on transformers), the workloads it is
the default for, its behaviours (``advisor.estimate.software.TrainingBehaviours``), per-workload changes to them
(torchtune's full fine-tune recipe differs from its QLoRA one) and the source of every behaviour. The estimate
modules read the behaviours, never the names (docs/method.md, "The training framework").

API: ``bundled_frameworks()`` (id -> :class:`FrameworkProfile`, cached), ``framework_names()`` (ids then
aliases, for messages), ``resolve_framework(name, workload)`` and ``parse_frameworks(text)`` (raises
:class:`FrameworkError` naming the profile and field).
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass, fields, replace
from types import MappingProxyType
from typing import Any

from advisor.catalog.load import _resource_text
from advisor.catalog.records import check_id
from advisor.estimate.software import TrainingBehaviours

SCHEMA = "advisor.frameworks/1"
TRAINING_WORKLOADS = ("pretrain", "finetune", "lora", "qlora")
BEHAVIOURS = tuple(f.name for f in fields(TrainingBehaviours))
ORIGINS = ("prior", "fitted", "reference")
_TYPES: dict[str, tuple[type, ...]] = {
    "optimizer_in_backward": (bool,), "activation_offload": (bool,), "tp_saves_gathered": (bool,), "layer_split": (bool,),
    "loss_chunks": (int,),
    "logits_fp32_copies": (int, float), "kernel_efficiency": (int, float), "host_us_per_layer": (int, float),
}


class FrameworkError(ValueError):
    """A framework profile is invalid; the message names the profile and field."""


@dataclass(frozen=True)
class FrameworkProfile:
    """One training framework.

    Attributes:
        id: the ``--framework`` name; name: how people call it; aliases: other names that resolve to it.
        default_for: the workloads it is assumed for when no framework is given.
        behaviours: the behaviours for any workload without its own changes.
        workloads: per-workload changes (behaviour name -> value).
        sources: behaviour name -> where the framework says so; ``workload_sources`` the same per workload.
        kernel_efficiency_origin: ``reference`` (1.0), ``prior`` (a published claim) or ``fitted``.
    """

    id: str
    name: str
    aliases: tuple[str, ...]
    default_for: tuple[str, ...]
    note: str
    behaviours: TrainingBehaviours
    workloads: MappingProxyType
    sources: MappingProxyType
    workload_sources: MappingProxyType
    kernel_efficiency_origin: str

    def behaviours_for(self, workload: str) -> TrainingBehaviours:
        """The behaviours for ``workload`` (the profile's, with that workload's changes)."""
        return replace(self.behaviours, **self.workloads.get(workload, {}))

    def sources_for(self, workload: str) -> dict[str, str]:
        """Behaviour name -> its source for ``workload``."""
        return {**self.sources, **self.workload_sources.get(workload, {})}


def _behaviour_values(table: Any, where: str, *, complete: bool) -> dict[str, Any]:
    if not isinstance(table, dict):
        raise FrameworkError(f"{where}: must be a table of behaviours")
    unknown = sorted(set(table) - set(BEHAVIOURS))
    if unknown:
        raise FrameworkError(f"{where}: unknown behaviour {unknown[0]!r}; known: {', '.join(BEHAVIOURS)}")
    if complete:
        missing = [b for b in BEHAVIOURS if b not in table]
        if missing:
            raise FrameworkError(f"{where}: missing behaviour {missing[0]!r}")
    for key, value in table.items():
        want = _TYPES.get(key, (str,))
        if isinstance(value, bool) and bool not in want or not isinstance(value, want):
            raise FrameworkError(f"{where}.{key}: must be {' or '.join(t.__name__ for t in want)}, got {value!r}")
    return dict(table)


def _sources(table: Any, keys, where: str) -> dict[str, str]:
    if not isinstance(table, dict):
        raise FrameworkError(f"{where}: a 'sources' table is required")
    for key in keys:
        text = table.get(key)
        if not isinstance(text, str) or not text.strip():
            raise FrameworkError(f"{where}.{key}: every behaviour needs its source")
    extra = sorted(set(table) - set(keys))
    if extra:
        raise FrameworkError(f"{where}.{extra[0]}: a source for a behaviour the profile does not set")
    return dict(table)


def _profile(pid: str, raw: Any) -> FrameworkProfile:
    where = f"frameworks.{pid}"
    try:
        check_id(pid)
    except ValueError as exc:
        raise FrameworkError(f"{where}: {exc}") from None
    if not isinstance(raw, dict):
        raise FrameworkError(f"{where}: must be a table")
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        raise FrameworkError(f"{where}.name: required")
    aliases, default_for = raw.get("aliases", []), raw.get("default_for", [])
    if not isinstance(aliases, list) or not all(isinstance(a, str) and a for a in aliases):
        raise FrameworkError(f"{where}.aliases: must be a list of names")
    if not isinstance(default_for, list) or any(w not in TRAINING_WORKLOADS for w in default_for):
        raise FrameworkError(f"{where}.default_for: must list workloads among {', '.join(TRAINING_WORKLOADS)}")
    base = _behaviour_values(raw.get("behaviours"), f"{where}.behaviours", complete=True)
    sources = _sources(raw.get("sources"), BEHAVIOURS, f"{where}.sources")
    changes, changes_sources = {}, {}
    workloads = raw.get("workloads", {})
    if not isinstance(workloads, dict):
        raise FrameworkError(f"{where}.workloads: must be a table by workload")
    for wl, table in workloads.items():
        if wl not in TRAINING_WORKLOADS:
            raise FrameworkError(f"{where}.workloads.{wl}: not a training workload ({', '.join(TRAINING_WORKLOADS)})")
        if not isinstance(table, dict):
            raise FrameworkError(f"{where}.workloads.{wl}: must be a table")
        table = dict(table)
        wl_sources = table.pop("sources", None)
        changes[wl] = MappingProxyType(_behaviour_values(table, f"{where}.workloads.{wl}", complete=False))
        changes_sources[wl] = MappingProxyType(_sources(wl_sources, table, f"{where}.workloads.{wl}.sources"))
    speed = raw.get("speed", {})
    origin = speed.get("kernel_efficiency_origin", "reference") if isinstance(speed, dict) else None
    if origin not in ORIGINS:
        raise FrameworkError(f"{where}.speed.kernel_efficiency_origin: one of {', '.join(ORIGINS)}")
    if origin == "reference" and base["kernel_efficiency"] != 1.0:
        raise FrameworkError(f"{where}.speed: a kernel_efficiency other than 1.0 must say its origin (prior or fitted)")
    try:
        behaviours = TrainingBehaviours(**base)
        for change in changes.values():
            replace(behaviours, **change)
    except ValueError as exc:
        raise FrameworkError(f"{where}: {exc}") from None
    note = raw.get("note", "")
    return FrameworkProfile(pid, name.strip(), tuple(aliases), tuple(default_for), note if isinstance(note, str) else "",
                            behaviours, MappingProxyType(changes), MappingProxyType(sources),
                            MappingProxyType(changes_sources), origin)


def parse_frameworks(text: str) -> dict[str, FrameworkProfile]:
    """Profiles from the TOML text of ``frameworks.toml``.

    Raises:
        FrameworkError: bad TOML, schema, profile or behaviour, a clashing alias, or a training workload with
            no default framework or with two.
    """
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise FrameworkError(f"frameworks.toml: {exc}") from None
    if doc.get("schema") != SCHEMA:
        raise FrameworkError(f"frameworks.toml: schema must be {SCHEMA!r}")
    raw = doc.get("frameworks")
    if not isinstance(raw, dict) or not raw:
        raise FrameworkError("frameworks.toml: no [frameworks.NAME] table")
    out = {pid: _profile(pid, table) for pid, table in raw.items()}
    names: dict[str, str] = {}
    for p in out.values():
        for n in (p.id, *p.aliases):
            if n in names:
                raise FrameworkError(f"frameworks.{p.id}: the name {n!r} is also {names[n]!r}'s")
            names[n] = p.id
    for wl in TRAINING_WORKLOADS:
        owners = [p.id for p in out.values() if wl in p.default_for]
        if len(owners) != 1:
            raise FrameworkError(f"frameworks.toml: {wl} needs exactly one default framework, has {owners or 'none'}")
    return out


@functools.cache
def bundled_frameworks() -> MappingProxyType:
    """The bundled profiles (id -> :class:`FrameworkProfile`), read once."""
    return MappingProxyType(parse_frameworks(_resource_text("frameworks.toml")))


@functools.cache
def framework_names() -> tuple[str, ...]:
    """Every name ``--framework`` accepts: the ids, then the aliases."""
    profiles = bundled_frameworks().values()
    return tuple(p.id for p in profiles) + tuple(a for p in profiles for a in p.aliases)


def canonical_framework(name: str) -> str:
    """The profile id of a name or alias. Raises KeyError for an unknown name."""
    for p in bundled_frameworks().values():
        if name == p.id or name in p.aliases:
            return p.id
    raise KeyError(name)


def resolve_framework(name: str | None, workload: str) -> FrameworkProfile:
    """The profile a training job assumes: the named one, else the default for its workload.

    Raises:
        KeyError: an unknown name (the job schema refuses it before this).
    """
    profiles = bundled_frameworks()
    if name is not None:
        return profiles[canonical_framework(name)]
    return next(p for p in profiles.values() if workload in p.default_for)
