"""kill -9 in the middle of every kind of save: the file left is the old version or the new one, whole,
and the next run reads it without moving anything aside."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from tests.reliability.conftest import ROOT

# Each child saves version after version forever; the parent kills it at a varying moment.
CHILDREN = {
    "report": """
        import json
        from advisor.store.atomic import write_atomic
        i = 0
        while True:
            write_atomic(TARGET, json.dumps({"n": i, "pad": "x" * 400_000}))
            i += 1; ready()
        """,
    "scenario": """
        from advisor.store.scenario import Scenario, save_scenario
        i = 0
        while True:
            save_scenario(TARGET, Scenario(plan={"model": "llama-3-8b", "tokens": 1e9 + i},
                                           notes={"pad": "x" * 400_000}))
            i += 1; ready()
        """,
    "catalog-import": """
        from advisor.catalog.importer import apply_import
        from advisor.catalog.records import CloudOffer
        i = 0
        while True:
            offers = [CloudOffer(id=f"acme:g{i}-{j}", provider="Acme", instance=f"g{i}-{j}", accelerator_id="h100-sxm",
                                 accelerator_count=1, vcpus=None, memory_gib=None, region="",
                                 on_demand_usd_per_h=1.0, spot_usd_per_h=None, reserved_1y_usd_per_h=None,
                                 price_date="2026-12-01", source="x" * 200, notes="") for j in range(300)]
            apply_import(offers)
            i += 1; ready()
        """,
    "calibration": """
        from advisor.store.calibration import Calibration, save_calibration
        i = 0
        while True:
            save_calibration(Calibration(mfu=0.5, eta_mem=0.7, device="cpu", accelerator_id=None,
                                         measured_at=f"2026-12-01T00:00:{i % 60:02d}Z", source="probe:train-step"))
            i += 1; ready()
        """,
    "probe-history": """
        from advisor.store.probe_history import ProbeHistory
        h = ProbeHistory()
        i = 0
        while True:
            h.add({"probe": "host-bandwidth", "device": "cpu", "results": {}}, {"id": "m"},
                  [{"t": k, "pad": "x" * 1000} for k in range(100)])
            i += 1; ready()
        """,
}
PRELUDE = """
import os, sys
TARGET = sys.argv[1]
def ready(_done=[]):
    if not _done:
        print("ready", flush=True); _done.append(1)
"""


def _check(kind, target):
    if kind == "report":
        import json

        doc = json.loads(target.read_text())
        assert len(doc["pad"]) == 400_000
    elif kind == "scenario":
        from advisor.store.scenario import load_scenario

        assert len(load_scenario(target).notes["pad"]) == 400_000
    elif kind == "catalog-import":
        from advisor.catalog.load import load_catalog

        cat = load_catalog()
        assert cat.warnings == ()
        assert sum(o.id.startswith("acme:") for o in cat.offers) % 300 == 0
        assert not list(target.parent.glob("*.broken-*"))
    elif kind == "calibration":
        from advisor.store.calibration import load_calibration

        assert load_calibration().mfu == 0.5
        assert not list(target.parent.glob("*.broken-*"))
    elif kind == "probe-history":
        from advisor.store.probe_history import ProbeHistory

        with ProbeHistory() as h:
            assert len(h.list(limit=10_000)) >= 1
        assert not list(target.parent.glob("*.broken-*"))


def _target(kind, tmp_path):
    from advisor import paths
    from advisor.store.calibration import calibration_file
    from advisor.store.probe_history import history_file

    return {"report": tmp_path / "report.json", "scenario": tmp_path / "s.toml",
            "catalog-import": paths.user_catalog_file(), "calibration": calibration_file(),
            "probe-history": history_file()}[kind]


@pytest.mark.parametrize("kind", sorted(CHILDREN))
def test_kill9_during_a_save_leaves_a_whole_file(kind, tmp_path, advisor_home):
    target = _target(kind, tmp_path)
    code = PRELUDE + textwrap.dedent(CHILDREN[kind])
    env = {**os.environ, "ADVISOR_HOME": str(advisor_home), "PYTHONPATH": str(ROOT)}
    for delay_s in (0.0, 0.03, 0.07, 0.13):
        child = subprocess.Popen([sys.executable, "-c", code, str(target)], env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        assert child.stdout.readline().strip() == "ready", child.stderr.read()
        time.sleep(delay_s)  # a different moment of the save loop each time
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        child.stdout.close()
        child.stderr.close()
        assert child.returncode == -signal.SIGKILL
        _check(kind, target)
