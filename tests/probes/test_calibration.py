"""Calibration file: round trip, clearing, broken file kept aside."""

from __future__ import annotations

import pytest

from advisor.store.calibration import Calibration, calibration_file, clear_calibration, load_calibration, save_calibration


def _cal(**kw):
    base = dict(mfu=0.41, eta_mem=0.83, device="cuda:0", accelerator_id="h100-sxm",
                measured_at="2026-11-29T23:00:00+00:00", source="probe:train-step")
    base.update(kw)
    return Calibration(**base)


def test_round_trip_and_clear():
    assert load_calibration() is None
    c = _cal()
    save_calibration(c)
    assert load_calibration() == c
    save_calibration(_cal(mfu=None))
    assert load_calibration().mfu is None
    clear_calibration()
    assert load_calibration() is None
    clear_calibration()  # no error when absent


def test_broken_file_is_kept_aside(capsys):
    path = calibration_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\x00{not json")
    assert load_calibration() is None
    assert not path.exists()
    aside = list(path.parent.glob("calibration.json.broken-*"))
    assert len(aside) == 1 and aside[0].read_bytes() == b"\x00{not json"
    assert "kept aside" in capsys.readouterr().err


def test_non_utf8_file_is_kept_aside_not_raised(capsys):
    path = calibration_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\xff\xfe\x00garbage")
    assert load_calibration() is None
    assert not path.exists() and "kept aside" in capsys.readouterr().err


@pytest.mark.parametrize("bad", [0.0, -0.1, 1.2, float("nan")])
def test_rejects_out_of_range(bad):
    with pytest.raises(ValueError):
        save_calibration(_cal(mfu=bad))
    assert load_calibration() is None


def test_each_calibration_says_which_device_it_belongs_to():
    assert _cal().belongs_to == "h100-sxm (cuda:0)"
    cpu = _cal(device="cpu", accelerator_id="cpu", eta_mem=None)
    assert cpu.belongs_to == "the CPU (cpu)" and cpu.applies_to("cpu") and not cpu.applies_to("h100-sxm")
    unknown = _cal(accelerator_id=None)
    assert "not in the catalog" in unknown.belongs_to and not unknown.applies_to("h100-sxm")


def test_cpu_calibration_saved_before_it_had_a_device_id_gets_one():
    import json

    path = calibration_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"schema": "advisor.calibration/1", "mfu": 0.3, "eta_mem": None, "device": "cpu",
                                "accelerator_id": None, "measured_at": "2026-11-29T23:00:00+00:00",
                                "source": "probe:train-step"}))
    cal = load_calibration()
    assert cal.accelerator_id == "cpu" and cal.applies_to("cpu")
