"""What runs my code: options on parts outside the job's software stacks are marked and ranked after."""

from __future__ import annotations

import json

import pytest

from advisor.catalog import load_catalog
from advisor.catalog.stacks import STACKS, needs_text, stacks_for
from advisor.job import JOB_FIELDS, JobInputError
from advisor.planner import PlanRequest, plan
from advisor.planner.stacks import wanted_stacks

CAT = load_catalog(use_user_file=False)


def _plan(**kw):
    return plan(PlanRequest.from_mapping(kw), CAT)


@pytest.mark.parametrize(("acc_id", "stacks"), [
    ("tpu-v6e", ("jax-xla",)), ("trainium2", ("neuron",)), ("inferentia2", ("neuron",)), ("gaudi3", ("gaudi",)),
    ("h100-sxm", ("pytorch-cuda", "jax-xla", "llama.cpp")), ("rtx-4090", ("pytorch-cuda", "jax-xla", "llama.cpp")),
    ("mi300x", ("pytorch-rocm", "llama.cpp")), ("m2-ultra", ("pytorch-mps", "llama.cpp")),
    ("arc-b580", ("pytorch-xpu", "llama.cpp")),
])
def test_each_part_gets_its_stacks_from_vendor_and_kind(acc_id, stacks):
    assert CAT.accelerators[acc_id].stacks == stacks


def test_every_catalog_part_has_a_stack_and_unknown_vendors_none():
    assert all(a.stacks for a in CAT.accelerators.values())
    assert stacks_for("Cerebras", "wafer") == ()
    assert stacks_for("", "cpu") == ("pytorch-cpu", "llama.cpp")  # this machine's CPU runs the same PyTorch code
    assert needs_text(("jax-xla",)) == "needs JAX/XLA"
    assert needs_text(("pytorch-mps", "llama.cpp")) == "needs PyTorch MPS or llama.cpp"


def test_a_pytorch_lora_job_is_not_shown_a_tpu_or_trainium_as_cheapest():
    # Issue 19: a spot TPU v6e chip was the cheapest option of an 8B LoRA (a PyTorch job) with no word of JAX.
    result = _plan(model="llama-3-8b", workload="lora", tokens=1e8)
    best = result.best()
    assert best.stack_ok and CAT.accelerators[best.accelerator].vendor in ("NVIDIA", "AMD")
    fitting = [o for o in result.ranked if o.fits]
    off = [o for o in fitting if not o.stack_ok]
    assert off, "the catalog has TPU and Trainium offers that fit an 8B LoRA"
    first_off = fitting.index(off[0])
    assert all(o.stack_ok for o in fitting[:first_off]) and all(not o.stack_ok for o in fitting[first_off:])
    tpu = min((o for o in off if o.accelerator.startswith("tpu-")), key=lambda o: o.cost_usd)  # a spot chip
    assert tpu.stack_reason == "needs JAX/XLA" and tpu.cost_usd < best.cost_usd  # cheaper, but ranked after
    trn = next(o for o in off if o.accelerator.startswith("trainium"))
    assert trn.stack_reason == "needs AWS Neuron"
    doc = json.loads(json.dumps(result.to_json(), allow_nan=False))
    assert doc["stack"] == ["pytorch-cuda", "pytorch-rocm", "pytorch-cpu"]
    row = next(o for o in doc["options"] if o["id"] == tpu.id)
    assert row["stack_ok"] is False and row["stack_reason"] == "needs JAX/XLA" and row["stacks"] == ["jax-xla"]
    assert "stack_reason" not in next(o for o in doc["options"] if o["id"] == best.id)


def test_naming_jax_puts_the_tpu_first():
    from advisor.cost.assumptions import CostAssumptions

    # ranked with spot prices (the TPU's spot chip is the cheapest; on-demand prices rank a GH200 first)
    result = plan(PlanRequest.from_mapping({"model": "llama-3-8b", "workload": "lora", "tokens": 1e8,
                                            "stack": ["jax-xla"]}), CAT, assumptions=CostAssumptions(spot=True))
    assert result.best().accelerator.startswith("tpu-")
    assert all(o.stack_ok == ("jax-xla" in o.stacks) for o in result.options)


def test_restricted_to_parts_off_the_stack_the_best_is_the_marked_cheapest():
    result = _plan(model="llama-3-8b", workload="lora", accelerator=["tpu-v6e"])
    assert result.best() is not None and not result.best().stack_ok


def test_defaults_by_workload_and_runtime():
    qlora = PlanRequest.from_mapping({"model": "llama-3-8b", "workload": "qlora"})
    assert wanted_stacks(qlora) == ("pytorch-cuda", "pytorch-rocm", "pytorch-cpu")
    serve = PlanRequest.from_mapping({"model": "llama-3-8b", "workload": "inference"})
    assert wanted_stacks(serve) == ("pytorch-cuda", "pytorch-rocm", "llama.cpp", "pytorch-cpu")
    cpp = PlanRequest.from_mapping({"model": "llama-3-8b", "workload": "inference", "runtime": "llama.cpp"})
    assert wanted_stacks(cpp) == ("llama.cpp",)


def test_the_schema_declares_the_stack_input_with_its_choices():
    meta = JOB_FIELDS["stack"]
    assert meta.kind == "ids" and meta.choices == STACKS and meta.flag == "--stack"
    with pytest.raises(JobInputError, match="stack: unknown software stack 'cuda'"):
        PlanRequest.from_mapping({"model": "llama-3-8b", "stack": ["cuda"]})
