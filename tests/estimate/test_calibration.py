"""The calibration on published measurements, worked by hand: source-weighted factors, shrunk classes,
leave-one-source-out residuals, conformal widths, the stored fit's round trip and the measurement files."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from advisor.catalog.measurements import bundled_measurements
from advisor.estimate import calibration as C
from advisor.estimate.calibration import Observation


def _o(row, source, ratio, klass="k", group="decode", predicted=100.0):
    return Observation(row, group, source, klass, predicted * ratio, predicted)


def test_group_factor_weighs_each_source_once():
    # source a: 3 rows at 2x, source b: 1 row at 1x -> g = (log 2 + 0) / (2 + 1): each source once, and one more
    # source that agrees with the raw estimate (SHRINK_SOURCES), not (3 log 2) / 4
    obs = [_o("a1", "a", 2), _o("a2", "a", 2), _o("a3", "a", 2), _o("b1", "b", 1)]
    g, classes = C.fit_log_factors(obs)
    assert C.SHRINK_SOURCES == 1.0 and g == pytest.approx(math.log(2) / 3)
    # the one class holds all 4 rows: g + sum(r - g) / (4 + 3)
    expected = g + (3 * (math.log(2) - g) + (0 - g)) / (4 + C.SHRINK_ROWS)
    assert classes["k"] == pytest.approx(expected)


def test_leave_one_source_out_predicts_a_source_from_the_others_only():
    obs = [_o("a1", "a", 2), _o("a2", "a", 2), _o("b1", "b", 1), _o("c1", "c", 1.5)]
    hold = C.leave_one_source_out(obs)
    # a's rows: fitted on b and c -> g = (0 + log 1.5) / 3; class k from b and c: g + (0 - g + log1.5 - g) / 5
    g = math.log(1.5) / 3
    k = g + ((0 - g) + (math.log(1.5) - g)) / (2 + C.SHRINK_ROWS)
    assert hold.log_residuals[0] == pytest.approx(math.log(2) - k)
    assert not hold.single_source


def test_a_single_source_keeps_the_raw_estimate():
    obs = [_o("a1", "a", 2), _o("a2", "a", 1.5)]
    hold = C.leave_one_source_out(obs)
    assert hold.single_source and hold.log_residuals == pytest.approx((math.log(2), math.log(1.5)))
    fit = C.fit_group(obs)
    assert fit.log_factor == 0.0 and fit.class_log_factors == ()


def test_nested_classes_shrink_towards_their_parent():
    # two sources; l = log 2. g = (l/2 + l/2) / (2 + 1) = l/3.
    obs = [_o("a", "s1", 2, "rt/x/gddr"), _o("b", "s2", 2, "rt/x/gddr"), _o("c", "s1", 1, "rt/x/hbm"),
           _o("d", "s2", 1, "rt/y")]
    g, classes = C.fit_log_factors(obs)
    lg = math.log(2)
    assert g == pytest.approx(lg / 3)
    top = g + (2 * lg - 4 * g) / (4 + C.SHRINK_ROWS)  # "rt": all four rows, towards g
    assert classes["rt"] == pytest.approx(top)
    x = top + (2 * (lg - top) + (0 - top)) / (3 + C.SHRINK_ROWS)  # "rt/x": a, b, c, towards "rt"
    assert classes["rt/x"] == pytest.approx(x)
    assert classes["rt/x/gddr"] == pytest.approx(x + 2 * (lg - x) / (2 + C.SHRINK_ROWS))  # two sources
    # one source and fewer than MIN_SETUPS setups (each row its own setup here): no step of its own
    assert classes["rt/x/hbm"] == pytest.approx(x) and classes["rt/y"] == pytest.approx(top)
    # a class never fitted takes its deepest fitted level
    assert C.lookup(classes, "rt/z/gddr", g) == classes["rt"]
    assert C.lookup(classes, "other/metal", g) == g


def test_time_to_first_token_is_inverted_and_fits_its_implied_scale():
    o = Observation("t", "ttft", "s", "k", measured=2.0, predicted=1.0)  # twice as slow as planned
    assert o.log_ratio == pytest.approx(-math.log(2))  # the speed factor is 1/2
    # a row's implied scale is fitted instead of its ratio: sources imply log 0.5 and 0 -> g = (log 0.5 + 0) / 3
    obs = [Observation("t", "ttft", "s", "k", 2.0, 1.0, implied=math.log(0.5)),
           Observation("u", "ttft", "v", "k", 1.0, 1.0, implied=0.0)]
    assert C.fit_group(obs).log_factor == pytest.approx(math.log(0.5) / 3)


def test_implied_scale_is_where_the_model_meets_the_figure():
    # a time of 1 / e^t (a prefill twice as fast at twice the efficiency): 0.5 s is met at t = log 2
    assert C.implied_log_scale(lambda t: math.exp(-t), 0.5) == pytest.approx(math.log(2), abs=1e-9)
    # beyond what the bounds give: held at the bound
    assert C.implied_log_scale(lambda t: math.exp(-t), 1e-6) == C.SCALE_BOUNDS[1]
    assert C.implied_log_scale(lambda t: math.exp(-t), 1e6) == C.SCALE_BOUNDS[0]


def test_held_out_rows_are_planned_again_at_the_scale_fitted_without_their_source(monkeypatch):
    # A group whose factor is an input of the model (none is today: the serving groups are planned at their loads)
    monkeypatch.setattr(C, "SCALED", ("ttft",))
    # model: ttft = 1 / e^t; source a implies log 0.5 (measured 2), b implies 0 (measured 1). Leaving a out, the
    # fit on b alone is 0 / 2 = 0: a's row planned at 0 -> 1 s against 2 s measured, residual log(1/2).
    # Leaving b out: t = log 0.5 / 2, planned 1 / sqrt(0.5) = 1.414 s against 1 s measured.
    obs = [Observation("a1", "ttft", "a", "k", 2.0, 1.0, implied=math.log(0.5)),
           Observation("b1", "ttft", "b", "k", 1.0, 1.0, implied=0.0)]
    held = C.with_held_out(obs, lambda rid, t: math.exp(-t))
    assert held[0].held_out == pytest.approx(1.0) and held[1].held_out == pytest.approx(math.sqrt(2.0))
    hold = C.leave_one_source_out(held)
    assert hold.log_residuals == pytest.approx((math.log(0.5), math.log(math.sqrt(2.0))))


def test_summary_counts_within_coverage_and_width_by_hand():
    # a, b, c measured as planned, d 10 % faster; l = log 1.1. Leaving a out: g = l/4 over b, c, d (and the one
    # agreeing source), the class factor g + (l - 3g)/6 = 7l/24, so a's residual is -7l/24 (b, c alike); leaving d
    # out: 0, residual l.
    obs = [_o("a", "a", 1.0, "x"), _o("b", "b", 1.0, "x"), _o("c", "c", 1.0, "x"), _o("d", "d", 1.1, "x")]
    hold = C.leave_one_source_out(obs)
    lg = math.log(1.1)
    assert hold.log_residuals == pytest.approx((-7 * lg / 24, -7 * lg / 24, -7 * lg / 24, lg))
    s = C.summarise(obs, hold)
    assert s.rows == 4 and s.sources == 4 and s.within == 1.0 and s.raw_within == 1.0
    # a's interval: the min(3, ceil(4 x 0.8)) = 3rd smallest of the other rows' {7l/24, 7l/24, l} = l, covered
    # (b, c alike); d's: the 3rd smallest of {7l/24 x 3} = 7l/24 < l, missed
    assert s.coverage == pytest.approx(0.75)
    # widths high/low: exp(2l) = 1.21 for a, b, c and exp(7l/12) for d; the median is 1.21
    assert s.median_width == pytest.approx(1.21)
    assert s.passes == {"within": True, "coverage": True, "width": True, "sources": True}


def test_stored_fit_round_trips_and_refuses_bad_text():
    fits = C.fit_all([_o("a1", "a", 2), _o("b1", "b", 1.2, klass="m")])
    back = C.fits_from_csv(C.fits_to_csv(fits))
    assert back["decode"].factor("m") == pytest.approx(fits["decode"].factor("m"))
    assert back["decode"].half_width_log == pytest.approx(fits["decode"].half_width_log)
    with pytest.raises(C.MeasurementError, match="unknown group"):
        C.fits_from_csv("group,class,log_factor,half_width_log,rows,sources\nnope,,0,0,1,1\n")
    with pytest.raises(C.MeasurementError, match="not finite"):
        C.fits_from_csv("group,class,log_factor,half_width_log,rows,sources\ndecode,,inf,0,1,1\n")


def test_dense_and_moe_training_rows_get_widths_of_their_own():
    # pretraining: dense rows of three sources miss by 1.1x each way, MoE rows of two sources by 2x each way.
    # Each source is predicted from the others' factors; set the factors aside by making every class's rows
    # balanced, so a held-out residual is the row's own log ratio less the fitted (near zero) factor.
    dense = [_o(f"d{s}{i}", s, r, klass="dense/f/bf16", group="pretraining")
             for s in "abc" for i, r in enumerate((1.1, 1 / 1.1, 1.0))]
    moe = [_o(f"m{s}{i}", s, r, klass="moe/f/bf16", group="pretraining")
           for s in "ab" for i, r in enumerate((2.0, 0.5, 2.0))]
    obs = dense + moe
    fit = C.fit_group(obs)
    widths = dict(fit.class_half_widths)
    assert set(widths) == {"dense", "moe"}  # 9 rows from 3 sources, 6 rows from 2: each MIN_WIDTH_ROWS, 2 sources
    hold = C.leave_one_source_out(obs)
    res = dict(zip(hold.row_ids, hold.log_residuals))
    # each width is the split-conformal 80 % quantile of its own rows' |held-out residuals|: the ceil(10 x 0.8) =
    # 8th smallest of nine dense ones, the ceil(7 x 0.8) = 6th smallest of six MoE ones (the largest)
    assert widths["dense"] == pytest.approx(sorted(abs(res[o.row_id]) for o in dense)[7])
    assert widths["moe"] == pytest.approx(max(abs(res[o.row_id]) for o in moe))
    assert widths["moe"] > 0.5 > 0.15 > widths["dense"]  # log 2 against log 1.1, less the small fitted factors
    assert fit.width("dense/f/bf16") == widths["dense"] and fit.width("moe/f/fp8") == widths["moe"]
    # a framework the fit has not seen: the MoE width and the spread between the fitted frameworks' factors
    assert not fit.seen("moe/x/fp8")
    assert fit.width("moe/x/fp8") == pytest.approx(math.hypot(widths["moe"], fit.unseen_spread("moe/x/fp8")))
    assert fit.width() == fit.half_width_log  # no class: the group's one width
    # a group outside CLASS_WIDTH_GROUPS keeps one width whatever its classes
    other = C.fit_group([C.Observation(o.row_id, "decode", o.source_id, o.klass, o.measured, o.predicted)
                         for o in obs])
    assert other.class_half_widths == () and other.width("moe/f/bf16") == other.half_width_log
    # the check builds each row's interval from the other rows of its class: the dense rows' intervals are narrow,
    # and they are the median of the 15 (one width for all would be about the MoE rows' 2x)
    s = C.summarise(obs, hold)
    assert s.median_width < math.exp(2 * 0.15)
    # and the widths survive the stored fit
    back = C.fits_from_csv(C.fits_to_csv({"pretraining": fit}))["pretraining"]
    assert back.width("moe/f/bf16") == pytest.approx(widths["moe"])
    assert back.width("dense/f/bf16") == pytest.approx(widths["dense"])


def test_served_dense_and_moe_rows_get_widths_of_their_own_at_each_load():
    # first tokens at a load of users: dense rows of three sources miss by 1.2x each way, MoE rows of two sources by
    # 3x each way (a mixture of experts' routing and dispatch the step model does not count)
    dense = [_o(f"d{s}{i}", s, r, klass="users/vllm/cuda/dense", group="ttft")
             for s in "abc" for i, r in enumerate((1.2, 1 / 1.2, 1.0))]
    moe = [_o(f"m{s}{i}", s, r, klass="users/sglang/cuda/moe", group="ttft")
           for s in "ab" for i, r in enumerate((3.0, 1 / 3.0, 3.0))]
    obs = dense + moe
    fit = C.fit_group(obs)
    widths = dict(fit.class_half_widths)
    assert set(widths) == {"users/dense", "users/moe"}  # the load and the kind: first and last levels
    assert C.width_class("ttft", "users/vllm/cuda/moe") == "users/moe"
    assert C.width_class("ttft", "users/vllm/cuda") == "users"  # a class that names no kind: its load's
    hold = C.shown(obs, C.leave_one_source_out(obs))  # the figure shown: raw where the factors do not help
    res = dict(zip(hold.row_ids, hold.log_residuals))
    # the split-conformal 80 % quantile of each kind's own residuals of the figure shown (8th of nine, 6th of six)
    assert widths["users/dense"] == pytest.approx(sorted(abs(res[o.row_id]) for o in dense)[7])
    assert widths["users/moe"] == pytest.approx(max(abs(res[o.row_id]) for o in moe))
    assert widths["users/moe"] > 0.9 > 0.2 > widths["users/dense"]
    # a MoE served by vLLM takes the MoE width, and the spread between the runtimes' factors where vLLM has no MoE
    # row would not apply: vLLM is seen at this load
    assert fit.seen("users/vllm/cuda/moe") and fit.width("users/vllm/cuda/moe") == widths["users/moe"]
    # a load with no width of its own (rate: no rows) falls to the group's, widened as a runtime unseen at it
    assert not fit.seen("rate/vllm/cuda/dense")
    assert fit.width("rate/vllm/cuda/dense") == pytest.approx(
        math.hypot(fit.half_width_log, fit.unseen_spread("rate/vllm/cuda/dense")))
    # the widths that are no factor's level survive the stored fit, as rows of a width alone
    text = C.fits_to_csv({"ttft": fit})
    assert "ttft,users/moe,," in text
    back = C.fits_from_csv(text)["ttft"]
    assert back.width("users/sglang/cuda/moe") == pytest.approx(widths["users/moe"])
    assert back.width("users/vllm/cuda/dense") == pytest.approx(widths["users/dense"])
    assert dict(back.class_log_factors) == pytest.approx(dict(fit.class_log_factors))
    with pytest.raises(C.MeasurementError, match="neither a factor nor a width"):
        C.fits_from_csv("group,class,log_factor,half_width_log,rows,sources\nttft,,0,0.5,1,1\nttft,users/moe,,,,\n")


def test_training_groups_fit_their_factors_on_one_pool():
    # a framework's efficiency is one figure whether it pretrains or fine-tunes (calibration.POOLS): a fine-tune
    # source held out is predicted from the other sources' fine-tune AND pretraining rows, its own pretraining rows
    # left out with it
    ft = [_o("b1", "b", 1.0, group="finetune_rate"), _o("c1", "c", 1.5, group="finetune_rate")]
    pre = [_o("a1", "a", 2.0, group="pretraining"), _o("b2", "b", 1.2, group="pretraining")]
    assert C.pooled("finetune_rate", ft + pre) == pre
    assert C.pooled("decode", ft + pre) == []
    hold = C.leave_one_source_out(ft, C.pooled("finetune_rate", ft + pre))
    # b1 held out: fitted on c1 (1.5) and a1 (2), b2 left out with its source: g = (log 1.5 + log 2) / (2 + 1),
    # the class k = g + ((log 1.5 - g) + (log 2 - g)) / (2 + 3)
    g = (math.log(1.5) + math.log(2.0)) / 3
    k = g + ((math.log(1.5) - g) + (math.log(2.0) - g)) / (2 + C.SHRINK_ROWS)
    assert hold.log_residuals[0] == pytest.approx(0.0 - k)
    # the stored fits of both groups carry the pool's factors, each its own width
    fits = C.fit_all(ft + pre)
    assert fits["finetune_rate"].factor("k") == pytest.approx(fits["pretraining"].factor("k"))
    assert fits["finetune_rate"].rows == 2 and fits["pretraining"].rows == 2


def test_a_moe_class_without_its_frameworks_moe_level_takes_that_frameworks_dense_factor():
    # published MoE runs of two frameworks differ 1.4-2.6x: a framework with no MoE level of its own is predicted
    # with its own dense factor, not with the MoE factor of another framework
    classes = {"dense": 0.1, "dense/a": 0.2, "dense/a/bf16": 0.25, "moe": -0.5, "moe/b": -0.6, "moe/b/fp8": -0.7}
    assert C.class_log_factor(classes, "moe/a/bf16", 0.0) == 0.25  # a's dense bf16, not moe's -0.5
    assert C.class_log_factor(classes, "moe/a/fp8", 0.0) == 0.2  # a's dense level where its precision is not fitted
    assert C.class_log_factor(classes, "moe/b/fp8", 0.0) == -0.7  # b measured MoE itself
    assert C.class_log_factor(classes, "moe/c/bf16", 0.0) == -0.5  # c measured nothing: the MoE level
    assert C.class_log_factor(classes, "dense/c/bf16", 0.0) == 0.1
    fit = C.GroupFit("pretraining", 0.0, tuple(classes.items()), 0.2, 10, 2)
    assert fit.factor("moe/a/bf16") == pytest.approx(math.exp(0.25))


def test_parse_refuses_bad_rows():
    head = ",".join(C.COLUMNS)
    row = "r1,s,t,u,2024-01-01,llama-3-8b,8e9,rtx-4090,1,llama.cpp,cuda,Q4_K_M,q4_k_m,fp16,inference,1,0,128,,,,{v},{u},,"
    assert C.parse_measurements(f"{head}\n{row.format(v=100, u='tokens/s')}\n", "decode")[0].value == 100
    assert C.parse_measurements(f"{head}\n{row.format(v=250, u='ms')}\n", "ttft")[0].value == pytest.approx(0.25)
    with pytest.raises(C.MeasurementError, match="unit"):
        C.parse_measurements(f"{head}\n{row.format(v=1, u='furlongs')}\n", "decode")
    with pytest.raises(C.MeasurementError, match="positive"):
        C.parse_measurements(f"{head}\n{row.format(v=0, u='ms')}\n", "ttft")
    with pytest.raises(C.MeasurementError, match="duplicate"):
        one = row.format(v=1, u="ms")
        C.parse_measurements(f"{head}\n{one}\n{one}\n", "ttft")


def test_bits_of_published_formats():
    assert [C.format_bits(f) for f in ("F16", "Q8_0", "FP8", "Q6_K", "Q5_K_M", "Q4_K_M", "GPTQ 4-bit g128",
                                       "EXL2 5.0 bpw", "EXL2 2.5 bpw", "q4f16_1")] == \
        ["16", "8", "8", "6", "6", "4", "4", "6", "4", "4"]


def test_the_public_set_is_large_and_every_row_names_its_source():
    ms = bundled_measurements()
    assert len(ms) >= 130
    groups = {m.group for m in ms}
    assert groups == set(C.GROUPS)
    for m in ms:
        assert m.source_url.startswith("https://") and m.source_title and m.source_date[:2] == "20"
        assert m.value > 0 and m.accelerator_id and m.model


@given(st.lists(st.floats(0.2, 5.0), min_size=2, max_size=12))
def test_the_stored_width_covers_its_own_held_out_residuals(ratios):
    # split-conformal: the ceil((n+1) 0.8)-th smallest of n residuals covers at least that many of them
    obs = [_o(f"r{i}", f"s{i % 3}", r) for i, r in enumerate(ratios)]
    fit = C.fit_group(obs)
    hold = C.leave_one_source_out(obs)
    covered = sum(abs(r) <= fit.half_width_log + 1e-12 for r in hold.log_residuals)
    assert covered >= min(len(obs), math.ceil((len(obs) + 1) * C.COVERAGE))


# ------------------------------------------------------------------ serving groups: applied only where it helps
def _obs(row, group, source, klass, ratio):
    return _o(row, source, ratio, klass, group)


def test_a_serving_factor_that_helps_held_out_is_applied():
    """Three sources each measured 1.5x the raw figure: raw, none is within 25 %; each predicted by the other two's
    factor, at least exp(2 log 1.5 / 3) = 1.31 (one agreeing source shrinks it), 1.5 / 1.31 = 1.14, all within.
    Stored: the load's level 3/4 of log 1.5 (three sources and one agreeing), the runtime's 6 rows a step of
    6/(6 + 3) of the rest towards them: log factor (3/4 + 1/4 x 6/9) log 1.5 = 11/12 log 1.5."""
    obs = [_obs(f"{s}{i}", "serving", s, "users/vllm/cuda", 1.5) for s in "abc" for i in range(2)]
    hold = C.leave_one_source_out(obs)
    assert C.applies(obs, hold)
    fit = C.fit_group(obs)
    assert fit.applied
    assert fit.factor("users/vllm/cuda") == pytest.approx(1.5 ** (11 / 12), rel=1e-9)
    assert C.shown(obs, hold) is hold


def test_a_serving_factor_that_does_not_help_held_out_is_stored_but_not_applied():
    """Two sources at the raw figure and one at 3x: raw, 4 of 6 rows are within 25 %; held out, the first two are
    planned at exp(log 3 / 3) = 1.44x by the others' fit and the third at 1x: none within. The figure shown is the
    raw one (factor 1) and its width is the raw residuals'."""
    obs = [_obs(f"{s}{i}", "serving", s, "users/vllm/cuda", r) for s, r in (("a", 1.0), ("b", 1.0), ("c", 3.0))
           for i in range(2)]
    hold = C.leave_one_source_out(obs)
    assert not C.applies(obs, hold)
    assert C.shown(obs, hold).log_residuals == pytest.approx([o.log_ratio for o in obs])
    fit = C.fit_group(obs)
    assert not fit.applied and fit.factor("users/vllm/cuda") == 1.0 and fit.factor() == 1.0
    assert fit.log_factor == pytest.approx(math.log(3.0) / 4)  # the fitted factor is kept, for the record
    assert fit.half_width_log == pytest.approx(C._conformal_width([0, 0, 0, 0, math.log(3), math.log(3)]))
    back = C.fits_from_csv(C.fits_to_csv({"serving": fit}))["serving"]
    assert not back.applied and back.factor("users/vllm/cuda") == 1.0
    # a training group applies its factor whatever its held-out share (the rule is the serving groups')
    train = [_obs(o.row_id, "pretraining", o.source_id, "dense/megatron/bf16", o.measured) for o in obs]
    assert C.fit_group(train).applied


def test_one_user_rows_take_no_served_factor_and_do_not_move_the_others():
    """At one user the served figure is the plan's one request: class ``one`` has factor 1, and rows at users are
    fitted without it (the same g with or without a one-user row 3x off)."""
    users = [_obs(f"{s}{i}", "tpot", s, "users/vllm/cuda", 1.0 / 1.5) for s in "abc" for i in range(2)]
    one = [_obs("o1", "tpot", "a", "one/vllm/cuda", 1.0 / 3.0)]
    g0, c0 = C.fit_log_factors(users)
    g1, c1 = C.fit_log_factors([*users, *one])
    assert g1 == pytest.approx(g0) and c1["users/vllm/cuda"] == pytest.approx(c0["users/vllm/cuda"])
    assert c1["one"] == 0.0
    fit = C.fit_group([*users, *one])
    assert fit.factor("one/vllm/cuda") == 1.0 and fit.factor("users/vllm/cuda") == pytest.approx(1.5 ** (11 / 12))
    hold = C.leave_one_source_out([*users, *one])
    assert hold.log_residuals[-1] == pytest.approx(one[0].log_ratio)  # held out, still the raw figure


def test_the_applied_column_is_read_strictly():
    text = C.fits_to_csv({"ttft": C.GroupFit("ttft", 0.1, (), 0.5, 10, 3, (), 0.0, False)})
    assert ",0\n" in text.splitlines()[1] + "\n"
    with pytest.raises(C.MeasurementError, match="applied"):
        C.fits_from_csv(text.replace(",0.0,0", ",0.0,yes"))
    older = "group,class,log_factor,half_width_log,rows,sources,reach_slope\nttft,,0.1,0.5,10,3,0.0\n"
    assert C.fits_from_csv(older)["ttft"].applied  # a file from before the column: applied, as it was
