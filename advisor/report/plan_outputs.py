"""The extra outputs of ``advisor plan``: ``--report``, ``--launch``, ``--save-scenario`` and ``--fleet``.

Kept here so ``advisor/commands/plan.py`` needs three calls only: ``add_output_flags`` when the parser is
built, ``prepare_values`` for each plan's merged values, and ``write_outputs`` once the plans are made
(it returns the launch spec to print instead of the table, when one goes to stdout).
A flag that cannot be honoured raises ``ReportError`` (one line naming the flag); the CLI prints it and
exits 2. Nothing here imports the CLI.
"""

from __future__ import annotations

import sys
from pathlib import Path

from advisor.report.content import ReportError

LAUNCH_KINDS = ("torchrun", "sbatch", "skypilot")


def add_output_flags(group) -> None:
    """Add the flags to an argparse parser or argument group."""
    group.add_argument("--report", metavar="FILE", action="append", default=[],
                       help="write a report of the plan(s): .html, .pdf, .md or .csv (repeatable)")
    group.add_argument("--launch", choices=LAUNCH_KINDS, help="print a launch spec for one option "
                       "(with --json: needs --launch-file)")
    group.add_argument("--option", metavar="ID", help="option for --launch (default: the cheapest that fits)")
    group.add_argument("--launch-file", metavar="FILE", help="write the --launch spec to FILE instead of stdout")
    group.add_argument("--save-scenario", metavar="FILE", help="save this plan's inputs as a scenario file (TOML)")
    group.add_argument("--fleet", action="store_true",
                       help="plan against the GPUs of the imported fleet (advisor fleet import)")


def prepare_values(args, values: dict, catalog=None) -> dict:
    """Apply ``--fleet`` to one plan's merged values: restrict the accelerators to the fleet's (those of
    ``catalog`` when given: a node may name an accelerator this catalog does not have).

    Raises:
        ReportError: when the fleet is empty or shares no accelerator with ``--accelerator``.
    """
    if not getattr(args, "fleet", False):
        return values
    from advisor.store.fleet import fleet_accelerators, load_fleet

    available = fleet_accelerators(load_fleet())
    if catalog is not None:
        available = {a: n for a, n in available.items() if a in catalog.accelerators}
    if not available:
        raise ReportError("fleet: the fleet has no GPU from the catalog (import machines with "
                         "'advisor fleet import FILE')")
    wanted = values.get("accelerator") or list(available)
    chosen = [a for a in wanted if a in available]
    if not chosen:
        raise ReportError(f"accelerator: none of {', '.join(wanted)} is in the fleet "
                         f"({', '.join(available)})")
    return {**values, "accelerator": chosen}


def scenario_from_values(values: dict, notes: dict | None = None):
    """The ``Scenario`` of one plan's merged values (what ``--save-scenario`` writes): every input that
    differs from the job schema's default.

    Raises:
        JobInputError: the values are not a job (the plan would have failed first).
    """
    from advisor.job import Job
    from advisor.store.scenario import scenario_from_job

    return scenario_from_job(Job.from_mapping(values), notes=notes)


def write_outputs(args, results, values_list, scenarios=None) -> str | None:
    """Write what the output flags ask for, once the plans are made and before anything is printed.

    Every flag is checked (and the launch spec rendered) before any file is written, so a flag that
    cannot be honoured leaves nothing behind.

    Args:
        results: the plans (objects with ``to_json()``) or their ``advisor.plan/1`` documents.
        values_list: the merged values each plan was made from (same order).
        scenarios: the ``Scenario`` each plan came from, or None entries.
    Returns:
        The launch spec to print on stdout instead of the table (``--launch`` without ``--launch-file``
        and without ``--json``), else None.
    Raises:
        ReportError: a flag that cannot be honoured (one line naming it).
    """

    docs = [r if isinstance(r, dict) else r.to_json() for r in results]
    if getattr(args, "fleet", False):
        _fleet_notes(docs)
    launch_text = _launch_text(args, docs)
    scenario = None
    if getattr(args, "save_scenario", None):
        if len(docs) != 1:
            raise ReportError("--save-scenario: give one scenario file (or none), not several")
        from advisor.job import JobInputError
        from advisor.store.scenario import ScenarioError, scenario_to_dict

        try:
            scenario = scenario_from_values(values_list[0], getattr((scenarios or [None])[0], "notes", None))
            scenario_to_dict(scenario)
        except JobInputError as exc:
            raise ReportError(f"--save-scenario: plan.{exc}") from None
        except ScenarioError as exc:
            raise ReportError(f"--save-scenario: {exc}") from None
    reports = list(getattr(args, "report", None) or [])
    if reports:
        from advisor.report import report_format

        for target in reports:
            try:
                report_format(target)
            except ReportError as exc:
                raise ReportError(f"--report: {exc}") from None
    _write_files(args, docs, scenario, reports, launch_text)
    if launch_text is not None and not args.launch_file:
        return launch_text
    return None


def _write_files(args, docs, scenario, reports, launch_text) -> None:
    def failed(flag, target, exc):
        return ReportError(f"{flag}: cannot write {target}: {exc.strerror or exc}")

    if scenario is not None:
        from advisor.store.scenario import save_scenario

        try:
            path = save_scenario(args.save_scenario, scenario)
        except OSError as exc:
            raise failed("--save-scenario", args.save_scenario, exc) from None
        print(f"scenario saved to {path}", file=sys.stderr)
    for target in reports:
        from advisor.report import write_report

        try:
            path = write_report(docs, target)
        except ReportError as exc:
            raise ReportError(f"--report: {exc}") from None
        print(f"report written to {path}", file=sys.stderr)
    if launch_text is not None and args.launch_file:
        from advisor.store.atomic import write_atomic

        try:
            path = write_atomic(args.launch_file, launch_text)
            if args.launch in ("torchrun", "sbatch"):
                path.chmod(path.stat().st_mode | 0o100)  # a script the owner can run
        except OSError as exc:
            raise failed("--launch-file", args.launch_file, exc) from None
        print(f"{args.launch} spec written to {Path(path)}", file=sys.stderr)


def _launch_text(args, docs) -> str | None:
    from advisor.report.launch import LaunchError, render_launch

    if not getattr(args, "launch", None):
        if getattr(args, "option", None) or getattr(args, "launch_file", None):
            raise ReportError("--option/--launch-file: only with --launch torchrun|sbatch|skypilot")
        return None
    if len(docs) != 1:
        raise ReportError("--launch: needs a single plan, not a comparison of several")
    if getattr(args, "json", False) and not args.launch_file:
        raise ReportError("--launch: with --json, give --launch-file FILE (stdout holds the JSON document)")
    try:
        return render_launch(args.launch, docs[0], args.option)
    except LaunchError as exc:
        raise ReportError(str(exc)) from None


def _fleet_notes(docs) -> None:
    """Warn when an owned option needs more devices than the fleet has."""
    from advisor.store.fleet import fleet_accelerators, load_fleet

    available = fleet_accelerators(load_fleet())
    for doc in docs:
        for o in doc.get("options") or []:
            have = available.get(o.get("accelerator"), 0)
            if o.get("kind") != "cloud" and o.get("fits") and o.get("devices", 0) > have:
                print(f"warning: {o['id']} needs {o['devices']} devices; the fleet has {have}", file=sys.stderr)
