"""Cloud price import: formats, name mapping, diff, atomic apply, export round trip, bad files, update check."""

from __future__ import annotations

import io
import json
import os
import random
from importlib import resources

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor import paths
from advisor.catalog import importer as im
from advisor.catalog.load import CatalogError, bundled_catalog, load_catalog
from advisor.cli import main

BUNDLED_CSV = resources.files("advisor.resources").joinpath("cloud_offers.csv").read_text(encoding="utf-8")

SKY = """InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,SpotPrice,Region,GpuInfo,AvailabilityZone
g5.xlarge,A10G,1,4,16,0.9,0.35,us-east-1,,us-east-1a
g5.xlarge,A10G,1,4,16,0.9,0.31,us-east-1,,us-east-1b
g5.xlarge,A10G,1,4,16,1.2,0.30,eu-west-1,,eu-west-1a
p5.48xlarge,H100,8,192,2048,55.04,,us-east-1,,
p4de.24xlarge,A100-80GB,8,96,1152,40.96,,us-east-1,,
m5.large,,,2,8,0.096,0.03,us-east-1,,
p2.xlarge,K80,1,4,61,0.9,,us-east-1,,
box.4090,RTX4090,2,16,64,1.5,,us-east-1,,
"""


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


# ------------------------------------------------------------------------------------------- round trip
def test_bundled_offers_import_and_export_unchanged():
    result = im.parse_advisor_csv(BUNDLED_CSV)
    assert result.offers == bundled_catalog().offers
    exported = im.export_offers_csv(result.offers)
    assert exported.splitlines() == BUNDLED_CSV.splitlines()  # the same cells, line for line
    again = im.parse_advisor_csv(exported)
    assert again.offers == result.offers and im.export_offers_csv(again.offers) == exported


def test_cli_export_then_import_shows_no_change(tmp_path, capsys):
    out = tmp_path / "offers.csv"
    assert main(["catalog", "export", str(out)]) == 0
    assert main(["catalog", "import", str(out), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["added"] == doc["changed"] == doc["removed"] == []
    assert doc["unchanged"] == len(bundled_catalog().offers)


def test_toml_export_round_trip(tmp_path):
    offers = bundled_catalog().offers[:10]
    path = _write(tmp_path, "offers.toml", im.export_offers_toml(offers))
    assert im.read_offers_file(path).offers == offers


# ---------------------------------------------------------------------------------------------- skypilot
@pytest.mark.parametrize("name, expected", [
    ("H100", "h100-sxm"), ("A100-80GB", "a100-80gb-sxm"), ("A100", "a100-40gb-sxm"), ("RTX4090", "rtx-4090"),
    ("L40S", "l40s"), ("A10G", "a10g"), ("T4", "t4"), ("H200", "h200"), ("rtx-4090", "rtx-4090"), ("K80", None),
])
def test_skypilot_names_map_to_catalog_ids(name, expected):
    assert im.skypilot_accelerator_id(name, bundled_catalog().accelerators) == expected


def test_skypilot_csv_one_offer_per_instance_cheapest_region():
    r = im.parse_skypilot_csv(SKY, "aws", price_date="2026-11-30", where="vms.csv")
    by_id = {o.id: o for o in r.offers}
    assert set(by_id) == {"aws:g5.xlarge", "aws:p5.48xlarge", "aws:p4de.24xlarge", "aws:box.4090"}
    assert {o.provider for o in r.offers} == {"AWS"}  # the catalog's spelling of the provider
    g5 = by_id["aws:g5.xlarge"]
    assert (g5.region, g5.on_demand_usd_per_h, g5.spot_usd_per_h) == ("us-east-1", 0.9, 0.31)
    assert by_id["aws:p4de.24xlarge"].accelerator_id == "a100-80gb-sxm"
    assert by_id["aws:p5.48xlarge"].accelerator_count == 8
    assert all(o.price_date == "2026-11-30" for o in r.offers)  # the price date is kept per row
    assert any("K80" in s for s in r.skipped)


def test_skypilot_price_date_must_be_a_date():
    with pytest.raises(CatalogError, match="price date: expected YYYY-MM-DD"):
        im.parse_skypilot_csv(SKY, "aws", price_date="last tuesday")


def test_skypilot_region_choice_and_provider_from_folder(tmp_path):
    folder = tmp_path / "v7" / "lambda"
    folder.mkdir(parents=True)
    path = _write(folder, "vms.csv", SKY)
    r = im.read_offers_file(path, region="eu-west-1", price_date="2026-01-01")
    assert [(o.id, o.on_demand_usd_per_h) for o in r.offers] == [("lambda:g5.xlarge", 1.2)]


# -------------------------------------------------------------------------------------------------- diff
def test_diff_lists_added_changed_removed_with_old_and_new_prices():
    current = bundled_catalog().offers
    sky = im.parse_skypilot_csv(SKY, "aws", price_date="2026-11-30")
    d = im.diff_offers(current, sky.offers, replace_providers=True)
    assert {o.id for o in d.added} >= {"aws:p5.48xlarge", "aws:box.4090"}
    change = next(c for c in d.changed if c.new.id == "aws:g5.xlarge")
    assert change.old.on_demand_usd_per_h == 1.006 and change.new.on_demand_usd_per_h == 0.9
    assert "on_demand_usd_per_h" in change.fields and "price_date" in change.fields
    assert d.removed and all(o.provider.lower() == "aws" for o in d.removed)
    text = "\n".join(im.format_diff(d))
    assert "on_demand 1.006 -> 0.9" in text and "+ aws:p5.48xlarge" in text
    assert not im.diff_offers(current, current).changed


# ------------------------------------------------------------------------------------------------- apply
def test_import_previews_then_applies(tmp_path, capsys):
    path = _write(tmp_path, "vms.csv", SKY)
    assert main(["catalog", "import", str(path), "--provider", "aws", "--price-date", "2026-11-30"]) == 0
    assert "nothing applied" in capsys.readouterr().out
    assert not paths.user_catalog_file().exists()
    assert main(["catalog", "import", str(path), "--provider", "aws", "--price-date", "2026-11-30", "--apply"]) == 0
    cat = load_catalog()
    offer = next(o for o in cat.offers if o.id == "aws:g5.xlarge")
    assert (offer.on_demand_usd_per_h, offer.price_date) == (0.9, "2026-11-30")
    assert not cat.warnings
    capsys.readouterr()
    assert main(["catalog", "import", str(path), "--provider", "aws", "--price-date", "2026-11-30", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["added"] == doc["changed"] == [] and doc["unchanged"] == 4


def test_replace_withdraws_bundled_offers_missing_from_the_import(tmp_path, capsys):
    path = _write(tmp_path, "vms.csv", SKY)
    args = ["catalog", "import", str(path), "--provider", "aws", "--price-date", "2026-11-30", "--replace", "--apply"]
    assert main(args) == 0
    ids = {o.id for o in load_catalog().offers}
    assert "aws:p4d.24xlarge-snapshot" not in ids  # a bundled AWS offer the new list does not have
    assert "aws:g5.xlarge" in ids and "lambda:gpu-1x-a10" in ids  # imported, and another provider untouched
    assert "withdrawn = true" in paths.user_catalog_file().read_text()


def test_a_price_missing_from_the_import_clears_the_bundled_one():
    sky = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,SpotPrice,Region\n" \
          "g5.xlarge,A10G,1,4,16,0.95,,us-east-1\n"
    offers = im.parse_skypilot_csv(sky, "aws", price_date="2026-11-30").offers
    change = im.diff_offers(bundled_catalog().offers, offers).changed[0]
    assert change.old.spot_usd_per_h == 0.397 and change.new.spot_usd_per_h is None
    im.apply_import(offers)
    offer = next(o for o in load_catalog().offers if o.id == "aws:g5.xlarge")
    assert (offer.on_demand_usd_per_h, offer.spot_usd_per_h) == (0.95, None)
    assert im.diff_offers(load_catalog().offers, offers).unchanged == 1


def test_apply_keeps_other_user_tables_and_a_broken_file_aside(tmp_path):
    user = paths.user_catalog_file()
    user.parent.mkdir(parents=True)
    user.write_text('[models.tiny]\nlayers = 2\nhidden = 64\nheads = 2\nvocab = 100\nffn = 128\n')
    offers = im.parse_skypilot_csv(SKY, "aws", price_date="2026-11-30").offers
    first = user.read_bytes()
    im.apply_import(offers)
    assert "tiny" in load_catalog().models and "aws:box.4090" in {o.id for o in load_catalog().offers}
    assert user.with_name("catalog.toml.prev").read_bytes() == first  # the previous version, comments and all
    user.write_bytes(b"\xff\xfe broken")
    _, aside = im.apply_import(offers)
    assert aside and open(aside, "rb").read() == b"\xff\xfe broken"  # nothing lost


def test_failed_write_leaves_the_user_catalog_intact(tmp_path, monkeypatch):
    offers = im.parse_skypilot_csv(SKY, "aws", price_date="2026-11-30").offers
    path, _ = im.apply_import(offers[:1])
    before = path.read_bytes()
    def boom(*_a, **_k):
        raise OSError("disk full")

    with monkeypatch.context() as m:
        m.setattr(os, "replace", boom)
        with pytest.raises(OSError):
            im.apply_import(offers)
    assert path.read_bytes() == before


# --------------------------------------------------------------------------------------------- bad files
BAD = [
    (random.Random(100).randbytes(100) + b"\x00", "binary"),  # seeded: the same test on every xdist worker
    (b"\xff\xfe\x00\x01", "binary"),
    (b"\xc3\x28 not utf-8,x\n", "UTF-8"),
    (b"InstanceType,AcceleratorName\nx,H100\n", "missing column(s) AcceleratorCount"),
    (b"provider,instance,accelerator_count\nAWS,x,1\n", "missing column(s) accelerator_id"),
    (SKY.replace("55.04", "-55.04").encode(), "row 5: field 'Price' must be zero or more"),
    (SKY.replace("0.35", "cheap").encode(), "row 2: field 'SpotPrice' is not a number"),
    (SKY[:SKY.index("p2.xlarge,K80,1,4,61") + 20].encode(), "row 8: field 'Price' is missing"),  # truncated mid-write
    (BUNDLED_CSV.replace(",t4,1,4,16,us-east-1,0.526", ",t4,1,4,16,us-east-1,-0.526", 1).encode(),
     "row 2 'aws:g4dn.xlarge': field 'on_demand_usd_per_hour' must be zero or more"),
    (BUNDLED_CSV.replace(",t4,", ",t5,", 1).encode(), "row 2 'aws:g4dn.xlarge': field 'accelerator_id' names an unknown accelerator"),
    (BUNDLED_CSV.encode()[: len(BUNDLED_CSV) // 2], "field"),  # truncated mid-write
    (b"", "empty file"),
]


@pytest.mark.parametrize("content, message", BAD)
def test_bad_files_name_the_row_and_field_and_apply_nothing(tmp_path, capsys, content, message):
    user = paths.user_catalog_file()
    user.parent.mkdir(parents=True)
    user.write_text('[cloud_offers."aws:g5.xlarge"]\non_demand_usd_per_hour = 0.5\n')
    before = user.read_bytes()
    path = _write(tmp_path, "prices.csv", content)
    assert main(["catalog", "import", str(path), "--provider", "aws", "--apply"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "prices.csv" in err and message in err, err
    assert user.read_bytes() == before and path.read_bytes() == content


def test_bad_toml_offer_names_the_table(tmp_path):
    path = _write(tmp_path, "p.toml", '[cloud_offers."aws:x"]\naccelerator_id = "t4"\naccelerator_count = 1\n'
                                     'on_demand_usd_per_hour = -1\n')
    with pytest.raises(CatalogError, match=r"aws:x.*on_demand_usd_per_hour"):
        im.read_offers_file(path)
    with pytest.raises(CatalogError, match="not valid TOML"):
        im.read_offers_file(_write(tmp_path, "q.toml", "[cloud_offers\n"))


def test_repeated_id_is_an_error():
    rows = BUNDLED_CSV.splitlines()
    with pytest.raises(CatalogError, match="row 3: field 'id' repeats"):
        im.parse_advisor_csv("\n".join([rows[0], rows[1], rows[1]]) + "\n")


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=400))
def test_random_bytes_only_ever_raise_catalog_error(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("r") / "r.csv"
    path.write_bytes(data)
    try:
        im.read_offers_file(path, provider="aws")
    except CatalogError as exc:
        assert "\n" not in str(exc).strip()


# ----------------------------------------------------------------------------------------- check updates
class _FakeResponse(io.BytesIO):
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_update_check_refuses_plain_http(capsys, monkeypatch):
    monkeypatch.setattr("advisor.store.download.urlopen_https", lambda *a, **k: pytest.fail("no download over http"))
    assert main(["catalog", "check-updates", "--url", "http://example.com/prices.csv"]) == 2
    assert "https" in capsys.readouterr().err


def test_update_check_needs_a_url(capsys, monkeypatch):
    monkeypatch.delenv("ADVISOR_PRICES_URL", raising=False)
    assert main(["catalog", "check-updates"]) == 2
    assert "url" in capsys.readouterr().err


def test_update_check_downloads_over_https_only_when_asked(capsys, monkeypatch):
    calls = []

    def fake_urlopen(url, timeout, *a, **k):
        calls.append(url)
        resp = _FakeResponse(SKY.encode())
        resp.geturl = lambda: url
        return resp

    monkeypatch.setattr("advisor.store.download.urlopen_https", fake_urlopen)
    assert main(["catalog", "list", "offers"]) == 0
    assert calls == []  # nothing else touches the network
    user = paths.user_catalog_file()
    user.parent.mkdir(parents=True)
    user.write_text('[updates]\nprices_url = "https://prices.example/aws/vms.csv"\n')
    capsys.readouterr()
    assert main(["catalog", "check-updates", "--provider", "aws", "--price-date", "2026-11-30", "--json"]) == 0
    assert calls == ["https://prices.example/aws/vms.csv"]
    doc = json.loads(capsys.readouterr().out)
    assert not doc["applied"] and any(o["id"] == "aws:p5.48xlarge" for o in doc["added"])
    assert "aws:p5.48xlarge" not in {o.id for o in load_catalog().offers}
    assert main(["catalog", "check-updates", "--apply"]) == 0  # provider from the URL's folder
    assert "aws:p5.48xlarge" in {o.id for o in load_catalog().offers}
    assert 'prices_url = "https://prices.example/aws/vms.csv"' in user.read_text()


def test_catalog_list_and_show(capsys):
    assert main(["catalog", "list", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert any(a["id"] == "h100-sxm" for a in doc["items"])
    assert main(["catalog", "show", "h100-sxm"]) == 0
    assert "H100" in capsys.readouterr().out
    assert main(["catalog", "show", "no-such-thing"]) == 2
    assert "no-such-thing" in capsys.readouterr().err
