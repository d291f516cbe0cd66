"""The public calibration set: published measurements in ``resources/measurements/<group>.csv`` as typed records
(``advisor.estimate.calibration.Measurement``), and the fitted efficiencies in ``resources/calibration_fit.csv``."""

from __future__ import annotations

import csv
import functools
import io

from advisor.catalog.load import _resource_text
from advisor.estimate.calibration import (
    GROUPS,
    REACH_GROUPS,
    GroupFit,
    Measurement,
    fits_from_csv,
    parse_measurements,
    position_of,
)
from advisor.estimate.reach import Position

FIT_FILE = "calibration_fit.csv"


def bundled_measurements(groups: tuple[str, ...] = GROUPS) -> tuple[Measurement, ...]:
    """Every published measurement shipped with the package, in group order."""
    out: list[Measurement] = []
    for g in groups:
        out += parse_measurements(_resource_text(f"measurements/{g}.csv"), g, f"measurements/{g}.csv")
    return tuple(out)


@functools.lru_cache(maxsize=1)
def bundled_calibration_fit() -> dict[str, GroupFit]:
    """The fitted efficiencies and interval widths per group (``benchmarks/bench_truth.py --write``)."""
    return fits_from_csv(_resource_text(FIT_FILE))


PREDICTIONS_FILE = "calibration_predictions.csv"


@functools.lru_cache(maxsize=1)
def bundled_reach_rows() -> tuple[tuple[str, Position], ...]:
    """``(row_id, position)`` of every training row the stored fit was fitted on (``REACH_GROUPS``): the row's
    setup and the class it was planned in (``resources/calibration_predictions.csv``), as the fit saw them; a plan
    measures its distance from these (``estimate.reach``)."""
    classes = {r["row_id"]: r["class"] for r in csv.DictReader(io.StringIO(_resource_text(PREDICTIONS_FILE)))
               if r.get("group") in REACH_GROUPS}
    return tuple((m.row_id, position_of(m, classes[m.row_id])) for m in bundled_measurements(REACH_GROUPS)
                 if m.row_id in classes)
