"""A plan over the whole catalog gives the figures it gave when they were pinned, byte for byte: the ``advisor.plan/1``
JSON (``report.plan_json.plan_json_text``, what ``advisor plan --json`` writes) of ``benchmarks/bench_plan.py``'s
scenarios and of the scenario files in ``docs/examples``, each planned cold and then edited twice as the benchmark
edits it (the jobs a month and the token budget, planned from what the plans before kept). A change that only makes
planning faster leaves every digest as it was; a change of the model's or the prices' figures re-pins them on
purpose:

    python tests/planner/test_plan_pinned.py --write
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))  # run as a script (--write): the tests package from the repository's root
PINNED = Path(__file__).with_name("plan_pinned.json")
EXAMPLES = sorted((ROOT / "docs" / "examples").glob("*.toml"))
EDITS = (0, 1)  # the benchmark's first two edits, planned one after the other


def _bench():
    from tests.support_json import benchmark_module  # imported when called: the file also runs as a script

    return benchmark_module("bench_plan")


def scenarios() -> dict[str, dict]:
    """The benchmark's scenarios (one declaration: ``benchmarks/bench_plan.SCENARIOS``), then the example files'
    ``[plan]`` and ``[assumptions]`` as the command line reads them (``store.scenario.job_values``)."""
    from advisor.store.scenario import job_values, load_scenario

    out = dict(_bench().SCENARIOS)
    for path in EXAMPLES:
        values = job_values(load_scenario(path), path.name)
        values.pop("notes")
        out[f"docs/examples/{path.stem}"] = values
    return out


def digests(values: dict, catalog) -> dict[str, object]:
    """The job's plan cold, then its edits (``bench_plan.edited``) each planned after the one before: the number of
    options and the sha256 of each plan's JSON text."""
    from advisor.planner import PlanRequest, plan
    from advisor.planner.service import forget_kept
    from advisor.report.plan_json import plan_json_text

    def sha(v: dict) -> tuple[int, str]:
        result = plan(PlanRequest.from_mapping(v), catalog=catalog)
        return len(result.options), hashlib.sha256(plan_json_text(result).encode()).hexdigest()

    forget_kept()
    count, cold = sha(values)
    out: dict[str, object] = {"options": count, "cold": cold}
    for i in EDITS:
        out[f"edit {i}"] = sha(_bench().edited(values, i))[1]
    return out


def test_every_scenario_is_pinned(pinned):
    assert set(pinned) == set(scenarios())
    assert len(pinned) >= 3 + 3  # the benchmark's three and the examples


@pytest.mark.parametrize("name", sorted(scenarios()))
def test_a_plan_gives_the_pinned_json(name, catalog, pinned):
    from advisor.planner import PlanRequest, plan
    from advisor.planner.service import forget_kept
    from advisor.report.plan_json import plan_json_text

    values = scenarios()[name]
    got = digests(values, catalog)
    assert got["options"] > 0
    # the last edit planned cold gives the text it gave after the plans before it (what they kept changes nothing)
    forget_kept()
    last = _bench().edited(values, EDITS[-1])
    cold = hashlib.sha256(plan_json_text(plan(PlanRequest.from_mapping(last), catalog=catalog)).encode()).hexdigest()
    assert cold == got[f"edit {EDITS[-1]}"]
    assert got == pinned[name], (f"{name}: the plan's figures changed; if the model or the prices changed on purpose, "
                                 "re-pin them: python tests/planner/test_plan_pinned.py --write")


def main(argv: list[str]) -> int:
    from tests.support_json import write_pins

    return write_pins(argv, __doc__, PINNED, scenarios(), digests, "plans")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
