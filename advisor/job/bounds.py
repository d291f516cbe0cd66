"""The job schema's ranges applied to figures read from files: a model's sizes, a node's GPU count.

What a model file or a node says is checked against the same range as the flag that would say it by hand
(``--layers`` 1 to 10,000, ``--hidden``, ``--vocab``, ``--context``, ``--gpus``...; ``advisor/job/schema.py``),
so a config with ``num_hidden_layers: 1e18`` is refused as ``--layers 1e18`` would be. Architecture fields
without a flag of their own take the range of the flag they are a width or a count of (a head width is a
hidden width); the expert counts have no flag and are bounded here.
"""

from __future__ import annotations

import math
from typing import Any

from advisor.job.schema import JOB_FIELDS

# Expert counts have no flag. The largest published routed-expert count is 2,048 (Switch-C, Fedus et al. 2022,
# Table 9); 65,536 leaves room without admitting absurd values.
EXPERTS_MAX = 65_536

# ModelArch field -> the job field whose range applies (None: the experts bound above).
ARCH_RANGES: dict[str, str | None] = {
    "layers": "layers", "dense_layers": "layers", "hidden": "hidden", "head_dim": "hidden",
    "q_lora_rank": "hidden", "kv_lora_rank": "hidden", "rope_dim": "hidden", "nope_dim": "hidden",
    "v_head_dim": "hidden", "heads": "heads", "kv_heads": "kv_heads", "ffn": "ffn", "moe_ffn": "ffn",
    "vocab": "vocab", "max_context": "context", "experts": None, "experts_per_token": None, "shared_experts": None,
    "sliding_window": "context", "linear_k_heads": "heads", "linear_v_heads": "heads", "linear_k_dim": "hidden",
    "linear_v_dim": "hidden", "linear_conv": "heads", "moe_step": "layers",
}


def shown(value: Any) -> str:
    """A bad value as a message shows it: numbers in 4 significant digits, other values cut to 40 characters."""
    if isinstance(value, bool):
        return repr(value)
    if isinstance(value, int):
        return str(value) if abs(value) < 10**15 else f"{float(value):.4g}" if abs(value) < 10**300 else "a huge number"
    if isinstance(value, float):
        return f"{value:.4g}"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def whole(value: Any, low: float, high: float) -> int:
    """``value`` as an int when it is a whole, finite number from ``low`` to ``high``.

    Raises:
        ValueError: one line saying what was expected and what came.
    """
    ok = isinstance(value, int) and not isinstance(value, bool) or (
        isinstance(value, float) and math.isfinite(value) and value.is_integer())
    if not ok or not low <= value <= high:
        raise ValueError(f"must be a whole number between {low:,.0f} and {high:,.0f}, got {shown(value)}")
    return int(value)


def job_range(field: str) -> tuple[float, float]:
    """The (minimum, maximum) of a job field's flag."""
    meta = JOB_FIELDS[field]
    return meta.minimum, meta.maximum


def job_whole(value: Any, field: str, *, zero: bool = False) -> int:
    """``value`` within the range of the job field ``field`` (``zero``: 0 is also allowed, meaning "not given").

    Raises:
        ValueError: naming the range.
    """
    low, high = job_range(field)
    return whole(value, 0 if zero else low, high)


def arch_whole(value: Any, name: str, *, zero: bool = False) -> int:
    """A ``ModelArch`` field's value within its range (``ARCH_RANGES``). Raises ValueError."""
    field = ARCH_RANGES[name]
    if field is None:
        return whole(value, 0 if zero else 1, EXPERTS_MAX)
    return job_whole(value, field, zero=zero)


def params_maximum() -> float:
    """The most parameters a model may have (the ``--params`` flag's maximum)."""
    return job_range("params")[1]


def weight_bytes_maximum() -> float:
    """The most bytes a model's weights may take: the ``--params`` maximum in 8-byte (fp64) values."""
    return params_maximum() * 8
