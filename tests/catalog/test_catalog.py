"""The bundled catalog carries the reference figures; the user's file adds and overrides, never crashes."""

from __future__ import annotations

import pytest

from advisor import paths
from advisor.catalog import load_catalog
from advisor.catalog.load import bundled_catalog
from advisor.estimate.model import active_param_count, embedding_params, host_embedding_params, param_count

GIB = 2**30


def test_bundled_counts_and_ids_resolve():
    c = bundled_catalog()
    # the reference table, H800, H20, A800 and L20 (used by published runs), and 39 hobbyist cards
    assert len(c.accelerators) == 86
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
    non_embedding = m.extra.get("published_non_embedding_params")
    effective = m.extra.get("published_effective_params")  # Gemma 3n: less the per-layer and token embeddings
    assert m.published_params or non_embedding or effective, "every preset carries a published count"
    if effective:
        assert param_count(m) - embedding_params(m) - host_embedding_params(m) == pytest.approx(effective, rel=0.01)
    if m.published_params:  # published_tolerance: a card's figure rounded or holding a vision encoder (its source says)
        assert param_count(m) == pytest.approx(m.published_params, rel=m.extra.get("published_tolerance", 0.01))
    if non_embedding:
        assert param_count(m) - embedding_params(m) == pytest.approx(non_embedding, rel=0.01)


def test_moe_active_parameters():
    c = bundled_catalog()
    assert active_param_count(c.model("mixtral-8x7b")) == pytest.approx(12.9e9, rel=0.01)  # paper: 13B active
    # DeepSeek-V3 reports "37B activated"; the count with both embeddings is 37.55B (1.5 percent above the rounded figure)
    assert active_param_count(c.model("deepseek-v3")) == pytest.approx(37e9, rel=0.02)


def test_routed_expert_parameters_by_hand():
    from advisor.estimate.model import routed_expert_active_params
    c = bundled_catalog()
    # Qwen3-30B-A3B: 48 MoE layers x 8 experts a token x 3 matrices of 2,048 x 768 = 1.81B of its 3.35B active
    assert routed_expert_active_params(c.model("qwen3-30b-a3b")) == 48 * 8 * 3 * 2048 * 768
    # DeepSeek-V3: 61 layers, 3 dense; 58 x 8 routed experts of 3 x 7,168 x 2,048 (the shared one not counted)
    assert routed_expert_active_params(c.model("deepseek-v3")) == 58 * 8 * 3 * 7168 * 2048
    assert routed_expert_active_params(c.model("llama-3-8b")) == 0


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
    assert len(c.accelerators) == 86
    assert len(c.warnings) == 1 and "ignored" in c.warnings[0]
    assert f.read_bytes() == content  # the user's file is never rewritten


def test_user_file_withdraws_a_bundled_offer():
    _write_user('[cloud_offers."aws:g4dn.xlarge"]\nwithdrawn = true\n')
    c = load_catalog()
    assert "aws:g4dn.xlarge" not in {o.id for o in c.offers}
    assert len(c.offers) == 127 and c.warnings == ()


@pytest.mark.parametrize("row, message", [
    ({"memory_gb": "24", "mem_bandwidth_gbs": "1"}, "'id' is required"),
    ({"id": "x", "mem_bandwidth_gbs": "1"}, "'memory_gb' is required"),
    ({"id": "x", "memory_gb": "abc", "mem_bandwidth_gbs": "1"}, "not a number"),
    ({"id": "x", "memory_gb": "0", "mem_bandwidth_gbs": "1"}, "must be positive"),
    ({"id": "x", "memory_gb": "8", "mem_bandwidth_gbs": "1", "tdp_w": "-5"}, "zero or more"),
])
def test_accelerator_rows_name_the_bad_field(row, message):
    from advisor.catalog.load import CatalogError, accelerator_from_row

    with pytest.raises(CatalogError, match=message):
        accelerator_from_row(row, "row 7")


@pytest.mark.parametrize("row, message", [
    ({"provider": "", "instance": "i", "accelerator_id": "t4", "accelerator_count": "1", "on_demand_usd_per_hour": "1"},
     "'provider' and 'instance'"),
    ({"provider": "p", "instance": "i", "accelerator_count": "1", "on_demand_usd_per_hour": "1"}, "'accelerator_id'"),
    ({"provider": "p", "instance": "i", "accelerator_id": "t4", "accelerator_count": "1"}, "on-demand or a spot"),
    ({"provider": "p", "instance": "i", "accelerator_id": "t4", "accelerator_count": "0", "on_demand_usd_per_hour": "1"},
     "must be positive"),
])
def test_offer_rows_name_the_bad_field(row, message):
    from advisor.catalog.load import CatalogError, offer_from_row

    with pytest.raises(CatalogError, match=message):
        offer_from_row(row, "row 3", bundled_catalog().accelerators)


@pytest.mark.parametrize("table, message", [
    ({"layers": 2, "hidden": 64, "heads": 4, "vocab": 10}, "'ffn' is required"),
    ({"layers": 2.5, "hidden": 64, "heads": 4, "ffn": 8, "vocab": 10}, "'layers'"),
    ({"layers": 2, "hidden": 64, "heads": 4, "ffn": 8, "vocab": 10, "tied": "yes"}, "'tied'"),
    ({"layers": 2, "hidden": 64, "heads": 4, "kv_heads": 3, "ffn": 8, "vocab": 10}, "multiple of kv_heads"),
    ({"layers": 0, "hidden": 64, "heads": 4, "ffn": 8, "vocab": 10}, "layers must be positive"),
    ({"layers": 2, "hidden": 64, "heads": 4, "ffn": 8, "vocab": 10, "ffn_kind": "odd"}, "invalid architecture"),
    ({"layers": 2, "hidden": 64, "heads": 4, "ffn": 8, "vocab": 10, "experts": 4, "experts_per_token": 5},
     "experts_per_token"),
])
def test_model_tables_name_the_bad_field(table, message):
    from advisor.catalog.load import CatalogError, model_from_table

    with pytest.raises(CatalogError, match=message):
        model_from_table("m", table)


def test_model_table_keeps_unknown_keys_as_extra():
    from advisor.catalog.load import model_from_table

    m = model_from_table("m", {"layers": 2, "hidden": 64, "heads": 4, "ffn": 8, "vocab": 10, "licence": "MIT"})
    assert m.extra == {"licence": "MIT"} and m.kv_heads == 4


def test_supports_and_offers_for():
    c = bundled_catalog()
    assert c.accelerator("h100-sxm").supports("fp8") and c.accelerator("h100-sxm").supports("bf16")
    assert not c.accelerator("t4").supports("bf16")
    assert c.accelerator("rtx-4090").supports("int8")
    assert c.accelerator("tpu-v5e").peak_flops("fp32") is None  # no fp32 figure for this TPU
    assert {o.accelerator_id for o in c.offers_for("h100-sxm")} == {"h100-sxm"}
    assert len(c.offers_for("h100-sxm")) >= 10
    with pytest.raises(Exception, match="unknown accelerator"):
        c.accelerator("nope")
    with pytest.raises(Exception, match="unknown model preset"):
        c.model("nope")


def test_user_file_edits_a_preset_and_rejects_non_tables():
    _write_user('accelerators = { rtx-4090 = 5 }\n[models.gpt2]\nname = "GPT-2 renamed"\n')
    c = load_catalog()
    assert c.model("gpt2").name == "GPT-2 renamed" and c.model("gpt2").layers == 12
    assert len(c.warnings) == 1 and "expected a table" in c.warnings[0]


def test_bundled_only_and_explicit_file(tmp_path):
    f = tmp_path / "other.toml"
    f.write_text("[models.tiny]\nlayers = 1\nhidden = 8\nheads = 1\nffn = 8\nvocab = 4\n")
    assert "tiny" in load_catalog(user_file=f).models
    assert "tiny" not in load_catalog(user_file=f, use_user_file=False).models


def test_source_checkout_without_install_reads_the_resources_folder(monkeypatch):
    """``python -m advisor`` from a fresh clone, before ``pip install``, still finds the catalog."""
    import importlib.resources

    from advisor.catalog import load as load_mod

    real = importlib.resources.files

    def files(package):
        if package == "advisor.resources":
            raise ModuleNotFoundError(package)
        return real(package)

    monkeypatch.setattr(load_mod.resources, "files", files)
    assert "rtx-4090," in load_mod._resource_text("accelerators.csv")


def test_china_market_parts_by_their_published_figures():
    c = bundled_catalog()
    h800, h100 = c.accelerator("h800"), c.accelerator("h100-sxm")
    assert h800.bf16_flops == h100.bf16_flops == 989e12 and h800.interconnect_bps == 200e9  # NVLink cut to 400 GB/s
    h20 = c.accelerator("h20")
    assert h20.bf16_flops == 148e12 and h20.mem_bandwidth_bps == 4000e9 and h20.memory_bytes == 96 * GIB
    a800, a100 = c.accelerator("a800-80gb-sxm"), c.accelerator("a100-80gb-sxm")
    assert a800.bf16_flops == a100.bf16_flops and a800.interconnect_bps < a100.interconnect_bps
    l20 = c.accelerator("l20")
    assert l20.bf16_flops == 119.5e12 and l20.mem_bandwidth_bps == 864e9 and l20.tdp_w == 275
    assert all(c.accelerator(i).source and c.accelerator(i).data_date for i in ("h800", "h20", "a800-80gb-sxm", "l20"))


def test_inter_node_fabric_per_instance():
    c = bundled_catalog()
    by_id = {o.id: o for o in c.offers}
    p5 = by_id["aws:p5.48xlarge-snapshot"]
    # 3200 Gbps EFA over 8 H100: 3200e9 / 8 / 8 = 50 GB/s per GPU
    assert p5.inter_node_gbps == 3200 and p5.inter_node_bps_per_device == pytest.approx(50e9)
    assert by_id["aws:p4d.24xlarge-snapshot"].inter_node_bps_per_device == pytest.approx(6.25e9)
    assert all(o.inter_node_source for o in c.offers if o.inter_node_gbps)
    assert by_id["lambda:gpu-8x-h100-sxm5"].inter_node_bps_per_device is None  # no fabric stated: one instance only
