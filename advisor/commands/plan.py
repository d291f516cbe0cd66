"""``advisor plan``: memory, time and total job cost of an LLM job on every hardware option."""

from __future__ import annotations

import argparse
import json
import math
import sys

from advisor import units

_NUMBER_FLAGS = ("params", "active_params", "tokens", "epochs", "dataset_tokens", "hours", "mfu")
_INT_FLAGS = ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "zero", "gpus", "tp", "pp", "seq_len",
              "micro_batch", "context", "batch", "output_tokens", "lora_rank")


def _number(text: str) -> float:
    try:
        value = units.parse_quantity(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a finite number (like 7e9 or 7B), got {text!r}") from None
    return value


def _integer(text: str) -> int:
    value = _number(text)
    if value != int(value):
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}")
    return int(value)


def register(sub) -> None:
    from advisor.cli import _Parser  # noqa: F401  (subparsers inherit the one-line error parser)

    p = sub.add_parser("plan", help="plan an LLM job: memory, time and cost on every hardware option",
                       description="Plan a training or inference job: memory per device, fit, FLOPs, time, "
                                   "tokens/s and total job cost for home rigs, on-prem servers and every cloud offer. "
                                   "Flags override the scenario file.")
    p.add_argument("scenario", nargs="*", metavar="SCENARIO_FILE", help="TOML scenario file(s) (schema advisor.scenario/1)")
    m = p.add_argument_group("model")
    m.add_argument("--model", help="preset id (advisor catalog list models), e.g. llama-3-8b")
    m.add_argument("--params", type=_number, help="parameter count, e.g. 7e9 or 7B")
    m.add_argument("--active-params", type=_number, help="parameters active per token (MoE)")
    for name in ("layers", "hidden", "heads", "kv-heads", "ffn", "vocab"):
        m.add_argument(f"--{name}", type=_integer, help="architecture, for activations and KV cache")
    j = p.add_argument_group("job")
    j.add_argument("--workload", help="pretrain | finetune | lora | qlora | inference (default pretrain)")
    j.add_argument("--precision", help="fp32 | tf32 | bf16 | fp16 | fp8 | int8 | int4 (default bf16; "
                                       "training in bf16/fp16/fp8 means mixed precision)")
    j.add_argument("--quant", help="inference quantisation by effective bits: q8_0, q6_k, q4_k_m, q4_0, nf4")
    j.add_argument("--optimizer", help="adamw | adamw-8bit | sgd | adafactor (default adamw)")
    j.add_argument("--lora-rank", type=_integer, help="LoRA/QLoRA adapter rank (default 16)")
    j.add_argument("--zero", type=_integer, help="ZeRO stage 0-3 (3 = FSDP full shard); default: 0 on one "
                                                 "device, 3 when sharding over several")
    j.add_argument("--gpus", type=_integer, help="total devices; default: the fewest that fit, per accelerator")
    j.add_argument("--tp", type=_integer, help="tensor-parallel degree (default: the least that fits)")
    j.add_argument("--pp", type=_integer, help="pipeline-parallel degree (default 1)")
    j.add_argument("--seq-len", type=_integer, help="training sequence length (default 2048, capped at the model's)")
    j.add_argument("--micro-batch", type=_integer, help="micro-batch per device (default 1)")
    j.add_argument("--checkpointing", help="none | selective | full (default selective)")
    b = p.add_argument_group("budget (training)")
    b.add_argument("--tokens", type=_number, help="training tokens (inference: generated tokens)")
    b.add_argument("--epochs", type=_number, help="epochs over --dataset-tokens")
    b.add_argument("--dataset-tokens", type=_number, help="tokens in the dataset")
    b.add_argument("--hours", type=_number, help="wall-clock hours instead of a token budget")
    i = p.add_argument_group("inference")
    i.add_argument("--context", type=_integer, help="context tokens per request (default 2048)")
    i.add_argument("--batch", type=_integer, help="concurrent requests (default 1)")
    i.add_argument("--output-tokens", type=_integer, help="generated tokens per request (default 256)")
    h = p.add_argument_group("hardware and cost")
    h.add_argument("--accelerator", action="append", metavar="ID", help="restrict options to these accelerators")
    h.add_argument("--mfu", type=_number, help="override the utilisation prior (0-1]")
    h.add_argument("--electricity-usd-per-kwh", type=_number, help="electricity price (home)")
    h.add_argument("--utilisation", type=_number, help="fraction of owned hours actually used (0-1]")
    h.add_argument("--hours-per-day", type=_number, help="hours per day an owned machine is available")
    h.add_argument("--lifetime-years", type=_number, help="years over which owned hardware is depreciated")
    h.add_argument("--spot", dest="spot", action="store_true", default=None,
                   help="compare owning with spot rather than on-demand prices")
    h.add_argument("--no-spot", dest="spot_offers", action="store_false", default=None,
                   help="leave spot offers out of the comparison")
    h.add_argument("--set", action="append", metavar="NAME=VALUE", default=[],
                   help="set any cost assumption (see the assumptions listed in the output)")
    o = p.add_argument_group("output")
    o.add_argument("--json", action="store_true", help="one JSON document on stdout (schema advisor.plan/1)")
    o.add_argument("--sensitivity", action="store_true",
                   help="add how costs and the ranking move with tokens, MFU, electricity price and utilisation "
                        "(JSON key 'sensitivity')")
    o.add_argument("--top", type=_integer, default=12, help="options shown in the table (default 12)")
    o.add_argument("--all", action="store_true", help="show every option in the table")
    from advisor.report.plan_outputs import add_output_flags  # --report, --launch, --save-scenario, --fleet

    add_output_flags(o)
    p.set_defaults(run=run)


_ASSUMPTION_FLAGS = {"electricity_usd_per_kwh": "electricity_usd_per_kwh", "utilisation": "utilisation",
                     "hours_per_day": "hours_per_day", "lifetime_years": "lifetime_years", "spot": "spot"}


def _assumption_value(text: str):
    low = text.strip().lower()
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    return units.parse_quantity(text)


def request_values(args, scenario_plan: dict | None = None, scenario_assumptions: dict | None = None) -> dict:
    """Merge a scenario's [plan]/[assumptions] with the command-line flags (flags win)."""
    from advisor.cli import UsageError

    values = dict(scenario_plan or {})
    assumptions = {}
    for key, raw in (scenario_assumptions or {}).items():
        assumptions[key] = raw.get("value") if isinstance(raw, dict) else raw
    for key in ("model", "workload", "precision", "optimizer", "checkpointing", "quant", *_NUMBER_FLAGS,
                *_INT_FLAGS):
        value = getattr(args, key, None)
        if value is not None:
            values[key] = value
    if args.accelerator:
        values["accelerator"] = list(args.accelerator)
    if isinstance(values.get("accelerator"), str):
        values["accelerator"] = [values["accelerator"]]
    if args.spot_offers is not None:
        values["spot_offers"] = args.spot_offers
    for flag, name in _ASSUMPTION_FLAGS.items():
        value = getattr(args, flag, None)
        if value is not None:
            assumptions[name] = value
    for item in args.set:
        name, sep, raw = item.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"--set: expected NAME=VALUE, got {item!r}")
        try:
            assumptions[name.strip().replace("-", "_")] = _assumption_value(raw)
        except ValueError as exc:
            raise UsageError(f"--set {name.strip()}: {exc}") from None
    values["assumptions"] = assumptions
    return values


def build_plan(values: dict, catalog=None, calibration=None):
    """Validate values and plan; bad input raises UsageError with one line naming the field."""
    from advisor.cli import UsageError
    from advisor.planner import PlanInputError, PlanRequest, plan

    try:
        request = PlanRequest.from_mapping(values)
        return plan(request, catalog=catalog, calibration=calibration)
    except PlanInputError as exc:
        raise UsageError(f"plan: {exc}") from None
    except TypeError as exc:  # wrong type from a scenario file
        raise UsageError(f"plan: {exc}") from None


def _load_scenarios(paths: list[str]):
    from advisor.cli import UsageError
    from advisor.store.scenario import ScenarioError, load_scenario

    out = []
    for path in paths:
        try:
            out.append(load_scenario(path))
        except ScenarioError as exc:
            raise UsageError(str(exc)) from None
    return out


def run(args) -> int:
    scenarios = _load_scenarios(args.scenario) if args.scenario else [None]
    from advisor.catalog import load_catalog
    from advisor.report.plan_outputs import prepare_values, write_outputs
    from advisor.store.calibration import load_calibration

    catalog, calibration = load_catalog(), load_calibration()  # read once for every scenario and variation
    results, values_list = [], []
    for sc in scenarios:
        values = prepare_values(args, request_values(args, sc.plan if sc else None, sc.assumptions if sc else None))
        values_list.append(values)
        results.append(build_plan(values, catalog, calibration))
    for warning in results[0].warnings:
        print(f"warning: {warning}", file=sys.stderr)
    launch_text = write_outputs(args, results, values_list, scenarios)
    if launch_text is not None:  # --launch without --launch-file: the spec alone, ready to redirect
        sys.stdout.write(launch_text)
        return 0
    if args.json:
        docs = [r.to_json() for r in results]
        if args.sensitivity:
            for r, doc in zip(results, docs):
                doc["sensitivity"] = _sensitivity(r, catalog, calibration)
        doc = docs[0] if len(docs) == 1 else {"schema": "advisor.plan-set/1", "plans": docs}
        json.dump(doc, sys.stdout, indent=1, allow_nan=False, default=_json_default)
        sys.stdout.write("\n")
    else:
        for r in results:
            sys.stdout.write(render_table(r, top=None if args.all else args.top))
    return 0


def _sensitivity(result, catalog, calibration) -> dict:
    from advisor.cli import UsageError
    from advisor.planner import SENSITIVITY_PARAMETERS, PlanInputError, sensitivity

    out = {}
    for name in SENSITIVITY_PARAMETERS:
        if name == "tokens" and result.tokens is None:
            continue
        try:
            out[name] = sensitivity(result.request, name, catalog=catalog, calibration=calibration,
                                    base=result).as_dict()
        except PlanInputError as exc:
            raise UsageError(f"plan: {exc}") from None
    return out


def _json_default(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (set, tuple)):
        return list(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


# ---------------------------------------------------------------- the readable table
def render_table(result, top: int | None = 12) -> str:
    """The plan as text for people: the job, memory, the cheapest options, and the assumptions used."""
    r = result.request
    lines = []
    name = result.model_name or "custom model"
    moe = f", {units.fmt_count(result.active_params)} active" if result.active_params != result.params else ""
    lines.append(f"Plan: {name} ({units.fmt_count(result.params)} parameters{moe}), {r.workload}, {r.precision}"
                 + ("" if r.workload == "inference" else f", {r.optimizer}"))
    if result.tokens is not None:
        lines.append(f"Budget: {units.fmt_count(result.tokens)} tokens ({result.budget_origin})")
    else:
        lines.append(f"Budget: {r.hours:g} hours ({result.budget_origin})")
    if r.workload == "inference":
        lines.append(f"FLOPs: {result.flops_per_token:.3e} per generated token; context {result.context}, "
                     f"batch {r.batch}, {r.output_tokens} output tokens per request")
    else:
        lines.append(f"FLOPs: {units.fmt_flops(result.flops_total)} (model FLOPs, {result.flops_per_token / result.params:.0f}"
                     f" x params x tokens; attention adds about {result.attention_flops_per_token:.2e} per token)")
    lay = result.parallelism
    lines.append("")
    lines.append(f"Memory per device on {lay.devices} device(s) (tp {lay.tp}, pp {lay.pp}, dp {lay.dp}, "
                 f"ZeRO {lay.zero}; GB = 1e9 bytes):")
    md = result.memory.as_dict()
    for part in ("weights", "gradients", "optimizer", "activations", "kv_cache", "overhead"):
        if md[part]:
            lines.append(f"  {part:<12} {md[part] / 1e9:10.2f} GB")
    lines.append(f"  {'total':<12} {md['total'] / 1e9:10.2f} GB  ({md['total'] / 2**30:.2f} GiB)")
    best = result.best()
    if best is not None and best.devices != lay.devices:
        bl = best.parallelism
        lines.append(f"  On the cheapest option ({best.devices} x {best.accelerator_name}, tp {bl.tp}, ZeRO {bl.zero}): "
                     f"{best.memory_per_device_bytes / 2**30:.2f} GiB per device of {best.capacity_bytes / 2**30:.0f} GiB")
    lines.append("")
    fitting = [o for o in result.options if o.fits]
    shown = result.options if top is None else result.options[:top]
    lines.append(f"Options by total job cost ({len(fitting)} of {len(result.options)} fit; "
                 f"prices as of {result.prices_as_of}, catalog {result.catalog_date}):")
    inference = r.workload == "inference"
    rate_head = "$/M tokens" if inference else "tokens/s"
    width = min(60, max([len(o.id) for o in shown] + [6]))
    header = f"  {'option':<{width}} {'dev':>4} {'fits':>4} {'time':>10} {'$/dev-h':>8} {'total':>11} {rate_head:>10}  cost parts"
    lines.append(header)
    for o in shown:
        rate = units.fmt_usd(o.usd_per_million_tokens) if inference else f"{o.tokens_per_s:,.0f}"
        per_h = "-" if o.usd_per_device_hour is None else f"{o.usd_per_device_hour:.2f}"
        parts = ", ".join(f"{k} {units.fmt_usd(v)}" for k, v in o.cost_breakdown_usd.items() if v)
        if o.note:
            parts += "  (*)"
        lines.append(f"  {_clip(o.id, width):<{width}} {o.devices:>4} {'yes' if o.fits else 'NO':>4} {units.fmt_hours(o.hours):>10} "
                     f"{per_h:>8} {units.fmt_usd(o.cost_usd):>11} {rate:>10}  {parts}")
    if top is not None and len(result.options) > top:
        lines.append(f"  ... {len(result.options) - top} more (--all to list them, --json for scripts)")
    noted = [o for o in shown if o.note]
    if noted:
        lines.append(f"  (*) {noted[0].note} ({len(noted)} option(s) above)")
    lines.extend(_dearer_hour_note(result))
    for kind in ("home", "onprem"):
        best = result.best(kind)
        if best and best.break_even:
            be = best.break_even
            if be["device_hours"] is None:
                verdict = "never: renting is always cheaper" if be["vs"] else "no cloud offer to compare"
            else:
                verdict = f"after {be['device_hours']:,.0f} device-hours of use ({be['months']:.1f} months at the stated hours per day)"
            lines.append(f"Break-even {best.id} vs {be['vs'] or '-'}: {verdict}")
    lines.append("")
    lines.append("Assumptions (value, unit, origin; change with --set NAME=VALUE or a scenario's [assumptions]):")
    for key, a in result.assumptions.describe().items():
        lines.append(f"  {key} = {a['value']} {a['unit']}  [{a['origin']}]")
    best = result.best()
    if best:
        lines.append(f"Utilisation of the cheapest option: {best.mfu:.2f} ({best.mfu_origin})")
    lines.append("")
    return "\n".join(lines) + "\n"


def _clip(text: str, width: int) -> str:
    """Shorten in the middle so the end (``:spot``, the instance) stays visible."""
    return text if len(text) <= width else text[: width - 13] + "~" + text[-12:]


def _dearer_hour_note(result) -> list[str]:
    """Explain, with numbers, a case where a dearer hour gives the cheaper job."""
    cloud = [o for o in result.options if o.fits and o.kind == "cloud" and o.usd_per_device_hour]
    if len(cloud) < 2:
        return []
    cheapest_job = cloud[0]
    cheapest_hour = min(cloud, key=lambda o: o.usd_per_device_hour)
    if cheapest_hour.id == cheapest_job.id or cheapest_job.usd_per_device_hour <= cheapest_hour.usd_per_device_hour:
        return []
    return ["", f"A dearer hour can be the cheaper job: {cheapest_job.id} costs "
                f"${cheapest_job.usd_per_device_hour:.2f}/device-hour against ${cheapest_hour.usd_per_device_hour:.2f} for "
                f"{cheapest_hour.id}, but finishes in {units.fmt_hours(cheapest_job.hours)} instead of "
                f"{units.fmt_hours(cheapest_hour.hours)}: {units.fmt_usd(cheapest_job.cost_usd)} against "
                f"{units.fmt_usd(cheapest_hour.cost_usd)} for the whole job."]
