"""Fit advice: each change, applied to the job, really fits (memory recomputed from the estimates)."""

from __future__ import annotations

import pytest

from advisor.catalog import load_catalog
from advisor.estimate.fit import Outcome, candidate_changes, fit_advice, job_evaluator, job_memory
from advisor.estimate.model import param_count

GIB = 2**30


@pytest.fixture(scope="module")
def cat():
    return load_catalog(use_user_file=False)


def _model(cat, mid):
    arch = cat.model(mid)
    return arch, param_count(arch)


def _check(arch, params, job, advice, capacity, devices=1, host=None):
    assert advice, "expected advice"
    for a in advice:
        dev, host_bytes = job_memory(arch, params, {**job, **a.change}, devices)
        assert dev == a.memory_total_bytes
        if a.fits:
            assert dev <= capacity and (host is None or host_bytes <= host)


def test_qlora_llama3_on_an_8gb_laptop(cat):
    arch, p = _model(cat, "llama-3-8b")
    job = {"workload": "qlora", "seq_len": 2048, "micro_batch": 1, "checkpointing": "selective"}
    ev = job_evaluator(arch, p, job, devices=1, peak_flops=29.1e12, mfu=0.21, tokens=1e8)
    # the 18.3 GB, plus the largest base matrix dequantised to bf16 (2 x 4096 x 14336 bytes, x 1.07)
    assert ev({}).memory_total_bytes / 1e9 == pytest.approx(18.25 + 0.1174 * 1.07, abs=0.1)
    advice = fit_advice(job, 8 * GIB, ev)
    _check(arch, p, job, advice, 8 * GIB)
    first = advice[0]
    assert first.fits and first.change["checkpointing"] == "full" and first.change["seq_len"] < 2048
    assert first.hours_lost == pytest.approx(ev({}).hours / 3)  # 8PD over 6PD: a third longer


@pytest.mark.parametrize("job, capacity, devices, expected", [
    ({"workload": "lora", "seq_len": 4096, "micro_batch": 1, "checkpointing": "selective"}, 24, 1,
     {"checkpointing": "full"}),
    ({"workload": "lora", "seq_len": 1024, "micro_batch": 8, "checkpointing": "full"}, 19, 1,
     {"micro_batch": 1, "grad_accum": 8}),
    ({"workload": "finetune", "seq_len": 2048, "micro_batch": 1, "checkpointing": "full"}, 24, 1,
     {"workload": "qlora"}),
    ({"workload": "finetune", "seq_len": 2048, "micro_batch": 1, "checkpointing": "full"}, 48, 1,
     {"workload": "lora"}),
    ({"workload": "finetune", "seq_len": 2048, "micro_batch": 1, "checkpointing": "full"}, 84, 1,
     {"optimizer": "adamw-8bit"}),
    ({"workload": "finetune", "seq_len": 2048, "micro_batch": 1, "checkpointing": "full", "zero": 0}, 24, 8,
     {"zero": 3}),
    ({"workload": "lora", "seq_len": 8192, "micro_batch": 1, "checkpointing": "full"}, 19, 1,
     {"seq_len": 1024}),
])
def test_each_training_change(job, capacity, devices, expected, cat):
    arch, p = _model(cat, "llama-3-8b")
    ev = job_evaluator(arch, p, job, devices=devices, peak_flops=100e12, mfu=0.3, tokens=1e8)
    advice = fit_advice(job, capacity * GIB, ev, devices=devices)
    _check(arch, p, job, advice, capacity * GIB, devices)
    fitting = [a.change for a in advice if a.fits]
    assert expected in fitting, (expected, [(a.change, a.memory_total_bytes / GIB) for a in advice])


def test_optimizer_offload_checks_host_ram(cat):
    arch, p = _model(cat, "llama-3-8b")
    job = {"workload": "pretrain", "seq_len": 1024, "micro_batch": 1, "checkpointing": "full",
           "optimizer": "adamw-8bit"}
    ev = job_evaluator(arch, p, job, devices=1, peak_flops=100e12, mfu=0.3, tokens=1e8)
    dev, host = job_memory(arch, p, {**job, "optimizer_offload": True})
    assert host == pytest.approx(p * 6, rel=0.01)  # fp32 master 4 + 8-bit moments 2 bytes per parameter
    capacity = dev + GIB
    ok = [a for a in fit_advice(job, capacity, ev, host_ram_bytes=128 * GIB) if a.change == {"optimizer_offload": True}]
    assert ok and ok[0].fits and ok[0].host_ram_bytes == host and ok[0].hours_lost > 0
    short = [a for a in fit_advice(job, capacity, ev, host_ram_bytes=16 * GIB) if a.change == {"optimizer_offload": True}]
    assert short and not short[0].fits and not short[0].host_fits


@pytest.mark.parametrize("job, capacity, expected", [
    # the usual ladder, least step first: Q5_K_M (5.7 bits, 7.4 GiB) already fits 8 GiB
    ({"workload": "inference", "precision": "bf16", "context": 4096}, 8, {"quant": "q5_k_m"}),
    ({"workload": "inference", "quant": "q4_k_m", "context": 32768, "batch": 1}, 14, {"kv_cache_bits": 8}),
    ({"workload": "inference", "quant": "q4_k_m", "context": 32768, "batch": 1}, 12, {"context": 8192}),
    ({"workload": "inference", "precision": "bf16", "context": 4096}, 8, {"gpu_layers": 15}),
])
def test_each_inference_change(job, capacity, expected, cat):
    arch, p = _model(cat, "llama-2-7b")
    ev = job_evaluator(arch, p, job, devices=1, peak_flops=30e12, mfu=0.3, tokens=1e6, gpu_bandwidth_bps=256e9,
                       cpu_bandwidth_bps=40e9)
    advice = fit_advice(job, capacity * GIB, ev, host_ram_bytes=32 * GIB, layers=arch.layers)
    _check(arch, p, job, advice, capacity * GIB, host=32 * GIB)
    assert expected in [a.change for a in advice if a.fits], [(a.change, a.memory_total_bytes / GIB) for a in advice]
    assert all(a.hours is not None for a in advice)


def test_already_fits_and_ordering(cat):
    arch, p = _model(cat, "llama-2-7b")
    job = {"workload": "inference", "quant": "q4_k_m", "context": 2048}
    ev = job_evaluator(arch, p, job, devices=1, peak_flops=30e12, mfu=0.3, tokens=1e6, gpu_bandwidth_bps=256e9)
    assert fit_advice(job, 24 * GIB, ev) == []

    def fake(change):  # a hand-made evaluator: the order is by fit first, then hours lost
        table = {"checkpointing": Outcome(5, 3.0), "optimizer": Outcome(5, 1.0), "seq_len": Outcome(20, 1.0)}
        key = next(iter(change), None)
        return Outcome(100, 1.0) if key is None else table.get(key, Outcome(50, 2.0))

    out = fit_advice({"workload": "pretrain", "seq_len": 1024}, 10, fake)
    assert [a.fits for a in out][:2] == [True, True] and out[0].change == {"optimizer": "adamw-8bit"}
    assert out[0].to_json()["change"] == {"optimizer": "adamw-8bit"}
    assert candidate_changes({"workload": "pretrain", "checkpointing": "full", "seq_len": 256}) != []
