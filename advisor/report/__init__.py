"""Reports and launch specs from ``advisor.plan/1`` documents (plain dicts; the JSON of ``advisor plan --json``).

``write_report(docs, path)`` exports a comparison of one or more plans as HTML (self-contained, charts as
inline SVG), PDF (Qt's printing support), Markdown or CSV; every report lists each option's total, the
assumptions, the catalog date and the probes used. ``advisor.report.launch.render_launch`` writes a
torchrun command, a Slurm sbatch script or a SkyPilot task for a chosen option.
"""

from __future__ import annotations

from pathlib import Path

from advisor.report.content import ReportError, plan_docs, sections

FORMATS = {".html": "html", ".htm": "html", ".pdf": "pdf", ".md": "md", ".markdown": "md", ".csv": "csv"}

__all__ = ["FORMATS", "ReportError", "plan_docs", "render_report", "write_report"]


def report_format(path, fmt: str | None = None) -> str:
    """The format named by ``fmt`` or by the file's suffix.

    Raises:
        ReportError: for an unknown format or suffix.
    """
    if fmt:
        fmt = fmt.lower().lstrip(".")
        fmt = {"markdown": "md", "htm": "html"}.get(fmt, fmt)
        if fmt not in set(FORMATS.values()):
            raise ReportError(f"report format: unknown {fmt!r} (html, pdf, md, csv)")
        return fmt
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise ReportError(f"report: cannot tell the format of {Path(path).name!r} from its suffix "
                          "(use .html, .pdf, .md or .csv)")
    return FORMATS[suffix]


def render_report(docs, fmt: str) -> str:
    """The report text in ``html``, ``md`` or ``csv`` (PDF is binary: use ``write_report``)."""
    secs = sections(docs)
    if fmt == "html":
        from advisor.report.html import render_html

        return render_html(secs)
    if fmt == "md":
        from advisor.report.markdown import render_markdown

        return render_markdown(secs)
    if fmt == "csv":
        from advisor.report.csv_report import render_csv

        return render_csv(secs)
    raise ReportError(f"report format: {fmt!r} is not a text format")


def write_report(docs, path, fmt: str | None = None) -> Path:
    """Write a report of one or more plan documents, atomically.

    Args:
        docs: ``advisor.plan/1`` documents (dicts), a list of them, or ``advisor.plan-set/1`` documents.
        path: the file to write; the format comes from its suffix unless ``fmt`` is given.
        fmt: ``html``, ``pdf``, ``md`` or ``csv``.
    Returns:
        The path written.
    Raises:
        ReportError: for documents that are not plans, an unknown format, or a file that cannot be written
            (a full disk, a size limit, a read-only folder, a target that is not a regular file); one line.
            Nothing is left half-written: an old file is kept as it was.
    """
    from advisor.store.atomic import check_target, write_atomic

    path = Path(path)
    fmt = report_format(path, fmt)
    try:
        check_target(path)
        if fmt != "pdf":
            data: str | bytes = render_report(docs, fmt)
        else:
            from advisor.report.pdf import render_pdf

            data = render_pdf(sections(docs))
        return write_atomic(path, data)
    except OSError as exc:
        raise ReportError(f"cannot write {path}: {exc.strerror or exc}") from None
    except RuntimeError as exc:
        raise ReportError(f"cannot write {path}: {exc}") from None
