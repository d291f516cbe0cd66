"""A small hand-written ``advisor.plan/1`` document, independent of the planner's numbers."""

from __future__ import annotations

import copy

import pytest

PLAN = {
    "schema": "advisor.plan/1",
    "model": {"name": "llama-3-70b", "params": 70_553_706_496, "active_params": 70_553_706_496},
    "workload": "pretrain", "precision": "bf16", "flops_total": 4.2e21, "tokens": 1e10, "seq_len": 4096,
    "memory": {"devices": 16, "parallelism": {"tp": 8, "pp": 1, "dp": 2, "zero": 1},
               "per_device_bytes": {"weights": 1, "gradients": 1, "optimizer": 1, "activations": 1, "kv_cache": 0,
                                    "overhead": 1, "total": 60_000_000_000}},
    "options": [
        {"id": "cloud:aws:p5.48xlarge", "kind": "cloud", "accelerator": "h100-sxm", "devices": 16, "fits": True,
         "mfu": 0.4, "hours": 30.5, "device_hours": 488.0, "energy_kwh": 341.6, "usd_per_device_hour": 3.93,
         "cost_usd": 1917.84, "cost_breakdown_usd": {"rent": 1900.0, "storage": 17.84}, "tokens_per_s": 91074.3,
         "provider": "AWS", "instance": "p5.48xlarge", "instances": 2, "spot": False,
         "parallelism": {"tp": 8, "pp": 1, "dp": 2, "zero": 1}},
        {"id": "cloud:lambda:gpu-1x-h100:spot", "kind": "cloud", "accelerator": "h100-sxm", "devices": 16,
         "fits": True, "mfu": 0.4, "hours": 30.5, "device_hours": 488.0, "energy_kwh": 341.6,
         "usd_per_device_hour": 2.49, "cost_usd": 1337.21, "cost_breakdown_usd": {"rent": 1215.12,
                                                                                 "spot_rework": 122.09},
         "tokens_per_s": 91074.3, "provider": "Lambda", "instance": "gpu_1x_h100", "instances": 16, "spot": True},
        {"id": "onprem:h100-sxm", "kind": "onprem", "accelerator": "h100-sxm", "devices": 16, "fits": True,
         "mfu": 0.4, "hours": 30.5, "device_hours": 488.0, "energy_kwh": 400.2, "usd_per_device_hour": 1.71,
         "cost_usd": 834.5, "cost_breakdown_usd": {"capex_share": 700.0, "energy": 80.5, "support": 54.0},
         "tokens_per_s": 91074.3, "break_even": {"vs": "cloud:lambda:gpu-1x-h100:spot", "device_hours": 5123.4}},
        {"id": "home:rtx-4090", "kind": "home", "accelerator": "rtx-4090", "devices": 16, "fits": False,
         "mfu": 0.3, "hours": 410.0, "device_hours": 6560.0, "energy_kwh": 2952.0, "usd_per_device_hour": 0.26,
         "cost_usd": 2611.77, "cost_breakdown_usd": {"depreciation": 2100.0, "energy": 511.77},
         "tokens_per_s": 6775.0, "break_even": {"vs": None, "device_hours": None}},
    ],
    "assumptions": {
        "electricity_usd_per_kwh": {"value": 0.17, "unit": "USD/kWh", "origin": "EIA 2025 residential average"},
        "lifetime_years": {"value": 3.0, "unit": "years", "origin": "docs/method.md"},
        "spot_rework_fraction": {"value": 0.1, "unit": "fraction", "origin": "assumption"},
    },
    "catalog": {"date": "2026-11-29", "prices_as_of": "2026-03-15"},
    "calibration": None,
}


@pytest.fixture
def plan_doc():
    return copy.deepcopy(PLAN)
