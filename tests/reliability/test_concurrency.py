"""Two writers at once: catalog imports under a file lock both land (no lost update)."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from tests.reliability.conftest import ROOT


def _offer(i):
    from advisor.catalog.records import CloudOffer

    return CloudOffer(id=f"acme:g{i}", provider="Acme", instance=f"g{i}", accelerator_id="h100-sxm",
                      accelerator_count=1, vcpus=None, memory_gib=None, region="", on_demand_usd_per_h=1.0 + i,
                      spot_usd_per_h=None, reserved_1y_usd_per_h=None, price_date="2026-12-01", source="test", notes="")


def test_two_imports_at_once_keep_both(monkeypatch):
    """Both threads are held between reading and writing the file for as long as the other could read it:
    without the lock both read the same old file and the second write loses the first offer."""
    import tomli_w

    from advisor.catalog.importer import apply_import
    from advisor.catalog.load import load_catalog

    both_read = threading.Barrier(2, timeout=1.0)
    real_dumps = tomli_w.dumps

    def dumps(doc):
        try:
            both_read.wait()  # with the lock the other thread cannot get here: the wait times out
        except threading.BrokenBarrierError:
            pass
        return real_dumps(doc)

    monkeypatch.setattr(tomli_w, "dumps", dumps)
    errors = []

    def run(i):
        try:
            apply_import([_offer(i)])
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert errors == []
    ids = {o.id for o in load_catalog().offers}
    assert {"acme:g1", "acme:g2"} <= ids


@pytest.mark.parametrize("round_", range(2))
def test_two_cli_imports_at_once_both_apply(tmp_path, advisor_home, round_):
    import os

    env = {**os.environ, "ADVISOR_HOME": str(advisor_home), "PYTHONPATH": str(ROOT)}
    files = []
    for k in (1, 2):
        f = tmp_path / f"p{k}.csv"
        f.write_text("id,provider,instance,accelerator_id,accelerator_count,on_demand_usd_per_hour\n"
                     + "".join(f"acme:f{k}-{j},Acme,f{k}-{j},h100-sxm,1,{k + j / 10}\n" for j in range(20)))
        files.append(f)
    procs = [subprocess.Popen([sys.executable, "-m", "advisor", "catalog", "import", str(f), "--apply"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for f in files]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    from advisor.catalog.load import load_catalog

    ids = {o.id for o in load_catalog().offers}
    assert all(f"acme:f{k}-{j}" in ids for k in (1, 2) for j in range(20))
