"""Random ``advisor plan`` command lines over every flag the job schema generates: each one exits 0 with one
valid JSON document (no NaN or infinity), or 2 with one line on stderr and nothing on stdout; never a traceback.

Fixed seed and a bounded number of examples for CI; ``ADVISOR_FUZZ_EXAMPLES=1000`` runs more.
"""

from __future__ import annotations

import contextlib
import io
import json
import os

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from advisor.cli import main
from advisor.cost.assumptions import CostAssumptions
from advisor.job import ASSUMPTION_FLAGS, JOB_FIELDS

EXAMPLES = int(os.environ.get("ADVISOR_FUZZ_EXAMPLES", "120"))
RUNS: list[int] = []  # exit statuses seen (the count is printed with -s)

_junk = st.sampled_from(["", "abc", "nan", "inf", "-inf", "1e400", "-0", "0x10", "7B", "1,5", "x\ny", "--json",
                         "1e-400", "\u00e9", "9" * 23])


def _mostly(valid: st.SearchStrategy[str], invalid: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """A valid value four times in five, so that many runs reach the planner."""
    return st.integers(0, 4).flatmap(lambda k: valid if k else invalid)


def _number(meta) -> st.SearchStrategy[str]:
    bounds = [b for b in (meta.minimum, meta.maximum) if b is not None]
    edges = [v for b in bounds for v in (b, b * 0.999, b * 1.001, -b)] + [0, 1, 1e308, 5e-324]
    valid = st.one_of(st.floats(min_value=meta.minimum or 0, max_value=meta.maximum or 1e6).map(repr),
                      st.sampled_from(bounds).map(repr))
    return _mostly(valid, st.one_of(st.floats(allow_nan=True, allow_infinity=True).map(repr),
                                    st.sampled_from(edges).map(repr), _junk))


def _integer(meta) -> st.SearchStrategy[str]:
    lo, hi = int(meta.minimum or 0), int(meta.maximum or 10**6)
    valid = st.one_of(st.integers(lo, min(hi, 64)).map(str), st.integers(lo, hi).map(str))
    return _mostly(valid, st.one_of(st.integers(-(10**25), 10**25).map(str),
                                    st.sampled_from([0, hi + 1, -1]).map(str), _junk))


def _value(meta) -> st.SearchStrategy[list[str]]:
    """argv items for one schema field (empty: the flag left out)."""
    if meta.kind == "bool":
        return st.just([meta.flag])
    if meta.kind == "ids":
        ids = _mostly(st.sampled_from(["rtx-4090", "h100-sxm", "a100-80gb-sxm", "l40s", "h200"]),
                      st.sampled_from(["cpu", "nope", "x\ny", "rtx-4090;rm"]))
        return st.lists(ids, min_size=1, max_size=3).map(lambda v: [x for i in v for x in (meta.flag, i)])
    if meta.kind == "choice":
        text = _mostly(st.sampled_from([str(c) for c in meta.choices]), st.sampled_from(["bogus", "", "BF16", "4"]))
    elif meta.kind == "int":
        text = _integer(meta)
    elif meta.kind == "number":
        text = _number(meta)
    else:  # the model: presets, junk, a missing file
        text = _mostly(st.sampled_from(["llama-3-8b", "gpt2", "mixtral-8x7b", "llama-3-70b"]),
                       st.sampled_from(["nope", "x\ny", "/no/such.gguf", ""]))
    return text.map(lambda v: [meta.flag, v])


_FLAG_FIELDS = [m for m in JOB_FIELDS.values() if m.flag is not None and m.name not in ("model", "params")]
_ASSUMPTIONS = sorted(CostAssumptions().describe())


@st.composite
def command_lines(draw) -> list[str]:
    argv = ["plan"]
    if draw(st.booleans()):
        argv += draw(_value(JOB_FIELDS["model"]))
    else:
        argv += draw(_value(JOB_FIELDS["params"]))
    for meta in draw(st.lists(st.sampled_from(_FLAG_FIELDS), max_size=4, unique_by=lambda m: m.name)):
        argv += draw(_value(meta))
    for name in draw(st.lists(st.sampled_from(ASSUMPTION_FLAGS), max_size=2, unique=True)):
        flag = "--" + name.replace("_", "-")
        argv += [flag] if name == "spot" else [flag, draw(_number(JOB_FIELDS["mfu"]))]
    for _ in range(draw(st.integers(0, 2))):
        name = draw(_mostly(st.sampled_from(_ASSUMPTIONS), st.sampled_from(["bogus", ""])))
        argv += ["--set", f"{name}={draw(_mostly(st.floats(0, 2).map(repr), st.one_of(_junk, st.floats().map(repr))))}"]
    if draw(st.integers(0, 9)) == 0:
        argv += ["--sensitivity"]
    if draw(st.booleans()):
        argv += ["--top", draw(_integer(JOB_FIELDS["batch"]))]
    return argv + ["--json"]


def _reject_constant(name):
    raise ValueError(f"not JSON: {name}")


@seed(20261201)
@settings(max_examples=EXAMPLES, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(argv=command_lines())
def test_plan_exits_0_with_a_document_or_2_with_one_line(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)  # an exception here is the traceback a user would see
    RUNS.append(code)
    if code == 0:
        doc = json.loads(out.getvalue(), parse_constant=_reject_constant)
        assert doc["schema"] == "advisor.plan/1" and isinstance(doc["options"], list), argv
    else:
        assert code == 2, (argv, err.getvalue())
        assert out.getvalue() == "", argv
        lines = err.getvalue().strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in lines[0], (argv, lines)


def test_fuzz_ran_both_outcomes():
    # Runs after the fuzz in file order: both exits were exercised (a fuzz that only errors tests little).
    if RUNS:
        print(f"\nplan fuzz: {len(RUNS)} runs, {RUNS.count(0)} exit 0, {RUNS.count(2)} exit 2")
        assert RUNS.count(0) > len(RUNS) // 20 and RUNS.count(2) > len(RUNS) // 20
