"""Hostile or wrongly shaped files read by the advisor: the user catalog, scenario files, price lists.
Each is refused with one line or, for the user catalog, skipped entry by entry with a warning."""

from __future__ import annotations

import os

import pytest

from tests.reliability.conftest import one_line_error

BAD_CATALOGS = {
    "accelerators-int": ("accelerators = 5\n", "[accelerators]"),
    "offers-list": ("cloud_offers = [1]\n", "[cloud_offers]"),
    "model-ffn-inf": ("[models.tiny]\nlayers = 2\nhidden = 64\nheads = 2\nvocab = 100\nffn = inf\n", "'ffn'"),
    "model-nan": ("[models.tiny]\nlayers = nan\nhidden = 64\nheads = 2\nvocab = 100\nffn = 128\n", "'layers'"),
    "accel-str-memory": ('[accelerators.x1]\nmemory_gb = "lots"\nmem_bandwidth_gbs = 100\n', "'memory_gb'"),
    "offer-not-table": ('[cloud_offers]\n"aws:x" = 3\n', "expected a table"),
    "offer-bool-count": ('[cloud_offers."aws:y"]\nprovider = "AWS"\ninstance = "y"\naccelerator_id = "h100-sxm"\n'
                         'accelerator_count = 1e300\non_demand_usd_per_hour = 1\n', "'accelerator_count'"),
    "offer-unknown-key": ('[cloud_offers."aws:z"]\nprovider = "AWS"\ninstance = "z"\naccelerator_id = "h100-sxm"\n'
                          'accelerator_count = 1\non_demand_usd_per_hour = 1\nprize = 3\n', "'prize'"),
    "models-string": ('models = "llama"\n', "[models]"),
}


def _write_user_catalog(text):
    from advisor import paths

    path = paths.user_catalog_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    good = '[models.good]\nlayers = 2\nhidden = 64\nheads = 2\nvocab = 100\nffn = 128\n'
    path.write_text(text + ("" if text.startswith("models =") else good))
    return path


@pytest.mark.parametrize("name", sorted(BAD_CATALOGS))
def test_a_bad_user_catalog_entry_is_skipped_with_a_warning(name):
    from advisor.catalog import load_catalog

    text, key = BAD_CATALOGS[name]
    path = _write_user_catalog(text)
    cat = load_catalog()
    assert len(cat.warnings) == 1, cat.warnings
    warning = cat.warnings[0]
    assert path.name in warning and key in warning and "ignored" in warning and "\n" not in warning
    # the rest of the file and the bundled catalog still load
    assert ("good" in cat.models or name == "models-string") and "llama-3-8b" in cat.models
    assert len(cat.accelerators) >= 40


@pytest.mark.parametrize("name", ["accelerators-int", "offers-list", "model-ffn-inf"])
def test_commands_run_with_a_bad_user_catalog(run_cli, name):
    _write_user_catalog(BAD_CATALOGS[name][0])
    for args in (("catalog", "list", "models"), ("plan", "--model", "good", "--workload", "inference", "--json")):
        proc = run_cli(*args)
        assert proc.returncode == 0, proc.stderr
        assert "Traceback" not in proc.stderr
        assert "entry ignored" in proc.stderr or "section ignored" in proc.stderr, proc.stderr


def test_the_app_starts_with_a_bad_user_catalog(run_cli, tmp_path):
    _write_user_catalog(BAD_CATALOGS["accelerators-int"][0] + BAD_CATALOGS["model-ffn-inf"][0].replace("tiny", "t2"))
    proc = run_cli("gui", "--fake-gpu", "2x4090", "--screenshot", tmp_path / "shots", timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "shots" / "catalog.png").stat().st_size > 1000


def test_a_nested_array_scenario_is_one_line(run_cli, tmp_path):
    scen = tmp_path / "deep.toml"
    scen.write_text('schema = "advisor.scenario/1"\n[plan]\nmodel = "llama-3-8b"\n[notes]\nx = '
                    + "[" * 100_000 + "]" * 100_000 + "\n")
    line = one_line_error(run_cli("plan", scen))
    assert str(scen) in line


def test_a_huge_scenario_is_refused_by_size(run_cli, tmp_path):
    line = one_line_error(run_cli("plan", "/dev/zero", timeout=30))
    assert "/dev/zero" in line and "not a regular file" in line
    big = tmp_path / "big.toml"
    with open(big, "wb") as f:
        f.truncate(64 * 2**20)  # sparse: 64 MiB of zeros
    line = one_line_error(run_cli("plan", big, timeout=30))
    assert "larger than" in line


def test_a_fifo_scenario_does_not_hang(run_cli, tmp_path):
    fifo = tmp_path / "s.toml"
    os.mkfifo(fifo)  # no writer: a plain open() for reading would block forever
    line = one_line_error(run_cli("plan", fifo, timeout=30))
    assert "not a regular file" in line


def test_a_fifo_price_list_does_not_hang(run_cli, tmp_path):
    fifo = tmp_path / "prices.csv"
    os.mkfifo(fifo)
    line = one_line_error(run_cli("catalog", "import", fifo, timeout=30))
    assert "not a regular file" in line


@pytest.mark.parametrize("name", ["model.gguf", "config.json"])
def test_a_fifo_model_file_does_not_hang(run_cli, tmp_path, name):
    folder = tmp_path / "m"
    folder.mkdir()
    os.mkfifo(folder / name)
    line = one_line_error(run_cli("models", folder / name, timeout=30))
    assert "not a regular file" in line
