"""The planner's calibrated values for this machine, measured by the probes.

The training-step probe measures an MFU and the device-bandwidth probe a bandwidth efficiency
(``eta_mem``: achieved / peak memory bandwidth, used for decoding speed). Saved here, they replace the
planner's priors for this machine until cleared. The file is JSON in ``paths.config_dir()``, written
atomically, with a schema version; a broken file is kept aside and treated as no calibration.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from advisor import paths
from advisor.store.atomic import keep_aside, write_atomic

SCHEMA = "advisor.calibration/1"
FILE_NAME = "calibration.json"
CPU_DEVICE_ID = "cpu"  # the accelerator id of a calibration measured on the host CPU


@dataclass(frozen=True)
class Calibration:
    """Measured utilisation figures for this machine.

    Attributes:
        mfu: model FLOPs utilisation of a training step (0..1], or None when not measured.
        eta_mem: achieved / peak memory bandwidth (0..1], or None when not measured.
        device: the device measured, e.g. ``"cpu"`` or ``"cuda:0"``.
        accelerator_id: catalog id of the accelerator, ``"cpu"`` (``CPU_DEVICE_ID``) for the host CPU, or None
            (a GPU that is not in the catalog).
        measured_at: ISO 8601 time of the measurement (UTC).
        source: what produced the values, e.g. ``"probe:train-step"``.
        allreduce_bus_bps: the all-reduce probe's bus bandwidth between this machine's GPUs (bytes/s), or None;
            the planner's intra-node link for its accelerator at home.
    """

    mfu: float | None
    eta_mem: float | None
    device: str
    accelerator_id: str | None
    measured_at: str
    source: str
    allreduce_bus_bps: float | None = None
    runs: tuple = field(default=(), compare=False)  # the user's run records (advisor.store.runs), never saved here
    machine_id: str | None = field(default=None, compare=False)  # this machine's fingerprint id, for the records
    left_out: str | None = field(default=None, compare=False)  # a record's content hash the plan learns nothing from

    @property
    def belongs_to(self) -> str:
        """Which device this calibration belongs to, in words (for the CLI, the app and reports)."""
        if self.accelerator_id == CPU_DEVICE_ID:
            return f"the CPU ({self.device})"
        if self.accelerator_id:
            return f"{self.accelerator_id} ({self.device})"
        return f"{self.device} (not in the catalog: used for no plan target)"

    def applies_to(self, target_id: str) -> bool:
        """True when a plan target (a catalog accelerator id, or ``"cpu"``) is the device measured."""
        return bool(self.accelerator_id) and self.accelerator_id == target_id

    @staticmethod
    def record_forward(rec, acc, what: str):
        """The forward model the planner's learner inverts for one of the runs (``runs.load.record_forward``: a
        serving benchmark's run through its load's plan, any other run through the plan of its own job)."""
        from advisor.runs.load import record_forward

        return record_forward(rec, acc, what)


def calibration_file() -> Path:
    """Path of the calibration file (it may not exist)."""
    return paths.config_dir() / FILE_NAME


def _fraction(value, name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a number or null")
    value = float(value)
    if not math.isfinite(value) or not 0.0 < value <= 1.0:
        raise ValueError(f"{name} out of range: {value}")
    return value


def _from_dict(doc: dict) -> Calibration:
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise ValueError("not an advisor calibration file")
    for key in ("device", "measured_at", "source"):
        if not isinstance(doc.get(key), str):
            raise ValueError(f"{key} must be a string")
    acc = doc.get("accelerator_id")
    if acc is not None and not isinstance(acc, str):
        raise ValueError("accelerator_id must be a string or null")
    if acc is None and doc["device"] == CPU_DEVICE_ID:
        acc = CPU_DEVICE_ID  # files written before CPU calibrations carried their device id
    return Calibration(mfu=_fraction(doc.get("mfu"), "mfu"), eta_mem=_fraction(doc.get("eta_mem"), "eta_mem"),
                       device=doc["device"], accelerator_id=acc, measured_at=doc["measured_at"],
                       source=doc["source"], allreduce_bus_bps=_rate(doc.get("allreduce_bus_bps"), "allreduce_bus_bps"))


def _rate(value, name: str) -> float | None:
    """A bandwidth in bytes/s: positive and finite (at most 1e15), or None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a number or null")
    value = float(value)
    if not math.isfinite(value) or not 0.0 < value <= 1e15:
        raise ValueError(f"{name} out of range: {value}")
    return value


def load_calibration() -> Calibration | None:
    """The saved calibration, or None when there is none.

    A file that cannot be read as a calibration is moved aside (``<name>.broken-<time>``), reported on
    stderr, and treated as none.
    """
    path = calibration_file()
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:  # unreadable (permissions): plan with the priors, leave the file alone
        print(f"warning: calibration file {path} cannot be read ({exc}); using the priors", file=sys.stderr)
        return None
    try:
        return _from_dict(json.loads(raw.decode("utf-8")))
    except (ValueError, TypeError, KeyError) as exc:  # UnicodeDecodeError is a ValueError
        aside = keep_aside(path)
        print(f"warning: broken calibration file kept aside as {aside} ({exc})", file=sys.stderr)
        return None


def save_calibration(c: Calibration) -> None:
    """Save ``c`` atomically, replacing any previous calibration.

    Raises:
        ValueError: when mfu or eta_mem is not a fraction in (0, 1].
    """
    _fraction(c.mfu, "mfu")
    _fraction(c.eta_mem, "eta_mem")
    _rate(c.allreduce_bus_bps, "allreduce_bus_bps")
    doc = {"schema": SCHEMA, **asdict(c)}
    doc.pop("runs", None)
    doc.pop("machine_id", None)
    write_atomic(calibration_file(), json.dumps(doc, indent=2, sort_keys=True) + "\n")


def clear_calibration() -> None:
    """Remove the saved calibration so the planner returns to its priors (no error if none)."""
    try:
        calibration_file().unlink()
    except FileNotFoundError:
        pass


def with_runs(calib: Calibration | None, extra, machine_id: str | None) -> Calibration | None:
    """``calib`` with more run records (files being imported together: each is predicted from the others)."""
    extra = tuple(extra)
    if not extra:
        return calib
    if calib is None:
        return Calibration(mfu=None, eta_mem=None, device="", accelerator_id=None,
                           measured_at=max(r.recorded_at for r in extra), source="runs", runs=extra,
                           machine_id=machine_id)
    known = {r.content_sha256 for r in calib.runs}
    return replace(calib, runs=calib.runs + tuple(r for r in extra if r.content_sha256 not in known),
                   machine_id=calib.machine_id or machine_id)


def load_planner_calibration() -> Calibration | None:
    """What the planner learns from on this machine: the probes' calibration with the user's run records
    (``advisor.store.runs``) and this machine's fingerprint id attached; records alone when no probe was saved.

    A run store that cannot be read is reported on stderr and planned without.
    """
    from advisor.store.runs import RunStore, RunStoreError, this_machine_id

    calib = load_calibration()
    try:
        with RunStore(create=False) as store:
            records = tuple(e.record for e in store.list())
    except RunStoreError as exc:
        print(f"warning: {exc}; planning without your runs", file=sys.stderr)
        records = ()
    if not records:
        return calib
    return with_runs(calib, records, this_machine_id())
