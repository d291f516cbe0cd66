"""The calibration set of documented training runs."""

import pytest

from advisor.catalog.load import CatalogError
from advisor.catalog.training_runs import bundled_training_runs, parse_training_runs

ALLOWED_GROUPS = {"llama1", "megatron", "palm-table", "megascale", "gpt-neox", "starcoder", "nemotron", "chinchilla",
                  "olmo", "olmo2", "mlperf"}


def test_at_least_25_documented_runs_each_with_a_source():
    runs = bundled_training_runs()
    assert len(runs) >= 25
    assert all(r.source for r in runs)
    assert {r.group for r in runs} <= ALLOWED_GROUPS


def test_llama1_gpu_hours_match_table_15():
    runs = {r.run_id: r for r in bundled_training_runs()}
    assert [runs[f"llama1-{s}"].gpu_hours for s in ("7b", "13b", "33b", "65b")] == [82432, 135168, 530432, 1022362]


def test_chinchilla_flops_check():
    # Hoffmann et al. 2022: 5.76e23 FLOPs; 6 * 70e9 * 1.4e12 = 5.88e23 (within 3 %)
    c = {r.run_id: r for r in bundled_training_runs()}["chinchilla-70b"]
    assert 6 * c.active_params * c.tokens == pytest.approx(5.76e23, rel=0.03)


def test_bad_rows_get_one_clear_error():
    header = ("run_id,group,model,accelerator_id,generation,devices,params,active_params,tokens,seq_len,layers,hidden,"
              "vocab,precision,framework,interconnect,moe,target,gpu_hours,tokens_per_s_per_device,mfu,"
              "tflops_per_device,source,notes,recompute\n")
    good = "x,g,m,a100-80gb-sxm,2020,8,1e9,1e9,1e10,2048,16,2048,32000,bf16,f,i,0,gpu_hours,100,,,,s,,selective\n"
    assert len(parse_training_runs(header + good)) == 1
    with pytest.raises(CatalogError, match="target"):
        parse_training_runs(header + good.replace("gpu_hours,100", "weird,100"))
    with pytest.raises(CatalogError, match="gpu_hours is required"):
        parse_training_runs(header + good.replace("gpu_hours,100", "gpu_hours,"))
    with pytest.raises(CatalogError, match="mfu must be a fraction"):
        parse_training_runs(header + good.replace(",,,,s", ",,1.5,,s"))
    with pytest.raises(CatalogError, match="mfu_convention"):
        parse_training_runs(header + good.replace("gpu_hours,100,,,,s", "mfu,,,0.4,,s"))
    with pytest.raises(CatalogError, match="duplicate"):
        parse_training_runs(header + good + good)
