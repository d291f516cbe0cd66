"""``--engine-check`` of ``advisor plan``, ``advisor serve`` and ``advisor models``: the plan's memory of the option
compared (this machine's GPUs where the plan has them) handed to ``advisor.models.engines.engine_check``, which
runs the installed engines and sets their figures beside it; one flag, one JSON key (``engine_check``) and one
text block for all three commands.
"""

from __future__ import annotations

HELP = ("the installed engines' own figures beside the plan's: llama.cpp's fit printer (llama-fit-params) on the "
        "model's GGUF file for the plan's context and devices, the size of the model Ollama has loaded (/api/ps); "
        "an engine that is absent is one line")


def add_flag(group) -> None:
    group.add_argument("--engine-check", action="store_true", help=HELP)


def memory_of_plan(result):
    """The plan's memory per device on the option its inference summary describes (``planner.fit.inference_target``:
    this machine's GPUs, else the GPUs owned, else the cheapest that fits), with its context, batch and runtime;
    None for a training plan or a plan without options."""
    from advisor.models.engines import AdvisorMemory
    from advisor.planner.fit import inference_target

    if result.request.workload != "inference":
        return None
    o = inference_target(result)
    if o is None or o.memory is None:
        return None
    m = o.memory
    software = o.serving.software if o.serving is not None else None
    return AdvisorMemory(devices=o.devices, weights=m.weights_bytes, kv_cache=m.kv_cache_bytes,
                         overhead=m.overhead_bytes, context=result.context, slots=max(1, result.request.batch or 1),
                         option=o.id, runtime=software.runtime.id if software is not None else "llama.cpp",
                         kv_type=llama_kv_type(result.request.kv_cache_bits))


def memory_of_serve(result):
    """One replica's memory per device on this machine's option (else the first owned, else the first that fits):
    weights, the cache the runtime reserves (llama.cpp: its slots of ``slot_tokens``; the others: the pool left
    after weights and overhead) and the overhead; None when no option has a server sized."""
    from advisor.estimate.serving import kv_pool_bytes
    from advisor.models.engines import AdvisorMemory

    options = [o for o in result.options if o.spec is not None]
    o = (next((o for o in options if o.this_machine), None) or next((o for o in options if o.kind == "owned"), None)
         or next((o for o in options if o.fits), None))
    if o is None:
        return None
    s = o.spec
    if s.batching == "slots":
        slots, context = s.max_seqs, s.slot_tokens
        kv = s.kv_bytes_per_token * context * slots / s.devices
    else:
        slots, context = s.max_seqs, int(kv_pool_bytes(s) / s.kv_bytes_per_token / max(1, s.max_seqs))
        kv = max(0.0, kv_pool_bytes(s)) / s.devices
    return AdvisorMemory(devices=s.devices, weights=s.weight_bytes / s.devices, kv_cache=kv,
                         overhead=s.overhead_bytes, context=max(1, context), slots=max(1, slots), option=o.id,
                         runtime=o.runtime, kv_type=llama_kv_type(result.request.kv_cache_bits))


def llama_kv_type(bits: int) -> str:
    """The KV cache's element type at ``bits`` as llama.cpp names it (``resources/runtimes.toml``: f16, q8_0, q4_0),
    so the fit printer sizes the cache the plan sized."""
    from advisor.catalog.runtimes import runtime_data

    return runtime_data().runtimes["llama.cpp"].kv_format(bits) or "f16"


def check(spec: str | None, ours, catalog):
    """``engines.engine_check`` for the model ``spec`` (resolved as the plan resolved it) and the plan's memory
    ``ours``; None when the plan has no option to compare."""
    from advisor.models import ModelSpecError, resolve_model
    from advisor.models.engines import engine_check

    if ours is None:
        return None
    rm = None
    if spec:
        try:
            rm = resolve_model(spec, catalog)
        except ModelSpecError:
            rm = None
    return engine_check(rm, ours, spec=spec or "")


def absent_text(what: str) -> str:
    return f"engine check: {what}\n"


def text(result) -> str:
    """The check as the text commands print it (names and paths from outside made plain)."""
    from advisor.commands._terminal import lines_text
    from advisor.models.engines import mib_text

    if result is None:
        return absent_text("no inference option in the plan to compare (the engines size inference)")
    m = result.memory
    head = (f"engine check of {result.model} on {m.option or 'the plan'} ({m.devices} device(s), {m.runtime}; "
            f"advisor per device: weights {mib_text(m.weights)} MiB, KV cache {mib_text(m.kv_cache)} MiB, "
            f"overhead {mib_text(m.overhead)} MiB):")
    return lines_text([head] + [f"  {x}" for x in result.lines]) + "\n"


def json_of(result) -> dict | None:
    return None if result is None else result.to_json()
