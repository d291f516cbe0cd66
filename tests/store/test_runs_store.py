"""The run store beside the probe history, and the planner's calibration that carries its records."""

from __future__ import annotations

import json
from pathlib import Path

from advisor.runs import ImportOptions, import_file
from advisor.store.calibration import (
    Calibration,
    calibration_file,
    load_calibration,
    load_planner_calibration,
    save_calibration,
)
from advisor.store.probe_history import history_file
from advisor.store.runs import RunStore, runs_file, this_machine_id

STATE = Path(__file__).parents[1] / "runs" / "fixtures" / "hf-trainer" / "small-4x256" / "trainer_state.json"


def test_runs_live_beside_the_probe_history():
    assert runs_file().parent == history_file().parent and runs_file().name == "runs.sqlite3"


def test_planner_calibration_joins_the_probe_and_the_runs_and_saves_only_the_probe():
    assert load_planner_calibration() is None
    (rec,) = import_file(STATE, ImportOptions(this_machine_id=this_machine_id()))
    with RunStore() as store:
        store.add(rec)
    runs_only = load_planner_calibration()
    assert runs_only.runs == (rec,) and runs_only.mfu is None and runs_only.source == "runs"
    assert runs_only.machine_id == this_machine_id() and not runs_only.applies_to("cpu")
    save_calibration(Calibration(mfu=0.3, eta_mem=None, device="cpu", accelerator_id="cpu",
                                 measured_at="2026-01-01T00:00:00+00:00", source="probe:train-step"))
    both = load_planner_calibration()
    assert both.mfu == 0.3 and both.runs == (rec,)
    save_calibration(both)
    doc = json.loads(calibration_file().read_text())
    assert "runs" not in doc and "machine_id" not in doc
    assert load_calibration().runs == ()


def test_store_not_created_by_reading():
    with RunStore(create=False) as store:
        assert store.list() == []
    assert not runs_file().exists()
