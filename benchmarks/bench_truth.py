"""Leave-one-out check of the fitted utilisation model on the documented runs (docs/method.md).

Prints, per run, the observed and predicted clean-step utilisation and the error factor, then the median
error factor, the share within 25 % and the coverage of the 80 % intervals. ``--write`` refits and stores
the coefficients in resources/utilisation_fit.csv (tests/estimate/test_utilisation.py checks they match).

    .venv/bin/python benchmarks/bench_truth.py [--write]
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from advisor.catalog.load import bundled_catalog  # noqa: E402
from advisor.catalog.training_runs import bundled_training_runs, catalog_peak  # noqa: E402
from advisor.estimate import utilisation as U  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="store the refitted coefficients in resources/")
    args = ap.parse_args(argv)
    runs = bundled_training_runs()
    obs = U.observations(runs, catalog_peak(bundled_catalog()))
    model = U.fit_utilisation(obs)
    loo = U.leave_one_out(obs)
    print(f"{'run':24s} {'observed':>8s} {'LOO pred':>8s} {'factor':>7s}")
    for o, r in zip(obs, loo.log_residuals):
        pred = o.utilisation / math.exp(r)
        print(f"{o.run_id:24s} {o.utilisation:8.3f} {pred:8.3f} {math.exp(abs(r)):7.3f}")
    print(f"\n{len(runs)} documented runs, {len(obs)} with a fitted target")
    print("coefficients: " + ", ".join(f"{n}={c:+.3f}" for n, c in zip(U.FEATURES, model.coefficients)))
    print(f"goodput of published totals: {model.goodput:.3f}")
    print(f"80 % interval: x/÷ {math.exp(model.half_width_log):.3f} (calibrated machine x/÷ "
          f"{math.exp(model.half_width_calibrated_log):.3f})")
    print(f"leave-one-out: median error factor {loo.median_error_factor:.3f}, within 25 % {loo.share_within_25pct:.1%}, "
          f"80 % interval coverage {loo.interval_coverage:.1%}")
    study = U.leave_one_study_out(obs)
    print(f"leave-one-study-out (stricter: a run's whole study left out): median error factor "
          f"{study.median_error_factor:.3f}, within 25 % {study.share_within_25pct:.1%}, "
          f"80 % interval coverage {study.interval_coverage:.1%}")
    if args.write:
        path = Path(__file__).resolve().parents[1] / "resources" / "utilisation_fit.csv"
        path.write_text(U.model_to_csv(model), encoding="utf-8")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
