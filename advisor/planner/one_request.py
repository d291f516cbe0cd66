"""One request, one computation: the calibrated numbers of a request on some devices, which ``advisor plan``,
``advisor serve`` (at one user and as the base of its load model), ``advisor models``, the app's pages, the
reports and the launch lines all take.

The plan times a request with ``timing.serving_timing`` and ``calibrated.calibrate_serving`` (the runtime's
profile, this machine's measured or learned efficiency, the fitted decode and prefill factors); the result's
``ServingSpeed`` becomes a server replica (``serve_spec.replica_spec(speed=...)``), and
``estimate.serving.single_request`` of that replica gives the first token, the decode and the cache the request
has. Nothing else recomputes them.
"""

from __future__ import annotations

import math

from advisor.catalog import Accelerator
from advisor.estimate.decode import ServingSpeed
from advisor.estimate.serving import Lengths as ServeLengths
from advisor.planner.calibrated import calibrate_serving
from advisor.planner.request import Lengths, PlanRequest
from advisor.planner.serve_spec import ModelServing, kv_parts, reserve_bytes
from advisor.planner.timing import learned_timing, serving_timing

# A machine's GPUs are planned on all of them when that is at least this much faster than the fewest that fit (the
# plan's owned options and a serve at one user alike): a layout that gains less is not worth its power.
ALL_DEVICES_GAIN = 0.98


def all_devices_faster(all_seconds: float, fewest_seconds: float) -> bool:
    """Whether every GPU of a machine beats the fewest that fit (``ALL_DEVICES_GAIN``)."""
    return all_seconds < fewest_seconds * ALL_DEVICES_GAIN


def request_lengths(lengths: ServeLengths) -> Lengths:
    """The plan's request of a serving job's mean lengths (prompt and output rounded to whole tokens)."""
    prompt, output = max(1, round(lengths.prompt_mean)), max(1, round(lengths.output_mean))
    return Lengths(prompt, output, prompt + output)


def request_speed(req: PlanRequest, acc: Accelerator, devices: int, model: ModelServing, lens: Lengths,
                  calib=None, decode_scale: float | None = None, prefill_scale: float | None = None) -> ServingSpeed:
    """The calibrated numbers of one request of ``lens`` on ``devices`` of ``acc`` (the plan's timing, batch 1).

    ``decode_scale`` (with ``prefill_scale``, both): the decode (and the prefill) at that factor on the runtime's
    published speed, nothing learned from the user's runs, the other part at its published fit
    (``timing.learned_timing``): what ``calib`` gives where the user's runs teach those factors, and the forward model
    the learner inverts for a serving run at its load (``runs.load.record_forward``)."""
    one = req if req.batch == 1 else req.model_copy(update={"batch": 1})
    weights = int(model.weight_bytes) if model.weight_bytes else None
    if decode_scale is not None:
        kept, scales = ("measured",), {"decode_scale": decode_scale}
        if prefill_scale is not None:
            kept, scales = ("measured", "prefill_measured"), {**scales, "prefill_scale": prefill_scale}
        t = learned_timing(one, acc, model.arch, int(model.params), int(model.active_params), lens, devices, weights,
                           kept, projector_bytes=int(model.projector_bytes), **scales)
    else:
        t = serving_timing(one, acc, model.arch, int(model.params), int(model.active_params), lens, devices, calib,
                           weights, projector_bytes=int(model.projector_bytes))
        t = calibrate_serving(t, one, acc, model.arch.is_moe)
    if t.speed is None or not math.isfinite(t.speed.eta_mem):
        raise ValueError(f"{acc.id}: no serving speed")
    return t.speed


def request_capacity(acc: Accelerator, devices: int, speed: ServingSpeed, choice, model: ModelServing) -> int:
    """Tokens of KV cache one request has on ``devices``: what the runtime leaves of each device beside the
    weights (``serve_spec.reserve_bytes``, the rule ``estimate.serving.kv_pool_bytes`` applies to a replica), in
    as many parts as the devices split the cache (``serve_spec.kv_parts``: at most the KV heads, MLA's latent
    whole on every GPU), held as the layer kinds hold it (``ModelServing.cache_tokens``). The plan's largest
    context and ``advisor serve``'s cache are this one figure."""
    capacity = float(acc.usable_memory_bytes)
    weights = speed.weight_bytes
    per_device = capacity - weights / devices - reserve_bytes(choice, capacity, weights, devices, model.arch, acc)
    return model.cache_tokens(kv_parts(model, devices, choice, one_request=True) * per_device)
