"""Is what a run file measured possible on the hardware it names? Checked at import, against the catalog.

Each measured speed is set against the ceiling the accelerator puts on it (docs/method.md, "Inference speed"
and "Learning from your runs"):

* a decode reads every weight once per token: ``tokens/s <= N * BW / weight_bytes`` (the batch-1 roofline,
  ``compute.decode_estimate``); its ratio to that is the bandwidth efficiency the planner learns;
* a prompt (prefill) costs ``2 * P`` FLOPs a token: ``tokens/s <= N * peak / (2 * P)``;
* a generated token at any batch costs ``2 * P`` FLOPs (a serving benchmark): ``tokens/s <= N * peak / (2 * P)``;
* a training step costs ``learned.training_flops_per_token`` a token: ``tokens/s <= N * peak / that``, and a
  Trainer's own ``total_flos / train_runtime`` is at most ``N * peak``.

``peak`` is the part's fastest dense rate (fp8 where it has it). A job recording's energy is at most twice
its board power over its GPU-hours (power above twice the limit is what ``hw.records.clean_sample`` calls a
broken reading); more is refused. A mixture-of-experts model reads and
computes only its active weights, which the file does not say (llama-bench's ``model_size`` and
``model_n_params`` are the totals): a run up to ``OVER_CEILING`` times its dense ceiling is kept (the largest
published ratio of total to active parameters is Llama 4 Maverick's 400B / 17B = 23.5, Meta's model card)
but teaches the planner nothing (``learned`` takes efficiencies up to 1), with a note; a run further above
is refused with one line. A run below ``learned.EFFICIENCY_FLOOR`` of its ceiling (0.01 %: the hardware was
not what bounded it: offloading, swapping, contention) is kept without being learned from, with a note.
"""

from __future__ import annotations

import dataclasses

from advisor.estimate.learned import EFFICIENCY_FLOOR, training_flops_per_token
from advisor.estimate.run_record import RunRecord

OVER_CEILING = 50.0
POWER_OVER = 2.0  # a board drawing twice its power is a broken reading (hw.records.clean_sample's rule)
_PRECISIONS = ("fp8", "bf16", "fp16", "tf32", "fp32")


class ImplausibleRun(ValueError):
    """A measured figure the named hardware cannot reach; ``str()`` is one line."""


def _peak(acc) -> float | None:
    rates = []
    for p in _PRECISIONS:
        try:
            rates.append(acc.peak_flops(p) or 0.0)
        except (KeyError, ValueError):
            continue
    return max(rates) or None


def efficiencies(rec: RunRecord, acc) -> list[tuple[str, float]]:
    """``(what, measured / ceiling)`` of each speed the record measured on ``acc`` (a ``catalog.Accelerator``)."""
    m, n = rec.measured, rec.devices
    peak = _peak(acc)
    out = []
    if m.decode_tokens_per_s and rec.weight_bytes and acc.mem_bandwidth_bps:
        out.append(("decode", m.decode_tokens_per_s * rec.weight_bytes / (n * acc.mem_bandwidth_bps)))
    if m.prefill_tokens_per_s and rec.params and peak:
        out.append(("prompt processing", m.prefill_tokens_per_s * 2.0 * rec.params / (n * peak)))
    if rec.workload == "inference" and not m.decode_tokens_per_s and m.tokens_per_s and rec.params and peak:
        out.append(("generation", m.tokens_per_s * 2.0 * rec.params / (n * peak)))  # any batch: 2P a token
    if rec.training and peak:
        if m.tokens_per_s and None not in (rec.params, rec.layers, rec.hidden, rec.seq_len):
            per_token = training_flops_per_token(rec.params, rec.layers, rec.hidden, rec.seq_len, rec.workload,
                                                 rec.recompute)
            out.append(("training", m.tokens_per_s * per_token / (n * peak)))
        if m.flops_per_s:
            out.append(("the Trainer's FLOP/s", m.flops_per_s / (n * peak)))
    return out


def _energy_ratio(rec: RunRecord, acc) -> float | None:
    """A recording's energy over what its GPU-hours allow at the board power (``tdp_w``)."""
    m = rec.measured
    if m.energy_j is None or not m.gpu_hours or not getattr(acc, "tdp_w", None):
        return None
    return m.energy_j / (m.gpu_hours * 3600.0 * acc.tdp_w)


def check_plausible(rec: RunRecord, catalog) -> RunRecord:
    """``rec`` when its figures are possible on its accelerator, with a note for each that is kept out of
    learning; a record on hardware the catalog does not know (or the host CPU) is returned as it is.

    Raises:
        ImplausibleRun: a speed more than ``OVER_CEILING`` times what the hardware allows.
    """
    acc = (getattr(catalog, "accelerators", None) or {}).get(rec.accelerator_id or "")
    if acc is None:
        return rec
    energy = _energy_ratio(rec, acc)
    if energy is not None and energy > POWER_OVER:
        raise ImplausibleRun(f"energy: {energy:.3g} times what {acc.id} draws at its board power over the recorded "
                             "GPU-hours; not a reading of this hardware")
    cache, memory = rec.measured.kv_cache_bytes, getattr(acc, "memory_bytes", None)
    if cache and memory and cache > memory:  # vLLM logs the cache of one GPU: it cannot exceed the GPU
        raise ImplausibleRun(f"KV cache memory: {cache / 2**30:.3g} GiB on one {acc.id} of "
                             f"{memory / 2**30:.3g} GiB; not a reading of this hardware")
    notes = []
    for what, ratio in efficiencies(rec, acc):
        if ratio > OVER_CEILING:
            raise ImplausibleRun(f"{what}: {ratio:.3g} times what {rec.devices} x {acc.id} can reach (its roofline); "
                                 "not a measurement of this hardware")
        if ratio > 1.0:
            notes.append(f"{what} at {ratio:.2f}x the dense roofline of {acc.id} (a mixture of experts, or a cache): "
                         "kept, not learned from")
        elif ratio < EFFICIENCY_FLOOR:
            notes.append(f"{what} at {ratio:.2g} of what {acc.id} allows (below {EFFICIENCY_FLOOR:g}: something "
                         "other than the hardware bounded it): kept, not learned from")
    return dataclasses.replace(rec, notes=(*rec.notes, *notes)) if notes else rec
