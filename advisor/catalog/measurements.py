"""The public calibration set: published measurements in ``resources/measurements/<group>.csv`` as typed records
(``advisor.estimate.calibration.Measurement``), and the fitted efficiencies in ``resources/calibration_fit.csv``."""

from __future__ import annotations

import functools

from advisor.catalog.load import _resource_text
from advisor.estimate.calibration import GROUPS, GroupFit, Measurement, fits_from_csv, parse_measurements

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
