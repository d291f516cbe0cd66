"""A serving job sized over the whole catalog gives the figures it gave when they were pinned, byte for byte: the
``advisor.serve/1`` JSON (every option, its ranges, capacity ranges and the owned options' changes) and the knee
chart's points, over ``benchmarks/bench_serve.py``'s scenarios and a few more that take the other paths (one user on
owned GPUs, a mixture of experts at a rate on SGLang, a tensor-parallel replica, no latency target, a list of
accelerators, the Serve page's default form). A change that only makes the sizing faster leaves every digest as it
was; a change of the serving model's figures re-pins them on purpose:

    python tests/planner/test_serve_pinned.py --write
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import fields
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))  # run as a script (--write): the tests package from the repository's root
PINNED = Path(__file__).with_name("serve_pinned.json")
EXTRA = {
    "one user 70B q4 on 2x3090": dict(model="llama-3.3-70b", quant="q4_k_m", runtime="llama.cpp",
                                      own=["2xrtx-3090"], users=1, prompt_tokens=1000, output_tokens=300,
                                      ttft_p95_s=2.0),
    "mixtral sglang 5 req/s": dict(model="mixtral-8x7b", runtime="sglang", requests_per_s=5.0, prompt_tokens=2000,
                                   output_tokens=300, ttft_p95_s=2.0, tpot_p95_s=0.1),
    "70B tp2 64 users no target": dict(model="llama-3.1-70b", runtime="vllm", tp=2, users=64, prompt_tokens=800,
                                       output_tokens=400),
    "8B alpaca 3 req/s listed parts": dict(model="llama-3.1-8b", requests_per_s=3.0, lengths="alpaca",
                                           accelerator=["h100-sxm", "rtx-4090", "l4", "mi300x", "a10g"],
                                           spot_offers=False, tokens_per_s_per_user=30.0, ttft_p95_s=0.5),
}


def scenarios() -> dict[str, dict]:
    """The benchmark's scenarios (one declaration: ``benchmarks/bench_serve.SCENARIOS``), the others after them."""
    from tests.support_json import benchmark_module  # imported when called: the file also runs as a script

    bench = benchmark_module("bench_serve")
    from advisor.gui.serve_data import DEFAULT_VALUES

    return {**bench.SCENARIOS, **EXTRA, "Serve page default": dict(DEFAULT_VALUES)}


def _points(points) -> list:
    return [[repr(getattr(p, f.name)) for f in fields(p)] for p in points]


def texts(values: dict, catalog) -> tuple[str, str]:
    """``(advisor.serve/1 JSON, the knee chart's points)`` of one job as the Serve page sizes it (``serve_bundle``),
    with the owned GPUs it names."""
    from advisor.gui.serve_data import serve_bundle
    from advisor.job.serve import ServeJob
    from advisor.planner.owned import parse_own
    from advisor.report.serve_json import serve_document, serve_json_text

    owned = tuple(parse_own(ServeJob.from_mapping(values).own, catalog))
    bundle = serve_bundle({k: v for k, v in values.items() if k != "own"}, catalog, owned)
    doc = serve_json_text(serve_document(bundle.result, bundle.changes))
    knee = json.dumps([[o.id, _points(points)] for o, points in bundle.curves])
    return doc, knee


def digests(values: dict, catalog) -> dict[str, object]:
    doc, knee = texts(values, catalog)
    options = json.loads(doc)["options"]
    return {"options": len(options), "json_sha256": hashlib.sha256(doc.encode()).hexdigest(),
            "knee_sha256": hashlib.sha256(knee.encode()).hexdigest()}


def test_every_scenario_is_pinned(pinned):
    assert set(pinned) == set(scenarios())


@pytest.mark.parametrize("name", sorted(scenarios()))
def test_a_serving_job_gives_the_pinned_figures(name, catalog, pinned):
    from advisor.estimate.serving_queue import clear_caches
    from advisor.planner.serve import forget_prices, forget_replicas

    values = scenarios()[name]
    forget_replicas()
    forget_prices()
    clear_caches()
    cold = digests(values, catalog)
    again = digests(values, catalog)  # from what the first kept (replicas, quotes, the queues' solutions)
    assert again == cold
    assert cold["options"] > 0
    assert cold == pinned[name], (f"{name}: the serving figures changed; if the serving model changed on purpose, "
                                  "re-pin them: python tests/planner/test_serve_pinned.py --write")


def main(argv: list[str]) -> int:
    from tests.support_json import write_pins

    return write_pins(argv, __doc__, PINNED, scenarios(), digests, "serving jobs")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
