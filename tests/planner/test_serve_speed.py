"""What the sizing of a serving job leaves out or shares to be fast changes no answer (the figures themselves are
pinned in test_serve_pinned.py): a part that no quote prices is not sized at all."""

from __future__ import annotations

from advisor.cost.jobs import can_own
from advisor.estimate import serving_queue
from advisor.job.serve import ServeJob
from advisor.planner.serve import forget_prices, forget_replicas, serve_plan

RATE = dict(model="llama-3-8b", runtime="vllm", requests_per_s=2.0, prompt_tokens=500, output_tokens=200,
            ttft_p95_s=1.0, tpot_p95_s=0.05)


def _unpriced(catalog) -> list[str]:
    offered = {o.accelerator_id for o in catalog.offers}
    return [a.id for a in catalog.accelerators.values()
            if a.kind not in ("cpu",) and not can_own(a) and a.id not in offered]


def test_a_part_no_quote_prices_gives_no_option_and_solves_no_queue(catalog):
    unpriced = _unpriced(catalog)
    assert {"h800", "rtx-4080", "mi325x"} <= set(unpriced)  # neither a purchase price nor a cloud offer
    forget_replicas()
    forget_prices()
    serving_queue.clear_caches()
    result = serve_plan(ServeJob.from_mapping({**RATE, "accelerator": unpriced}), catalog)
    assert result.options == ()
    assert serving_queue._replica.cache_info().currsize == 0  # no replica's queue was solved
    priced = serve_plan(ServeJob.from_mapping({**RATE, "accelerator": ["h100-sxm"]}), catalog)
    assert priced.options and serving_queue._replica.cache_info().currsize >= 1
