"""A training plan's utilisation under any framework, kernel factor or measured calibration never exceeds 100 %
(and the framework's faster kernels stop at the dense-matmul ceiling)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.catalog import load_catalog
from advisor.catalog.frameworks import bundled_frameworks
from advisor.estimate.software import MFU_CEILING
from advisor.planner import PlanRequest, plan

CAT = load_catalog(use_user_file=False)


@settings(max_examples=25, deadline=None)
@given(workload=st.sampled_from(["pretrain", "finetune", "lora", "qlora"]),
       framework=st.sampled_from([None, *bundled_frameworks()]),
       factor=st.none() | st.floats(0.1, 5.0),
       accelerator=st.sampled_from(["rtx-4090", "h100-sxm", "a100-80gb-sxm", "rtx-3060-12gb"]))
def test_no_plan_shows_a_utilisation_above_100_percent(workload, framework, factor, accelerator):
    values = {"model": "llama-3-8b", "workload": workload, "tokens": 1e8, "accelerator": [accelerator],
              "owned_options": False, "framework": framework, "kernel_efficiency": factor}
    result = plan(PlanRequest.from_mapping(values), CAT, advise=False)
    for o in result.options:
        assert 0 < o.mfu <= 1.0, (o.id, o.mfu)
        if (factor or result.software.behaviours.kernel_efficiency) > 1.0:
            assert o.mfu <= MFU_CEILING + 1e-12
    doc = result.to_json()
    assert all(0 < o["mfu"] <= 1.0 for o in doc["options"])
