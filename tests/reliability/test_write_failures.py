"""Write failures (a full disk as RLIMIT_FSIZE shows it, a folder that is a file) are one line and exit 2;
the file that was there is kept."""

from __future__ import annotations

import resource

from tests.reliability.conftest import one_line_error


def _limit(n_bytes):
    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (n_bytes, resource.RLIM_INFINITY))


NO_PYC = {"PYTHONDONTWRITEBYTECODE": "1"}


def test_catalog_export_on_a_full_disk(run_cli, tmp_path):
    target = tmp_path / "offers.csv"
    target.write_text("old\n")
    line = one_line_error(run_cli("catalog", "export", target, preexec_fn=_limit(1000), env=NO_PYC))
    assert "catalog export: cannot write" in line
    assert target.read_text() == "old\n"


def test_catalog_export_into_a_file_that_is_not_a_folder(run_cli, tmp_path):
    (tmp_path / "plain").write_text("x")
    line = one_line_error(run_cli("catalog", "export", tmp_path / "plain" / "offers.csv"))
    assert "Not a directory" in line


def test_catalog_import_apply_on_a_full_disk_keeps_the_user_catalog(run_cli, tmp_path, advisor_home):
    from advisor import paths

    user = paths.user_catalog_file()
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text('[models.tiny]\nlayers = 2\nhidden = 64\nheads = 2\nvocab = 100\nffn = 128\n')
    before = user.read_bytes()
    prices = tmp_path / "prices.csv"
    rows = "".join(f"acme:gpu-{i},Acme,gpu-{i},h100-sxm,1,{1 + i / 100}\n" for i in range(300))
    prices.write_text("id,provider,instance,accelerator_id,accelerator_count,on_demand_usd_per_hour\n" + rows)
    line = one_line_error(run_cli("catalog", "import", prices, "--apply", preexec_fn=_limit(4000), env=NO_PYC))
    assert "catalog import: cannot write" in line and "nothing was changed" in line
    assert user.read_bytes() == before


def test_gui_screenshot_into_a_file_is_one_line(run_cli, tmp_path):
    (tmp_path / "plain").write_text("x")
    proc = run_cli("gui", "--fake-gpu", "2x4090", "--screenshot", tmp_path / "plain" / "shots", timeout=120)
    assert "--screenshot: cannot write" in one_line_error(proc)


def test_gui_screenshot_on_a_full_disk_is_one_line(run_cli, tmp_path):
    proc = run_cli("gui", "--fake-gpu", "2x4090", "--screenshot", tmp_path / "shots", timeout=120,
                   preexec_fn=_limit(2000), env=NO_PYC)
    assert "--screenshot: cannot write" in one_line_error(proc)
    assert not any((tmp_path / "shots").glob("*.png"))
