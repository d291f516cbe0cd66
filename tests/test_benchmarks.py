"""The benchmarks print each figure beside its target with PASS or FAIL (benchmarks/verdict.py)."""

from __future__ import annotations

import functools
import importlib.util
import math
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


@functools.cache
def _verdict():
    spec = importlib.util.spec_from_file_location("bench_verdict", BENCH / "verdict.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # a dataclass looks its module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("op, limit, figure, met", [
    ("<", 5.0, 4.99, True), ("<", 5.0, 5.0, False), ("<=", 16.0, 16.0, True), ("<=", 16.0, 16.1, False),
    (">=", 0.95, 0.95, True), (">=", 0.95, 0.949, False), (">", 0.0, 0.0, False),
    ("<", 5.0, None, False), ("<", 5.0, math.nan, False),
])
def test_a_target_is_met_or_not(op, limit, figure, met):
    t = _verdict().Target("plan, median", op, limit, "ms")
    assert t.met(figure) is met
    line = t.line(figure, label="llama-3-8b lora")
    assert line.startswith("PASS" if met else "FAIL")
    assert f"(target {op} {limit:g} ms)" in line and "[llama-3-8b lora]" in line


def test_the_line_shows_the_figure_and_the_exit_code_follows_every_target():
    v = _verdict()
    assert v.Target("probe took", "<", 30.0, "s").line(104.2, 1) == "FAIL  probe took: 104.2 s (target < 30 s)"
    assert v.exit_code([True, True]) == 0 and v.exit_code([True, False]) == 1
    with pytest.raises(ValueError):
        v.Target("x", "=", 1.0)


@pytest.mark.parametrize("path", sorted(BENCH.glob("bench_*.py")), ids=lambda p: p.stem)
def test_every_benchmark_prints_its_targets_with_pass_or_fail(path):
    text = path.read_text(encoding="utf-8")
    assert "from verdict import" in text or ("PASS" in text and "FAIL" in text)
