"""Fit advice on the plan: each offered change, applied by re-planning, gives the memory and fit it claims;
the laptop QLoRA question gets flags that fit in 8 GB; inference figures (largest context, sweep)."""

from __future__ import annotations

import json

import pytest

from advisor.catalog import load_catalog
from advisor.cli import main
from advisor.planner import PlanRequest, plan
from advisor.planner.machine import local_machine
from advisor.planner.summary import change_flags

CAT = load_catalog(use_user_file=False)
JOBS = [  # (fake GPUs, job): together they make every kind of advice
    ("2x4090", {"model": "llama-3-8b", "workload": "finetune", "zero": 0, "micro_batch": 4, "checkpointing": "selective"}),
    ("laptop-4060", {"model": "llama-3-8b", "workload": "lora", "seq_len": 4096}),
    ("laptop-4060", {"model": "llama-3-70b", "workload": "inference", "context": 8192}),
    ("laptop-4060", {"model": "llama-3-8b", "workload": "inference", "context": 8192, "precision": "bf16"}),
]


def _advised(fake, job):
    m = local_machine(fake, CAT)
    result = plan(PlanRequest.from_mapping(job), CAT, owned=m.owned, host=m.host)
    return m, result


@pytest.mark.parametrize("fake, job", JOBS)
def test_each_advice_applied_gives_what_it_says(fake, job):
    m, result = _advised(fake, job)
    target = result.fit_target()
    assert target is not None and target.this_machine and not target.fits
    assert result.fit_advice
    for advice in result.fit_advice:
        values = {**job, **advice.change}
        again = plan(PlanRequest.from_mapping(values), CAT, owned=m.owned, host=m.host).option(target.id)
        assert again.memory_per_device_bytes == advice.memory_total_bytes, advice.change
        assert again.fits == advice.fits, advice.change
        if advice.fits:
            assert again.memory_per_device_bytes <= target.capacity_bytes
    fitting = [a for a in result.fit_advice if a.fits]
    lost = [a.hours_lost for a in fitting if a.hours_lost is not None]
    assert lost == sorted(lost)  # cheapest in time lost first


def test_every_kind_of_change_is_offered():
    kinds = set()
    for fake, job in JOBS:
        for advice in _advised(fake, job)[1].fit_advice:
            kinds.update(advice.change)
    assert kinds >= {"checkpointing", "micro_batch", "grad_accum", "seq_len", "workload", "optimizer", "zero",
                     "optimizer_offload", "quant", "kv_cache_bits", "context", "gpu_layers", "framework"}


def test_laptop_qlora_question(capsys):
    """The issue's question: QLoRA Llama 3 8B on a laptop RTX 4060 (8 GB)."""
    flags = ["--model", "llama-3-8b", "--workload", "qlora", "--tokens", "1e8", "--fake-gpu", "laptop-4060"]
    assert main(["plan", *flags, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    first = doc["options"][0]
    assert first["id"] == "owned:rtx-4060-laptop" and first["this_machine"] and not first["fits"]
    assert doc["fit_target"] == first["id"]
    fitting = [a for a in doc["fit_advice"] if a["fits"]]
    assert fitting
    for advice in fitting:
        extra = change_flags(advice["change"]).split()
        assert main(["plan", *flags, *extra, "--json"]) == 0
        again = json.loads(capsys.readouterr().out)["options"][0]
        assert again["id"] == first["id"] and again["fits"]
        assert again["memory_per_device_bytes"] <= 8 * 2**30
    assert main(["plan", *flags]) == 0
    text = capsys.readouterr().out
    assert "This machine (1 x GeForce RTX 4060 Laptop GPU): does not fit" in text
    assert "What to change to fit owned:rtx-4060-laptop" in text


def test_a_job_that_fits_gets_no_advice():
    _, result = _advised("2x4090", {"model": "llama-3-8b", "workload": "qlora"})
    assert result.this_machine().fits and result.fit_advice == () and result.to_json()["fit_advice"] == []


def test_optimizer_offload_needs_host_ram():
    from advisor.estimate.local import HostFigures
    from advisor.planner.owned import OwnedHardware

    small = HostFigures(memory_total_bytes=8 * 2**30, physical_cores=4)
    hw = OwnedHardware(CAT.accelerators["rtx-4090"], 1, origin="test", this_machine=True, host=small)
    result = plan(PlanRequest.from_mapping({"model": "llama-3-8b", "workload": "finetune"}), CAT, owned=[hw],
                  host=small)
    offload = next(a for a in result.fit_advice if a.change.get("optimizer_offload"))
    assert offload.host_ram_bytes > 6 * 2**30 and not offload.host_fits and not offload.fits


def test_inference_summary_largest_context_and_sweep():
    _, result = _advised("laptop-4060", {"model": "llama-3.1-8b", "workload": "inference", "quant": "q4_k_m"})
    inf = result.inference
    assert inf["option"] == "owned:rtx-4060-laptop"
    largest = inf["largest_context"]
    assert 8192 < largest < 131072
    from functools import partial

    from advisor.planner.layouts import MemoryModel, Parallelism
    from advisor.planner.serve_spec import reserve_bytes

    # one rule of what fits (the plan's memory and advisor serve's cache): weights, the cache of the context and
    # what llama.cpp keeps beside them (serve_spec.reserve_bytes) within the GPU's memory
    cap = result.this_machine().capacity_bytes
    choice = result.this_machine().serving.software
    weights = int(result.params * choice.weight_format.bits_per_weight / 8)

    def mem(ctx):
        return MemoryModel(result.request, result.arch, result.params, result.seq_len, ctx, weights,
                           reserve=partial(reserve_bytes, choice, cap)).at(Parallelism(1, 1, 1, 0)).total_bytes

    assert mem(largest) <= cap < mem(largest + 1)
    assert largest == result.this_machine().serving.kv_capacity_tokens
    sweep = inf["context_sweep"]
    assert [p["context"] for p in sweep][:3] == [512, 1024, 2048]
    fitting = [p for p in sweep if p["fits"]]
    assert all(a["ttft_s"] < b["ttft_s"] for a, b in zip(fitting, fitting[1:]))
    assert [p["fits"] for p in sweep] == [p["context"] <= largest for p in sweep]
    # a context that does not fit has no time: it could not be true
    assert all(p["ttft_s"] is None and p["decode_tokens_per_s"] == 0 for p in sweep if not p["fits"])
    # the default window of 2048 tokens holds the 256 output tokens: the prompt is the 1792 before them
    assert inf["prompt_tokens"] == 1792
    # one request's first token is its prompt's prefill (estimate.serving.single_request)
    assert inf["prefill_tokens_per_s"] == pytest.approx(1792 / inf["ttft_s"], rel=1e-6)


def _five_friends(extra: dict):
    from advisor.planner.owned import parse_own

    values = {"model": "llama-3.3-70b", "workload": "inference", "quant": "q4_k_m", "runtime": "llama.cpp",
              "batch": 5, **extra}
    req = PlanRequest.from_mapping(values)
    return plan(req, CAT, owned=parse_own(["2xrtx-3090"], CAT))


def test_the_inference_summary_stays_on_the_owned_gpus_and_labels_its_figures():
    from advisor.planner.summary import inference_sentence

    result = _five_friends({"prompt_tokens": 1000, "output_tokens": 300})
    inf = result.inference
    assert inf["option"] == "owned:rtx-3090" and inf["owned"] and inf["fits"]
    # decode over the batch and per request, apart
    assert inf["decode_tokens_per_s_per_request"] == pytest.approx(inf["decode_tokens_per_s"] / 5)
    # one request alone waits for its own prompt; five arriving together wait for all five
    assert inf["ttft_single_request_s"] < inf["ttft_batch_arriving_together_s"] == inf["ttft_s"]
    text = inference_sentence(result)
    assert text.startswith("On your 2 x GeForce RTX 3090 (owned:rtx-3090) with llama.cpp (q4_k_m weights, cuda): "
                           "first token after")
    assert "for one request alone" in text and "when all 5 arrive together" in text
    assert "tokens/s in all over 5 requests" in text and "per request" in text


def test_the_sweep_keeps_one_layout_and_a_job_that_does_not_fit_the_owned_gpus_shows_no_speed():
    from advisor.planner.summary import inference_sentence

    result = _five_friends({"context": 8192})  # five caches of 8,192 tokens beside 42 GB of weights: too much
    inf = result.inference
    # the owned GPUs do not hold it: the summary says so on them, never on another rig
    assert inf["option"] == "owned:rtx-3090" and not inf["fits"]
    assert inf["ttft_s"] is None and inf["decode_tokens_per_s"] is None
    assert "does not fit" in inference_sentence(result) and "your 2 x GeForce RTX 3090" in inference_sentence(result)
    sweep = inf["context_sweep"]
    assert sweep and [p["fits"] for p in sweep] == [p["context"] <= inf["largest_context"] for p in sweep]
    # one fixed layout: the memory per device grows with the context alone
    mem = [p["memory_total_bytes"] for p in sweep]
    assert mem == sorted(mem)
