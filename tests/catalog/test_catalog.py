"""The bundled catalog carries the reference figures; the user's file adds and overrides, never crashes."""

from __future__ import annotations

import pytest

from advisor import paths
from advisor.catalog import load_catalog
from advisor.catalog.load import bundled_catalog
from advisor.estimate.model import active_param_count, param_count

GIB = 2**30


def test_bundled_counts_and_ids_resolve():
    c = bundled_catalog()
    assert len(c.accelerators) == 43  # every row of the reference accelerators table
    assert len(c.offers) == 128  # every row of the reference cloud price table
    assert len({o.id for o in c.offers}) == 128
    assert all(o.accelerator_id in c.accelerators for o in c.offers)
    assert all(a.source and a.data_date for a in c.accelerators.values())
    assert all(o.source and o.price_date for o in c.offers)


@pytest.mark.parametrize("acc_id, mem_gib, bw_gbs, bf16_tflops, tdp_w", [
    ("rtx-4090", 24, 1008, 165.2, 450),  # GeForce: fp32-accumulate rate, half of 330.3
    ("h100-sxm", 80, 3350, 989, 700),
    ("a100-80gb-sxm", 80, 2039, 312, 400),
    ("mi300x", 192, 5300, 1300, 750),
])
def test_accelerator_figures(acc_id, mem_gib, bw_gbs, bf16_tflops, tdp_w):
    a = bundled_catalog().accelerator(acc_id)
    assert a.memory_bytes == mem_gib * GIB
    assert a.mem_bandwidth_bps == pytest.approx(bw_gbs * 1e9)
    assert a.peak_flops("bf16") == pytest.approx(bf16_tflops * 1e12)
    assert a.tdp_w == tdp_w


def test_peak_fallbacks():
    c = bundled_catalog()
    t4 = c.accelerator("t4")  # no bf16 column: falls back to the fp16 tensor rate
    assert t4.peak_flops("bf16") == t4.fp16_flops
    assert not c.accelerator("a100-80gb-sxm").supports("fp8")
    assert c.accelerator("h100-sxm").peak_flops("fp8") == pytest.approx(1979e12)


def test_per_device_price_divides_the_instance():
    p5 = next(o for o in bundled_catalog().offers if o.id == "aws:p5.48xlarge-snapshot")
    assert p5.accelerator_count == 8
    assert p5.usd_per_device_hour() == pytest.approx(98.32 / 8)
    assert p5.usd_per_device_hour(spot=True) == pytest.approx(20.9934 / 8)


@pytest.mark.parametrize("model_id", sorted(bundled_catalog().models))
def test_preset_parameter_counts_match_published(model_id):
    m = bundled_catalog().model(model_id)
    assert param_count(m) == pytest.approx(m.published_params, rel=0.01)


def test_moe_active_parameters():
    c = bundled_catalog()
    assert active_param_count(c.model("mixtral-8x7b")) == pytest.approx(12.9e9, rel=0.01)  # paper: 13B active
    # DeepSeek-V3 reports "37B activated"; the count with both embeddings is 37.55B (1.5 percent above the rounded figure)
    assert active_param_count(c.model("deepseek-v3")) == pytest.approx(37e9, rel=0.02)


def _write_user(text: str):
    f = paths.user_catalog_file()
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(text)
    return f


def test_user_file_overrides_and_adds():
    _write_user("""
[accelerators.rtx-4090]
street_price_usd = 1999
[accelerators.my-card]
name = "My card"
memory_gb = 16
mem_bandwidth_gbs = 500
bf16_tflops = 50
[cloud_offers."mycloud:box-2"]
provider = "MyCloud"
instance = "box-2"
accelerator_id = "my-card"
accelerator_count = 2
on_demand_usd_per_hour = 1.0
price_date = "2026-11-01"
[models.tiny]
layers = 2
hidden = 64
heads = 4
ffn = 128
vocab = 100
""")
    c = load_catalog()
    assert c.warnings == ()
    assert c.accelerator("rtx-4090").street_price_usd == 1999
    assert c.accelerator("rtx-4090").mem_bandwidth_bps == pytest.approx(1008e9)  # other fields kept
    assert c.accelerator("my-card").memory_bytes == 16 * GIB
    offer = next(o for o in c.offers if o.id == "mycloud:box-2")
    assert offer.usd_per_device_hour() == pytest.approx(0.5)
    assert "tiny" in c.models and {"rtx-4090", "my-card", "mycloud:box-2", "tiny"} <= c.user_ids
    assert bundled_catalog().accelerator("rtx-4090").street_price_usd == 1325  # bundled copy untouched


def test_malformed_entries_are_reported_and_ignored():
    _write_user("""
[accelerators.broken]
memory_gb = -3
mem_bandwidth_gbs = 100
[cloud_offers."x:y"]
provider = "x"
instance = "y"
accelerator_id = "no-such-accelerator"
accelerator_count = 1
on_demand_usd_per_hour = 1
""")
    c = load_catalog()
    assert "broken" not in c.accelerators
    assert len(c.warnings) == 2
    assert "memory_gb" in c.warnings[0] and "no-such-accelerator" in c.warnings[1]


@pytest.mark.parametrize("content", [b"\x00\xff\xfe garbage", b"[accelerators\nnot toml"])
def test_broken_user_file_is_ignored_not_fatal(content):
    f = paths.user_catalog_file()
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_bytes(content)
    c = load_catalog()
    assert len(c.accelerators) == 43
    assert len(c.warnings) == 1 and "ignored" in c.warnings[0]
    assert f.read_bytes() == content  # the user's file is never rewritten


def test_user_file_withdraws_a_bundled_offer():
    _write_user('[cloud_offers."aws:g4dn.xlarge"]\nwithdrawn = true\n')
    c = load_catalog()
    assert "aws:g4dn.xlarge" not in {o.id for o in c.offers}
    assert len(c.offers) == 127 and c.warnings == ()
