"""What to change when the GPUs a user owns miss a serving target: fewer users, a smaller KV-cache format,
shorter prompts, fewer slots or a shorter context. Each change is sized again on the same GPUs (never on other
hardware), and is only offered when it was computed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from advisor.planner.owned import OwnedHardware
from advisor.planner.serve import ServeOption, ServeResult, serve_plan


@dataclass(frozen=True)
class ServeChange:
    """One change on the same GPUs and what it gives.

    Attributes:
        text: the change in words (with the flag that makes it).
        meets: whether the stated load then meets the targets.
        values: the serving job's fields that change (for the app's "apply").
    """

    text: str
    meets: bool
    values: dict


def _resize(result: ServeResult, hw: OwnedHardware, **changes) -> ServeOption | None:
    job = result.request.model_copy(update={**changes, "own": (), "accelerator": ()})
    try:
        again = serve_plan(job, result.catalog, assumptions=result.assumptions, owned=(hw,), only_owned=True)
    except ValueError:
        return None
    return again.option(hw.id)


def owned_changes(result: ServeResult, option: ServeOption, hw: OwnedHardware) -> list[ServeChange]:
    """Changes that bring the owned option to its targets (or nearer), each sized on the same GPUs.

    Returns an empty list when the option meets its targets; for a model that does not fit, whether 4-bit
    weights would.
    """
    job = result.request
    if not option.fits:
        return _smaller_weights(result, hw)
    if option.meets_target or option.point is None:
        return []
    out: list[ServeChange] = []
    per_replica = option.max_load_per_replica
    most = per_replica * (option.replicas_available or option.replicas)
    if most > 0:
        if result.by == "users":
            n = int(math.floor(most))
            out.append(ServeChange(f"serve at most {n} user{'s' if n != 1 else ''} at once (--users {n}); the "
                                   "rest wait or go elsewhere", True, {"users": n}))
        else:
            out.append(ServeChange(f"keep the rate at or below {most:.3g} requests/s (--requests-per-s "
                                   f"{most:.3g})", True, {"requests_per_s": float(f"{most:.3g}")}))
    if option.kv_capacity_tokens and job.kv_cache_bits > 8 and option.point.limit in ("kv", "slots", "seqs"):
        again = _resize(result, hw, kv_cache_bits=8)
        if again is not None and again.point is not None:
            flag = "-ctk q8_0 -ctv q8_0" if option.runtime == "llama.cpp" else "--kv-cache-dtype fp8"
            out.append(ServeChange(f"an 8-bit KV cache ({flag}, --kv-cache-bits 8): {again.kv_capacity_tokens:,} "
                                   f"tokens of cache instead of {option.kv_capacity_tokens:,}; "
                                   f"{_verdict(again)}", again.meets_target, {"kv_cache_bits": 8}))
    if result.targets.ttft_p95_s is not None and option.point.ttft_p95_s > result.targets.ttft_p95_s:
        prompt = _shortest_prompt_that_meets(result, hw)
        if prompt:
            out.append(ServeChange(f"prompts of at most {prompt:,} tokens on average (--prompt-tokens {prompt}) "
                                   "meet the time to first token", True, {"prompt_tokens": prompt}))
    if option.runtime == "llama.cpp" and option.point.limit == "kv" and result.by == "users":
        slots = option.launch.get("slots")
        fit = int(option.point.in_service)
        if fit >= 1 and slots and fit < slots:
            out.append(ServeChange(f"fewer slots: -np {fit} (the cache holds {fit} requests of "
                                   f"{option.launch.get('max_model_len', 0):,} tokens; the other users queue)",
                                   False, {"max_seqs": fit}))
    return out


def _smaller_weights(result: ServeResult, hw: OwnedHardware) -> list[ServeChange]:
    """The model does not fit these GPUs: does a 4-bit GGUF (llama.cpp's Q4_K_M) with an 8-bit cache?"""
    job = result.request
    if job.quant in ("q4_k_m", "q4_0", "nf4"):
        return []
    again = _resize(result, hw, quant="q4_k_m", kv_cache_bits=8, runtime=job.runtime or "llama.cpp")
    if again is None or not again.fits:
        return []
    return [ServeChange(f"4-bit weights and an 8-bit cache fit (--quant q4_k_m --kv-cache-bits 8, llama.cpp): "
                        f"{_verdict(again)}", again.meets_target,
                        {"quant": "q4_k_m", "kv_cache_bits": 8})]


def _verdict(option: ServeOption) -> str:
    p = option.point
    if option.meets_target:
        return "meets the target"
    return (f"still misses it (p95 first token {p.ttft_p95_s:.3g} s, {1 / p.tpot_p50_s:.3g} tokens/s each)"
            if p is not None and p.stable and p.tpot_p50_s > 0 else "still misses it")


def _shortest_prompt_that_meets(result: ServeResult, hw: OwnedHardware) -> int | None:
    """The longest mean prompt at which the stated load meets the targets on these GPUs (bisection over whole
    tokens, about a dozen sizings); None when even a one-token prompt misses."""
    lo, hi = 1, int(result.lengths.prompt_mean)
    first = _resize(result, hw, prompt_tokens=lo)
    if first is None or not first.meets_target:
        return None
    while hi - lo > max(1, lo // 50):
        mid = (lo + hi) // 2
        o = _resize(result, hw, prompt_tokens=mid)
        if o is not None and o.meets_target:
            lo = mid
        else:
            hi = mid
    return lo


def changes_of(result) -> dict:
    """What to change on each owned option (``owned_changes``), by option id: the CLI, the Serve page and
    reports show the same list."""
    out = {}
    for o in result.owned_options():
        hw = result.hardware_of(o)
        if hw is not None:
            out[o.id] = owned_changes(result, o, hw)
    return out
