"""The distance from the calibrated runs and the width that grows with it (advisor.estimate.reach), and the wall-time
allowance of published totals (estimate.utilisation.wall_time_ratios); values worked out by hand."""

from __future__ import annotations

import math

import pytest

from advisor.catalog.load import bundled_catalog
from advisor.catalog.training_runs import bundled_training_runs, bundled_utilisation_model, catalog_peak
from advisor.estimate import calibration as C
from advisor.estimate import reach as R
from advisor.estimate import utilisation as U


def _p(devices=8, params=8e9, seq=4096, mp=1, gen=2022, fw="megatron", fam="llama", moe=False, prec="bf16",
       wl="pretrain"):
    return R.Position(devices, params, seq, mp, gen, fw, fam, moe, prec, wl)


def test_model_family_and_parallel_degree():
    assert [R.model_family(m) for m in ("llama-3.1-405b", "qwen2.5-7b", "gpt-oss-120b", "gpt2", "deepseek-v3",
                                        "hf:meta-llama/Llama-3.1-8B")] == ["llama", "qwen", "gpt-oss", "gpt",
                                                                           "deepseek", "llama"]
    assert R.parallel_degree("TP4 PP8 VP5; GBS 128") == 32
    assert R.parallel_degree("FSDP 16 x TP 8, local batch 2") == 8
    assert R.parallel_degree("FSDP 8") == 1


def test_separation_by_hand():
    unit = {n: 1.0 for n in R.NUMERIC}
    # 4x the devices (2 doublings), another framework (1), a generation apart (1): 4
    assert R.separation(_p(devices=32, fw="torchtitan", gen=2024), _p(), unit) == pytest.approx(4.0)
    unit["devices"] = 2.0  # in units of the devices' spread: 2 doublings are 1
    assert R.separation(_p(devices=32), _p(), unit) == pytest.approx(1.0)
    d, i = R.nearest(_p(devices=64), [_p(devices=8), _p(devices=32)], unit)
    assert (d, i) == (pytest.approx(0.5), 1)


def test_scales_are_the_spread_with_a_floor():
    rows = [_p(devices=8), _p(devices=128)]  # log2: 3 and 7, sd = 2.83; all else equal: the floor
    unit = R.scales(rows)
    assert unit["devices"] == pytest.approx(math.sqrt(8.0))
    assert unit["seq_len"] == R.SCALE_FLOOR


def test_slope_of_errors_against_distance():
    # |r| = 0.1 + 0.05 d exactly: b = 0.05 / 0.1 = 0.5; errors that do not grow: 0
    d = [0.0, 1.0, 2.0, 4.0]
    assert R.reach_slope(d, [0.1 + 0.05 * x for x in d]) == pytest.approx(0.5)
    assert R.reach_slope(d, [0.3, 0.2, 0.2, 0.1]) == 0.0
    assert R.widen(2.0, 0.5) == pytest.approx(2.0)


def test_width_grows_with_distance_from_the_stored_fit():
    fit = C.GroupFit("pretraining", 0.0, (("dense", 0.0),), 0.3, 10, 3, (("dense", 0.2),), 0.1)
    assert fit.width("dense/megatron/bf16") == pytest.approx(0.2)
    assert fit.width("dense/megatron/bf16", 5.0) == pytest.approx(0.2 * 1.5)


def test_outside_facts_name_the_count_and_what_was_seen():
    rows = [_p(devices=8), _p(devices=512, gen=2024)]
    facts = R.outside_facts(_p(devices=1024, gen=2018, fw="deepspeed"), rows)
    texts = [f.text() for f in facts]
    assert "1,024 GPUs, largest seen 512" in texts
    assert "a 2018-generation accelerator, seen 2022-2024" in texts
    assert "framework deepspeed, not among them (seen: megatron)" in texts
    assert R.outside_facts(_p(devices=64), rows) == []


def test_fold_distance_is_to_the_other_sources_only():
    obs = [C.Observation("a", "pretraining", "s1", "dense/megatron/bf16", 1, 1, position=_p(devices=8)),
           C.Observation("b", "pretraining", "s1", "dense/megatron/bf16", 1, 1, position=_p(devices=8)),
           C.Observation("c", "pretraining", "s2", "dense/megatron/bf16", 1, 1, position=_p(devices=32))]
    unit = R.scales([o.position for o in obs])  # log2 3, 3, 5: sd 1.155
    d = C.fold_distances(obs)
    assert d == pytest.approx((2 / unit["devices"], 2 / unit["devices"], 2 / unit["devices"]))


def test_wall_time_allowance_is_the_lowest_published_total():
    # the documented runs' published GPU-hour totals against the clean-step model of the other studies' clean runs:
    # LLaMA's totals match its clean 380 tokens/s/GPU (ratio about 1), GPT-NeoX-20B and StarCoderBase ran at about
    # two thirds (0.686 and 0.663)
    obs = U.observations(bundled_training_runs(), catalog_peak(bundled_catalog()))
    ratios = dict(U.wall_time_ratios(obs))
    assert set(ratios) == {"llama1-7b", "llama1-13b", "llama1-33b", "llama1-65b", "gpt-neox-20b",
                           "starcoderbase-15.5b"}
    assert ratios["gpt-neox-20b"] == pytest.approx(0.686, abs=0.005)
    assert ratios["starcoderbase-15.5b"] == pytest.approx(0.663, abs=0.005)
    assert bundled_utilisation_model().wall_time_low == pytest.approx(min(ratios.values()))
    assert U.wall_time_low([1.2, 1.1]) == 1.0
