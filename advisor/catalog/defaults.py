"""The one default job per workload (``resources/defaults.toml``): the budget a plan, the app, ``advisor buy`` and
scenario files take when none is given, and the model the app and ``buy`` start from. Read once, validated at the
border like every bundled file."""

from __future__ import annotations

import functools
import math
import tomllib
from dataclasses import dataclass

from advisor.catalog.load import _resource_text

WORKLOADS = ("pretrain", "finetune", "lora", "qlora", "inference")


class DefaultsError(ValueError):
    """A malformed defaults file (one line naming the entry)."""


@dataclass(frozen=True)
class DefaultJob:
    """A workload's default budget: ``tokens``, or ``tokens_per_param`` times the model's parameters."""

    workload: str
    tokens: float | None
    tokens_per_param: float | None
    source: str

    def budget(self, params: float) -> float:
        """Tokens for a model of ``params`` parameters."""
        return self.tokens if self.tokens is not None else self.tokens_per_param * params


# Where a serving job's load and target came from when it gave none (its ``sources``), as reports name it.
SERVE_DEFAULT_SOURCE = "the default serving job (resources/defaults.toml [serve])"


@dataclass(frozen=True)
class DefaultServe:
    """The serving job taken when no load is given: ``users`` at once, ``ttft_p95_s`` the p95 first-token target."""

    users: int
    ttft_p95_s: float
    source: str


@dataclass(frozen=True)
class Defaults:
    model: str
    jobs: dict[str, DefaultJob]
    serve: DefaultServe


def _positive(value, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0 < value <= 1e16:
        raise DefaultsError(f"defaults.toml: {where} must be a positive number, got {value!r}")
    return float(value)


def parse_defaults(text: str) -> Defaults:
    """Parse and validate ``defaults.toml``.

    Raises:
        DefaultsError: a missing workload, a budget that is not a positive number, no model.
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise DefaultsError(f"defaults.toml: {exc}") from None
    model = data.get("model")
    if not isinstance(model, str) or not model:
        raise DefaultsError("defaults.toml: model must name a preset")
    jobs = {}
    table = data.get("jobs") or {}
    for w in WORKLOADS:
        t = table.get(w)
        if not isinstance(t, dict):
            raise DefaultsError(f"defaults.toml: no [jobs.{w}]")
        tokens = _positive(t["tokens"], f"jobs.{w}.tokens") if "tokens" in t else None
        per = _positive(t["tokens_per_param"], f"jobs.{w}.tokens_per_param") if "tokens_per_param" in t else None
        if (tokens is None) == (per is None):
            raise DefaultsError(f"defaults.toml: jobs.{w} needs tokens or tokens_per_param (one of them)")
        source = t.get("source")
        if not isinstance(source, str) or not source:
            raise DefaultsError(f"defaults.toml: jobs.{w}.source must say where the figure comes from")
        jobs[w] = DefaultJob(w, tokens, per, source)
    return Defaults(model, jobs, _serve(data.get("serve")))


def _serve(t) -> DefaultServe:
    """The ``[serve]`` table: a whole number of users, a target in seconds, where they come from."""
    if not isinstance(t, dict):
        raise DefaultsError("defaults.toml: no [serve]")
    users = t.get("users")
    if isinstance(users, bool) or not isinstance(users, int) or not 1 <= users <= 100_000:
        raise DefaultsError(f"defaults.toml: serve.users must be a whole number from 1 to 100000, got {users!r}")
    source = t.get("source")
    if not isinstance(source, str) or not source:
        raise DefaultsError("defaults.toml: serve.source must say where the figures come from")
    return DefaultServe(users, _positive(t.get("ttft_p95_s"), "serve.ttft_p95_s"), source)


@functools.cache
def defaults() -> Defaults:
    """The bundled defaults (read once)."""
    return parse_defaults(_resource_text("defaults.toml"))


def default_job(workload: str) -> DefaultJob:
    """The default job of a workload."""
    return defaults().jobs[workload]
