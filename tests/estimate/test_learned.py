"""estimate/learned.py: utilisation and bandwidth efficiency from run records, worked by hand."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

from advisor.catalog import load_catalog
from advisor.catalog.training_runs import bundled_utilisation_model
from advisor.estimate import learned
from advisor.estimate.run_record import Measured, RunRecord

MODEL = bundled_utilisation_model()
ACC = load_catalog().accelerators["rtx-4090"]


@dataclass(frozen=True)
class Calib:
    runs: tuple = ()
    machine_id: str | None = "here"
    mfu: float | None = None
    eta_mem: float | None = None
    accelerator_id: str | None = None
    source: str = "probe:train-step"
    measured_at: str = "2026-01-02T00:00:00"

    def applies_to(self, acc_id: str) -> bool:
        return self.accelerator_id == acc_id


def train(u: float, params: float = 1e9, seq: int = 2048, machine="here", sha="a", software="transformers"):
    """A fine-tune record that achieved utilisation ``u`` of the 4090's bf16 peak."""
    per_token = 6 * params + 6 * 16 * seq * 2048
    tps = u * ACC.peak_flops("bf16") / per_token
    return RunRecord(kind="hf-trainer", source_file=f"/runs/{sha}/trainer_state.json", content_sha256=sha,
                     recorded_at="2026-03-04T05:06:07", workload="finetune", measured=Measured(tokens_per_s=tps),
                     params=int(params), layers=16, hidden=2048, seq_len=seq, precision="bf16", software=software,
                     accelerator_id="rtx-4090", machine_id=machine)


def test_record_utilisation_inverts_the_planners_flops():
    rec = train(0.4)
    assert learned.record_utilisation(rec, ACC.peak_flops("bf16")) == pytest.approx(0.4, rel=1e-12)


def test_one_record_transfers_its_utilisation_moved_by_the_fitted_size_slope():
    got = learned.training_utilisation(Calib(runs=(train(0.4),)), acc=ACC, workload="finetune", precision="bf16",
                                       software=None, active_params=1e10, seq_len=4096, model=MODEL)
    b_p = MODEL.coefficients[4]
    # one decade of parameters moves it by the size slope; the doubled length only adds attention work
    assert got.value == pytest.approx(0.4 * math.exp(b_p * 1.0), rel=1e-12)
    assert got.source == "learned" and got.width_log == MODEL.half_width_calibrated_log
    assert got.origin.startswith("from your run of 2026-03-04 (trainer_state.json)")


def test_range_follows_how_well_transfers_held():
    # four records at 0.40 +- 2 %: the conformal 80 % width of the pair errors is about log(1.04), narrower
    runs = tuple(train(0.4 * f, params=p, sha=str(i)) for i, (f, p) in enumerate(
        ((1.0, 1e9), (1.02, 2e9), (0.98, 4e9), (1.01, 8e9))))
    got = learned.training_utilisation(Calib(runs=runs), acc=ACC, workload="finetune", precision="bf16",
                                       software=None, active_params=3e9, seq_len=2048, model=MODEL)
    assert got.width_log < MODEL.half_width_calibrated_log
    assert got.width_log >= learned.MIN_WIDTH_LOG
    assert "and 3 more" in got.origin
    # a record far off widens it (the worst transfer with too few pairs)
    wild = (train(0.4, sha="x"), train(0.2, params=2e9, sha="y"))
    got = learned.training_utilisation(Calib(runs=wild), acc=ACC, workload="finetune", precision="bf16",
                                       software=None, active_params=1e9, seq_len=2048, model=MODEL)
    assert got.width_log == pytest.approx(abs(math.log(0.2 / (0.4 * learned.size_factor(MODEL, 1e9, 2048, 2e9, 2048)))))


def test_other_machines_count_less_and_keep_the_full_width():
    here, there = train(0.4, sha="h"), train(0.2, machine="elsewhere", sha="t")
    got = learned.training_utilisation(Calib(runs=(here, there)), acc=ACC, workload="finetune", precision="bf16",
                                       software=None, active_params=1e9, seq_len=2048, model=MODEL)
    # weights 1 and 0.5: exp((log 0.4 + 0.5 log 0.2) / 1.5)
    assert got.value == pytest.approx(math.exp((math.log(0.4) + 0.5 * math.log(0.2)) / 1.5), rel=1e-12)
    only_there = learned.training_utilisation(Calib(runs=(there,)), acc=ACC, workload="finetune", precision="bf16",
                                              software=None, active_params=1e9, seq_len=2048, model=MODEL)
    assert only_there.width_log == MODEL.half_width_log and "another machine" in only_there.origin


def test_what_does_not_match_is_ignored_and_the_probe_remains():
    rec = train(0.4)
    calib = Calib(runs=(rec,), mfu=0.3, accelerator_id="rtx-4090")
    kw = dict(acc=ACC, precision="bf16", active_params=1e9, seq_len=2048, model=MODEL)
    assert learned.training_utilisation(calib, workload="lora", software=None, **kw).source == "calibrated"
    assert learned.training_utilisation(calib, workload="finetune", software="torchtune", **kw).value == 0.3
    assert learned.training_utilisation(calib, workload="finetune", software="transformers", **kw).value == 0.4
    other = load_catalog().accelerators["rtx-3090"]
    assert learned.training_utilisation(calib, workload="finetune", software=None, **{**kw, "acc": other}) is None
    assert learned.training_utilisation(None, workload="finetune", software=None, **kw) is None


def _tg(tps: float, sha: str = "b", machine: str | None = "here") -> RunRecord:
    return RunRecord(kind="llama-bench", source_file=f"/runs/{sha}.json", content_sha256=sha,
                     recorded_at="2025-04-24T00:00:00", workload="inference",
                     measured=Measured(tokens_per_s=tps, decode_tokens_per_s=tps), params=7_600_000_000,
                     weight_bytes=4_600_000_000, quant="q4_k_m", software="llama.cpp", accelerator_id="rtx-4080",
                     machine_id=machine, output_tokens=128)


def test_solve_increasing_inverts_a_decode_step_by_hand():
    # a step of 4.6 GB read at 716.8 GB/s x eta plus 2 ms: tokens/s = 1 / (W / (BW * eta) + c)
    def f(eta):
        return 1.0 / (4.6e9 / (716.8e9 * eta) + 2e-3)

    # 100 tokens/s: 10 ms a step, 8 ms of it reading, eta = 4.6e9 / (716.8e9 * 8e-3) = 0.80218...
    assert learned.solve_increasing(f, 100.0, 1e-3, 1.0) == pytest.approx(4.6e9 / (716.8e9 * 8e-3), rel=1e-9)
    assert learned.solve_increasing(f, f(1.0) * 1.01, 1e-3, 1.0) is None  # faster than any efficiency allows
    assert learned.solve_increasing(f, 0.0, 1e-3, 1.0) is None


def test_serving_scale_is_the_factor_that_gives_each_run_back():
    acc = load_catalog().accelerators["rtx-4080"]

    def forward(rec):  # the plan's decode of the record's job: 120 tokens/s at the published speed, 1 / step
        return lambda k: 1.0 / (1.0 / (100.0 * k) + 1.0 / 600.0)

    kw = dict(acc=acc, runtime="llama.cpp", figure="decode_tokens_per_s", forward=forward, width_log=0.2,
              base_width_log=0.1)
    one = learned.serving_scale(Calib(runs=(_tg(110.0),)), **kw)
    # 1/110 = 1/(100 k) + 1/600  ->  k = 1 / (100 * (1/110 - 1/600)) = 1.3469...
    assert one.value == pytest.approx(1.0 / (100.0 * (1 / 110 - 1 / 600)), rel=1e-9)
    assert one.width_log == 0.1 and "from your run of 2025-04-24" in one.origin and one.source == "learned"
    # two runs on this machine: the geometric mean of their factors; the width the larger of base and their pair
    two = learned.serving_scale(Calib(runs=(_tg(110.0), _tg(90.0, "c"))), **kw)
    k1, k2 = (1.0 / (100.0 * (1 / t - 1 / 600)) for t in (110.0, 90.0))
    assert two.value == pytest.approx(math.sqrt(k1 * k2), rel=1e-9)
    assert two.width_log == pytest.approx(abs(math.log(k1 / k2)), rel=1e-9)
    # another runtime, another part, or a run only from another machine (the published width kept)
    assert learned.serving_scale(Calib(runs=(_tg(110.0),)), **{**kw, "runtime": "vllm"}) is None
    assert learned.serving_scale(Calib(runs=(_tg(110.0),)), **{**kw, "acc": ACC}) is None
    assert learned.serving_scale(Calib(runs=(_tg(110.0, machine=None),)), **kw).width_log == 0.2
    # a run faster than the forward model allows at any factor teaches nothing
    assert learned.serving_scale(Calib(runs=(_tg(700.0),)), **kw) is None


def test_simulated_records_are_never_learned_from():
    from dataclasses import replace

    rec = replace(train(0.4), simulated=True)
    assert learned.training_utilisation(Calib(runs=(rec,)), acc=ACC, workload="finetune", precision="bf16",
                                        software=None, active_params=1e9, seq_len=2048, model=MODEL) is None
