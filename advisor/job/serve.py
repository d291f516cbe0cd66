"""The inputs of a serving job (``advisor serve``, the ``[serve]`` table of a scenario, the app's Serve page).

A serving job is a :class:`~advisor.job.schema.Job` (the model, weight format, runtime, KV-cache format, the
hardware asked about and owned, the cost assumptions: the same declarations as a plan) plus the load and the
targets declared here once: concurrent users or an arrival rate, the prompt and output lengths (a mean and
a spread, or a preset) and the p95 latency targets. ``SERVE_FIELDS`` lists the fields a serving job reads;
the CLI flags, the scenario keys and the Serve page's inputs are built from it (a plan's flags are not).

They live beside ``schema.py`` rather than in it so that a plan's form and flags stay as they are and the
plan schema stays readable; ``schema._build_fields`` builds both from the same ``_field`` declarations.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from advisor.job.schema import FieldMeta, Job, JobInputError, _build_fields, _field, _input_error, request_window

# Fields of a plan a serving job reads too (the rest are training or budget inputs).
FROM_JOB = ("model", "params", "active_params", "layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "download",
            "precision", "quant", "runtime", "kv_cache_bits", "context", "prompt_tokens", "output_tokens", "tp",
            "accelerator", "own", "owned_options", "spot_offers", "assumptions", "notes", "sources")
SERVE = ("inference",)
# Request lengths of a preset: (prompt mean, prompt spread, output mean, output spread, source).
LENGTH_PRESETS = {
    "sharegpt": (161.31, 1.0, 337.99, 1.0,
                 "ShareGPT conversations as served in Kwon et al. 2023 (vLLM, SOSP '23), Fig. 11: mean input "
                 "161.31 and output 337.99 tokens; spread (sd/mean) 1.0 is an assumption read from the shape "
                 "of its histograms"),
    "alpaca": (19.31, 1.0, 58.45, 1.0,
               "Alpaca instructions in Kwon et al. 2023 (vLLM, SOSP '23), Fig. 11: mean input 19.31 and output "
               "58.45 tokens; spread 1.0 assumed"),
}


class ServeJob(Job):
    """A serving job: a plan's model and hardware inputs with the load and latency targets."""

    users: int | None = _field(None, unit="users", help="concurrent users, each sending its next request when the "
                               "last one is answered (what serving benchmarks call concurrency); with neither it nor "
                               "--requests-per-s, the default serving job's (resources/defaults.toml [serve])",
                               group="serve",
                               workloads=SERVE, ge=1, le=1_000_000)
    requests_per_s: float | None = _field(None, unit="requests/s", help="arrival rate of requests (Poisson) "
                                          "instead of --users", group="serve", workloads=SERVE, gt=0, le=1e6)
    # --prompt-tokens and --output-tokens are the plan's (their mean here; without them, the plan's request:
    # schema.request_window).
    prompt_spread: float | None = _field(None, unit="sd/mean", help="spread of the prompt lengths: standard "
                                         "deviation over mean (0: all alike; default 0 or the preset's)",
                                         group="serve", workloads=SERVE, ge=0, le=10)
    output_spread: float | None = _field(None, unit="sd/mean", help="spread of the output lengths (default 0 or "
                                         "the preset's)", group="serve", workloads=SERVE, ge=0, le=10)
    lengths: Literal["sharegpt", "alpaca"] | None = _field(None, help="request lengths of a published chat "
                                                            "workload (its means and spreads; flags override)",
                                                            group="serve", workloads=SERVE)
    max_seqs: int | None = _field(None, unit="sequences", help="most requests batched at once (vLLM --max-num-seqs, "
                                  "llama.cpp -np slots); default: the runtime's, or the users", group="serve",
                                  workloads=SERVE, ge=1, le=65_536)
    ttft_p95_s: float | None = _field(None, unit="s", help="target: 95th-percentile time to first token",
                                      group="serve", workloads=SERVE, flag="--ttft-p95", gt=0, le=86_400)
    tpot_p95_s: float | None = _field(None, unit="s", help="target: 95th-percentile time per output token",
                                      group="serve", workloads=SERVE, flag="--tpot-p95", gt=0, le=3600)
    tokens_per_s_per_user: float | None = _field(None, unit="tokens/s", help="target: tokens per second each user "
                                                 "sees (the same as --tpot-p95 1/N)", group="serve",
                                                 workloads=SERVE, gt=0, le=1e6)

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> ServeJob:
        """Build and validate a serving job (``None`` values left at their default).

        Raises:
            JobInputError: naming the first bad field and why (a plan-only field included).
        """
        if not isinstance(values, Mapping):
            raise JobInputError("serve", "must be a table of name = value")
        kwargs = {k: v for k, v in values.items() if v is not None}
        for key in kwargs:
            if key not in SERVE_FIELDS and key != "workload":
                raise JobInputError(key, "not an input of a serving job")
        kwargs["workload"] = "inference"
        try:
            job = cls.model_validate(kwargs)
        except ValidationError as exc:
            raise _serve_error(exc) from None
        job.check_rules()
        _check_serve(job)
        return job


def _serve_error(exc: ValidationError) -> JobInputError:
    err = exc.errors(include_url=False)[0]
    name = str((err.get("loc") or ("serve",))[0])
    meta = SERVE_FIELDS.get(name)
    if meta is not None and name not in FROM_JOB:
        got = err.get("input")
        if meta.kind in ("int", "number"):
            what = "a whole number" if meta.kind == "int" else "a finite number"
            return JobInputError(name, f"must be {what} {meta.range_text()}, got {got!r}")
        if meta.kind == "choice":
            return JobInputError(name, f"must be {meta.range_text()}, got {got!r}")
    return _input_error(exc)


def _check_serve(job: ServeJob) -> None:
    if (job.users is None) == (job.requests_per_s is None):
        raise JobInputError("users", "give the load: --users N or --requests-per-s R (one of them)")
    if job.tpot_p95_s is not None and job.tokens_per_s_per_user is not None:
        raise JobInputError("tokens_per_s_per_user", "give --tpot-p95 or --tokens-per-s-per-user, not both")


@dataclass(frozen=True)
class RequestLengths:
    """The lengths a serving job asks for, resolved from flags and preset."""

    prompt_mean: float
    prompt_cv: float
    output_mean: float
    output_cv: float
    origin: str


def request_lengths(job: ServeJob, max_context: int | None = None) -> RequestLengths:
    """Prompt and output lengths: the flags, else the preset's, else the plan's request (``schema.request_window``:
    the window ``--context``, else 2048 capped at the model's ``max_context``, the prompt what the output leaves),
    so that one user served is the inference plan's request."""
    given = job.model_fields_set
    prompt = request_window(None, job.output_tokens, job.context, max_context)[0]
    pm, pcv, om, ocv, origin = (float(prompt), 0.0, float(job.output_tokens), 0.0, "as given")
    if job.lengths is not None:
        pm, pcv, om, ocv, origin = LENGTH_PRESETS[job.lengths]
        origin = f"{job.lengths}: {origin}"
    if job.prompt_tokens is not None:
        pm = float(job.prompt_tokens)
    if "output_tokens" in given or job.lengths is None:
        om = float(job.output_tokens)
    if job.prompt_spread is not None:
        pcv = job.prompt_spread
    if job.output_spread is not None:
        ocv = job.output_spread
    return RequestLengths(pm, pcv, om, ocv, origin)


def tpot_target_s(job: ServeJob) -> float | None:
    """The p95 time-per-token target: ``--tpot-p95``, or ``1 / --tokens-per-s-per-user``."""
    if job.tpot_p95_s is not None:
        return job.tpot_p95_s
    if job.tokens_per_s_per_user is not None:
        return 1.0 / job.tokens_per_s_per_user
    return None


# A serving job's load (one of them) and its latency targets (any of them), as the job's fields name them.
LOAD_FIELDS = frozenset({"users", "requests_per_s"})
TARGET_FIELDS = frozenset({"ttft_p95_s", "tpot_p95_s", "tokens_per_s_per_user"})


def with_default_load(values: dict, sources: dict) -> None:
    """Job inputs that give no load take the default serving job's users, and its first-token target where they name
    no target either (``resources/defaults.toml`` [serve], the Serve page's starting point); ``sources`` says so
    (``SERVE_DEFAULT_SOURCE``, which ``assumed_load_text`` reads back)."""
    from advisor.catalog.defaults import SERVE_DEFAULT_SOURCE, defaults

    if any(values.get(k) is not None for k in LOAD_FIELDS):
        return
    d = defaults().serve
    values["users"], sources["users"] = d.users, SERVE_DEFAULT_SOURCE
    if all(values.get(k) is None for k in TARGET_FIELDS):
        values["ttft_p95_s"], sources["ttft_p95_s"] = d.ttft_p95_s, SERVE_DEFAULT_SOURCE


def assumed_load_text(job: ServeJob) -> str:
    """Words saying the load (and target) are the default serving job's where the job gave none
    (``with_default_load``); "" otherwise."""
    from advisor.catalog.defaults import SERVE_DEFAULT_SOURCE, defaults

    if job.sources.get("users") != SERVE_DEFAULT_SOURCE:
        return ""
    target = job.sources.get("ttft_p95_s") == SERVE_DEFAULT_SOURCE
    return (f"{defaults().serve.source if target else f'{job.users} users at once'}, the default serving "
            f"job (give --users N or --requests-per-s R{' and a target such as --ttft-p95 S' if target else ''})")


def load_text(job: ServeJob) -> str:
    """The load in words: ``5 users`` or ``2.5 requests/s``."""
    if job.users is not None:
        return f"{job.users:,} user{'s' if job.users != 1 else ''}"
    rate = job.requests_per_s
    return f"{rate:.3g} requests/s" if rate is not None and math.isfinite(rate) else "no load"


SERVE_FIELDS: dict[str, FieldMeta] = {name: meta for name, meta in _build_fields(ServeJob).items()
                                      if name in FROM_JOB or name not in Job.model_fields}
