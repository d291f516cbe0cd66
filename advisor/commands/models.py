"""``advisor models [SPEC] [--json] [--download] [--fake-gpu S]``: the models on this machine and whether they fit.

Without SPEC: every model in the Hugging Face cache, Ollama and LM Studio, with its size, quantisation and
whether it fits this machine's GPUs for inference, LoRA and QLoRA. With SPEC (a preset, ``hf:ORG/NAME``, a
``.gguf`` file, a ``config.json`` or model folder, ``ollama:NAME``, ``lmstudio:NAME``): that one model, and a bad
or missing one is one line on stderr with exit 2. Nothing opens a network connection unless ``--download``, or
``--fetch-header`` with ``hf:ORG/REPO[:QUANT]``: the file headers read by range requests (``advisor.models.remote``).
"""

from __future__ import annotations

import argparse

from advisor.commands._json import print_json

SCHEMA = "advisor.models/1"


def register(subparsers) -> None:
    from advisor.cli import add_fake_gpu

    p = subparsers.add_parser("models", help="models in the Hugging Face cache, Ollama and LM Studio, and whether "
                                             "each fits this machine",
                              description="List the models on this machine (Hugging Face cache, Ollama, LM Studio) "
                                          "or read one model, with size, quantisation and whether it fits this "
                                          "machine's GPUs for inference, LoRA and QLoRA. Offline unless --download.")
    p.add_argument("spec", nargs="?", metavar="MODEL",
                   help="one model: a preset id, hf:ORG/NAME, a .gguf file, a config.json or model folder, "
                        "ollama:NAME or lmstudio:PUBLISHER/MODEL")
    p.add_argument("--json", action="store_true", help=f"print one {SCHEMA} JSON document")
    p.add_argument("--download", action="store_true",
                   help="allow fetching a Hugging Face config.json over HTTPS when hf:ORG/NAME is not cached")
    p.add_argument("--fetch-header", action="store_true",
                   help="with hf:ORG/REPO[:QUANT]: size the model from its GGUF or safetensors headers on the Hub, "
                        "read by HTTP range requests (a few MiB per file), without downloading the weights")
    from advisor.commands import engine_check

    engine_check.add_flag(p)
    p.add_argument("--context", type=int, default=None, metavar="TOKENS",
                   help="tokens of context for the inference check (default 4096, capped at the model's maximum)")
    add_fake_gpu(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import dataclasses

    from advisor.catalog import load_catalog
    from advisor.cli import UsageError
    from advisor.models import FoundModel, ModelSpecError, discover_models, resolve_model
    from advisor.planner.model_fit import CONTEXT, PlanInputError, fit_model

    if args.context is not None and args.context <= 0:
        raise UsageError("--context: must be a positive number of tokens")
    catalog = load_catalog()
    if args.fetch_header and not (args.spec or "").startswith("hf:"):
        raise UsageError("--fetch-header: give the model as hf:ORG/REPO[:QUANT]")
    if args.spec:
        try:
            if args.fetch_header:
                from advisor.models.remote import fetch_header_model
                from advisor.models.resolve import remember

                rm = fetch_header_model(args.spec[3:])
                remember(args.spec, rm)  # the plan of this spec (the fits below) is of the headers read
            else:
                rm = resolve_model(args.spec, catalog, download=args.download)
        except ModelSpecError as exc:
            raise UsageError(str(exc)) from None
        found = [FoundModel(rm.name, rm.source, args.spec, rm.location, 0, rm)]
    else:
        found = discover_models()
    from advisor.commands.plan import _this_machine

    machine = _this_machine(args, catalog)  # this machine as advisor plan sees it
    gpus = [hw.accelerator.usable_memory_bytes for hw in machine.owned for _ in range(hw.count)]
    names = [hw.accelerator.name for hw in machine.owned for _ in range(hw.count)]
    simulated = machine.simulated
    context = args.context or CONTEXT
    rows = []
    for f in found:
        fit = None
        if f.model:  # the plan on this machine's GPUs (one answer with advisor plan)
            try:
                fit = fit_model(f.spec, machine.owned, catalog, context=context,
                                max_context=f.model.arch.max_context, host=machine.host)
            except PlanInputError as exc:
                f = dataclasses.replace(f, model=None, error=str(exc))
        rows.append((f, fit))
    if args.engine_check and not args.spec:
        raise UsageError("--engine-check: name one model")
    check = _engine_check(args.spec, rows[0][0].model, machine, catalog, context) if args.engine_check else None
    if args.json:
        doc = _document(rows, gpus, names, simulated, context, bool(args.spec))
        if args.engine_check:
            from advisor.commands.engine_check import json_of

            doc["engine_check"] = json_of(check)
        print_json(doc, indent=2)
    else:
        print(_table(rows, gpus, names, simulated, context, bool(args.spec)))
        if args.engine_check:
            from advisor.commands.engine_check import text

            print(text(check), end="")
    return 0


def _engine_check(spec: str, rm, machine, catalog, context: int):
    """The engines' figures beside the inference plan of ``spec`` on this machine's GPUs, the plan the table's
    inference column gives (``planner.model_fit``): ``commands.engine_check`` as plan and serve call it."""
    from advisor.commands import engine_check
    from advisor.planner import PlanInputError, PlanRequest, plan

    if rm is None:
        return None
    ctx = min(context, rm.arch.max_context) if rm.arch.max_context else context
    try:
        result = plan(PlanRequest.from_mapping({"model": spec, "workload": "inference", "context": ctx}), catalog,
                      None, owned=list(machine.owned), host=machine.host, only_owned=True, advise=False)
    except PlanInputError:
        return None
    return engine_check.check(spec, engine_check.memory_of_plan(result), catalog)


def _document(rows, gpus, names, simulated, context, single) -> dict:
    from advisor.models.hf import hub_cache_dir
    from advisor.models.stores import lmstudio_dirs, ollama_dir
    from advisor.planner.model_fit import LORA_RANK, SEQ_LEN

    models = []
    for f, fit in rows:
        entry = {"name": f.name, "store": f.store, "spec": f.spec, "location": f.location,
                 "disk_bytes": f.disk_bytes or None, "error": f.error or None, "model": None, "fits": None}
        if f.model:
            entry["model"] = f.model.to_json()
            entry["fits"] = {x.workload: {"fits": x.fits, "per_device_bytes": x.per_device_bytes, "devices": x.devices,
                                          "weight_format": x.weight_format or None, "tokens_per_s": x.tokens_per_s}
                             for x in fit.fits}
        models.append(entry)
    doc = {"schema": SCHEMA,
           "machine": {"gpus": [{"name": n, "memory_bytes": m} for n, m in zip(names, gpus)], "simulated": simulated},
           "assumptions": {"context": context, "seq_len": SEQ_LEN, "lora_rank": LORA_RANK, "batch": 1,
                           "plan": "advisor plan on this machine's GPUs, its defaults (inference: the runtime's "
                                   "usual file, Q4_K_M under llama.cpp)"},
           "models": models}
    if not single:
        doc["searched"] = {"hf_cache": str(hub_cache_dir()), "ollama": str(ollama_dir() or ""),
                           "lmstudio": [str(d) for d in lmstudio_dirs()]}
    return doc


def _yes(fit) -> str:
    from advisor.units import fmt_mem

    mark = {True: "yes", False: "no", None: "-"}[fit.fits]
    fmt = f" {fit.weight_format.upper()}" if fit.weight_format and fit.workload == "inference" else ""
    speed = f" {fit.tokens_per_s:,.0f} tok/s" if fit.tokens_per_s and fit.workload == "inference" else ""
    return f"{mark}{fmt} {fmt_mem(fit.per_device_bytes)}{speed}"


def _table(rows, gpus, names, simulated, context, single) -> str:
    from advisor.commands._terminal import cell, lines_text
    from advisor.models.hf import hub_cache_dir
    from advisor.models.stores import lmstudio_dirs, ollama_dir
    from advisor.paths import shown
    from advisor.units import fmt_bytes, fmt_count, fmt_mem
    from advisor.untrusted import NAME_MAX_CHARS

    lines = []
    if simulated:
        lines.append("*** SIMULATED HARDWARE: GPUs from a fake scenario, not this machine ***")
    gpu_text = ", ".join(f"{cell(n, NAME_MAX_CHARS)} ({fmt_mem(m)})" for n, m in zip(names, gpus)) or "none detected"
    lines.append(f"GPUs: {gpu_text}. Fit: advisor plan on these GPUs; inference at {context} tokens in the "
                 "runtime's usual file, LoRA/QLoRA rank 16 at 2048 tokens; memory per GPU shown.")
    if not rows:
        ol = ollama_dir()
        lm = ", ".join(cell(shown(d), None) for d in lmstudio_dirs()) or "~/.lmstudio/models (absent)"
        lines.append(f"No models found in the Hugging Face cache ({cell(shown(hub_cache_dir()), None)}), Ollama "
                     f"({cell(shown(ol), None) if ol else 'not installed'}) "
                     f"or LM Studio ({lm}). Get one with `hf download Qwen/Qwen2.5-0.5B` or `ollama pull qwen2.5:0.5b`.")
        return lines_text(lines)
    head = ("model", "store", "params", "size", "format", "context", "inference", "LoRA", "QLoRA")
    table = []
    for f, fit in rows:
        if f.model is None:
            table.append((cell(f.name, NAME_MAX_CHARS), f.store, "", "", "", "", "unreadable (below)", "", ""))
            continue
        m = f.model
        size = m.weight_bytes or (f.disk_bytes if f.store in ("ollama", "lmstudio") else 0)
        table.append((cell(f.spec or m.name, NAME_MAX_CHARS), f.store, fmt_count(m.params),
                      fmt_bytes(size) if size else "-", m.quant or "-",
                      str(m.arch.max_context or "?"), _yes(fit.get("inference")), _yes(fit.get("lora")),
                      _yes(fit.get("qlora"))))
    widths = [max(len(str(r[i])) for r in (head, *table)) for i in range(len(head))]
    lines.append("  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip())
    for r in table:
        lines.append("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())
    lines.extend(f"unreadable: {f.name}: {f.error}" for f, _fit in rows if f.model is None)
    if single:
        m = rows[0][0].model
        lines.append(f"source: {m.source} {m.location}".rstrip())
        lines.extend(f"note: {n}" for n in m.notes)
    return lines_text(lines)  # names from model files, manifests and folder names
