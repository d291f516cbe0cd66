"""How true the planner's figures are on published measurements, leaving one source out (docs/method.md,
"Calibration on published measurements" and "Utilisation fitted on documented runs").

Part 1, per group of ``resources/measurements/``: each figure is planned raw (calibration off), the fitted
efficiency of its group and class is fitted on the *other sources* only, and the printout gives, per group,
the share of figures within 25 % (15 % for fine-tune peak memory), the coverage of the 80 % intervals
(each built from the other sources' residuals), the median interval width (high/low), the targets and
PASS/FAIL. ``--rows GROUP`` lists that group's figures one by one.

Part 2: the utilisation model on the documented runs of ``resources/training_runs.csv`` (leave one run out
and leave one study out).

``--write`` refits and stores ``resources/utilisation_fit.csv``, the served step's costs
``resources/serving_step_fit.csv`` (``estimate.step_cost``: fitted first, on the published per-token times and the
first tokens of one user, as every served figure is planned with them), ``resources/calibration_fit.csv`` and the raw predictions
``resources/calibration_predictions.csv`` (tests/planner/test_calibrated.py checks them). A served row is scored
held out at the step costs fitted without its source; its 'raw ok' is at the stored ones (in sample).

    .venv/bin/python benchmarks/bench_truth.py [--rows decode] [--write]
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from advisor.catalog.load import bundled_catalog  # noqa: E402
from advisor.catalog.measurements import bundled_measurements  # noqa: E402
from advisor.catalog.training_runs import bundled_training_runs, catalog_peak  # noqa: E402
from advisor.estimate import calibration as C  # noqa: E402
from advisor.estimate import step_cost as S  # noqa: E402
from advisor.estimate import utilisation as U  # noqa: E402
from advisor.planner.measured import figure_at_steps, observation, predict, step_row  # noqa: E402

RESOURCES = Path(__file__).resolve().parents[1] / "resources"


def predictions_to_csv(rows, obs) -> str:
    """``row_id,group,class,setup,predicted,implied,held_out`` of every planned measurement (the raw estimates the
    fit used; a SCALED group's implied log scale; a served row's prediction at the step costs, or the scale, fitted
    without its source)."""
    lines = ["row_id,group,class,setup,predicted,implied,held_out"]
    by_id = {o.row_id: o for o in obs}
    for m, p in rows:
        o = by_id[m.row_id]
        extra = ("" if o.implied is None else repr(o.implied)) + "," + ("" if o.held_out is None else repr(o.held_out))
        lines.append(f"{m.row_id},{m.group},{p.klass},{m.accelerator_id}/{m.model},{p.predicted!r},{extra}")
    return "\n".join(lines) + "\n"


def step_fits(catalog) -> tuple[S.StepFit, dict[str, S.StepFit]]:
    """The served step's and prefill pass's costs fitted on the published per-token times and one user's first
    tokens that imply them (``estimate.step_cost``, ``measured.step_row``), and for every source those fitted
    without it."""
    ms = bundled_measurements()
    rows = [r for m in ms if (r := step_row(m, catalog)) is not None]
    return S.leave_one_source_out(rows, {m.source_id for m in ms})


def held_out_serving(planned, catalog, held: dict[str, S.StepFit]) -> dict[str, float]:
    """Each served row's figure planned at the step costs fitted without its source."""
    out = {}
    for m, _ in planned:
        if m.group in C.SERVE_GROUPS and m.source_id in held:
            value = figure_at_steps(m, catalog, held[m.source_id])
            if value is not None and value > 0:
                out[m.row_id] = value
    return out


def observations(planned, held: dict[str, float] | None = None) -> list[C.Observation]:
    """Every planned figure as a fitting record; a served row with its figure planned at the step costs fitted
    without its source (``held``: ``held_out_serving``); a SCALED group's rows planned again at the scale fitted on
    the other sources (``calibration.with_held_out``)."""
    from dataclasses import replace

    held = held or {}
    at = {m.row_id: p.at for m, p in planned if p.at is not None}
    obs = [observation(m, p) for m, p in planned]
    obs = [replace(o, held_out=held[o.row_id]) if o.row_id in held else o for o in obs]
    return C.with_held_out(obs, lambda rid, t: at[rid](t) if rid in at else None)


def print_step_fit(fit: S.StepFit) -> None:
    """The fitted step costs with the sources and rows they were fitted on and their leave-one-source-out spread."""
    print("\nServed step and prefill pass costs over several devices (estimate.step_cost), fitted on published "
          "per-token times and one user's first tokens, and shares of the matrix-multiply efficiency (batch_mm, a "
          "share, not us) on throughputs at a load of users; spread: fitted leaving each of its sources out")
    print(f"  {'constant':30s} {'us':>8s} {'assumed':>8s} {'src':>3s} {'rows':>4s}  {'spread (us)':>17s}")
    for c in sorted(fit.constants, key=lambda c: c.name):
        k = 1.0 if S.is_share(c.name) else 1e6  # a share of the profile's efficiency, not seconds
        print(f"  {c.name:30s} {c.seconds * k:8.2f} {S.assumed(c.name) * k:8.2f} {c.sources:3d} {c.rows:4d}  "
              f"{c.loso_low * k:8.2f}-{c.loso_high * k:<8.2f}")


def collect(catalog):
    """``(planned, skipped)``: measurements with their raw prediction, and those that could not be planned."""
    planned, skipped = [], []
    for m in bundled_measurements():
        p = predict(m, catalog)
        (planned if p.predicted is not None else skipped).append((m, p))
    return planned, skipped


def in_sample_sources(planned) -> list[str]:
    """The sources whose repository a runtime profile says it was fitted on (``resources/runtimes.toml``)."""
    from advisor.catalog.load import _resource_text

    fitted = [line for line in _resource_text("runtimes.toml").splitlines() if "fitted on" in line]
    out = []
    for sid, url in sorted({(m.source_id, m.source_url) for m, _ in planned}):
        parts = url.split("github.com/")[-1].split("/")
        repo = "/".join(parts[:2]) if len(parts) >= 2 else ""
        pr = f"#{parts[-1]}" if len(parts) >= 4 and parts[-2] in ("pull", "discussions") else None
        if (repo and any(repo.lower() in line.lower() for line in fitted)) or \
                (pr and any(pr in line for line in fitted)):
            out.append(sid)
    return out


def _pct(x: float) -> str:
    return f"{x:6.1%}"


def print_groups(planned, skipped, every_obs) -> dict[str, C.GroupSummary]:
    obs_by: dict[str, list[C.Observation]] = {}
    for o in every_obs:
        obs_by.setdefault(o.group, []).append(o)
    print("Published measurements, leave-one-source-out (a source's figures are predicted by a fit on the others)")
    head = (f"{'group':16s} {'rows':>4s} {'src':>3s} {'raw ok':>7s} {'within':>7s} {'target':>7s} {'cover':>7s} "
            f"{'75-90%':>6s} {'width':>6s} {'<2':>3s} {'shown':>5s}  verdict")
    print(head)
    print("-" * len(head))
    out = {}
    lo, hi = C.TARGET_COVERAGE
    every = [o for v in obs_by.values() for o in v]
    # each group's held-out residuals of the figure the app shows: a serving group's raw figure where its fitted
    # factors did not help leaving one source out (``calibration.shown``)
    holds = {g: C.shown(v, C.leave_one_source_out(v, C.pooled(g, every))) for g, v in obs_by.items()}
    points = C.reach_points((obs_by[g], holds[g]) for g in C.REACH_GROUPS if g in obs_by)
    for g in C.GROUPS:
        obs = obs_by.get(g, [])
        if not obs:
            print(f"{g:16s} {0:4d}   -  no planned figures")
            continue
        hold = holds[g]
        s = C.summarise(obs, hold, points if g in C.REACH_GROUPS else ())
        out[g] = s
        ok = s.passes
        verdict = "PASS" if s.ok else "FAIL: " + ", ".join(k for k, v in ok.items() if not v)
        if s.single_source:
            verdict += " (one source: rows left out one at a time)"
        print(f"{g:16s} {s.rows:4d} {s.sources:3d} {_pct(s.raw_within)} {_pct(s.within)} "
              f"{'>=' + format(C.TARGET_WITHIN, '.0%') + ('/' + format(s.tolerance, '.0%')):>7s} "
              f"{_pct(s.coverage)} {'ok' if lo <= s.coverage <= hi else 'no':>6s} {s.median_width:6.2f} "
              f"{'ok' if s.median_width < C.TARGET_WIDTH else 'no':>3s} "
              f"{'cal' if C.applies(obs, holds[g]) or g not in C.SERVE_GROUPS else 'raw':>5s}  {verdict}")
    print_reach(obs_by, holds, points, out)
    print("\n'raw ok' and 'within': share within the group's tolerance (25 %; 15 % for fine-tune peak memory), raw "
          "estimate and the figure shown held out (calibrated by the other sources' fit; a serving group's raw "
          "estimate where that fit did not help, 'shown' raw; a served row's raw estimate is at the stored step "
          "costs, in sample, and held out at those fitted without its source); 'cover': share inside the 80 % interval built without "
          "the row's source; 'width': median high/low of those intervals.")
    inside = in_sample_sources(planned)
    if inside:
        print("\nSources a runtime profile was fitted on (their rows are partly in sample for the raw estimate, "
              "which leaving the source out does not undo): " + ", ".join(inside))
        for g in ("decode", "prefill"):
            obs = obs_by.get(g, [])
            if not obs or g not in out:
                continue
            hold = C.shown(obs, C.leave_one_source_out(obs, C.pooled(g, every)))
            rest = [r for r, sid in zip(hold.log_residuals, hold.source_ids) if sid not in inside]
            if rest:
                share = sum(C._within(r, C.DEFAULT_TOLERANCE) for r in rest) / len(rest)
                print(f"  {g} on the other sources alone: {len(rest)} rows, {share:.1%} within 25 %")
    if skipped:
        print(f"\n{len(skipped)} figures not planned:")
        reasons: dict[str, int] = {}
        for m, p in skipped:
            key = f"{m.group}: {p.reason[:110]}"
            reasons[key] = reasons.get(key, 0) + 1
        for k, n in sorted(reasons.items()):
            print(f"  {n:3d} x {k}")
    return out


def print_reach(obs_by, holds, points, summaries) -> None:
    """The training groups' coverage near the other sources' rows and far from them, with the widths that grow with
    the distance (docs/method.md, "Ranges that know where the data ends") and with one width at every distance."""
    if not points:
        return
    slope = C.fit_reach_slope(points)
    print(f"\nTraining ranges by reach (distance from the other sources' rows; near < {C.NEAR_DISTANCE:g}): width "
          f"x (1 + {slope:.3f} d), fitted on {len(points)} held-out rows")
    print(f"{'group':16s} {'stratum':8s} {'rows':>4s} {'cover':>7s} {'one width':>9s}")
    for g in C.REACH_GROUPS:
        if g not in summaries:
            continue
        one = C.summarise(obs_by[g], holds[g], points, grow=False)
        flat = {k: c for k, _, c in one.by_reach}
        for k, n, c in summaries[g].by_reach:
            print(f"{g:16s} {k:8s} {n:4d} {_pct(c)} {_pct(flat.get(k, math.nan)):>9s}")


def print_serving_sources(every) -> None:
    """The serving groups source by source: rows, and the share within 25 % raw and held out (the table of issue
    35's closing note)."""
    print("\nServing groups by source (leave one source out): rows, within 25 % with the stored step costs / held "
          "out (the step costs fitted without the source)")
    sources = sorted({o.source_id for o in every if o.group in C.SERVE_GROUPS})
    head = f"{'source':42s}" + "".join(f" {g:>19s}" for g in C.SERVE_GROUPS)
    print(head)
    print("-" * len(head))
    holds = {}
    for g in C.SERVE_GROUPS:
        obs = [o for o in every if o.group == g]
        if obs:
            holds[g] = (obs, C.shown(obs, C.leave_one_source_out(obs, C.pooled(g, every))))
    for sid in sources:
        cells = []
        for g in C.SERVE_GROUPS:
            obs, hold = holds.get(g, ([], None))
            mine = [(o, r) for o, r in zip(obs, hold.log_residuals if hold else ()) if o.source_id == sid]
            if not mine:
                cells.append(f" {'-':>19s}")
                continue
            raw = sum(C._within(o.log_ratio, C.DEFAULT_TOLERANCE) for o, _ in mine) / len(mine)
            held = sum(C._within(r, C.DEFAULT_TOLERANCE) for _, r in mine) / len(mine)
            cells.append(f" {len(mine):4d} {raw:6.0%} / {held:4.0%}")
        print(f"{sid[:42]:42s}" + "".join(cells))


def print_rows(every, group: str) -> None:
    obs = [o for o in every if o.group == group]
    if not obs:
        return
    hold = C.shown(obs, C.leave_one_source_out(obs, C.pooled(group, every)))
    scaled = group in C.SCALED
    print(f"\n{group}: measured, raw estimate, held-out calibrated estimate, error factor"
          + (", implied compute-efficiency scale" if scaled else ""))
    for o, r in zip(obs, hold.log_residuals):
        sign = -1.0 if group in C.TIME_GROUPS else 1.0
        cal = o.measured / math.exp(sign * r)
        print(f"  {o.row_id[:52]:52s} {o.klass[:26]:26s} {o.measured:11.4g} {o.predicted:11.4g} {cal:11.4g} "
              f"{math.exp(abs(r)):6.2f}" + (f"  x{math.exp(o.implied):.2f}" if o.implied is not None else ""))


def print_utilisation(write: bool) -> None:
    runs = bundled_training_runs()
    obs = U.observations(runs, catalog_peak(bundled_catalog()))
    model = U.fit_utilisation(obs)
    loo = U.leave_one_out(obs)
    study = U.leave_one_study_out(obs)
    print(f"\nUtilisation model on {len(obs)} documented runs (resources/training_runs.csv): "
          + ", ".join(f"{n}={c:+.3f}" for n, c in zip(U.FEATURES, model.coefficients)))
    print(f"  leave-one-out: median error factor {loo.median_error_factor:.3f}, within 25 % "
          f"{loo.share_within_25pct:.1%}, coverage {loo.interval_coverage:.1%}")
    print(f"  leave-one-study-out: median error factor {study.median_error_factor:.3f}, within 25 % "
          f"{study.share_within_25pct:.1%}, coverage {study.interval_coverage:.1%}")
    if write:
        (RESOURCES / "utilisation_fit.csv").write_text(U.model_to_csv(model), encoding="utf-8")


def documented_run_checks(catalog) -> list[dict]:
    """Each documented run of ``resources/training_runs.csv`` with a device count and a fitted figure, planned as
    the planner would plan it with the utilisation model fitted *without its study* (``utilisation_model_in_force``):
    runs outside the calibration set (other fleets, the A100, V100 and TPU eras, fp16, Megatron-LM of 2021,
    published totals). A clean throughput is compared with the plan's tokens/s per device and its range, a
    published GPU-hour total with the plan's device-hours and the range of its time; the range as it is
    (``after``: grown with the distance, the wall time's allowance) and with one width (``before``)."""
    from advisor.catalog.training_runs import utilisation_model_in_force
    from advisor.job import JobInputError
    from advisor.planner import PlanRequest, plan

    peak = catalog_peak(catalog)
    obs = U.observations(bundled_training_runs(), peak)
    fitted = {o.run_id for o in obs}
    out = []
    for run in bundled_training_runs():
        if run.run_id not in fitted or not run.devices:
            continue
        top = peak(run.accelerator_id, run.precision)
        if not top:
            out.append({"run": run.run_id, "skipped": f"no peak for {run.accelerator_id} in the catalog"})
            continue
        mfu = U.observed_mfu(run, top)
        total = run.target == "gpu_hours"
        attention = 12.0 * run.layers * run.hidden * run.seq_len if run.mfu_convention == "palm" else 0.0
        measured = run.gpu_hours if total else mfu * top / (6.0 * run.active_params + attention)
        values = {"params": run.params, "layers": run.layers, "hidden": run.hidden,
                  "heads": max(1, run.hidden // 128), "vocab": run.vocab or 32000, "workload": "pretrain",
                  "gpus": run.devices, "accelerator": (run.accelerator_id,), "own": (f"{run.devices}x{run.accelerator_id}",),
                  "tokens": run.tokens or 1e9, "seq_len": run.seq_len, "precision": run.precision,
                  "spot_offers": False}
        if run.recompute == "full":
            values["checkpointing"] = "full"
        if "megatron" in run.framework.lower() or "nemo" in run.framework.lower():
            values["framework"] = "megatron"
        model = U.fit_utilisation([o for o in obs if o.group != run.group])
        try:
            with utilisation_model_in_force(model):
                result = plan(PlanRequest.from_mapping(values), catalog, advise=False)
        except (JobInputError, ValueError) as exc:
            out.append({"run": run.run_id, "skipped": str(exc)[:80]})
            continue
        options = [o for o in result.options if o.accelerator == run.accelerator_id and o.devices == run.devices]
        if not options or options[0].reach is None:
            out.append({"run": run.run_id, "skipped": "no calibrated option of that count"})
            continue
        o = min(options, key=lambda o: o.kind != "owned")
        n, r = o.devices, o.reach
        if total:
            p, after = o.device_hours, tuple(h * n for h in o.hours_interval)
        else:
            p, after = o.tokens_per_s / n, tuple(x / n for x in o.tokens_per_s_interval)
        w0 = math.exp(r.width_at_rows)
        out.append({"run": run.run_id, "figure": "GPU-hours" if total else "tokens/s/GPU", "measured": measured,
                    "planned": p, "before": (p / w0, p * w0), "after": after, "distance": r.distance,
                    "outside": ", ".join(f.feature for f in r.facts)})
    return out


def print_documented_runs(catalog) -> None:
    rows = documented_run_checks(catalog)
    print("\nDocumented runs outside the calibration set (resources/training_runs.csv), planned with the utilisation "
          "model fitted without their study: the 80 % range with one width (before) and grown with the distance, "
          "the wall time's allowance for totals (after)")
    print(f"  {'run':22s} {'figure':13s} {'measured':>10s} {'planned':>10s} {'dist':>5s} {'before':>7s} {'after':>7s}"
          "  beyond the runs in")
    held = {"before": [], "after": []}
    for row in rows:
        if "skipped" in row:
            print(f"  {row['run']:22s} not planned: {row['skipped']}")
            continue
        ins = {k: row[k][0] <= row["measured"] <= row[k][1] for k in held}
        for k in held:
            held[k].append((row["distance"], ins[k]))
        print(f"  {row['run']:22s} {row['figure']:13s} {row['measured']:10.4g} {row['planned']:10.4g} "
              f"{row['distance']:5.1f} {'in' if ins['before'] else 'OUT':>7s} {'in' if ins['after'] else 'OUT':>7s}"
              f"  {row['outside']}")
    for k, v in held.items():
        if v:
            far = [x for d, x in v if d >= C.NEAR_DISTANCE]
            print(f"  {k}: {sum(x for _, x in v)}/{len(v)} inside"
                  + (f"; {sum(far)}/{len(far)} of those at distance {C.NEAR_DISTANCE:g} or more" if far else ""))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="store the refitted figures in resources/")
    ap.add_argument("--rows", action="append", default=[], choices=C.GROUPS, help="list one group's figures")
    args = ap.parse_args(argv)
    catalog = bundled_catalog()
    if args.write:  # the utilisation fit feeds the raw training estimates: refit it first
        print_utilisation(True)
        from advisor.catalog.training_runs import stored_utilisation_model
        stored_utilisation_model.cache_clear()
    steps, held_steps = step_fits(catalog)
    if args.write:  # the step costs feed every served figure: stored before the rows are planned with them
        (RESOURCES / "serving_step_fit.csv").write_text(S.step_fit_to_csv(steps), encoding="utf-8")
        from advisor.catalog.runtimes import bundled_step_fit
        bundled_step_fit.cache_clear()
    planned, skipped = collect(catalog)
    obs = observations(planned, held_out_serving(planned, catalog, held_steps))
    print_groups(planned, skipped, obs)
    print_serving_sources(obs)
    print_step_fit(steps)
    for g in args.rows:
        print_rows(obs, g)
    if not args.write:
        print_utilisation(False)
        print_documented_runs(catalog)
    if args.write:
        fits = C.fit_all(obs)
        (RESOURCES / "calibration_fit.csv").write_text(C.fits_to_csv(fits), encoding="utf-8")
        from advisor.catalog.measurements import bundled_calibration_fit
        bundled_calibration_fit.cache_clear()
        (RESOURCES / "calibration_predictions.csv").write_text(predictions_to_csv(planned, obs), encoding="utf-8")
        print(f"\nwrote {RESOURCES / 'utilisation_fit.csv'}, calibration_fit.csv, calibration_predictions.csv")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
